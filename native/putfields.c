/* The properties a put needs before its record is stored: TAGS (the queue unit's tag code),
 * UNIQ_KEY and KEYS (the index entries), in one pass over the encoded text.
 *
 * The C twin of rocketq.store.putting.index_properties, whose reference is three calls of
 * messageproperties.property_value: each name's value is that of its first entry (an entry
 * starts the text or follows \x02 and begins with ``name \x01``), up to the next \x02 or the
 * end. The scan walks the text's UTF-8 form: \x01 and \x02 are single bytes there and never
 * part of a longer character, so entry bounds are the same as in the text. Anything but an
 * exact str, or a str without a UTF-8 form (lone surrogates), goes to the pure function.
 */
#include "rocketq_native.h"

#include <string.h>
#include <structmember.h>

#define NAME_VALUE_SEP 0x01
#define ENTRY_SEP 0x02
#define WANTED 3

static const struct {
    const char *name;
    Py_ssize_t len;
} NAMES[WANTED] = {{"TAGS", 4}, {"UNIQ_KEY", 8}, {"KEYS", 4}};  /* the order of the result */

PyObject *rq_py_index_properties(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs)
{
    const char *text, *entry, *end, *stop;
    Py_ssize_t size;
    PyObject *found[WANTED] = {NULL, NULL, NULL}, *out = NULL;
    int missing = WANTED;
    if (nargs != 1 || !PyUnicode_CheckExact(args[0]))
        return rq_fallback(fallback, args, nargs);
    text = PyUnicode_AsUTF8AndSize(args[0], &size);
    if (text == NULL) {
        PyErr_Clear();
        return rq_fallback(fallback, args, nargs);
    }
    stop = text + size;
    for (entry = text; missing > 0; entry = end + 1) {
        end = memchr(entry, ENTRY_SEP, (size_t)(stop - entry));
        if (end == NULL)
            end = stop;
        for (int i = 0; i < WANTED; i++) {
            Py_ssize_t len = NAMES[i].len;
            if (found[i] == NULL && end - entry > len && entry[len] == NAME_VALUE_SEP
                    && memcmp(entry, NAMES[i].name, (size_t)len) == 0) {
                found[i] = PyUnicode_DecodeUTF8(entry + len + 1, end - entry - len - 1, "strict");
                if (found[i] == NULL)
                    goto done;
                missing--;
                break;
            }
        }
        if (end == stop)
            break;
    }
    for (int i = 0; i < WANTED; i++)
        if (found[i] == NULL)
            found[i] = Py_NewRef(Py_None);
    out = PyTuple_Pack(WANTED, found[0], found[1], found[2]);
done:
    for (int i = 0; i < WANTED; i++)
        Py_XDECREF(found[i]);
    return out;
}

/* prepare_plain(encode, by_topic, max_record, request): the C twin of
 * rocketq.store.putting.prepare_plain, ``Preparer.prepare`` of one plain one-message put (str
 * properties, sys_flag 0, not SCHEDULE_TOPIC_XXXX, its queue in ``by_topic``, a record within
 * ``max_record``) as its PreparedMessage tuple, or None. The request's fields are read by
 * attribute (a PutRequest is a slotted dataclass); the encode, the properties scan and the tag
 * hash are the callables the pure function calls (context: index_properties, tag_hash), called
 * here without its frame. Arguments of another shape go to the pure function. */
#define PREPARED_FIELDS 8             /* putting.PreparedMessage */
#define ENCODE_ARGS 10
#define SCHEDULE_TOPIC "SCHEDULE_TOPIC_XXXX"

enum {F_TOPIC, F_QUEUE_ID, F_BODY, F_FLAG, F_PROPERTIES, F_SYS_FLAG, F_BORN_TIMESTAMP, F_BORN_HOST, F_RECONSUME,
      F_PREPARED_OFFSET, F_TAGS_CODE, F_INDEX_KEYS, FIELD_COUNT};

static PyObject *field_names[FIELD_COUNT];

static int intern_fields(void)
{
    static PyObject **const slots[FIELD_COUNT] = {
        &field_names[F_TOPIC], &field_names[F_QUEUE_ID], &field_names[F_BODY], &field_names[F_FLAG],
        &field_names[F_PROPERTIES], &field_names[F_SYS_FLAG], &field_names[F_BORN_TIMESTAMP],
        &field_names[F_BORN_HOST], &field_names[F_RECONSUME], &field_names[F_PREPARED_OFFSET],
        &field_names[F_TAGS_CODE], &field_names[F_INDEX_KEYS]};
    static const char *const texts[FIELD_COUNT] = {
        "topic", "queue_id", "body", "flag", "properties", "sys_flag", "born_timestamp", "born_host",
        "reconsume_times", "prepared_transaction_offset", "tags_code", "index_keys"};
    return rq_intern_names(slots, texts, FIELD_COUNT);
}

