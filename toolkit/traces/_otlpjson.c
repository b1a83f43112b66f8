/*
 * The spans of an OTLP JSON document written in C, straight from the spans table's columns.
 *
 * The compiled twin of a pure path that stays the reference (setup.py marks this optional;
 * without a C compiler toolkit.traces.otlp serializes otlp_document's dicts with orjson, and
 * tests/test_otlp_json.py holds both to the same bytes):
 *
 * spans(head, tail, trace, span, parent, name, kind, start, end, attributes, status, message,
 *       events, kinds, statuses, dumps, timestamp, nanos[, fd]) -> bytes | int | None
 *   head and tail: the document's bytes before and after its spans. The next eleven, one item
 *   per span, each a list or a one-dimensional buffer of objects (a numpy object array: its
 *   items read in place, no list made): the ids, name, kind and status as the table has them,
 *   start and end as int nanoseconds (a list of ints, or an int64 buffer), attributes dicts,
 *   status messages, and events (each span's list of {"time", "name", "attributes"} dicts).
 *   kinds and statuses: the dicts of OTLP numbers; dumps: orjson.dumps, which writes each
 *   float (its shortest form is orjson's own); timestamp: pandas.Timestamp, whose instances'
 *   ``value`` is an event time's nanoseconds; nanos: what gives them of any other event time
 *   (``pd.Timestamp(t).value``).
 *   Returns head, the spans' JSON objects joined by "," and tail: exactly what orjson.dumps
 *   writes of otlp_document's, or None where a value is of a kind only the pure path reads (a
 *   str, int, float, list or dict subclass, a key no str, a kind or status no dict names, a str
 *   with a lone surrogate, an event time nanos refuses, ...): the caller then takes the pure
 *   path, which writes it or raises as it always did. Given a file descriptor ``fd``, the same
 *   bytes are written to it a chunk of about a megabyte at a time (never the whole document in
 *   memory) and their count returned; None there means that some were written, and the caller
 *   writes the file anew.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

/* The document, written into a bytes object grown as it fills (glibc's realloc of a large
 * block remaps its pages rather than copying them), and cut to its size at the end. */
typedef struct {
    PyObject *bytes;
    char *data;
    Py_ssize_t size, capacity;
} Buffer;

/* Return codes of the writers: 0 written, 1 outside the handled kinds, -1 a Python error. */
#define UNHANDLED 1

/* Room for ``more`` bytes past the end, the buffer doubled as often as it takes. */
static int grow(Buffer *out, Py_ssize_t more) {
    Py_ssize_t capacity = out->capacity;
    while (capacity < out->size + more) capacity *= 2;
    if (_PyBytes_Resize(&out->bytes, capacity) < 0) return -1;
    out->data = PyBytes_AS_STRING(out->bytes);
    out->capacity = capacity;
    return 0;
}

/* Inline, as put below: a document makes ~80 of them a span, most for a literal of a few bytes
 * that the compiler then copies in one or two moves (no call of memcpy, no call of a put). */
static inline int reserve(Buffer *out, Py_ssize_t more) {
    return out->size + more <= out->capacity ? 0 : grow(out, more);
}

static inline int put(Buffer *out, const char *text, Py_ssize_t size) {
    if (reserve(out, size) < 0) return -1;
    memcpy(out->data + out->size, text, (size_t)size);
    out->size += size;
    return 0;
}

#define PUT(out, literal) put((out), (literal), (Py_ssize_t)(sizeof(literal) - 1))

/* The buffer's bytes from ``at`` (``size`` of them, all before the end) appended at its end. */
static inline int copy_within(Buffer *out, Py_ssize_t at, Py_ssize_t size) {
    if (reserve(out, size) < 0) return -1;
    memcpy(out->data + out->size, out->data + at, (size_t)size);
    out->size += size;
    return 0;
}

/* Bytes a JSON string escapes: the control characters, '"' and '\\' (filled at import). */
static unsigned char ESCAPED[256];

/* Whether any of the 8 bytes of ``word`` is one JSON escapes (below 0x20, '"' or '\\'): the
 * classic "has a zero byte" tests, exact as a yes or no (a borrow only ever follows a byte that
 * already answers yes). Eight bytes a step, not one: strings are most of a document's bytes. */
#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
static inline int word_escapes(unsigned long long word) {
    unsigned long long quote = word ^ (ONES * '"'), slash = word ^ (ONES * '\\');
    return (((word - ONES * 0x20) & ~word) | ((quote - ONES) & ~quote)
            | ((slash - ONES) & ~slash)) & HIGHS ? 1 : 0;
}

