/* The producer's per-send work in C: the unique key stamped into a message's properties and
 * the properties text made in one call (rocketq/client/sending.py, ``stamp_unique_key``).
 *
 * ``stamp_unique_key(props, key, limit)`` sets ``props["UNIQ_KEY"] = key`` (an existing entry
 * keeps its place in the dict, a new one is the last) and returns ``encode_properties`` of the
 * stamped map. Anything unusual (not an exact dict of exact strs, an empty name, a separator
 * in a name or value, text that may be over ``limit`` UTF-8 bytes) puts the map back as it was
 * and goes to the pure function, which refuses (or accepts) it as it always did.
 *
 * ``next_unique_key(ids)`` (rocketq/protocol/msgid.py) is a generator's ``next_id`` in one call;
 * ``prepare(msg, settings)`` (at the end of this file) does both, with the checks and the
 * Outgoing, for a plain message.
 */
#include "rocketq_native.h"

#include <string.h>
#include <time.h>

static PyObject *uniq_key_name;  /* "UNIQ_KEY", interned once */

/* props[UNIQ_KEY] as it was: ``previous`` (a new reference) or, when NULL, no entry. */
static int restore(PyObject *props, PyObject *previous)
{
    int status;
    if (previous != NULL) {
        status = PyDict_SetItem(props, uniq_key_name, previous);
        Py_DECREF(previous);
        return status;
    }
    return PyDict_DelItem(props, uniq_key_name);
}

/* True when the text's UTF-8 form is surely within ``limit`` bytes (4 bytes per character at
 * most); an ASCII text is measured exactly. */
static int surely_within(PyObject *text, Py_ssize_t limit)
{
    Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    return PyUnicode_IS_ASCII(text) ? length <= limit : length <= limit / 4;
}

PyObject *rq_py_stamp_unique_key(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *props, *previous, *text;
    Py_ssize_t limit;
    if (nargs != 3 || !PyDict_CheckExact(args[0]) || !PyUnicode_CheckExact(args[1]) || !PyLong_CheckExact(args[2]))
        return rq_fallback(fallback, args, nargs);
    limit = PyLong_AsSsize_t(args[2]);
    if (limit < 0) {
        PyErr_Clear();
        return rq_fallback(fallback, args, nargs);
    }
    if (uniq_key_name == NULL && (uniq_key_name = PyUnicode_InternFromString("UNIQ_KEY")) == NULL)
        return NULL;
    props = args[0];
    previous = PyDict_GetItemWithError(props, uniq_key_name);  /* exact str keys: no Python code runs */
    if (previous == NULL && PyErr_Occurred())
        return NULL;
    Py_XINCREF(previous);
    if (PyDict_SetItem(props, uniq_key_name, args[1]) < 0) {
        Py_XDECREF(previous);
        return NULL;
    }
    text = rq_encode_properties(props);
    if (text != NULL && surely_within(text, limit)) {
        Py_XDECREF(previous);
        return text;
    }
    if (text == NULL && PyErr_Occurred()) {
        Py_XDECREF(previous);
        return NULL;
    }
    Py_XDECREF(text);
    if (restore(props, previous) < 0)
        return NULL;
    return rq_fallback(fallback, args, nargs);
}

/* ``answer_result(ext, status, msg_id, mq)``: the SendResult of a stored send's answer, read
 * straight from the answer's extFields (msgId, queueId, queueOffset, MSG_REGION) without the
 * SendMessageResponseHeader in between. The fast case is the answer every broker sends: msgId
 * present, queueId the queue the request named (plain digits), queueOffset plain digits;
 * anything else (another queue, a sign, an empty or missing field, ...) goes to the pure
 * function, which parses the header as ``from_ext`` does and raises its HeaderError.
 *
 * context: (SendResult, its field names in order)
 */
enum { INT_DIGITS = 9, LONG_DIGITS = 18, RESULT_FIELDS = 6 };

static PyObject *msg_id_key, *queue_id_key, *queue_offset_key, *region_key, *queue_id_attr, *empty_tuple;

/* raw's value if it is an exact str of 1..max_digits ASCII digits, else -1. */
static long long plain_digits(PyObject *raw, Py_ssize_t max_digits)
{
    Py_ssize_t length;
    const char *text;
    long long value = 0;
    if (raw == NULL || !PyUnicode_CheckExact(raw) || !PyUnicode_IS_ASCII(raw))
        return -1;
    length = PyUnicode_GET_LENGTH(raw);
    if (length == 0 || length > max_digits)
        return -1;
    text = (const char *)PyUnicode_DATA(raw);
    for (Py_ssize_t i = 0; i < length; i++) {
        if (text[i] < '0' || text[i] > '9')
            return -1;
        value = value * 10 + (text[i] - '0');
    }
    return value;
}

/* Each words[i] interned into *targets[i], once: 0, or -1 on error. */
static int intern_words(PyObject **const targets[], const char *const words[], int count)
{
    for (int i = 0; i < count; i++)
        if (*targets[i] == NULL && (*targets[i] = PyUnicode_InternFromString(words[i])) == NULL)
            return -1;
    return 0;
}

static int intern_answer_names(void)
{
    static PyObject **const targets[] = {&msg_id_key, &queue_id_key, &queue_offset_key, &region_key, &queue_id_attr};
    static const char *const words[] = {"msgId", "queueId", "queueOffset", "MSG_REGION", "queue_id"};
    if (empty_tuple != NULL && queue_id_attr != NULL)
        return 0;  /* all made (queue_id_attr is the last word) */
    if (empty_tuple == NULL && (empty_tuple = PyTuple_New(0)) == NULL)
        return -1;
    return intern_words(targets, words, 5);
}

/* Where a slots class keeps some of its fields: the byte offsets of their slots in an
 * instance, learnt once per class. The class's version tag (CPython gives each state of a
 * class a new one, and 0 to a class just changed) says the table still holds. */
enum { MAX_TABLE_SLOTS = 8 };

typedef struct {
    PyTypeObject *type;  /* compared only, together with the tag */
    unsigned int tag;
    Py_ssize_t offsets[MAX_TABLE_SLOTS];
} SlotTable;

/* 1 when each of ``names`` (a tuple) is a plain object slot of ``type`` (``table`` then holds
 * their offsets), 0 when not (a property, a class attribute, too many names, no version tag). */
static int learn_slots(SlotTable *table, PyTypeObject *type, PyObject *names)
{
    Py_ssize_t count = PyTuple_GET_SIZE(names), offsets[MAX_TABLE_SLOTS];
    if (type == table->type && type->tp_version_tag == table->tag && table->tag != 0)
        return 1;
    if (count > MAX_TABLE_SLOTS)
        return 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        /* _PyType_Lookup: borrowed, from the type's lookup cache; it assigns the version tag */
        offsets[i] = rq_plain_slot_offset(type, _PyType_Lookup(type, PyTuple_GET_ITEM(names, i)));
        if (offsets[i] < 0)
            return 0;
    }
    if (type->tp_version_tag == 0)
        return 0;  /* CPython ran out of tags: nothing to tell a changed class by */
    memcpy(table->offsets, offsets, (size_t)count * sizeof(Py_ssize_t));
    table->type = type;
    table->tag = type->tp_version_tag;
    return 1;
}

#define SLOT_AT(self, offset) (*(PyObject **)((char *)(self) + (offset)))

