/* The in-place append of a whole batch (rocketq.store.batchappend.append_batch_in_place), in C.
 *
 * append_batch_in_place(commitlog, queue, prepared, store_timestamp, ts_pos, msg_id_prefix):
 * ``prepared`` is a list of the store's PreparedMessage tuples (record bytes at 0, tag code at
 * 4). When the CommitLog's last segment has room for all the records (keeping the END_OF_FILE
 * blank) with their blocks reserved, and the queue's last file (queue may be None) room for all
 * their units with blocks reserved, write the records back to back into the segment's file
 * (one pwrite; the map shares the page cache), each with its QUEUEOFFSET, PHYSICALOFFSET and
 * STORETIMESTAMP stamped, write their 20-byte units into the queue's map, then move
 * ``wrote`` of both files and the log's ``last_store_timestamp`` once, and return (offsets,
 * sizes, queue offsets, offset message ids). When a condition fails: None, having changed
 * nothing (the store's general path rolls and reserves). Anything unusual (another type, a
 * closed map, a stamp outside a record) goes to the pure function. Every check comes before
 * the first byte is written; a failed pwrite (an I/O error) raises OSError having moved no
 * counter and written no unit.
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
#define PREPARED_TAG 4                /* putting.PreparedMessage: the tag code's position */
#define HEX_OFFSET_LENGTH 16          /* an offset message id ends with the offset in 16 hex digits */

static PyObject *name_segments, *name_files, *name_wrote, *name_buf, *name_fd, *name_last_ts;

static int intern_names(void)
{
    static PyObject **const slots[] = {&name_segments, &name_files, &name_wrote, &name_buf, &name_fd, &name_last_ts};
    static const char *const texts[] = {"segments", "files", "wrote", "buf", "fd", "last_store_timestamp"};
    return rq_intern_names(slots, texts, sizeof(texts) / sizeof(texts[0]));
}

enum { FITS = 1, DOES_NOT_FIT = 0, UNUSUAL = -1 };

typedef RqLastFile Target;

static int read_target(PyObject *owner, PyObject *list_name, Target *target)
{
    int found = rq_last_file(owner, list_name, target);
    return found > 0 ? FITS : found == 0 ? DOES_NOT_FIT : UNUSUAL;
}

/* The records' total size, each one's tag into ``tags`` (queue given), or UNUSUAL / 0. */
static int check_records(PyObject *prepared, int with_queue, long long ts_pos, long long *total, long long *tags)
{
    Py_ssize_t n = PyList_GET_SIZE(prepared);
    *total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(prepared, i), *record;
        Py_ssize_t size;
        if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) <= PREPARED_TAG)
            return UNUSUAL;
        record = PyTuple_GET_ITEM(item, 0);
        if (!PyBytes_CheckExact(record))
            return UNUSUAL;
        size = PyBytes_GET_SIZE(record);
        /* the stamps must lie inside the record, as every encoded record's do */
        if (size < QUEUE_OFFSET_POS + 2 * STAMP_SIZE || ts_pos < 0 || ts_pos + STAMP_SIZE > size)
            return UNUSUAL;
        if (with_queue && !rq_int_in(PyTuple_GET_ITEM(item, PREPARED_TAG), RQ_INT64_MIN, RQ_INT64_MAX, &tags[i]))
            return UNUSUAL;
        *total += size;
    }
    return FITS;
}

