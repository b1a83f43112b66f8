/*
 * The spans of an OTLP JSON document written in C, straight from the spans table's columns.
 *
 * The compiled twin of a pure path that stays the reference (setup.py marks this optional;
 * without a C compiler toolkit.traces.otlp serializes otlp_document's dicts with orjson, and
 * tests/test_otlp_json.py holds both to the same bytes):
 *
 * spans(head, tail, trace, span, parent, name, kind, start, end, attributes, status, message,
 *       events, kinds, statuses, dumps[, fd]) -> bytes | int | None
 *   head and tail: the document's bytes before and after its spans. The others but the last
 *   three lists, one item per span: the ids, name, kind and
 *   status as the table has them, start and end as int nanoseconds, attributes dicts, status
 *   messages, and events as bytes (the span's "events" array, serialized already) or None (no
 *   events). kinds and statuses: the dicts of OTLP numbers; dumps: orjson.dumps, which writes
 *   each float (its shortest form is orjson's own).
 *   Returns head, the spans' JSON objects joined by "," and tail: exactly what orjson.dumps
 *   writes of otlp_document's, or None where a value is of a kind only the pure path reads (a str, int,
 *   float, list or dict subclass, a key no str, a kind or status no dict names, a str with a
 *   lone surrogate, ...): the caller then takes the pure path, which writes it or raises as it
 *   always did. Given a file descriptor ``fd``, the same bytes are written to it a chunk of
 *   about a megabyte at a time (never the whole document in memory) and their count returned;
 *   None there means that some were written, and the caller writes the file anew.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
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
    int kind, chunk;  /* chunk: the buffer's filling it was written in (see flush) */
} Seen;

typedef struct {
    Buffer out;
    int fd;  /* where the document goes chunk by chunk, or -1: all of it returned as bytes */
    int chunk;
    Seen seen[SEEN_SLOTS];
} Writer;

static inline Seen *seen_slot(Writer *writer, PyObject *text, int kind) {
    return &writer->seen[(((size_t)text >> 4) ^ ((size_t)kind << 11)) & (SEEN_SLOTS - 1)];
}

/* The writing of ``text`` of that kind copied from its last place: 1 done, 0 none kept. */
static inline int copy_seen(Writer *writer, PyObject *text, int kind) {
    Seen *seen = seen_slot(writer, text, kind);
    if (seen->text != text || seen->kind != kind || seen->chunk != writer->chunk) return 0;
    Buffer *out = &writer->out;
    if (reserve(out, seen->size) < 0) return -1;
    memcpy(out->data + out->size, out->data + seen->at, (size_t)seen->size);
    out->size += seen->size;
    return 1;
}

/* Keep where the writing of ``text`` of that kind, from ``begin`` to the end, is. */
static inline void remember(Writer *writer, PyObject *text, int kind, Py_ssize_t begin) {
    Seen *seen = seen_slot(writer, text, kind);
    seen->text = text;
    seen->kind = kind;
    seen->chunk = writer->chunk;
    seen->at = begin;
    seen->size = writer->out.size - begin;
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
    writer->chunk++;
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
    const char *utf8 = PyUnicode_AsUTF8AndSize(text, &size);
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

/* An int's decimal digits, as str() writes them. */
static int put_int(Buffer *out, PyObject *value) {
    int overflow;
    long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (number == -1 && PyErr_Occurred()) return -1;
    if (!overflow) {  /* the digits from the last (no snprintf: ~40,000 numbers a document) */
        char digits[24];
        char *end = digits + sizeof digits, *at = end;
        unsigned long long rest = number < 0 ? 0ULL - (unsigned long long)number
                                             : (unsigned long long)number;
        while (rest >= 100) {  /* two digits a step (a time has nineteen) */
            unsigned pair = (unsigned)(rest % 100);
            rest /= 100;
            at -= 2;
            memcpy(at, PAIRS + 2 * pair, 2);
        }
        if (rest >= 10) {
            at -= 2;
            memcpy(at, PAIRS + 2 * rest, 2);
        } else {
            *--at = (char)('0' + rest);
        }
        if (number < 0) *--at = '-';
        return put(out, at, end - at);
    }
    PyObject *text = PyObject_Str(value);
    if (text == NULL) return -1;
    Py_ssize_t size;
    const char *utf8 = PyUnicode_AsUTF8AndSize(text, &size);
    int done = utf8 == NULL ? -1 : put(out, utf8, size);
    Py_DECREF(text);
    return done;
}

/* An OTLP AnyValue of an attribute value (otlp._value). */
static int put_value(Writer *writer, PyObject *value, PyObject *dumps, int depth) {
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
        PyObject *written = PyObject_CallOneArg(dumps, value);
        if (written == NULL) return -1;
        if (!PyBytes_Check(written)) {
            Py_DECREF(written);
            return UNHANDLED;
        }
        done = PUT(out, "{\"doubleValue\":") < 0
                   || put(out, PyBytes_AS_STRING(written), PyBytes_GET_SIZE(written)) < 0
                   || PUT(out, "}") < 0
                   ? -1 : 0;
        Py_DECREF(written);
        return done;
    }
    if ((PyList_CheckExact(value) || PyTuple_CheckExact(value)) && depth < 32) {
        if (PUT(out, "{\"arrayValue\":{\"values\":[") < 0) return -1;
        PyObject *items = PySequence_Fast(value, "");
        if (items == NULL) return -1;
        done = 0;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(items) && done == 0; i++) {
            if (i && PUT(out, ",") < 0) done = -1;
            else done = put_value(writer, PySequence_Fast_GET_ITEM(items, i), dumps, depth + 1);
        }
        Py_DECREF(items);
        if (done != 0) return done;
        return PUT(out, "]}}");
    }
    return UNHANDLED;  /* None, other types, subclasses: str(value) and the like, in Python */
}