/* An instance of the slots class ``type`` with its slots ``names`` set to ``values`` (as a
 * dataclass's __init__ sets them, without running it), or NULL on error. The slots a table
 * knows are written directly, as the member descriptors' setter would. */
static PyObject *slots_object(SlotTable *table, PyObject *type, PyObject *names, PyObject *const *values)
{
    int direct = learn_slots(table, (PyTypeObject *)type, names);
    PyObject *self = PyBaseObject_Type.tp_new((PyTypeObject *)type, empty_tuple, NULL);
    for (Py_ssize_t i = 0; self != NULL && i < PyTuple_GET_SIZE(names); i++) {
        if (direct)  /* the new instance's slots are empty (tp_alloc zero-fills them) */
            SLOT_AT(self, table->offsets[i]) = Py_NewRef(values[i]);
        else if (PyObject_GenericSetAttr(self, PyTuple_GET_ITEM(names, i), values[i]) < 0)
            Py_CLEAR(self);  /* a slot that cannot be set is an error of the table, not of the input */
    }
    return self;
}

/* obj's attributes ``names`` (a tuple) into values[] (new references): 0, or -1 on error (none
 * held). Slots a table knows are read directly; an empty slot, or another layout, the generic
 * way (which raises the AttributeError). */
static int read_slots(SlotTable *table, PyObject *obj, PyObject *names, PyObject **values)
{
    Py_ssize_t count = PyTuple_GET_SIZE(names), i;
    if (learn_slots(table, Py_TYPE(obj), names)) {
        for (i = 0; i < count && (values[i] = SLOT_AT(obj, table->offsets[i])) != NULL; i++)
            Py_INCREF(values[i]);
        if (i == count)
            return 0;
        while (--i >= 0)
            Py_DECREF(values[i]);
    }
    for (i = 0; i < count; i++) {
        if ((values[i] = PyObject_GetAttr(obj, PyTuple_GET_ITEM(names, i))) == NULL) {
            while (--i >= 0)
                Py_DECREF(values[i]);
            return -1;
        }
    }
    return 0;
}

/* raw as a C value: -1 when it is not an exact int in 0..LLONG_MAX. The overflow-reporting
 * conversion: PyLong_AsLongLong of a multi-digit int (over 2**30) goes through
 * _PyLong_AsByteArray, some 200 instructions. */
static long long natural_value(PyObject *raw)
{
    int overflow = 0;
    long long value = PyLong_CheckExact(raw) ? PyLong_AsLongLongAndOverflow(raw, &overflow) : -1;
    return value < 0 || overflow ? -1 : value;
}

/* A dict lookup by an interned str key: a borrowed value, or NULL (absent, or an error set). */
static PyObject *lookup(PyObject *ext, PyObject *key)
{
    return PyDict_GetItemWithError(ext, key);
}

/* The context (SendResult, its field names in order) as the routines here expect it. */
static int result_context_ok(PyObject *context)
{
    PyObject *names;
    if (PyTuple_GET_SIZE(context) != 2 || !PyType_Check(PyTuple_GET_ITEM(context, 0)))
        return 0;
    names = PyTuple_GET_ITEM(context, 1);
    return PyTuple_CheckExact(names) && PyTuple_GET_SIZE(names) == RESULT_FIELDS;
}

/* mq.queue_id as a C value: -1 when it is not an exact int in range, -2 on error. */
static long long queue_id_of(PyObject *mq)
{
    static SlotTable queues;
    static PyObject *names;
    PyObject *raw;
    long long value;
    if (intern_answer_names() < 0 || (names == NULL && (names = PyTuple_Pack(1, queue_id_attr)) == NULL)
            || read_slots(&queues, mq, names, &raw) < 0)
        return -2;
    value = natural_value(raw);
    Py_DECREF(raw);
    return value;
}

/* SendResult(status, msg_id, offset_msg_id, mq, queue_offset, region or None), its slots filled
 * as the frozen dataclass's __init__ fills them. */
static PyObject *new_result(PyObject *context, PyObject *status, PyObject *msg_id, PyObject *offset_msg_id,
                            PyObject *mq, long long queue_offset, PyObject *region)
{
    PyObject *values[RESULT_FIELDS], *self, *names = PyTuple_GET_ITEM(context, 1);
    values[0] = status;
    values[1] = msg_id;
    values[2] = offset_msg_id;
    values[3] = mq;
    values[4] = PyLong_FromLongLong(queue_offset);
    values[5] = region != NULL ? region : Py_None;
    if (values[4] == NULL)
        return NULL;
    static SlotTable results;
    self = slots_object(&results, PyTuple_GET_ITEM(context, 0), names, values);
    Py_DECREF(values[4]);
    return self;
}

PyObject *rq_py_answer_result(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *ext, *offset_msg_id, *region;
    long long queue_id, queue_offset, mq_queue_id;
    if (nargs != 4 || !result_context_ok(context) || !PyDict_CheckExact(args[0]))
        return rq_fallback(fallback, args, nargs);
    if (intern_answer_names() < 0)
        return NULL;
    ext = args[0];
    offset_msg_id = lookup(ext, msg_id_key);
    if (offset_msg_id == NULL || offset_msg_id == Py_None)
        return PyErr_Occurred() ? NULL : rq_fallback(fallback, args, nargs);
    queue_id = plain_digits(lookup(ext, queue_id_key), INT_DIGITS);
    queue_offset = plain_digits(lookup(ext, queue_offset_key), LONG_DIGITS);
    region = lookup(ext, region_key);
    if (PyErr_Occurred())
        return NULL;
    if (queue_id < 0 || queue_offset < 0)
        return rq_fallback(fallback, args, nargs);
    mq_queue_id = queue_id_of(args[3]);
    if (mq_queue_id == -2)
        return NULL;
    if (mq_queue_id != queue_id)  /* the broker chose another queue: the pure function builds it */
        return rq_fallback(fallback, args, nargs);
    return new_result(context, args[1], args[2], offset_msg_id, args[3], queue_offset, region);
}

/* ``send_frame_of(pieces, opaque, queue_id, sys_flag, born_timestamp, flag, properties, body)``:
 * a SEND_MESSAGE_V2 frame from its template (rocketq/client/wire.py, ``SendFrames``): the
 * length prefix, then the header's seven literal pieces with the five integers in decimal and
 * the properties as a JSON string between them, then the body; one allocation. The fast case:
 * exact ints that fit a long long, ASCII properties (escaped as orjson escapes them), an exact
 * bytes body; anything else goes to the pure function.
 */
enum { FRAME_PIECES = 7, FRAME_INTS = 5 };

/* The width of each ASCII byte in a JSON string as orjson writes it: 1 (itself), 2 (a
 * shorthand escape: \" \\ \b \t \n \f \r) or 6 (\u00XX, the other controls). Filled once. */
static unsigned char json_width[128];

static void fill_json_widths(void)
{
    if (json_width[' '] != 0)
        return;
    for (int ch = 0; ch < 128; ch++)
        json_width[ch] = ch < 0x20 ? 6 : 1;
    json_width['"'] = json_width['\\'] = json_width['\b'] = json_width['\t'] = 2;
    json_width['\n'] = json_width['\f'] = json_width['\r'] = 2;
}

/* Bytes of ``text`` (ASCII) as a JSON string's content, as orjson writes it. */
static Py_ssize_t json_escaped_length(const unsigned char *text, Py_ssize_t length)
{
    Py_ssize_t size = 0;
    fill_json_widths();
    for (Py_ssize_t i = 0; i < length; i++)
        size += json_width[text[i] & 0x7F];
    return size;
}

