/* A plain single send's PutRequest in one call (rocketq.broker.plainsend.plain_put), the common
 * case.
 *
 * plain_put(code, ext, body, cluster_entry, born_host) reads a SEND_MESSAGE / SEND_MESSAGE_V2
 * header's fields from its extFields as the compiled header parser does (headers._native_table's
 * rows: slot, key, kind, required, default, safe digits), reads the properties text in one pass
 * (the canonical form ``name \x01 value \x02`` per entry, no name twice; TAGS, UNIQ_KEY, KEYS
 * found on the way; TRAN_MSG or DELAY make it not plain) and builds the PutRequest the general
 * path (SendHandlers._records) would build. Anything it does not take itself goes to the pure
 * function, which decides (None: not a plain send, for the general path): another code, a V2
 * header with other keys than its fields (ACL signatures), a non-str value, a number that is not
 * plain ASCII within its Java type's range, a missing required field, batch=true, properties
 * that are not canonical or name TRAN_MSG or DELAY, a TAGS value with a lone surrogate.
 *
 * context: (new_put_request, SEND_MESSAGE, its table, SEND_MESSAGE_V2, its table, picks) where
 * picks are the table indices of topic, queueId, flag, properties, sysFlag, bornTimestamp,
 * reconsumeTimes and batch, in that order.
 */
#include "rocketq_native.h"

#include <string.h>

enum { KIND_STR = 0, KIND_INT = 1, KIND_BOOL = 2, SPEC_ITEMS = 6, MAX_FIELDS = 32 };
enum { PICK_TOPIC, PICK_QUEUE_ID, PICK_FLAG, PICK_PROPERTIES, PICK_SYS_FLAG, PICK_BORN, PICK_RECONSUME, PICK_BATCH,
       PICKS };
enum { CONTEXT_ITEMS = 6, PUT_FIELDS = 12 };
#define SAFE_INT32_DIGITS 9  /* the table's safe digits of an int field; a long's are 18 */
#define MAX_ENTRIES 64       /* more properties than this: the pure function */

#define NAME_VALUE_SEP 0x01
#define ENTRY_SEP 0x02

/* An ASCII text of a Java int/long: an optional sign, then digits, within [low, high]: 1 and
 * the value in *out; anything else (non-ASCII digits, out of range, empty): 0. */
static int java_integer(PyObject *raw, long long low, long long high, long long *out)
{
    const char *text;
    Py_ssize_t length, i = 0;
    unsigned long long value = 0, limit;
    int negative = 0;
    if (!PyUnicode_IS_ASCII(raw))
        return 0;
    text = (const char *)PyUnicode_DATA(raw);
    length = PyUnicode_GET_LENGTH(raw);
    if (length > 0 && (text[0] == '+' || text[0] == '-'))
        negative = text[i++] == '-';
    if (i == length)
        return 0;
    limit = negative ? (unsigned long long)(-(low + 1)) + 1 : (unsigned long long)high;
    for (; i < length; i++) {
        unsigned digit = (unsigned)(text[i] - '0');
        if (digit > 9 || value > (limit - digit) / 10)
            return 0;
        value = value * 10 + digit;
    }
    *out = negative ? (value == 0 ? 0 : -(long long)(value - 1) - 1) : (long long)value;
    return 1;
}

