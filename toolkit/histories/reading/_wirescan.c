/*
 * The events of a binary History read in C, in one pass over the bytes.
 *
 * The numpy reader (wire.py, driven by columns/from_wire.py) does the same work a field position
 * at a time over all events; this is its compiled twin, built when the package is installed where
 * a C compiler is present (setup.py marks it optional; without it numpy does the work). Both
 * check only the structure (tags, wire types, varint sizes, lengths within their message); the
 * protobuf library validates the rest when an event is parsed.
 *
 * read_events(buf, routes, columns, shapes, attributes) -> (events, rows, bounds, text, offsets)
 *   buf: the bytes of a History (field 1: the repeated events).
 *   routes: int16, `columns` per attributes field number: the column code fed by field f of
 *     attributes k is routes[k * columns + min(f, columns - 1)] (0: none).
 *   shapes: uint8 per column code: PLAIN, TEXT (a string field) or NAMED_TEXT (a message whose
 *     field 1, a string, is the value: ActivityType.name, TaskQueue.name).
 *   attributes: uint8 per HistoryEvent field number: 1 for the fields of the attributes oneof.
 * Returns bytearrays:
 *   events: int64 [7][n]: start, end (its bytes), event_id, event_type, seconds and nanos of
 *     event_time, kind (its attributes field number, 0 without);
 *   rows: the routed attributes fields sorted by column code (then by event): int64 [4][m]:
 *     event, value (the varint, or the length of a length-delimited field; uint64 bits),
 *     payload start, payload length;  wire types: int8 [m];
 *   bounds: int64 [codes + 1]: the rows of code c are bounds[c] to bounds[c + 1];
 *   text: the bytes of every TEXT/NAMED_TEXT row, in row order; offsets: int64 [t + 1] into it.
 * Raises ValueError naming what is wrong; the caller falls back to the protobuf library.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(address) __builtin_prefetch(address)
/* The field walk is most of the work: inlined, it takes a quarter fewer instructions. */
#define HOT inline __attribute__((always_inline))
#else
#define PREFETCH(address) ((void)(address))
#define HOT inline
#endif

#define TOO_LONG ((uint64_t)1 << 40) /* a length no real message has: garbage, not a field */
#define EVENT_COLUMNS 7
#define ROW_COLUMNS 4
enum { PLAIN = 0, TEXT = 1, NAMED_TEXT = 2 };

static const char *PAST_END = "a field runs past the end of its message";
static const char *LONG_VARINT = "varint longer than 10 bytes";
static const char *BAD_TAG = "bad tag, group or unknown wire type";
static const char *BAD_LENGTH = "implausible length";
static const char *NO_MEMORY = "out of memory";

typedef struct {
    int64_t start, end, id, type, seconds, nanos, kind;
} Event;

typedef struct {
    int64_t event, start, length;
    uint64_t value;
    int16_t code;
    int8_t wire_type;
} Row;

/* A growable array of fixed-size items. */
typedef struct {
    char *data;
    size_t itemsize, count, capacity;
} Array;

/* Room for `count` items up front: growing by copying costs more than the walk itself, and
 * pages reserved but never written cost nothing. */
static const char *reserve(Array *a, size_t count) {
    a->data = malloc(count * a->itemsize);
    if (a->data == NULL) return NO_MEMORY;
    a->capacity = count;
    return NULL;
}

static void *push(Array *a) {
    if (a->count == a->capacity) {
        size_t capacity = a->capacity ? a->capacity * 2 : 4096;
        char *data = realloc(a->data, capacity * a->itemsize);
        if (data == NULL) return NULL;
        a->data = data;
        a->capacity = capacity;
    }
    return a->data + a->itemsize * a->count++;
}

/* One field: its number, wire type, value (varint or length) and payload [start, after). */
typedef struct {
    uint64_t number, value;
    int wire_type;
    int64_t start, after;
} Field;

static HOT const char *varint(const uint8_t *buf, int64_t *pos, int64_t end, uint64_t *out) {
    int64_t at = *pos;
    if (at < end && buf[at] < 0x80) { /* most tags and many values: one byte */
        *out = buf[at];
        *pos = at + 1;
        return NULL;
    }
    uint64_t value = 0;
    int shift = 0;
    while (1) {
        if (at >= end) return PAST_END;
        uint8_t byte = buf[at++];
        value |= (uint64_t)(byte & 0x7F) << shift;
        if (!(byte & 0x80)) break;
        shift += 7;
        if (shift > 63) return LONG_VARINT;
    }
    *out = value;
    *pos = at;
    return NULL;
}