/* ``text`` (ASCII) as a JSON string's content at ``at``, as orjson writes it: a byte of width
 * 1 as itself (one table look-up: most bytes of a properties text), else its escape (the
 * properties' \x01 and \x02 separators are controls: \u0001, \u0002). */
static char *json_escape(char *at, const unsigned char *text, Py_ssize_t length)
{
    static const char hex[] = "0123456789abcdef";
    for (Py_ssize_t i = 0; i < length; i++) {
        unsigned char ch = text[i];
        char shorthand;
        if (json_width[ch & 0x7F] == 1) {
            *at++ = (char)ch;
            continue;
        }
        shorthand = ch == '"' ? '"' : ch == '\\' ? '\\' : ch == '\b' ? 'b' : ch == '\t' ? 't'
                  : ch == '\n' ? 'n' : ch == '\f' ? 'f' : ch == '\r' ? 'r' : 0;
        if (shorthand) {
            *at++ = '\\';
            *at++ = shorthand;
        } else {
            memcpy(at, "\\u00", 4);
            at[4] = hex[ch >> 4];
            at[5] = hex[ch & 0xF];
            at += 6;
        }
    }
    return at;
}

PyObject *rq_py_send_frame_of(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *pieces, *properties, *body, *out;
    char decimals[FRAME_INTS][RQ_DECIMAL_MAX];
    int decimal_lengths[FRAME_INTS];
    Py_ssize_t header_size, total, escaped, text_length;
    const unsigned char *text;
    char *at;
    if (nargs != 8 || !PyTuple_CheckExact(args[0]) || PyTuple_GET_SIZE(args[0]) != FRAME_PIECES
            || !PyUnicode_CheckExact(args[6]) || !PyUnicode_IS_ASCII(args[6]) || !PyBytes_CheckExact(args[7]))
        return rq_fallback(fallback, args, nargs);
    pieces = args[0];
    properties = args[6];
    body = args[7];
    header_size = 0;
    for (int i = 0; i < FRAME_PIECES; i++) {
        if (!PyBytes_CheckExact(PyTuple_GET_ITEM(pieces, i)))
            return rq_fallback(fallback, args, nargs);
        header_size += PyBytes_GET_SIZE(PyTuple_GET_ITEM(pieces, i));
    }
    for (int i = 0; i < FRAME_INTS; i++) {
        int overflow = 0;
        long long value;
        if (!PyLong_CheckExact(args[1 + i]))
            return rq_fallback(fallback, args, nargs);
        value = PyLong_AsLongLongAndOverflow(args[1 + i], &overflow);
        if (overflow || (value == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return rq_fallback(fallback, args, nargs);
        }
        decimal_lengths[i] = rq_write_decimal(decimals[i], value);
        header_size += decimal_lengths[i];
    }
    text = (const unsigned char *)PyUnicode_DATA(properties);
    text_length = PyUnicode_GET_LENGTH(properties);
    escaped = json_escaped_length(text, text_length);
    header_size += escaped + 2;
    total = 4 + header_size + PyBytes_GET_SIZE(body);
    if (total > INT32_MAX || header_size > INT32_MAX)
        return rq_fallback(fallback, args, nargs);  /* the pure function's struct.error */
    out = PyBytes_FromStringAndSize(NULL, 4 + total);
    if (out == NULL)
        return NULL;
    at = PyBytes_AS_STRING(out);
    for (int shift = 24, i = 0; i < 4; i++, shift -= 8) {
        at[i] = (char)((total >> shift) & 0xFF);
        at[4 + i] = (char)((header_size >> shift) & 0xFF);
    }
    at += 8;
    for (int i = 0; i < FRAME_PIECES; i++) {
        PyObject *piece = PyTuple_GET_ITEM(pieces, i);
        memcpy(at, PyBytes_AS_STRING(piece), PyBytes_GET_SIZE(piece));
        at += PyBytes_GET_SIZE(piece);
        if (i < FRAME_INTS) {
            memcpy(at, decimals[i], decimal_lengths[i]);
            at += decimal_lengths[i];
        } else if (i == FRAME_INTS) {
            *at++ = '"';
            at = json_escape(at, text, text_length);
            *at++ = '"';
        }
    }
    memcpy(at, PyBytes_AS_STRING(body), PyBytes_GET_SIZE(body));
    return out;
}

/* ``next_unique_key(ids)``: ``ids.next_id()`` of a msgid.UniqIdGenerator, in one C call: the
 * wall clock (CLOCK_REALTIME, as ``time.time_ns``) in milliseconds, the month's offset and the
 * counter's next value written as 12 upper-case hex digits after the generator's prefix. A
 * generator with a test clock, a clock at or past the next month's start (the boundaries are
 * recomputed in Python), or any attribute not of the expected type goes to the pure function,
 * which calls ``next_id``; the counter is advanced only on the C path's success.
 */
enum { KEY_TAIL_DIGITS = 12 };

/* The generator's fields, in the order read; its slot offsets learnt once per class (msgid.py
 * gives UniqIdGenerator __slots__: five plain slots read at their offsets, not by five
 * PyObject_GetAttr). Another layout is read the generic way by read_slots. */
enum { KEY_CLOCK, KEY_MONTH_START, KEY_NEXT_MONTH_START, KEY_PREFIX, KEY_COUNTER, KEY_FIELDS };

static PyObject *key_field_names;
static SlotTable generators;

/* value as a C long long: 0 and *ok = 0 when it is not an exact int in range. */
static long long long_value(PyObject *value, int *ok)
{
    long long result;
    int overflow = 0;
    if (!PyLong_CheckExact(value)) {
        *ok = 0;
        return 0;
    }
    result = PyLong_AsLongLongAndOverflow(value, &overflow);  /* see natural_value */
    if (overflow)
        *ok = 0;
    return result;
}

static int wall_clock_ms(long long *now)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return -1;
    *now = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    return 0;
}

/* The counter's next value & 0xFFFF (the low 16 bits of its two's complement, as Python's &),
 * or -1 with the error next() would raise. */
