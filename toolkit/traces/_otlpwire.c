/*
 * The protobuf ExportTraceServiceRequest of spans written in C, straight from the spans table's
 * columns: the compiled twin of toolkit.traces.otlp_wire.encode_request, which stays the
 * reference (setup.py marks this optional; tests/test_otlp_wire.py holds both to the same bytes).
 *
 * request(resource, scope, trace, span, parent, name, kind, start, end, attributes, status,
 *         message, events, kinds, statuses) -> bytes | None
 *   resource: the Resource message's bytes; scope: the InstrumentationScope's. The others but
 *   the last two lists, one item per span, as encode_request's rows hold them, but events: the
 *   span's encoded ``events`` fields (bytes) or None. kinds and statuses: the dicts of OTLP
 *   numbers. Returns encode_request's bytes, or None wherever a value is one this writer
 *   leaves to it (any type but an exact str, int, bool, float, list or tuple; an id that is
 *   not plain lowercase or uppercase hex; a time outside 0..2**64-1; an int beyond int64; a str
 *   that is no UTF-8; ...): the caller then runs encode_request, which writes it or raises.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* Return codes of the writers: 0 written, 1 left to the reference, -1 a Python error. */
#define UNHANDLED 1

typedef struct {
    char *data;
    Py_ssize_t size, capacity;
} Buffer;

static int grow(Buffer *out, Py_ssize_t more) {
    Py_ssize_t capacity = out->capacity ? out->capacity : 4096;
    while (capacity < out->size + more) capacity *= 2;
    char *data = PyMem_Realloc(out->data, (size_t)capacity);
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    out->data = data;
    out->capacity = capacity;
    return 0;
}

static inline int reserve(Buffer *out, Py_ssize_t more) {
    return out->size + more <= out->capacity ? 0 : grow(out, more);
}

static inline int put(Buffer *out, const void *bytes, Py_ssize_t size) {
    if (reserve(out, size) < 0) return -1;
    memcpy(out->data + out->size, bytes, (size_t)size);
    out->size += size;
    return 0;
}

static inline int put_byte(Buffer *out, unsigned char byte) {
    if (reserve(out, 1) < 0) return -1;
    out->data[out->size++] = (char)byte;
    return 0;
}

/* A varint (an int64 below 0 as its two's complement: ten bytes). */
static inline int put_varint(Buffer *out, unsigned long long value) {
    if (reserve(out, 10) < 0) return -1;
    char *at = out->data + out->size;
    while (value > 0x7F) {
        *at++ = (char)(value & 0x7F | 0x80);
        value >>= 7;
    }
    *at++ = (char)value;
    out->size = at - out->data;
    return 0;
}

static int varint_size(unsigned long long value) {
    int size = 1;
    while (value > 0x7F) {
        value >>= 7;
        size++;
    }
    return size;
}

/* A length-delimited field of ``size`` bytes at ``bytes``: tag, length, the bytes. */
static inline int put_field(Buffer *out, unsigned char tag, const void *bytes, Py_ssize_t size) {
    if (put_byte(out, tag) < 0 || put_varint(out, (unsigned long long)size) < 0) return -1;
    return put(out, bytes, size);
}

/* An exact str's UTF-8 (NULL and UNHANDLED in *done for anything else, or a lone surrogate). */
static const char *utf8_of(PyObject *text, Py_ssize_t *size, int *done) {
    if (!PyUnicode_CheckExact(text)) {
        *done = UNHANDLED;
        return NULL;
    }
    const char *utf8 = PyUnicode_AsUTF8AndSize(text, size);
    if (utf8 == NULL) {
        PyErr_Clear();
        *done = UNHANDLED;
    }
    return utf8;
}

/* A string field, left out when empty (where ``always`` is 0). */
static int put_text(Buffer *out, unsigned char tag, PyObject *text, int always) {
    int done = 0;
    Py_ssize_t size;
    const char *utf8 = utf8_of(text, &size, &done);
    if (utf8 == NULL) return done;
    return size || always ? put_field(out, tag, utf8, size) : 0;
}

