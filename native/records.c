/* Stored records (rocketq.protocol.storedrecords): encoding on the broker's put path and
 * decoding on the consumer's pull path.
 *
 * Layout, big-endian: TOTALSIZE i32 | MAGICCODE i32 | BODYCRC i32 | QUEUEID i32 | FLAG i32 |
 * QUEUEOFFSET i64 | PHYSICALOFFSET i64 | SYSFLAG i32 | BORNTIMESTAMP i64 | BORNHOST 8|20 |
 * STORETIMESTAMP i64 | STOREHOST 8|20 | RECONSUMETIMES i32 | PREPARED_TX_OFFSET i64 |
 * BODYLEN i32 + body | TOPICLEN i8 (V1) or i16 (V2) + topic | PROPLEN i16 + properties.
 *
 * Two encoder types mirror RecordEncoder.encode and the closure RecordEncoder.for_sender
 * returns; each holds its pure twin and calls it for any input it does not handle itself, so
 * limits and errors stay those of the pure code. The decoders build MessageExt objects and
 * report "the pure decoder must look at this record" (compressed, malformed) instead of raising.
 */
#include "rocketq_native.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <structmember.h>

#define MAGIC_V1 (-626843481)
#define MAGIC_V2 (-626843477)
#define HEAD_SIZE 48          /* TOTALSIZE .. BORNTIMESTAMP */
#define BORN_HOST_POS 48
#define FIXED_SIZE 74         /* all but the hosts, body, topic and properties */
#define MIN_RECORD_SIZE 91    /* V1, IPv4 hosts, everything empty */
#define MAX_PROPERTIES_LENGTH 32767
#define SYSFLAG_COMPRESSED 0x1
#define SYSFLAG_BORNHOST_V6 0x10
#define SYSFLAG_STOREHOST_V6 0x20
#define MESSAGE_EXT_FIELDS 18
#define HOST_CACHE_BITS 6
#define HOST_CACHE_SLOTS (1 << HOST_CACHE_BITS)  /* decoded hosts kept: a consumer sees few producers and brokers */
#define MAX_RECORDS_PER_RUN 1024 /* decode_records hands back this many at most per call */
#define TEXT_CACHE_SLOTS 64   /* property names (each with its last value) kept across records */
#define MAX_CACHED_TEXT 40    /* longer names or values are made anew each time */

/* ---- writing ------------------------------------------------------------------------------ */

typedef struct {
    int64_t magic, queue_id, flag, queue_offset, physical_offset, sys_flag, born_timestamp;
    int64_t store_timestamp, reconsume_times, prepared_offset;
    const char *born, *store, *topic_part, *body, *props;
    Py_ssize_t born_len, store_len, topic_part_len, body_len, props_len;
} RecordFields;

/* The record's size from the lengths write_record copies: the one number it must agree with. */
static Py_ssize_t record_size(const RecordFields *f)
{
    return FIXED_SIZE + f->born_len + f->store_len + f->body_len + f->topic_part_len + f->props_len;
}

/* ``f`` as a record of ``total`` bytes; ``total`` must be record_size(f) (callers check). */
static PyObject *write_record(const RecordFields *f, Py_ssize_t total)
{
    PyObject *out = PyBytes_FromStringAndSize(NULL, total);
    unsigned char *p;
    if (out == NULL)
        return NULL;
    p = (unsigned char *)PyBytes_AS_STRING(out);
    rq_put_i32(p, total);
    rq_put_i32(p + 4, f->magic);
    rq_put_i32(p + 8, rq_crc32((const unsigned char *)f->body, f->body_len) & 0x7FFFFFFFu);
    rq_put_i32(p + 12, f->queue_id);
    rq_put_i32(p + 16, f->flag);
    rq_put_i64(p + 20, f->queue_offset);
    rq_put_i64(p + 28, f->physical_offset);
    rq_put_i32(p + 36, f->sys_flag);
    rq_put_i64(p + 40, f->born_timestamp);
    p += HEAD_SIZE;
    memcpy(p, f->born, f->born_len);
    p += f->born_len;
    rq_put_i64(p, f->store_timestamp);
    memcpy(p + 8, f->store, f->store_len);
    p += 8 + f->store_len;
    rq_put_i32(p, f->reconsume_times);
    rq_put_i64(p + 4, f->prepared_offset);
    rq_put_i32(p + 12, f->body_len);
    p += 16;
    memcpy(p, f->body, f->body_len);
    p += f->body_len;
    memcpy(p, f->topic_part, f->topic_part_len);
    p += f->topic_part_len;
    rq_put_i16(p, (int32_t)f->props_len);
    memcpy(p + 2, f->props, f->props_len);
    return out;
}

