/* A consumer's FOUND pull answer read in place, from the frame in the read that brought it.
 *
 * found_answer_at(data, pos, max_frame) -> (opaque, end) or None
 * found_pulled(data, pos, end, cls) -> (nextBeginOffset, suggestWhichBrokerId, messages) or None
 *
 * The general path (rocketq/client/pulltasks.py ``PullTask._take``) decodes the frame into a
 * RemotingCommand (``orjson`` dict of the header, extFields dict, a copy of the body), reads
 * the header's four fields into a PullMessageResponseHeader (``wire.pull_header``), then the
 * body's records (``pulling.found_messages``, i.e. ``decode_pulled`` stamped with the queue's
 * MIN_OFFSET and MAX_OFFSET). That path is the reference; here the same result is read from
 * the bytes without any of those objects, for the plain answer a broker writes:
 *
 * - a whole frame of at most ``max_frame`` bytes after its length field, with a JSON header
 *   (serialize type 0) and a body of at least one byte;
 * - the header an object without white space whose strings are printable ASCII without
 *   escapes; ``code`` 0 (SUCCESS), ``flag`` with the RESPONSE bit, ``opaque``, ``version``
 *   int32 JSON integers; other members strings, integers of up to 18 digits, true, false or
 *   null; ``extFields`` once, an object of strings in which nextBeginOffset, minOffset,
 *   maxOffset and suggestWhichBrokerId each occur once as canonical decimals within a Java
 *   long (``-?(0|[1-9][0-9]*)``, not ``-0``: the text is then exactly ``str`` of the value,
 *   which is what the stamps hold);
 * - every record of the body one the C record decoder takes (``rq_decode_at``, as
 *   ``decode_pulled``: a compressed or malformed record is the pure decoder's).
 *
 * Anything else is None, without an exception: the caller then takes the general path, which
 * reads or rejects the frame as it always did (every frame accepted here is one the general
 * path accepts, with the same values: tests/client/test_pullanswer.py, hypothesis). Tag
 * filtering stays with the caller (``pulling.found_at``).
 */
#include "rocketq_native.h"

enum {
    FRAME_HEAD = 8,          /* length field, serialize type and header length */
    HEADER_LENGTH_MASK = 0xFFFFFF,
    RESPONSE_FLAG = 1,
    SUCCESS = 0,
    OTHER_INT_DIGITS = 18,   /* an integer of another member: surely within orjson's range */
    LONG_DIGITS = 19,
};

/* The four fields of a PullMessageResponseHeader, in this order. */
enum { F_NEXT, F_MIN, F_MAX, F_SUGGEST, PULL_FIELDS };

static const struct {
    const char *name;
    Py_ssize_t length;
} PULL_NAMES[PULL_FIELDS] = {
    {"nextBeginOffset", 15}, {"minOffset", 9}, {"maxOffset", 9}, {"suggestWhichBrokerId", 20},
};

typedef struct {
    long long opaque;
    long long value[PULL_FIELDS];
    const char *text[PULL_FIELDS];  /* each field's digits in the header (NULL: not seen) */
    Py_ssize_t text_length[PULL_FIELDS];
    Py_ssize_t body, end;           /* the body's start and the frame's end, within data */
} Found;

typedef struct {
    const unsigned char *at, *end;
} Scan;

/* Bytes a string read here may hold: printable ASCII but the quote and the backslash. */
static unsigned char plain[256];

static void fill_plain(void)
{
    if (plain['a'])
        return;
    for (int b = 0x20; b <= 0x7E; b++)
        plain[b] = b != '"' && b != '\\';
}

static int take(Scan *s, unsigned char c)
{
    if (s->at >= s->end || *s->at != c)
        return 0;
    s->at++;
    return 1;
}

/* A plain JSON string: its content at *start, *length bytes; 0 if not one. */
static int string_at(Scan *s, const unsigned char **start, Py_ssize_t *length)
{
    const unsigned char *p;
    if (!take(s, '"'))
        return 0;
    p = s->at;
    while (p < s->end && plain[*p])
        p++;
    if (p >= s->end || *p != '"')
        return 0;
    *start = s->at;
    *length = p - s->at;
    s->at = p + 1;
    return 1;
}

