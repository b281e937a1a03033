/* Shared declarations of rocketq._native, the C versions of rocketq's per-message codecs.
 *
 * Every function here has a pure-Python reference in rocketq/protocol/ and must give the same
 * result for the same input. The contract that keeps error behaviour identical: a native
 * routine that meets anything unusual (malformed input, an unexpected type, a value out of
 * range) does not raise an error of its own; it returns NULL *without* an exception set, and
 * its caller hands the original arguments to the pure function, which raises exactly what it
 * always raised. NULL *with* an exception set is a real failure (MemoryError) and propagates.
 */
#ifndef ROCKETQ_NATIVE_H
#define ROCKETQ_NATIVE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <structmember.h>  /* T_OBJECT_EX, READONLY: rq_plain_slot_offset */

/* crc32.c: zlib's CRC-32 (reflected polynomial 0xEDB88320), table-driven 8 bytes at a time. */
void rq_crc32_init(void);
uint32_t rq_crc32(const unsigned char *data, Py_ssize_t length);
/* crc32fold.c: the same CRC by carry-less multiplication, where the CPU has it (usable: 1). The
 * running (pre-inverted) value over ``length`` bytes: length >= 64 and a multiple of 16. */
int rq_crc32_fold_usable(void);
uint32_t rq_crc32_fold(uint32_t crc, const unsigned char *data, Py_ssize_t length);

/* javahash.c: Java's String.hashCode over UTF-16 code units; -1 when the text holds a lone
 * surrogate (the pure code cannot encode it to UTF-16 and raises), else 0. ``units`` gets the
 * number of UTF-16 code units and ``power`` 31**units mod 2**32 (either may be NULL). */
int rq_java_hash(PyObject *text, uint32_t *hash, uint32_t *power);

/* properties.c */
PyObject *rq_decode_properties(PyObject *text);          /* str -> dict, NULL (no error) if malformed */
PyObject *rq_decode_properties_utf8(const char *raw, Py_ssize_t length, PyObject **text_out);
PyObject *rq_encode_properties(PyObject *mapping);       /* exact dict of exact str -> str */

/* Python-facing entry points, wrapped by module.c's accelerated-function type: each gets the
 * pure function as ``fallback`` and the positional arguments of a call. */
PyObject *rq_py_java_hash_unsigned(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs);
PyObject *rq_py_java_hash(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs);
PyObject *rq_py_java_hash_after(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs);
PyObject *rq_py_decode_properties(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs);
PyObject *rq_py_encode_properties(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs);
PyObject *rq_py_is_canonical(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs);
PyObject *rq_py_decode_frame_view(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs);
PyObject *rq_py_split_frames(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs);
/* jsonheader.c: a JSON header of the usual shape, parsed without orjson. 1: h filled (new references;
 * opaque/flag/version valid only where has_*), 0: declined (the orjson path decides), -1: a failure. */
typedef struct {
    long code, opaque, flag, version;
    int has_opaque, has_flag, has_version;
    PyObject *language, *remark, *ext;
} RqJsonHeader;
int rq_json_header(const unsigned char *p, Py_ssize_t length, RqJsonHeader *h);
void rq_json_header_clear(RqJsonHeader *h);
/* plainsend.c: a plain single send's PutRequest from its extFields and body. */
PyObject *rq_py_plain_put(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs);
PyObject *rq_py_frozen_new(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs);
PyObject *rq_py_header_from_ext(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs);
PyObject *rq_py_header_from_ext_whole(PyObject *fallback, PyObject *context, PyObject *const *args,
                                      Py_ssize_t nargs);
PyObject *rq_py_append_in_place(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs);
PyObject *rq_py_append_batch_in_place(PyObject *fallback, PyObject *context, PyObject *const *args,
                                      Py_ssize_t nargs);
PyObject *rq_py_append_singles(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs);
PyObject *rq_py_index_add(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs);
PyObject *rq_py_index_properties(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs);
PyObject *rq_py_prepare_plain(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs);
/* clientsend.c: the producer's unique key and properties text in one call; a send answer's SendResult;
 * a SEND_MESSAGE_V2 frame from its template. */
PyObject *rq_py_stamp_unique_key(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs);
PyObject *rq_py_stored_answer_at(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs);
PyObject *rq_py_next_unique_key(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs);
PyObject *rq_py_choose_queue(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs);
PyObject *rq_py_answer_at(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs);
PyObject *rq_py_send_result_at(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs);
PyObject *rq_py_answer_result(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs);
PyObject *rq_py_send_frame_of(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs);
PyObject *rq_py_prepare_message(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs);
PyObject *rq_py_send_answer_stored(PyObject *fallback, PyObject *context, PyObject *const *args,
                                   Py_ssize_t nargs);
PyObject *rq_py_send_answer_stored_group(PyObject *fallback, PyObject *context, PyObject *const *args,
                                         Py_ssize_t nargs);
PyObject *rq_py_batch_entries(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs);
PyObject *rq_py_plain_batch_messages(PyObject *fallback, PyObject *context, PyObject *const *args,
                                     Py_ssize_t nargs);