/* The UTF-8 of an exact str of at most MAX_PROPERTIES_LENGTH bytes; 0 for anything else. */
static int properties_utf8(PyObject *text, const char **raw, Py_ssize_t *len)
{
    if (!PyUnicode_CheckExact(text))
        return 0;
    *raw = PyUnicode_AsUTF8AndSize(text, len);
    if (*raw == NULL) {
        PyErr_Clear();  /* lone surrogates: the pure code raises its UnicodeEncodeError */
        return 0;
    }
    return *len <= MAX_PROPERTIES_LENGTH;
}

/* sysFlag with its host-family bits set from the hosts' widths; 0 if it leaves int32. */
static int host_sys_flag(PyObject *given, Py_ssize_t born_len, Py_ssize_t store_len, int64_t *out)
{
    long long v;
    int overflow = 0;
    if (!PyLong_Check(given))
        return 0;
    v = PyLong_AsLongLongAndOverflow(given, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;  /* a huge int: the pure code's struct.pack refuses it */
    }
    v &= ~(long long)(SYSFLAG_BORNHOST_V6 | SYSFLAG_STOREHOST_V6);
    if (store_len == 20)
        v |= SYSFLAG_STOREHOST_V6;
    if (born_len == 20)
        v |= SYSFLAG_BORNHOST_V6;
    if (v < RQ_INT32_MIN || v > RQ_INT32_MAX)
        return 0;
    *out = v;
    return 1;
}

/* ---- RecordEncoder: RecordEncoder.encode for one store host --------------------------------- */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *fallback;    /* the pure bound method RecordEncoder._encode_pure */
    PyObject *store;       /* packed store host (bytes) */
    PyObject *topics;      /* the encoder's dict topic -> length-prefixed topic bytes */
    PyObject *topic_part;  /* the pure method that fills ``topics`` (validates the topic) */
    PyObject *pack_host;   /* storedrecords.pack_host */
    PyObject *last_host;   /* the born host tuple seen last, and its packed form */
    PyObject *last_born;
    int64_t magic;
    Py_ssize_t limit;      /* max message size */
} RecordEncoderObject;

/* The packed born host (a new reference), or NULL without an exception if the pure code must
 * judge it. A broker hands the same tuple for every message of a connection. */
static PyObject *packed_born(RecordEncoderObject *self, PyObject *host)
{
    PyObject *raw;
    if (host == self->last_host) {
        Py_INCREF(self->last_born);
        return self->last_born;
    }
    raw = PyObject_CallOneArg(self->pack_host, host);
    if (raw == NULL) {
        PyErr_Clear();
        return NULL;
    }
    if (!PyBytes_CheckExact(raw) || (PyBytes_GET_SIZE(raw) != 8 && PyBytes_GET_SIZE(raw) != 20)) {
        Py_DECREF(raw);
        return NULL;
    }
    if (PyTuple_CheckExact(host)) {
        Py_INCREF(host);
        Py_INCREF(raw);
        Py_XSETREF(self->last_host, host);
        Py_XSETREF(self->last_born, raw);
    }
    return raw;
}

/* The topic's length-prefixed bytes (a new reference), or NULL without an exception. */
static PyObject *topic_bytes(RecordEncoderObject *self, PyObject *topic)
{
    PyObject *part;
    if (!PyUnicode_CheckExact(topic))
        return NULL;
    part = PyDict_GetItemWithError(self->topics, topic);
    if (part != NULL) {
        Py_INCREF(part);
    } else {
        if (PyErr_Occurred())
            return NULL;
        part = PyObject_CallOneArg(self->topic_part, topic);
        if (part == NULL) {
            PyErr_Clear();
            return NULL;
        }
    }
    if (!PyBytes_CheckExact(part)) {
        Py_DECREF(part);
        return NULL;
    }
    return part;
}

/* encode(topic, queue_id, body, flag, properties, sys_flag, born_timestamp, born_host,
 *        reconsume_times=0, prepared_transaction_offset=0, queue_offset=0, physical_offset=0,
 *        store_timestamp=0) -> (record, store timestamp position) */
