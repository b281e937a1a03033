/* A consumer's pull answer: every stored record of the body as a MessageExt, in one call.
 *
 * decode_pulled(buf, cls, stamps) -> list of MessageExt, or None
 *
 * The pure reference is rocketq.client.pulling's path: requests.decode_records (every record,
 * strictly, nothing left over), then each message's properties updated with ``stamps`` (the
 * queue's MIN_OFFSET and MAX_OFFSET, as RocketMQ stamps them). None, without an exception,
 * whenever the pure path must judge the body (a compressed or malformed record, trailing
 * bytes, an unusual argument): the caller then runs that path, which decodes or raises as it
 * always did.
 *
 * Each MessageExt is built the way its generated __init__ builds it when given every field
 * (an empty instance, then one slot store per field), but with the stores done here: the
 * slots' offsets are read once from the class's member descriptors (``message_ext_new``).
 * A class whose fields are not plain object slots is called instead.
 *
 * cache_put(cached, messages, top) -> (top, size, in_order)
 * cache_remove(cached, messages) -> size
 *
 * A ProcessQueue's two loops over a batch (rocketq.client.processqueue: ``_put_each`` and
 * ``_remove_each`` are the pure reference and say what they do). The same dict operations in
 * the same order, and the same exceptions: a message's ``queue_offset`` and ``body`` are read
 * from its slots when it is of the class decode_pulled learned, by getattr otherwise.
 */
#include "rocketq_native.h"

#define MESSAGE_EXT_FIELDS 18

static const char *const field_names[MESSAGE_EXT_FIELDS] = {
    "store_size", "magic", "body_crc", "queue_id", "flag", "queue_offset", "commit_log_offset", "sys_flag",
    "born_timestamp", "born_host", "store_timestamp", "store_host", "reconsume_times",
    "prepared_transaction_offset", "body", "topic", "properties", "offset_msg_id",
};

static PyObject *layout_cls;                       /* the class whose slot offsets are known */
static Py_ssize_t layout_offsets[MESSAGE_EXT_FIELDS];

/* 1 when ``cls`` holds each field in a plain object slot of its own (offsets noted), else 0. */
static int learn_layout(PyObject *cls)
{
    PyTypeObject *type;
    PyObject *fields;
    Py_ssize_t offsets[MESSAGE_EXT_FIELDS];
    if (cls == layout_cls)
        return 1;
    if (!PyType_Check(cls))
        return 0;
    type = (PyTypeObject *)cls;
    if (type->tp_alloc != PyType_GenericAlloc)
        return 0;
    /* exactly these fields, and an __init__ that only stores them: no field the slots below
     * would leave empty, no __post_init__ the generated __init__ would call */
    fields = PyDict_GetItemString(type->tp_dict, "__dataclass_fields__");  /* borrowed */
    if (fields == NULL || !PyDict_CheckExact(fields) || PyDict_GET_SIZE(fields) != MESSAGE_EXT_FIELDS
            || PyDict_GetItemString(type->tp_dict, "__post_init__") != NULL)
        return 0;
    for (int i = 0; i < MESSAGE_EXT_FIELDS; i++) {
        offsets[i] = rq_plain_slot_offset(type, PyDict_GetItemString(type->tp_dict, field_names[i]));
        if (offsets[i] < 0)
            return 0;
    }
    memcpy(layout_offsets, offsets, sizeof(offsets));
    Py_XSETREF(layout_cls, Py_NewRef(cls));
    return 1;
}

PyObject *rq_message_ext_new(PyObject *cls, PyObject *const *fields)
{
    PyObject *self;
    if (!learn_layout(cls))
        return PyObject_Vectorcall(cls, fields, MESSAGE_EXT_FIELDS, NULL);
    self = ((PyTypeObject *)cls)->tp_alloc((PyTypeObject *)cls, 0);
    if (self == NULL)
        return NULL;
    /* the slots are NULL (tp_alloc zero-fills); nothing below allocates, so no collection can
     * see the object half filled */
    for (int i = 0; i < MESSAGE_EXT_FIELDS; i++)
        *(PyObject **)((char *)self + layout_offsets[i]) = Py_NewRef(fields[i]);
    return self;
}

PyObject *rq_decode_pulled(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    Py_ssize_t pos = 0, end;
    PyObject *records;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "decode_pulled takes 3 arguments");
        return NULL;
    }
    if (!PyDict_CheckExact(args[2]))
        Py_RETURN_NONE;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    records = PyList_New(0);
    while (records != NULL && pos < view.len) {
        PyObject *record = rq_decode_at(view.buf, view.len, pos, 1, 0, args[1], args[2], &end);
        if (record == NULL || PyList_Append(records, record) < 0) {
            Py_XDECREF(record);
            Py_CLEAR(records);
            break;
        }
        Py_DECREF(record);
        pos = end;
    }
    PyBuffer_Release(&view);
    if (records == NULL && !PyErr_Occurred())
        Py_RETURN_NONE;  /* a record for the pure path: it decides about the whole body */
    return records;
}