/* A request's fields in f[] (new references): 1, or 0 when one is missing (nothing held). A
 * slotted class's fields (a PutRequest is a slotted dataclass) are read at their slots'
 * offsets, learnt once per type through its member descriptors and trusted while the type's
 * version tag stays (CPython renews it whenever the type changes); any other type by
 * attribute. */
static PyTypeObject *slots_type;  /* the type whose offsets are known (held), or NULL */
static unsigned int slots_version;
static Py_ssize_t slot_offsets[FIELD_COUNT];

static int learn_slots(PyTypeObject *type)
{
    Py_ssize_t offsets[FIELD_COUNT];
    if (type->tp_getattro != PyObject_GenericGetAttr)
        return 0;
    for (int i = 0; i < FIELD_COUNT; i++) {
        PyObject *descr = _PyType_Lookup(type, field_names[i]);  /* borrowed; sets no error */
        PyMemberDef *member;
        if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type))
            return 0;
        member = ((PyMemberDescrObject *)descr)->d_member;
        if (member->type != T_OBJECT_EX || member->offset <= 0 || (size_t)member->offset + sizeof(PyObject *)
                > (size_t)type->tp_basicsize)
            return 0;
        offsets[i] = member->offset;
    }
    if (!(type->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG))
        return 0;
    memcpy(slot_offsets, offsets, sizeof offsets);
    Py_XSETREF(slots_type, (PyTypeObject *)Py_NewRef(type));
    slots_version = type->tp_version_tag;
    return 1;
}

static int read_fields(PyObject *request, PyObject **f)
{
    PyTypeObject *type = Py_TYPE(request);
    if ((type == slots_type && (type->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) && type->tp_version_tag == slots_version)
            || learn_slots(type)) {
        for (int i = 0; i < FIELD_COUNT; i++) {
            PyObject *value = *(PyObject **)((char *)request + slot_offsets[i]);
            if (value == NULL) {  /* a slot never set: the pure function raises AttributeError */
                for (int j = 0; j < i; j++)
                    Py_CLEAR(f[j]);
                return 0;
            }
            f[i] = Py_NewRef(value);
        }
        return 1;
    }
    for (int i = 0; i < FIELD_COUNT; i++) {
        f[i] = PyObject_GetAttr(request, field_names[i]);
        if (f[i] == NULL) {
            PyErr_Clear();
            for (int j = 0; j < i; j++)
                Py_CLEAR(f[j]);
            return 0;
        }
    }
    return 1;
}

/* The plain put's (tags, uniq, keys): from the hints, or index_properties where they lack. New
 * references in out[]; 0, or -1 raised. */
static int index_fields(PyObject *scan, PyObject *const *f, PyObject **out)
{
    PyObject *hint = f[F_INDEX_KEYS], *found = NULL;
    if (hint == Py_None || f[F_TAGS_CODE] == Py_None) {
        found = PyObject_Vectorcall(scan, &f[F_PROPERTIES], 1, NULL);
        if (found == NULL)
            return -1;
        if (!PyTuple_CheckExact(found) || PyTuple_GET_SIZE(found) != 3) {
            Py_DECREF(found);
            PyErr_SetString(PyExc_TypeError, "index_properties returned no triple");
            return -1;
        }
    }
    if (hint != Py_None && (!PyTuple_CheckExact(hint) || PyTuple_GET_SIZE(hint) != 2)) {
        Py_XDECREF(found);
        return 1;  /* a hint of another shape: the pure function unpacks (and fails) as it does */
    }
    out[0] = found != NULL ? Py_NewRef(PyTuple_GET_ITEM(found, 0)) : Py_NewRef(Py_None);
    out[1] = Py_NewRef(hint != Py_None ? PyTuple_GET_ITEM(hint, 0) : PyTuple_GET_ITEM(found, 1));
    out[2] = Py_NewRef(hint != Py_None ? PyTuple_GET_ITEM(hint, 1) : PyTuple_GET_ITEM(found, 2));
    Py_XDECREF(found);
    return 0;
}

