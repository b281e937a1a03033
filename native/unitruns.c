/* A pull's walk over ConsumeQueue units whose records lie in one CommitLog segment.
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

PyObject *rq_read_units(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer chunk;
    long long pos, seg_start, seg_end, first_offset, scanned, found, total, last_phys, max_nums, max_bytes;
    PyObject *seg_view, *buffers, *offsets, *tags;
    int stop = 0, failed = 0;
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
    if (!as_ll(args[1], &pos) || !as_ll(args[3], &seg_start) || !as_ll(args[4], &seg_end)
            || !as_ll(args[5], &first_offset) || !as_ll(args[6], &scanned) || !as_ll(args[7], &found)
            || !as_ll(args[8], &total) || !as_ll(args[9], &last_phys) || !as_ll(args[10], &max_nums)
            || !as_ll(args[11], &max_bytes))
        return NULL;
    if (pos < 0 || seg_start < 0 || seg_end < seg_start) {
        PyErr_SetString(PyExc_ValueError, "read_units: bad position or segment bounds");
        return NULL;
    }
    if (PyObject_GetBuffer(args[0], &chunk, PyBUF_SIMPLE) < 0)
        return NULL;
    while (pos <= (long long)chunk.len - UNIT_SIZE) {
        const unsigned char *unit = (const unsigned char *)chunk.buf + pos;
        long long phys = rq_get_i64(unit);
        long long size = rq_get_i32(unit + 8);
        long long tag = rq_get_i64(unit + 12);
        if (found && (found >= max_nums || total + size > max_bytes)) {
            stop = 1;
            break;
        }
        if (size == BLANK_UNIT_SIZE) {
            scanned += 1;
            pos += UNIT_SIZE;
            continue;
        }
        /* in the segment: phys + size <= seg_end, written so that it cannot overflow */
        if (size <= 0 || phys < seg_start || phys > seg_end - size)
            break;  /* the Python loop takes this unit */
        if (append_new(buffers, PySequence_GetSlice(seg_view, (Py_ssize_t)(phys - seg_start),
                                                    (Py_ssize_t)(phys - seg_start + size))) < 0
                || append_new(offsets, PyLong_FromLongLong(first_offset + scanned)) < 0
                || append_new(tags, PyLong_FromLongLong(tag)) < 0) {
            failed = 1;
            break;
        }
        scanned += 1;
        found += 1;
        total += size;
        last_phys = phys;
        pos += UNIT_SIZE;
    }
    PyBuffer_Release(&chunk);
    if (failed)
        return NULL;
    return Py_BuildValue("(LLLLLO)", pos, scanned, found, total, last_phys, stop ? Py_True : Py_False);
}