PyObject *rq_py_encode_batch_entries(PyObject *fallback, PyObject *context, PyObject *const *args,
                                     Py_ssize_t nargs);

/* records.c: stored-record encoders (types) and decoders (module functions). */
extern PyTypeObject RqRecordEncoderType;
extern PyTypeObject RqSenderEncoderType;
PyObject *rq_sender_encoder(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *rq_decode_record(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *rq_decode_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
/* The record at ``pos`` as a ``cls`` (NULL without an exception: for the pure decoder), its
 * properties updated with ``stamps`` (a dict, or NULL); its end in *end. */
PyObject *rq_decode_at(const unsigned char *buf, Py_ssize_t limit, Py_ssize_t pos, int decompress, int check_crc,
                       PyObject *cls, PyObject *stamps, Py_ssize_t *end);

/* pulled.c: a MessageExt from its 18 field values in order (borrowed), and a pull body's records. */
PyObject *rq_message_ext_new(PyObject *cls, PyObject *const *fields);
PyObject *rq_decode_pulled(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
/* pulled.c: a ProcessQueue's put and remove loops over a batch. */
PyObject *rq_cache_put(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *rq_cache_remove(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
/* pullanswer.c: a FOUND pull answer read from its frame in place (None: the general path). */
PyObject *rq_found_answer_at(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *rq_found_pulled(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
/* unitruns.c: a pull's walk over ConsumeQueue units within one CommitLog segment. */
PyObject *rq_read_units(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
/* ... and the whole common read (queue bounds, units, segment, walk) in one call, or None. */
PyObject *rq_read_plain(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
/* foundframe.c: a FOUND pull answer's frame (bytes, or its head and the records' buffers), or None. */
PyObject *rq_found_frame(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

/* attributes.c: the counters of Python store objects, for the in-place appends. Each returns
 * 1 (done) or 0 (an unusual value: no exception left set), except where noted. */
int rq_intern_names(PyObject **const *slots, const char *const *texts, size_t count);  /* 0, or -1 raised */
/* PyObject_GetAttr and PyObject_SetAttr, a slot of the object's type read or written in place. */
PyObject *rq_get_attr(PyObject *obj, PyObject *name);  /* a new reference, or NULL raised */
int rq_set_attr(PyObject *obj, PyObject *name, PyObject *value);  /* 0, or -1 raised */
int rq_int_attr(PyObject *obj, PyObject *name, long long low, long long high, long long *out);
int rq_set_int_attr(PyObject *obj, PyObject *name, long long value);  /* 0, or -1 raised */
/* A MappedFile's counters (each a non-negative exact int): 1, else 0 (nothing raised). */
typedef struct {
    long long wrote, size, reserved, start;
} RqFileCounters;
int rq_file_counters(PyObject *file, RqFileCounters *out);
/* The last MappedFile of owner.<list_name> (an exact list) with its counters; ``map`` is the
 * caller's to fill (``mapped`` set when it holds one). */
typedef struct {
    PyObject *file;
    RqFileCounters n;
    Py_buffer map;
    int mapped;
} RqLastFile;
/* 1 (the file held), 0 for an empty list, -1 for anything unusual (nothing held, nothing raised). */
int rq_last_file(PyObject *owner, PyObject *list_name, RqLastFile *last);
void rq_release_file(RqLastFile *last);  /* the map and the file let go; idempotent */
/* The last item of obj.name (an exact list), a new reference; NULL with *empty set for an
 * empty list, NULL without it for anything else. */
PyObject *rq_last_item(PyObject *obj, PyObject *name, int *empty);
/* obj.name's writable buffer of at least ``needed`` bytes into *map (release it): 1, else 0. */
int rq_writable_map(PyObject *obj, PyObject *name, Py_ssize_t needed, Py_buffer *map);

/* indexput.c: IndexFile.put of a message's entries, for the store's in-place appends. */
#define RQ_INDEX_MAX_KEYS 32
typedef struct {
    long long count, index_num, slot_num, reserved, entries_at, slots_used, begin_ts, begin_phy;
} RqIndexState;
/* The hash codes of a message's index keys into ``out`` (RQ_INDEX_MAX_KEYS at most): how many,
 * or -1 for keys only the pure method handles. */
int rq_index_key_hashes(PyObject *topic, PyObject *uniq, PyObject *keys, int32_t *out);
/* The IndexService's last file (a new reference), its counters and its map up to its reserved
 * mark: 1; 0 when there is none or it is unusual (nothing held); -1 raised. */
int rq_index_open(PyObject *service, PyObject **file, RqIndexState *state, Py_buffer *map);
int rq_index_fits(const RqIndexState *state, int n);  /* room with blocks for ``n`` more entries: 1 */
void rq_index_put(unsigned char *map, RqIndexState *state, const int32_t *hashes, int n, long long phy,
                  long long stamp);
/* The header into the map and the counters onto the file, as IndexFile.put and write_header
 * leave them after entries up to (phy, stamp), from the file's state ``was`` when it was
 * opened: 0, or -1 raised. */
int rq_index_store(PyObject *file, unsigned char *map, const RqIndexState *state, const RqIndexState *was,
                   long long phy, long long stamp);

/* Helpers shared by the codecs. */
static inline void rq_put_i16(unsigned char *p, int32_t v) { p[0] = (unsigned char)(v >> 8); p[1] = (unsigned char)v; }
static inline void rq_put_i32(unsigned char *p, int64_t v)
{
    uint32_t u = (uint32_t)v;
    p[0] = (unsigned char)(u >> 24); p[1] = (unsigned char)(u >> 16); p[2] = (unsigned char)(u >> 8); p[3] = (unsigned char)u;
}
static inline void rq_put_i64(unsigned char *p, int64_t v)
{
    rq_put_i32(p, (int64_t)(int32_t)((uint64_t)v >> 32));
    rq_put_i32(p + 4, (int64_t)(int32_t)((uint64_t)v & 0xFFFFFFFFu));
}
static inline int32_t rq_get_i32(const unsigned char *p)
{
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3]);
}
static inline int16_t rq_get_i16(const unsigned char *p) { return (int16_t)(((uint16_t)p[0] << 8) | p[1]); }
static inline int64_t rq_get_i64(const unsigned char *p)
{
    return (int64_t)(((uint64_t)(uint32_t)rq_get_i32(p) << 32) | (uint64_t)(uint32_t)rq_get_i32(p + 4));
}

/* An exact int within [low, high] into *out: 1; anything else (another type, out of range): 0.
 * Never leaves an exception set. */
static inline int rq_int_in(PyObject *obj, long long low, long long high, long long *out)
{
    int overflow = 0;
    long long v;
    if (!PyLong_Check(obj))
        return 0;
    v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    if (v < low || v > high)
        return 0;
    *out = v;
    return 1;
}

/* The type's version tag, or 0 when it has no valid one. CPython gives a type a new tag (never
 * one another type had) whenever it or a base changes, so (type, tag) names one unchanged state
 * of a type: what the slot caches (attributes.c, headers.c) check their entries against. */
static inline unsigned int rq_type_tag(PyTypeObject *type)
{
#if PY_VERSION_HEX < 0x030D0000
    if (!PyType_HasFeature(type, Py_TPFLAGS_VALID_VERSION_TAG))
        return 0;
#endif
    return type->tp_version_tag;
}

/* The byte offset of the plain object slot (a writable __slots__ member) that ``descr`` (a
 * borrowed attribute of ``type``) describes within a ``type`` instance, or -1 when it is not
 * one: what a slots dataclass's fields are, read and written directly at that offset. */
static inline Py_ssize_t rq_plain_slot_offset(PyTypeObject *type, PyObject *descr)
{
    PyMemberDef *member;
    if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type))
        return -1;
    member = ((PyMemberDescrObject *)descr)->d_member;
    if (member->type != T_OBJECT_EX || (member->flags & (READONLY | PY_AUDIT_READ)) || member->offset <= 0
            || member->offset > type->tp_basicsize - (Py_ssize_t)sizeof(PyObject *))
        return -1;
    return member->offset;
}

/* ``rq_plain_slot_offset`` of ``type``'s attribute ``name`` as found through its MRO, or -1 (also
 * for a member descriptor of another class, put on this one). Sets no error. */
static inline Py_ssize_t rq_named_slot_offset(PyTypeObject *type, PyObject *name)
{
    PyObject *descr = _PyType_Lookup(type, name);  /* borrowed; the type's method cache; sets no error */
    Py_ssize_t offset = rq_plain_slot_offset(type, descr);
    if (offset < 0 || !PyType_IsSubtype(type, ((PyDescrObject *)descr)->d_type))
        return -1;
    return offset;
}

#define RQ_INT32_MIN (-2147483647LL - 1)
#define RQ_INT32_MAX 2147483647LL
#define RQ_INT64_MIN (-9223372036854775807LL - 1)
#define RQ_INT64_MAX 9223372036854775807LL

#define RQ_DECIMAL_MAX 24  /* "-9223372036854775808" and room to spare */

/* ``value`` in decimal at ``out`` (at least RQ_DECIMAL_MAX bytes), as Python's ``%d`` writes it;
 * returns the length. Written by hand: snprintf's "%lld" costs ~1 200 instructions a number. */
static inline int rq_write_decimal(char *out, long long value)
{
    char digits[RQ_DECIMAL_MAX];
    int count = 0, length = 0;
    /* the magnitude as unsigned: -LLONG_MIN does not fit a long long */
    unsigned long long magnitude = value < 0 ? 0ULL - (unsigned long long)value : (unsigned long long)value;
    do {
        digits[count++] = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude != 0);
    if (value < 0)
        out[length++] = '-';
    while (count > 0)
        out[length++] = digits[--count];
    return length;
}

/* Call the pure function with the same positional arguments. */
static inline PyObject *rq_fallback(PyObject *fallback, PyObject *const *args, Py_ssize_t nargs)
{
    return PyObject_Vectorcall(fallback, args, (size_t)nargs, NULL);
}

#endif
