/* The producer's per-send work in C: the unique key stamped into a message's properties and
 * the properties text made in one call (rocketq/client/sending.py, ``stamp_unique_key``).
 *
 * ``stamp_unique_key(props, key, limit)`` sets ``props["UNIQ_KEY"] = key`` (an existing entry
 * keeps its place in the dict, a new one is the last) and returns ``encode_properties`` of the
 * stamped map. Anything unusual (not an exact dict of exact strs, an empty name, a separator
 * in a name or value, text that may be over ``limit`` UTF-8 bytes) puts the map back as it was
 * and goes to the pure function, which refuses (or accepts) it as it always did.
 */
#include "rocketq_native.h"

static PyObject *uniq_key_name;  /* "UNIQ_KEY", interned once */

/* props[UNIQ_KEY] as it was: ``previous`` (a new reference) or, when NULL, no entry. */
static int restore(PyObject *props, PyObject *previous)
{
    int status;
    if (previous != NULL) {
        status = PyDict_SetItem(props, uniq_key_name, previous);
        Py_DECREF(previous);
        return status;
    }
    return PyDict_DelItem(props, uniq_key_name);
}

/* True when the text's UTF-8 form is surely within ``limit`` bytes (4 bytes per character at
 * most); an ASCII text is measured exactly. */
static int surely_within(PyObject *text, Py_ssize_t limit)
{
    Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    return PyUnicode_IS_ASCII(text) ? length <= limit : length <= limit / 4;
}

PyObject *rq_py_stamp_unique_key(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *props, *previous, *text;
    Py_ssize_t limit;
    if (nargs != 3 || !PyDict_CheckExact(args[0]) || !PyUnicode_CheckExact(args[1]) || !PyLong_CheckExact(args[2]))
        return rq_fallback(fallback, args, nargs);
    limit = PyLong_AsSsize_t(args[2]);
    if (limit < 0) {
        PyErr_Clear();
        return rq_fallback(fallback, args, nargs);
    }
    if (uniq_key_name == NULL && (uniq_key_name = PyUnicode_InternFromString("UNIQ_KEY")) == NULL)
        return NULL;
    props = args[0];
    previous = PyDict_GetItemWithError(props, uniq_key_name);  /* exact str keys: no Python code runs */
    if (previous == NULL && PyErr_Occurred())
        return NULL;
    Py_XINCREF(previous);
    if (PyDict_SetItem(props, uniq_key_name, args[1]) < 0) {
        Py_XDECREF(previous);
        return NULL;
    }
    text = rq_encode_properties(props);
    if (text != NULL && surely_within(text, limit)) {
        Py_XDECREF(previous);
        return text;
    }
    if (text == NULL && PyErr_Occurred()) {
        Py_XDECREF(previous);
        return NULL;
    }
    Py_XDECREF(text);
    if (restore(props, previous) < 0)
        return NULL;
    return rq_fallback(fallback, args, nargs);
}