/* A span's "attributes" array (otlp._Entries: one {"key", "value"} per item, in order). */
static int put_attributes(Writer *writer, PyObject *attributes, PyObject *dumps) {
    Buffer *out = &writer->out;
    if (!PyDict_CheckExact(attributes)) return UNHANDLED;
    if (PUT(out, "[") < 0) return -1;
    PyObject *key, *value;
    Py_ssize_t at = 0;
    int first = 1, done;
    while (PyDict_Next(attributes, &at, &key, &value)) {
        if (!first && PUT(out, ",") < 0) return -1;
        first = 0;
        if ((done = copy_seen(writer, key, KEY_OPENING)) < 0) return -1;
        if (!done) {
            Py_ssize_t begin = out->size;
            if (PUT(out, "{\"key\":") < 0) return -1;
            if ((done = put_str(writer, key)) != 0) return done;
            if (PUT(out, ",\"value\":") < 0) return -1;
            remember(writer, key, KEY_OPENING, begin);
        }
        if ((done = put_value(writer, value, dumps, 0)) != 0) return done;
        if (PUT(out, "}") < 0) return -1;
    }
    return PUT(out, "]");
}

/* The OTLP number a dict gives a name (otlp._KIND, otlp._STATUS), written. */
static int put_number(Buffer *out, PyObject *numbers, PyObject *name) {
    if (!PyUnicode_CheckExact(name)) return UNHANDLED;  /* hashing another type may raise */
    PyObject *number = PyDict_GetItemWithError(numbers, name);
    if (number == NULL) return PyErr_Occurred() ? -1 : UNHANDLED;
    if (!PyLong_CheckExact(number)) return UNHANDLED;
    return put_int(out, number);
}

static int put_nanos(Buffer *out, PyObject *nanos) {
    if (!PyLong_CheckExact(nanos)) return UNHANDLED;
    if (PUT(out, "\"") < 0 || put_int(out, nanos) < 0) return -1;
    return PUT(out, "\"");
}

enum { TRACE, SPAN, PARENT, NAME, KIND, START, END, ATTRIBUTES, STATUS, MESSAGE, EVENTS, COLUMNS };

