/* A request header's typed fields from its extFields (rocketq.protocol.headers, the compiled
 * ``from_ext`` of each header class), the common case.
 *
 * The pure parser reads each field under its key and sets the field's slot on a new instance
 * (object.__new__, object.__setattr__: a frozen dataclass's __init__ minus its keyword
 * handling). This routine does the same from a table of the class's fields, for the input
 * every well-behaved client sends: an exact dict, string values, integers as plain ASCII digits
 * short enough to fit the field's Java type, booleans as "true"/"false". Anything else (a
 * missing required field, a negative or odd number, another type) goes to the pure parser,
 * which converts it or raises its HeaderError.
 *
 * context: (cls, fields) with fields a tuple of (slot name, key, kind, required, default,
 * safe digits) and kind 0 = str, 1 = int, 2 = bool.
 */
#include "rocketq_native.h"

#include <structmember.h>

enum { KIND_STR = 0, KIND_INT = 1, KIND_BOOL = 2, SPEC_ITEMS = 6 };
#define MAX_LONG_LONG_DIGITS 18  /* any 18 decimal digits fit a long long */

static PyObject *empty_args;

/* object.__setattr__(self, name, value) on a slots instance: a plain slot (an object member of
 * a class self is an instance of) is written directly, which is what the member descriptor's
 * setter does once its checks pass; anything else the generic way. */
static int set_field(PyObject *self, PyObject *name, PyObject *value)
{
    Py_ssize_t offset = rq_named_slot_offset(Py_TYPE(self), name);
    if (offset >= 0) {
        Py_XSETREF(*(PyObject **)((char *)self + offset), Py_NewRef(value));
        return 0;
    }
    return PyObject_GenericSetAttr(self, name, value);
}

/* raw as an int if it is an exact str of 1..safe ASCII digits (``raw.isdecimal() and len(raw)
 * <= safe`` on the text clients send), else NULL without an exception. */
static PyObject *digits(PyObject *raw, Py_ssize_t safe)
{
    Py_ssize_t length;
    const char *text;
    if (!PyUnicode_CheckExact(raw) || !PyUnicode_IS_ASCII(raw))
        return NULL;
    length = PyUnicode_GET_LENGTH(raw);
    if (length == 0 || length > safe)
        return NULL;
    text = (const char *)PyUnicode_DATA(raw);
    long long value = 0;
    for (Py_ssize_t i = 0; i < length; i++) {
        if (text[i] < '0' || text[i] > '9')
            return NULL;
        if (length <= MAX_LONG_LONG_DIGITS)  /* (never overflows) */
            value = value * 10 + (text[i] - '0');
    }
    if (length <= MAX_LONG_LONG_DIGITS)  /* every safe length (9 or 18): no text-to-int parse */
        return PyLong_FromLongLong(value);
    return PyLong_FromString(text, NULL, 10);  /* safe digits fit: no error but MemoryError */
}

/* The field's value as a new reference; NULL without an exception: the pure parser decides.
 * ``*found`` counts the fields whose key is in ext. */
static PyObject *field_value(PyObject *ext, PyObject *spec, Py_ssize_t *found)
{
    PyObject *raw = PyDict_GetItemWithError(ext, PyTuple_GET_ITEM(spec, 1));
    long kind = PyLong_AsLong(PyTuple_GET_ITEM(spec, 2));
    int missing = raw == NULL || raw == Py_None;
    if (raw == NULL && PyErr_Occurred())
        return NULL;
    *found += raw != NULL;
    if (!missing && kind == KIND_INT && PyUnicode_CheckExact(raw) && PyUnicode_GET_LENGTH(raw) == 0)
        missing = 1;
    if (missing)
        return PyTuple_GET_ITEM(spec, 3) == Py_True ? NULL : Py_NewRef(PyTuple_GET_ITEM(spec, 4));
    if (kind == KIND_STR)
        return Py_NewRef(raw);
    if (kind == KIND_BOOL) {
        if (!PyUnicode_CheckExact(raw))
            return NULL;
        if (PyUnicode_CompareWithASCIIString(raw, "true") == 0)
            Py_RETURN_TRUE;
        if (PyUnicode_CompareWithASCIIString(raw, "false") == 0)
            Py_RETURN_FALSE;
        return NULL;
    }
    return digits(raw, PyLong_AsSsize_t(PyTuple_GET_ITEM(spec, 5)));
}

/* from_ext(ext) -> header; ``whole``: only when every key of ext is a field's (else the pure
 * function decides what the other keys mean) */
static PyObject *from_table(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs,
                            int whole)
{
    PyObject *cls, *fields, *self;
    Py_ssize_t found = 0;
    if (nargs != 1 || PyTuple_GET_SIZE(context) != 2 || !PyDict_CheckExact(args[0]))
        return rq_fallback(fallback, args, nargs);
    cls = PyTuple_GET_ITEM(context, 0);
    fields = PyTuple_GET_ITEM(context, 1);
    if (!PyType_Check(cls) || !PyTuple_CheckExact(fields))
        return rq_fallback(fallback, args, nargs);
    if (empty_args == NULL && (empty_args = PyTuple_New(0)) == NULL)
        return NULL;
    self = PyBaseObject_Type.tp_new((PyTypeObject *)cls, empty_args, NULL);  /* object.__new__(cls) */
    if (self == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fields); i++) {
        PyObject *spec = PyTuple_GET_ITEM(fields, i), *value;
        int failed;
        if (!PyTuple_CheckExact(spec) || PyTuple_GET_SIZE(spec) != SPEC_ITEMS)
            goto pure;
        value = field_value(args[0], spec, &found);
        if (value == NULL)
            goto pure;
        failed = set_field(self, PyTuple_GET_ITEM(spec, 0), value);  /* object.__setattr__ */
        Py_DECREF(value);
        if (failed < 0)
            goto pure;
    }
    if (whole && found != PyDict_GET_SIZE(args[0]))  /* (field keys are distinct) a key no field reads */
        goto pure;
    return self;