/* A JSON integer (``-?(0|[1-9][0-9]*)``) of at most ``max_digits`` digits: 1 with *value (as
 * a magnitude and a sign folded in), else 0. max_digits <= 18 cannot overflow. */
static int int_at(Scan *s, int max_digits, long long *value)
{
    int negative = take(s, '-'), digits = 0;
    long long result = 0;
    while (s->at < s->end && *s->at >= '0' && *s->at <= '9') {
        if (++digits > max_digits || (digits == 2 && result == 0))
            return 0;  /* too long, or a leading zero (not JSON) */
        result = result * 10 + (*s->at++ - '0');
    }
    if (digits == 0)
        return 0;
    *value = negative ? -result : result;
    return 1;
}

static int int32_at(Scan *s, long long *value)
{
    return int_at(s, 10, value) && *value >= RQ_INT32_MIN && *value <= RQ_INT32_MAX;
}

static int word_at(Scan *s, const char *word, Py_ssize_t length)
{
    if (s->end - s->at < length || memcmp(s->at, word, (size_t)length) != 0)
        return 0;
    s->at += length;
    return 1;
}

/* A member's value whose content does not matter: a string, a short integer, a literal. */
static int skip_at(Scan *s)
{
    const unsigned char *start;
    Py_ssize_t length;
    long long ignored;
    if (s->at >= s->end)
        return 0;
    switch (*s->at) {
    case '"': return string_at(s, &start, &length);
    case 't': return word_at(s, "true", 4);
    case 'f': return word_at(s, "false", 5);
    case 'n': return word_at(s, "null", 4);
    default: return int_at(s, OTHER_INT_DIGITS, &ignored);
    }
}

/* A Java long written canonically (the text ``str`` makes of its value): 1 with *value. */
static int long_text(const unsigned char *text, Py_ssize_t length, long long *value)
{
    int negative = length > 0 && text[0] == '-';
    unsigned long long magnitude = 0, limit = negative ? (unsigned long long)RQ_INT64_MAX + 1 : RQ_INT64_MAX;
    Py_ssize_t i = negative, digits = length - negative;
    if (digits < 1 || digits > LONG_DIGITS || (text[i] == '0' && (digits > 1 || negative)))
        return 0;  /* empty, too long, a leading zero or -0 */
    for (; i < length; i++) {
        if (text[i] < '0' || text[i] > '9')
            return 0;
        magnitude = magnitude * 10 + (unsigned long long)(text[i] - '0');  /* 19 digits fit 64 bits */
    }
    if (magnitude > limit)
        return 0;
    *value = negative ? (long long)(0ULL - magnitude) : (long long)magnitude;
    return 1;
}

/* extFields: an object of plain strings, the four pull fields read into *found. */
static int ext_at(Scan *s, Found *found)
{
    const unsigned char *key, *value;
    Py_ssize_t key_length, value_length;
    if (!take(s, '{'))
        return 0;
    if (take(s, '}'))
        return 1;
    do {
        if (!string_at(s, &key, &key_length) || !take(s, ':') || !string_at(s, &value, &value_length))
            return 0;
        for (int i = 0; i < PULL_FIELDS; i++) {
            if (PULL_NAMES[i].length != key_length || memcmp(PULL_NAMES[i].name, key, (size_t)key_length) != 0)
                continue;
            if (found->text[i] != NULL || !long_text(value, value_length, &found->value[i]))
                return 0;  /* twice (the general path keeps the last), or not a plain long */
            found->text[i] = (const char *)value;
            found->text_length[i] = value_length;
            break;
        }
    } while (take(s, ','));
    return take(s, '}');
}

#define KEY_IS(word) (key_length == (Py_ssize_t)sizeof(word) - 1 && memcmp(key, word, sizeof(word) - 1) == 0)