/* Where each str was written before, in this document (its bytes are copied from there, not
 * escaped again): a span's keys, and the values its run shares with its other spans (workflow
 * and run ids, types), are the same objects span after span. Three kinds of writing are kept:
 * the quoted str alone, an attribute's opening with it as the key (``{"key":"...","value":``)
 * and its AnyValue (``{"stringValue":"..."}``). Direct-mapped by address and kind; an entry is
 * only trusted for its own object, which the caller's columns keep alive for the whole call,
 * and a clash only costs the writing anew. */
#define SEEN_SLOTS 8192
enum { QUOTED, KEY_OPENING, STRING_VALUE };
typedef struct {
    PyObject *text;
    Py_ssize_t at, size;
    unsigned kind, chunk;  /* chunk: the buffer's filling it was written in (see flush) */
} Seen;

/* A whole attribute's writing (``{"key":...,"value":{...}}``) by the addresses of its key and
 * its value (an exact str, int, float or bool: the same object always writes the same): most
 * of a span's attributes are its run's, or a few values (an attempt, a kind), the same pair of
 * objects span after span, one copy where the key's and the value's writings are two. */
#define PAIR_SLOTS 8192
typedef struct {
    PyObject *key, *value;
    Py_ssize_t at, size;
    unsigned chunk;
} Pair;

/* orjson's writing of a float, by its bits: the values of a column (queue times in
 * milliseconds) are few, each a new object span after span. */
#define FLOAT_SLOTS 512
typedef struct {
    uint64_t bits;
    unsigned chunk;  /* the call's: 0 never written */
    unsigned char size;
    char text[27];
} Float;

/* The digits of the OTLP number a kind or status name was given, by the name's and the
 * dict's addresses (the names are a few objects, each on thousands of spans). */
#define NUMBER_SLOTS 64
typedef struct {
    PyObject *numbers, *name;
    unsigned chunk;
    unsigned char size;
    char text[23];
} Number;

typedef struct {
    Buffer out;
    int fd;  /* where the document goes chunk by chunk, or -1: all of it returned as bytes */
    unsigned chunk, call;  /* the filling and the call entries are valid in (never 0) */
    PyObject *dumps, *timestamp, *nanos;
    Seen seen[SEEN_SLOTS];
    Pair pairs[PAIR_SLOTS];
    Float floats[FLOAT_SLOTS];
    Number numbers[NUMBER_SLOTS];
} Writer;

/* Every call and every filling of the buffer gets a number of its own, never given again (in
 * a process's life, short of 2**32 of them), so that one writer's slots are used by call after
 * call without being cleared: an entry of an earlier one never matches. */
static unsigned last_number;

static inline unsigned new_number(void) {
    if (++last_number == 0) last_number = 1;
    return last_number;
}

static inline Seen *seen_slot(Writer *writer, PyObject *text, unsigned kind) {
    return &writer->seen[(((size_t)text >> 4) ^ ((size_t)kind << 11)) & (SEEN_SLOTS - 1)];
}

/* The writing of ``text`` of that kind copied from its last place: 1 done, 0 none kept. */
static inline int copy_seen(Writer *writer, PyObject *text, unsigned kind) {
    Seen *seen = seen_slot(writer, text, kind);
    if (seen->text != text || seen->kind != kind || seen->chunk != writer->chunk) return 0;
    return copy_within(&writer->out, seen->at, seen->size) < 0 ? -1 : 1;
}

/* Keep where the writing of ``text`` of that kind, from ``begin`` to the end, is. */
static inline void remember(Writer *writer, PyObject *text, unsigned kind, Py_ssize_t begin) {
    Seen *seen = seen_slot(writer, text, kind);
    seen->text = text;
    seen->kind = kind;
    seen->chunk = writer->chunk;
    seen->at = begin;
    seen->size = writer->out.size - begin;
}

static inline Pair *pair_slot(Writer *writer, PyObject *key, PyObject *value) {
    size_t hash = ((size_t)key >> 4) * 0x9E3779B97F4A7C15ULL ^ ((size_t)value >> 4);
    return &writer->pairs[(hash ^ (hash >> 17)) & (PAIR_SLOTS - 1)];
}

/* Where the document goes to a file: the buffer's bytes written to it and the buffer emptied
 * (its pages, used again, stay in memory: a document of many megabytes is never held whole).
 * What was written before is no longer there to copy from: a new chunk number voids it. */