/* The field at *pos (which must lie before end); *pos moves past it. */
static HOT const char *next_field(const uint8_t *buf, int64_t *pos, int64_t end, Field *f) {
    uint64_t tag;
    const char *error = varint(buf, pos, end, &tag);
    if (error) return error == PAST_END ? PAST_END : BAD_TAG;
    f->number = tag >> 3;
    f->wire_type = (int)(tag & 7);
    f->value = 0;
    switch (f->wire_type) {
    case 0:
        f->start = *pos;
        error = varint(buf, pos, end, &f->value);
        if (error) return error;
        f->after = *pos;
        return NULL;
    case 2:
        error = varint(buf, pos, end, &f->value);
        if (error) return error;
        if (f->value > TOO_LONG) return BAD_LENGTH;
        f->start = *pos;
        f->after = *pos + (int64_t)f->value;
        break;
    case 1:
        f->start = *pos;
        f->after = *pos + 8;
        break;
    case 5:
        f->start = *pos;
        f->after = *pos + 4;
        break;
    default:
        return BAD_TAG;
    }
    if (f->after > end) return PAST_END;
    *pos = f->after;
    return NULL;
}

typedef struct {
    const uint8_t *buf;
    const int16_t *routes;
    Py_ssize_t columns, kinds;
    const uint8_t *shapes;
    Py_ssize_t codes;
    const uint8_t *attributes;
    Py_ssize_t attribute_numbers;
    Array events; /* of Event */
    Array rows;   /* of Row */
} Reader;

/* Seconds and nanos of a Timestamp; other fields are skipped as the numpy reader does. */
static const char *timestamp(const uint8_t *buf, int64_t pos, int64_t end, Event *e) {
    int seen[3] = {0, 0, 0};
    Field f;
    while (pos < end) {
        const char *error = next_field(buf, &pos, end, &f);
        if (error) return error;
        if (f.number == 1 || f.number == 2) {
            if (f.wire_type != 0) return "a timestamp field is not a varint";
            if (seen[f.number]++) return "a timestamp field repeated";
            *(f.number == 1 ? &e->seconds : &e->nanos) = (int64_t)f.value;
        }
    }
    return NULL;
}

/* The name (field 1, a string) inside the message f, as a field; found = 0 without one. */
static const char *name_of(const uint8_t *buf, Field *f, int *found) {
    int64_t pos = f->start, end = f->after;
    Field inner;
    *found = 0;
    while (pos < end) {
        const char *error = next_field(buf, &pos, end, &inner);
        if (error) return error;
        if (inner.number == 1 && inner.wire_type == 2) {
            if ((*found)++) return "a name repeated within one message";
            *f = inner;
        }
    }
    return NULL;
}

static const char *attributes(Reader *r, int64_t event, int64_t kind, int64_t pos, int64_t end) {
    const int16_t *route = r->routes + kind * r->columns;
    uint64_t last = (uint64_t)r->columns - 1;
    Field f;
    while (pos < end) {
        const char *error = next_field(r->buf, &pos, end, &f);
        if (error) return error;
        int16_t code = route[f.number < last ? f.number : last];
        if (code <= 0 || code >= r->codes) continue;
        int shape = r->shapes[code];
        if (shape != PLAIN && f.wire_type != 2) return "a text field is not length-delimited";
        if (shape == NAMED_TEXT) {
            int found;
            error = name_of(r->buf, &f, &found);
            if (error) return error;
            if (!found) continue; /* no name set: nothing for the column */
        }
        Row *row = push(&r->rows);
        if (row == NULL) return NO_MEMORY;
        row->event = event;
        row->code = code;
        row->wire_type = (int8_t)f.wire_type;
        row->value = f.value;
        row->start = f.start;
        row->length = f.wire_type == 2 ? (int64_t)f.value : 0;
    }
    return NULL;
}