/* One span object, as otlp._document builds it (the keys in that order). */
static int put_span(Writer *writer, PyObject **row, PyObject *kinds, PyObject *statuses,
                    PyObject *dumps) {
    Buffer *out = &writer->out;
    int done, truth;
    if (PUT(out, "{\"traceId\":") < 0) return -1;
    if ((done = put_str(writer, row[TRACE])) != 0) return done;
    if (PUT(out, ",\"spanId\":") < 0) return -1;
    if ((done = put_str(writer, row[SPAN])) != 0) return done;
    if (PUT(out, ",\"name\":") < 0) return -1;
    if ((done = put_str(writer, row[NAME])) != 0) return done;
    if (PUT(out, ",\"kind\":") < 0) return -1;
    if ((done = put_number(out, kinds, row[KIND])) != 0) return done;
    if (PUT(out, ",\"startTimeUnixNano\":") < 0) return -1;
    if ((done = put_nanos(out, row[START])) != 0) return done;
    if (PUT(out, ",\"endTimeUnixNano\":") < 0) return -1;
    if ((done = put_nanos(out, row[END])) != 0) return done;
    if (PUT(out, ",\"attributes\":") < 0) return -1;
    if ((done = put_attributes(writer, row[ATTRIBUTES], dumps)) != 0) return done;
    if (PUT(out, ",\"status\":{\"code\":") < 0) return -1;
    if ((done = put_number(out, statuses, row[STATUS])) != 0) return done;
    if ((truth = PyObject_IsTrue(row[MESSAGE])) < 0) {  /* pd.NA: the pure path raises */
        PyErr_Clear();
        return UNHANDLED;
    }
    if (truth) {
        if (PUT(out, ",\"message\":") < 0) return -1;
        if ((done = put_str(writer, row[MESSAGE])) != 0) return done;
    }
    if (PUT(out, "}") < 0) return -1;
    if ((truth = PyObject_IsTrue(row[PARENT])) < 0) {
        PyErr_Clear();
        return UNHANDLED;
    }
    if (truth) {
        if (PUT(out, ",\"parentSpanId\":") < 0) return -1;
        if ((done = put_str(writer, row[PARENT])) != 0) return done;
    }
    PyObject *events = row[EVENTS];
    if (events != Py_None) {
        if (!PyBytes_Check(events)) return UNHANDLED;
        if (PUT(out, ",\"events\":") < 0
            || put(out, PyBytes_AS_STRING(events), PyBytes_GET_SIZE(events)) < 0)
            return -1;
    }
    return PUT(out, "}");
}

static PyObject *spans(PyObject *self, PyObject *args) {
    PyObject *columns[COLUMNS], *kinds, *statuses, *dumps;
    const char *head, *tail;
    Py_ssize_t head_size, tail_size;
    int fd = -1;
    if (!PyArg_ParseTuple(args, "y#y#O!O!O!O!O!O!O!O!O!O!O!O!O!O|i", &head, &head_size, &tail,
                          &tail_size, &PyList_Type, &columns[TRACE], &PyList_Type,
                          &columns[SPAN], &PyList_Type, &columns[PARENT], &PyList_Type,
                          &columns[NAME], &PyList_Type, &columns[KIND], &PyList_Type,
                          &columns[START], &PyList_Type, &columns[END], &PyList_Type,
                          &columns[ATTRIBUTES], &PyList_Type, &columns[STATUS], &PyList_Type,
                          &columns[MESSAGE], &PyList_Type, &columns[EVENTS], &PyDict_Type,
                          &kinds, &PyDict_Type, &statuses, &dumps, &fd))
        return NULL;
    Py_ssize_t count = PyList_GET_SIZE(columns[TRACE]);
    for (int c = 0; c < COLUMNS; c++) {
        if (PyList_GET_SIZE(columns[c]) != count) {
            PyErr_SetString(PyExc_ValueError, "spans: the columns differ in length");
            return NULL;
        }
    }
    Writer *writer = PyMem_Calloc(1, sizeof(Writer));  /* ~256 kB of slots: not the stack */
    if (writer == NULL) return PyErr_NoMemory();
    writer->fd = fd;
    Buffer *out = &writer->out;
    /* A span: ~1.3 kB; to a file, a chunk and the span that crosses it. */
    out->capacity = head_size + tail_size + (fd >= 0 ? CHUNK + (1 << 16) : 1024 * (count + 1));
    if ((out->bytes = PyBytes_FromStringAndSize(NULL, out->capacity)) == NULL) {
        PyMem_Free(writer);
        return NULL;
    }
    out->data = PyBytes_AS_STRING(out->bytes);
    long long written = 0;  /* to the file, before the buffer's bytes */
    int done = put(out, head, head_size);
    for (Py_ssize_t i = 0; i < count && done == 0; i++) {
        PyObject *row[COLUMNS];
        for (int c = 0; c < COLUMNS; c++) row[c] = PyList_GET_ITEM(columns[c], i);
        if (i && PUT(out, ",") < 0) done = -1;
        else done = put_span(writer, row, kinds, statuses, dumps);
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
    Py_ssize_t size = out->size;
    PyMem_Free(writer);
    if (fd >= 0) {  /* the buffer was only the chunks' */
        Py_XDECREF(bytes);
        if (done == 0) return PyLong_FromLongLong(written);
    } else {
        if (done == 0 && _PyBytes_Resize(&bytes, size) == 0) return bytes;
        Py_XDECREF(bytes);  /* NULL where the resize failed */
    }
    return done == UNHANDLED ? Py_NewRef(Py_None) : NULL;
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
    return PyModule_Create(&module);
}