/* Java's Boolean.parseBoolean of a str: "true" in any case. */
static PyObject *java_boolean(PyObject *raw)
{
    const char *want = "true";
    if (PyUnicode_GET_LENGTH(raw) != 4)
        Py_RETURN_FALSE;
    for (Py_ssize_t i = 0; i < 4; i++) {
        Py_UCS4 ch = PyUnicode_READ_CHAR(raw, i);
        if (ch != (Py_UCS4)want[i] && ch != (Py_UCS4)(want[i] - 'a' + 'A'))
            Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
}

/* Is ``key`` (an exact str of hash ``hash``) the table's key ``want`` (an exact str)? As the
 * dict's own lookup decides for exact str keys: the same object, or equal hashes and text. */
static int same_key(PyObject *want, PyObject *key, Py_hash_t hash)
{
    Py_ssize_t length;
    Py_hash_t cached;
    if (want == key)
        return 1;
    length = PyUnicode_GET_LENGTH(want);
    cached = ((PyASCIIObject *)want)->hash;  /* (a str's hash, once computed, is kept in it) */
    return (cached != -1 ? cached : PyObject_Hash(want)) == hash && PyUnicode_GET_LENGTH(key) == length
        && PyUnicode_KIND(want) == PyUnicode_KIND(key)
        && memcmp(PyUnicode_DATA(want), PyUnicode_DATA(key), (size_t)(length * PyUnicode_KIND(want))) == 0;
}

/* The ext's value of each of the table's keys into raw[] (borrowed, NULL: absent), by one walk
 * over the ext (every key an exact str; a producer writes the fields in the table's order, so
 * the next field is tried first): the number found, -1 when a key is not a field's and
 * ``whole`` (V2: the pure parser reads other keys), -2 for a key of another kind (then the
 * table's keys are looked up one by one, as the dict does for them). */
static Py_ssize_t walk_ext(PyObject *ext, PyObject *table, int whole, PyObject **raw)
{
    Py_ssize_t count = PyTuple_GET_SIZE(table), pos = 0, next = 0, found = 0;
    PyObject *key, *value;
    for (Py_ssize_t i = 0; i < count; i++)
        raw[i] = NULL;
    Py_hash_t hash;
    while (_PyDict_Next(ext, &pos, &key, &value, &hash)) {  /* (with the hash the dict keeps of each key) */
        Py_ssize_t i, tried;
        if (!PyUnicode_CheckExact(key))
            return -2;
        for (i = next, tried = 0; tried < count; tried++, i = i + 1 == count ? 0 : i + 1) {
            if (same_key(PyTuple_GET_ITEM(PyTuple_GET_ITEM(table, i), 1), key, hash))
                break;
        }
        if (tried == count) {  /* not a field's key */
            if (whole)
                return -1;
            continue;
        }
        raw[i] = value;  /* (keys are distinct: each field found once) */
        found++;
        next = i + 1 == count ? 0 : i + 1;
    }
    return found;
}

/* The header's fields (new references into values[]), 1; 0 when the pure function decides. */
static int header_fields(PyObject *ext, PyObject *table, int whole, PyObject **values)
{
    Py_ssize_t count = PyTuple_GET_SIZE(table), found;
    PyObject *raws[MAX_FIELDS];
    for (Py_ssize_t i = 0; i < count; i++) {  /* the table's shape (str keys), before any value is read */
        PyObject *spec = PyTuple_GET_ITEM(table, i);
        if (!PyTuple_CheckExact(spec) || PyTuple_GET_SIZE(spec) != SPEC_ITEMS
                || !PyUnicode_CheckExact(PyTuple_GET_ITEM(spec, 1)))
            return 0;
    }
    found = walk_ext(ext, table, whole, raws);
    if (found == -1)
        return 0;
    if (found == -2) {  /* an odd key: each field's key looked up by the dict */
        found = 0;
        for (Py_ssize_t i = 0; i < count; i++) {
            raws[i] = PyDict_GetItemWithError(ext, PyTuple_GET_ITEM(PyTuple_GET_ITEM(table, i), 1));
            if (raws[i] == NULL && PyErr_Occurred())
                return 0;
            found += raws[i] != NULL;
        }
    }
    if (whole && found != PyDict_GET_SIZE(ext))
        return 0;  /* (keys are distinct) no key but the fields' */
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *spec = PyTuple_GET_ITEM(table, i), *raw = raws[i];
        long kind;
        long long number, low, high;
        kind = PyLong_AsLong(PyTuple_GET_ITEM(spec, 2));
        if (raw != NULL && raw != Py_None && !PyUnicode_CheckExact(raw))
            return 0;
        if (raw == NULL || raw == Py_None || (kind == KIND_INT && PyUnicode_GET_LENGTH(raw) == 0)) {
            if (PyTuple_GET_ITEM(spec, 3) == Py_True)
                return 0;  /* a required field missing: HeaderError in the pure parser */
            values[i] = Py_NewRef(PyTuple_GET_ITEM(spec, 4));
        } else if (kind == KIND_STR) {
            values[i] = Py_NewRef(raw);
        } else if (kind == KIND_BOOL) {
            values[i] = java_boolean(raw);
        } else {
            int int32 = PyLong_AsLong(PyTuple_GET_ITEM(spec, 5)) == SAFE_INT32_DIGITS;
            low = int32 ? RQ_INT32_MIN : RQ_INT64_MIN;
            high = int32 ? RQ_INT32_MAX : RQ_INT64_MAX;
            if (!java_integer(raw, low, high, &number))
                return 0;
            values[i] = PyLong_FromLongLong(number);
            if (values[i] == NULL)
                return 0;
        }
    }
    return 1;
}

