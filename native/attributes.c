/* Reading and moving the counters of Python store objects (MappedFile, IndexFile) from C, for
 * the routines that append in place (inplace.c, indexput.c, batchappend.c, groupappend.c). Attribute names are interned
 * once; a value of an unexpected type is reported, never raised, so that the caller can hand
 * the call to its pure-Python twin.
 *
 * MappedFile and IndexFile keep their fields in __slots__: an attribute that is a slot of the
 * object's type is read and written at its slot (rq_get_attr, rq_set_attr), as Python's own
 * generic getattr and setattr do through the slot's member descriptor (a data descriptor: it
 * comes before any instance dict), without the descriptor call. Anything else (no slot of that
 * name, a type with its own getattr or setattr, an empty slot) goes by PyObject_GetAttr /
 * PyObject_SetAttr, so the result, and any error, is Python's. */
#include "rocketq_native.h"


/* What object_slot found for one (type, name, reading or writing): the slot's offset, or -1 for
 * "not a plain slot: the generic way". Valid while the type's version tag is the one noted: any
 * change to the type or a base (a class attribute set, __getattr__ added, a base's bases swapped)
 * gives it a new tag (PyType_Modified), and a tag is never given to two types, so a type freed
 * and another made at its address cannot match either. The names are the callers' interned
 * names; an entry keeps a reference to its name. */
typedef struct {
    PyTypeObject *type;
    unsigned int version;
    int writing;
    PyObject *name;
    Py_ssize_t offset;
} SlotFound;

#define SLOT_CACHE_SIZE 256  /* a power of two, well above the store's few classes times their counters */
#define SLOT_CACHE_WAYS 4    /* entries a key may take, from its hash on: two keys of one hash do not evict each other */
static SlotFound slot_cache[SLOT_CACHE_SIZE];
static unsigned int slot_cache_victim;

static size_t slot_hash(PyTypeObject *type, PyObject *name, int writing)
{
    /* (objects lie 16 bytes apart or more: their low bits say little; the multiplications mix the rest in) */
    uint64_t mixed = ((uint64_t)(uintptr_t)type * 0x9E3779B97F4A7C15ULL) ^ ((uint64_t)(uintptr_t)name * 0xC2B2AE3D27D4EB4FULL);
    return (size_t)((mixed >> 40) ^ (uint64_t)writing);
}

static Py_ssize_t looked_up_offset(PyTypeObject *type, PyObject *name, int writing)
{
    if (writing ? type->tp_setattro != PyObject_GenericSetAttr : type->tp_getattro != PyObject_GenericGetAttr)
        return -1;
    return rq_named_slot_offset(type, name);
}

/* The slot of ``name`` in obj, when obj's type holds it as a plain object slot reached by the
 * generic getattr (or setattr, ``writing``) of its type; else NULL. Found once per type and
 * name (``slot_cache``): a type's lookup through its MRO is most of an attribute read. */
static PyObject **object_slot(PyObject *obj, PyObject *name, int writing)
{
    PyTypeObject *type = Py_TYPE(obj);
    size_t at = slot_hash(type, name, writing);
    SlotFound *found = NULL;
    Py_ssize_t offset;
    unsigned int tag = rq_type_tag(type);
    for (int way = 0; tag != 0 && way < SLOT_CACHE_WAYS; way++) {
        SlotFound *entry = &slot_cache[(at + (size_t)way) & (SLOT_CACHE_SIZE - 1)];
        if (entry->type == type && entry->name == name && entry->writing == writing
                && entry->version == tag)
            return entry->offset < 0 ? NULL : (PyObject **)((char *)obj + entry->offset);
        if (found == NULL && (entry->name == NULL || (entry->type == type && entry->name == name
                                                      && entry->writing == writing)))  /* free, or this key's stale one */
            found = entry;
    }
    offset = looked_up_offset(type, name, writing);
    tag = rq_type_tag(type);  /* (the lookup may have given the type its tag) */
    if (tag != 0) {
        if (found == NULL)  /* every way taken: one of them, in turn */
            found = &slot_cache[(at + (size_t)(slot_cache_victim++ % SLOT_CACHE_WAYS)) & (SLOT_CACHE_SIZE - 1)];
        Py_INCREF(name);
        Py_XSETREF(found->name, name);
        found->type = type;
        found->version = tag;
        found->writing = writing;
        found->offset = offset;
    }
    return offset < 0 ? NULL : (PyObject **)((char *)obj + offset);
}

PyObject *rq_get_attr(PyObject *obj, PyObject *name)
{
    PyObject **slot = object_slot(obj, name, 0);
    if (slot != NULL && *slot != NULL)
        return Py_NewRef(*slot);
    return PyObject_GetAttr(obj, name);  /* (an empty slot raises AttributeError there) */
}

int rq_set_attr(PyObject *obj, PyObject *name, PyObject *value)
{
    PyObject **slot = object_slot(obj, name, 1);
    if (slot == NULL)
        return PyObject_SetAttr(obj, name, value);
    Py_XSETREF(*slot, Py_NewRef(value));  /* as the member descriptor's set */
    return 0;
}

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
    PyObject *value = rq_get_attr(obj, name);
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
    rc = rq_set_attr(obj, name, number);
    Py_DECREF(number);
    return rc;
}

PyObject *rq_last_item(PyObject *obj, PyObject *name, int *empty)
{
    PyObject *list = rq_get_attr(obj, name), *last = NULL;
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
    PyObject *buf = rq_get_attr(obj, name);
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
