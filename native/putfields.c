/* The properties a put needs before its record is stored: TAGS (the queue unit's tag code),
 * UNIQ_KEY and KEYS (the index entries), in one pass over the encoded text.
 *
 * The C twin of rocketq.store.putting.index_properties, whose reference is three calls of
 * messageproperties.property_value: each name's value is that of its first entry (an entry
 * starts the text or follows \x02 and begins with ``name \x01``), up to the next \x02 or the
 * end. The scan walks the text's UTF-8 form: \x01 and \x02 are single bytes there and never
 * part of a longer character, so entry bounds are the same as in the text. Anything but an
 * exact str, or a str without a UTF-8 form (lone surrogates), goes to the pure function.
 */
#include "rocketq_native.h"

#include <string.h>

#define NAME_VALUE_SEP 0x01
#define ENTRY_SEP 0x02
#define WANTED 3

static const struct {
    const char *name;
    Py_ssize_t len;
} NAMES[WANTED] = {{"TAGS", 4}, {"UNIQ_KEY", 8}, {"KEYS", 4}};  /* the order of the result */

PyObject *rq_py_index_properties(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs)
{
    const char *text, *entry, *end, *stop;
    Py_ssize_t size;
    PyObject *found[WANTED] = {NULL, NULL, NULL}, *out = NULL;
    int missing = WANTED;
    if (nargs != 1 || !PyUnicode_CheckExact(args[0]))
        return rq_fallback(fallback, args, nargs);
    text = PyUnicode_AsUTF8AndSize(args[0], &size);
    if (text == NULL) {
        PyErr_Clear();
        return rq_fallback(fallback, args, nargs);
    }
    stop = text + size;
    for (entry = text; missing > 0; entry = end + 1) {
        end = memchr(entry, ENTRY_SEP, (size_t)(stop - entry));
        if (end == NULL)
            end = stop;
        for (int i = 0; i < WANTED; i++) {
            Py_ssize_t len = NAMES[i].len;
            if (found[i] == NULL && end - entry > len && entry[len] == NAME_VALUE_SEP
                    && memcmp(entry, NAMES[i].name, (size_t)len) == 0) {
                found[i] = PyUnicode_DecodeUTF8(entry + len + 1, end - entry - len - 1, "strict");
                if (found[i] == NULL)
                    goto done;
                missing--;
                break;
            }
        }
        if (end == stop)
            break;
    }
    for (int i = 0; i < WANTED; i++)
        if (found[i] == NULL)
            found[i] = Py_NewRef(Py_None);
    out = PyTuple_Pack(WANTED, found[0], found[1], found[2]);
done:
    for (int i = 0; i < WANTED; i++)
        Py_XDECREF(found[i]);
    return out;
}
