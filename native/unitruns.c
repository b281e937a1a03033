/* A pull's walk over ConsumeQueue units whose records lie in one CommitLog segment, and the
 * common pull's whole read around it (read_plain, at the end of this file).
 *
 * read_units(chunk, pos, seg_view, seg_start, seg_end, first_offset, scanned, found, total,
 *            last_phys, max_nums, max_bytes, buffers, queue_offsets, tag_codes)
 *     -> (pos, scanned, found, total, last_phys, stop)
 *
 * The pure reference is the unit loop of rocketq.store.reading._read_queue for a pull without
 * filters: the same units taken or skipped, the same values appended to the three lists (a
 * record's memoryview sliced from ``seg_view``, its queue offset, its tag code) and the same
 * counters. ``chunk`` holds 20-byte units (offset i64, size i32, tag code i64, big-endian) from
 * byte ``pos``; ``first_offset + scanned`` is the queue offset of the unit at ``pos``.
 *
 * It stops before the first unit it does not handle itself and returns its position: a record
 * outside [seg_start, seg_end) (another segment, a removed one) or of size <= 0, which the
 * Python loop then takes (stop false); ``stop`` is true when the pull is full (max_nums
 * records, or max_bytes, after at least one record), as the loop's ``break``. Only whole units
 * are read: a chunk's trailing partial unit is left to the caller.
 */
#include "rocketq_native.h"

#define UNIT_SIZE 20
#define BLANK_UNIT_SIZE 0x7FFFFFFF
#define READ_UNITS_ARGS 15
#define READ_PLAIN_ARGS 6

static int as_ll(PyObject *value, long long *out)
{
    if (!PyLong_CheckExact(value)) {
        PyErr_SetString(PyExc_TypeError, "read_units: an int argument is not an int");
        return 0;
    }
    *out = PyLong_AsLongLong(value);
    return !(*out == -1 && PyErr_Occurred());
}

/* append ``value`` (a new reference, or NULL) to ``list``; 0, or -1 raised */
static int append_new(PyObject *list, PyObject *value)
{
    int failed;
    if (value == NULL)
        return -1;
    failed = PyList_Append(list, value);
    Py_DECREF(value);
    return failed;
}

/* the walk's counters, as read_units takes and returns them */
typedef struct {
    long long pos, scanned, found, total, last_phys;
} Walk;

/* read_units' loop over ``units`` (``length`` bytes): 1 when the pull is full, 0 when it stopped
 * before a unit it does not take or at the end, -1 raised */
static int walk_units(const unsigned char *units, Py_ssize_t length, PyObject *seg_view, long long seg_start,
                      long long seg_end, long long first_offset, long long max_nums, long long max_bytes,
                      PyObject *buffers, PyObject *offsets, PyObject *tags, Walk *w)
{
    while (w->pos <= (long long)length - UNIT_SIZE) {
        const unsigned char *unit = units + w->pos;
        long long phys = rq_get_i64(unit);
        long long size = rq_get_i32(unit + 8);
        long long tag = rq_get_i64(unit + 12);
        if (w->found && (w->found >= max_nums || w->total + size > max_bytes))
            return 1;
        if (size == BLANK_UNIT_SIZE) {
            w->scanned += 1;
            w->pos += UNIT_SIZE;
            continue;
        }
        /* in the segment: phys + size <= seg_end, written so that it cannot overflow */
        if (size <= 0 || phys < seg_start || phys > seg_end - size)
            return 0;  /* the Python loop takes this unit */
        if (append_new(buffers, PySequence_GetSlice(seg_view, (Py_ssize_t)(phys - seg_start),
                                                    (Py_ssize_t)(phys - seg_start + size))) < 0
                || append_new(offsets, PyLong_FromLongLong(first_offset + w->scanned)) < 0
                || append_new(tags, PyLong_FromLongLong(tag)) < 0)
            return -1;
        w->scanned += 1;
        w->found += 1;
        w->total += size;
        w->last_phys = phys;
        w->pos += UNIT_SIZE;
    }
    return 0;
}

