/* The in-place append of one record (rocketq.store.inplace.append_in_place), in C.
 *
 * append_in_place(commitlog, queue, record, store_timestamp, ts_pos, tag_code): when the
 * CommitLog's last segment has room for the record (keeping the END_OF_FILE blank) with its
 * blocks reserved, and the queue's last file (queue may be None) has room for a unit with its
 * blocks reserved, copy the record into the segment's map, stamp QUEUEOFFSET, PHYSICALOFFSET
 * and STORETIMESTAMP, write the 20-byte unit, move ``wrote`` of both files and the log's
 * ``last_store_timestamp``, and return (phys, queue_offset). When a condition fails: None,
 * having changed nothing (the store's general path rolls and reserves). Anything unusual (an
 * attribute of another type, a closed map, a stamp outside the record) goes to the pure
 * function, which does what it always did. All checks come before the first byte is written.
 */
#include "rocketq_native.h"

#define END_FILE_MIN_BLANK_LENGTH 8   /* commitlog.END_FILE_MIN_BLANK_LENGTH */
#define UNIT_SIZE 20                  /* consumequeue.UNIT_SIZE: phys i64, size i32, tag i64 */
#define QUEUE_OFFSET_POS 20           /* storedrecords.QUEUE_OFFSET_POS; PHYSICALOFFSET follows */
#define STAMP_SIZE 8

static PyObject *name_segments, *name_files, *name_wrote, *name_size, *name_reserved, *name_start, *name_buf,
    *name_last_ts;

static int intern_names(void)
{
    static PyObject **const slots[] = {&name_segments, &name_files, &name_wrote, &name_size, &name_reserved,
                                       &name_start, &name_buf, &name_last_ts};
    static const char *const texts[] = {"segments", "files", "wrote", "size", "reserved", "start", "buf",
                                        "last_store_timestamp"};
    return rq_intern_names(slots, texts, sizeof(texts) / sizeof(texts[0]));
}

/* What the append needs of a MappedFile: its counters and its map, held while it is written. */
typedef struct {
    long long wrote, size, reserved, start;
    Py_buffer map;
    int mapped;
} FileState;

static int read_counters(PyObject *file, FileState *state)
{
    state->mapped = 0;
    return rq_int_attr(file, name_wrote, 0, RQ_INT64_MAX, &state->wrote)
        && rq_int_attr(file, name_size, 0, RQ_INT64_MAX, &state->size)
        && rq_int_attr(file, name_reserved, 0, RQ_INT64_MAX, &state->reserved)
        && rq_int_attr(file, name_start, 0, RQ_INT64_MAX, &state->start);
}

/* The file's map as a writable buffer of at least ``needed`` bytes: 1; else 0 (none held). */
static int map_file(PyObject *file, long long needed, FileState *state)
{
    state->mapped = rq_writable_map(file, name_buf, (Py_ssize_t)needed, &state->map);
    return state->mapped;
}

static void unmap_file(FileState *state)
{
    if (state->mapped)
        PyBuffer_Release(&state->map);
    state->mapped = 0;
}

enum { FITS = 1, DOES_NOT_FIT = 0, UNUSUAL = -1 };

/* Can the record go at the end of ``tail`` (a CommitLog segment)? */
static int record_fits(PyObject *tail, Py_ssize_t size, FileState *state)
{
    if (!read_counters(tail, state))
        return UNUSUAL;
    if (state->size - state->wrote < size + END_FILE_MIN_BLANK_LENGTH || state->wrote + size > state->reserved)
        return DOES_NOT_FIT;
    return FITS;
}

/* Can a unit go at the end of ``unit_file`` (a ConsumeQueue file)? */
static int unit_fits(PyObject *unit_file, FileState *state)
{
    if (!read_counters(unit_file, state))
        return UNUSUAL;
    if (state->wrote >= state->size || state->wrote + UNIT_SIZE > state->reserved)
        return DOES_NOT_FIT;
    return FITS;
}