static PyObject *record_encoder_call(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    RecordEncoderObject *self = (RecordEncoderObject *)op;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), total;
    RecordFields f;
    long long extra[5] = {0, 0, 0, 0, 0}, v;
    static const long long extra_low[5] = {RQ_INT32_MIN, RQ_INT64_MIN, RQ_INT64_MIN, RQ_INT64_MIN, RQ_INT64_MIN};
    static const long long extra_high[5] = {RQ_INT32_MAX, RQ_INT64_MAX, RQ_INT64_MAX, RQ_INT64_MAX, RQ_INT64_MAX};
    PyObject *topic_part = NULL, *born = NULL, *record, *result;
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0)
        return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
    if (nargs < 8 || nargs > 13 || !PyBytes_CheckExact(args[2])
            || !properties_utf8(args[4], &f.props, &f.props_len))
        goto fallback;
    for (Py_ssize_t i = 8; i < nargs; i++)
        if (!rq_int_in(args[i], extra_low[i - 8], extra_high[i - 8], &extra[i - 8]))
            goto fallback;
    if ((topic_part = topic_bytes(self, args[0])) == NULL || (born = packed_born(self, args[7])) == NULL)
        goto fallback;
    f.magic = self->magic;
    f.born = PyBytes_AS_STRING(born);
    f.born_len = PyBytes_GET_SIZE(born);
    f.store = PyBytes_AS_STRING(self->store);
    f.store_len = PyBytes_GET_SIZE(self->store);
    f.topic_part = PyBytes_AS_STRING(topic_part);
    f.topic_part_len = PyBytes_GET_SIZE(topic_part);
    f.body = PyBytes_AS_STRING(args[2]);
    f.body_len = PyBytes_GET_SIZE(args[2]);
    if (!rq_int_in(args[1], RQ_INT32_MIN, RQ_INT32_MAX, &v))
        goto fallback;
    f.queue_id = v;
    if (!rq_int_in(args[3], RQ_INT32_MIN, RQ_INT32_MAX, &v))
        goto fallback;
    f.flag = v;
    if (!host_sys_flag(args[5], f.born_len, f.store_len, &f.sys_flag))
        goto fallback;
    if (!rq_int_in(args[6], RQ_INT64_MIN, RQ_INT64_MAX, &v))
        goto fallback;
    f.born_timestamp = v;
    f.reconsume_times = extra[0];
    f.prepared_offset = extra[1];
    f.queue_offset = extra[2];
    f.physical_offset = extra[3];
    f.store_timestamp = extra[4];
    total = record_size(&f);
    /* over the limit, or a size TOTALSIZE cannot hold: the pure code raises */
    if (total > self->limit || total > RQ_INT32_MAX)
        goto fallback;
    record = write_record(&f, total);
    Py_DECREF(topic_part);
    Py_DECREF(born);
    if (record == NULL)
        return NULL;
    result = PyTuple_New(2);
    if (result == NULL) {
        Py_DECREF(record);
        return NULL;
    }
    PyTuple_SET_ITEM(result, 0, record);
    PyTuple_SET_ITEM(result, 1, PyLong_FromSsize_t(BORN_HOST_POS + f.born_len));
    if (PyTuple_GET_ITEM(result, 1) == NULL) {
        Py_DECREF(result);
        return NULL;
    }
    return result;
fallback:
    Py_XDECREF(topic_part);
    Py_XDECREF(born);
    return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
}

static PyObject *record_encoder_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"fallback", "magic", "store", "fixed", "limit", "topics", "topic_part", "pack_host", NULL};
    PyObject *fallback, *store, *topics, *topic_part, *pack_host;
    long long magic;
    Py_ssize_t fixed, limit;
    RecordEncoderObject *self;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OLSnnO!OO:RecordEncoder", names, &fallback, &magic, &store,
                                     &fixed, &limit, &PyDict_Type, &topics, &topic_part, &pack_host))
        return NULL;
    if (PyBytes_GET_SIZE(store) != 8 && PyBytes_GET_SIZE(store) != 20) {
        PyErr_SetString(PyExc_ValueError, "a packed store host is 8 or 20 bytes");
        return NULL;
    }
    /* the pure code's fixed part must be this layout's, or the two would size records apart */
    if (fixed != FIXED_SIZE + PyBytes_GET_SIZE(store)) {
        PyErr_SetString(PyExc_ValueError, "the fixed size is not the record layout's");
        return NULL;
    }
    self = (RecordEncoderObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = record_encoder_call;
    self->fallback = Py_NewRef(fallback);
    self->store = Py_NewRef(store);
    self->topics = Py_NewRef(topics);
    self->topic_part = Py_NewRef(topic_part);
    self->pack_host = Py_NewRef(pack_host);
    self->magic = magic;
    self->limit = limit;
    return (PyObject *)self;
}

static int record_encoder_traverse(RecordEncoderObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->fallback);
    Py_VISIT(self->topics);
    Py_VISIT(self->topic_part);
    Py_VISIT(self->pack_host);
    Py_VISIT(self->last_host);
    return 0;
}

static int record_encoder_clear(RecordEncoderObject *self)
{
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->store);
    Py_CLEAR(self->topics);
    Py_CLEAR(self->topic_part);
    Py_CLEAR(self->pack_host);
    Py_CLEAR(self->last_host);
    Py_CLEAR(self->last_born);
    return 0;
}