/* Does text[start, start + length) read ``name`` (ASCII)? Inline: the compiler folds the
 * length of each literal name, so most names are told apart by their length alone. */
static inline int name_is(int kind, const void *data, Py_ssize_t start, Py_ssize_t length, const char *name)
{
    if ((size_t)length != strlen(name))
        return 0;
    for (Py_ssize_t i = 0; i < length; i++)
        if (PyUnicode_READ(kind, data, start + i) != (Py_UCS4)(unsigned char)name[i])
            return 0;
    return 1;
}

typedef struct {
    Py_ssize_t tags[2], uniq[2], keys[2];  /* a value's [start, end), start -1: absent */
    int cluster;
} Wanted;

/* One pass over canonical properties text: 1 with what the put needs in *wanted; 0 when the
 * pure function decides (not canonical, TRAN_MSG, DELAY, too many entries). */
static int scan_properties(PyObject *text, Wanted *wanted)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), start = 0, names[MAX_ENTRIES][2], entries = 0;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    wanted->tags[0] = wanted->uniq[0] = wanted->keys[0] = -1;
    wanted->cluster = 0;
    if (n > 0 && PyUnicode_READ(kind, data, n - 1) != ENTRY_SEP)
        return 0;  /* the last entry does not end with \x02 */
    while (start < n) {
        Py_ssize_t sep = -1, end = start, name_len;
        for (; end < n; end++) {
            Py_UCS4 ch = PyUnicode_READ(kind, data, end);
            if (ch == ENTRY_SEP)
                break;
            if (ch == NAME_VALUE_SEP) {
                if (sep >= 0)
                    return 0;  /* \x01 in a value */
                sep = end;
            }
        }
        if (sep <= start || entries == MAX_ENTRIES)
            return 0;  /* an empty entry, no separator, an empty name */
        name_len = sep - start;
        for (Py_ssize_t i = 0; i < entries; i++)
            if (names[i][1] == name_len
                    && memcmp((const char *)data + names[i][0] * kind, (const char *)data + start * kind,
                              (size_t)(name_len * kind)) == 0)
                return 0;  /* a name twice */
        names[entries][0] = start;
        names[entries][1] = name_len;
        entries++;
        if (name_is(kind, data, start, name_len, "TRAN_MSG") || name_is(kind, data, start, name_len, "DELAY"))
            return 0;
        Py_ssize_t *slot = name_is(kind, data, start, name_len, "TAGS") ? wanted->tags
                           : name_is(kind, data, start, name_len, "UNIQ_KEY") ? wanted->uniq
                           : name_is(kind, data, start, name_len, "KEYS") ? wanted->keys : NULL;
        if (slot != NULL) {
            slot[0] = sep + 1;
            slot[1] = end;
        }
        wanted->cluster |= name_is(kind, data, start, name_len, "CLUSTER");
        start = end + 1;
    }
    return 1;
}

static PyObject *value_of(PyObject *text, const Py_ssize_t *span)
{
    return span[0] < 0 ? Py_NewRef(Py_None) : PyUnicode_Substring(text, span[0], span[1]);
}

/* The tag code: Java's hashCode of TAGS, 0 without one; NULL without an exception: the pure
 * function (a lone surrogate). */
static PyObject *tag_code(PyObject *tags)
{
    uint32_t hash;
    if (tags == Py_None || PyUnicode_GET_LENGTH(tags) == 0)
        return PyLong_FromLong(0);
    if (rq_java_hash(tags, &hash, NULL) < 0)
        return NULL;
    return PyLong_FromLong((long)(int32_t)hash);
}

/* The table index of a picked field (picks_valid checked them all). */
static Py_ssize_t pick(PyObject *context, int which)
{
    return PyLong_AsSsize_t(PyTuple_GET_ITEM(PyTuple_GET_ITEM(context, 5), which));
}

