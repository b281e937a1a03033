/* A remoting frame's JSON header in its usual shape, parsed straight from the frame's bytes.
 *
 * Every request and answer carries a header like (Java's fastjson; Go and C++ differ only in
 * key order and a trailing newline)::
 *
 *   {"code":310,"extFields":{"a":"G","b":"T",...},"flag":0,"language":"JAVA","opaque":7,
 *    "serializeTypeCurrentRPC":"JSON","version":399}
 *
 * frames.c used to hand it to orjson.loads and then pick the fields out of the dict orjson made.
 * This parser reads exactly that grammar and builds what frames.c builds from orjson's dict:
 * the four int32 fields, language, remark and the extFields dict (str -> str, wire order).
 *
 * It is a *subset* parser. Whatever it is not certain to read as orjson does makes it decline
 * (return 0), and the header goes the old way (orjson, then the pure decoder and its
 * FrameError), so results and errors are unchanged by construction. It declines on: an unknown
 * top-level key, a repeated key (top level or in extFields), a number that is not a plain int32
 * (fraction, exponent, leading zero, "-0", more than ten digits), a field of another type than
 * the old fast path accepted (language not a string, an extFields value not a string, ...), a
 * raw control character or invalid UTF-8 in a string, an escape it does not know, a lone
 * surrogate escape, "serializeTypeCurrentRPC" other than "JSON", and anything after the object
 * but JSON white space. It decodes the escapes JSON allows (\" \\ \/ \b \f \n \r \t \uXXXX and
 * surrogate pairs), since Java and Go escape the properties' \u0001/\u0002 separators.
 *
 * extFields keys and language names repeat in every frame: RocketMQ's header names are made
 * once into interned strings (NAMES below) and shared; any other key, and every value, is a
 * fresh str.
 */
#include "rocketq_native.h"

#include <string.h>

#define NAME_SLOTS 256            /* open-addressed table of NAMES: a power of two, > 2x the names */
#define MAX_INT32_DIGITS 10       /* 2147483648 has ten digits: more cannot be an int32 */
#define STACK_TEXT 256            /* an escaped string of up to this many bytes decodes on the stack */
#define STACK_PAIRS 32            /* extFields entries gathered before the dict is made (at its size) */
#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* RocketMQ's extFields names (request and answer headers of the 4.x and 5.x protocol, the
 * SEND_MESSAGE_V2 letters) and the language names: shared, interned strings. */
static const char *const NAMES[] = {
    "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n",
    "producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag", "bornTimestamp",
    "flag", "properties", "reconsumeTimes", "unitMode", "batch", "maxReconsumeTimes", "brokerName", "bname",
    "consumerGroup", "queueOffset", "maxMsgNums", "commitOffset", "suspendTimeoutMillis", "subscription",
    "subVersion", "expressionType", "maxMsgBytes", "msgId", "transactionId", "batchUniqId", "MSG_REGION",
    "TRACE_ON", "suggestWhichBrokerId", "nextBeginOffset", "minOffset", "maxOffset", "offset", "group",
    "delayLevel", "originMsgId", "originTopic", "tranStateTableOffset", "commitLogOffset",
    "fromTransactionCheck", "setZeroIfNotFound", "clientID", "clientId", "ns", "nsd", "oway", "lo",
    "topicSysFlag", "groupSysFlag", "forbiddenType", "offsetDelta", "timestamp",
    "JAVA", "GO", "CPP", "PYTHON", "DOTNET", "NODE_JS", "RUST", "OTHER",
};

static struct name_slot {
    const char *text;
    Py_ssize_t length;
    PyObject *str;  /* interned; NULL marks an empty slot */
} names[NAME_SLOTS];

static PyObject *json_language;  /* "JAVA", language's default; set last by init_names */

static unsigned name_hash(const unsigned char *p, Py_ssize_t length)
{
    return ((unsigned)length * 31u + (unsigned)p[0] * 7u + (unsigned)p[length - 1] * 131u) & (NAME_SLOTS - 1);
}

