/* A message's IndexFile entries (rocketq.store.index.IndexService.add), in C.
 *
 * add(service, topic, uniq_key, keys, phy_offset, store_timestamp): the entries for the unique
 * key and each KEYS key ("topic#key" hashed as Java's String.hashCode, made non-negative) go
 * into the service's last file, each as IndexFile.put writes it: the 20-byte entry, the hash
 * slot pointing at it, the chain link to the slot's previous entry, and the file's counters.
 * Only when that file has room and reserved blocks for all of them; otherwise (no file yet, a
 * roll due, blocks to allocate, a key with a lone surrogate, anything of an unusual type) the
 * pure method does the whole add, as it always did. All checks come before the first write.
 * The file's 40-byte header is rewritten in the same call, as the pure method ends, so the
 * map is whole after every add (a kill -9 leaves a correct header) without a separate commit.
 */
#include "rocketq_native.h"

#define HEADER_SIZE 40      /* index.HEADER_SIZE */
#define SLOT_SIZE 4
#define ENTRY_SIZE 20       /* keyHash i32, phyOffset i64, timeDiff i32, prevIndex i32 */
#define INVALID_INDEX 0
#define MAX_TIME_DIFF 0x7FFFFFFFLL
#define MAX_KEYS RQ_INDEX_MAX_KEYS  /* more keys in one message: the pure method */
#define KEY_SEPARATOR ' '   /* messageproperties.KEY_SEPARATOR */

static PyObject *n_files, *n_index_count, *n_index_num, *n_slot_num, *n_reserved, *n_entries_at, *n_buf,
    *n_hash_slot_count, *n_begin_timestamp, *n_begin_phy_offset, *n_end_timestamp, *n_end_phy_offset,
    *n_header_dirty, *n_flushed;

static int intern_names(void)
{
    static PyObject **const slots[] = {&n_files, &n_index_count, &n_index_num, &n_slot_num, &n_reserved,
                                       &n_entries_at, &n_buf, &n_hash_slot_count, &n_begin_timestamp,
                                       &n_begin_phy_offset, &n_end_timestamp, &n_end_phy_offset, &n_header_dirty,
                                       &n_flushed};
    static const char *const texts[] = {"files", "index_count", "index_num", "slot_num", "reserved", "_entries_at",
                                        "buf", "hash_slot_count", "begin_timestamp", "begin_phy_offset",
                                        "end_timestamp", "end_phy_offset", "header_dirty", "flushed"};
    return rq_intern_names(slots, texts, sizeof(texts) / sizeof(texts[0]));
}

/* Java's hashCode of text[start:end], continuing from ``h`` (mod 2**32); -1 on a lone surrogate. */
static int hash_range(PyObject *text, Py_ssize_t start, Py_ssize_t end, uint32_t *h)
{
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    uint32_t value = *h;
    for (Py_ssize_t i = start; i < end; i++) {
        Py_UCS4 cp = PyUnicode_READ(kind, data, i);
        if (cp < 0x10000) {
            if (cp >= 0xD800 && cp <= 0xDFFF)
                return -1;
            value = value * 31u + cp;
        } else {
            cp -= 0x10000;
            value = value * 31u + (0xD800u + (cp >> 10));
            value = value * 31u + (0xDC00u + (cp & 0x3FFu));
        }
    }
    *h = value;
    return 0;
}

/* Math.abs of the signed hash, Integer.MIN_VALUE giving 0 (index._extended_hash). */
static int32_t non_negative(uint32_t value)
{
    if (value & 0x80000000u)
        value = (uint32_t)(0x100000000ULL - value);
    return value > 0x7FFFFFFFu ? 0 : (int32_t)value;
}

/* The hash codes of the message's keys, in the pure method's order: the unique key, then each
 * non-empty piece of KEYS. Returns how many, or -1 for input the pure method must handle. */