static void record_encoder_dealloc(RecordEncoderObject *self)
{
    PyObject_GC_UnTrack(self);
    record_encoder_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef record_encoder_members[] = {
    {"__wrapped__", T_OBJECT, offsetof(RecordEncoderObject, fallback), READONLY, "the pure-Python encoder"},
    {NULL},
};

PyTypeObject RqRecordEncoderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rocketq._native.RecordEncoder",
    .tp_doc = "RecordEncoder.encode in C for one store host; calls its pure twin for anything unusual.",
    .tp_basicsize = sizeof(RecordEncoderObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = record_encoder_new,
    .tp_vectorcall_offset = offsetof(RecordEncoderObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_traverse = (traverseproc)record_encoder_traverse,
    .tp_clear = (inquiry)record_encoder_clear,
    .tp_dealloc = (destructor)record_encoder_dealloc,
    .tp_members = record_encoder_members,
};

/* ---- SenderEncoder: the per-batch closure of RecordEncoder.for_sender ------------------------ */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *fallback;    /* the pure closure */
    PyObject *born, *store, *topic_part;
    RecordFields shared;   /* everything but body, flag and properties */
    Py_ssize_t limit;
} SenderEncoderObject;

/* encode(body, flag, properties) -> record */
static PyObject *sender_encoder_call(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    SenderEncoderObject *self = (SenderEncoderObject *)op;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), total;
    RecordFields f = self->shared;
    long long flag;
    if ((kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0) || nargs != 3 || !PyBytes_CheckExact(args[0])
            || !rq_int_in(args[1], RQ_INT32_MIN, RQ_INT32_MAX, &flag)
            || !properties_utf8(args[2], &f.props, &f.props_len))
        return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
    f.body = PyBytes_AS_STRING(args[0]);
    f.body_len = PyBytes_GET_SIZE(args[0]);
    f.flag = flag;
    total = record_size(&f);
    if (total > self->limit || total > RQ_INT32_MAX)
        return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
    return write_record(&f, total);
}

static int sender_encoder_traverse(SenderEncoderObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->fallback);
    return 0;
}

static int sender_encoder_clear(SenderEncoderObject *self)
{
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->born);
    Py_CLEAR(self->store);
    Py_CLEAR(self->topic_part);
    return 0;
}

