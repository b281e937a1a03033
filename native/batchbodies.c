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