/* ---- the process queue's loops ----------------------------------------------------------- */

#define FIELD_QUEUE_OFFSET 5
#define FIELD_BODY 14

static PyObject *queue_offset_name, *body_name;

/* msg.<name> (a new reference), from its slot when ``msg`` is of the learned class */
static PyObject *field_of(PyObject *msg, int field, PyObject *name)
{
    if (layout_cls != NULL && (PyObject *)Py_TYPE(msg) == layout_cls) {
        PyObject *value = *(PyObject **)((char *)msg + layout_offsets[field]);
        if (value != NULL)
            return Py_NewRef(value);
    }
    return PyObject_GetAttr(msg, name);  /* an unset slot raises AttributeError here */
}

static int names_ready(void)
{
    if (queue_offset_name == NULL && (queue_offset_name = PyUnicode_InternFromString("queue_offset")) == NULL)
        return 0;
    if (body_name == NULL && (body_name = PyUnicode_InternFromString("body")) == NULL)
        return 0;
    return 1;
}

/* len(msg.body) added to *size; 0, or -1 raised */
static int add_body_size(PyObject *msg, Py_ssize_t *size)
{
    PyObject *body = field_of(msg, FIELD_BODY, body_name);
    Py_ssize_t n;
    if (body == NULL)
        return -1;
    n = PyObject_Size(body);
    Py_DECREF(body);
    if (n < 0)
        return -1;
    *size += n;
    return 0;
}

PyObject *rq_cache_put(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *cached, *messages, *top;
    Py_ssize_t size = 0;
    int in_order = 1;
    if (nargs != 3 || !PyDict_CheckExact(args[0]) || !PyList_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "cache_put(dict, list, top)");
        return NULL;
    }
    if (!names_ready())
        return NULL;
    cached = args[0];
    messages = args[1];
    top = Py_NewRef(args[2]);
    /* the list's length is read on every turn: a comparison may run Python code */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(messages); i++) {
        PyObject *msg = Py_NewRef(PyList_GET_ITEM(messages, i));
        PyObject *offset = field_of(msg, FIELD_QUEUE_OFFSET, queue_offset_name);
        int above, held, failed;
        if (offset == NULL)
            goto error_msg;
        above = PyObject_RichCompareBool(offset, top, Py_GT);
        if (above < 0)
            goto error_offset;
        if (above) {
            Py_SETREF(top, Py_NewRef(offset));  /* above every cached key: not one of them */
        } else {
            held = PyDict_Contains(cached, offset);
            if (held < 0)
                goto error_offset;
            if (held) {
                Py_DECREF(offset);
                Py_DECREF(msg);
                continue;
            }
            in_order = 0;
        }
        failed = PyDict_SetItem(cached, offset, msg) < 0 || add_body_size(msg, &size) < 0;
        Py_DECREF(offset);
        Py_DECREF(msg);
        if (failed)
            goto error;
        continue;
    error_offset:
        Py_DECREF(offset);
    error_msg:
        Py_DECREF(msg);
        goto error;
    }
    return Py_BuildValue("(NnO)", top, size, in_order ? Py_True : Py_False);
error:
    Py_DECREF(top);
    return NULL;
}

PyObject *rq_cache_remove(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *cached, *messages;
    Py_ssize_t size = 0;
    if (nargs != 2 || !PyDict_CheckExact(args[0]) || !PyList_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "cache_remove(dict, list)");
        return NULL;
    }
    if (!names_ready())
        return NULL;
    cached = args[0];
    messages = args[1];
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(messages); i++) {
        PyObject *msg = Py_NewRef(PyList_GET_ITEM(messages, i));
        PyObject *offset = field_of(msg, FIELD_QUEUE_OFFSET, queue_offset_name);
        PyObject *gone;
        int failed;
        Py_DECREF(msg);
        if (offset == NULL)
            return NULL;
        gone = PyDict_GetItemWithError(cached, offset);  /* borrowed */
        if (gone == NULL) {
            Py_DECREF(offset);
            if (PyErr_Occurred())
                return NULL;
            continue;
        }
        Py_INCREF(gone);
        failed = PyDict_DelItem(cached, offset) < 0 || (gone != Py_None && add_body_size(gone, &size) < 0);
        Py_DECREF(gone);
        Py_DECREF(offset);
        if (failed)
            return NULL;
    }
    return PyLong_FromSsize_t(size);
}