/* The header (all of the scan): 1 when it is a plain FOUND answer's, else 0. */
static int header_at(Scan *s, Found *found)
{
    long long code = -1, flag = 0, ignored;
    int seen_code = 0, seen_flag = 0, seen_opaque = 0, seen_ext = 0;
    const unsigned char *key;
    Py_ssize_t key_length;
    if (!take(s, '{'))
        return 0;
    do {
        int good;
        if (!string_at(s, &key, &key_length) || !take(s, ':'))
            return 0;
        /* a member twice: the general path keeps the last; only a plain header is read here */
        if (KEY_IS("code"))
            good = !seen_code++ && int32_at(s, &code);
        else if (KEY_IS("flag"))
            good = !seen_flag++ && int32_at(s, &flag);
        else if (KEY_IS("opaque"))
            good = !seen_opaque++ && int32_at(s, &found->opaque);
        else if (KEY_IS("version"))
            good = int32_at(s, &ignored);
        else if (KEY_IS("extFields"))
            good = !seen_ext++ && ext_at(s, found);
        else
            good = skip_at(s);
        if (!good)
            return 0;
    } while (take(s, ','));
    if (!take(s, '}') || s->at != s->end || code != SUCCESS || !(flag & RESPONSE_FLAG))
        return 0;
    for (int i = 0; i < PULL_FIELDS; i++)
        if (found->text[i] == NULL)
            return 0;
    return 1;
}

#undef KEY_IS

/* The plain FOUND answer whose frame starts at data[pos]: 1 with *found filled, else 0. */
static int found_at(PyObject *data, Py_ssize_t pos, Py_ssize_t max_frame, Found *found)
{
    const unsigned char *p;
    Py_ssize_t size = PyBytes_GET_SIZE(data), header_length;
    long long length;
    Scan s;
    if (pos < 0 || size - pos < FRAME_HEAD)
        return 0;
    p = (const unsigned char *)PyBytes_AS_STRING(data) + pos;  /* (in bounds: checked first) */
    length = (long long)rq_get_i32(p);
    header_length = (Py_ssize_t)(rq_get_i32(p + 4) & HEADER_LENGTH_MASK);
    if (length < 4 || length > max_frame || size - pos - 4 < length || p[4] != 0
            || header_length >= length - 4)
        return 0;  /* incomplete, too long, the binary header, or no body */
    memset(found, 0, sizeof(*found));
    fill_plain();
    s.at = p + FRAME_HEAD;
    s.end = s.at + header_length;
    if (!header_at(&s, found))
        return 0;
    found->body = pos + FRAME_HEAD + header_length;
    found->end = pos + 4 + (Py_ssize_t)length;
    return 1;
}

/* args as (bytes, non-negative int, non-negative int): 1 with the two ints, else 0. */
static int frame_args(PyObject *const *args, Py_ssize_t *pos, Py_ssize_t *other)
{
    if (!PyBytes_CheckExact(args[0]) || !PyLong_CheckExact(args[1]) || !PyLong_CheckExact(args[2]))
        return 0;
    *pos = PyLong_AsSsize_t(args[1]);
    *other = PyLong_AsSsize_t(args[2]);
    if (*pos < 0 || *other < 0) {
        PyErr_Clear();
        return 0;
    }
    return 1;
}

/* The answer ``found_answer_at`` read last, for the ``found_pulled`` of the same frame that
 * follows it (the connection calls one, then the waiter the other): that call takes it instead
 * of reading the header a second time. ``data`` holds the (immutable) bytes the spans point
 * into, until ``found_pulled`` or the next ``found_answer_at`` lets it go. */
static struct {
    PyObject *data;
    Py_ssize_t pos;
    Found found;
} last;