static int flush(Writer *writer) {
    Buffer *out = &writer->out;
    Py_ssize_t at = 0;
    while (at < out->size) {
        Py_ssize_t wrote;
        Py_BEGIN_ALLOW_THREADS
        wrote = write(writer->fd, out->data + at, (size_t)(out->size - at));
        Py_END_ALLOW_THREADS
        if (wrote < 0) {
            if (errno == EINTR) {
                if (PyErr_CheckSignals() < 0) return -1;
                continue;
            }
            PyErr_SetFromErrno(PyExc_OSError);
            return -1;
        }
        at += wrote;
    }
    out->size = 0;
    writer->chunk = new_number();
    return 0;
}

/* A file's chunk: written out once the buffer holds this much, between two spans. */
#define CHUNK (1 << 20)

/* A str as orjson writes it: UTF-8 unescaped but for '"', '\\' and the control characters
 * (\b \t \n \f \r by name, the others as \u00xx). */
static int put_str(Writer *writer, PyObject *text) {
    Buffer *out = &writer->out;
    if (!PyUnicode_CheckExact(text)) return UNHANDLED;
    int copied = copy_seen(writer, text, QUOTED);
    if (copied) return copied < 0 ? -1 : 0;
    Py_ssize_t size;
    const char *utf8;
    if (PyUnicode_IS_COMPACT_ASCII(text)) {  /* most: its bytes in place, ASCII as UTF-8 */
        size = PyUnicode_GET_LENGTH(text);
        utf8 = (const char *)PyUnicode_DATA(text);
        if (size >= 8) {  /* words in and out, the last one overlapping the one before */
            if (reserve(out, size + 2) < 0) return -1;
            Py_ssize_t begin = out->size, i = 0;
            char *at = out->data + begin + 1;
            unsigned long long word;
            for (; i + 8 <= size; i += 8) {
                memcpy(&word, utf8 + i, 8);
                if (word_escapes(word)) break;
                memcpy(at + i, &word, 8);
            }
            if (i + 8 > size) {  /* no escape in the whole words: the last eight bytes */
                memcpy(&word, utf8 + size - 8, 8);
                if (!word_escapes(word)) {
                    memcpy(at + size - 8, &word, 8);
                    at[-1] = '"';
                    at[size] = '"';
                    out->size = begin + size + 2;
                    remember(writer, text, QUOTED, begin);
                    return 0;
                }
            }
        }  /* else a character to escape, or a short one: the general way */
    } else {
        utf8 = PyUnicode_AsUTF8AndSize(text, &size);
    }
    if (utf8 == NULL) {  /* a lone surrogate: orjson refuses it, in the pure path */
        PyErr_Clear();
        return UNHANDLED;
    }
    if (reserve(out, 2 + 6 * size) < 0) return -1;
    Py_ssize_t begin = out->size;
    char *at = out->data + out->size;
    *at++ = '"';
    static const char hex[] = "0123456789abcdef";
    Py_ssize_t i = 0;
    while (i < size) {
        Py_ssize_t run = i;  /* the characters written as they are, copied at once */
        unsigned long long word;
        while (run + 8 <= size) {
            memcpy(&word, utf8 + run, 8);
            if (word_escapes(word)) break;
            run += 8;
        }
        while (run < size && !ESCAPED[(unsigned char)utf8[run]]) run++;
        memcpy(at, utf8 + i, (size_t)(run - i));
        at += run - i;
        if (run == size) break;
        unsigned char c = (unsigned char)utf8[run];
        i = run + 1;
        *at++ = '\\';
        switch (c) {
            case '"': *at++ = '"'; break;
            case '\\': *at++ = '\\'; break;
            case '\b': *at++ = 'b'; break;
            case '\t': *at++ = 't'; break;
            case '\n': *at++ = 'n'; break;
            case '\f': *at++ = 'f'; break;
            case '\r': *at++ = 'r'; break;
            default:
                *at++ = 'u';
                *at++ = '0';
                *at++ = '0';
                *at++ = hex[c >> 4];
                *at++ = hex[c & 15];
        }
    }
    *at++ = '"';
    out->size = at - out->data;
    remember(writer, text, QUOTED, begin);
    return 0;
}

