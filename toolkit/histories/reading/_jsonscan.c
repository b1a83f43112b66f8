/*
 * The events of a proto-JSON {"events": [...]} document read in C, in one pass over the bytes.
 *
 * The twin of _wirescan.c for JSON: it validates the whole document as strict JSON (UTF-8, escapes,
 * numbers, nesting) and hands back, per event, its span, id, type and attributes, and the
 * attribute fields that feed a column, sorted by column code. It is stricter than the typed
 * msgspec decode it stands in for (columns/from_json.py): anything it does not handle exactly
 * (a spelling of an event type not in the table, a repeated key, a number where text belongs,
 * the legacy `timestamp`, ...) raises ValueError and the caller decodes the document with msgspec
 * as before. Built where a C compiler is present (setup.py marks it optional).
 *
 * scan(buf, types, keys, fields, routes, shapes) -> (events, rows, bounds, text, offsets,
 *                                                   times, time_offsets, top)
 *   types: tuple of bytes, the eventType spellings (index: type code);
 *   keys: tuple of bytes, each type's attributes key;
 *   fields: tuple of bytes, attribute field names (index: field id);
 *   routes: int16 [types][fields]: the column code of field f in type t's attributes (0: not a
 *     field of its view, skipped); a negative entry in column 0 marks a type whose attributes are
 *     handed over whole (only their span);
 *   shapes: uint8 per column code: TEXT, NAMED, INT, FLAG, RAW or CHECK (see below).
 * Returns bytearrays:
 *   events: int64 [6][n]: start, end (the event object), event id, type code, start and end of
 *     its attributes object (-1 where absent or null);
 *   rows: int64 [4][m], sorted by code then event: event, value (INT/FLAG: the number; RAW: the
 *     field id), start and length of the value (RAW: the JSON text of it);
 *   bounds: int64 [codes + 1]; text/offsets: the decoded text of TEXT/NAMED rows, in row order;
 *   times/time_offsets: each event's eventTime text (empty where absent, null or empty);
 *   top: int64 [3][2]: spans of the document's workflowId, runId and namespace (-1: absent).
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

enum { SKIP = 0, TEXT = 1, NAMED = 2, INT = 3, FLAG = 4, RAW = 5, CHECK = 6, CHECK_NAMED = 7 };
#define MAX_DEPTH 200
#define EVENT_COLUMNS 6
#define ROW_COLUMNS 4

static const char *DECLINE = "declined";
static const char *NO_MEMORY = "out of memory";

typedef struct {
    char *data;
    size_t itemsize, count, capacity;
} Array;

static void *push(Array *a, size_t items) {
    if (a->count + items > a->capacity) {
        size_t capacity = a->capacity ? a->capacity * 2 : 4096;
        while (capacity < a->count + items) capacity *= 2;
        char *data = realloc(a->data, capacity * a->itemsize);
        if (data == NULL) return NULL;
        a->data = data;
        a->capacity = capacity;
    }
    void *out = a->data + a->itemsize * a->count;
    a->count += items;
    return out;
}

typedef struct {
    int64_t start, end, id, type, from, to;
} Event;

typedef struct {
    int64_t event, value, start, length, text_start, text_length;
    int16_t code;
} Row;

/* Names looked up by open addressing (FNV-1a), built per call. */
typedef struct {
    const char **names;
    Py_ssize_t *lengths;
    int32_t *slots;
    size_t mask;
    Py_ssize_t count;
} Names;

/* Keys are short: their length and first and last eight bytes tell them apart well enough. */
static uint32_t hash(const uint8_t *s, size_t n) {
    uint64_t head = 0, tail = 0;
    if (n >= 8) {
        memcpy(&head, s, 8);
        memcpy(&tail, s + n - 8, 8);
    } else {
        for (size_t i = 0; i < n; i++) head = (head << 8) | s[i];
    }
    uint64_t h = (head * 0x9E3779B97F4A7C15ull) ^ (tail * 0xC2B2AE3D27D4EB4Full) ^ n;
    return (uint32_t)(h >> 32) ^ (uint32_t)h;
}

static int32_t find(const Names *t, const uint8_t *s, size_t n) {
    for (size_t i = hash(s, n) & t->mask;; i = (i + 1) & t->mask) {
        int32_t k = t->slots[i];
        if (k < 0) return -1;
        if ((size_t)t->lengths[k] == n && memcmp(t->names[k], s, n) == 0) return k;
    }
}

