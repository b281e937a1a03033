/* A remoting frame with a JSON header (rocketq.protocol.frames._decode_view), the common case.
 *
 * Frame, after its length prefix: serType<<24 | headerLen (u32), the header, the body. The JSON
 * is parsed by orjson as the pure code does; this routine only replaces the Python around it
 * (field checks, defaults, the RemotingCommand). A binary header, an unusual field type or an
 * out-of-range number goes to the pure decoder, which converts it or raises its FrameError.
 *
 * context: (command of all ten fields, SerializeType.JSON, orjson.loads, PROTOCOL_VERSION); the
 * first is frames._command_of (its C twin fills the slots as RemotingCommand's __init__ does)
 *
 * ``split_frames`` cuts every whole frame of a read at once (the connection's per-read call):
 * one C loop instead of a Python generator step, a length check and a view slice per frame.
 */
#include "rocketq_native.h"

#define SERIALIZE_JSON 0
#define HEADER_LENGTH_MASK 0xFFFFFF

static PyObject *key_code, *key_opaque, *key_flag, *key_version, *key_language, *key_remark, *key_ext,
    *default_language, *no_parts, *zero;

/* The constants above, made on first use; all or none (a failure leaves them NULL, to retry). */
static int intern_keys(void)
{
    PyObject **slots[] = {&key_code, &key_opaque, &key_flag, &key_version, &key_language, &key_remark, &key_ext,
                          &default_language};
    static const char *texts[] = {"code", "opaque", "flag", "version", "language", "remark", "extFields", "JAVA"};
    const size_t count = sizeof(texts) / sizeof(texts[0]);
    if (zero != NULL)
        return 0;
    for (size_t i = 0; i < count; i++) {
        *slots[i] = PyUnicode_InternFromString(texts[i]);
        if (*slots[i] == NULL) {
            for (size_t j = 0; j < i; j++)
                Py_CLEAR(*slots[j]);
            return -1;
        }
    }
    no_parts = PyTuple_New(0);
    zero = no_parts == NULL ? NULL : PyLong_FromLong(0);  /* set last: it says the rest is ready */
    if (zero == NULL) {
        for (size_t j = 0; j < count; j++)
            Py_CLEAR(*slots[j]);
        Py_CLEAR(no_parts);
        return -1;
    }
    return 0;
}

/* header[key] as an exact int in int32 (``absent`` when missing): 1, else 0. */
static int int_field(PyObject *header, PyObject *key, PyObject *absent, PyObject **out)
{
    long long ignored;
    PyObject *value = PyDict_GetItemWithError(header, key);
    if (value == NULL) {
        if (PyErr_Occurred() || absent == NULL)
            return 0;
        value = absent;
    }
    if (!PyLong_CheckExact(value) || !rq_int_in(value, RQ_INT32_MIN, RQ_INT32_MAX, &ignored))
        return 0;
    *out = value;
    return 1;
}

/* extFields when absent, null or an object of strings (used as it is, like the pure code); a
 * new reference, or NULL without an exception for anything else. */
static PyObject *ext_fields(PyObject *header)
{
    PyObject *raw = PyDict_GetItemWithError(header, key_ext), *key, *value;
    Py_ssize_t pos = 0;
    if (raw == NULL)
        return PyErr_Occurred() ? NULL : PyDict_New();
    if (raw == Py_None)
        return PyDict_New();
    if (!PyDict_CheckExact(raw))
        return NULL;
    while (PyDict_Next(raw, &pos, &key, &value))
        if (!PyUnicode_CheckExact(value))
            return NULL;
    return Py_NewRef(raw);
}