static void sender_encoder_dealloc(SenderEncoderObject *self)
{
    PyObject_GC_UnTrack(self);
    sender_encoder_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef sender_encoder_members[] = {
    {"__wrapped__", T_OBJECT, offsetof(SenderEncoderObject, fallback), READONLY, "the pure-Python encoder"},
    {NULL},
};

PyTypeObject RqSenderEncoderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rocketq._native.SenderEncoder",
    .tp_doc = "The encoder RecordEncoder.for_sender returns, in C; made by sender_encoder().",
    .tp_basicsize = sizeof(SenderEncoderObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(SenderEncoderObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_traverse = (traverseproc)sender_encoder_traverse,
    .tp_clear = (inquiry)sender_encoder_clear,
    .tp_dealloc = (destructor)sender_encoder_dealloc,
    .tp_members = sender_encoder_members,
};

/* sender_encoder(fallback, magic, queue_id, sys_flag, born_timestamp, born, store, reconsume_times,
 *                topic_part, fixed, limit): a SenderEncoder, or ``fallback`` itself when a shared
 * field is out of range (the pure closure then raises on every call, as it always did). */
PyObject *rq_sender_encoder(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    SenderEncoderObject *self;
    long long magic, queue_id, sys_flag, born_ts, reconsume, fixed, limit;
    if (nargs != 11) {
        PyErr_SetString(PyExc_TypeError, "sender_encoder takes 11 arguments");
        return NULL;
    }
    if (!rq_int_in(args[1], RQ_INT32_MIN, RQ_INT32_MAX, &magic) || !rq_int_in(args[2], RQ_INT32_MIN, RQ_INT32_MAX, &queue_id)
            || !rq_int_in(args[3], RQ_INT32_MIN, RQ_INT32_MAX, &sys_flag)
            || !rq_int_in(args[4], RQ_INT64_MIN, RQ_INT64_MAX, &born_ts)
            || !rq_int_in(args[7], RQ_INT32_MIN, RQ_INT32_MAX, &reconsume)
            || !rq_int_in(args[9], 0, RQ_INT64_MAX, &fixed) || !rq_int_in(args[10], 0, RQ_INT64_MAX, &limit)
            || !PyBytes_CheckExact(args[5]) || !PyBytes_CheckExact(args[6]) || !PyBytes_CheckExact(args[8])
            || fixed != FIXED_SIZE + PyBytes_GET_SIZE(args[5]) + PyBytes_GET_SIZE(args[6]) + PyBytes_GET_SIZE(args[8]))
        return Py_NewRef(args[0]);
    self = PyObject_GC_New(SenderEncoderObject, &RqSenderEncoderType);
    if (self == NULL)
        return NULL;
    self->vectorcall = sender_encoder_call;
    self->fallback = Py_NewRef(args[0]);
    self->born = Py_NewRef(args[5]);
    self->store = Py_NewRef(args[6]);
    self->topic_part = Py_NewRef(args[8]);
    memset(&self->shared, 0, sizeof(self->shared));
    self->shared.magic = magic;
    self->shared.queue_id = queue_id;
    self->shared.sys_flag = sys_flag;
    self->shared.born_timestamp = born_ts;
    self->shared.reconsume_times = reconsume;
    self->shared.born = PyBytes_AS_STRING(self->born);
    self->shared.born_len = PyBytes_GET_SIZE(self->born);
    self->shared.store = PyBytes_AS_STRING(self->store);
    self->shared.store_len = PyBytes_GET_SIZE(self->store);
    self->shared.topic_part = PyBytes_AS_STRING(self->topic_part);
    self->shared.topic_part_len = PyBytes_GET_SIZE(self->topic_part);
    self->limit = (Py_ssize_t)limit;
    PyObject_GC_Track(self);
    return (PyObject *)self;
}

/* ---- decoding ------------------------------------------------------------------------------ */

typedef struct {
    unsigned char raw[20];
    Py_ssize_t len;
    PyObject *host;  /* (ip, port) */
    PyObject *hex;   /* upper-case hex of raw: the offsetMsgId's host part */
} HostSlot;

static HostSlot host_cache[HOST_CACHE_SLOTS];

static HostSlot *host_slot(const unsigned char *raw, Py_ssize_t len)
{
    static const char digits[] = "0123456789ABCDEF";
    char ip[64], hex[40];
    uint32_t h = 2166136261u;
    HostSlot *slot;
    PyObject *ip_text, *host, *hex_text;
    for (Py_ssize_t i = 0; i < len; i++)
        h = (h ^ raw[i]) * 16777619u;
    /* the hash's top bits: its low bits depend only on the low bits of each byte, so hosts
     * whose ports differ in their high bits (a producer's and the broker's) shared a slot and
     * evicted each other on every record */
    slot = &host_cache[h >> (32 - HOST_CACHE_BITS)];
    if (slot->host != NULL && slot->len == len && memcmp(slot->raw, raw, (size_t)len) == 0)
        return slot;
    if (inet_ntop(len == 8 ? AF_INET : AF_INET6, raw, ip, sizeof(ip)) == NULL) {
        PyErr_SetString(PyExc_ValueError, "inet_ntop failed");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        hex[2 * i] = digits[raw[i] >> 4];
        hex[2 * i + 1] = digits[raw[i] & 0xF];
    }
    ip_text = PyUnicode_FromString(ip);
    host = ip_text == NULL ? NULL : Py_BuildValue("(Nl)", ip_text, (long)rq_get_i32(raw + len - 4));
    if (host == NULL)
        return NULL;
    hex_text = PyUnicode_FromStringAndSize(hex, 2 * len);
    if (hex_text == NULL) {
        Py_DECREF(host);
        return NULL;
    }
    Py_XSETREF(slot->host, host);
    Py_XSETREF(slot->hex, hex_text);
    memcpy(slot->raw, raw, (size_t)len);
    slot->len = len;
    return slot;
}

static PyObject *offset_msg_id(HostSlot *store, int64_t phys)
{
    /* the store host's hex then the offset's 16 hex digits, written into one new str */
    static const char digits[] = "0123456789ABCDEF";
    PyObject *hex = Py_NewRef(store->hex);  /* held: the slot is the cache's, not ours */
    Py_ssize_t head = PyUnicode_GET_LENGTH(hex);
    PyObject *out = PyUnicode_New(head + 16, 127);
    Py_UCS1 *text;
    uint64_t u = (uint64_t)phys;
    if (out != NULL) {
        text = PyUnicode_1BYTE_DATA(out);
        memcpy(text, PyUnicode_1BYTE_DATA(hex), (size_t)head);
        for (int i = 15; i >= 0; i--, u >>= 4)
            text[head + i] = (Py_UCS1)digits[u & 0xF];
    }
    Py_DECREF(hex);
    return out;
}

/* The last topic decoded, kept: a pull answer's records nearly always share one. */
static char last_topic_raw[256];
static Py_ssize_t last_topic_len = -1;
static PyObject *last_topic;

static PyObject *topic_text(const unsigned char *raw, Py_ssize_t len)
{
    PyObject *text;
    if (last_topic != NULL && len == last_topic_len && memcmp(raw, last_topic_raw, (size_t)len) == 0)
        return Py_NewRef(last_topic);
    text = PyUnicode_DecodeUTF8((const char *)raw, len, NULL);
    if (text != NULL && len <= (Py_ssize_t)sizeof(last_topic_raw)) {
        memcpy(last_topic_raw, raw, (size_t)len);
        last_topic_len = len;
        Py_XSETREF(last_topic, Py_NewRef(text));
    }
    return text;
}

/* MAGIC_V1 and MAGIC_V2 as ints, made once (each is outside the small-int cache). */
static PyObject *magic_int(int32_t magic)
{
    static PyObject *v1, *v2;
    PyObject **slot = magic == MAGIC_V1 ? &v1 : &v2;
    if (*slot == NULL && (*slot = PyLong_FromLong(magic)) == NULL)
        return NULL;
    return Py_NewRef(*slot);
}

/* ---- properties of ASCII text, with the repeated parts shared ---------------------------- */

/* A pull answer's records carry the same few property names (UNIQ_KEY, WAIT, TAGS, ...) and
 * often the same value under a name (WAIT=true, a TAGS): a str is immutable, so the one made
 * for the last record can be handed out again instead of making and hashing an equal one. */
typedef struct {
    char name[MAX_CACHED_TEXT];
    Py_ssize_t name_len;
    PyObject *name_text;
    char value[MAX_CACHED_TEXT];
    Py_ssize_t value_len;
    PyObject *value_text;   /* the last value seen under this name, or NULL */
} TextSlot;

static TextSlot text_cache[TEXT_CACHE_SLOTS];

static PyObject *ascii_text(const char *raw, Py_ssize_t len)
{
    PyObject *out = PyUnicode_New(len, 127);
    if (out != NULL)
        memcpy(PyUnicode_1BYTE_DATA(out), raw, (size_t)len);
    return out;
}

/* The slot of a name (filled on a miss), or NULL when the name is too long to keep. */
static TextSlot *name_slot(const char *raw, Py_ssize_t len)
{
    uint32_t h = 2166136261u;
    TextSlot *slot;
    PyObject *text;
    if (len > MAX_CACHED_TEXT)
        return NULL;
    for (Py_ssize_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)raw[i]) * 16777619u;
    slot = &text_cache[h % TEXT_CACHE_SLOTS];
    if (slot->name_text != NULL && slot->name_len == len && memcmp(slot->name, raw, (size_t)len) == 0)
        return slot;
    if ((text = ascii_text(raw, len)) == NULL)
        return NULL;
    Py_XSETREF(slot->name_text, text);
    Py_CLEAR(slot->value_text);
    memcpy(slot->name, raw, (size_t)len);
    slot->name_len = len;
    return slot;
}

/* One name=value entry into ``out``; -1 on an error. */
static int put_ascii_entry(PyObject *out, const char *name, Py_ssize_t name_len, const char *value,
                           Py_ssize_t value_len)
{
    TextSlot *slot = name_slot(name, name_len);
    PyObject *key, *val;
    int failed;
    if (slot == NULL && PyErr_Occurred())
        return -1;
    /* both held before anything below allocates: a collection's finalizers may decode too */
    key = slot != NULL ? Py_NewRef(slot->name_text) : ascii_text(name, name_len);
    if (key == NULL)
        return -1;
    if (slot != NULL && slot->value_text != NULL && slot->value_len == value_len
            && memcmp(slot->value, value, (size_t)value_len) == 0) {
        val = Py_NewRef(slot->value_text);
    } else {
        val = ascii_text(value, value_len);
        if (val != NULL && slot != NULL && slot->name_text != NULL && value_len <= MAX_CACHED_TEXT
                && PyUnicode_GET_LENGTH(slot->name_text) == name_len
                && memcmp(PyUnicode_1BYTE_DATA(slot->name_text), name, (size_t)name_len) == 0) {
            Py_XSETREF(slot->value_text, Py_NewRef(val));
            memcpy(slot->value, value, (size_t)value_len);
            slot->value_len = value_len;
        }
    }
    failed = val == NULL || PyDict_SetItem(out, key, val) < 0;
    Py_DECREF(key);
    Py_XDECREF(val);
    return failed ? -1 : 0;
}

/* The properties of a record as rq_decode_properties_utf8 makes them, without the whole text
 * as a str first, when they are ASCII (any other text goes that way). NULL without an
 * exception when malformed, as there. */
static PyObject *decode_record_properties(const char *raw, Py_ssize_t n)
{
    PyObject *out;
    Py_ssize_t start = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if ((unsigned char)raw[i] >= 0x80)
            return rq_decode_properties_utf8(raw, n, NULL);
    if ((out = PyDict_New()) == NULL)
        return NULL;
    while (start < n) {
        const char *entry = raw + start, *stop = memchr(entry, 0x02, (size_t)(n - start)), *sep;
        Py_ssize_t end = stop == NULL ? n : stop - raw;
        if (end == start) {
            start = end + 1;
            continue;
        }
        sep = memchr(entry, 0x01, (size_t)(end - start));
        if (sep == NULL || sep == entry) {  /* no separator, or an empty name: malformed */
            Py_DECREF(out);
            return NULL;
        }
        if (put_ascii_entry(out, entry, sep - entry, sep + 1, raw + end - (sep + 1)) < 0) {
            Py_DECREF(out);
            return NULL;
        }
        start = end + 1;
    }
    return out;
}

/* The int made for a field of the last record, kept: a run of records mostly shares its size
 * and, when stored by one batch, its timestamps. */
typedef struct {
    long long value;
    PyObject *obj;
} SharedInt;

static SharedInt shared_size, shared_born, shared_stored;

static PyObject *shared_int(SharedInt *last, long long value)
{
    PyObject *obj;
    if (last->obj != NULL && last->value == value)
        return Py_NewRef(last->obj);
    if ((obj = PyLong_FromLongLong(value)) != NULL) {
        Py_XSETREF(last->obj, Py_NewRef(obj));
        last->value = value;
    }
    return obj;
}

/* Decode the record at ``pos``: a MessageExt and its end in *end, or NULL without an exception
 * when the pure decoder must handle it (malformed, compressed, a legacy layout). ``stamps``
 * (a dict, or NULL) is merged into the properties, as assignments after decoding would be. */
PyObject *rq_decode_at(const unsigned char *buf, Py_ssize_t limit, Py_ssize_t pos, int decompress,
                       int check_crc, PyObject *cls, PyObject *stamps, Py_ssize_t *end)
{
    const unsigned char *p;
    int32_t total, magic, crc, sys_flag, body_len, props_len, topic_len;
    Py_ssize_t born_len, store_len, at;
    HostSlot *born, *store;
    PyObject *fields[MESSAGE_EXT_FIELDS], *record = NULL;
    int made = 0;
    if (pos < 0 || limit - pos < HEAD_SIZE)
        return NULL;
    p = buf + pos;
    total = rq_get_i32(p);
    magic = rq_get_i32(p + 4);
    crc = rq_get_i32(p + 8);
    sys_flag = rq_get_i32(p + 36);
    if ((magic != MAGIC_V1 && magic != MAGIC_V2) || total < MIN_RECORD_SIZE || total > limit - pos)
        return NULL;
    if (decompress && (sys_flag & SYSFLAG_COMPRESSED))
        return NULL;
    born_len = (sys_flag & SYSFLAG_BORNHOST_V6) ? 20 : 8;
    store_len = (sys_flag & SYSFLAG_STOREHOST_V6) ? 20 : 8;
    at = HEAD_SIZE + born_len + 8 + store_len + 16;
    /* everything up to PROPLEN must lie inside TOTALSIZE (the pure decoder's final check) */
    if (at > total)
        return NULL;
    body_len = rq_get_i32(p + at - 4);
    if (body_len < 0 || body_len > total - at)
        return NULL;
    const unsigned char *body = p + at;
    at += body_len;
    if (magic == MAGIC_V1) {
        if (at + 1 > total)
            return NULL;
        topic_len = (int8_t)p[at];
        at += 1;
    } else {
        if (at + 2 > total)
            return NULL;
        topic_len = rq_get_i16(p + at);
        at += 2;
    }
    if (topic_len < 0 || topic_len > total - at)
        return NULL;
    const unsigned char *topic = p + at;
    at += topic_len;
    if (at + 2 > total)
        return NULL;
    props_len = rq_get_i16(p + at);
    at += 2;
    if (props_len < 0 || at + props_len != total)
        return NULL;
    if (check_crc && (int32_t)(rq_crc32(body, body_len) & 0x7FFFFFFFu) != crc)
        return NULL;
    born = host_slot(p + HEAD_SIZE, born_len);
    if (born == NULL)
        return NULL;
    Py_INCREF(born->host);
    fields[9] = born->host;  /* held before the next lookup may evict the slot */
    store = host_slot(p + HEAD_SIZE + born_len + 8, store_len);
    if (store == NULL) {
        Py_DECREF(fields[9]);
        return NULL;
    }
    /* take what the store slot gives now: allocating a dict below may run the garbage
     * collector, whose finalizers may decode records and refill the slot */
    fields[11] = Py_NewRef(store->host);
    fields[17] = offset_msg_id(store, rq_get_i64(p + 28));
    fields[14] = PyBytes_FromStringAndSize((const char *)body, body_len);
    fields[15] = topic_text(topic, topic_len);
    fields[16] = NULL;
    if (fields[15] == NULL) {
        if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
            PyErr_Clear();
    } else {
        fields[16] = decode_record_properties((const char *)p + total - props_len, props_len);
        if (fields[16] != NULL && stamps != NULL && PyDict_Update(fields[16], stamps) < 0)
            Py_CLEAR(fields[16]);
    }
    fields[0] = shared_int(&shared_size, total);
    fields[1] = magic_int(magic);
    fields[2] = PyLong_FromLong(crc);
    fields[3] = PyLong_FromLong(rq_get_i32(p + 12));
    fields[4] = PyLong_FromLong(rq_get_i32(p + 16));
    fields[5] = PyLong_FromLongLong(rq_get_i64(p + 20));
    fields[6] = PyLong_FromLongLong(rq_get_i64(p + 28));
    fields[7] = PyLong_FromLong(sys_flag);
    fields[8] = shared_int(&shared_born, rq_get_i64(p + 40));
    fields[10] = shared_int(&shared_stored, rq_get_i64(p + HEAD_SIZE + born_len));
    fields[12] = PyLong_FromLong(rq_get_i32(p + HEAD_SIZE + born_len + 8 + store_len));
    fields[13] = PyLong_FromLongLong(rq_get_i64(p + HEAD_SIZE + born_len + 8 + store_len + 4));
    made = 1;
    for (int i = 0; i < MESSAGE_EXT_FIELDS; i++)
        if (fields[i] == NULL)
            made = 0;
    if (made) {
        record = rq_message_ext_new(cls, fields);
        *end = pos + total;
    }
    for (int i = 0; i < MESSAGE_EXT_FIELDS; i++)
        Py_XDECREF(fields[i]);
    return record;
}

static int buffer_of(PyObject *obj, Py_buffer *view)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        return 0;
    }
    return 1;
}