static int names_from(PyObject *tuple, Names *t) {
    if (!PyTuple_Check(tuple)) {
        PyErr_SetString(PyExc_TypeError, "expected a tuple of bytes");
        return -1;
    }
    t->count = PyTuple_GET_SIZE(tuple);
    size_t size = 16;
    while (size < (size_t)t->count * 4) size *= 2;
    t->mask = size - 1;
    t->names = calloc((size_t)t->count + 1, sizeof(char *));
    t->lengths = calloc((size_t)t->count + 1, sizeof(Py_ssize_t));
    t->slots = malloc(size * sizeof(int32_t));
    if (!t->names || !t->lengths || !t->slots) {
        PyErr_NoMemory();
        return -1;
    }
    memset(t->slots, 0xff, size * sizeof(int32_t));
    for (Py_ssize_t k = 0; k < t->count; k++) {
        PyObject *item = PyTuple_GET_ITEM(tuple, k);
        if (!PyBytes_Check(item)) {
            PyErr_SetString(PyExc_TypeError, "expected a tuple of bytes");
            return -1;
        }
        t->names[k] = PyBytes_AS_STRING(item);
        t->lengths[k] = PyBytes_GET_SIZE(item);
        size_t i = hash((const uint8_t *)t->names[k], (size_t)t->lengths[k]) & t->mask;
        while (t->slots[i] >= 0) i = (i + 1) & t->mask;
        t->slots[i] = (int32_t)k;
    }
    return 0;
}

static void names_free(Names *t) {
    free(t->names);
    free(t->lengths);
    free(t->slots);
}

typedef struct {
    const uint8_t *buf;
    int64_t size;
    Names types, keys, fields;
    const int16_t *routes;
    const uint8_t *shapes;
    Py_ssize_t codes;
    Array events, rows, text, times, time_offsets;
    int64_t top[6];
} Scanner;

static inline int is_space(uint8_t c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

static inline int64_t space(const uint8_t *b, int64_t pos, int64_t size) {
    if (pos < size && b[pos] > ' ') return pos; /* no space at all: the usual case */
#ifdef __SSE2__
    /* Indentation: sixteen bytes at a time. */
    const __m128i blank = _mm_set1_epi8(' '), newline = _mm_set1_epi8('\n');
    const __m128i cr = _mm_set1_epi8('\r'), tab = _mm_set1_epi8('\t');
    while (pos + 16 <= size) {
        __m128i v = _mm_loadu_si128((const __m128i *)(b + pos));
        __m128i w = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, blank), _mm_cmpeq_epi8(v, newline)),
                                 _mm_or_si128(_mm_cmpeq_epi8(v, cr), _mm_cmpeq_epi8(v, tab)));
        unsigned other = ~(unsigned)_mm_movemask_epi8(w) & 0xFFFFu;
        if (other) return pos + __builtin_ctz(other);
        pos += 16;
    }
#endif
    while (pos < size && is_space(b[pos])) pos++;
    return pos;
}