pure:
    Py_DECREF(self);
    if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_MemoryError))
        PyErr_Clear();  /* e.g. an unhashable key: the pure parser raises what it raises */
    return PyErr_Occurred() ? NULL : rq_fallback(fallback, args, nargs);
}

PyObject *rq_py_header_from_ext(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs)
{
    return from_table(fallback, context, args, nargs, 0);
}

/* send_header_from_v2(ext) -> SendMessageRequestHeader: from_ext of the short names, for an
 * ext holding nothing else (what every Java client sends); the pure function takes the rest
 * (an ACL client's signature fields, long names, unknown keys). */
PyObject *rq_py_header_from_ext_whole(PyObject *fallback, PyObject *context, PyObject *const *args,
                                      Py_ssize_t nargs)
{
    return from_table(fallback, context, args, nargs, 1);
}

/* Where frozen_new puts each field of one class: the slot offsets of its fields in order (-1: a
 * field set_field must set the generic way), found once per accelerated function and class.
 * Valid while the class's version tag is the one noted (any change to the class or a base gives
 * it a new tag, and no two classes share one); the entry keeps its context alive, so no other
 * context can take its address. */
#define FROZEN_LAYOUTS 8      /* the put path's classes (PutRequest, PutResult) and room to spare */
#define FROZEN_MAX_FIELDS 16  /* classes with more fields are set field by field */
typedef struct {
    PyObject *context;
    unsigned int version;
    Py_ssize_t offsets[FROZEN_MAX_FIELDS];
} FrozenLayout;
static FrozenLayout frozen_layouts[FROZEN_LAYOUTS];
static unsigned int frozen_victim;

/* cls's layout for this context, or NULL (too many fields, no version tag: field by field). */
static const FrozenLayout *frozen_layout(PyObject *context, PyTypeObject *cls, PyObject *names)
{
    Py_ssize_t count = PyTuple_GET_SIZE(names), offsets[FROZEN_MAX_FIELDS];
    unsigned int tag = rq_type_tag(cls);
    FrozenLayout *layout;
    if (count > FROZEN_MAX_FIELDS)
        return NULL;
    for (int i = 0; i < FROZEN_LAYOUTS; i++) {
        layout = &frozen_layouts[i];
        if (layout->context == context && layout->version == tag && tag != 0)
            return layout;
    }
    for (Py_ssize_t i = 0; i < count; i++)
        offsets[i] = rq_named_slot_offset(cls, PyTuple_GET_ITEM(names, i));
    tag = rq_type_tag(cls);  /* (the lookups give it a tag, unless the type has run out of them) */
    if (tag == 0)
        return NULL;
    layout = &frozen_layouts[frozen_victim++ % FROZEN_LAYOUTS];
    memcpy(layout->offsets, offsets, (size_t)count * sizeof offsets[0]);
    Py_INCREF(context);
    Py_XSETREF(layout->context, context);
    layout->version = tag;
    return layout;
}

/* A frozen slots dataclass from all its fields, in order (rocketq.store.results: the values
 * the put path makes per message). What its generated __init__ does when every field is given:
 * object.__new__, then object.__setattr__ per field (at the slots ``frozen_layout`` found).
 * Any other call (fewer or more values, a keyword) goes to the class itself.
 *
 * context: (cls, field names)
 */
PyObject *rq_py_frozen_new(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *cls, *names, *self;
    const FrozenLayout *layout;
    if (PyTuple_GET_SIZE(context) != 2)
        return rq_fallback(fallback, args, nargs);
    cls = PyTuple_GET_ITEM(context, 0);
    names = PyTuple_GET_ITEM(context, 1);
    if (!PyType_Check(cls) || !PyTuple_CheckExact(names) || PyTuple_GET_SIZE(names) != nargs)
        return rq_fallback(fallback, args, nargs);
    if (empty_args == NULL && (empty_args = PyTuple_New(0)) == NULL)
        return NULL;
    self = PyBaseObject_Type.tp_new((PyTypeObject *)cls, empty_args, NULL);
    if (self == NULL)
        return NULL;
    layout = Py_IS_TYPE(self, (PyTypeObject *)cls) ? frozen_layout(context, (PyTypeObject *)cls, names) : NULL;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        if (layout != NULL && layout->offsets[i] >= 0) {
            Py_XSETREF(*(PyObject **)((char *)self + layout->offsets[i]), Py_NewRef(args[i]));
        } else if (set_field(self, PyTuple_GET_ITEM(names, i), args[i]) < 0) {
            Py_DECREF(self);
            return NULL;  /* a slot that cannot be set is an error of the table, not of the input */
        }
    }
    return self;
}
