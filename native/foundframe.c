/* A FOUND pull answer's frame, written without a RemotingCommand, a dict or orjson.
 *
 * found_frame(opaque, suggest, next_begin, min_offset, max_offset, buffers, joined_max)
 *     -> bytes | list | None
 *
 * The pure reference is rocketq.broker.pull.PullHandlers._found's RemotingCommand (a JSON
 * response: code 0, the RESPONSE flag, language PYTHON, the request's opaque, version 399,
 * extFields suggestWhichBrokerId, nextBeginOffset, minOffset, maxOffset as decimal strings, the
 * records as its body parts) encoded by frames.RemotingCommand.encode: the same bytes. When the
 * records' bytes are at most ``joined_max`` the frame is one bytes (the records copied once: a
 * lone write); else a list of the frame's length prefix and header as one bytes, then the
 * records' buffers themselves (``encode_buffers``' split, no copy).
 *
 * Declined (None, no exception) for anything the pure path should decide: a value that is not
 * an exact int within 64 bits, a buffer that is not a contiguous byte view or bytes, a frame
 * whose length does not fit the 32-bit prefix.
 */
#include "rocketq_native.h"

#define FOUND_FRAME_ARGS 7
#define JSON_SERIALIZE 0
#define MAX_FRAME_LENGTH 0x7FFFFFFFLL
/* what precedes the opaque, between it and the version, and what follows the version */
#define HEAD_START "{\"code\":0,\"flag\":1,\"language\":\"PYTHON\",\"opaque\":"
#define HEAD_AFTER_OPAQUE ",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":399,\"extFields\":{\"suggestWhichBrokerId\":\""
#define HEAD_NEXT "\",\"nextBeginOffset\":\""
#define HEAD_MIN "\",\"minOffset\":\""
#define HEAD_MAX "\",\"maxOffset\":\""
#define HEAD_END "\"}}"
/* the header's fixed text plus five 64-bit numbers of at most 20 characters each */
#define HEAD_CAPACITY 512

static int exact_ll(PyObject *value, long long *out)
{
    int overflow = 0;
    if (!PyLong_CheckExact(value))
        return 0;
    *out = PyLong_AsLongLongAndOverflow(value, &overflow);
    return !overflow && !(*out == -1 && PyErr_Occurred());
}

/* the decimal text of ``value`` at ``out`` (as Python's str of an int); its length */
static Py_ssize_t put_decimal(char *out, long long value)
{
    char digits[24];
    Py_ssize_t n = 0, written = 0;
    unsigned long long magnitude = value < 0 ? 0ULL - (unsigned long long)value : (unsigned long long)value;
    do {
        digits[n++] = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude);
    if (value < 0)
        out[written++] = '-';
    while (n)
        out[written++] = digits[--n];
    return written;
}

static Py_ssize_t put_text(char *out, const char *text, Py_ssize_t length)
{
    memcpy(out, text, (size_t)length);
    return length;
}

#define PUT_LITERAL(out, literal) put_text((out), (literal), (Py_ssize_t)sizeof(literal) - 1)

static void put_be32(unsigned char *out, uint32_t value)
{
    out[0] = (unsigned char)(value >> 24);
    out[1] = (unsigned char)(value >> 16);
    out[2] = (unsigned char)(value >> 8);
    out[3] = (unsigned char)value;
}

/* the byte length of a record buffer (bytes, or a one-dimensional contiguous view of bytes that
 * is not released) and its address; -1 for any other buffer, which the pure path then takes */
static Py_ssize_t byte_span(PyObject *part, const void **at)
{
    Py_buffer view;
    Py_ssize_t length = -1;
    if (PyBytes_CheckExact(part)) {
        *at = PyBytes_AS_STRING(part);
        return PyBytes_GET_SIZE(part);
    }
    if (!PyMemoryView_Check(part))
        return -1;
    if (PyObject_GetBuffer(part, &view, PyBUF_FULL_RO) < 0) {
        PyErr_Clear();  /* a released view: the pure path says what it says */
        return -1;
    }
    if (view.itemsize == 1 && view.ndim == 1 && PyBuffer_IsContiguous(&view, 'C')
            && (view.format == NULL || strcmp(view.format, "B") == 0)) {
        *at = view.buf;  /* stays valid: the caller holds the view, and no Python code runs meanwhile */
        length = view.len;
    }
    PyBuffer_Release(&view);
    return length;
}

