/* The answer to a stored send from its template (rocketq.broker.sendanswers), in C.
 *
 * stored(opaque, msg_id, queue_id, queue_offset) -> bytes: the whole frame (the two length
 * prefixes, then the JSON header) of a SUCCESS answer. The template's fixed text comes from
 * Python as ``context``: five bytes pieces, the text around the four values in order (the
 * pure function's ``%`` template split at its conversions), so this file holds no copy of it.
 * The values are written as Python's ``%d`` writes an int (decimal, a leading '-') and the
 * message id as its UTF-8 bytes, which for ASCII text are its characters. Anything else (an
 * int outside 64 bits, a non-ASCII or non-str id, other argument counts, a frame longer than
 * an int32 can say) goes to the pure function.
 *
 * stored_group(admitted, results, answers) -> list: a group's answers in one call. For each
 * admitted send ``(i, request, header, queue_id, records)`` and its PutResult, a PUT_OK result
 * of a JSON request has its frame written into ``answers[i]`` (the message ids joined by
 * commas straight into the frame, no joined str); the positions of the others are returned
 * for the caller to answer in full. Its context is the five pieces, then PutStatus.PUT_OK and
 * SerializeType.JSON. Any shape it does not expect goes to the pure function, which redoes
 * the whole group (writing the same bytes again into the answers already written).
 */
#include "rocketq_native.h"

#include <string.h>

#define PIECES 5
#define PREFIX_SIZE 8       /* total length, header length: two big-endian int32 */
#define ADMITTED_FIELDS 5   /* (i, request, header, queue_id, records) */

/* The five pieces valid in ``context`` (a tuple starting with them): their total size, or -1. */
static Py_ssize_t pieces_size(PyObject *context, Py_ssize_t context_size)
{
    Py_ssize_t size = 0;
    if (context == NULL || !PyTuple_CheckExact(context) || PyTuple_GET_SIZE(context) != context_size)
        return -1;
    for (Py_ssize_t i = 0; i < PIECES; i++) {
        if (!PyBytes_CheckExact(PyTuple_GET_ITEM(context, i)))
            return -1;
        size += PyBytes_GET_SIZE(PyTuple_GET_ITEM(context, i));
    }
    return size;
}

/* The total length of ``ids`` (ASCII strs) joined by commas, or -1 for anything else. */
static Py_ssize_t ids_size(PyObject *const *ids, Py_ssize_t count)
{
    Py_ssize_t size = count > 0 ? count - 1 : 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (!PyUnicode_CheckExact(ids[i]) || !PyUnicode_IS_ASCII(ids[i]))
            return -1;
        size += PyUnicode_GET_LENGTH(ids[i]);
    }
    return size;
}

/* The answer's frame: the pieces around opaque, the ids joined by commas, queue id and queue
 * offset. NULL without an exception set: the frame is too long (the pure function decides). */
static PyObject *frame(PyObject *context, Py_ssize_t pieces, long long opaque, PyObject *const *ids,
                       Py_ssize_t id_count, Py_ssize_t id_size, long long queue_id, long long queue_offset)
{
    char numbers[3][RQ_DECIMAL_MAX];
    int lengths[3];
    Py_ssize_t header;
    PyObject *out;
    char *p;
    lengths[0] = rq_write_decimal(numbers[0], opaque);
    lengths[1] = rq_write_decimal(numbers[1], queue_id);
    lengths[2] = rq_write_decimal(numbers[2], queue_offset);
    header = pieces + id_size + lengths[0] + lengths[1] + lengths[2];
    if (header > RQ_INT32_MAX - 4)
        return NULL;
    out = PyBytes_FromStringAndSize(NULL, PREFIX_SIZE + header);
    if (out == NULL)
        return NULL;
    p = PyBytes_AS_STRING(out);
    rq_put_i32((unsigned char *)p, (int64_t)(4 + header));
    rq_put_i32((unsigned char *)p + 4, (int64_t)header);
    p += PREFIX_SIZE;
    /* piece, opaque, piece, msg ids, piece, queue id, piece, queue offset, piece */
    for (int i = 0; i < PIECES; i++) {
        PyObject *piece = PyTuple_GET_ITEM(context, i);
        memcpy(p, PyBytes_AS_STRING(piece), (size_t)PyBytes_GET_SIZE(piece));
        p += PyBytes_GET_SIZE(piece);
        if (i == 1) {
            for (Py_ssize_t k = 0; k < id_count; k++) {
                if (k > 0)
                    *p++ = ',';
                memcpy(p, PyUnicode_DATA(ids[k]), (size_t)PyUnicode_GET_LENGTH(ids[k]));
                p += PyUnicode_GET_LENGTH(ids[k]);
            }
        } else if (i < 4) {
            int n = i == 0 ? 0 : i - 1;  /* opaque, (ids), queue id, queue offset */
            memcpy(p, numbers[n], (size_t)lengths[n]);
            p += lengths[n];
        }
    }
    return out;
}

PyObject *rq_py_send_answer_stored(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs)
{
    long long opaque, queue_id, queue_offset;
    Py_ssize_t pieces, id_size;
    PyObject *out;
    if (nargs != 4 || (pieces = pieces_size(context, PIECES)) < 0 || (id_size = ids_size(&args[1], 1)) < 0
            || !rq_int_in(args[0], RQ_INT64_MIN, RQ_INT64_MAX, &opaque)
            || !rq_int_in(args[2], RQ_INT64_MIN, RQ_INT64_MAX, &queue_id)
            || !rq_int_in(args[3], RQ_INT64_MIN, RQ_INT64_MAX, &queue_offset))
        return rq_fallback(fallback, args, nargs);
    out = frame(context, pieces, opaque, &args[1], 1, id_size, queue_id, queue_offset);
    if (out == NULL && !PyErr_Occurred())
        return rq_fallback(fallback, args, nargs);
    return out;
}

