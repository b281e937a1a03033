/* Java's String.hashCode: h = 31*h + unit over the UTF-16 code units, modulo 2**32.
 *
 * A Python str holds code points; one above U+FFFF is two UTF-16 units (a surrogate pair).
 * A str holding a lone surrogate cannot be encoded as UTF-16 at all: the pure code raises
 * UnicodeEncodeError there, so this one reports it and lets the pure code raise.
 */
#include "rocketq_native.h"

int rq_java_hash(PyObject *text, uint32_t *hash_out, uint32_t *power_out)
{
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    uint32_t h = 0, power = 1;
    if (kind == PyUnicode_1BYTE_KIND) {
        const unsigned char *s = data;
        for (Py_ssize_t i = 0; i < n; i++) {
            h = h * 31u + s[i];
            power *= 31u;
        }
    } else {
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_UCS4 cp = PyUnicode_READ(kind, data, i);
            if (cp < 0x10000) {
                if (cp >= 0xD800 && cp <= 0xDFFF)
                    return -1;
                h = h * 31u + cp;
                power *= 31u;
            } else {
                cp -= 0x10000;
                h = h * 31u + (0xD800u + (cp >> 10));
                h = h * 31u + (0xDC00u + (cp & 0x3FFu));
                power *= 31u * 31u;
            }
        }
    }
    *hash_out = h;
    if (power_out != NULL)
        *power_out = power;
    return 0;
}

PyObject *rq_py_java_hash_unsigned(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs)
{
    uint32_t h;
    if (nargs != 1 || !PyUnicode_CheckExact(args[0]) || rq_java_hash(args[0], &h, NULL) < 0)
        return rq_fallback(fallback, args, nargs);
    return PyLong_FromUnsignedLong(h);
}

PyObject *rq_py_java_hash(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs)
{
    uint32_t h;
    if (nargs != 1 || !PyUnicode_CheckExact(args[0]) || rq_java_hash(args[0], &h, NULL) < 0)
        return rq_fallback(fallback, args, nargs);
    return PyLong_FromLong((long)(int32_t)h);
}

PyObject *rq_py_java_hash_after(PyObject *fallback, PyObject *context, PyObject *const *args, Py_ssize_t nargs)
{
    uint32_t h, power, prefix;
    if (nargs != 2 || !PyLong_CheckExact(args[0]) || !PyUnicode_CheckExact(args[1])
            || rq_java_hash(args[1], &h, &power) < 0)
        return rq_fallback(fallback, args, nargs);
    /* any int, negative or huge: its value modulo 2**32, as the pure code's final mask gives */
    prefix = (uint32_t)PyLong_AsUnsignedLongLongMask(args[0]);
    if (PyErr_Occurred())
        return NULL;
    return PyLong_FromUnsignedLong(prefix * power + h);
}