/* A tuple of the given new references (NULL when one is NULL: the others let go). */
static PyObject *tuple_of(PyObject *const *items, Py_ssize_t count)
{
    PyObject *tuple = NULL;
    for (Py_ssize_t i = 0; i < count; i++)
        if (items[i] == NULL)
            goto fail;
    if ((tuple = PyTuple_New(count)) == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < count; i++)
        PyTuple_SET_ITEM(tuple, i, items[i]);
    return tuple;
fail:
    for (Py_ssize_t i = 0; i < count; i++)
        Py_XDECREF(items[i]);
    return NULL;
}

PyObject *rq_found_answer_at(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t pos, max_frame;
    Found found;
    PyObject *items[2];
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "found_answer_at takes 3 arguments");
        return NULL;
    }
    if (!frame_args(args, &pos, &max_frame) || !found_at(args[0], pos, max_frame, &found))
        Py_RETURN_NONE;
    Py_XSETREF(last.data, Py_NewRef(args[0]));
    last.pos = pos;
    last.found = found;
    items[0] = PyLong_FromLongLong(found.opaque);
    items[1] = PyLong_FromSsize_t(found.end);
    return tuple_of(items, 2);
}

static PyObject *min_offset_name, *max_offset_name;

/* {MIN_OFFSET: minOffset's text, MAX_OFFSET: maxOffset's text}, what ``stamped_messages`` stamps. */
static PyObject *stamps_of(const Found *found)
{
    PyObject *stamps, *min_text, *max_text;
    if (min_offset_name == NULL && ((min_offset_name = PyUnicode_InternFromString("MIN_OFFSET")) == NULL
            || (max_offset_name = PyUnicode_InternFromString("MAX_OFFSET")) == NULL))
        return NULL;
    min_text = PyUnicode_FromStringAndSize(found->text[F_MIN], found->text_length[F_MIN]);
    max_text = PyUnicode_FromStringAndSize(found->text[F_MAX], found->text_length[F_MAX]);
    stamps = min_text != NULL && max_text != NULL ? PyDict_New() : NULL;
    if (stamps != NULL && (PyDict_SetItem(stamps, min_offset_name, min_text) < 0
            || PyDict_SetItem(stamps, max_offset_name, max_text) < 0))
        Py_CLEAR(stamps);
    Py_XDECREF(min_text);
    Py_XDECREF(max_text);
    return stamps;
}

/* Every record of the body as a ``cls``, stamped; NULL without an exception for the pure path. */
static PyObject *records_of(PyObject *data, const Found *found, PyObject *cls)
{
    const unsigned char *body = (const unsigned char *)PyBytes_AS_STRING(data) + found->body;
    Py_ssize_t limit = found->end - found->body, pos = 0, end = 0;
    PyObject *stamps = stamps_of(found), *records;
    if (stamps == NULL)
        return NULL;
    records = PyList_New(0);
    while (records != NULL && pos < limit) {
        PyObject *record = rq_decode_at(body, limit, pos, 1, 0, cls, stamps, &end);
        if (record == NULL || PyList_Append(records, record) < 0)
            Py_CLEAR(records);
        Py_XDECREF(record);
        pos = end;
    }
    Py_DECREF(stamps);
    return records;
}

PyObject *rq_found_pulled(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t pos, end;
    Found found;
    PyObject *items[3];
    int known;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "found_pulled takes 4 arguments");
        return NULL;
    }
    if (!frame_args(args, &pos, &end) || end < pos)
        Py_RETURN_NONE;
    known = last.data == args[0] && last.pos == pos && last.found.end == end;
    if (known)
        found = last.found;  /* found_answer_at read this very frame, and its bytes are still held */
    else if (!found_at(args[0], pos, end - pos - 4, &found) || found.end != end)
        Py_RETURN_NONE;  /* the frame must be exactly data[pos:end] */
    items[2] = records_of(args[0], &found, args[3]);
    if (known)
        Py_CLEAR(last.data);  /* the spans are not used after this */
    if (items[2] == NULL)
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    items[0] = PyLong_FromLongLong(found.value[F_NEXT]);
    items[1] = PyLong_FromLongLong(found.value[F_SUGGEST]);
    return tuple_of(items, 3);
}
