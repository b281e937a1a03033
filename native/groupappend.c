/* The append of a group of one-message puts (rocketq.store.groupappend.append_singles), in C.
 *
 * append_singles(commitlog, index, prepared, start, store_timestamp, msg_id_prefix, results,
 * touched): from ``prepared[start]`` on (the store's PreparedMessage tuples, each a put of its
 * own), append each put's record to the CommitLog's last segment (copied into its map, with
 * QUEUEOFFSET, PHYSICALOFFSET and STORETIMESTAMP stamped), its unit to its queue's last file
 * and its index entries to the last index file, append its PutResult to ``results`` and its
 * queue to ``touched`` (keyed by id), while each put fits as the files are: no roll, no file
 * to create, no blocks to allocate, a plain message (a unit and no delay level), keys the C
 * index code handles. Returns where it stopped; the store appends that put by its general
 * path and calls again. Every check of a put comes before its first byte is written; the log
 * segment's and the index file's counters (and the index header) are written once at the end.
 * Arguments of another shape go to the pure function.
 */
#include "rocketq_native.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

#define END_FILE_MIN_BLANK_LENGTH 8   /* commitlog.END_FILE_MIN_BLANK_LENGTH */
#define UNIT_SIZE 20                  /* consumequeue.UNIT_SIZE: phys i64, size i32, tag i64 */
#define QUEUE_OFFSET_POS 20           /* storedrecords.QUEUE_OFFSET_POS; PHYSICALOFFSET follows */
#define STAMP_SIZE 8
#define PREPARED_FIELDS 8             /* putting.PreparedMessage */
#define HEX_OFFSET_LENGTH 16          /* an offset message id ends with the offset in 16 hex digits */
#define RESULT_FIELDS 8               /* results.PutResult, all given to new_put_result */
#define PWRITE_MIN_PUTS 2
/* From this many puts left in a call, the records are gathered and written to the segment's file
 * with one pwrite (the map shares its page cache) instead of stored into the map: a write fault
 * (and ext4's page_mkwrite) per fresh page costs more than one system call per group. A lone
 * put is stored into the map (docs/benchmarks.md, round 10). */

static PyObject *name_segments, *name_files, *name_wrote, *name_buf, *name_last_ts, *name_topic, *name_fd;

static int intern_names(void)
{
    static PyObject **const slots[] = {&name_segments, &name_files, &name_wrote, &name_buf, &name_last_ts,
                                       &name_topic, &name_fd};
    static const char *const texts[] = {"segments", "files", "wrote", "buf", "last_store_timestamp", "topic", "fd"};
    return rq_intern_names(slots, texts, sizeof(texts) / sizeof(texts[0]));
}

typedef RqLastFile Mapped;

/* The last file of owner.<list_name>, mapped up to its reserved mark: 1; else 0 with nothing held. */
static int open_last(PyObject *owner, PyObject *list_name, Mapped *m)
{
    if (rq_last_file(owner, list_name, m) <= 0)
        return 0;
    /* (sizes far below 2**62: the sums below cannot overflow) */
    if (m->n.size <= RQ_INT64_MAX / 4 && m->n.start <= RQ_INT64_MAX / 4 && m->n.wrote <= m->n.size
            && m->n.reserved <= m->n.size)
        m->mapped = rq_writable_map(m->file, name_buf, (Py_ssize_t)m->n.reserved, &m->map);
    if (!m->mapped)
        Py_CLEAR(m->file);
    return m->mapped;
}

/* What the group's call holds across its puts. */
typedef struct {
    Mapped log;
    long long log_wrote;       /* the segment's write position as the call moves it */
    unsigned char *staged;     /* the records for one pwrite (from the segment's write position), or NULL */
    long long staged_room, fd;
    PyObject *index;           /* the IndexService, or None */
    PyObject *index_file;      /* its last file once opened (a put with keys), else NULL */
    RqIndexState index_state, index_opened;  /* as the call moves it, and as it was */
    Py_buffer index_map;
    long long last_phy;        /* the newest indexed message, for the index header */
    int index_tried, indexed;
} Group;

/* The index's last file, opened at the first put with keys: 1, else 0 (or -1 raised). */
static int index_ready(Group *g)
{
    if (!g->index_tried) {
        g->index_tried = 1;
        if (rq_index_open(g->index, &g->index_file, &g->index_state, &g->index_map) < 0)
            return -1;
        g->index_opened = g->index_state;
    }
    return g->index_file != NULL;
}