/* The checks of the pure function, in its order; FITS leaves both maps held. */
static int check_all(PyObject *commitlog, PyObject *queue, Py_ssize_t size, long long ts_pos,
                     PyObject **tail, PyObject **unit_file, FileState *log, FileState *units)
{
    int empty, verdict;
    log->mapped = units->mapped = 0;
    *tail = rq_last_item(commitlog, name_segments, &empty);
    if (*tail == NULL)
        return empty ? DOES_NOT_FIT : UNUSUAL;
    verdict = record_fits(*tail, size, log);
    if (verdict != FITS)
        return verdict;
    if (queue != Py_None) {
        *unit_file = rq_last_item(queue, name_files, &empty);
        if (*unit_file == NULL)
            return empty ? DOES_NOT_FIT : UNUSUAL;
        verdict = unit_fits(*unit_file, units);
        if (verdict != FITS)
            return verdict;
        if (!map_file(*unit_file, units->wrote + UNIT_SIZE, units))
            return UNUSUAL;
    }
    /* The stamps must lie inside the record, as every encoded record's do. */
    if (size < QUEUE_OFFSET_POS + 2 * STAMP_SIZE || ts_pos < 0 || ts_pos + STAMP_SIZE > size)
        return UNUSUAL;
    if (!map_file(*tail, log->wrote + size, log))
        return UNUSUAL;
    return FITS;
}

static PyObject *write_all(PyObject *commitlog, PyObject *tail, PyObject *unit_file, PyObject *record,
                           PyObject *store_timestamp, long long stamp, long long ts_pos, long long tag,
                           FileState *log, FileState *units)
{
    Py_ssize_t size = PyBytes_GET_SIZE(record);
    long long phys = log->start + log->wrote, queue_offset = 0;
    unsigned char *at = (unsigned char *)log->map.buf + log->wrote;
    if (unit_file != NULL)
        queue_offset = (units->start + units->wrote) / UNIT_SIZE;
    memcpy(at, PyBytes_AS_STRING(record), (size_t)size);
    rq_put_i64(at + QUEUE_OFFSET_POS, queue_offset);
    rq_put_i64(at + QUEUE_OFFSET_POS + STAMP_SIZE, phys);
    rq_put_i64(at + ts_pos, stamp);
    if (unit_file != NULL) {
        unsigned char *unit = (unsigned char *)units->map.buf + units->wrote;
        rq_put_i64(unit, phys);
        rq_put_i32(unit + 8, size);
        rq_put_i64(unit + 12, tag);
    }
    if (rq_set_int_attr(tail, name_wrote, log->wrote + size) < 0
            || PyObject_SetAttr(commitlog, name_last_ts, store_timestamp) < 0
            || (unit_file != NULL && rq_set_int_attr(unit_file, name_wrote, units->wrote + UNIT_SIZE) < 0))
        return NULL;
    return Py_BuildValue("(LL)", phys, queue_offset);
}

PyObject *rq_py_append_in_place(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *tail = NULL, *unit_file = NULL, *out = NULL;
    long long stamp, ts_pos, tag = 0;
    FileState log, units;
    int verdict;
    if (nargs != 6 || !PyBytes_CheckExact(args[2]) || !rq_int_in(args[3], RQ_INT64_MIN, RQ_INT64_MAX, &stamp)
            || !rq_int_in(args[4], RQ_INT32_MIN, RQ_INT32_MAX, &ts_pos)
            || (args[1] != Py_None && !rq_int_in(args[5], RQ_INT64_MIN, RQ_INT64_MAX, &tag)))
        return rq_fallback(fallback, args, nargs);
    if (intern_names() < 0)
        return NULL;
    verdict = check_all(args[0], args[1], PyBytes_GET_SIZE(args[2]), ts_pos, &tail, &unit_file, &log, &units);
    if (verdict == FITS)
        out = write_all(args[0], tail, unit_file, args[2], args[3], stamp, ts_pos, tag, &log, &units);
    unmap_file(&log);
    unmap_file(&units);
    Py_XDECREF(tail);
    Py_XDECREF(unit_file);
    if (verdict == DOES_NOT_FIT)
        Py_RETURN_NONE;
    if (verdict == UNUSUAL)
        return rq_fallback(fallback, args, nargs);
    return out;
}