static PyObject *command(PyObject *context, PyObject *header, PyObject *body)
{
    PyObject *code, *opaque, *flag, *version, *language, *remark, *ext, *cmd;
    PyObject *protocol = PyTuple_GET_ITEM(context, 3);
    if (!PyDict_CheckExact(header))
        return NULL;
    if (!int_field(header, key_code, NULL, &code) || !int_field(header, key_opaque, zero, &opaque)
            || !int_field(header, key_flag, zero, &flag) || !int_field(header, key_version, protocol, &version))
        return NULL;
    language = PyDict_GetItemWithError(header, key_language);
    if (language == NULL && !PyErr_Occurred())
        language = default_language;
    remark = PyDict_GetItemWithError(header, key_remark);
    if (remark == NULL && !PyErr_Occurred())
        remark = Py_None;
    if (language == NULL || remark == NULL || !PyUnicode_CheckExact(language)
            || (remark != Py_None && !PyUnicode_CheckExact(remark)))
        return NULL;
    ext = ext_fields(header);
    if (ext == NULL)
        return NULL;
    /* every field in order, body_parts () last: context[0] may fill the slots directly */
    PyObject *fields[10] = {code, opaque, flag, remark, ext, body, language, version, PyTuple_GET_ITEM(context, 1),
                            no_parts};
    cmd = PyObject_Vectorcall(PyTuple_GET_ITEM(context, 0), fields, 10, NULL);
    Py_DECREF(ext);
    return cmd;
}

/* The command of a header jsonheader.c parsed: the fields as command() gives them. */
static PyObject *parsed_command(PyObject *context, RqJsonHeader *h, PyObject *body)
{
    PyObject *ints[4] = {PyLong_FromLong(h->code), h->has_opaque ? PyLong_FromLong(h->opaque) : Py_NewRef(zero),
                         h->has_flag ? PyLong_FromLong(h->flag) : Py_NewRef(zero),
                         h->has_version ? PyLong_FromLong(h->version) : Py_NewRef(PyTuple_GET_ITEM(context, 3))};
    PyObject *cmd = NULL;
    if (ints[0] != NULL && ints[1] != NULL && ints[2] != NULL && ints[3] != NULL) {
        PyObject *fields[10] = {ints[0], ints[1], ints[2], h->remark, h->ext, body, h->language, ints[3],
                                PyTuple_GET_ITEM(context, 1), no_parts};
        cmd = PyObject_Vectorcall(PyTuple_GET_ITEM(context, 0), fields, 10, NULL);
    }
    for (int i = 0; i < 4; i++)
        Py_XDECREF(ints[i]);
    return cmd;
}

/* The command of one frame (without its length prefix) at p, len bytes; NULL without an
 * exception for anything the pure decoder must decide. The usual header is parsed here
 * (jsonheader.c); one it declines goes to orjson, as before. */
static PyObject *decode_at(PyObject *context, const unsigned char *p, Py_ssize_t len)
{
    uint32_t mark, header_len;
    PyObject *json, *header, *body, *cmd = NULL;
    if (len < 4)
        return NULL;
    mark = (uint32_t)rq_get_i32(p);
    header_len = mark & HEADER_LENGTH_MASK;
    if ((mark >> 24) != SERIALIZE_JSON || 4 + (Py_ssize_t)header_len > len)
        return NULL;
    RqJsonHeader parsed;
    switch (rq_json_header(p + 4, header_len, &parsed)) {
    case -1:
        return NULL;
    case 1:
        body = PyBytes_FromStringAndSize((const char *)p + 4 + header_len, len - 4 - header_len);
        if (body != NULL)
            cmd = parsed_command(context, &parsed, body);
        Py_XDECREF(body);
        rq_json_header_clear(&parsed);
        return cmd;
    }
    json = PyMemoryView_FromMemory((char *)p + 4, header_len, PyBUF_READ);
    if (json == NULL)
        return NULL;
    header = PyObject_CallOneArg(PyTuple_GET_ITEM(context, 2), json);
    Py_DECREF(json);
    if (header == NULL) {
        PyErr_Clear();  /* not JSON: the pure decoder raises its FrameError */
        return NULL;
    }
    body = PyBytes_FromStringAndSize((const char *)p + 4 + header_len, len - 4 - header_len);
    if (body != NULL)
        cmd = command(context, header, body);
    Py_DECREF(header);
    Py_XDECREF(body);
    return cmd;
}

/* _decode_view(view) -> RemotingCommand; a frame without its 4-byte length prefix */
PyObject *rq_py_decode_frame_view(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    PyObject *cmd;
    if (nargs != 1 || PyTuple_GET_SIZE(context) < 4 || intern_keys() < 0)
        return PyErr_Occurred() ? NULL : rq_fallback(fallback, args, nargs);
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        return rq_fallback(fallback, args, nargs);
    }
    cmd = decode_at(context, view.buf, view.len);
    PyBuffer_Release(&view);
    if (cmd == NULL && !PyErr_Occurred())
        return rq_fallback(fallback, args, nargs);
    return cmd;
}

