/* Message properties, ``name \x01 value \x02 ...``: the parser and the encoder.
 *
 * Semantics are those of rocketq.protocol.messageproperties: empty entries are skipped, the
 * final \x02 may be missing, an entry without \x01 or with an empty name is malformed, a
 * repeated name keeps its last value. Malformed input returns NULL without an exception and
 * the caller lets the pure code raise its MessageFormatError / MessageIllegalError.
 */
#include "rocketq_native.h"

#define NAME_VALUE_SEP 0x01
#define ENTRY_SEP 0x02

PyObject *rq_decode_properties(PyObject *text)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), start = 0;
    PyObject *out = PyDict_New();
    if (out == NULL)
        return NULL;
    while (start < n) {
        Py_ssize_t end = PyUnicode_FindChar(text, ENTRY_SEP, start, n, 1), sep;
        PyObject *name, *value;
        int failed;
        if (end == -2)
            goto error;
        if (end == -1)
            end = n;
        if (end == start) {
            start = end + 1;
            continue;
        }
        sep = PyUnicode_FindChar(text, NAME_VALUE_SEP, start, end, 1);
        if (sep == -2)
            goto error;
        if (sep <= start) { /* no separator (-1), or an empty name */
            Py_DECREF(out);
            return NULL;
        }
        name = PyUnicode_Substring(text, start, sep);
        value = PyUnicode_Substring(text, sep + 1, end);
        failed = name == NULL || value == NULL || PyDict_SetItem(out, name, value) < 0;
        Py_XDECREF(name);
        Py_XDECREF(value);
        if (failed)
            goto error;
        start = end + 1;
    }
    return out;
error:
    Py_DECREF(out);
    return NULL;
}

PyObject *rq_decode_properties_utf8(const char *raw, Py_ssize_t length, PyObject **text_out)
{
    PyObject *text = PyUnicode_DecodeUTF8(raw, length, NULL), *props;
    if (text == NULL) {
        if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
            PyErr_Clear();  /* not UTF-8: malformed, the pure code says so */
        return NULL;
    }
    props = rq_decode_properties(text);
    if (props == NULL || text_out == NULL)
        Py_DECREF(text);
    else
        *text_out = text;
    return props;
}

static int holds_separator(PyObject *s)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    return PyUnicode_FindChar(s, NAME_VALUE_SEP, 0, n, 1) != -1 || PyUnicode_FindChar(s, ENTRY_SEP, 0, n, 1) != -1;
}

PyObject *rq_encode_properties(PyObject *mapping)
{
    Py_ssize_t pos = 0, total = 0, at = 0;
    Py_UCS4 maxchar = 0;
    PyObject *name, *value, *out;
    /* first pass: validate and size the result */
    while (PyDict_Next(mapping, &pos, &name, &value)) {
        if (!PyUnicode_CheckExact(name) || !PyUnicode_CheckExact(value))
            return NULL;
        if (PyUnicode_GET_LENGTH(name) == 0 || holds_separator(name) || holds_separator(value))
            return NULL;
        total += PyUnicode_GET_LENGTH(name) + PyUnicode_GET_LENGTH(value) + 2;
        if (PyUnicode_MAX_CHAR_VALUE(name) > maxchar)
            maxchar = PyUnicode_MAX_CHAR_VALUE(name);
        if (PyUnicode_MAX_CHAR_VALUE(value) > maxchar)
            maxchar = PyUnicode_MAX_CHAR_VALUE(value);
    }
    out = PyUnicode_New(total, maxchar);
    if (out == NULL || total == 0)
        return out;
    pos = 0;
    while (PyDict_Next(mapping, &pos, &name, &value)) {
        int kind = PyUnicode_KIND(out);
        void *data = PyUnicode_DATA(out);
        Py_ssize_t name_len = PyUnicode_GET_LENGTH(name), value_len = PyUnicode_GET_LENGTH(value);
        if (PyUnicode_CopyCharacters(out, at, name, 0, name_len) < 0)
            goto error;
        at += name_len;
        PyUnicode_WRITE(kind, data, at, NAME_VALUE_SEP);
        at++;
        if (PyUnicode_CopyCharacters(out, at, value, 0, value_len) < 0)
            goto error;
        at += value_len;
        PyUnicode_WRITE(kind, data, at, ENTRY_SEP);
        at++;
    }
    return out;
error:
    Py_DECREF(out);
    return NULL;
}

PyObject *rq_py_decode_properties(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *out;
    if (nargs != 1 || !PyUnicode_CheckExact(args[0]))
        return rq_fallback(fallback, args, nargs);
    out = rq_decode_properties(args[0]);
    if (out == NULL && !PyErr_Occurred())
        return rq_fallback(fallback, args, nargs);
    return out;
}

PyObject *rq_py_encode_properties(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *out;
    if (nargs != 1 || !PyDict_CheckExact(args[0]))
        return rq_fallback(fallback, args, nargs);
    out = rq_encode_properties(args[0]);
    if (out == NULL && !PyErr_Occurred())
        return rq_fallback(fallback, args, nargs);
    return out;
}

/* is_canonical(encoded, properties): every entry ends with \x02, and each separator occurs once
 * per entry, so the text is what encode_properties(properties) gives. */
PyObject *rq_py_is_canonical(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t n, count, entries = 0, names = 0;
    int kind;
    const void *data;
    if (nargs != 2 || !PyUnicode_CheckExact(args[0]) || !PyDict_CheckExact(args[1]))
        return rq_fallback(fallback, args, nargs);
    n = PyUnicode_GET_LENGTH(args[0]);
    count = PyDict_GET_SIZE(args[1]);
    kind = PyUnicode_KIND(args[0]);
    data = PyUnicode_DATA(args[0]);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 ch = PyUnicode_READ(kind, data, i);
        entries += ch == ENTRY_SEP;
        names += ch == NAME_VALUE_SEP;
    }
    return PyBool_FromLong(entries == count && names == count
                           && (n == 0 || PyUnicode_READ(kind, data, n - 1) == ENTRY_SEP));
}