static const char *event(Reader *r, int64_t index, int64_t pos, int64_t end) {
    Event *e = push(&r->events);
    if (e == NULL) return NO_MEMORY;
    memset(e, 0, sizeof *e);
    e->start = pos;
    e->end = end;
    int seen_id = 0, seen_time = 0, seen_type = 0;
    int64_t from = 0, to = 0;
    Field f;
    while (pos < end) {
        const char *error = next_field(r->buf, &pos, end, &f);
        if (error) return error;
        if (f.number == 1 || f.number == 3) {
            if (f.wire_type != 0) return "event_id or event_type is not a varint";
            if ((*(f.number == 1 ? &seen_id : &seen_type))++)
                return "event_id or event_type repeated";
            *(f.number == 1 ? &e->id : &e->type) = (int64_t)f.value;
        } else if (f.number == 2) {
            if (f.wire_type != 2) return "event_time is not a message";
            if (seen_time++) return "event_time repeated";
            error = timestamp(r->buf, f.start, f.after, e);
            if (error) return error;
        } else if (f.number < (uint64_t)r->attribute_numbers && r->attributes[f.number]) {
            if (f.wire_type != 2) return "attributes are not a message";
            if (e->kind) return "attributes repeated within one event";
            e->kind = (int64_t)f.number;
            from = f.start;
            to = f.after;
        }
    }
    if (e->kind && e->kind < r->kinds) return attributes(r, index, e->kind, from, to);
    return NULL;
}

static const char *history(Reader *r, int64_t size) {
    int64_t pos = 0, index = 0;
    Field f;
    /* Real events take 100 to 1,000 bytes, of which about one in 40 feeds a column. */
    if (reserve(&r->events, (size_t)size / 64 + 64) || reserve(&r->rows, (size_t)size / 24 + 64))
        return NO_MEMORY;
    while (pos < size) {
        const char *error = next_field(r->buf, &pos, size, &f);
        if (error) return error;
        if (f.number != 1 || f.wire_type != 2) return "a field other than the events in History";
        /* The next event begins where this one ends: ask for its bytes while this one is read
         * (the walk skips payloads, so the hardware cannot guess what comes next). */
        PREFETCH(r->buf + f.after);
        PREFETCH(r->buf + f.after + 64);
        error = event(r, index++, f.start, f.after);
        if (error) return error;
    }
    return NULL;
}

static PyObject *new_bytearray(Py_ssize_t size, char **data) {
    PyObject *out = PyByteArray_FromStringAndSize(NULL, size);
    if (out != NULL) *data = PyByteArray_AS_STRING(out);
    return out;
}

/* The five results (see the top of this file), built from the reader's arrays. */
static PyObject *results(Reader *r) {
    Py_ssize_t n = (Py_ssize_t)r->events.count, m = (Py_ssize_t)r->rows.count;
    const Event *events = (const Event *)r->events.data;
    const Row *rows = (const Row *)r->rows.data;
    char *e_data, *r_data, *w_data, *b_data, *t_data, *o_data;
    int64_t *bounds = calloc((size_t)r->codes + 1, sizeof(int64_t));
    if (bounds == NULL) return PyErr_NoMemory();
    int64_t text_bytes = 0, text_rows = 0;
    for (Py_ssize_t i = 0; i < m; i++) {
        bounds[rows[i].code + 1]++;
        if (r->shapes[rows[i].code] != PLAIN) {
            text_bytes += rows[i].length;
            text_rows++;
        }
    }
    for (Py_ssize_t c = 0; c < r->codes; c++) bounds[c + 1] += bounds[c];
    PyObject *out[5] = {
        new_bytearray(n * EVENT_COLUMNS * 8, &e_data),
        new_bytearray(m * ROW_COLUMNS * 8, &r_data),
        new_bytearray(m, &w_data),
        new_bytearray((r->codes + 1) * 8, &b_data),
        new_bytearray((Py_ssize_t)text_bytes, &t_data),
    };
    PyObject *offsets_obj = new_bytearray((Py_ssize_t)(text_rows + 1) * 8, &o_data);
    int ok = offsets_obj != NULL;
    for (int k = 0; k < 5; k++) ok = ok && out[k] != NULL;
    if (!ok) {
        for (int k = 0; k < 5; k++) Py_XDECREF(out[k]);
        Py_XDECREF(offsets_obj);
        free(bounds);
        return NULL;
    }
    int64_t *columns = (int64_t *)e_data;
    for (Py_ssize_t i = 0; i < n; i++) {
        const Event *e = &events[i];
        columns[i] = e->start;
        columns[n + i] = e->end;
        columns[2 * n + i] = e->id;
        columns[3 * n + i] = e->type;
        columns[4 * n + i] = e->seconds;
        columns[5 * n + i] = e->nanos;
        columns[6 * n + i] = e->kind;
    }
    memcpy(b_data, bounds, (size_t)(r->codes + 1) * 8);
    /* Rows sorted by code (counting sort: stable, so events stay in order within a code). The
     * text of text rows goes to the text buffer in the same order; text rows are ranked by code
     * first, so the offsets of each code's rows are contiguous. */
    int64_t *text_at = calloc((size_t)r->codes + 1, sizeof(int64_t));
    int64_t *byte_at = calloc((size_t)r->codes + 1, sizeof(int64_t));
    if (text_at == NULL || byte_at == NULL) {
        free(text_at);
        free(byte_at);
        free(bounds);
        for (int k = 0; k < 5; k++) Py_DECREF(out[k]);
        Py_DECREF(offsets_obj);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < m; i++) {
        int c = rows[i].code;
        if (r->shapes[c] != PLAIN) {
            text_at[c + 1]++;
            byte_at[c + 1] += rows[i].length;
        }
    }
    for (Py_ssize_t c = 0; c < r->codes; c++) {
        text_at[c + 1] += text_at[c];
        byte_at[c + 1] += byte_at[c];
    }
    int64_t *event_col = (int64_t *)r_data, *value_col = event_col + m;
    int64_t *start_col = value_col + m, *length_col = start_col + m;
    int64_t *offsets = (int64_t *)o_data;
    int8_t *wire_types = (int8_t *)w_data;
    offsets[0] = 0;
    for (Py_ssize_t i = 0; i < m; i++) {
        const Row *row = &rows[i];
        int64_t at = bounds[row->code]++;
        event_col[at] = row->event;
        value_col[at] = (int64_t)row->value;
        start_col[at] = row->start;
        length_col[at] = row->length;
        wire_types[at] = row->wire_type;
        if (r->shapes[row->code] != PLAIN) {
            int64_t t = text_at[row->code]++, b = byte_at[row->code];
            memcpy(t_data + b, r->buf + row->start, (size_t)row->length);
            byte_at[row->code] = b + row->length;
            offsets[t + 1] = b + row->length;
        }
    }
    free(text_at);
    free(byte_at);
    free(bounds);
    return Py_BuildValue("(NNNNNN)", out[0], out[1], out[2], out[3], out[4], offsets_obj);
}