/* "00" to "99", each pair of digits at twice its value. */
static const char PAIRS[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* The 8 digits of n (below 10**8, zero-padded) at ``at``: four independent pairs in 32-bit
 * arithmetic, not a chain of 64-bit divisions. */
static inline void eight_digits(char *at, uint32_t n) {
    uint32_t high = n / 10000, low = n % 10000;
    memcpy(at, PAIRS + 2 * (high / 100), 2);
    memcpy(at + 2, PAIRS + 2 * (high % 100), 2);
    memcpy(at + 4, PAIRS + 2 * (low / 100), 2);
    memcpy(at + 6, PAIRS + 2 * (low % 100), 2);
}

/* The decimal digits of ``number``, as str() writes them, into ``end``'s 24 bytes before it;
 * returns where they begin (no snprintf: ~40,000 numbers a document, a time of nineteen
 * digits each in two 8-digit blocks and the rest). */
static inline char *int_digits(char *end, long long number) {
    char *at = end;
    unsigned long long rest = number < 0 ? 0ULL - (unsigned long long)number
                                         : (unsigned long long)number;
    while (rest >= 100000000ULL) {
        at -= 8;
        eight_digits(at, (uint32_t)(rest % 100000000ULL));
        rest /= 100000000ULL;
    }
    uint32_t small = (uint32_t)rest;  /* below 10**8 */
    while (small >= 100) {
        at -= 2;
        memcpy(at, PAIRS + 2 * (small % 100), 2);
        small /= 100;
    }
    if (small >= 10) {
        at -= 2;
        memcpy(at, PAIRS + 2 * small, 2);
    } else {
        *--at = (char)('0' + small);
    }
    if (number < 0) *--at = '-';
    return at;
}

static inline int put_long(Buffer *out, long long number) {
    char digits[24];
    char *end = digits + sizeof digits, *at = int_digits(end, number);
    return put(out, at, end - at);
}

/* An int's decimal digits, as str() writes them. */
static int put_int(Buffer *out, PyObject *value) {
    int overflow;
    long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (number == -1 && PyErr_Occurred()) return -1;
    if (!overflow) return put_long(out, number);
    PyObject *text = PyObject_Str(value);
    if (text == NULL) return -1;
    Py_ssize_t size;
    const char *utf8 = PyUnicode_AsUTF8AndSize(text, &size);
    int done = utf8 == NULL ? -1 : put(out, utf8, size);
    Py_DECREF(text);
    return done;
}

/* A float as orjson writes it (its own shortest form, "null" for nan and the infinities),
 * from the writer's slots where the same value was written before in this call. */
static int put_float(Writer *writer, PyObject *value) {
    Buffer *out = &writer->out;
    double number = PyFloat_AS_DOUBLE(value);
    uint64_t bits;
    memcpy(&bits, &number, sizeof bits);
    Float *slot = &writer->floats[((bits * 0x9E3779B97F4A7C15ULL) >> 55) & (FLOAT_SLOTS - 1)];
    if (slot->chunk == writer->call && slot->bits == bits)
        return put(out, slot->text, slot->size);
    PyObject *written = PyObject_CallOneArg(writer->dumps, value);
    if (written == NULL) return -1;
    if (!PyBytes_Check(written)) {
        Py_DECREF(written);
        return UNHANDLED;
    }
    Py_ssize_t size = PyBytes_GET_SIZE(written);
    int done = put(out, PyBytes_AS_STRING(written), size);
    if (done == 0 && size <= (Py_ssize_t)sizeof slot->text) {
        slot->chunk = writer->call;
        slot->bits = bits;
        slot->size = (unsigned char)size;
        memcpy(slot->text, PyBytes_AS_STRING(written), (size_t)size);
    }
    Py_DECREF(written);
    return done;
}

/* An OTLP AnyValue of an attribute value (otlp._value). */
static int put_value(Writer *writer, PyObject *value, int depth) {
    Buffer *out = &writer->out;
    int done;
    if (PyUnicode_CheckExact(value)) {
        if ((done = copy_seen(writer, value, STRING_VALUE)) != 0) return done < 0 ? -1 : 0;
        Py_ssize_t begin = out->size;
        if (PUT(out, "{\"stringValue\":") < 0) return -1;
        if ((done = put_str(writer, value)) != 0) return done;
        if (PUT(out, "}") < 0) return -1;
        remember(writer, value, STRING_VALUE, begin);
        return 0;
    }
    if (value == Py_True) return PUT(out, "{\"boolValue\":true}");
    if (value == Py_False) return PUT(out, "{\"boolValue\":false}");
    if (PyLong_CheckExact(value)) {
        if (PUT(out, "{\"intValue\":\"") < 0 || put_int(out, value) < 0) return -1;
        return PUT(out, "\"}");
    }
    if (PyFloat_CheckExact(value)) {
        if (PUT(out, "{\"doubleValue\":") < 0) return -1;
        if ((done = put_float(writer, value)) != 0) return done;
        return PUT(out, "}");
    }
    if ((PyList_CheckExact(value) || PyTuple_CheckExact(value)) && depth < 32) {
        if (PUT(out, "{\"arrayValue\":{\"values\":[") < 0) return -1;
        PyObject *items = PySequence_Fast(value, "");
        if (items == NULL) return -1;
        done = 0;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(items) && done == 0; i++) {
            if (i && PUT(out, ",") < 0) done = -1;
            else done = put_value(writer, PySequence_Fast_GET_ITEM(items, i), depth + 1);
        }
        Py_DECREF(items);
        if (done != 0) return done;
        return PUT(out, "]}}");
    }
    return UNHANDLED;  /* None, other types, subclasses: str(value) and the like, in Python */
}