int rq_index_key_hashes(PyObject *topic, PyObject *uniq, PyObject *keys, int32_t *out)
{
    uint32_t prefix = 0, h;
    int n = 0;
    if (hash_range(topic, 0, PyUnicode_GET_LENGTH(topic), &prefix) < 0)
        return -1;
    prefix = prefix * 31u + '#';
    if (uniq != Py_None && PyUnicode_GET_LENGTH(uniq) > 0) {
        h = prefix;
        if (hash_range(uniq, 0, PyUnicode_GET_LENGTH(uniq), &h) < 0)
            return -1;
        out[n++] = non_negative(h);
    }
    if (keys != Py_None) {
        int kind = PyUnicode_KIND(keys);
        const void *data = PyUnicode_DATA(keys);
        Py_ssize_t length = PyUnicode_GET_LENGTH(keys), start = 0;
        for (Py_ssize_t i = 0; i <= length; i++) {
            if (i < length && PyUnicode_READ(kind, data, i) != KEY_SEPARATOR)
                continue;
            if (i > start) {
                if (n == MAX_KEYS)
                    return -1;
                h = prefix;
                if (hash_range(keys, start, i, &h) < 0)
                    return -1;
                out[n++] = non_negative(h);
            }
            start = i + 1;
        }
    }
    return n;
}

typedef RqIndexState IndexState;

static int read_state(PyObject *file, IndexState *s)
{
    return rq_int_attr(file, n_index_count, 0, RQ_INT32_MAX, &s->count)
        && rq_int_attr(file, n_index_num, 1, RQ_INT32_MAX, &s->index_num)
        && rq_int_attr(file, n_slot_num, 1, RQ_INT32_MAX, &s->slot_num)
        && rq_int_attr(file, n_reserved, 0, RQ_INT64_MAX, &s->reserved)
        && rq_int_attr(file, n_entries_at, HEADER_SIZE, RQ_INT64_MAX, &s->entries_at)
        && rq_int_attr(file, n_hash_slot_count, RQ_INT32_MIN, RQ_INT32_MAX, &s->slots_used)
        && rq_int_attr(file, n_begin_timestamp, RQ_INT64_MIN, RQ_INT64_MAX, &s->begin_ts)
        && rq_int_attr(file, n_begin_phy_offset, RQ_INT64_MIN, RQ_INT64_MAX, &s->begin_phy);
}

/* Seconds from the file's first entry, clamped to [0, MAX_TIME_DIFF] as IndexFile.put does
 * (a negative difference is 0 whether divided by floor or truncation). */
static int32_t time_diff(long long stamp, long long begin)
{
    long long diff;
    if ((begin < 0 && stamp > RQ_INT64_MAX + begin) || (begin > 0 && stamp < RQ_INT64_MIN + begin))
        return stamp > begin ? (int32_t)MAX_TIME_DIFF : 0;  /* the difference overflows 64 bits */
    diff = stamp - begin;
    if (diff < 0)
        return 0;
    diff /= 1000;
    return (int32_t)(diff > MAX_TIME_DIFF ? MAX_TIME_DIFF : diff);
}

void rq_index_put(unsigned char *map, IndexState *s, const int32_t *hashes, int n, long long phy, long long stamp)
{
    for (int i = 0; i < n; i++) {
        unsigned char *slot = map + HEADER_SIZE + (hashes[i] % s->slot_num) * SLOT_SIZE;
        unsigned char *entry = map + s->entries_at + s->count * ENTRY_SIZE;
        int32_t prev = rq_get_i32(slot);
        if (prev <= INVALID_INDEX || prev >= s->count) {
            prev = INVALID_INDEX;
            s->slots_used += 1;
        }
        if (s->count <= 1) {
            s->begin_ts = stamp;
            s->begin_phy = phy;
        }
        rq_put_i32(entry, hashes[i]);
        rq_put_i64(entry + 4, phy);
        rq_put_i32(entry + 12, time_diff(stamp, s->begin_ts));
        rq_put_i32(entry + 16, prev);
        rq_put_i32(slot, s->count);
        s->count += 1;
    }
}

/* IndexFile.write_header: beginTimestamp, endTimestamp, beginPhyOffset, endPhyOffset i64,
 * hashSlotCount, indexCount i32. */