/* A put's fields, checked; 1 when it can go in place as far as its own values tell. */
typedef struct {
    PyObject *record, *queue, *uniq, *keys;
    long long ts_pos, tag;
    Py_ssize_t size;
} Put;

static int read_put(PyObject *item, Put *p)
{
    PyObject *unit, *delay;
    if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != PREPARED_FIELDS)
        return 0;
    p->record = PyTuple_GET_ITEM(item, 0);
    p->queue = PyTuple_GET_ITEM(item, 2);
    unit = PyTuple_GET_ITEM(item, 3);
    p->uniq = PyTuple_GET_ITEM(item, 5);
    p->keys = PyTuple_GET_ITEM(item, 6);
    delay = PyTuple_GET_ITEM(item, 7);
    if (unit != Py_True || delay != Py_None || !PyBytes_CheckExact(p->record)
            || !rq_int_in(PyTuple_GET_ITEM(item, 1), 0, RQ_INT32_MAX, &p->ts_pos)
            || !rq_int_in(PyTuple_GET_ITEM(item, 4), RQ_INT64_MIN, RQ_INT64_MAX, &p->tag)
            || (p->uniq != Py_None && !PyUnicode_CheckExact(p->uniq))
            || (p->keys != Py_None && !PyUnicode_CheckExact(p->keys)))
        return 0;
    p->size = PyBytes_GET_SIZE(p->record);
    /* the stamps must lie inside the record, as every encoded record's do */
    return p->size >= QUEUE_OFFSET_POS + 2 * STAMP_SIZE && p->ts_pos + STAMP_SIZE <= p->size;
}

/* The put's index hash codes into ``hashes``: how many (0: no entry to add), or -1 when the
 * put cannot go in place, -2 raised. As the store: an index, and a UNIQ_KEY or KEYS that is
 * not empty; then the last file must have room (an add would create one otherwise). */
static int index_entries(Group *g, const Put *p, int32_t *hashes)
{
    PyObject *topic;
    int n, ready;
    if (g->index == Py_None || ((p->uniq == Py_None || PyUnicode_GET_LENGTH(p->uniq) == 0)
                                && (p->keys == Py_None || PyUnicode_GET_LENGTH(p->keys) == 0)))
        return 0;
    ready = index_ready(g);
    if (ready <= 0)
        return ready < 0 ? -2 : -1;
    topic = rq_get_attr(p->queue, name_topic);
    if (topic == NULL) {
        PyErr_Clear();
        return -1;
    }
    n = PyUnicode_CheckExact(topic) ? rq_index_key_hashes(topic, p->uniq, p->keys, hashes) : -1;
    Py_DECREF(topic);
    if (n < 0 || !rq_index_fits(&g->index_state, n))
        return -1;
    return n;
}

/* The put's PutResult (new_put_result of context[0], with status context[1]), or NULL raised. */
static PyObject *one_tuple(PyObject *item)  /* (item,), stealing it; NULL raised */
{
    PyObject *tuple = item != NULL ? PyTuple_New(1) : NULL;
    if (tuple == NULL) {
        Py_XDECREF(item);
        return NULL;
    }
    PyTuple_SET_ITEM(tuple, 0, item);
    return tuple;
}

/* The offset message id: ``prefix`` (ASCII: an address in hex) and the offset in 16 hex digits. */
static PyObject *offset_msg_id(PyObject *prefix, long long phys)
{
    static const char digits[] = "0123456789ABCDEF";
    Py_ssize_t length = PyUnicode_GET_LENGTH(prefix);
    unsigned long long value = (unsigned long long)phys;
    PyObject *id;
    Py_UCS1 *out;
    if (!PyUnicode_IS_ASCII(prefix)) {
        char hex[HEX_OFFSET_LENGTH + 1];
        snprintf(hex, sizeof hex, "%016llX", value);
        return PyUnicode_FromFormat("%U%s", prefix, hex);
    }
    id = PyUnicode_New(length + HEX_OFFSET_LENGTH, 127);
    if (id == NULL)
        return NULL;
    out = PyUnicode_1BYTE_DATA(id);
    memcpy(out, PyUnicode_1BYTE_DATA(prefix), (size_t)length);
    for (int i = HEX_OFFSET_LENGTH - 1; i >= 0; i--, value >>= 4)
        out[length + i] = (Py_UCS1)digits[value & 0xF];
    return id;
}

