/* The SEND_BATCH_MESSAGE body walk (rocketq.protocol.batchbodies.batch_entries).
 *
 * Items are TOTALSIZE i32 | MAGIC i32 | BODYCRC i32 | FLAG i32 | BODYLEN i32 + body |
 * PROPLEN i16 + properties; each becomes (body, flag, properties dict, properties text).
 * Any inconsistency sends the whole body to the pure walker, which raises its error.
 */
#include "rocketq_native.h"

#define ITEM_HEAD 20 /* TOTALSIZE, MAGIC, BODYCRC, FLAG, BODYLEN */

/* The item at ``pos``: its TOTALSIZE, FLAG, BODYLEN and PROPLEN, checked against each other and
 * the body's end; 0 when they are inconsistent (the pure walker raises). */
static int item_bounds(const unsigned char *buf, Py_ssize_t n, Py_ssize_t pos, int64_t *total, int64_t *flag,
                       int64_t *body_len, int64_t *props_len)
{
    if (n - pos < ITEM_HEAD + 2)
        return 0;
    *total = rq_get_i32(buf + pos);
    *flag = rq_get_i32(buf + pos + 12);
    *body_len = rq_get_i32(buf + pos + 16);
    if (*body_len < 0 || *total < ITEM_HEAD + 2 + *body_len || pos + *total > n)
        return 0;
    *props_len = rq_get_i16(buf + pos + ITEM_HEAD + *body_len);
    return *props_len >= 0 && ITEM_HEAD + *body_len + 2 + *props_len == *total;
}

/* Append ``item`` to ``items``, taking the reference: 0, or -1 with an exception. */
static int append_item(PyObject *items, PyObject *item)
{
    int rc = PyList_Append(items, item);
    Py_DECREF(item);
    return rc;
}

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
        if (!item_bounds(buf, n, pos, &total, &flag, &body_len, &props_len))
            goto malformed;
        at = pos + ITEM_HEAD;
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
        if (PyTuple_GET_ITEM(entry, 1) == NULL) {
            Py_DECREF(entry);
            goto error;
        }
        if (append_item(items, entry) < 0)
            goto error;
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

/* The broker's side for the common batch: plain_batch_messages(body, cluster_entry). Each item
 * becomes (body, flag, properties text + cluster_entry, TAGS hash code, UNIQ_KEY or None, KEYS or
 * None), read in one scan of the properties without building a dict, when every item's
 * properties are canonical (each entry "name\x01value\x02", no name twice) and name none of
 * TRAN_MSG, DELAY, CLUSTER. Any other body (an item that is not such a message, or malformed)
 * goes to the pure function, which returns None (the broker's general loop judges it) or raises
 * the walker's MessageFormatError. */
#define MAX_PLAIN_ENTRIES 64 /* more properties than this: the general loop (names compared pairwise) */

typedef struct {
    const char *name, *value;
    Py_ssize_t name_len, value_len;
} Entry;

enum { PLAIN = 1, NOT_PLAIN = 0, MALFORMED = -1 };

static int name_is(const Entry *e, const char *name)
{
    size_t n = strlen(name);
    return (size_t)e->name_len == n && memcmp(e->name, name, n) == 0;
}

/* Split ``raw`` into entries; PLAIN when canonical and free of the names that need the general loop. */
static int scan_entries(const char *raw, Py_ssize_t n, Entry *entries, int *count)
{
    Py_ssize_t pos = 0;
    *count = 0;
    while (pos < n) {
        const char *end = memchr(raw + pos, '\x02', (size_t)(n - pos)), *sep;
        Py_ssize_t entry_len;
        Entry *e;
        if (end == NULL)
            return NOT_PLAIN;  /* no final separator: decoded fine, stored re-encoded */
        entry_len = end - (raw + pos);
        if (entry_len == 0 || *count == MAX_PLAIN_ENTRIES)
            return NOT_PLAIN;
        sep = memchr(raw + pos, '\x01', (size_t)entry_len);
        if (sep == NULL || sep == raw + pos)
            return MALFORMED;  /* decode_properties refuses it */
        e = &entries[(*count)++];
        e->name = raw + pos;
        e->name_len = sep - (raw + pos);
        e->value = sep + 1;
        e->value_len = end - (sep + 1);
        if (memchr(e->value, '\x01', (size_t)e->value_len) != NULL)
            return NOT_PLAIN;
        if (name_is(e, "TRAN_MSG") || name_is(e, "DELAY") || name_is(e, "CLUSTER"))
            return NOT_PLAIN;
        for (int i = 0; i < *count - 1; i++)
            if (entries[i].name_len == e->name_len && memcmp(entries[i].name, e->name, (size_t)e->name_len) == 0)
                return NOT_PLAIN;
        pos += entry_len + 1;
    }
    return PLAIN;
}

