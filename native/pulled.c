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
 */
#include "rocketq_native.h"

#include <structmember.h>

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
        PyObject *descr = PyDict_GetItemString(type->tp_dict, field_names[i]);  /* borrowed */
        PyMemberDef *member;
        if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type))
            return 0;
        member = ((PyMemberDescrObject *)descr)->d_member;
        if (member->type != T_OBJECT_EX || (member->flags & READONLY) || member->offset <= 0
                || member->offset > type->tp_basicsize - (Py_ssize_t)sizeof(PyObject *))
            return 0;
        offsets[i] = member->offset;
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