/* The put's PutResult (new_put_result of context[0], with status context[1]), or NULL raised. */
static PyObject *new_result(PyObject *context, PyObject *stamp, PyObject *prefix, long long phys, Py_ssize_t size,
                            long long queue_offset)
{
    PyObject *fields[RESULT_FIELDS] = {NULL}, *result = NULL;
    fields[0] = Py_NewRef(PyTuple_GET_ITEM(context, 1));
    fields[1] = Py_NewRef(stamp);
    fields[2] = one_tuple(PyLong_FromLongLong(phys));
    fields[3] = one_tuple(PyLong_FromSsize_t(size));
    fields[4] = one_tuple(PyLong_FromLongLong(queue_offset));
    fields[5] = one_tuple(offset_msg_id(prefix, phys));
    fields[6] = PyUnicode_FromStringAndSize("", 0);
    fields[7] = PyLong_FromLong(0);
    if (fields[2] && fields[3] && fields[4] && fields[5] && fields[6] && fields[7])
        result = PyObject_Vectorcall(PyTuple_GET_ITEM(context, 0), fields, RESULT_FIELDS, NULL);
    for (int i = 0; i < RESULT_FIELDS; i++)
        Py_XDECREF(fields[i]);
    return result;
}

/* The record and its unit into the maps; the unit file's counter moved. 0, or -1 raised. */
static int write_put(Group *g, const Put *p, Mapped *units, long long stamp, long long phys, long long queue_offset)
{
    unsigned char *at = g->staged != NULL ? g->staged + (g->log_wrote - g->log.n.wrote)
                                          : (unsigned char *)g->log.map.buf + g->log_wrote, *unit;
    memcpy(at, PyBytes_AS_STRING(p->record), (size_t)p->size);
    rq_put_i64(at + QUEUE_OFFSET_POS, queue_offset);
    rq_put_i64(at + QUEUE_OFFSET_POS + STAMP_SIZE, phys);
    rq_put_i64(at + p->ts_pos, stamp);
    unit = (unsigned char *)units->map.buf + units->n.wrote;
    rq_put_i64(unit, phys);
    rq_put_i32(unit + 8, p->size);
    rq_put_i64(unit + 12, p->tag);
    return rq_set_int_attr(units->file, name_wrote, units->n.wrote + UNIT_SIZE);
}

/* One put in place: 1 done, 0 not in place (nothing changed), -1 raised. */
static int append_one(Group *g, PyObject *context, PyObject *const *args, PyObject *item, long long stamp)
{
    int32_t hashes[RQ_INDEX_MAX_KEYS];
    Mapped units;
    Put p;
    PyObject *result, *key;
    long long phys, queue_offset;
    int n, done = -1;
    if (!read_put(item, &p))
        return 0;
    if (g->log.n.size - g->log_wrote < p.size + END_FILE_MIN_BLANK_LENGTH || g->log_wrote + p.size > g->log.n.reserved
            || (g->staged != NULL && g->log_wrote - g->log.n.wrote + p.size > g->staged_room))
        return 0;
    n = index_entries(g, &p, hashes);
    if (n < 0)
        return n == -1 ? 0 : -1;
    if (!open_last(p.queue, name_files, &units))
        return 0;
    if (units.n.wrote >= units.n.size || units.n.wrote + UNIT_SIZE > units.n.reserved) {
        rq_release_file(&units);
        return 0;
    }
    phys = g->log.n.start + g->log_wrote;
    queue_offset = (units.n.start + units.n.wrote) / UNIT_SIZE;
    /* what can fail is made first: then nothing of this put is written when it does */
    result = new_result(context, args[4], args[5], phys, p.size, queue_offset);
    key = result != NULL ? PyLong_FromVoidPtr(p.queue) : NULL;
    /* (a queue noted in ``touched`` whose put then fails is only notified of what it has) */
    if (key != NULL && PyDict_SetItem(args[7], key, p.queue) == 0 && PyList_Append(args[6], result) == 0) {
        if (write_put(g, &p, &units, stamp, phys, queue_offset) == 0)
            done = 1;
        else  /* the unit's counter could not move: the put is not stored, its result goes */
            PySequence_DelItem(args[6], PyList_GET_SIZE(args[6]) - 1);
    }
    Py_XDECREF(key);
    Py_XDECREF(result);
    rq_release_file(&units);
    if (done < 0)
        return -1;
    g->log_wrote += p.size;
    if (n > 0) {
        rq_index_put(g->index_map.buf, &g->index_state, hashes, n, phys, stamp);
        g->last_phy = phys;
        g->indexed = 1;
    }
    return 1;
}