/* The value of ``name`` among the entries as a str, or None; NULL on an error. */
static PyObject *entry_value(const Entry *entries, int count, const char *name)
{
    for (int i = 0; i < count; i++)
        if (name_is(&entries[i], name))
            return PyUnicode_DecodeUTF8(entries[i].value, entries[i].value_len, "strict");
    Py_RETURN_NONE;
}

static PyObject *tag_code(PyObject *tags)
{
    uint32_t h;
    if (tags == Py_None || PyUnicode_GET_LENGTH(tags) == 0)
        return PyLong_FromLong(0);
    if (rq_java_hash(tags, &h, NULL) < 0)
        return NULL;  /* a lone surrogate cannot come out of strict UTF-8 */
    return PyLong_FromLong((long)(int32_t)h);
}

/* One item as the broker's 6-tuple; *verdict says PLAIN, NOT_PLAIN or MALFORMED (NULL for both). */
static PyObject *plain_item(const unsigned char *at, Py_ssize_t body_len, long long flag, Py_ssize_t props_len,
                            PyObject *cluster, int *verdict)
{
    Entry entries[MAX_PLAIN_ENTRIES];
    int count;
    const char *raw = (const char *)at + body_len + 2;
    PyObject *text, *stored, *tags, *out;
    *verdict = scan_entries(raw, props_len, entries, &count);
    if (*verdict != PLAIN)
        return NULL;  /* (no exception: the caller hands the body to the pure function) */
    text = PyUnicode_DecodeUTF8(raw, props_len, "strict");
    if (text == NULL) {
        PyErr_Clear();
        *verdict = MALFORMED;  /* not UTF-8: the pure walker's MessageFormatError */
        return NULL;
    }
    stored = PyUnicode_Concat(text, cluster);
    Py_DECREF(text);
    tags = stored != NULL ? entry_value(entries, count, "TAGS") : NULL;
    out = tags != NULL ? PyTuple_New(6) : NULL;
    if (out == NULL) {
        Py_XDECREF(stored);
        Py_XDECREF(tags);
        return NULL;
    }
    PyTuple_SET_ITEM(out, 0, PyBytes_FromStringAndSize((const char *)at, body_len));
    PyTuple_SET_ITEM(out, 1, PyLong_FromLongLong(flag));
    PyTuple_SET_ITEM(out, 2, stored);
    PyTuple_SET_ITEM(out, 3, tag_code(tags));
    PyTuple_SET_ITEM(out, 4, entry_value(entries, count, "UNIQ_KEY"));
    PyTuple_SET_ITEM(out, 5, entry_value(entries, count, "KEYS"));
    Py_DECREF(tags);
    for (int i = 0; i < 6; i++)
        if (PyTuple_GET_ITEM(out, i) == NULL) {
            Py_DECREF(out);
            return NULL;
        }
    return out;
}

static PyObject *plain_walk(const unsigned char *buf, Py_ssize_t n, PyObject *cluster)
{
    Py_ssize_t pos = 0;
    int verdict;
    PyObject *items = PyList_New(0);
    if (items == NULL)
        return NULL;
    while (pos < n) {
        int64_t total, body_len, props_len, flag;
        PyObject *item;
        if (!item_bounds(buf, n, pos, &total, &flag, &body_len, &props_len))
            goto malformed;
        item = plain_item(buf + pos + ITEM_HEAD, (Py_ssize_t)body_len, flag, (Py_ssize_t)props_len, cluster,
                          &verdict);
        if (item == NULL) {
            if (PyErr_Occurred())
                goto error;
            goto malformed;  /* not plain, or malformed: the pure function decides which */
        }
        if (append_item(items, item) < 0)
            goto error;
        pos += (Py_ssize_t)total;
    }
    return items;
malformed:
error:
    Py_DECREF(items);
    return NULL;
}

PyObject *rq_py_plain_batch_messages(PyObject *fallback, PyObject *context, PyObject *const *args,
                                     Py_ssize_t nargs)
{
    Py_buffer view;
    PyObject *out;
    if (nargs != 2 || !PyUnicode_CheckExact(args[1]) || PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        return rq_fallback(fallback, args, nargs);
    }
    out = plain_walk(view.buf, view.len, args[1]);
    PyBuffer_Release(&view);
    if (out == NULL && !PyErr_Occurred())
        return rq_fallback(fallback, args, nargs);
    return out;
}