/* One attribute's {"key", "value"} object (otlp._Entries' entry). */
static int put_attribute(Writer *writer, PyObject *key, PyObject *value) {
    Buffer *out = &writer->out;
    int done;
    /* A pair is kept only of a value that is an exact str, int, float or bool (immutable: the
     * same object writes the same), and this one is alive: a match is of such a value. */
    Pair *pair = pair_slot(writer, key, value);
    if (pair->key == key && pair->value == value && pair->chunk == writer->chunk)
        return copy_within(out, pair->at, pair->size);
    if (!(PyUnicode_CheckExact(value) || PyLong_CheckExact(value) || PyFloat_CheckExact(value)
          || PyBool_Check(value)))
        pair = NULL;
    Py_ssize_t begin = out->size;
    if ((done = copy_seen(writer, key, KEY_OPENING)) < 0) return -1;
    if (!done) {
        if (PUT(out, "{\"key\":") < 0) return -1;
        if ((done = put_str(writer, key)) != 0) return done;
        if (PUT(out, ",\"value\":") < 0) return -1;
        remember(writer, key, KEY_OPENING, begin);
    }
    if ((done = put_value(writer, value, 0)) != 0) return done;
    if (PUT(out, "}") < 0) return -1;
    if (pair != NULL) {
        pair->key = key;
        pair->value = value;
        pair->chunk = writer->chunk;
        pair->at = begin;
        pair->size = out->size - begin;
    }
    return 0;
}

/* A span's or an event's "attributes" array (otlp._Entries: one {"key", "value"} per item,
 * in order). */
static int put_attributes(Writer *writer, PyObject *attributes) {
    Buffer *out = &writer->out;
    if (!PyDict_CheckExact(attributes)) return UNHANDLED;
    if (PUT(out, "[") < 0) return -1;
    PyObject *key, *value;
    Py_ssize_t at = 0;
    int first = 1, done;
    while (PyDict_Next(attributes, &at, &key, &value)) {
        if (!first && PUT(out, ",") < 0) return -1;
        first = 0;
        if ((done = put_attribute(writer, key, value)) != 0) return done;
    }
    return PUT(out, "]");
}

/* The OTLP number a dict gives a name (otlp._KIND, otlp._STATUS), written. */
static int put_number(Writer *writer, PyObject *numbers, PyObject *name) {
    Buffer *out = &writer->out;
    if (!PyUnicode_CheckExact(name)) return UNHANDLED;  /* hashing another type may raise */
    size_t hash = ((size_t)name >> 4) ^ ((size_t)numbers >> 6);
    Number *slot = &writer->numbers[(hash ^ (hash >> 7)) & (NUMBER_SLOTS - 1)];
    if (slot->name == name && slot->numbers == numbers && slot->chunk == writer->call)
        return put(out, slot->text, slot->size);
    PyObject *number = PyDict_GetItemWithError(numbers, name);
    if (number == NULL) return PyErr_Occurred() ? -1 : UNHANDLED;
    if (!PyLong_CheckExact(number)) return UNHANDLED;
    int overflow;
    long long value = PyLong_AsLongLongAndOverflow(number, &overflow);
    if (value == -1 && PyErr_Occurred()) return -1;
    if (overflow) return put_int(out, number);
    char digits[24];
    char *end = digits + sizeof digits, *at = int_digits(end, value);
    slot->name = name;
    slot->numbers = numbers;
    slot->chunk = writer->call;
    slot->size = (unsigned char)(end - at);
    memcpy(slot->text, at, (size_t)(end - at));
    return put(out, at, end - at);
}

/* A column of objects: a list's items or a buffer's, read in place. */
typedef struct {
    const char *data;
    Py_ssize_t stride, length;
    Py_buffer view;
    int viewed, ints;  /* ints: a buffer of int64s, not of objects */
} Column;