/* decode_record(buf, pos, decompress, check_crc, MessageExt) -> MessageExt, or None when the
 * pure decoder must decode (and perhaps refuse) the record. */
PyObject *rq_decode_record(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    Py_ssize_t pos, end;
    PyObject *record;
    int decompress, check_crc;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "decode_record takes 5 arguments");
        return NULL;
    }
    pos = PyLong_AsSsize_t(args[1]);
    if (pos == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    decompress = PyObject_IsTrue(args[2]);
    check_crc = PyObject_IsTrue(args[3]);
    if (decompress < 0 || check_crc < 0)
        return NULL;
    if (!buffer_of(args[0], &view))
        Py_RETURN_NONE;
    record = rq_decode_at(view.buf, view.len, pos, decompress, check_crc, args[4], NULL, &end);
    PyBuffer_Release(&view);
    if (record == NULL && !PyErr_Occurred())
        Py_RETURN_NONE;
    return record;
}

/* decode_records(buf, pos, decompress, MessageExt) -> (records, pos): consecutive records from
 * ``pos`` (at most MAX_RECORDS_PER_RUN) and where decoding stopped: at the end, at bytes that
 * end a run (TOTALSIZE <= 0, no record magic), or at a record the pure decoder must handle. */
PyObject *rq_decode_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    Py_ssize_t pos, end;
    PyObject *records, *result;
    int decompress;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "decode_records takes 4 arguments");
        return NULL;
    }
    pos = PyLong_AsSsize_t(args[1]);
    if (pos == -1 && PyErr_Occurred())
        return NULL;
    decompress = PyObject_IsTrue(args[2]);
    if (decompress < 0)
        return NULL;
    records = PyList_New(0);
    if (records == NULL)
        return NULL;
    if (buffer_of(args[0], &view)) {
        const unsigned char *buf = view.buf;
        while (pos >= 0 && view.len - pos >= 8 && PyList_GET_SIZE(records) < MAX_RECORDS_PER_RUN) {
            int32_t total = rq_get_i32(buf + pos), magic = rq_get_i32(buf + pos + 4);
            PyObject *record;
            if (total <= 0 || (magic != MAGIC_V1 && magic != MAGIC_V2))
                break;
            record = rq_decode_at(buf, view.len, pos, decompress, 0, args[3], NULL, &end);
            if (record == NULL)
                break;
            if (PyList_Append(records, record) < 0) {
                Py_DECREF(record);
                break;
            }
            Py_DECREF(record);
            pos = end;
        }
        PyBuffer_Release(&view);
        if (PyErr_Occurred()) {
            Py_DECREF(records);
            return NULL;
        }
    }
    result = Py_BuildValue("(Nn)", records, pos);
    return result;
}