PyObject *rq_read_units(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer chunk;
    Walk w;
    long long seg_start, seg_end, first_offset, max_nums, max_bytes;
    PyObject *seg_view, *buffers, *offsets, *tags;
    int stop;
    if (nargs != READ_UNITS_ARGS) {
        PyErr_SetString(PyExc_TypeError, "read_units takes 15 arguments");
        return NULL;
    }
    seg_view = args[2];
    buffers = args[12];
    offsets = args[13];
    tags = args[14];
    if (!PyMemoryView_Check(seg_view) || !PyList_CheckExact(buffers) || !PyList_CheckExact(offsets)
            || !PyList_CheckExact(tags)) {
        PyErr_SetString(PyExc_TypeError, "read_units: a memoryview and three lists expected");
        return NULL;
    }
    if (!as_ll(args[1], &w.pos) || !as_ll(args[3], &seg_start) || !as_ll(args[4], &seg_end)
            || !as_ll(args[5], &first_offset) || !as_ll(args[6], &w.scanned) || !as_ll(args[7], &w.found)
            || !as_ll(args[8], &w.total) || !as_ll(args[9], &w.last_phys) || !as_ll(args[10], &max_nums)
            || !as_ll(args[11], &max_bytes))
        return NULL;
    if (w.pos < 0 || seg_start < 0 || seg_end < seg_start) {
        PyErr_SetString(PyExc_ValueError, "read_units: bad position or segment bounds");
        return NULL;
    }
    if (PyObject_GetBuffer(args[0], &chunk, PyBUF_SIMPLE) < 0)
        return NULL;
    stop = walk_units((const unsigned char *)chunk.buf, chunk.len, seg_view, seg_start, seg_end, first_offset,
                      max_nums, max_bytes, buffers, offsets, tags, &w);
    PyBuffer_Release(&chunk);
    if (stop < 0)
        return NULL;
    return Py_BuildValue("(LLLLLO)", w.pos, w.scanned, w.found, w.total, w.last_phys, stop ? Py_True : Py_False);
}

/* --- read_plain: the whole common read ------------------------------------------------------- */

static PyObject *name_files, *name_file_size, *name_min_offset, *name_segments, *name_segment_size, *name_start,
    *name_wrote, *name_view, *name_closed;

static int plain_names(void)
{
    static PyObject **const slots[] = {&name_files, &name_file_size, &name_min_offset, &name_segments,
                                       &name_segment_size, &name_start, &name_wrote, &name_view, &name_closed};
    static const char *const texts[] = {"files", "file_size", "min_offset", "segments", "segment_size", "start",
                                        "wrote", "view", "closed"};
    return rq_intern_names(slots, texts, sizeof(texts) / sizeof(texts[0]));
}

/* an exact list attribute (a new reference), or NULL with nothing raised */
static PyObject *list_attr(PyObject *obj, PyObject *name)
{
    PyObject *value = rq_get_attr(obj, name);
    if (value == NULL) {
        PyErr_Clear();
        return NULL;
    }
    if (!PyList_CheckExact(value)) {
        Py_DECREF(value);
        return NULL;
    }
    return value;
}

/* a MappedFile's start and wrote (non-negative ints): 1, else 0 (nothing raised) */
static int file_span(PyObject *file, long long *start, long long *wrote)
{
    return rq_int_attr(file, name_start, 0, RQ_INT64_MAX, start) && rq_int_attr(file, name_wrote, 0, RQ_INT64_MAX, wrote);
}

