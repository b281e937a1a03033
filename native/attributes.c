/* Reading and moving the counters of Python store objects (MappedFile, IndexFile) from C, for
 * the routines that append in place (inplace.c, indexput.c, batchappend.c, groupappend.c). Attribute names are interned
 * once; a value of an unexpected type is reported, never raised, so that the caller can hand
 * the call to its pure-Python twin. */
#include "rocketq_native.h"

int rq_intern_names(PyObject **const *slots, const char *const *texts, size_t count)
{
    if (*slots[count - 1] != NULL)
        return 0;
    for (size_t i = 0; i < count; i++) {
        PyObject *name = PyUnicode_InternFromString(texts[i]);
        if (name == NULL) {
            for (size_t j = 0; j < i; j++)
                Py_CLEAR(*slots[j]);
            return -1;
        }
        *slots[i] = name;  /* the last slot, set last, says the rest is ready */
    }
    return 0;
}

int rq_int_attr(PyObject *obj, PyObject *name, long long low, long long high, long long *out)
{
    PyObject *value = PyObject_GetAttr(obj, name);
    int ok;
    if (value == NULL) {
        PyErr_Clear();
        return 0;
    }
    ok = rq_int_in(value, low, high, out);
    Py_DECREF(value);
    return ok;
}

int rq_set_int_attr(PyObject *obj, PyObject *name, long long value)
{
    PyObject *number = PyLong_FromLongLong(value);
    int rc;
    if (number == NULL)
        return -1;
    rc = PyObject_SetAttr(obj, name, number);
    Py_DECREF(number);
    return rc;
}

PyObject *rq_last_item(PyObject *obj, PyObject *name, int *empty)
{
    PyObject *list = PyObject_GetAttr(obj, name), *last = NULL;
    *empty = 0;
    if (list == NULL) {
        PyErr_Clear();
        return NULL;
    }
    if (PyList_CheckExact(list)) {
        if (PyList_GET_SIZE(list) == 0)
            *empty = 1;
        else
            last = Py_NewRef(PyList_GET_ITEM(list, PyList_GET_SIZE(list) - 1));
    }
    Py_DECREF(list);
    return last;
}

int rq_writable_map(PyObject *obj, PyObject *name, Py_ssize_t needed, Py_buffer *map)
{
    PyObject *buf = PyObject_GetAttr(obj, name);
    int ok;
    if (buf == NULL) {
        PyErr_Clear();
        return 0;
    }
    ok = PyObject_GetBuffer(buf, map, PyBUF_WRITABLE) == 0;
    Py_DECREF(buf);
    if (!ok) {
        PyErr_Clear();  /* a closed map: the pure code raises what it always raised */
        return 0;
    }
    if (map->len < needed) {
        PyBuffer_Release(map);
        return 0;
    }
    return 1;
}

int rq_file_counters(PyObject *file, RqFileCounters *out)
{
    static PyObject *wrote, *size, *reserved, *start;
    static PyObject **const slots[] = {&wrote, &size, &reserved, &start};
    static const char *const texts[] = {"wrote", "size", "reserved", "start"};
    if (rq_intern_names(slots, texts, sizeof(texts) / sizeof(texts[0])) < 0) {
        PyErr_Clear();
        return 0;
    }
    return rq_int_attr(file, wrote, 0, RQ_INT64_MAX, &out->wrote) && rq_int_attr(file, size, 0, RQ_INT64_MAX, &out->size)
        && rq_int_attr(file, reserved, 0, RQ_INT64_MAX, &out->reserved)
        && rq_int_attr(file, start, 0, RQ_INT64_MAX, &out->start);
}

int rq_last_file(PyObject *owner, PyObject *list_name, RqLastFile *last)
{
    int empty;
    last->mapped = 0;
    last->file = rq_last_item(owner, list_name, &empty);
    if (last->file == NULL)
        return empty ? 0 : -1;
    if (rq_file_counters(last->file, &last->n))
        return 1;
    Py_CLEAR(last->file);
    return -1;
}

void rq_release_file(RqLastFile *last)
{
    if (last->mapped)
        PyBuffer_Release(&last->map);
    last->mapped = 0;
    Py_CLEAR(last->file);
}