PyObject *rq_found_frame(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    long long opaque, suggest, next_begin, min_offset, max_offset, joined_max;
    char head[HEAD_CAPACITY];
    Py_ssize_t head_len = 8, count, i, body_len = 0;
    PyObject *buffers, *out;
    unsigned char *frame;
    if (nargs != FOUND_FRAME_ARGS) {
        PyErr_SetString(PyExc_TypeError, "found_frame takes 7 arguments");
        return NULL;
    }
    buffers = args[5];
    if (!exact_ll(args[0], &opaque) || !exact_ll(args[1], &suggest) || !exact_ll(args[2], &next_begin)
            || !exact_ll(args[3], &min_offset) || !exact_ll(args[4], &max_offset)
            || !exact_ll(args[6], &joined_max) || !PyList_CheckExact(buffers)) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    count = PyList_GET_SIZE(buffers);
    for (i = 0; i < count; i++) {
        const void *at;
        Py_ssize_t length = byte_span(PyList_GET_ITEM(buffers, i), &at);
        if (length < 0)
            Py_RETURN_NONE;
        body_len += length;
        if (body_len > MAX_FRAME_LENGTH)
            Py_RETURN_NONE;
    }
    /* the JSON header after the 8-byte prefix (frame length, serialize type and header length) */
    head_len += PUT_LITERAL(head + head_len, HEAD_START);
    head_len += put_decimal(head + head_len, opaque);
    head_len += PUT_LITERAL(head + head_len, HEAD_AFTER_OPAQUE);
    head_len += put_decimal(head + head_len, suggest);
    head_len += PUT_LITERAL(head + head_len, HEAD_NEXT);
    head_len += put_decimal(head + head_len, next_begin);
    head_len += PUT_LITERAL(head + head_len, HEAD_MIN);
    head_len += put_decimal(head + head_len, min_offset);
    head_len += PUT_LITERAL(head + head_len, HEAD_MAX);
    head_len += put_decimal(head + head_len, max_offset);
    head_len += PUT_LITERAL(head + head_len, HEAD_END);
    if (4 + (head_len - 8) + body_len > MAX_FRAME_LENGTH)
        Py_RETURN_NONE;
    put_be32((unsigned char *)head, (uint32_t)(4 + (head_len - 8) + body_len));
    put_be32((unsigned char *)head + 4, (uint32_t)((JSON_SERIALIZE << 24) | (head_len - 8)));
    if (body_len > joined_max) {
        PyObject *first = PyBytes_FromStringAndSize(head, head_len);
        if (first == NULL)
            return NULL;
        out = PyList_New(count + 1);
        if (out == NULL) {
            Py_DECREF(first);
            return NULL;
        }
        PyList_SET_ITEM(out, 0, first);
        for (i = 0; i < count; i++) {
            PyObject *part = PyList_GET_ITEM(buffers, i);
            Py_INCREF(part);
            PyList_SET_ITEM(out, i + 1, part);
        }
        return out;
    }
    out = PyBytes_FromStringAndSize(NULL, head_len + body_len);
    if (out == NULL)
        return NULL;
    frame = (unsigned char *)PyBytes_AS_STRING(out);
    memcpy(frame, head, (size_t)head_len);
    frame += head_len;
    for (i = 0; i < count; i++) {
        const void *at = NULL;
        Py_ssize_t length = byte_span(PyList_GET_ITEM(buffers, i), &at);
        if (length > 0)
            memcpy(frame, at, (size_t)length);
        frame += length;
    }
    return out;
}