/* One UTF-8 sequence starting at b[pos] (>= 0x80), strictly (no overlongs, no surrogates). */
static inline int utf8(const uint8_t *b, int64_t pos, int64_t size) {
    uint8_t c = b[pos];
    int n;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) n = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) n = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) n = 4, cp = c & 0x07;
    else return 0;
    if (pos + n > size) return 0;
    for (int i = 1; i < n; i++) {
        if ((b[pos + i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (b[pos + i] & 0x3F);
    }
    if ((n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return 0;
    return n;
}

static inline int hex4(const uint8_t *b, int64_t pos, int64_t size, uint32_t *out) {
    if (pos + 4 > size) return 0;
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        uint8_t c = b[pos + i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (uint32_t)(c - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

/* The string at b[*pos] == '"': validated; *pos moves past its closing quote. The raw content is
 * [*start, *end); *escaped says whether it holds an escape. */
static const char *string(const Scanner *s, int64_t *pos, int64_t *start, int64_t *end,
                          int *escaped) {
    const uint8_t *b = s->buf;
    int64_t at = *pos + 1, size = s->size;
    *start = at;
    *escaped = 0;
    while (1) {
        /* Plain ASCII bytes (no quote, backslash, control or high byte) skipped in blocks. */
#ifdef __SSE2__
        const __m128i quote = _mm_set1_epi8('"'), slash = _mm_set1_epi8('\\');
        const __m128i low = _mm_set1_epi8(0x20); /* signed: below it are controls and high bytes */
        while (at + 16 <= size) {
            __m128i v = _mm_loadu_si128((const __m128i *)(b + at));
            __m128i w = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote),
                                                  _mm_cmpeq_epi8(v, slash)),
                                     _mm_cmplt_epi8(v, low));
            unsigned special = (unsigned)_mm_movemask_epi8(w);
            if (special) {
                at += __builtin_ctz(special);
                break;
            }
            at += 16;
        }
#else
        while (at + 8 <= size) {
            uint64_t w;
            memcpy(&w, b + at, 8);
            uint64_t high = w & 0x8080808080808080ull;
            uint64_t control = (w - 0x2020202020202020ull) & ~w & 0x8080808080808080ull;
            uint64_t q = w ^ 0x2222222222222222ull, bs = w ^ 0x5C5C5C5C5C5C5C5Cull;
            uint64_t quote = (q - 0x0101010101010101ull) & ~q & 0x8080808080808080ull;
            uint64_t slash = (bs - 0x0101010101010101ull) & ~bs & 0x8080808080808080ull;
            if (high | control | quote | slash) break;
            at += 8;
        }
#endif
        if (at >= size) return DECLINE;
        uint8_t c = b[at];
        if (c == '"') break;
        if (c < 0x20) return DECLINE;
        if (c == '\\') {
            *escaped = 1;
            if (at + 1 >= size) return DECLINE;
            uint8_t e = b[at + 1];
            if (e == 'u') {
                uint32_t v;
                if (!hex4(b, at + 2, size, &v)) return DECLINE;
                at += 6;
                if (v >= 0xD800 && v <= 0xDBFF) { /* a pair's high half: the low half follows */
                    uint32_t low;
                    if (at + 1 >= size || b[at] != '\\' || b[at + 1] != 'u') return DECLINE;
                    if (!hex4(b, at + 2, size, &low) || low < 0xDC00 || low > 0xDFFF)
                        return DECLINE;
                    at += 6;
                } else if (v >= 0xDC00 && v <= 0xDFFF) {
                    return DECLINE;
                }
                continue;
            }
            if (!strchr("\"\\/bfnrt", e) || e == 0) return DECLINE;
            at += 2;
            continue;
        }
        if (c >= 0x80) {
            int n = utf8(b, at, size);
            if (!n) return DECLINE;
            at += n;
            continue;
        }
        at++;
    }
    *end = at;
    *pos = at + 1;
    return NULL;
}

static void put_utf8(uint8_t **out, uint32_t cp) {
    uint8_t *o = *out;
    if (cp < 0x80) *o++ = (uint8_t)cp;
    else if (cp < 0x800) *o++ = (uint8_t)(0xC0 | (cp >> 6)), *o++ = (uint8_t)(0x80 | (cp & 0x3F));
    else if (cp < 0x10000) {
        *o++ = (uint8_t)(0xE0 | (cp >> 12));
        *o++ = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        *o++ = (uint8_t)(0x80 | (cp & 0x3F));
    } else {
        *o++ = (uint8_t)(0xF0 | (cp >> 18));
        *o++ = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
        *o++ = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        *o++ = (uint8_t)(0x80 | (cp & 0x3F));
    }
    *out = o;
}

/* The text of a validated string's raw content [start, end) appended to the text buffer. */
static const char *append_text(Scanner *s, int64_t start, int64_t end, int escaped,
                               int64_t *text_start, int64_t *text_length) {
    size_t before = s->text.count;
    uint8_t *o = push(&s->text, (size_t)(end - start));
    if (o == NULL) return NO_MEMORY;
    const uint8_t *b = s->buf;
    *text_start = (int64_t)before;
    if (!escaped) {
        memcpy(o, b + start, (size_t)(end - start));
        *text_length = end - start;
        return NULL;
    }
    uint8_t *first = o;
    for (int64_t at = start; at < end;) {
        if (b[at] != '\\') {
            *o++ = b[at++];
            continue;
        }
        uint8_t e = b[at + 1];
        at += 2;
        switch (e) {
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            uint32_t v = 0, low = 0xDC00;
            hex4(b, at, end, &v);
            at += 4;
            if (v >= 0xD800 && v <= 0xDBFF) {
                hex4(b, at + 2, end, &low);
                at += 6;
                v = 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00);
            }
            put_utf8(&o, v); /* never longer than the six or twelve bytes it replaces */
            break;
        }
        default: *o++ = e; /* " \ / */
        }
    }
    *text_length = (int64_t)(o - first);
    s->text.count = before + (size_t)(o - first);
    return NULL;
}

static const char *value(const Scanner *s, int64_t *pos, int depth);

static const char *number(const Scanner *s, int64_t *pos, int *integral) {
    const uint8_t *b = s->buf;
    int64_t at = *pos, size = s->size;
    *integral = 1;
    if (at < size && b[at] == '-') at++;
    if (at >= size) return DECLINE;
    if (b[at] == '0') at++;
    else if (b[at] >= '1' && b[at] <= '9') while (at < size && b[at] >= '0' && b[at] <= '9') at++;
    else return DECLINE;
    if (at < size && b[at] == '.') {
        *integral = 0;
        at++;
        if (at >= size || b[at] < '0' || b[at] > '9') return DECLINE;
        while (at < size && b[at] >= '0' && b[at] <= '9') at++;
    }
    if (at < size && (b[at] == 'e' || b[at] == 'E')) {
        *integral = 0;
        at++;
        if (at < size && (b[at] == '+' || b[at] == '-')) at++;
        if (at >= size || b[at] < '0' || b[at] > '9') return DECLINE;
        while (at < size && b[at] >= '0' && b[at] <= '9') at++;
    }
    *pos = at;
    return NULL;
}

static const char *literal(const Scanner *s, int64_t *pos, const char *word, size_t n) {
    if (*pos + (int64_t)n > s->size || memcmp(s->buf + *pos, word, n) != 0) return DECLINE;
    *pos += (int64_t)n;
    return NULL;
}

/* Any JSON value at *pos (no leading space), validated and skipped. */
static const char *value(const Scanner *s, int64_t *pos, int depth) {
    const uint8_t *b = s->buf;
    int64_t size = s->size, a, z;
    int escaped, integral;
    if (*pos >= size) return DECLINE;
    switch (b[*pos]) {
    case '"': return string(s, pos, &a, &z, &escaped);
    case 't': return literal(s, pos, "true", 4);
    case 'f': return literal(s, pos, "false", 5);
    case 'n': return literal(s, pos, "null", 4);
    case '{':
    case '[': {
        if (depth >= MAX_DEPTH) return DECLINE;
        uint8_t close = b[*pos] == '{' ? '}' : ']';
        int object = close == '}';
        int64_t at = space(b, *pos + 1, size);
        if (at < size && b[at] == close) {
            *pos = at + 1;
            return NULL;
        }
        while (1) {
            const char *error;
            if (object) {
                if (at >= size || b[at] != '"') return DECLINE;
                if ((error = string(s, &at, &a, &z, &escaped))) return error;
                at = space(b, at, size);
                if (at >= size || b[at] != ':') return DECLINE;
                at = space(b, at + 1, size);
            }
            if ((error = value(s, &at, depth + 1))) return error;
            at = space(b, at, size);
            if (at >= size) return DECLINE;
            if (b[at] == ',') {
                at = space(b, at + 1, size);
                continue;
            }
            if (b[at] != close) return DECLINE;
            *pos = at + 1;
            return NULL;
        }
    }
    default:
        if (b[*pos] == '-' || (b[*pos] >= '0' && b[*pos] <= '9')) return number(s, pos, &integral);
        return DECLINE;
    }
}

/* An int64 from a JSON integer or a string of one ("" is 0, as the typed path reads it). */
static const char *integer(const Scanner *s, int64_t *pos, int64_t *out) {
    const uint8_t *b = s->buf;
    int64_t at = *pos, from, to;
    int quoted = b[at] == '"', integral, escaped;
    if (quoted) {
        const char *error = string(s, &at, &from, &to, &escaped);
        if (error) return error;
        if (escaped) return DECLINE;
        if (from == to) {
            *out = 0;
            *pos = at;
            return NULL;
        }
    } else {
        from = at;
        const char *error = number(s, &at, &integral);
        if (error) return error;
        if (!integral) return DECLINE;
        to = at;
    }
    int negative = b[from] == '-';
    int64_t k = from + negative;
    if (k >= to || to - k > 18) return DECLINE; /* beyond 18 digits: let the typed path judge */
    int64_t v = 0;
    for (; k < to; k++) {
        if (b[k] < '0' || b[k] > '9') return DECLINE;
        v = v * 10 + (b[k] - '0');
    }
    *out = negative ? -v : v;
    *pos = at;
    return NULL;
}

static inline int is_null(const Scanner *s, int64_t pos) {
    return pos + 4 <= s->size && memcmp(s->buf + pos, "null", 4) == 0;
}

static const char *add_row(Scanner *s, int64_t event, int code, int64_t v, int64_t start,
                           int64_t length, int64_t text_start, int64_t text_length) {
    Row *row = push(&s->rows, 1);
    if (row == NULL) return NO_MEMORY;
    row->event = event;
    row->code = (int16_t)code;
    row->value = v;
    row->start = start;
    row->length = length;
    row->text_start = text_start;
    row->text_length = text_length;
    return NULL;
}

/* {"name": "..."} or a bare string: the name's raw content; *found = 0 for null or no name. */
static const char *named(const Scanner *s, int64_t *pos, int64_t *from, int64_t *to,
                         int *escaped, int *found) {
    const uint8_t *b = s->buf;
    int64_t at = *pos, size = s->size, a, z;
    int e;
    *found = 0;
    if (b[at] == '"') {
        const char *error = string(s, &at, from, to, escaped);
        if (error) return error;
        *found = 1;
        *pos = at;
        return NULL;
    }
    if (b[at] != '{') return DECLINE;
    at = space(b, at + 1, size);
    if (at < size && b[at] == '}') {
        *pos = at + 1;
        return NULL;
    }
    while (1) {
        const char *error;
        if (at >= size || b[at] != '"') return DECLINE;
        if ((error = string(s, &at, &a, &z, &e))) return error;
        if (e) return DECLINE;
        int is_name = z - a == 4 && memcmp(b + a, "name", 4) == 0;
        at = space(b, at, size);
        if (at >= size || b[at] != ':') return DECLINE;
        at = space(b, at + 1, size);
        if (is_name) {
            if (*found) return DECLINE; /* repeated */
            if (at < size && b[at] == '"') {
                if ((error = string(s, &at, from, to, escaped))) return error;
                *found = 1;
            } else if (is_null(s, at)) {
                at += 4;
                *found = 2; /* null: seen, nothing for the column */
            } else {
                return DECLINE;
            }
        } else if ((error = value(s, &at, 3))) {
            return error;
        }
        at = space(b, at, size);
        if (at >= size) return DECLINE;
        if (b[at] == ',') {
            at = space(b, at + 1, size);
            continue;
        }
        if (b[at] != '}') return DECLINE;
        *pos = at + 1;
        if (*found == 2) *found = 0;
        return NULL;
    }
}

/* The fields of event `event`'s attributes object at *pos, routed by its type's row of routes. */
static const char *attributes(Scanner *s, int64_t event, int64_t type, int64_t *pos) {
    const uint8_t *b = s->buf;
    int64_t at = *pos, size = s->size, a, z;
    int escaped;
    const int16_t *route = s->routes + type * s->fields.count;
    uint64_t seen[4] = {0, 0, 0, 0};
    if (b[at] != '{') return DECLINE;
    at = space(b, at + 1, size);
    if (at < size && b[at] == '}') {
        *pos = at + 1;
        return NULL;
    }
    while (1) {
        const char *error;
        if (at >= size || b[at] != '"') return DECLINE;
        if ((error = string(s, &at, &a, &z, &escaped))) return error;
        if (escaped) return DECLINE; /* a key spelled with escapes: the typed path reads it */
        int32_t field = find(&s->fields, b + a, (size_t)(z - a));
        at = space(b, at, size);
        if (at >= size || b[at] != ':') return DECLINE;
        at = space(b, at + 1, size);
        int code = field >= 0 ? route[field] : 0;
        if (code > 0 && code < s->codes && field < 256) {
            if (seen[field >> 6] & (1ull << (field & 63))) return DECLINE; /* a repeated key */
            seen[field >> 6] |= 1ull << (field & 63);
        }
        int shape = code > 0 && code < s->codes ? s->shapes[code] : SKIP;
        int64_t from = at, v = 0, ts = 0, tl = 0;
        if (shape != SKIP && is_null(s, at)) {
            at += 4; /* null: the field is absent */
        } else if (shape == TEXT || shape == CHECK) {
            int64_t start, end;
            if (b[at] != '"') return DECLINE;
            if ((error = string(s, &at, &start, &end, &escaped))) return error;
            if (shape == TEXT) {
                if ((error = append_text(s, start, end, escaped, &ts, &tl))) return error;
                if ((error = add_row(s, event, code, 0, start, end - start, ts, tl))) return error;
            }
        } else if (shape == NAMED || shape == CHECK_NAMED) {
            int64_t start = 0, end = 0;
            int found;
            if ((error = named(s, &at, &start, &end, &escaped, &found))) return error;
            if (found && shape == NAMED) {
                if ((error = append_text(s, start, end, escaped, &ts, &tl))) return error;
                if ((error = add_row(s, event, code, 0, start, end - start, ts, tl))) return error;
            }
        } else if (shape == INT) {
            if ((error = integer(s, &at, &v))) return error;
            if ((error = add_row(s, event, code, v, from, at - from, 0, 0))) return error;
        } else if (shape == FLAG) {
            if (b[at] == 't' && !literal(s, &at, "true", 4)) v = 1;
            else if (b[at] == 'f' && !literal(s, &at, "false", 5)) v = 0;
            else if (b[at] == '"') {
                int64_t start, end;
                if ((error = string(s, &at, &start, &end, &escaped))) return error;
                if (!escaped && end - start == 4 && !memcmp(b + start, "true", 4)) v = 1;
                else if (!escaped && end - start == 5 && !memcmp(b + start, "false", 5)) v = 0;
                else return DECLINE;
            } else return DECLINE;
            if ((error = add_row(s, event, code, v, from, at - from, 0, 0))) return error;
        } else if (shape == RAW) {
            if ((error = value(s, &at, 2))) return error;
            if ((error = add_row(s, event, code, field, from, at - from, 0, 0))) return error;
        } else {
            if ((error = value(s, &at, 2))) return error;
        }
        at = space(b, at, size);
        if (at >= size) return DECLINE;
        if (b[at] == ',') {
            at = space(b, at + 1, size);
            continue;
        }
        if (b[at] != '}') return DECLINE;
        *pos = at + 1;
        return NULL;
    }
}

static const char *event(Scanner *s, int64_t index, int64_t *pos) {
    const uint8_t *b = s->buf;
    int64_t at = *pos, size = s->size, a, z;
    int escaped;
    Event *e = push(&s->events, 1);
    if (e == NULL) return NO_MEMORY;
    e->start = at;
    e->type = -1;
    e->from = e->to = -1;
    int seen_id = 0, seen_time = 0, seen_own = 0;
    int64_t time_from = 0, time_to = 0, pending = -1, pending_key = -1;
    if (b[at] != '{') return DECLINE;
    at = space(b, at + 1, size);
    if (at < size && b[at] == '}') return DECLINE; /* no id, no type */
    while (1) {
        const char *error;
        if (at >= size || b[at] != '"') return DECLINE;
        if ((error = string(s, &at, &a, &z, &escaped))) return error;
        if (escaped) return DECLINE;
        const uint8_t *key = b + a;
        int64_t n = z - a;
        at = space(b, at, size);
        if (at >= size || b[at] != ':') return DECLINE;
        at = space(b, at + 1, size);
        if (n == 7 && !memcmp(key, "eventId", 7)) {
            if (seen_id++ || b[at] == 'n') return DECLINE;
            if ((error = integer(s, &at, &e->id))) return error;
            if (b[at - 1] == '"' && b[at - 2] == '"') return DECLINE; /* "" */
        } else if (n == 9 && !memcmp(key, "eventTime", 9)) {
            if (seen_time++) return DECLINE;
            if (is_null(s, at)) at += 4;
            else {
                if (b[at] != '"') return DECLINE;
                if ((error = string(s, &at, &time_from, &time_to, &escaped))) return error;
                if (escaped) return DECLINE;
            }
        } else if (n == 9 && !memcmp(key, "eventType", 9)) {
            if (e->type >= 0 || b[at] != '"') return DECLINE;
            if ((error = string(s, &at, &a, &z, &escaped))) return error;
            int32_t type = escaped ? -1 : find(&s->types, b + a, (size_t)(z - a));
            if (type < 0) return DECLINE;
            e->type = type;
            if (pending >= 0) {
                if (pending_key != type) return DECLINE; /* not our attributes: rare, decline */
                int64_t back = pending;
                seen_own = 1;
                if (s->routes[type * s->fields.count] < 0) {
                    e->from = back;
                    if ((error = value(s, &back, 1))) return error;
                    e->to = back;
                } else {
                    e->from = back;
                    if ((error = attributes(s, index, type, &back))) return error;
                    e->to = back;
                }
                pending = -1;
            }
        } else if (n == 9 && !memcmp(key, "timestamp", 9)) {
            return DECLINE; /* the legacy time field: the typed path handles it */
        } else {
            int32_t k = find(&s->keys, key, (size_t)n);
            if (k >= 0 && e->type < 0) {
                /* attributes before the type: keep where they are, read them once it is known */
                if (pending >= 0) return DECLINE;
                if (is_null(s, at)) at += 4;
                else {
                    if (b[at] != '{') return DECLINE;
                    pending = at;
                    pending_key = k;
                    if ((error = value(s, &at, 1))) return error;
                }
            } else if (k >= 0 && (int64_t)k == e->type) {
                if (seen_own++) return DECLINE;
                if (is_null(s, at)) at += 4;
                else if (s->routes[e->type * s->fields.count] < 0) {
                    if (b[at] != '{') return DECLINE;
                    e->from = at;
                    if ((error = value(s, &at, 1))) return error;
                    e->to = at;
                } else {
                    e->from = at;
                    if ((error = attributes(s, index, e->type, &at))) return error;
                    e->to = at;
                }
            } else if ((error = value(s, &at, 1))) {
                return error;
            }
        }
        at = space(b, at, size);
        if (at >= size) return DECLINE;
        if (b[at] == ',') {
            at = space(b, at + 1, size);
            continue;
        }
        if (b[at] != '}') return DECLINE;
        at++;
        break;
    }
    if (!seen_id || e->type < 0 || pending >= 0) return DECLINE;
    e->end = at;
    *pos = at;
    int64_t *offset = push(&s->time_offsets, 1);
    uint8_t *t = push(&s->times, (size_t)(time_to - time_from));
    if (offset == NULL || (t == NULL && time_to > time_from)) return NO_MEMORY;
    if (time_to > time_from) memcpy(t, b + time_from, (size_t)(time_to - time_from));
    *offset = (int64_t)s->times.count;
    return NULL;
}

static const char *document(Scanner *s) {
    const uint8_t *b = s->buf;
    int64_t size = s->size, a, z;
    int escaped, seen_events = 0;
    for (int k = 0; k < 6; k++) s->top[k] = -1;
    int64_t at = space(b, 0, size);
    if (at >= size || b[at] != '{') return DECLINE;
    at = space(b, at + 1, size);
    int64_t *zero = push(&s->time_offsets, 1);
    if (zero == NULL) return NO_MEMORY;
    *zero = 0;
    while (1) {
        const char *error;
        if (at >= size || b[at] != '"') return DECLINE;
        if ((error = string(s, &at, &a, &z, &escaped))) return error;
        if (escaped) return DECLINE;
        const uint8_t *key = b + a;
        int64_t n = z - a;
        at = space(b, at, size);
        if (at >= size || b[at] != ':') return DECLINE;
        at = space(b, at + 1, size);
        int slot = n == 10 && !memcmp(key, "workflowId", 10) ? 0
                   : n == 5 && !memcmp(key, "runId", 5)       ? 1
                   : n == 9 && !memcmp(key, "namespace", 9)   ? 2
                                                              : -1;
        if (n == 6 && !memcmp(key, "events", 6)) {
            if (seen_events++ || at >= size || b[at] != '[') return DECLINE;
            at = space(b, at + 1, size);
            if (at < size && b[at] == ']') at++;
            else {
                for (int64_t index = 0;; index++) {
                    if ((error = event(s, index, &at))) return error;
                    at = space(b, at, size);
                    if (at >= size) return DECLINE;
                    if (b[at] == ',') {
                        at = space(b, at + 1, size);
                        continue;
                    }
                    if (b[at] != ']') return DECLINE;
                    at++;
                    break;
                }
            }
        } else if (slot >= 0) {
            if (s->top[2 * slot] >= 0) return DECLINE;
            s->top[2 * slot] = at;
            if ((error = value(s, &at, 1))) return error;
            s->top[2 * slot + 1] = at;
        } else if ((error = value(s, &at, 1))) {
            return error;
        }
        at = space(b, at, size);
        if (at >= size) return DECLINE;
        if (b[at] == ',') {
            at = space(b, at + 1, size);
            continue;
        }
        if (b[at] != '}') return DECLINE;
        at = space(b, at + 1, size);
        return at == size && seen_events ? NULL : DECLINE;
    }
}

static PyObject *bytearray_of(const void *data, size_t size) {
    return PyByteArray_FromStringAndSize(data, (Py_ssize_t)size);
}

static PyObject *results(Scanner *s) {
    size_t n = s->events.count, m = s->rows.count, codes = (size_t)s->codes;
    const Event *events = (const Event *)s->events.data;
    const Row *rows = (const Row *)s->rows.data;
    int64_t *e = malloc((n * EVENT_COLUMNS + 1) * 8), *r = malloc((m * ROW_COLUMNS + 1) * 8);
    int64_t *bounds = calloc(codes + 1, 8), *next = calloc(codes + 1, 8);
    size_t text_bytes = 0, text_rows = 0;
    for (size_t i = 0; i < m; i++) {
        if (s->shapes[rows[i].code] == TEXT || s->shapes[rows[i].code] == NAMED) {
            text_bytes += (size_t)rows[i].text_length;
            text_rows++;
        }
    }
    uint8_t *text = malloc(text_bytes + 1);
    int64_t *offsets = malloc((text_rows + 1) * 8);
    PyObject *out = NULL;
    if (!e || !r || !bounds || !next || !text || !offsets) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        e[i] = events[i].start;
        e[n + i] = events[i].end;
        e[2 * n + i] = events[i].id;
        e[3 * n + i] = events[i].type;
        e[4 * n + i] = events[i].from;
        e[5 * n + i] = events[i].to;
    }
    for (size_t i = 0; i < m; i++) bounds[rows[i].code + 1]++;
    for (size_t c = 0; c < codes; c++) bounds[c + 1] += bounds[c];
    /* Text rows ranked by code, then event: the texts of one code are contiguous. */
    int64_t *text_at = calloc(codes + 1, 8);
    if (text_at == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t i = 0; i < m; i++) {
        int c = rows[i].code;
        if (s->shapes[c] == TEXT || s->shapes[c] == NAMED) text_at[c + 1]++;
    }
    for (size_t c = 0; c < codes; c++) text_at[c + 1] += text_at[c];
    int64_t *byte_at = calloc(codes + 1, 8);
    if (byte_at == NULL) {
        free(text_at);
        PyErr_NoMemory();
        goto done;
    }
    for (size_t i = 0; i < m; i++) {
        int c = rows[i].code;
        if (s->shapes[c] == TEXT || s->shapes[c] == NAMED) byte_at[c + 1] += rows[i].text_length;
    }
    for (size_t c = 0; c < codes; c++) byte_at[c + 1] += byte_at[c];
    memcpy(next, bounds, (codes + 1) * 8);
    offsets[0] = 0;
    const uint8_t *all_text = (const uint8_t *)s->text.data;
    for (size_t i = 0; i < m; i++) {
        const Row *row = &rows[i];
        int64_t at = next[row->code]++;
        r[at] = row->event;
        r[m + at] = row->value;
        r[2 * m + at] = row->start;
        r[3 * m + at] = row->length;
        if (s->shapes[row->code] == TEXT || s->shapes[row->code] == NAMED) {
            int64_t t = text_at[row->code]++, b = byte_at[row->code];
            memcpy(text + b, all_text + row->text_start, (size_t)row->text_length);
            byte_at[row->code] = b + row->text_length;
            offsets[t + 1] = b + row->text_length;
        }
    }
    free(text_at);
    free(byte_at);
    out = Py_BuildValue(
        "(NNNNNNNN)", bytearray_of(e, n * EVENT_COLUMNS * 8), bytearray_of(r, m * ROW_COLUMNS * 8),
        bytearray_of(bounds, (codes + 1) * 8), bytearray_of(text, text_bytes),
        bytearray_of(offsets, (text_rows + 1) * 8), bytearray_of(s->times.data, s->times.count),
        bytearray_of(s->time_offsets.data, s->time_offsets.count * 8),
        bytearray_of(s->top, sizeof s->top));
done:
    free(e);
    free(r);
    free(bounds);
    free(next);
    free(text);
    free(offsets);
    return out;
}

static PyObject *scan(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer buf, routes, shapes;
    PyObject *types, *keys, *fields;
    if (!PyArg_ParseTuple(args, "y*OOOy*y*:scan", &buf, &types, &keys, &fields, &routes,
                          &shapes))
        return NULL;
    Scanner s;
    memset(&s, 0, sizeof s);
    PyObject *result = NULL;
    if (names_from(types, &s.types) < 0 || names_from(keys, &s.keys) < 0 ||
        names_from(fields, &s.fields) < 0)
        goto done;
    if (s.keys.count != s.types.count || routes.len != s.types.count * s.fields.count * 2 ||
        shapes.len < 1) {
        PyErr_SetString(PyExc_ValueError, "tables do not fit together");
        goto done;
    }
    s.buf = buf.buf;
    s.size = buf.len;
    s.routes = routes.buf;
    s.shapes = shapes.buf;
    s.codes = shapes.len;
    s.events.itemsize = sizeof(Event);
    s.rows.itemsize = sizeof(Row);
    s.text.itemsize = 1;
    s.times.itemsize = 1;
    s.time_offsets.itemsize = 8;
    const char *error;
    Py_BEGIN_ALLOW_THREADS
    error = document(&s);
    Py_END_ALLOW_THREADS
    if (error) {
        PyErr_SetString(error == NO_MEMORY ? PyExc_MemoryError : PyExc_ValueError, error);
        goto done;
    }
    result = results(&s);
done:
    names_free(&s.types);
    names_free(&s.keys);
    names_free(&s.fields);
    free(s.events.data);
    free(s.rows.data);
    free(s.text.data);
    free(s.times.data);
    free(s.time_offsets.data);
    PyBuffer_Release(&buf);
    PyBuffer_Release(&routes);
    PyBuffer_Release(&shapes);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, "scan(buf, types, keys, fields, routes, shapes): see _jsonscan.c."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_jsonscan",
    "The events of a proto-JSON history read in C (see toolkit.histories.columns.from_json_scan).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__jsonscan(void) { return PyModule_Create(&module); }
