/* A remoting frame with a JSON header (rocketq.protocol.frames._decode_view), the common case.
 *
 * Frame, after its length prefix: serType<<24 | headerLen (u32), the header, the body. The JSON
 * is parsed by orjson as the pure code does; this routine only replaces the Python around it
 * (field checks, defaults, the RemotingCommand). A binary header, an unusual field type or an
 * out-of-range number goes to the pure decoder, which converts it or raises its FrameError.
 *
 * context: (command of all ten fields, SerializeType.JSON, orjson.loads, PROTOCOL_VERSION); the
 * first is frames._command_of (its C twin fills the slots as RemotingCommand's __init__ does)
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

/* _decode_view(view) -> RemotingCommand; a frame without its 4-byte length prefix */
PyObject *rq_py_decode_frame_view(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    const unsigned char *p;
    uint32_t mark, header_len;
    PyObject *json = NULL, *header = NULL, *body = NULL, *cmd = NULL;
    if (nargs != 1 || PyTuple_GET_SIZE(context) != 4 || intern_keys() < 0)
        return PyErr_Occurred() ? NULL : rq_fallback(fallback, args, nargs);
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        return rq_fallback(fallback, args, nargs);
    }
    p = view.buf;
    if (view.len < 4)
        goto done;
    mark = (uint32_t)rq_get_i32(p);
    header_len = mark & HEADER_LENGTH_MASK;
    if ((mark >> 24) != SERIALIZE_JSON || 4 + (Py_ssize_t)header_len > view.len)
        goto done;
    json = PyMemoryView_FromMemory((char *)p + 4, header_len, PyBUF_READ);
    if (json == NULL)
        goto done;
    header = PyObject_CallOneArg(PyTuple_GET_ITEM(context, 2), json);
    if (header == NULL) {
        PyErr_Clear();  /* not JSON: the pure decoder raises its FrameError */
        goto done;
    }
    body = PyBytes_FromStringAndSize((const char *)p + 4 + header_len, view.len - 4 - header_len);
    if (body != NULL)
        cmd = command(context, header, body);
done:
    Py_XDECREF(json);
    Py_XDECREF(header);
    Py_XDECREF(body);
    PyBuffer_Release(&view);
    if (cmd == NULL && !PyErr_Occurred())
        return rq_fallback(fallback, args, nargs);
    return cmd;
}