/* The pure function's checks, in its order; FITS leaves both maps held. */
static int check_all(PyObject *commitlog, PyObject *queue, PyObject *prepared, long long ts_pos, long long *tags,
                     Target *log, Target *units, long long *total_out)
{
    Py_ssize_t n = PyList_GET_SIZE(prepared);
    long long total = 0, unit_end;
    int verdict = read_target(commitlog, name_segments, log);
    if (verdict != FITS)
        return verdict;
    if (n == 0)
        return DOES_NOT_FIT;
    verdict = check_records(prepared, queue != Py_None, ts_pos, &total, tags);
    if (verdict != FITS)
        return verdict;
    if (log->n.size - log->n.wrote < total + END_FILE_MIN_BLANK_LENGTH || log->n.wrote + total > log->n.reserved)
        return DOES_NOT_FIT;
    if (queue != Py_None) {
        verdict = read_target(queue, name_files, units);
        if (verdict != FITS)
            return verdict;
        unit_end = units->n.wrote + (long long)n * UNIT_SIZE;
        if (unit_end > units->n.size || unit_end > units->n.reserved)
            return DOES_NOT_FIT;
        units->mapped = rq_writable_map(units->file, name_buf, (Py_ssize_t)unit_end, &units->map);
        if (!units->mapped)
            return UNUSUAL;
    }
    *total_out = total;
    log->mapped = rq_writable_map(log->file, name_buf, (Py_ssize_t)(log->n.wrote + total), &log->map);
    return log->mapped ? FITS : UNUSUAL;
}

/* Every record, stamped, back to back into ``out``; offsets into ``phys`` and ``queue_offsets``. */
static void stamp_records(PyObject *prepared, long long stamp, long long ts_pos, const Target *log,
                          const Target *units, unsigned char *out, long long *phys, long long *queue_offsets)
{
    Py_ssize_t n = PyList_GET_SIZE(prepared);
    long long pos = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *record = PyTuple_GET_ITEM(PyList_GET_ITEM(prepared, i), 0);
        Py_ssize_t size = PyBytes_GET_SIZE(record);
        unsigned char *at = out + pos;
        phys[i] = log->n.start + log->n.wrote + pos;
        queue_offsets[i] = units->file != NULL ? (units->n.start + units->n.wrote) / UNIT_SIZE + i : 0;
        memcpy(at, PyBytes_AS_STRING(record), (size_t)size);
        rq_put_i64(at + QUEUE_OFFSET_POS, queue_offsets[i]);
        rq_put_i64(at + QUEUE_OFFSET_POS + STAMP_SIZE, phys[i]);
        rq_put_i64(at + ts_pos, stamp);
        pos += size;
    }
}

/* The records go to the segment's file with one pwrite, not by stores into its map: the kernel
 * copies them into the page cache the map shares, without a write fault (and ext4's
 * page_mkwrite) per fresh page; a 1 KiB record's append costs about half. 0, or -1 with OSError. */
static int write_file(int fd, const unsigned char *data, long long length, long long at)
{
    while (length > 0) {
        ssize_t done = pwrite(fd, data, (size_t)length, (off_t)at);
        if (done < 0) {
            if (errno == EINTR)
                continue;
            PyErr_SetFromErrno(PyExc_OSError);
            return -1;
        }
        data += done;
        at += done;
        length -= done;
    }
    return 0;
}

static void write_units(PyObject *prepared, const long long *tags, const long long *phys, Target *units)
{
    Py_ssize_t n = PyList_GET_SIZE(prepared);
    unsigned char *unit = (unsigned char *)units->map.buf + units->n.wrote;
    for (Py_ssize_t i = 0; i < n; i++, unit += UNIT_SIZE) {
        rq_put_i64(unit, phys[i]);
        rq_put_i32(unit + 8, PyBytes_GET_SIZE(PyTuple_GET_ITEM(PyList_GET_ITEM(prepared, i), 0)));
        rq_put_i64(unit + 12, tags[i]);
    }
}