static void write_header(unsigned char *map, const IndexState *s, long long phy, long long stamp)
{
    rq_put_i64(map, s->begin_ts);
    rq_put_i64(map + 8, stamp);
    rq_put_i64(map + 16, s->begin_phy);
    rq_put_i64(map + 24, phy);
    rq_put_i32(map + 32, s->slots_used);
    rq_put_i32(map + 36, s->count);
}

int rq_index_store(PyObject *file, unsigned char *map, const IndexState *s, const IndexState *was, long long phy,
                   long long stamp)
{
    write_header(map, s, phy, stamp);
    /* (the counters that did not move are not set again: each is an int made and a dict write) */
    return rq_set_int_attr(file, n_index_count, s->count) < 0
        || (s->slots_used != was->slots_used && rq_set_int_attr(file, n_hash_slot_count, s->slots_used) < 0)
        || (s->begin_ts != was->begin_ts && rq_set_int_attr(file, n_begin_timestamp, s->begin_ts) < 0)
        || (s->begin_phy != was->begin_phy && rq_set_int_attr(file, n_begin_phy_offset, s->begin_phy) < 0)
        || rq_set_int_attr(file, n_end_timestamp, stamp) < 0 || rq_set_int_attr(file, n_end_phy_offset, phy) < 0
        || rq_set_attr(file, n_header_dirty, Py_False) < 0 || rq_set_attr(file, n_flushed, Py_False) < 0
        ? -1 : 0;
}

int rq_index_fits(const IndexState *s, int n)
{
    return s->count + n <= s->index_num && s->entries_at + (s->count + n) * ENTRY_SIZE <= s->reserved
        && s->entries_at >= HEADER_SIZE + s->slot_num * SLOT_SIZE && s->slots_used <= RQ_INT32_MAX - n;
}

int rq_index_open(PyObject *service, PyObject **file, IndexState *s, Py_buffer *map)
{
    int empty;
    if (intern_names() < 0)
        return -1;
    *file = rq_last_item(service, n_files, &empty);
    if (*file == NULL)
        return 0;
    if (read_state(*file, s) && s->reserved <= RQ_INT64_MAX / 2
            && rq_writable_map(*file, n_buf, (Py_ssize_t)s->reserved, map))
        return 1;
    Py_CLEAR(*file);
    return 0;
}

/* 1 written, 0 for the pure method, -1 a real failure (exception set). */
static int add_in_place(PyObject *service, const int32_t *hashes, int n, PyObject *const *args)
{
    IndexState s;
    long long phy, stamp;
    Py_buffer map;
    PyObject *file;
    int done;
    if (!rq_int_in(args[4], RQ_INT64_MIN, RQ_INT64_MAX, &phy) || !rq_int_in(args[5], RQ_INT64_MIN, RQ_INT64_MAX, &stamp))
        return 0;
    done = rq_index_open(service, &file, &s, &map);
    if (done <= 0)
        return done;
    done = rq_index_fits(&s, n);
    if (done) {
        IndexState was = s;
        rq_index_put(map.buf, &s, hashes, n, phy, stamp);
        done = rq_index_store(file, map.buf, &s, &was, phy, stamp) < 0 ? -1 : 1;
    }
    PyBuffer_Release(&map);
    Py_DECREF(file);
    return done;
}

PyObject *rq_py_index_add(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs)
{
    int32_t hashes[MAX_KEYS];
    int n, done;
    if (nargs != 6 || !PyUnicode_CheckExact(args[1]) || (args[2] != Py_None && !PyUnicode_CheckExact(args[2]))
            || (args[3] != Py_None && !PyUnicode_CheckExact(args[3])))
        return rq_fallback(fallback, args, nargs);
    n = rq_index_key_hashes(args[1], args[2], args[3], hashes);
    if (n <= 0)  /* no key at all, or one the pure method must judge (it may also create the first file) */
        return rq_fallback(fallback, args, nargs);
    done = add_in_place(args[0], hashes, n, args);
    if (done < 0)
        return NULL;
    if (done == 0)
        return rq_fallback(fallback, args, nargs);
    Py_RETURN_NONE;
}