static int init_names(void)
{
    if (json_language != NULL)
        return 0;
    for (size_t i = 0; i < sizeof(NAMES) / sizeof(NAMES[0]); i++) {
        Py_ssize_t length = (Py_ssize_t)strlen(NAMES[i]);
        unsigned slot = name_hash((const unsigned char *)NAMES[i], length);
        while (names[slot].str != NULL)
            slot = (slot + 1) & (NAME_SLOTS - 1);
        names[slot].str = PyUnicode_InternFromString(NAMES[i]);
        if (names[slot].str == NULL)
            return -1;  /* the slots made stay: a later call goes on from there */
        names[slot].text = NAMES[i];
        names[slot].length = length;
    }
    json_language = PyUnicode_InternFromString("JAVA");
    return json_language == NULL ? -1 : 0;
}

/* The shared string of a name in NAMES (a new reference), or NULL. */
static PyObject *known_name(const unsigned char *p, Py_ssize_t length)
{
    unsigned slot;
    if (length == 0)
        return NULL;
    for (slot = name_hash(p, length); names[slot].str != NULL; slot = (slot + 1) & (NAME_SLOTS - 1))
        if (names[slot].length == length && memcmp(names[slot].text, p, (size_t)length) == 0)
            return Py_NewRef(names[slot].str);
    return NULL;
}

/* The parser's position; every read checks ``p < end``. */
struct cursor {
    const unsigned char *p, *end;
};

static void skip_space(struct cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\r' || *c->p == '\t'))
        c->p++;
}

/* Skip white space and take ``expected``: 1, or 0 when the next byte is another. */
static inline int take(struct cursor *c, unsigned char expected)
{
    if (c->p < c->end && *c->p == expected) {  /* the usual compact JSON: no white space */
        c->p++;
        return 1;
    }
    skip_space(c);
    if (c->p >= c->end || *c->p != expected)
        return 0;
    c->p++;
    return 1;
}

/* A JSON integer in int32 at the cursor: 1, else 0 (anything else is the old path's). */
static int parse_int32(struct cursor *c, long *out)
{
    const unsigned char *p = c->p, *digits;
    long long value = 0;
    int negative = 0;
    if (p < c->end && *p == '-') {
        negative = 1;
        p++;
    }
    digits = p;
    while (p < c->end && *p >= '0' && *p <= '9' && p - digits < MAX_INT32_DIGITS + 1)
        value = value * 10 + (*p++ - '0');
    if (p == digits || p - digits > MAX_INT32_DIGITS || (*digits == '0' && (p - digits > 1 || negative)))
        return 0;  /* none, too many, a leading zero or -0 */
    if (p < c->end && (*p == '.' || *p == 'e' || *p == 'E'))
        return 0;  /* a float */
    value = negative ? -value : value;
    if (value < RQ_INT32_MIN || value > RQ_INT32_MAX)
        return 0;
    *out = (long)value;
    c->p = p;
    return 1;
}

static int hex_digit(unsigned char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'f')
        return (ch | 0x20) - 'a' + 10;
    return -1;
}

/* The four hex digits at p (p + 4 <= end checked by the caller): the code unit, or -1. */
static long hex4(const unsigned char *p)
{
    long unit = 0;
    for (int i = 0; i < 4; i++) {
        int digit = hex_digit(p[i]);
        if (digit < 0)
            return -1;
        unit = unit * 16 + digit;
    }
    return unit;
}

static unsigned char *put_utf8(unsigned char *out, unsigned long point)
{
    if (point < 0x80) {
        *out++ = (unsigned char)point;
    } else if (point < 0x800) {
        *out++ = (unsigned char)(0xC0 | (point >> 6));
        *out++ = (unsigned char)(0x80 | (point & 0x3F));
    } else if (point < 0x10000) {
        *out++ = (unsigned char)(0xE0 | (point >> 12));
        *out++ = (unsigned char)(0x80 | ((point >> 6) & 0x3F));
        *out++ = (unsigned char)(0x80 | (point & 0x3F));
    } else {
        *out++ = (unsigned char)(0xF0 | (point >> 18));
        *out++ = (unsigned char)(0x80 | ((point >> 12) & 0x3F));
        *out++ = (unsigned char)(0x80 | ((point >> 6) & 0x3F));
        *out++ = (unsigned char)(0x80 | (point & 0x3F));
    }
    return out;
}