/* The frame at [start, stop) of ``data`` by the pure decoder (given a memoryview slice, as the
 * pure split does): the command; NULL with *error set (a new reference) when it raised a
 * FrameError; NULL with an exception set for anything else. ``*whole`` is the view of data,
 * made on first use. */
static PyObject *decode_pure(PyObject *context, PyObject *data, PyObject **whole, Py_ssize_t start,
                             Py_ssize_t stop, PyObject **error)
{
    PyObject *slice, *cmd, *type, *value, *traceback;
    if (*whole == NULL && (*whole = PyMemoryView_FromObject(data)) == NULL)
        return NULL;
    slice = PySequence_GetSlice(*whole, start, stop);
    if (slice == NULL)
        return NULL;
    cmd = PyObject_CallOneArg(PyTuple_GET_ITEM(context, 4), slice);
    Py_DECREF(slice);
    if (cmd != NULL || !PyErr_ExceptionMatches(PyTuple_GET_ITEM(context, 5)))
        return cmd;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    if (traceback != NULL && value != NULL)
        PyException_SetTraceback(value, traceback);
    Py_XDECREF(type);
    Py_XDECREF(traceback);
    if (value == NULL)
        return NULL;  /* (a normalised exception always has a value) */
    *error = value;
    return NULL;
}

/* split_frames(data, max_frame_size[, start]) -> (commands, pos, needed, error): every whole
 * frame of ``data`` (exact bytes) from ``start`` on, as rocketq.protocol.frames.split_frames
 * does it (pos counts from the start of ``data``).
 *
 * context: _decode_view's four, then the pure _decode_view and FrameError. A length outside
 * [4, max] stops the split with FrameError's message built here (the pure text, word for
 * word); a frame the fast decoder declines goes to the pure decoder, whose FrameError stops
 * the split at that frame. Anything else than (bytes, int[, int within the data]) goes to the pure function. */
PyObject *rq_py_split_frames(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs)
{
    const unsigned char *p;
    Py_ssize_t end, pos, needed = 4;
    long long max_size, start = 0;
    PyObject *commands, *whole = NULL, *error = NULL, *out;
    if (nargs < 2 || nargs > 3 || !PyBytes_CheckExact(args[0]) || PyTuple_GET_SIZE(context) != 6
            || !rq_int_in(args[1], 0, RQ_INT64_MAX, &max_size)
            || (nargs == 3 && !rq_int_in(args[2], 0, PyBytes_GET_SIZE(args[0]), &start)) || intern_keys() < 0)
        return PyErr_Occurred() ? NULL : rq_fallback(fallback, args, nargs);
    p = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    end = PyBytes_GET_SIZE(args[0]);
    pos = (Py_ssize_t)start;  /* a read's head finished a buffered frame: the rest is split in place */
    commands = PyList_New(0);
    if (commands == NULL)
        return NULL;
    while (end - pos >= 4) {
        int32_t length = rq_get_i32(p + pos);
        PyObject *cmd;
        int failed;
        if (length < 4 || length > max_size) {
            PyObject *text = PyUnicode_FromFormat("frame length %d outside [4, %S]", (int)length, args[1]);
            if (text == NULL)
                goto fail;
            error = PyObject_CallOneArg(PyTuple_GET_ITEM(context, 5), text);
            Py_DECREF(text);
            if (error == NULL)
                goto fail;
            break;
        }
        if (end - pos - 4 < length) {
            needed = 4 + (Py_ssize_t)length;
            break;
        }
        cmd = decode_at(context, p + pos + 4, length);
        if (cmd == NULL && !PyErr_Occurred())
            cmd = decode_pure(context, args[0], &whole, pos + 4, pos + 4 + length, &error);
        if (cmd == NULL) {
            if (error != NULL)
                break;  /* a bad frame: the split stops at it */
            goto fail;
        }
        failed = PyList_Append(commands, cmd);
        Py_DECREF(cmd);
        if (failed < 0)
            goto fail;
        pos += 4 + (Py_ssize_t)length;
    }
    Py_XDECREF(whole);
    out = Py_BuildValue("(NnnN)", commands, pos, needed, error != NULL ? error : Py_NewRef(Py_None));
    return out;
fail:
    Py_XDECREF(whole);
    Py_XDECREF(error);
    Py_DECREF(commands);
    return NULL;
}
