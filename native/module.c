/* rocketq._native: C versions of the per-message codecs, each standing in for a pure-Python
 * function that stays the reference (rocketq/protocol/nativecodecs.py decides which is used).
 *
 * ``accelerate(name, pure)`` returns an object that calls the C routine ``name`` and, for any
 * input that routine does not handle itself (see rocketq_native.h), the pure function with the
 * same arguments; keyword arguments always go to the pure function. The stored-record
 * encoders are types of their own (records.c), built by storedrecords.RecordEncoder.
 */
#include "rocketq_native.h"

#include <structmember.h>

typedef PyObject *(*AccelImpl)(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs);

static const struct {
    const char *name;
    AccelImpl impl;
} ACCELERATED[] = {
    {"java_string_hash_unsigned", rq_py_java_hash_unsigned},
    {"java_string_hash", rq_py_java_hash},
    {"java_string_hash_after", rq_py_java_hash_after},
    {"decode_properties", rq_py_decode_properties},
    {"encode_properties", rq_py_encode_properties},
    {"is_canonical", rq_py_is_canonical},
    {"batch_entries", rq_py_batch_entries},
    {"encode_batch_entries", rq_py_encode_batch_entries},
    {"plain_batch_messages", rq_py_plain_batch_messages},
    {"_decode_view", rq_py_decode_frame_view},
    {"split_frames", rq_py_split_frames},
    {"plain_put", rq_py_plain_put},  /* rocketq.broker.plainsend */
    {"from_ext", rq_py_header_from_ext},
    {"send_header_from_v2", rq_py_header_from_ext_whole},
    {"frozen_new", rq_py_frozen_new},
    {"append_in_place", rq_py_append_in_place},
    {"append_batch_in_place", rq_py_append_batch_in_place},
    {"index_add", rq_py_index_add},
    {"append_singles", rq_py_append_singles},
    {"index_properties", rq_py_index_properties},
    {"prepare_plain", rq_py_prepare_plain},  /* rocketq.store.putting */
    {"stamp_unique_key", rq_py_stamp_unique_key},
    {"next_unique_key", rq_py_next_unique_key},
    {"choose_queue", rq_py_choose_queue},  /* rocketq.client.selectors.RoundRobin.choose */
    {"stored_answer_at", rq_py_stored_answer_at},
    {"answer_result", rq_py_answer_result},
    {"answer_at", rq_py_answer_at},  /* rocketq.remoting.storedanswers */
    {"send_result_at", rq_py_send_result_at},  /* rocketq.client.sending */
    {"send_frame_of", rq_py_send_frame_of},
    {"prepare", rq_py_prepare_message},  /* rocketq.client.sending.prepare */
    {"stored", rq_py_send_answer_stored},  /* rocketq.broker.sendanswers.stored */
    {"stored_group", rq_py_send_answer_stored_group},  /* rocketq.broker.sendanswers.stored_group */
    {NULL, NULL},
};

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    AccelImpl impl;
    PyObject *fallback;
    PyObject *context;  /* a tuple of what the routine needs from Python (classes, functions) */
} AcceleratedObject;

static PyObject *accelerated_call(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    AcceleratedObject *self = (AcceleratedObject *)op;
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0)
        return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
    return self->impl(self->fallback, self->context, args, PyVectorcall_NARGS(nargsf));
}

static PyObject *accelerated_getattro(PyObject *op, PyObject *name)
{
    /* __name__, __qualname__, __doc__, __module__ ... are the pure function's */
    PyObject *found = PyObject_GenericGetAttr(op, name);
    if (found != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError))
        return found;
    PyErr_Clear();
    return PyObject_GetAttr(((AcceleratedObject *)op)->fallback, name);
}

static PyObject *accelerated_repr(AcceleratedObject *self)
{
    return PyUnicode_FromFormat("<native %R>", self->fallback);
}

static int accelerated_traverse(AcceleratedObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->fallback);
    Py_VISIT(self->context);
    return 0;
}

static int accelerated_clear(AcceleratedObject *self)
{
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->context);
    return 0;
}