/* One admitted send's answer into ``answers``: 1 written, 0 not a template answer (the caller
 * answers it), -1 an exception, -2 a shape the pure function must decide. */
static int group_answer(PyObject *context, Py_ssize_t pieces, PyObject *entry, PyObject *result, PyObject *answers)
{
    static PyObject *status_name, *serialize_name, *opaque_name, *ids_name, *offsets_name;
    long long index, opaque, queue_id, queue_offset;
    PyObject *request, *value, *ids, *offsets, *out;
    Py_ssize_t id_size;
    int same;
    if (status_name == NULL) {
        if ((status_name = PyUnicode_InternFromString("status")) == NULL
                || (serialize_name = PyUnicode_InternFromString("serialize_type")) == NULL
                || (opaque_name = PyUnicode_InternFromString("opaque")) == NULL
                || (ids_name = PyUnicode_InternFromString("offset_msg_ids")) == NULL
                || (offsets_name = PyUnicode_InternFromString("queue_offsets")) == NULL) {
            Py_CLEAR(status_name);
            return -1;
        }
    }
    if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != ADMITTED_FIELDS)
        return -2;
    request = PyTuple_GET_ITEM(entry, 1);
    if ((value = PyObject_GetAttr(result, status_name)) == NULL)
        return -1;
    same = value == PyTuple_GET_ITEM(context, PIECES);
    Py_DECREF(value);
    if (!same)
        return 0;
    if ((value = PyObject_GetAttr(request, serialize_name)) == NULL)
        return -1;
    same = value == PyTuple_GET_ITEM(context, PIECES + 1);
    Py_DECREF(value);
    if (!same)
        return 0;
    if (!rq_int_in(PyTuple_GET_ITEM(entry, 0), 0, PY_SSIZE_T_MAX, &index)
            || !rq_int_in(PyTuple_GET_ITEM(entry, 3), RQ_INT64_MIN, RQ_INT64_MAX, &queue_id))
        return -2;
    if ((value = PyObject_GetAttr(request, opaque_name)) == NULL)
        return -1;
    same = rq_int_in(value, RQ_INT64_MIN, RQ_INT64_MAX, &opaque);
    Py_DECREF(value);
    if (!same)
        return -2;
    if ((offsets = PyObject_GetAttr(result, offsets_name)) == NULL)
        return -1;
    same = PyTuple_CheckExact(offsets) && PyTuple_GET_SIZE(offsets) > 0
        && rq_int_in(PyTuple_GET_ITEM(offsets, 0), RQ_INT64_MIN, RQ_INT64_MAX, &queue_offset);
    Py_DECREF(offsets);
    if (!same)
        return -2;
    if ((ids = PyObject_GetAttr(result, ids_name)) == NULL)
        return -1;
    if (!PyTuple_CheckExact(ids)
            || (id_size = ids_size(&PyTuple_GET_ITEM(ids, 0), PyTuple_GET_SIZE(ids))) < 0) {
        Py_DECREF(ids);
        return -2;
    }
    out = frame(context, pieces, opaque, &PyTuple_GET_ITEM(ids, 0), PyTuple_GET_SIZE(ids), id_size, queue_id,
                queue_offset);
    Py_DECREF(ids);
    if (out == NULL)
        return PyErr_Occurred() ? -1 : -2;
    if (index >= PyList_GET_SIZE(answers)) {  /* (checked here: a getattr above may run Python code) */
        Py_DECREF(out);
        return -2;
    }
    PyList_SetItem(answers, (Py_ssize_t)index, out);  /* steals out */
    return 1;
}

PyObject *rq_py_send_answer_stored_group(PyObject *fallback, PyObject *context, PyObject *const *args,
                                         Py_ssize_t nargs)
{
    PyObject *admitted, *results, *answers, *others;
    Py_ssize_t pieces, count;
    if (nargs != 3 || (pieces = pieces_size(context, PIECES + 2)) < 0 || !PyList_CheckExact(args[0])
            || !PyList_CheckExact(args[1]) || !PyList_CheckExact(args[2])
            || PyList_GET_SIZE(args[0]) != PyList_GET_SIZE(args[1]))
        return rq_fallback(fallback, args, nargs);
    admitted = args[0], results = args[1], answers = args[2];
    count = PyList_GET_SIZE(admitted);
    if ((others = PyList_New(0)) == NULL)
        return NULL;
    /* the lists are the caller's: re-read their sizes, as a getattr can run Python code */
    for (Py_ssize_t k = 0; k < count && k < PyList_GET_SIZE(admitted) && k < PyList_GET_SIZE(results); k++) {
        PyObject *entry = PyList_GET_ITEM(admitted, k), *result = PyList_GET_ITEM(results, k), *position;
        int done;
        Py_INCREF(entry);
        Py_INCREF(result);
        done = group_answer(context, pieces, entry, result, answers);
        Py_DECREF(entry);
        Py_DECREF(result);
        if (done == 1)
            continue;
        if (done < 0) {
            Py_DECREF(others);
            return done == -1 ? NULL : rq_fallback(fallback, args, nargs);
        }
        if ((position = PyLong_FromSsize_t(k)) == NULL || PyList_Append(others, position) < 0) {
            Py_XDECREF(position);
            Py_DECREF(others);
            return NULL;
        }
        Py_DECREF(position);
    }
    if (count != PyList_GET_SIZE(admitted) || count != PyList_GET_SIZE(results)) {
        Py_DECREF(others);
        return rq_fallback(fallback, args, nargs);
    }
    return others;
}