/* floor division of non-negative ``a`` or negative by positive ``b``, as Python's // */
static long long floor_div(long long a, long long b)
{
    long long q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

typedef struct {
    PyObject *file;     /* the ConsumeQueue file of the first unit (a new reference) */
    PyObject *segment;  /* the CommitLog segment of its record (a new reference) */
    long long min_offset, max_offset, first_pos, run_end, seg_start, seg_end, log_end;
} PlainRead;

static void plain_clear(PlainRead *r)
{
    Py_CLEAR(r->file);
    Py_CLEAR(r->segment);
}

/* get_messages' bounds and ConsumeQueue.unit_run for the read, as the Python code has them: 1,
 * or 0 (declined: another status, another file) */
static int plain_queue(PyObject *cq, long long offset, long long scan, PlainRead *r)
{
    PyObject *files = list_attr(cq, name_files);
    long long file_size, first_start, start, wrote, tail_start, tail_wrote, end, index, byte;
    Py_ssize_t count;
    int ok = 0;
    if (files == NULL)
        return 0;
    count = PyList_GET_SIZE(files);
    if (!rq_int_attr(cq, name_min_offset, 0, RQ_INT64_MAX / UNIT_SIZE, &r->min_offset)
            || !rq_int_attr(cq, name_file_size, 1, RQ_INT64_MAX, &file_size) || count == 0
            || !file_span(PyList_GET_ITEM(files, count - 1), &tail_start, &tail_wrote)
            || tail_start > RQ_INT64_MAX - tail_wrote)
        goto done;
    r->max_offset = (tail_start + tail_wrote) / UNIT_SIZE;
    /* readable (min <= offset < max, max > 0): the status checks' last branch */
    if (r->max_offset == 0 || offset < r->min_offset || offset >= r->max_offset)
        goto done;
    end = offset + scan < r->max_offset ? offset + scan : r->max_offset;
    byte = offset * UNIT_SIZE;
    if (!file_span(PyList_GET_ITEM(files, 0), &first_start, &wrote))
        goto done;
    index = floor_div(byte - first_start, file_size);
    if (index < 0 || index >= count)
        goto done;
    r->file = Py_NewRef(PyList_GET_ITEM(files, index));
    if (!file_span(r->file, &start, &wrote))
        goto done;
    r->first_pos = byte - start;
    /* f.view[pos:min(f.wrote, pos + (end - offset) * UNIT_SIZE)]; the view's length clips it later */
    r->run_end = wrote < r->first_pos + (end - offset) * UNIT_SIZE ? wrote : r->first_pos + (end - offset) * UNIT_SIZE;
    ok = r->first_pos >= 0;
done:
    Py_DECREF(files);
    return ok;
}

/* CommitLog.segment_for(phys) and its bounds, and the log's end: 1, or 0 (declined) */
static int plain_segment(PyObject *commitlog, long long phys, long long size, PlainRead *r)
{
    PyObject *segments = list_attr(commitlog, name_segments), *closed;
    long long segment_size, first_start, wrote, tail_start, tail_wrote, index;
    Py_ssize_t count;
    int ok = 0, is_closed;
    if (segments == NULL)
        return 0;
    count = PyList_GET_SIZE(segments);
    if (count == 0 || !rq_int_attr(commitlog, name_segment_size, 1, RQ_INT64_MAX, &segment_size)
            || !file_span(PyList_GET_ITEM(segments, 0), &first_start, &wrote) || phys < first_start)
        goto done;
    index = (phys - first_start) / segment_size;
    if (index >= count || size <= 0 || size == BLANK_UNIT_SIZE)
        goto done;
    r->segment = Py_NewRef(PyList_GET_ITEM(segments, index));
    closed = rq_get_attr(r->segment, name_closed);
    if (closed == NULL) {
        PyErr_Clear();
        goto done;
    }
    is_closed = PyObject_IsTrue(closed);
    Py_DECREF(closed);
    if (is_closed != 0) {
        PyErr_Clear();
        goto done;
    }
    if (!file_span(r->segment, &r->seg_start, &wrote) || r->seg_start > RQ_INT64_MAX - wrote
            || !file_span(PyList_GET_ITEM(segments, count - 1), &tail_start, &tail_wrote)
            || tail_start > RQ_INT64_MAX - tail_wrote)
        goto done;
    r->seg_end = r->seg_start + wrote;
    r->log_end = tail_start + tail_wrote;
    ok = phys <= r->seg_end - size;  /* phys + size <= seg_end */
done:
    Py_DECREF(segments);
    return ok;
}

/* read_plain(cq, commitlog, offset, max_nums, max_bytes, scan_units)
 *     -> (buffers, queue_offsets, tag_codes, next_offset, total, behind, min_offset, max_offset) | None
 *
 * rocketq.store.reading.get_messages for a pull without filters whose offset is readable and
 * whose records lie in one ConsumeQueue file and one CommitLog segment, in one call: the queue's
 * bounds (``min_offset``, ``max_offset`` as the properties compute them), ``unit_run``'s units,
 * the first record's segment (``CommitLog.segment_for``, not closed, the record within what it
 * wrote) and the walk of read_units from the first unit; ``behind`` is the log's end less the
 * last record's offset. None (nothing counted, nothing raised) for anything else: the status
 * checks and ``_read_queue`` then answer as always. The reference is that Python code
 * (tests/store/test_reading_plain.py). */
PyObject *rq_read_plain(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    PlainRead r = {NULL, NULL, 0, 0, 0, 0, 0, 0, 0};
    Walk w = {0, 0, 0, 0, 0};
    long long offset, max_nums, max_bytes, scan, first_phys, first_size;
    Py_buffer units;
    PyObject *view = NULL, *seg_view = NULL, *buffers = NULL, *offsets = NULL, *tags = NULL, *out = NULL;
    int mapped = 0, stop;
    if (nargs != READ_PLAIN_ARGS) {
        PyErr_SetString(PyExc_TypeError, "read_plain takes 6 arguments");
        return NULL;
    }
    if (plain_names() < 0)
        return NULL;
    if (!rq_int_in(args[2], 0, RQ_INT64_MAX / UNIT_SIZE, &offset) || !rq_int_in(args[3], RQ_INT64_MIN, RQ_INT64_MAX, &max_nums)
            || !rq_int_in(args[4], RQ_INT64_MIN, RQ_INT64_MAX, &max_bytes)
            || !rq_int_in(args[5], 0, RQ_INT64_MAX / UNIT_SIZE, &scan))
        Py_RETURN_NONE;
    if (max_nums < 1)
        max_nums = 1;  /* get_messages' max(1, max_nums) */
    if (max_nums > scan)
        scan = max_nums;  /* max(MAX_FILTER_SCAN_UNITS, max_nums) */
    if (offset > RQ_INT64_MAX / UNIT_SIZE - scan || !plain_queue(args[0], offset, scan, &r))
        goto declined;
    view = rq_get_attr(r.file, name_view);
    if (view == NULL || PyObject_GetBuffer(view, &units, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        goto declined;
    }
    mapped = 1;
    if (r.run_end > units.len)
        r.run_end = units.len;
    if (r.first_pos > r.run_end || r.run_end - r.first_pos < UNIT_SIZE)
        goto declined;
    first_phys = rq_get_i64((const unsigned char *)units.buf + r.first_pos);
    first_size = rq_get_i32((const unsigned char *)units.buf + r.first_pos + 8);
    if (!plain_segment(args[1], first_phys, first_size, &r))
        goto declined;
    seg_view = rq_get_attr(r.segment, name_view);
    if (seg_view == NULL || !PyMemoryView_Check(seg_view)) {
        PyErr_Clear();
        goto declined;
    }
    buffers = PyList_New(0);
    offsets = PyList_New(0);
    tags = PyList_New(0);
    if (buffers == NULL || offsets == NULL || tags == NULL)
        goto failed;
    w.last_phys = r.log_end;
    stop = walk_units((const unsigned char *)units.buf + r.first_pos, r.run_end - r.first_pos, seg_view,
                      r.seg_start, r.seg_end, offset, max_nums, max_bytes, buffers, offsets, tags, &w);
    if (stop < 0)
        goto failed;
    /* a unit the loop would take itself, or the next ConsumeQueue file: the general read's */
    if (!stop && (w.pos < r.run_end - r.first_pos || offset + w.scanned < (offset + scan < r.max_offset ? offset + scan : r.max_offset)))
        goto declined;
    out = Py_BuildValue("(OOOLLLLL)", buffers, offsets, tags, offset + w.scanned, w.total, r.log_end - w.last_phys,
                        r.min_offset, r.max_offset);
    goto finish;
declined:
    out = Py_NewRef(Py_None);
    goto finish;
failed:
    out = NULL;
finish:
    if (mapped)
        PyBuffer_Release(&units);
    Py_XDECREF(view);
    Py_XDECREF(seg_view);
    Py_XDECREF(buffers);
    Py_XDECREF(offsets);
    Py_XDECREF(tags);
    plain_clear(&r);
    return out;
}