static long long next_count(PyObject *counter)
{
    PyObject *next = PyIter_Next(counter);
    unsigned long long count;
    if (next == NULL || !PyLong_Check(next)) {
        if (next == NULL && !PyErr_Occurred())
            PyErr_SetNone(PyExc_StopIteration);  /* what next() of an ended counter raises */
        Py_XDECREF(next);
        return -1;
    }
    count = PyLong_AsUnsignedLongLongMask(next);
    Py_DECREF(next);
    if (count == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    return (long long)(count & 0xFFFFULL);
}

PyObject *rq_py_next_unique_key(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs)
{
    static const char HEX[] = "0123456789ABCDEF";
    PyObject *fields[KEY_FIELDS], *prefix, *key = NULL;
    long long month_start, next_month_start, now, count;
    unsigned long long tail;
    Py_ssize_t length;
    Py_UCS1 *out;
    int ok = 1;
    (void)context;
    if (nargs != 1)
        return rq_fallback(fallback, args, nargs);
    if (key_field_names == NULL && (key_field_names = Py_BuildValue(
            "(sssss)", "_clock_ms", "_month_start", "_next_month_start", "_prefix", "_counter")) == NULL)
        return NULL;
    if (read_slots(&generators, args[0], key_field_names, fields) < 0) {
        PyErr_Clear();  /* not a generator's layout: the pure function says what is wrong */
        return rq_fallback(fallback, args, nargs);
    }
    month_start = long_value(fields[KEY_MONTH_START], &ok);
    next_month_start = long_value(fields[KEY_NEXT_MONTH_START], &ok);
    prefix = fields[KEY_PREFIX];
    if (fields[KEY_CLOCK] != Py_None || !ok || !PyUnicode_CheckExact(prefix) || !PyUnicode_IS_ASCII(prefix)
            || !PyIter_Check(fields[KEY_COUNTER]) || wall_clock_ms(&now) < 0 || now >= next_month_start) {
        for (int i = 0; i < KEY_FIELDS; i++)
            Py_DECREF(fields[i]);
        return rq_fallback(fallback, args, nargs);
    }
    count = next_count(fields[KEY_COUNTER]);
    if (count >= 0) {
        tail = ((unsigned long long)(now - month_start) & 0xFFFFFFFFULL) << 16 | (unsigned long long)count;
        length = PyUnicode_GET_LENGTH(prefix);
        key = PyUnicode_New(length + KEY_TAIL_DIGITS, 127);
        if (key != NULL) {
            out = PyUnicode_1BYTE_DATA(key);
            memcpy(out, PyUnicode_1BYTE_DATA(prefix), (size_t)length);
            for (int i = KEY_TAIL_DIGITS - 1; i >= 0; i--, tail >>= 4)
                out[length + i] = (Py_UCS1)HEX[tail & 0xF];
        }
    }
    for (int i = 0; i < KEY_FIELDS; i++)
        Py_DECREF(fields[i]);
    return key;
}

/* ``stored_answer_at(data, pos, max_frame)`` (rocketq/remoting/storedanswers.py): the SUCCESS
 * answer without a body whose frame starts at ``data[pos]``, as ``(opaque, extFields, end)``,
 * read from the JSON header in place: only the extFields dict and its strings are built. The
 * header is read as the JSON a broker writes (no white space, strings of printable ASCII
 * without escapes, integers, true / false / null, extFields an object of strings); anything
 * else is the pure function's (which decodes the header as the general path does). Another
 * code, a request, a body, an incomplete frame: None at once.
 */
enum { HEADER_INT_DIGITS = 10 };

typedef struct {
    const char *at, *end;
} Cursor;

/* Bytes a string read here may hold: printable ASCII but the quote and the backslash. */
static unsigned char plain_byte[256];

static void fill_plain_bytes(void)
{
    for (int b = 0x20; b <= 0x7E; b++)
        plain_byte[b] = b != '"' && b != '\\';
}

/* A JSON string of printable ASCII without escapes: its content [*start, *start + *length).
 * Inline: some twenty per answer header, where a call costs as much as the scan. */
static inline int scan_string(Cursor *c, const char **start, Py_ssize_t *length)
{
    const char *p;
    if (c->at >= c->end || *c->at != '"')
        return -1;
    p = ++c->at;
    while (p < c->end && plain_byte[(unsigned char)*p])
        p++;
    if (p >= c->end || *p != '"')
        return -1;
    *start = c->at;
    *length = p - c->at;
    c->at = p + 1;
    return 0;
}

/* A JSON integer (``-?(0|[1-9][0-9]*)``, at most 10 digits) within int32; -1 if not one. */
static int scan_int32(Cursor *c, long long *value)
{
    int negative = 0, digits = 0;
    long long result = 0;
    if (c->at < c->end && *c->at == '-') {
        negative = 1;
        c->at++;
    }
    while (c->at < c->end && *c->at >= '0' && *c->at <= '9') {
        if (++digits > HEADER_INT_DIGITS || (digits == 2 && result == 0))
            return -1;  /* too long, or a leading zero (not JSON) */
        result = result * 10 + (*c->at++ - '0');
    }
    if (digits == 0)
        return -1;
    result = negative ? -result : result;
    if (result < INT32_MIN || result > INT32_MAX)
        return -1;
    *value = result;
    return 0;
}

static int scan_literal(Cursor *c, const char *word, Py_ssize_t length)
{
    if (c->end - c->at < length || memcmp(c->at, word, (size_t)length) != 0)
        return -1;
    c->at += length;
    return 0;
}

/* A value whose content does not matter here: a string, an integer, true, false or null. */
static int skip_value(Cursor *c)
{
    const char *start;
    Py_ssize_t length;
    long long ignored;
    if (c->at >= c->end)
        return -1;
    switch (*c->at) {
    case '"': return scan_string(c, &start, &length);
    case 't': return scan_literal(c, "true", 4);
    case 'f': return scan_literal(c, "false", 5);
    case 'n': return scan_literal(c, "null", 4);
    default: return scan_int32(c, &ignored);
    }
}

/* The extFields names brokers send, interned once: no string to make and no hash per answer. */
static const char *const KNOWN_NAMES[] = {"msgId", "queueId", "queueOffset", "MSG_REGION", "TRACE_ON",
                                          "transactionId", NULL};
enum { KNOWN_NAME_COUNT = 6 };
static PyObject *known_names[KNOWN_NAME_COUNT];

#define NAME_LENGTH(word) ((Py_ssize_t)sizeof(word) - 1)
static const Py_ssize_t KNOWN_LENGTHS[KNOWN_NAME_COUNT] = {
    NAME_LENGTH("msgId"), NAME_LENGTH("queueId"), NAME_LENGTH("queueOffset"), NAME_LENGTH("MSG_REGION"),
    NAME_LENGTH("TRACE_ON"), NAME_LENGTH("transactionId"),
};
#undef NAME_LENGTH

/* KNOWN_NAMES[i] when it is the ``length`` bytes at ``start``, else 0 (lengths compared first,
 * from a table: a strlen call per name and key otherwise). */
static int is_known_name(int i, const char *start, Py_ssize_t length)
{
    return KNOWN_LENGTHS[i] == length && memcmp(KNOWN_NAMES[i], start, (size_t)length) == 0;
}

static int intern_known_names(void)
{
    if (known_names[KNOWN_NAME_COUNT - 1] != NULL)
        return 0;
    fill_plain_bytes();
    for (int i = 0; i < KNOWN_NAME_COUNT; i++)
        if (known_names[i] == NULL && (known_names[i] = PyUnicode_InternFromString(KNOWN_NAMES[i])) == NULL)
            return -1;
    return 0;
}

static PyObject *ascii_text(const char *start, Py_ssize_t length);

/* A name of extFields: the interned one when it is a known name, else a new string. */
static PyObject *ext_name(const char *start, Py_ssize_t length)
{
    for (int i = 0; i < KNOWN_NAME_COUNT; i++) {
        if (is_known_name(i, start, length))
            return Py_NewRef(known_names[i]);
    }
    return ascii_text(start, length);
}

static PyObject *ascii_text(const char *start, Py_ssize_t length)
{
    PyObject *text = PyUnicode_New(length, 127);
    if (text != NULL)
        memcpy(PyUnicode_1BYTE_DATA(text), start, (size_t)length);
    return text;
}

/* extFields: an object of string values into a new dict; 0 with *ext NULL if not that shape. */
static int scan_ext(Cursor *c, PyObject **ext)
{
    const char *key, *value;
    Py_ssize_t key_length, value_length;
    PyObject *dict, *k, *v;
    *ext = NULL;
    if (c->at >= c->end || *c->at != '{')
        return 0;
    c->at++;
    if ((dict = PyDict_New()) == NULL)
        return -1;
    if (c->at < c->end && *c->at == '}') {
        c->at++;
        *ext = dict;
        return 0;
    }
    for (;;) {
        int status;
        if (scan_string(c, &key, &key_length) < 0 || scan_literal(c, ":", 1) < 0
                || scan_string(c, &value, &value_length) < 0)
            break;
        k = ext_name(key, key_length);
        v = k != NULL ? ascii_text(value, value_length) : NULL;
        status = v != NULL ? PyDict_SetItem(dict, k, v) : -1;
        Py_XDECREF(k);
        Py_XDECREF(v);
        if (status < 0) {
            Py_DECREF(dict);
            return -1;
        }
        if (c->at < c->end && *c->at == ',') {
            c->at++;
            continue;
        }
        if (c->at < c->end && *c->at == '}') {
            c->at++;
            *ext = dict;
            return 0;
        }
        break;
    }
    Py_DECREF(dict);
    return 0;
}

/* The extFields a send's result is read from, as spans of the header (start NULL: absent). */
enum { FIELD_MSG_ID, FIELD_QUEUE_ID, FIELD_QUEUE_OFFSET, FIELD_REGION, RESULT_EXT_FIELDS };

typedef struct {
    const char *start[RESULT_EXT_FIELDS];
    Py_ssize_t length[RESULT_EXT_FIELDS];
    int seen;  /* extFields was read */
} Fields;

/* extFields (an object of string values) read into spans, nothing built; -1 if not that shape
 * or one of the four names twice (the pure reading keeps the last: it decides). */
static int scan_ext_fields(Cursor *c, Fields *fields)
{
    const char *key, *value;
    Py_ssize_t key_length, value_length;
    if (scan_literal(c, "{", 1) < 0)
        return -1;
    if (c->at < c->end && *c->at == '}') {
        c->at++;
        fields->seen = 1;
        return 0;
    }
    for (;;) {
        if (scan_string(c, &key, &key_length) < 0 || scan_literal(c, ":", 1) < 0
                || scan_string(c, &value, &value_length) < 0)
            return -1;
        for (int i = 0; i < RESULT_EXT_FIELDS; i++) {
            if (is_known_name(i, key, key_length)) {
                if (fields->start[i] != NULL)
                    return -1;
                fields->start[i] = value;
                fields->length[i] = value_length;
                break;
            }
        }
        if (c->at < c->end && *c->at == ',') {
            c->at++;
            continue;
        }
        if (scan_literal(c, "}", 1) < 0)
            return -1;
        fields->seen = 1;
        return 0;
    }
}

#define KEY_IS(word) (key_length == (Py_ssize_t)sizeof(word) - 1 && memcmp(key, word, sizeof(word) - 1) == 0)

/* The header's fields: 1 when it is a SUCCESS answer (*ext set, or with ``fields`` not NULL the
 * extFields read into it and *ext left NULL), 0 when it is surely not one, 2 when this reading
 * cannot tell (the pure function decides), -1 on error. */
static int scan_answer_header(Cursor *c, long long *opaque, PyObject **ext, Fields *fields)
{
    long long code = -1, flag = 0, ignored;
    const char *key;
    Py_ssize_t key_length;
    int has_code = 0;
    *opaque = 0;
    *ext = NULL;
    if (scan_literal(c, "{", 1) < 0)
        return 2;
    for (;;) {
        int bad;
        if (scan_string(c, &key, &key_length) < 0 || scan_literal(c, ":", 1) < 0)
            goto decline;
        if (KEY_IS("code")) {
            bad = scan_int32(c, &code);
            has_code = 1;
        } else if (KEY_IS("flag")) {
            bad = scan_int32(c, &flag);
        } else if (KEY_IS("opaque")) {
            bad = scan_int32(c, opaque);
        } else if (KEY_IS("version")) {
            bad = scan_int32(c, &ignored);
        } else if (KEY_IS("extFields") && fields != NULL) {
            if (fields->seen)
                goto decline;  /* twice: the pure function decides */
            bad = scan_ext_fields(c, fields) < 0;
        } else if (KEY_IS("extFields")) {
            if (*ext != NULL)
                goto decline;  /* twice: the pure function decides */
            if (scan_ext(c, ext) < 0)
                return -1;
            bad = *ext == NULL;
        } else {
            bad = skip_value(c);
        }
        if (bad)
            goto decline;
        if (c->at < c->end && *c->at == ',') {
            c->at++;
            continue;
        }
        if (scan_literal(c, "}", 1) < 0 || c->at != c->end)
            goto decline;
        break;
    }
    if (has_code && (code != 0 || !(flag & 1))) {
        Py_CLEAR(*ext);
        return 0;  /* a whole header, not a SUCCESS answer */
    }
    if (!has_code || (fields != NULL ? !fields->seen : *ext == NULL))
        goto decline;
    return 1;
decline:
    Py_CLEAR(*ext);
    return 2;
}

#undef KEY_IS

/* The frame at data[pos:] of at most max_frame bytes after its length field, when it is whole,
 * has a JSON header and no body: 1 with *cursor over the header and *end where the frame ends;
 * 0 when it is not (None). */
static int answer_frame(PyObject *bytes, Py_ssize_t pos, Py_ssize_t max_frame, Cursor *cursor, Py_ssize_t *end)
{
    Py_ssize_t size = PyBytes_GET_SIZE(bytes), header_length;
    const unsigned char *data = (const unsigned char *)PyBytes_AS_STRING(bytes) + pos;
    long long length;
    if (size - pos < 8)
        return 0;
    length = (long long)((uint32_t)data[0] << 24 | (uint32_t)data[1] << 16 | (uint32_t)data[2] << 8 | data[3]);
    header_length = (Py_ssize_t)data[5] << 16 | (Py_ssize_t)data[6] << 8 | data[7];
    if (data[0] & 0x80 || length < 4 || length > max_frame || size - pos - 4 < length
            || data[4] != 0 || 4 + header_length != length)
        return 0;  /* incomplete, too long, the binary header or a body: the general path */
    cursor->at = (const char *)data + 8;
    cursor->end = (const char *)data + 4 + length;
    *end = pos + 4 + (Py_ssize_t)length;
    return 1;
}

/* args[0..2] as (bytes, pos, second) with 0 <= pos <= len(bytes) and second >= 0: 0, else -1
 * (not the fast case: the pure function). */
static int frame_args(PyObject *const *args, Py_ssize_t *pos, Py_ssize_t *second)
{
    if (!PyBytes_CheckExact(args[0]) || !PyLong_CheckExact(args[1]) || !PyLong_CheckExact(args[2]))
        return -1;
    *pos = PyLong_AsSsize_t(args[1]);
    *second = PyLong_AsSsize_t(args[2]);
    if (*pos < 0 || *second < 0 || *pos > PyBytes_GET_SIZE(args[0])) {
        PyErr_Clear();
        return -1;
    }
    return 0;
}

/* The SUCCESS answer at args (data, pos, max_frame): 1 when read (*end, *opaque, and *ext or
 * ``fields`` as ``scan_answer_header`` fills them); else 0 with *result what to return (None,
 * the pure function's answer, or NULL on error). */
static int read_answer(PyObject *fallback, PyObject *const *args, Py_ssize_t nargs, long long *opaque,
                       PyObject **ext, Fields *fields, Py_ssize_t *pos, Py_ssize_t *end, PyObject **result)
{
    Py_ssize_t max_frame;
    Cursor cursor;
    int found;
    *result = NULL;
    if (nargs != 3 || frame_args(args, pos, &max_frame) < 0) {
        *result = rq_fallback(fallback, args, nargs);
        return 0;
    }
    if (intern_known_names() < 0)
        return 0;
    if (!answer_frame(args[0], *pos, max_frame, &cursor, end)) {
        *result = Py_NewRef(Py_None);
        return 0;
    }
    found = scan_answer_header(&cursor, opaque, ext, fields);
    if (found == 0)
        *result = Py_NewRef(Py_None);
    else if (found == 2)
        *result = rq_fallback(fallback, args, nargs);
    return found == 1;
}

PyObject *rq_py_stored_answer_at(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t pos, end;
    long long opaque;
    PyObject *ext, *result;
    if (!read_answer(fallback, args, nargs, &opaque, &ext, NULL, &pos, &end, &result))
        return result;
    return Py_BuildValue("(LNn)", opaque, ext, end);
}

/* The fields of the last answer ``answer_at`` read in C, for the ``send_result_at`` that comes
 * next for the same frame (the client connection calls one, then the waiter the other): that
 * call takes the spans instead of reading the header a second time. ``last_read`` holds the
 * (immutable) bytes the spans point into; ``send_result_at`` lets it go. */
static struct {
    PyObject *data;
    Py_ssize_t pos, end;
    Fields fields;
} last_read;

static void remember_read(PyObject *data, Py_ssize_t pos, Py_ssize_t end, const Fields *fields)
{
    Py_XSETREF(last_read.data, Py_NewRef(data));
    last_read.pos = pos;
    last_read.end = end;
    last_read.fields = *fields;
}

/* (first, second) as a new tuple of two ints (Py_BuildValue parses its format every call). */
static PyObject *pair_of(long long first, Py_ssize_t second)
{
    PyObject *pair = PyTuple_New(2), *item;
    if (pair == NULL)
        return NULL;
    if ((item = PyLong_FromLongLong(first)) == NULL) {
        Py_DECREF(pair);
        return NULL;
    }
    PyTuple_SET_ITEM(pair, 0, item);
    if ((item = PyLong_FromSsize_t(second)) == NULL) {
        Py_DECREF(pair);
        return NULL;
    }
    PyTuple_SET_ITEM(pair, 1, item);
    return pair;
}

/* ``answer_at(data, pos, max_frame)`` (rocketq/remoting/storedanswers.py): ``stored_answer_at``
 * without its extFields dict: ``(opaque, end)``. The header is read as there (extFields only
 * checked to be an object of strings); what that reading cannot tell is the pure function's. */
PyObject *rq_py_answer_at(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t pos, end;
    long long opaque;
    PyObject *ignored, *result;
    Fields fields = {{NULL}, {0}, 0};
    if (!read_answer(fallback, args, nargs, &opaque, &ignored, &fields, &pos, &end, &result))
        return result;
    remember_read(args[0], pos, end, &fields);
    return pair_of(opaque, end);
}

/* A span's value as plain digits (``plain_digits`` of its text): -1 if absent or not that. */
static long long span_digits(const char *start, Py_ssize_t length, Py_ssize_t max_digits)
{
    long long value = 0;
    if (start == NULL || length == 0 || length > max_digits)
        return -1;
    for (Py_ssize_t i = 0; i < length; i++) {
        if (start[i] < '0' || start[i] > '9')
            return -1;
        value = value * 10 + (start[i] - '0');
    }
    return value;
}

/* ``send_result_at(data, pos, end, status, msg_id, mq)`` (rocketq/client/sending.py): the
 * SendResult of the SUCCESS answer ``data[pos:end]`` (found by ``answer_at``), read from the
 * header in place: what ``answer_result(stored_answer_at(...)[1], status, msg_id, mq)`` gives,
 * without the extFields dict. The fast case is ``answer_result``'s (msgId present, queueId the
 * request's queue, plain digits); anything else is the pure function's. context: as
 * ``answer_result``'s. */
PyObject *rq_py_send_result_at(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t pos, end, frame_end;
    long long opaque, queue_id, queue_offset, mq_queue_id;
    PyObject *ignored, *offset_msg_id, *region = NULL, *result;
    Fields fields = {{NULL}, {0}, 0};
    Cursor cursor;
    int found;
    if (nargs != 6 || !result_context_ok(context) || frame_args(args, &pos, &end) < 0 || end < pos)
        return rq_fallback(fallback, args, nargs);
    if (intern_known_names() < 0 || intern_answer_names() < 0)
        return NULL;
    if (last_read.data == args[0] && last_read.pos == pos && last_read.end == end) {
        fields = last_read.fields;  /* answer_at read this very frame: its spans are valid */
        found = 1;
    } else if (!answer_frame(args[0], pos, end - pos, &cursor, &frame_end) || frame_end != end) {
        return rq_fallback(fallback, args, nargs);  /* the frame must be exactly data[pos:end] */
    } else {
        found = scan_answer_header(&cursor, &opaque, &ignored, &fields);
    }
    Py_CLEAR(last_read.data);
    if (found != 1 || fields.start[FIELD_MSG_ID] == NULL)
        return found < 0 ? NULL : rq_fallback(fallback, args, nargs);
    queue_id = span_digits(fields.start[FIELD_QUEUE_ID], fields.length[FIELD_QUEUE_ID], INT_DIGITS);
    queue_offset = span_digits(fields.start[FIELD_QUEUE_OFFSET], fields.length[FIELD_QUEUE_OFFSET], LONG_DIGITS);
    if (queue_id < 0 || queue_offset < 0)
        return rq_fallback(fallback, args, nargs);
    mq_queue_id = queue_id_of(args[5]);
    if (mq_queue_id == -2)
        return NULL;
    if (mq_queue_id != queue_id)  /* the broker chose another queue: the pure function builds it */
        return rq_fallback(fallback, args, nargs);
    offset_msg_id = ascii_text(fields.start[FIELD_MSG_ID], fields.length[FIELD_MSG_ID]);
    if (offset_msg_id == NULL)
        return NULL;
    if (fields.start[FIELD_REGION] != NULL
            && (region = ascii_text(fields.start[FIELD_REGION], fields.length[FIELD_REGION])) == NULL) {
        Py_DECREF(offset_msg_id);
        return NULL;
    }
    result = new_result(context, args[3], args[4], offset_msg_id, args[5], queue_offset, region);
    Py_DECREF(offset_msg_id);
    Py_XDECREF(region);
    return result;
}

/* ``prepare(msg, settings)`` (rocketq/client/sending.py): the Outgoing of a plain message in one
 * call: the checks ``prepare`` makes inline, a new unique key (``next_unique_key``) stamped as
 * the properties' last entry (``stamp_unique_key``) and the Outgoing built slot by slot. The
 * plain case: a message of one of the plain classes, a topic already validated, an exact bytes
 * body of 1..maxMessageSize bytes below the compression threshold, an i32 exact int flag, an
 * exact dict of properties without a UNIQ_KEY entry whose text is surely within the limit.
 * Anything else (the map put back as it was) is the pure function's; a key drawn for a message
 * that then goes there is not reused (keys only need to be unique).
 *
 * context: (Outgoing, its field names in order, the plain message classes, the set of checked
 * topics, the generator's getter, next_unique_key, MAX_PROPERTIES_LENGTH, MSG_TYPE, its reply
 * value)
 */
enum {
    PREPARE_CONTEXT = 9, OUTGOING_FIELDS = 8,
    CTX_OUTGOING = 0, CTX_FIELDS, CTX_PLAIN_TYPES, CTX_CHECKED_TOPICS, CTX_UNIQ_IDS, CTX_NEXT_KEY, CTX_LIMIT,
    CTX_MSG_TYPE, CTX_REPLY,
};

static PyObject *attr_topic, *attr_body, *attr_flag, *attr_properties, *attr_max_size, *attr_compress_over;

static int intern_prepare_names(void)
{
    static PyObject **const targets[] = {&attr_topic, &attr_body, &attr_flag, &attr_properties, &attr_max_size,
                                         &attr_compress_over};
    static const char *const words[] = {"topic", "body", "flag", "properties", "max_message_size",
                                        "compress_msg_body_over_howmuch"};
    return intern_words(targets, words, 6);
}

static int prepare_context_ok(PyObject *context)
{
    return PyTuple_GET_SIZE(context) == PREPARE_CONTEXT && PyType_Check(PyTuple_GET_ITEM(context, CTX_OUTGOING))
        && PyTuple_CheckExact(PyTuple_GET_ITEM(context, CTX_FIELDS))
        && PyTuple_GET_SIZE(PyTuple_GET_ITEM(context, CTX_FIELDS)) == OUTGOING_FIELDS
        && PyAnySet_Check(PyTuple_GET_ITEM(context, CTX_PLAIN_TYPES))
        && PyAnySet_Check(PyTuple_GET_ITEM(context, CTX_CHECKED_TOPICS))
        && PyLong_CheckExact(PyTuple_GET_ITEM(context, CTX_LIMIT))
        && PyUnicode_CheckExact(PyTuple_GET_ITEM(context, CTX_MSG_TYPE))
        && PyUnicode_CheckExact(PyTuple_GET_ITEM(context, CTX_REPLY));
}


/* settings' maxMessageSize and compressMsgBodyOverHowmuch (-1 for one that is not an exact
 * int >= 0): 0, or -1 on error. */
static int read_settings(PyObject *settings, long long *max_size, long long *compress_over)
{
    static SlotTable tables;
    static PyObject *names;
    PyObject *values[2];
    if (names == NULL && (names = PyTuple_Pack(2, attr_max_size, attr_compress_over)) == NULL)
        return -1;
    if (read_slots(&tables, settings, names, values) < 0)
        return -1;
    *max_size = natural_value(values[0]);
    *compress_over = natural_value(values[1]);
    Py_DECREF(values[0]);
    Py_DECREF(values[1]);
    return 0;
}

/* msg's topic, body, flag and properties into fields[0..3] (new references): 0, or -1 on
 * error (none held). A plain message class's slots are read directly (the last two classes
 * seen are known); another class's attributes the generic way. */
static int read_message(PyObject *msg, PyObject **fields)
{
    static SlotTable tables[2];
    static int next_table;
    static PyObject *names;
    PyTypeObject *type = Py_TYPE(msg);
    SlotTable *table = tables[0].type == type ? &tables[0] : &tables[1];
    if (names == NULL && (names = PyTuple_Pack(4, attr_topic, attr_body, attr_flag, attr_properties)) == NULL)
        return -1;
    if (table->type != type) {
        table = &tables[next_table];
        next_table ^= 1;
    }
    return read_slots(table, msg, names, fields);
}

/* The message's fields read for the plain case: 1 when they are plain (new references in
 * fields[0..3]: topic, body, flag, properties), 0 when not (none held), -1 on error. */
static int plain_message(PyObject *context, PyObject *msg, PyObject *settings, PyObject **fields)
{
    long long max_size, compress_over, flag;
    Py_ssize_t size;
    int found, overflow = 0;
    found = PySet_Contains(PyTuple_GET_ITEM(context, CTX_PLAIN_TYPES), (PyObject *)Py_TYPE(msg));
    if (found <= 0)
        return found;
    if (read_message(msg, fields) < 0) {
        PyErr_Clear();
        return 0;  /* a field missing: the pure function raises what it raises */
    }
    if (!PyUnicode_CheckExact(fields[0]) || !PyBytes_CheckExact(fields[1]) || !PyLong_CheckExact(fields[2])
            || !PyDict_CheckExact(fields[3]))
        goto not_plain;
    found = PySet_Contains(PyTuple_GET_ITEM(context, CTX_CHECKED_TOPICS), fields[0]);
    if (found <= 0)
        goto decline;
    flag = PyLong_AsLongLongAndOverflow(fields[2], &overflow);
    if (overflow || flag < INT32_MIN || flag > INT32_MAX)
        goto not_plain;
    if (read_settings(settings, &max_size, &compress_over) < 0)
        goto error;
    size = PyBytes_GET_SIZE(fields[1]);
    if (max_size < 0 || compress_over < 0 || size == 0 || size > max_size || size >= compress_over)
        goto not_plain;
    return 1;
not_plain:
    found = 0;
decline:
    for (int i = 0; i < 4; i++)
        Py_CLEAR(fields[i]);
    return found;
error:
    for (int i = 0; i < 4; i++)
        Py_CLEAR(fields[i]);
    return -1;
}

/* The message's new unique key: ``next_unique_key(uniq_ids())``, a new reference or NULL. */
static PyObject *new_unique_key(PyObject *context)
{
    PyObject *ids = PyObject_CallNoArgs(PyTuple_GET_ITEM(context, CTX_UNIQ_IDS)), *key;
    if (ids == NULL)
        return NULL;
    key = PyObject_CallOneArg(PyTuple_GET_ITEM(context, CTX_NEXT_KEY), ids);
    Py_DECREF(ids);
    if (key != NULL && !PyUnicode_CheckExact(key))
        Py_CLEAR(key);  /* not a generator's key: cannot happen, and the pure path would say so */
    return key;
}

/* Outgoing(topic, body, 0, flag, properties, msg_id, False, reply), its slots filled as the
 * dataclass's __init__ fills them. */
static PyObject *new_outgoing(PyObject *context, PyObject *const *fields, PyObject *properties, PyObject *msg_id,
                              int reply)
{
    PyObject *values[OUTGOING_FIELDS], *self, *names = PyTuple_GET_ITEM(context, CTX_FIELDS), *zero;
    if ((zero = PyLong_FromLong(0)) == NULL)
        return NULL;
    values[0] = fields[0];
    values[1] = fields[1];
    values[2] = zero;
    values[3] = fields[2];
    values[4] = properties;
    values[5] = msg_id;
    values[6] = Py_False;
    values[7] = reply ? Py_True : Py_False;
    static SlotTable outgoings;
    self = slots_object(&outgoings, PyTuple_GET_ITEM(context, CTX_OUTGOING), names, values);
    Py_DECREF(zero);
    return self;
}

/* The stamped properties' text and whether MSG_TYPE is the reply flag, given the key is now in
 * ``props``: 1 with *text (a new reference), 0 when the text is not the plain case's, -1 on
 * error. */
static int stamped_text(PyObject *context, PyObject *props, PyObject **text, int *reply)
{
    PyObject *msg_type;
    Py_ssize_t limit = PyLong_AsSsize_t(PyTuple_GET_ITEM(context, CTX_LIMIT));
    if (limit < 0) {
        PyErr_Clear();
        return 0;
    }
    *text = rq_encode_properties(props);
    if (*text == NULL)
        return PyErr_Occurred() ? -1 : 0;
    if (!surely_within(*text, limit)) {
        Py_CLEAR(*text);
        return 0;
    }
    /* every value is an exact str now (rq_encode_properties checked): no Python code runs */
    msg_type = PyDict_GetItemWithError(props, PyTuple_GET_ITEM(context, CTX_MSG_TYPE));
    *reply = msg_type != NULL && PyUnicode_Compare(msg_type, PyTuple_GET_ITEM(context, CTX_REPLY)) == 0;
    return 1;
}

/* Stamps ``key`` into ``props`` and makes the Outgoing: the Outgoing (a new reference), NULL
 * with no error set when the text is not the plain case's (the map put back as it was), NULL
 * with an error set on error. */
static PyObject *stamped_outgoing(PyObject *context, PyObject *const *fields, PyObject *key)
{
    PyObject *props = fields[3], *text = NULL, *out;
    int reply = 0, stamped;
    if (PyDict_SetItem(props, uniq_key_name, key) < 0)
        return NULL;
    stamped = stamped_text(context, props, &text, &reply);
    if (stamped <= 0) {
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        if (PyDict_DelItem(props, uniq_key_name) < 0) {  /* the map as it was */
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(traceback);
            return NULL;
        }
        PyErr_Restore(type, value, traceback);
        return NULL;
    }
    out = new_outgoing(context, fields, text, key, reply);
    Py_DECREF(text);
    return out;
}

PyObject *rq_py_prepare_message(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *fields[4], *key, *out = NULL;
    int plain;
    if (nargs != 2 || !prepare_context_ok(context))
        return rq_fallback(fallback, args, nargs);
    if (intern_prepare_names() < 0 || intern_answer_names() < 0)
        return NULL;
    if (uniq_key_name == NULL && (uniq_key_name = PyUnicode_InternFromString("UNIQ_KEY")) == NULL)
        return NULL;
    plain = plain_message(context, args[0], args[1], fields);
    if (plain <= 0)
        return plain < 0 ? NULL : rq_fallback(fallback, args, nargs);
    /* a key of the caller's (or an error) is the pure function's; exact str keys only are
     * plain (rq_encode_properties checks), so no Python code runs for the lookup */
    if (PyDict_Contains(fields[3], uniq_key_name) == 0 && (key = new_unique_key(context)) != NULL) {
        out = stamped_outgoing(context, fields, key);
        Py_DECREF(key);
    }
    for (int i = 0; i < 4; i++)
        Py_DECREF(fields[i]);
    if (out != NULL || PyErr_Occurred())
        return out;
    return rq_fallback(fallback, args, nargs);
}

/* ``RoundRobin.choose(self, queues, last_broker=None)`` (rocketq/client/selectors.py) when its
 * common case decides: a tuple of queues, the topic's index already there (an exact int), the
 * queue at the next index not on ``last_broker``, and no broker marked by latency fault
 * tolerance (``faults.marks`` empty). Then the index is stored and that queue returned, as the
 * pure method does; anything else (a first send to the topic picks a random start, a marked
 * broker, another type) goes to the pure method before anything is changed. The RoundRobin,
 * LatencyFaultTolerance and MessageQueue fields are read at their slot offsets. */
enum { ROBIN_INDEXES, ROBIN_FAULTS, ROBIN_FIELDS };
enum { QUEUE_TOPIC, QUEUE_BROKER, QUEUE_FIELDS };

static PyObject *robin_names, *faults_names, *queue_names;
static SlotTable robins, fault_tables, chosen_queues;

static int intern_choose_names(void)
{
    if (queue_names != NULL)
        return 0;
    robin_names = Py_BuildValue("(ss)", "_indexes", "_faults");
    faults_names = robin_names == NULL ? NULL : Py_BuildValue("(s)", "marks");
    queue_names = faults_names == NULL ? NULL : Py_BuildValue("(ss)", "topic", "broker_name");
    return queue_names == NULL ? -1 : 0;
}

/* 1 when no broker is marked (``not faults.marks`` of an exact dict), 0 when one is or the
 * marks cannot be read so (the pure method decides), -1 on error. */
static int no_marks(PyObject *faults)
{
    PyObject *marks;
    int empty;
    if (read_slots(&fault_tables, faults, faults_names, &marks) < 0) {
        PyErr_Clear();
        return 0;
    }
    empty = PyDict_CheckExact(marks) && PyDict_GET_SIZE(marks) == 0;
    Py_DECREF(marks);
    return empty;
}

/* The queue the common case chooses (new reference; *next_index its new index), NULL without an
 * error when the pure method must decide, NULL with one on error. */
static PyObject *common_choice(PyObject *indexes, PyObject *queues, PyObject *last_broker, PyObject *topic,
                               long long *next_index)
{
    PyObject *start = PyDict_GetItemWithError(indexes, topic), *first, *fields[QUEUE_FIELDS];
    long long index;
    int other;
    if (start == NULL || (index = natural_value(start)) < 0 || index > 0x7FFFFFFFLL)
        return NULL;
    index = (index + 1) & 0x7FFFFFFFLL;
    first = PyTuple_GET_ITEM(queues, index % PyTuple_GET_SIZE(queues));
    if (read_slots(&chosen_queues, first, queue_names, fields) < 0)
        return NULL;
    other = last_broker == Py_None ? fields[QUEUE_BROKER] != Py_None
        : PyObject_RichCompareBool(fields[QUEUE_BROKER], last_broker, Py_NE);
    Py_DECREF(fields[QUEUE_TOPIC]);
    Py_DECREF(fields[QUEUE_BROKER]);
    if (other <= 0)
        return NULL;
    *next_index = index;
    return Py_NewRef(first);
}

PyObject *rq_py_choose_queue(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *queues, *last_broker, *robin[ROBIN_FIELDS], *fields[QUEUE_FIELDS], *topic, *first = NULL, *value;
    long long index = 0;
    int ready;
    (void)context;
    if (nargs < 2 || nargs > 3 || intern_choose_names() < 0 || !PyTuple_CheckExact(args[1])
            || PyTuple_GET_SIZE(args[1]) == 0)
        return rq_fallback(fallback, args, nargs);
    queues = args[1];
    last_broker = nargs == 3 ? args[2] : Py_None;
    if (read_slots(&robins, args[0], robin_names, robin) < 0) {
        PyErr_Clear();
        return rq_fallback(fallback, args, nargs);
    }
    ready = PyDict_CheckExact(robin[ROBIN_INDEXES]) ? no_marks(robin[ROBIN_FAULTS]) : 0;
    if (ready > 0 && read_slots(&chosen_queues, PyTuple_GET_ITEM(queues, 0), queue_names, fields) == 0) {
        Py_DECREF(fields[QUEUE_BROKER]);  /* the first queue's topic is the topic's key */
        topic = fields[QUEUE_TOPIC];
        first = common_choice(robin[ROBIN_INDEXES], queues, last_broker, topic, &index);
        if (first != NULL) {
            value = PyLong_FromLongLong(index);
            if (value == NULL || PyDict_SetItem(robin[ROBIN_INDEXES], topic, value) < 0)
                Py_CLEAR(first);
            Py_XDECREF(value);
        }
        Py_DECREF(topic);
    }
    Py_DECREF(robin[ROBIN_INDEXES]);
    Py_DECREF(robin[ROBIN_FAULTS]);
    if (first != NULL)
        return first;
    PyErr_Clear();  /* whatever the C path met, the pure method meets (and raises) again */
    return rq_fallback(fallback, args, nargs);
}