/* The request's queue, borrowed, or NULL (no such queue; or -1 in *failed, raised). */
static PyObject *plain_queue(PyObject *by_topic, PyObject *topic, PyObject *queue_id, int *failed)
{
    PyObject *by_id = PyDict_GetItemWithError(by_topic, topic), *cq;
    if (by_id == NULL || !PyDict_CheckExact(by_id)) {
        *failed = PyErr_Occurred() != NULL || by_id != NULL;  /* another mapping: the pure function */
        return NULL;
    }
    cq = PyDict_GetItemWithError(by_id, queue_id);
    *failed = cq == NULL && PyErr_Occurred() != NULL;
    return cq;
}

static PyObject *prepared_of(PyObject *const *f, PyObject *encode, PyObject *const *index, PyObject *tag_hash,
                             long long max_record, PyObject *cq)
{
    PyObject *encoded, *tag, *out;
    encoded = PyObject_Vectorcall(encode, f, ENCODE_ARGS, NULL);
    if (encoded == NULL)
        return NULL;
    if (!PyTuple_CheckExact(encoded) || PyTuple_GET_SIZE(encoded) != 2
            || !PyBytes_CheckExact(PyTuple_GET_ITEM(encoded, 0))) {
        Py_DECREF(encoded);
        PyErr_SetString(PyExc_TypeError, "encode returned no (record, position)");
        return NULL;
    }
    if (PyBytes_GET_SIZE(PyTuple_GET_ITEM(encoded, 0)) > max_record) {
        Py_DECREF(encoded);
        Py_RETURN_NONE;
    }
    tag = f[F_TAGS_CODE] != Py_None ? Py_NewRef(f[F_TAGS_CODE]) : PyObject_Vectorcall(tag_hash, &index[0], 1, NULL);
    if (tag == NULL) {
        Py_DECREF(encoded);
        return NULL;
    }
    out = PyTuple_New(PREPARED_FIELDS);
    if (out != NULL) {
        PyTuple_SET_ITEM(out, 0, Py_NewRef(PyTuple_GET_ITEM(encoded, 0)));
        PyTuple_SET_ITEM(out, 1, Py_NewRef(PyTuple_GET_ITEM(encoded, 1)));
        PyTuple_SET_ITEM(out, 2, Py_NewRef(cq));
        PyTuple_SET_ITEM(out, 3, Py_NewRef(Py_True));
        PyTuple_SET_ITEM(out, 4, Py_NewRef(tag));
        PyTuple_SET_ITEM(out, 5, Py_NewRef(index[1]));
        PyTuple_SET_ITEM(out, 6, Py_NewRef(index[2]));
        PyTuple_SET_ITEM(out, 7, Py_NewRef(Py_None));
    }
    Py_DECREF(tag);
    Py_DECREF(encoded);
    return out;
}

PyObject *rq_py_prepare_plain(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *f[FIELD_COUNT] = {NULL}, *index[3] = {NULL, NULL, NULL}, *cq, *out = NULL;
    long long max_record;
    int failed = 0, got;
    if (nargs != 4 || !PyDict_CheckExact(args[1]) || !rq_int_in(args[2], RQ_INT64_MIN, RQ_INT64_MAX, &max_record)
            || PyTuple_GET_SIZE(context) != 2)
        return rq_fallback(fallback, args, nargs);
    if (intern_fields() < 0)
        return NULL;
    if (!read_fields(args[3], f))
        goto fallback;
    if (!PyLong_CheckExact(f[F_SYS_FLAG]) || !PyUnicode_CheckExact(f[F_TOPIC])
            || !PyUnicode_CheckExact(f[F_PROPERTIES]))
        goto fallback;
    if (PyLong_AsLong(f[F_SYS_FLAG]) != 0 || PyErr_Occurred()) {
        PyErr_Clear();
        goto fallback;
    }
    if (PyUnicode_CompareWithASCIIString(f[F_TOPIC], SCHEDULE_TOPIC) == 0) {
        out = Py_NewRef(Py_None);
        goto done;
    }
    cq = plain_queue(args[1], f[F_TOPIC], f[F_QUEUE_ID], &failed);
    if (cq == NULL) {
        if (failed && PyErr_Occurred())
            goto done;
        if (failed)
            goto fallback;
        out = Py_NewRef(Py_None);
        goto done;
    }
    Py_INCREF(cq);
    got = index_fields(PyTuple_GET_ITEM(context, 0), f, index);
    if (got == 0)
        out = prepared_of(f, args[0], index, PyTuple_GET_ITEM(context, 1), max_record, cq);
    Py_DECREF(cq);
    if (got <= 0)
        goto done;
fallback:
    out = rq_fallback(fallback, args, nargs);
done:
    for (int i = 0; i < FIELD_COUNT; i++)
        Py_XDECREF(f[i]);
    for (int i = 0; i < 3; i++)
        Py_XDECREF(index[i]);
    return out;
}
