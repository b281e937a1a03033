/* The answer to a stored send from its template (rocketq.broker.sendanswers.stored), in C.
 *
 * stored(opaque, msg_id, queue_id, queue_offset) -> bytes: the whole frame (the two length
 * prefixes, then the JSON header) of a SUCCESS answer. The template's fixed text comes from
 * Python as ``context``: five bytes pieces, the text around the four values in order (the
 * pure function's ``%`` template split at its conversions), so this file holds no copy of it.
 * The values are written as Python's ``%d`` writes an int (decimal, a leading '-') and the
 * message id as its UTF-8 bytes, which for ASCII text are its characters. Anything else (an
 * int outside 64 bits, a non-ASCII or non-str id, other argument counts, a frame longer than
 * an int32 can say) goes to the pure function.
 */
#include "rocketq_native.h"

#include <stdio.h>
#include <string.h>

#define PIECES 5
#define DECIMAL_MAX 24      /* "-9223372036854775808" and room to spare */
#define PREFIX_SIZE 8       /* total length, header length: two big-endian int32 */

/* ``value`` in decimal into ``out``; its length. */
static int decimal(long long value, char *out) { return snprintf(out, DECIMAL_MAX, "%lld", value); }

PyObject *rq_py_send_answer_stored(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs)
{
    long long opaque, queue_id, queue_offset;
    char numbers[3][DECIMAL_MAX];
    int lengths[3];
    Py_ssize_t id_length, header = 0;
    const char *id;
    PyObject *out;
    char *p;
    if (nargs != 4 || context == NULL || !PyTuple_CheckExact(context) || PyTuple_GET_SIZE(context) != PIECES
            || !PyUnicode_CheckExact(args[1]) || !PyUnicode_IS_ASCII(args[1])
            || !rq_int_in(args[0], RQ_INT64_MIN, RQ_INT64_MAX, &opaque)
            || !rq_int_in(args[2], RQ_INT64_MIN, RQ_INT64_MAX, &queue_id)
            || !rq_int_in(args[3], RQ_INT64_MIN, RQ_INT64_MAX, &queue_offset))
        return rq_fallback(fallback, args, nargs);
    for (Py_ssize_t i = 0; i < PIECES; i++) {
        if (!PyBytes_CheckExact(PyTuple_GET_ITEM(context, i)))
            return rq_fallback(fallback, args, nargs);
        header += PyBytes_GET_SIZE(PyTuple_GET_ITEM(context, i));
    }
    id = (const char *)PyUnicode_DATA(args[1]);
    id_length = PyUnicode_GET_LENGTH(args[1]);
    lengths[0] = decimal(opaque, numbers[0]);
    lengths[1] = decimal(queue_id, numbers[1]);
    lengths[2] = decimal(queue_offset, numbers[2]);
    header += id_length + lengths[0] + lengths[1] + lengths[2];
    if (header > RQ_INT32_MAX - 4)
        return rq_fallback(fallback, args, nargs);
    out = PyBytes_FromStringAndSize(NULL, PREFIX_SIZE + header);
    if (out == NULL)
        return NULL;
    p = PyBytes_AS_STRING(out);
    rq_put_i32((unsigned char *)p, (int64_t)(4 + header));
    rq_put_i32((unsigned char *)p + 4, (int64_t)header);
    p += PREFIX_SIZE;
    /* piece, opaque, piece, msg id, piece, queue id, piece, queue offset, piece */
    const char *values[4] = {numbers[0], id, numbers[1], numbers[2]};
    Py_ssize_t value_lengths[4] = {lengths[0], id_length, lengths[1], lengths[2]};
    for (int i = 0; i < PIECES; i++) {
        PyObject *piece = PyTuple_GET_ITEM(context, i);
        memcpy(p, PyBytes_AS_STRING(piece), (size_t)PyBytes_GET_SIZE(piece));
        p += PyBytes_GET_SIZE(piece);
        if (i < 4) {
            memcpy(p, values[i], (size_t)value_lengths[i]);
            p += value_lengths[i];
        }
    }
    return out;
}