static int hex_digit(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* An id field: the bytes its hex spells (bytes.fromhex), left out when empty. Hex with
 * spaces, or anything but an exact str, is the reference's. */
static int put_id(Buffer *out, unsigned char tag, PyObject *text) {
    if (!PyUnicode_CheckExact(text) || !PyUnicode_IS_ASCII(text)) return UNHANDLED;
    Py_ssize_t size = PyUnicode_GET_LENGTH(text);
    const unsigned char *hex = PyUnicode_1BYTE_DATA(text);
    if (size % 2) return UNHANDLED;
    if (size == 0) return 0;
    unsigned char raw[64];
    if (size / 2 > (Py_ssize_t)sizeof raw) return UNHANDLED;
    for (Py_ssize_t i = 0; i < size; i += 2) {
        int high = hex_digit(hex[i]), low = hex_digit(hex[i + 1]);
        if (high < 0 || low < 0) return UNHANDLED;
        raw[i / 2] = (unsigned char)(high << 4 | low);
    }
    return put_field(out, tag, raw, size / 2);
}

/* A fixed64 time, left out at 0. */
static int put_nanos(Buffer *out, unsigned char tag, PyObject *nanos) {
    if (!PyLong_CheckExact(nanos)) return UNHANDLED;
    unsigned long long value = PyLong_AsUnsignedLongLong(nanos);
    if (value == (unsigned long long)-1 && PyErr_Occurred()) {  /* below 0, or past 2**64 */
        PyErr_Clear();
        return UNHANDLED;
    }
    if (!value) return 0;
    unsigned char bytes[9] = {tag};
    for (int i = 0; i < 8; i++) bytes[1 + i] = (unsigned char)(value >> (8 * i));
    return put(out, bytes, 9);
}

/* An AnyValue's body (nothing for an empty list), as otlp_wire._any_value writes it. */
static int put_any_value(Buffer *out, PyObject *value, int depth) {
    if (value == Py_True) return put(out, "\x10\x01", 2);
    if (value == Py_False) return put(out, "\x10\x00", 2);
    if (PyLong_CheckExact(value)) {
        int overflow;
        long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (number == -1 && PyErr_Occurred()) return -1;
        if (overflow) return UNHANDLED;  /* beyond int64: the reference refuses it */
        if (put_byte(out, 0x18) < 0) return -1;
        return put_varint(out, (unsigned long long)number);
    }
    if (PyFloat_CheckExact(value)) {
        double number = PyFloat_AS_DOUBLE(value);
        unsigned long long bits;
        memcpy(&bits, &number, 8);
        unsigned char bytes[9] = {0x21};
        for (int i = 0; i < 8; i++) bytes[1 + i] = (unsigned char)(bits >> (8 * i));
        return put(out, bytes, 9);
    }
    if (PyUnicode_CheckExact(value)) return put_text(out, 0x0a, value, 1);
    if ((PyList_CheckExact(value) || PyTuple_CheckExact(value)) && depth < 32) {
        PyObject **items = PySequence_Fast_ITEMS(value);
        Py_ssize_t count = PySequence_Fast_GET_SIZE(value);
        if (!count) return 0;
        /* array_value = 5 {values = 1 per item}: written after the items, to know its length */
        Buffer inner = {NULL, 0, 0};
        int done = 0;
        for (Py_ssize_t i = 0; i < count && done == 0; i++) {
            Buffer item = {NULL, 0, 0};
            done = put_any_value(&item, items[i], depth + 1);
            if (done == 0) done = put_field(&inner, 0x0a, item.data, item.size);
            PyMem_Free(item.data);
        }
        if (done == 0) done = put_field(out, 0x2a, inner.data, inner.size);
        PyMem_Free(inner.data);
        return done;
    }
    return UNHANDLED;  /* None (its str), subclasses, numpy scalars, dicts: the reference's */
}

/* Each attributes field written before (tag, KeyValue), kept by the key's and the value's
 * objects, which the caller's columns keep alive for the whole call: a run's attributes are the
 * same objects span after span (otlp_wire._KeyValues keeps them by value, to the same bytes). */
#define SEEN_SLOTS 8192
typedef struct {
    PyObject *key, *value;
    Py_ssize_t at, size;
} Seen;

typedef struct {
    Buffer out, span, kv, arena;  /* the request; one span's body; one KeyValue; the seen */
    Seen seen[SEEN_SLOTS];
} Writer;

/* The ``tag`` fields of a span's attributes (a dict), in its order. */
static int put_attributes(Writer *writer, Buffer *out, PyObject *attributes) {
    if (!PyDict_CheckExact(attributes)) return UNHANDLED;
    PyObject *key, *value;
    Py_ssize_t at = 0;
    int done;
    while (PyDict_Next(attributes, &at, &key, &value)) {
        int cached = PyUnicode_CheckExact(value) || PyLong_CheckExact(value)
                     || PyBool_Check(value);  /* as the reference caches: never lists */
        Seen *seen = &writer->seen[(((size_t)key >> 4) * 31 + ((size_t)value >> 4))
                                   & (SEEN_SLOTS - 1)];  /* fmt: hashed by both objects */
        if (cached && seen->key == key && seen->value == value) {
            if (put(out, writer->arena.data + seen->at, seen->size) < 0) return -1;
            continue;
        }
        Buffer *kv = &writer->kv;
        kv->size = 0;
        if ((done = put_text(kv, 0x0a, key, 0)) != 0) return done;  /* key = 1, unless "" */
        Py_ssize_t body_at = kv->size;
        /* value = 2: its AnyValue written past room for a tag and a length, then moved up */
        if (reserve(kv, 11) < 0) return -1;
        kv->size += 11;
        if ((done = put_any_value(kv, value, 0)) != 0) return done;
        Py_ssize_t body = kv->size - body_at - 11;
        if (body) {
            unsigned char head[11] = {0x12};
            int length = varint_size((unsigned long long)body);
            unsigned long long rest = (unsigned long long)body;
            for (int i = 0; i < length; i++, rest >>= 7)
                head[1 + i] = (unsigned char)(rest & 0x7F | (i + 1 < length ? 0x80 : 0));
            memmove(kv->data + body_at + 1 + length, kv->data + body_at + 11, (size_t)body);
            memcpy(kv->data + body_at, head, (size_t)(1 + length));
            kv->size = body_at + 1 + length + body;
        } else {
            kv->size = body_at;  /* an empty list sets no value */
        }
        Py_ssize_t start = out->size;
        if (put_field(out, 0x4a, kv->data, kv->size) < 0) return -1;  /* attributes = 9 */
        if (cached) {
            Py_ssize_t size = out->size - start;
            if (put(&writer->arena, out->data + start, size) < 0) return -1;
            seen->key = key;
            seen->value = value;
            seen->at = writer->arena.size - size;
            seen->size = size;
        }
    }
    return 0;
}

/* A number a dict gives a name (otlp._KIND, otlp._STATUS). */
static int number_of(PyObject *numbers, PyObject *name, long *number) {
    if (!PyUnicode_CheckExact(name)) return UNHANDLED;
    PyObject *found = PyDict_GetItemWithError(numbers, name);
    if (found == NULL) return PyErr_Occurred() ? -1 : UNHANDLED;
    if (!PyLong_CheckExact(found)) return UNHANDLED;
    *number = PyLong_AsLong(found);
    if (*number == -1 && PyErr_Occurred()) return -1;
    return *number < 0 ? UNHANDLED : 0;
}

/* Whether a status message or parent id is set (1), not (0); UNHANDLED where truth raises. */
static int truth_of(PyObject *value) {
    int truth = PyObject_IsTrue(value);
    if (truth < 0) {
        PyErr_Clear();
        return -2;
    }
    return truth;
}

enum { TRACE, SPAN, PARENT, NAME, KIND, START, END, ATTRIBUTES, STATUS, MESSAGE, EVENTS, COLUMNS };

/* One span's body, as encode_request joins it (fields in number order). */
static int put_span(Writer *writer, PyObject **row, PyObject *kinds, PyObject *statuses) {
    Buffer *out = &writer->span;
    long kind, code;
    int done, truth;
    out->size = 0;
    if ((done = number_of(statuses, row[STATUS], &code)) != 0) return done;
    if ((done = number_of(kinds, row[KIND], &kind)) != 0) return done;
    if ((done = put_id(out, 0x0a, row[TRACE])) != 0) return done;  /* trace_id = 1 */
    if ((done = put_id(out, 0x12, row[SPAN])) != 0) return done;  /* span_id = 2 */
    if ((truth = truth_of(row[PARENT])) == -2) return UNHANDLED;
    if (truth && (done = put_id(out, 0x22, row[PARENT])) != 0) return done;  /* parent = 4 */
    if ((done = put_text(out, 0x2a, row[NAME], 0)) != 0) return done;  /* name = 5 */
    if (kind && (put_byte(out, 0x30) < 0 || put_varint(out, (unsigned long long)kind) < 0))
        return -1;  /* kind = 6 */
    if ((done = put_nanos(out, 0x39, row[START])) != 0) return done;  /* start = 7 */
    if ((done = put_nanos(out, 0x41, row[END])) != 0) return done;  /* end = 8 */
    if ((done = put_attributes(writer, out, row[ATTRIBUTES])) != 0) return done;  /* 9 */
    if (row[EVENTS] != Py_None) {  /* events = 11, encoded by the caller */
        if (!PyBytes_CheckExact(row[EVENTS])) return UNHANDLED;
        if (put(out, PyBytes_AS_STRING(row[EVENTS]), PyBytes_GET_SIZE(row[EVENTS])) < 0)
            return -1;
    }
    /* status = 15 {message = 2 unless empty, code = 3 unless 0}, always present */
    if ((truth = truth_of(row[MESSAGE])) == -2) return UNHANDLED;
    Py_ssize_t message_size = 0;
    const char *message = NULL;
    if (truth && (message = utf8_of(row[MESSAGE], &message_size, &done)) == NULL) return done;
    Py_ssize_t status_size = (message_size ? 1 + varint_size((unsigned long long)message_size)
                              + message_size : 0)
                             + (code ? 1 + varint_size((unsigned long long)code) : 0);
    if (put_byte(out, 0x7a) < 0 || put_varint(out, (unsigned long long)status_size) < 0)
        return -1;
    if (message_size && put_field(out, 0x12, message, message_size) < 0) return -1;
    if (code && (put_byte(out, 0x18) < 0 || put_varint(out, (unsigned long long)code) < 0))
        return -1;
    /* ScopeSpans.spans = 2 */
    return put_field(&writer->out, 0x12, out->data, out->size);
}

static void free_writer(Writer *writer) {
    PyMem_Free(writer->out.data);
    PyMem_Free(writer->span.data);
    PyMem_Free(writer->kv.data);
    PyMem_Free(writer->arena.data);
    PyMem_Free(writer);
}

static PyObject *request(PyObject *self, PyObject *args) {
    PyObject *columns[COLUMNS], *kinds, *statuses;
    const char *resource, *scope;
    Py_ssize_t resource_size, scope_size;
    if (!PyArg_ParseTuple(args, "y#y#O!O!O!O!O!O!O!O!O!O!O!O!O!", &resource, &resource_size,
                          &scope, &scope_size, &PyList_Type, &columns[TRACE], &PyList_Type,
                          &columns[SPAN], &PyList_Type, &columns[PARENT], &PyList_Type,
                          &columns[NAME], &PyList_Type, &columns[KIND], &PyList_Type,
                          &columns[START], &PyList_Type, &columns[END], &PyList_Type,
                          &columns[ATTRIBUTES], &PyList_Type, &columns[STATUS], &PyList_Type,
                          &columns[MESSAGE], &PyList_Type, &columns[EVENTS], &PyDict_Type,
                          &kinds, &PyDict_Type, &statuses))
        return NULL;
    Py_ssize_t count = PyList_GET_SIZE(columns[TRACE]);
    for (int c = 0; c < COLUMNS; c++) {
        if (PyList_GET_SIZE(columns[c]) != count) {
            PyErr_SetString(PyExc_ValueError, "request: the columns differ in length");
            return NULL;
        }
    }
    Writer *writer = PyMem_Calloc(1, sizeof(Writer));
    if (writer == NULL) return PyErr_NoMemory();
    int done = 0;
    for (Py_ssize_t i = 0; i < count && done == 0; i++) {
        PyObject *row[COLUMNS];
        for (int c = 0; c < COLUMNS; c++) row[c] = PyList_GET_ITEM(columns[c], i);
        done = put_span(writer, row, kinds, statuses);
    }
    if (done != 0) {
        free_writer(writer);
        return done == UNHANDLED ? Py_NewRef(Py_None) : NULL;
    }
    /* Around the spans: ScopeSpans {scope = 1, spans}, ResourceSpans {resource = 1 (unless
     * empty), scope_spans = 2}, the request {resource_spans = 1}. */
    unsigned long long scope_spans = (unsigned long long)(1 + varint_size(scope_size)
                                                          + scope_size + writer->out.size);
    unsigned long long resource_spans = (resource_size ? 1 + varint_size(resource_size)
                                         + resource_size : 0)
                                        + 1 + varint_size(scope_spans) + scope_spans;
    Py_ssize_t total = (Py_ssize_t)(1 + varint_size(resource_spans) + resource_spans);
    PyObject *bytes = PyBytes_FromStringAndSize(NULL, total);
    if (bytes != NULL) {
        Buffer head = {NULL, 0, 0};
        int failed = put_byte(&head, 0x0a) < 0 || put_varint(&head, resource_spans) < 0
                     || (resource_size && put_field(&head, 0x0a, resource, resource_size) < 0)
                     || put_byte(&head, 0x12) < 0 || put_varint(&head, scope_spans) < 0
                     || put_field(&head, 0x0a, scope, scope_size) < 0;
        if (failed || head.size + writer->out.size != total) {
            Py_CLEAR(bytes);
            if (!failed) PyErr_SetString(PyExc_SystemError, "request: sizes disagree");
        } else {
            memcpy(PyBytes_AS_STRING(bytes), head.data, (size_t)head.size);
            memcpy(PyBytes_AS_STRING(bytes) + head.size, writer->out.data,
                   (size_t)writer->out.size);
        }
        PyMem_Free(head.data);
    }
    free_writer(writer);
    return bytes;
}

static PyMethodDef methods[] = {
    {"request", request, METH_VARARGS,
     "The spans' ExportTraceServiceRequest as otlp_wire.encode_request writes it; or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_otlpwire", NULL, -1, methods};

PyMODINIT_FUNC PyInit__otlpwire(void) { return PyModule_Create(&module); }