/* The escaped string body [p, stop) decoded to UTF-8 at out (room for stop - p bytes: no escape
 * decodes longer than it is written): the end of what was written, or NULL to decline. */
static unsigned char *unescape(const unsigned char *p, const unsigned char *stop, unsigned char *out)
{
    while (p < stop) {
        unsigned char ch = *p++;
        long unit, low;
        if (ch != '\\') {
            *out++ = ch;
            continue;
        }
        if (p >= stop)
            return NULL;
        ch = *p++;
        switch (ch) {
        case '"': case '\\': case '/': *out++ = ch; continue;
        case 'b': *out++ = '\b'; continue;
        case 'f': *out++ = '\f'; continue;
        case 'n': *out++ = '\n'; continue;
        case 'r': *out++ = '\r'; continue;
        case 't': *out++ = '\t'; continue;
        case 'u': break;
        default: return NULL;
        }
        if (stop - p < 4 || (unit = hex4(p)) < 0)
            return NULL;
        p += 4;
        if (unit >= 0xDC00 && unit <= 0xDFFF)
            return NULL;  /* a lone low surrogate */
        if (unit >= 0xD800 && unit <= 0xDBFF) {
            if (stop - p < 6 || p[0] != '\\' || p[1] != 'u' || (low = hex4(p + 2)) < 0xDC00 || low > 0xDFFF)
                return NULL;  /* a high surrogate without its low half */
            p += 6;
            unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
        }
        out = put_utf8(out, (unsigned long)unit);
    }
    return out;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && defined(__GNUC__)
/* The high bit of each zero byte of x: exact up to the first one (a borrow only starts at a zero
 * byte), which is all that is asked. */
static inline uint64_t zero_bytes(uint64_t x)
{
    return (x - ONES) & ~x & HIGHS;
}

/* How many of the eight bytes at p come before the first one a string must look at ('"', '\\',
 * a control byte, a non-ASCII byte): 8 when none does. Little-endian: the lowest flag is the first
 * byte. The control-byte test borrows like zero_bytes, so it too is exact up to the first. */
static inline int ordinary_bytes(const unsigned char *p)
{
    uint64_t word, flags;
    memcpy(&word, p, sizeof(word));
    flags = zero_bytes(word ^ (ONES * '"')) | zero_bytes(word ^ (ONES * '\\')) | ((word - ONES * 0x20) & ~word & HIGHS)
        | (word & HIGHS);
    return flags == 0 ? 8 : __builtin_ctzll(flags) >> 3;
}
#else
static inline int ordinary_bytes(const unsigned char *p)
{
    int n = 0;
    while (n < 8 && p[n] != '"' && p[n] != '\\' && p[n] >= 0x20 && p[n] < 0x80)
        n++;
    return n;
}
#endif

/* The string whose opening quote the cursor is past: a new str (``name``: a shared one when it
 * is in NAMES), or NULL, with an exception only for a real failure. */
static PyObject *parse_string(struct cursor *c, int name)
{
    const unsigned char *start = c->p, *p = c->p;
    int plain = 1;  /* ASCII without escapes */
    PyObject *text;
    for (;;) {
        while (c->end - p >= 8) {  /* eight bytes at a time up to the next one to look at */
            int ordinary = ordinary_bytes(p);
            p += ordinary;
            if (ordinary < 8)
                break;
        }
        if (p >= c->end)
            return NULL;  /* unterminated */
        if (*p == '"')
            break;
        if (*p < 0x20)
            return NULL;  /* a raw control character: invalid JSON */
        if (*p == '\\') {
            if (c->end - p < 2)
                return NULL;
            plain = 0;
            p++;  /* the escaped byte cannot end the string */
        } else if (*p >= 0x80) {
            plain = 0;
        }
        p++;
    }
    c->p = p + 1;
    if (plain) {
        if (name && (text = known_name(start, p - start)) != NULL)
            return text;
        text = PyUnicode_New(p - start, 127);
        if (text != NULL)
            memcpy(PyUnicode_1BYTE_DATA(text), start, (size_t)(p - start));
        return text;
    }
    unsigned char stack[STACK_TEXT], *buffer = stack, *written;
    stack[0] = 0;  /* (never read unwritten: an escape or a non-ASCII byte writes at least one byte) */
    if (p - start > STACK_TEXT && (buffer = PyMem_Malloc((size_t)(p - start))) == NULL)
        return PyErr_NoMemory();
    written = unescape(start, p, buffer);
    text = written == NULL ? NULL : PyUnicode_DecodeUTF8((const char *)buffer, written - buffer, NULL);
    if (text == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
        PyErr_Clear();  /* not UTF-8: orjson's error, on the old path */
    if (buffer != stack)
        PyMem_Free(buffer);
    return text;
}

/* A dict with room for ``size`` items: a send's dozen would otherwise grow it twice. */
static PyObject *dict_for(Py_ssize_t size)
{
#if PY_VERSION_HEX < 0x030D0000
    return _PyDict_NewPresized(size);
#else
    (void)size;
    return PyDict_New();
#endif
}

/* The ``count`` gathered (key, value) pairs into *ext (made at their number by the first call),
 * their references dropped: 0, or -1 for a failure (exception) or a repeated key (none). */
static int put_pairs(PyObject **ext, PyObject **pairs, Py_ssize_t count)
{
    Py_ssize_t before;
    int failed = 0;
    if (*ext == NULL && (*ext = dict_for(count)) == NULL)
        failed = 1;
    before = failed ? 0 : PyDict_GET_SIZE(*ext);
    for (Py_ssize_t i = 0; i < 2 * count; i += 2) {
        if (!failed && PyDict_SetItem(*ext, pairs[i], pairs[i + 1]) < 0)
            failed = 1;
        Py_DECREF(pairs[i]);
        Py_DECREF(pairs[i + 1]);
    }
    return failed || PyDict_GET_SIZE(*ext) != before + count ? -1 : 0;
}

/* extFields' object, its ``{`` taken: a new dict of str -> str, or NULL (exception: a failure).
 * The pairs are gathered first, so the dict is made at its size. */
static PyObject *parse_ext(struct cursor *c)
{
    PyObject *pairs[2 * STACK_PAIRS], *ext = NULL, *key, *value;
    Py_ssize_t count = 0;
    if (take(c, '}'))
        return PyDict_New();
    do {
        if (!take(c, '"') || (key = parse_string(c, 1)) == NULL)
            goto decline;
        if (!take(c, ':') || !take(c, '"') || (value = parse_string(c, 0)) == NULL) {
            Py_DECREF(key);
            goto decline;
        }
        if (count == STACK_PAIRS) {  /* more than a header usually has: on into the dict */
            Py_ssize_t full = count;
            count = 0;
            if (put_pairs(&ext, pairs, full) < 0) {
                Py_DECREF(key);
                Py_DECREF(value);
                goto decline;
            }
        }
        pairs[2 * count] = key;
        pairs[2 * count + 1] = value;
        count++;
    } while (take(c, ','));
    if (take(c, '}')) {
        Py_ssize_t last = count;
        count = 0;
        if (put_pairs(&ext, pairs, last) == 0)
            return ext;
    }
decline:
    for (Py_ssize_t i = 0; i < 2 * count; i++)
        Py_DECREF(pairs[i]);
    Py_XDECREF(ext);
    return NULL;
}

enum field { F_CODE, F_OPAQUE, F_FLAG, F_VERSION, F_LANGUAGE, F_REMARK, F_EXT, F_SERIALIZE, F_UNKNOWN };

/* A top-level key, its opening quote taken: which of the known ones it is, by its first byte and
 * one comparison of the name with its closing quote (any other key, escaped ones too: unknown). */
static enum field parse_key(struct cursor *c)
{
    static const struct { const char *text; enum field field; } keys[] = {
        {"code\"", F_CODE}, {"opaque\"", F_OPAQUE}, {"flag\"", F_FLAG}, {"version\"", F_VERSION},
        {"language\"", F_LANGUAGE}, {"remark\"", F_REMARK}, {"extFields\"", F_EXT},
        {"serializeTypeCurrentRPC\"", F_SERIALIZE},
    };
    int i;
    size_t length;
    if (c->p >= c->end)
        return F_UNKNOWN;
    switch (*c->p) {
    case 'c': i = 0; break;
    case 'o': i = 1; break;
    case 'f': i = 2; break;
    case 'v': i = 3; break;
    case 'l': i = 4; break;
    case 'r': i = 5; break;
    case 'e': i = 6; break;
    case 's': i = 7; break;
    default: return F_UNKNOWN;
    }
    length = strlen(keys[i].text);
    if ((size_t)(c->end - c->p) < length || memcmp(c->p, keys[i].text, length) != 0)
        return F_UNKNOWN;
    c->p += length;
    return keys[i].field;
}

/* One top-level value for ``field`` into h: 1, or 0 to decline (exception: a failure). */
static int parse_field(struct cursor *c, enum field field, RqJsonHeader *h)
{
    skip_space(c);
    if (c->p >= c->end)
        return 0;
    switch (field) {
    case F_CODE: return parse_int32(c, &h->code);
    case F_OPAQUE: return parse_int32(c, &h->opaque);
    case F_FLAG: return parse_int32(c, &h->flag);
    case F_VERSION: return parse_int32(c, &h->version);
    case F_LANGUAGE:
        c->p++;
        return c->p[-1] == '"' && (h->language = parse_string(c, 1)) != NULL;
    case F_REMARK:
        if (c->end - c->p >= 4 && memcmp(c->p, "null", 4) == 0) {
            c->p += 4;
            h->remark = Py_NewRef(Py_None);
            return 1;
        }
        c->p++;
        return c->p[-1] == '"' && (h->remark = parse_string(c, 0)) != NULL;
    case F_EXT:
        if (c->end - c->p >= 4 && memcmp(c->p, "null", 4) == 0) {
            c->p += 4;
            h->ext = PyDict_New();
        } else {
            c->p++;
            h->ext = c->p[-1] == '{' ? parse_ext(c) : NULL;
        }
        return h->ext != NULL;
    case F_SERIALIZE:
        if (c->end - c->p < 6 || memcmp(c->p, "\"JSON\"", 6) != 0)
            return 0;
        c->p += 6;
        return 1;
    default:
        return 0;
    }
}

void rq_json_header_clear(RqJsonHeader *h)
{
    Py_CLEAR(h->language);
    Py_CLEAR(h->remark);
    Py_CLEAR(h->ext);
}

int rq_json_header(const unsigned char *p, Py_ssize_t length, RqJsonHeader *h)
{
    struct cursor c = {p, p + length};
    unsigned seen = 0;
    memset(h, 0, sizeof(*h));
    if (init_names() < 0)
        return -1;
    if (!take(&c, '{'))
        return 0;
    do {
        enum field field;
        if (!take(&c, '"') || (field = parse_key(&c)) == F_UNKNOWN || (seen & (1u << field))
                || !take(&c, ':'))
            goto decline;
        seen |= 1u << field;
        if (!parse_field(&c, field, h))
            goto decline;
    } while (take(&c, ','));
    if (!take(&c, '}'))
        goto decline;
    skip_space(&c);
    if (c.p != c.end || !(seen & (1u << F_CODE)))
        goto decline;  /* trailing bytes; no code (the pure decoder's error) */
    h->has_opaque = (seen >> F_OPAQUE) & 1;
    h->has_flag = (seen >> F_FLAG) & 1;
    h->has_version = (seen >> F_VERSION) & 1;
    if (h->language == NULL)
        h->language = Py_NewRef(json_language);
    if (h->remark == NULL)
        h->remark = Py_NewRef(Py_None);
    if (h->ext == NULL && (h->ext = PyDict_New()) == NULL)
        goto decline;
    return 1;
decline:
    rq_json_header_clear(h);
    return PyErr_Occurred() ? -1 : 0;
}