/* Records go to a buffer for one pwrite when the call has PWRITE_MIN_PUTS puts or more to try
 * (room for all their records, as far as the segment has reserved); else (or short of memory)
 * into the map. */
static void stage_records(Group *g, PyObject *prepared, Py_ssize_t start)
{
    Py_ssize_t count = PyList_GET_SIZE(prepared);
    long long room = 0;
    g->staged = NULL;
    g->staged_room = 0;
    if (count - start < PWRITE_MIN_PUTS || !rq_int_attr(g->log.file, name_fd, 0, INT_MAX, &g->fd))
        return;
    for (Py_ssize_t i = start; i < count && room < g->log.n.reserved - g->log.n.wrote; i++) {
        PyObject *item = PyList_GET_ITEM(prepared, i);
        if (PyTuple_CheckExact(item) && PyTuple_GET_SIZE(item) == PREPARED_FIELDS
                && PyBytes_CheckExact(PyTuple_GET_ITEM(item, 0)))
            room += PyBytes_GET_SIZE(PyTuple_GET_ITEM(item, 0));
    }
    if (room > g->log.n.reserved - g->log.n.wrote)
        room = g->log.n.reserved - g->log.n.wrote;
    if (room <= 0)
        return;
    g->staged = PyMem_Malloc((size_t)room);
    g->staged_room = g->staged != NULL ? room : 0;
}

/* The staged records into the segment's file. Its blocks are allocated, so a failure is an I/O
 * error: then they are stored into the map, as a lone put's are. */
static void write_staged(Group *g)
{
    const unsigned char *data = g->staged;
    long long length = g->log_wrote - g->log.n.wrote, at = g->log.n.wrote;
    while (length > 0) {
        ssize_t done = pwrite((int)g->fd, data, (size_t)length, (off_t)at);
        if (done < 0 && errno == EINTR)
            continue;
        if (done <= 0) {
            memcpy((unsigned char *)g->log.map.buf + at, data, (size_t)length);
            return;
        }
        data += done;
        at += done;
        length -= done;
    }
}

/* The counters of what the call wrote onto the log segment and the index file: 0, or -1 raised. */
static int finish(Group *g, PyObject *commitlog, PyObject *stamp_obj, long long stamp, int moved)
{
    int failed = 0;
    if (g->staged != NULL) {
        write_staged(g);
        PyMem_Free(g->staged);
        g->staged = NULL;
    }
    if (moved && (rq_set_int_attr(g->log.file, name_wrote, g->log_wrote) < 0
                  || PyObject_SetAttr(commitlog, name_last_ts, stamp_obj) < 0))
        failed = 1;
    if (g->indexed && rq_index_store(g->index_file, g->index_map.buf, &g->index_state, &g->index_opened, g->last_phy,
                                     stamp) < 0)
        failed = 1;
    if (g->index_file != NULL) {
        PyBuffer_Release(&g->index_map);
        Py_CLEAR(g->index_file);
    }
    rq_release_file(&g->log);
    return failed ? -1 : 0;
}

PyObject *rq_py_append_singles(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs)
{
    Group g = {0};
    long long start, stamp;
    Py_ssize_t at, count;
    int done = 1;
    if (nargs != 8 || !PyList_CheckExact(args[2]) || !rq_int_in(args[3], 0, PY_SSIZE_T_MAX, &start)
            || !rq_int_in(args[4], RQ_INT64_MIN, RQ_INT64_MAX, &stamp) || !PyUnicode_CheckExact(args[5])
            || !PyList_CheckExact(args[6]) || !PyDict_CheckExact(args[7]) || PyTuple_GET_SIZE(context) != 2)
        return rq_fallback(fallback, args, nargs);
    if (intern_names() < 0)
        return NULL;
    count = PyList_GET_SIZE(args[2]);
    at = (Py_ssize_t)start;
    if (at >= count || !open_last(args[0], name_segments, &g.log))
        return PyLong_FromSsize_t(at < count ? at : count);
    g.log_wrote = g.log.n.wrote;
    g.index = args[1];
    stage_records(&g, args[2], at);
    for (; at < PyList_GET_SIZE(args[2]); at++) {  /* re-read: a result's constructor runs code */
        PyObject *item = Py_NewRef(PyList_GET_ITEM(args[2], at));
        done = append_one(&g, context, args, item, stamp);
        Py_DECREF(item);
        if (done <= 0)
            break;
    }
    if (finish(&g, args[0], args[4], stamp, g.log_wrote != g.log.n.wrote) < 0 || done < 0)
        return NULL;
    return PyLong_FromSsize_t(at);
}