static int open_column(Column *column, PyObject *source, int times) {
    memset(column, 0, sizeof *column);
    if (PyList_CheckExact(source)) {
        column->data = (const char *)PySequence_Fast_ITEMS(source);
        column->stride = sizeof(PyObject *);
        column->length = PyList_GET_SIZE(source);
        return 0;
    }
    if (PyObject_GetBuffer(source, &column->view, PyBUF_STRIDES | PyBUF_FORMAT) < 0) return -1;
    column->viewed = 1;
    const char *format = column->view.format ? column->view.format : "B";
    if (*format == '=' || *format == '@') format++;
    int objects = strcmp(format, "O") == 0 && column->view.itemsize == sizeof(PyObject *);
    int ints = times && (strcmp(format, "l") == 0 || strcmp(format, "q") == 0)
               && column->view.itemsize == 8;
    if (column->view.ndim != 1 || !(objects || ints)) {
        PyErr_SetString(PyExc_TypeError,
                        "spans: a column must be a list or a 1-d buffer of objects (of int64s "
                        "for the times)");
        return -1;
    }
    column->data = column->view.buf;
    column->stride = column->view.strides[0];
    column->length = column->view.shape[0];
    column->ints = ints;
    return 0;
}

static inline PyObject *item(const Column *column, Py_ssize_t i) {
    PyObject *found;
    memcpy(&found, column->data + i * column->stride, sizeof found);
    return found;
}

/* A time of a column, in nanoseconds, quoted (an int64 buffer's item, or a list's int). */
static int put_time(Writer *writer, const Column *column, Py_ssize_t i) {
    Buffer *out = &writer->out;
    char digits[26];
    char *end = digits + sizeof digits, *at;
    if (column->ints) {
        long long nanos;
        memcpy(&nanos, column->data + i * column->stride, sizeof nanos);
        if (nanos >= 1000000000000000000LL) {  /* since 2001-09-09: nineteen digits, in place */
            if (reserve(out, 21) < 0) return -1;
            at = out->data + out->size;
            uint32_t top = (uint32_t)(nanos / 10000000000000000LL);  /* 100 to 922 */
            unsigned long long rest = (unsigned long long)(nanos % 10000000000000000LL);
            at[0] = '"';
            at[1] = (char)('0' + top / 100);
            memcpy(at + 2, PAIRS + 2 * (top % 100), 2);
            eight_digits(at + 4, (uint32_t)(rest / 100000000ULL));
            eight_digits(at + 12, (uint32_t)(rest % 100000000ULL));
            at[20] = '"';
            out->size += 21;
            return 0;
        }
        *--end = '"';
        at = int_digits(end, nanos);
        *--at = '"';
        return put(out, at, end + 1 - at);
    }
    PyObject *nanos = item(column, i);
    if (!PyLong_CheckExact(nanos)) return UNHANDLED;
    if (PUT(out, "\"") < 0 || put_int(out, nanos) < 0) return -1;
    return PUT(out, "\"");
}

/* Whether a span's optional part is written (the pure path's ``if value:``): an exact str by
 * its length, None not; anything else asked. -1: its truth raises (pd.NA), the pure path's. */
static inline int truth(PyObject *value) {
    if (value == Py_None) return 0;
    if (PyUnicode_CheckExact(value)) return PyUnicode_GET_LENGTH(value) != 0;
    int answer = PyObject_IsTrue(value);
    if (answer < 0) PyErr_Clear();
    return answer;
}

static PyObject *TIME, *NAME_KEY, *ATTRIBUTES_KEY, *VALUE;

/* An event's time in nanoseconds (``pd.Timestamp(t).value``), written in quotes: a Timestamp's
 * own ``value``, anything else's by ``nanos``. Whatever either refuses, the pure path says. */
static int put_event_time(Writer *writer, PyObject *time) {
    PyObject *nanos = Py_IS_TYPE(time, (PyTypeObject *)writer->timestamp)
                          ? PyObject_GetAttr(time, VALUE)
                          : PyObject_CallOneArg(writer->nanos, time);
    if (nanos == NULL) {
        PyErr_Clear();
        return UNHANDLED;
    }
    int done = UNHANDLED;
    if (PyLong_CheckExact(nanos)) {
        Buffer *out = &writer->out;
        done = PUT(out, "\"") < 0 || put_int(out, nanos) < 0 || PUT(out, "\"") < 0 ? -1 : 0;
    }
    Py_DECREF(nanos);
    return done;
}