static int table(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *name) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0) return -1;
    if (view->itemsize != itemsize) {
        PyErr_Format(PyExc_TypeError, "%s: expected items of %zd bytes", name, itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static PyObject *read_events(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objects[4];
    Py_ssize_t columns;
    if (!PyArg_ParseTuple(args, "OOnOO:read_events", &objects[0], &objects[1], &columns,
                          &objects[2], &objects[3]))
        return NULL;
    Py_buffer views[4];
    const Py_ssize_t sizes[4] = {1, 2, 1, 1};
    const char *names[4] = {"buf", "routes", "shapes", "attributes"};
    int held = 0;
    PyObject *result = NULL;
    Reader r;
    memset(&r, 0, sizeof r);
    for (; held < 4; held++) {
        if (table(objects[held], &views[held], sizes[held], names[held]) < 0) goto done;
    }
    if (columns < 1 || views[1].len / 2 % columns || views[2].len < 1) {
        PyErr_SetString(PyExc_ValueError, "routes or shapes do not fit together");
        goto done;
    }
    r.buf = views[0].buf;
    r.routes = views[1].buf;
    r.columns = columns;
    r.kinds = views[1].len / 2 / columns;
    r.shapes = views[2].buf;
    r.codes = views[2].len;
    r.attributes = views[3].buf;
    r.attribute_numbers = views[3].len;
    r.events.itemsize = sizeof(Event);
    r.rows.itemsize = sizeof(Row);
    const char *error;
    Py_BEGIN_ALLOW_THREADS
    error = history(&r, (int64_t)views[0].len);
    Py_END_ALLOW_THREADS
    if (error) {
        PyErr_SetString(error == NO_MEMORY ? PyExc_MemoryError : PyExc_ValueError, error);
        goto done;
    }
    result = results(&r);
done:
    free(r.events.data);
    free(r.rows.data);
    for (int k = 0; k < held; k++) PyBuffer_Release(&views[k]);
    return result;
}

static PyMethodDef methods[] = {
    {"read_events", read_events, METH_VARARGS,
     "read_events(buf, routes, columns, shapes, attributes): see the top of _wirescan.c."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_wirescan",
    "The events of a binary History read in C (see toolkit.histories.columns.from_wire).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__wirescan(void) { return PyModule_Create(&module); }