static PyObject *put_request(PyObject *context, PyObject *const *args, PyObject **fields, const Wanted *wanted,
                             PyObject *text)
{
    PyObject *tags = NULL, *uniq = NULL, *keys = NULL, *tag = NULL, *hint = NULL, *stored = NULL, *out = NULL;
    PyObject *zero = PyTuple_GET_ITEM(PyTuple_GET_ITEM(context, 5), PICKS);
    PyObject *reconsume = fields[pick(context, PICK_RECONSUME)];
    tags = value_of(text, wanted->tags);
    uniq = value_of(text, wanted->uniq);
    keys = value_of(text, wanted->keys);
    if (tags == NULL || uniq == NULL || keys == NULL)
        goto done;
    tag = tag_code(tags);
    if (tag == NULL)
        goto done;
    hint = PyTuple_Pack(2, uniq, keys);
    stored = wanted->cluster ? Py_NewRef(text) : PyUnicode_Concat(text, args[3]);
    if (hint == NULL || stored == NULL)
        goto done;
    if (reconsume == Py_None)  /* ``header.reconsume_times or 0`` */
        reconsume = zero;
    {
        /* PutRequest's twelve fields in order, as SendHandlers._records gives them */
        PyObject *put[PUT_FIELDS] = {
            fields[pick(context, PICK_TOPIC)], fields[pick(context, PICK_QUEUE_ID)], args[2],
            fields[pick(context, PICK_FLAG)], stored, fields[pick(context, PICK_SYS_FLAG)],
            fields[pick(context, PICK_BORN)], args[4], reconsume, zero, tag, hint};
        out = PyObject_Vectorcall(PyTuple_GET_ITEM(context, 0), put, PUT_FIELDS, NULL);
    }
done:
    Py_XDECREF(tags);
    Py_XDECREF(uniq);
    Py_XDECREF(keys);
    Py_XDECREF(tag);
    Py_XDECREF(hint);
    Py_XDECREF(stored);
    return out;
}

/* picks: PICKS exact ints, each a table index, then the int 0 (the default of reconsumeTimes
 * and prepared_transaction_offset) */
static int picks_valid(PyObject *picks, Py_ssize_t fields)
{
    long long index;
    if (!PyTuple_CheckExact(picks) || PyTuple_GET_SIZE(picks) != PICKS + 1)
        return 0;
    for (int i = 0; i < PICKS; i++)
        if (!rq_int_in(PyTuple_GET_ITEM(picks, i), 0, fields - 1, &index))
            return 0;
    return PyLong_CheckExact(PyTuple_GET_ITEM(picks, PICKS));
}

PyObject *rq_py_plain_put(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *table, *values[MAX_FIELDS] = {NULL}, *properties, *out = NULL;
    Py_ssize_t count = 0, at;
    long long code, v1, v2;
    Wanted wanted;
    if (nargs != 5 || PyTuple_GET_SIZE(context) != CONTEXT_ITEMS || !PyDict_CheckExact(args[1])
            || !PyUnicode_CheckExact(args[3]) || !rq_int_in(args[0], RQ_INT64_MIN, RQ_INT64_MAX, &code)
            || !rq_int_in(PyTuple_GET_ITEM(context, 1), RQ_INT64_MIN, RQ_INT64_MAX, &v1)
            || !rq_int_in(PyTuple_GET_ITEM(context, 3), RQ_INT64_MIN, RQ_INT64_MAX, &v2) || (code != v1 && code != v2))
        return rq_fallback(fallback, args, nargs);
    table = PyTuple_GET_ITEM(context, code == v2 ? 4 : 2);
    if (!PyTuple_CheckExact(table) || PyTuple_GET_SIZE(table) > MAX_FIELDS
            || !picks_valid(PyTuple_GET_ITEM(context, 5), PyTuple_GET_SIZE(table)))
        return rq_fallback(fallback, args, nargs);
    count = PyTuple_GET_SIZE(table);
    /* V2's short names alone (the pure parser reads other keys: long names, ACL fields) */
    if (!header_fields(args[1], table, code == v2, values) || values[pick(context, PICK_BATCH)] != Py_False)
        goto pure;  /* a header the pure parser decides on, or batch=true */
    at = pick(context, PICK_PROPERTIES);
    if (values[at] == Py_None) {  /* ``header.properties or ""`` */
        Py_SETREF(values[at], PyUnicode_New(0, 0));
        if (values[at] == NULL)
            goto pure;
    }
    properties = values[at];
    if (!PyUnicode_CheckExact(properties) || !scan_properties(properties, &wanted))
        goto pure;
    out = put_request(context, args, values, &wanted, properties);
pure:
    for (Py_ssize_t i = 0; i < count; i++)
        Py_XDECREF(values[i]);
    if (out != NULL || (PyErr_Occurred() && PyErr_ExceptionMatches(PyExc_MemoryError)))
        return out;
    PyErr_Clear();
    return rq_fallback(fallback, args, nargs);
}