/* A span's "events" array (otlp._events: {"timeUnixNano", "name", "attributes"} of each). */
static int put_events(Writer *writer, PyObject *events) {
    Buffer *out = &writer->out;
    int done;
    if (PUT(out, ",\"events\":[") < 0) return -1;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(events); i++) {
        PyObject *event = PyList_GET_ITEM(events, i);
        if (!PyDict_CheckExact(event)) return UNHANDLED;
        PyObject *time = PyDict_GetItemWithError(event, TIME);
        PyObject *name = time ? PyDict_GetItemWithError(event, NAME_KEY) : NULL;
        PyObject *attributes = name ? PyDict_GetItemWithError(event, ATTRIBUTES_KEY) : NULL;
        if (attributes == NULL) {  /* a key missing: the pure path's KeyError */
            if (PyErr_Occurred()) PyErr_Clear();
            return UNHANDLED;
        }
        Py_INCREF(time);  /* nanos runs Python code: the event's items held meanwhile */
        Py_INCREF(name);
        Py_INCREF(attributes);
        done = i ? PUT(out, ",") : 0;
        if (done == 0) done = PUT(out, "{\"timeUnixNano\":");
        if (done == 0) done = put_event_time(writer, time);
        if (done == 0) done = PUT(out, ",\"name\":");
        if (done == 0) done = put_str(writer, name);
        if (done == 0) done = PUT(out, ",\"attributes\":");
        if (done == 0) done = put_attributes(writer, attributes);
        if (done == 0) done = PUT(out, "}");
        Py_DECREF(time);
        Py_DECREF(name);
        Py_DECREF(attributes);
        if (done != 0) return done;
    }
    return PUT(out, "]");
}

enum { TRACE, SPAN, PARENT, NAME, KIND, START, END, ATTRIBUTES, STATUS, MESSAGE, EVENTS, COLUMNS };

/* One span object, as otlp._document builds it (the keys in that order). */
static int put_span(Writer *writer, const Column *columns, Py_ssize_t i, PyObject *kinds,
                    PyObject *statuses) {
    Buffer *out = &writer->out;
    int done, truthy;
    if (PUT(out, "{\"traceId\":") < 0) return -1;
    if ((done = put_str(writer, item(&columns[TRACE], i))) != 0) return done;
    if (PUT(out, ",\"spanId\":") < 0) return -1;
    if ((done = put_str(writer, item(&columns[SPAN], i))) != 0) return done;
    if (PUT(out, ",\"name\":") < 0) return -1;
    if ((done = put_str(writer, item(&columns[NAME], i))) != 0) return done;
    if (PUT(out, ",\"kind\":") < 0) return -1;
    if ((done = put_number(writer, kinds, item(&columns[KIND], i))) != 0) return done;
    if (PUT(out, ",\"startTimeUnixNano\":") < 0) return -1;
    if ((done = put_time(writer, &columns[START], i)) != 0) return done;
    if (PUT(out, ",\"endTimeUnixNano\":") < 0) return -1;
    if ((done = put_time(writer, &columns[END], i)) != 0) return done;
    if (PUT(out, ",\"attributes\":") < 0) return -1;
    if ((done = put_attributes(writer, item(&columns[ATTRIBUTES], i))) != 0) return done;
    if (PUT(out, ",\"status\":{\"code\":") < 0) return -1;
    if ((done = put_number(writer, statuses, item(&columns[STATUS], i))) != 0) return done;
    PyObject *message = item(&columns[MESSAGE], i);
    if ((truthy = truth(message)) < 0) return UNHANDLED;  /* pd.NA: the pure path raises */
    if (truthy) {
        if (PUT(out, ",\"message\":") < 0) return -1;
        if ((done = put_str(writer, message)) != 0) return done;
    }
    if (PUT(out, "}") < 0) return -1;
    PyObject *parent = item(&columns[PARENT], i);
    if ((truthy = truth(parent)) < 0) return UNHANDLED;
    if (truthy) {
        if (PUT(out, ",\"parentSpanId\":") < 0) return -1;
        if ((done = put_str(writer, parent)) != 0) return done;
    }
    PyObject *events = item(&columns[EVENTS], i);
    if (PyList_CheckExact(events)) {
        if (PyList_GET_SIZE(events) && (done = put_events(writer, events)) != 0) return done;
    } else if ((truthy = truth(events)) != 0) {  /* a truthy other kind: the pure path's */
        return UNHANDLED;
    }
    return PUT(out, "}");
}

/* The writer of the calls: its slots (~700 kB) allocated once and kept, not zeroed and faulted
 * in anew each call; a call made while it is in use (another thread's, while a chunk is
 * written without the GIL) gets one of its own. */
static Writer *kept_writer;
static int kept_in_use;