static PyObject *accelerated_get(PyObject *self, PyObject *obj, PyObject *type)
{
    /* a method, as the pure function would be in a class body */
    if (obj == NULL || obj == Py_None)
        return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static void accelerated_dealloc(AcceleratedObject *self)
{
    PyObject_GC_UnTrack(self);
    accelerated_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef accelerated_members[] = {
    {"__wrapped__", T_OBJECT, offsetof(AcceleratedObject, fallback), READONLY, "the pure-Python function"},
    {NULL},
};

static PyTypeObject AcceleratedType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rocketq._native.Accelerated",
    .tp_doc = "A codec function in C that calls its pure-Python twin for input it does not handle.",
    .tp_basicsize = sizeof(AcceleratedObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(AcceleratedObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_getattro = accelerated_getattro,
    .tp_repr = (reprfunc)accelerated_repr,
    .tp_traverse = (traverseproc)accelerated_traverse,
    .tp_clear = (inquiry)accelerated_clear,
    .tp_dealloc = (destructor)accelerated_dealloc,
    .tp_members = accelerated_members,
    .tp_descr_get = accelerated_get,
};

static PyObject *accelerate(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    const char *name;
    AcceleratedObject *self;
    if (nargs < 2 || !PyUnicode_Check(args[0]) || !PyCallable_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "accelerate(name: str, pure: callable, *context)");
        return NULL;
    }
    name = PyUnicode_AsUTF8(args[0]);
    if (name == NULL)
        return NULL;
    for (int i = 0; ACCELERATED[i].name != NULL; i++) {
        if (strcmp(ACCELERATED[i].name, name) != 0)
            continue;
        PyObject *context = PyTuple_New(nargs - 2);
        if (context == NULL)
            return NULL;
        for (Py_ssize_t j = 2; j < nargs; j++)
            PyTuple_SET_ITEM(context, j - 2, Py_NewRef(args[j]));
        self = PyObject_GC_New(AcceleratedObject, &AcceleratedType);
        if (self == NULL) {
            Py_DECREF(context);
            return NULL;
        }
        self->vectorcall = accelerated_call;
        self->impl = ACCELERATED[i].impl;
        self->fallback = Py_NewRef(args[1]);
        self->context = context;
        PyObject_GC_Track(self);
        return (PyObject *)self;
    }
    PyErr_Format(PyExc_KeyError, "no native codec named %R", args[0]);
    return NULL;
}

static PyObject *names(PyObject *module, PyObject *unused)
{
    PyObject *out = PyTuple_New(0), *grown;
    for (int i = 0; out != NULL && ACCELERATED[i].name != NULL; i++) {
        grown = PyTuple_New(i + 1);
        if (grown == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        for (int j = 0; j < i; j++)
            PyTuple_SET_ITEM(grown, j, Py_NewRef(PyTuple_GET_ITEM(out, j)));
        PyTuple_SET_ITEM(grown, i, PyUnicode_FromString(ACCELERATED[i].name));
        Py_DECREF(out);
        out = grown;
        if (PyTuple_GET_ITEM(out, i) == NULL) {
            Py_DECREF(out);
            return NULL;
        }
    }
    return out;
}

static PyObject *crc32_py(PyObject *module, PyObject *arg)
{
    Py_buffer view;
    uint32_t crc;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    crc = rq_crc32(view.buf, view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}

static PyMethodDef module_methods[] = {
    {"accelerate", (PyCFunction)(void (*)(void))accelerate, METH_FASTCALL,
     "accelerate(name, pure, *context): the C codec ``name``, calling ``pure`` for input it does not handle."},
    {"names", names, METH_NOARGS, "The names accelerate() knows."},
    {"crc32", crc32_py, METH_O, "zlib.crc32 of a buffer (the table code the record encoders use)."},
    {"sender_encoder", (PyCFunction)(void (*)(void))rq_sender_encoder, METH_FASTCALL,
     "The per-batch record encoder of RecordEncoder.for_sender, or its pure fallback."},
    {"decode_record", (PyCFunction)(void (*)(void))rq_decode_record, METH_FASTCALL,
     "decode_record(buf, pos, decompress, check_crc, cls): a MessageExt, or None for the pure decoder."},
    {"decode_records", (PyCFunction)(void (*)(void))rq_decode_records, METH_FASTCALL,
     "decode_records(buf, pos, decompress, cls): (records, pos where decoding stopped)."},
    {"decode_pulled", (PyCFunction)(void (*)(void))rq_decode_pulled, METH_FASTCALL,
     "decode_pulled(buf, cls, stamps): every record of a pull body, properties stamped; None for the pure path."},
    {"cache_put", (PyCFunction)(void (*)(void))rq_cache_put, METH_FASTCALL,
     "cache_put(cached, messages, top): a ProcessQueue put's loop; (top, size, in_order)."},
    {"cache_remove", (PyCFunction)(void (*)(void))rq_cache_remove, METH_FASTCALL,
     "cache_remove(cached, messages): a ProcessQueue remove's loop; the bodies' size removed."},
    {"found_answer_at", (PyCFunction)(void (*)(void))rq_found_answer_at, METH_FASTCALL,
     "found_answer_at(data, pos, max_frame): (opaque, end) of a plain FOUND pull answer's frame, or None."},
    {"found_pulled", (PyCFunction)(void (*)(void))rq_found_pulled, METH_FASTCALL,
     "found_pulled(data, pos, end, cls): (nextBeginOffset, suggestWhichBrokerId, messages) of that answer, or None."},
    {"read_units", (PyCFunction)(void (*)(void))rq_read_units, METH_FASTCALL,
     "read_units(chunk, pos, seg_view, ...): a pull's unit loop within one CommitLog segment (unitruns.c)."},
    {"read_plain", (PyCFunction)(void (*)(void))rq_read_plain, METH_FASTCALL,
     "read_plain(cq, commitlog, offset, max_nums, max_bytes, scan_units): the common pull's read in one call (unitruns.c)."},
    {"found_frame", (PyCFunction)(void (*)(void))rq_found_frame, METH_FASTCALL,
     "found_frame(opaque, suggest, next_begin, min, max, buffers, joined_max): a FOUND pull answer's frame (foundframe.c)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "rocketq._native",
    .m_doc = "C versions of rocketq's per-message codecs; the pure-Python code is the reference.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__native(void)
{
    PyObject *module;
    rq_crc32_init();
    if (PyType_Ready(&AcceleratedType) < 0 || PyType_Ready(&RqRecordEncoderType) < 0
            || PyType_Ready(&RqSenderEncoderType) < 0)
        return NULL;
    module = PyModule_Create(&native_module);
    if (module == NULL)
        return NULL;
    if (PyModule_AddObjectRef(module, "RecordEncoder", (PyObject *)&RqRecordEncoderType) < 0
            || PyModule_AddObjectRef(module, "SenderEncoder", (PyObject *)&RqSenderEncoderType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