/* (offsets, sizes, queue offsets, ids) of the written batch. */
static PyObject *placement(PyObject *prepared, PyObject *prefix, const long long *phys,
                           const long long *queue_offsets)
{
    Py_ssize_t n = PyList_GET_SIZE(prepared);
    PyObject *offsets = PyTuple_New(n), *sizes = PyTuple_New(n), *queue = PyTuple_New(n), *ids = PyTuple_New(n);
    if (offsets == NULL || sizes == NULL || queue == NULL || ids == NULL)
        goto error;
    for (Py_ssize_t i = 0; i < n; i++) {
        char hex[HEX_OFFSET_LENGTH + 1];
        PyObject *record = PyTuple_GET_ITEM(PyList_GET_ITEM(prepared, i), 0), *value;
        snprintf(hex, sizeof hex, "%016llX", (unsigned long long)phys[i]);
        if ((value = PyLong_FromLongLong(phys[i])) == NULL)
            goto error;
        PyTuple_SET_ITEM(offsets, i, value);
        if ((value = PyLong_FromSsize_t(PyBytes_GET_SIZE(record))) == NULL)
            goto error;
        PyTuple_SET_ITEM(sizes, i, value);
        if ((value = PyLong_FromLongLong(queue_offsets[i])) == NULL)
            goto error;
        PyTuple_SET_ITEM(queue, i, value);
        if ((value = PyUnicode_FromFormat("%U%s", prefix, hex)) == NULL)
            goto error;
        PyTuple_SET_ITEM(ids, i, value);
    }
    return Py_BuildValue("(NNNN)", offsets, sizes, queue, ids);
error:
    Py_XDECREF(offsets);
    Py_XDECREF(sizes);
    Py_XDECREF(queue);
    Py_XDECREF(ids);
    return NULL;
}

PyObject *rq_py_append_batch_in_place(PyObject *fallback, PyObject *context, PyObject *const *args,
                                      Py_ssize_t nargs)
{
    Target log = {0}, units = {0};
    long long stamp, ts_pos, total = 0, fd = 0, *numbers;
    Py_ssize_t n;
    PyObject *out = NULL;
    int verdict;
    if (nargs != 6 || !PyList_Check(args[2]) || !rq_int_in(args[3], RQ_INT64_MIN, RQ_INT64_MAX, &stamp)
            || !rq_int_in(args[4], RQ_INT32_MIN, RQ_INT32_MAX, &ts_pos) || !PyUnicode_CheckExact(args[5]))
        return rq_fallback(fallback, args, nargs);
    if (intern_names() < 0)
        return NULL;
    n = PyList_GET_SIZE(args[2]);
    /* per record: its tag, CommitLog offset and queue offset */
    numbers = PyMem_Malloc(sizeof(long long) * (size_t)(3 * n + 1));
    if (numbers == NULL)
        return PyErr_NoMemory();
    verdict = check_all(args[0], args[1], args[2], ts_pos, numbers, &log, &units, &total);
    if (verdict == FITS && !rq_int_attr(log.file, name_fd, 0, INT_MAX, &fd))
        verdict = UNUSUAL;
    if (verdict == FITS) {
        unsigned char *data = PyMem_Malloc((size_t)total);
        if (data == NULL) {
            PyErr_NoMemory();
        } else {
            stamp_records(args[2], stamp, ts_pos, &log, &units, data, numbers + n, numbers + 2 * n);
            if (write_file((int)fd, data, total, log.n.wrote) == 0) {
                if (units.file != NULL)
                    write_units(args[2], numbers, numbers + n, &units);
                if (rq_set_int_attr(log.file, name_wrote, log.n.wrote + total) == 0
                        && PyObject_SetAttr(args[0], name_last_ts, args[3]) == 0
                        && (units.file == NULL
                            || rq_set_int_attr(units.file, name_wrote, units.n.wrote + (long long)n * UNIT_SIZE) == 0))
                    out = placement(args[2], args[5], numbers + n, numbers + 2 * n);
            }
            PyMem_Free(data);
        }
    }
    rq_release_file(&log);
    rq_release_file(&units);
    PyMem_Free(numbers);
    if (verdict == DOES_NOT_FIT)
        Py_RETURN_NONE;
    if (verdict == UNUSUAL)
        return rq_fallback(fallback, args, nargs);
    return out;
}