static PyObject *spans(PyObject *self, PyObject *args) {
    PyObject *sources[COLUMNS], *kinds, *statuses, *dumps, *timestamp, *nanos;
    const char *head, *tail;
    Py_ssize_t head_size, tail_size;
    int fd = -1;
    if (!PyArg_ParseTuple(args, "y#y#OOOOOOOOOOOO!O!OOO|i", &head, &head_size, &tail,
                          &tail_size, &sources[TRACE], &sources[SPAN], &sources[PARENT],
                          &sources[NAME], &sources[KIND], &sources[START], &sources[END],
                          &sources[ATTRIBUTES], &sources[STATUS], &sources[MESSAGE],
                          &sources[EVENTS], &PyDict_Type, &kinds, &PyDict_Type, &statuses,
                          &dumps, &timestamp, &nanos, &fd))
        return NULL;
    if (!PyType_Check(timestamp)) {
        PyErr_SetString(PyExc_TypeError, "spans: timestamp must be a type");
        return NULL;
    }
    Column columns[COLUMNS];
    int opened = 0, failed = 0;
    for (; opened < COLUMNS && !failed; opened++)
        failed = open_column(&columns[opened], sources[opened],
                             opened == START || opened == END) < 0;
    Py_ssize_t count = failed ? 0 : columns[TRACE].length;
    for (int c = 0; c < COLUMNS && !failed; c++) {
        if (columns[c].length != count) {
            PyErr_SetString(PyExc_ValueError, "spans: the columns differ in length");
            failed = 1;
        }
    }
    Writer *writer = NULL;
    if (!failed) {
        if (kept_in_use) {
            writer = PyMem_Calloc(1, sizeof(Writer));
        } else {
            if (kept_writer == NULL) kept_writer = PyMem_Calloc(1, sizeof(Writer));
            writer = kept_writer;
            if (writer) kept_in_use = 1;
        }
        if (writer == NULL) {
            PyErr_NoMemory();
            failed = 1;
        }
    }
    PyObject *result = NULL;
    Buffer *out = writer ? &writer->out : NULL;
    if (!failed) {
        writer->fd = fd;
        writer->call = writer->chunk = new_number();
        writer->dumps = dumps;
        writer->timestamp = timestamp;
        writer->nanos = nanos;
        /* A span: ~1.3 kB; to a file, a chunk and the span that crosses it. */
        out->size = 0;
        out->capacity = head_size + tail_size
                        + (fd >= 0 ? CHUNK + (1 << 16) : 1400 * (count + 1));
        out->bytes = PyBytes_FromStringAndSize(NULL, out->capacity);
        failed = out->bytes == NULL;
    }
    if (!failed) {
        out->data = PyBytes_AS_STRING(out->bytes);
        long long written = 0;  /* to the file, before the buffer's bytes */
        int done = put(out, head, head_size);
        for (Py_ssize_t i = 0; i < count && done == 0; i++) {
            if (i && PUT(out, ",") < 0) done = -1;
            else done = put_span(writer, columns, i, kinds, statuses);
            if (done == 0 && fd >= 0 && out->size >= CHUNK) {
                written += out->size;
                done = flush(writer);
            }
        }
        if (done == 0) done = put(out, tail, tail_size);
        if (done == 0 && fd >= 0) {
            written += out->size;
            done = flush(writer);
        }
        PyObject *bytes = out->bytes;
        out->bytes = NULL;
        if (fd >= 0) {  /* the buffer was only the chunks' */
            Py_XDECREF(bytes);
            if (done == 0) result = PyLong_FromLongLong(written);
        } else {
            if (done == 0 && _PyBytes_Resize(&bytes, out->size) == 0) result = bytes;
            else Py_XDECREF(bytes);  /* NULL where the resize failed */
        }
        if (result == NULL && done == UNHANDLED) result = Py_NewRef(Py_None);
    }
    if (writer == kept_writer && writer != NULL) kept_in_use = 0;
    else PyMem_Free(writer);
    for (int c = 0; c < opened; c++)
        if (columns[c].viewed) PyBuffer_Release(&columns[c].view);
    return result;
}

static PyMethodDef methods[] = {
    {"spans", spans, METH_VARARGS,
     "head, the spans' OTLP JSON objects joined by ',' as orjson writes them, tail; or None. "
     "Given a file descriptor last, written to it in chunks and the bytes' count returned."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_otlpjson", NULL, -1, methods};

PyMODINIT_FUNC PyInit__otlpjson(void) {
    for (int c = 0; c < 0x20; c++) ESCAPED[c] = 1;
    ESCAPED['"'] = ESCAPED['\\'] = 1;
    if ((TIME = PyUnicode_InternFromString("time")) == NULL
        || (NAME_KEY = PyUnicode_InternFromString("name")) == NULL
        || (ATTRIBUTES_KEY = PyUnicode_InternFromString("attributes")) == NULL
        || (VALUE = PyUnicode_InternFromString("value")) == NULL)
        return NULL;
    return PyModule_Create(&module);
}
