/* The SEND_BATCH_MESSAGE body walk (rocketq.protocol.batchbodies.batch_entries).
 *
 * Items are TOTALSIZE i32 | MAGIC i32 | BODYCRC i32 | FLAG i32 | BODYLEN i32 + body |
 * PROPLEN i16 + properties; each becomes (body, flag, properties dict, properties text).
 * Any inconsistency sends the whole body to the pure walker, which raises its error.
 */
#include "rocketq_native.h"

#define ITEM_HEAD 20 /* TOTALSIZE, MAGIC, BODYCRC, FLAG, BODYLEN */

/* The entries, or NULL without an exception when the body is not a well-formed batch. */
static PyObject *walk(const unsigned char *buf, Py_ssize_t n)
{
    Py_ssize_t pos = 0;
    PyObject *items = PyList_New(0);
    if (items == NULL)
        return NULL;
    while (pos < n) {
        int64_t total, body_len, props_len, flag;
        Py_ssize_t at;
        PyObject *body, *text = NULL, *props, *entry;
        if (n - pos < ITEM_HEAD + 2)
            goto malformed;
        total = rq_get_i32(buf + pos);
        flag = rq_get_i32(buf + pos + 12);
        body_len = rq_get_i32(buf + pos + 16);
        if (body_len < 0 || total < ITEM_HEAD + 2 + body_len || pos + total > n)
            goto malformed;
        at = pos + ITEM_HEAD;
        props_len = rq_get_i16(buf + at + body_len);
        if (props_len < 0 || at + body_len + 2 + props_len != pos + total)
            goto malformed;
        props = rq_decode_properties_utf8((const char *)buf + at + body_len + 2, (Py_ssize_t)props_len, &text);
        if (props == NULL) {
            if (PyErr_Occurred())
                goto error;
            goto malformed;
        }
        body = PyBytes_FromStringAndSize((const char *)buf + at, (Py_ssize_t)body_len);
        if (body == NULL) {
            Py_DECREF(props);
            Py_DECREF(text);
            goto error;
        }
        entry = PyTuple_New(4);
        if (entry == NULL) {
            Py_DECREF(body);
            Py_DECREF(props);
            Py_DECREF(text);
            goto error;
        }
        PyTuple_SET_ITEM(entry, 0, body);
        PyTuple_SET_ITEM(entry, 1, PyLong_FromLongLong(flag));
        PyTuple_SET_ITEM(entry, 2, props);
        PyTuple_SET_ITEM(entry, 3, text);
        if (PyTuple_GET_ITEM(entry, 1) == NULL || PyList_Append(items, entry) < 0) {
            Py_DECREF(entry);
            goto error;
        }
        Py_DECREF(entry);
        pos += (Py_ssize_t)total;
    }
    return items;
malformed:
    Py_DECREF(items);
    return NULL;
error:
    Py_DECREF(items);
    return NULL;
}

PyObject *rq_py_batch_entries(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    PyObject *out;
    if (nargs != 1 || PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        return rq_fallback(fallback, args, nargs);
    }
    out = walk(view.buf, view.len);
    PyBuffer_Release(&view);
    if (out == NULL && !PyErr_Occurred())
        return rq_fallback(fallback, args, nargs);
    return out;
}

/* The producer's side: encode_batch_entries(entries), a list of (body bytes, flag int, encoded
 * properties str) tuples, as one SEND_BATCH_MESSAGE body (MAGIC and BODYCRC 0). Anything
 * unusual (another type, a flag outside i32, properties over MAX_PROPERTIES_LENGTH bytes,
 * text that is not UTF-8-encodable) goes to the pure function, which raises what it raises. */
#define MAX_PROPERTIES_LENGTH 32767 /* messageproperties.MAX_PROPERTIES_LENGTH: PROPLEN is an i16 */

/* The item's parts, or 0 when the pure function must judge it. */
static int item_parts(PyObject *entry, const char **body, Py_ssize_t *body_len, long long *flag, const char **props,
                      Py_ssize_t *props_len)
{
    PyObject *b, *text;
    if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 3)
        return 0;
    b = PyTuple_GET_ITEM(entry, 0);
    text = PyTuple_GET_ITEM(entry, 2);
    if (!PyBytes_CheckExact(b) || !PyUnicode_CheckExact(text)
            || !rq_int_in(PyTuple_GET_ITEM(entry, 1), RQ_INT32_MIN, RQ_INT32_MAX, flag))
        return 0;
    *props = PyUnicode_AsUTF8AndSize(text, props_len);
    if (*props == NULL) {
        PyErr_Clear();
        return 0;
    }
    *body = PyBytes_AS_STRING(b);
    *body_len = PyBytes_GET_SIZE(b);
    return *props_len <= MAX_PROPERTIES_LENGTH && *body_len <= RQ_INT32_MAX - ITEM_HEAD - 2 - *props_len;
}

static PyObject *encode_entries(PyObject *entries)
{
    Py_ssize_t n = PyList_GET_SIZE(entries), total = 0, body_len, props_len;
    const char *body, *props;
    long long flag;
    PyObject *out;
    unsigned char *p;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!item_parts(PyList_GET_ITEM(entries, i), &body, &body_len, &flag, &props, &props_len))
            return NULL;
        total += ITEM_HEAD + body_len + 2 + props_len;
    }
    out = PyBytes_FromStringAndSize(NULL, total);
    if (out == NULL)
        return NULL;
    p = (unsigned char *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < n; i++) {
        item_parts(PyList_GET_ITEM(entries, i), &body, &body_len, &flag, &props, &props_len);
        rq_put_i32(p, ITEM_HEAD + body_len + 2 + props_len);
        rq_put_i32(p + 4, 0);  /* MAGIC: batchbodies.BATCH_ITEM_MAGIC */
        rq_put_i32(p + 8, 0);  /* BODYCRC */
        rq_put_i32(p + 12, flag);
        rq_put_i32(p + 16, body_len);
        memcpy(p + ITEM_HEAD, body, (size_t)body_len);
        p += ITEM_HEAD + body_len;
        rq_put_i16(p, (int32_t)props_len);
        memcpy(p + 2, props, (size_t)props_len);
        p += 2 + props_len;
    }
    return out;
}

PyObject *rq_py_encode_batch_entries(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *out;
    if (nargs != 1 || !PyList_CheckExact(args[0]))
        return rq_fallback(fallback, args, nargs);
    out = encode_entries(args[0]);
    if (out == NULL && !PyErr_Occurred())
        return rq_fallback(fallback, args, nargs);
    return out;
}
