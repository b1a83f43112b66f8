/*
 * The JSON text of lazy cells, as the dataset writer stores it, in C (setup.py marks this
 * optional; without a C compiler toolkit/datasets/json_cells.py and
 * toolkit/histories/tables/attribute_views.py do the same in Python, and
 * tests/test_json_cells_compiled.py holds both to the same bytes).
 *
 * lazy_pieces(values, LazyAttributes, LazyExtra, event_fields, LazyPayloads, Raw, memo)
 *   -> (pieces, left)
 *   json_cells._pieces of a column, for its null cells, raw JSON events' attributes and extra
 *   cells and default payload cells: each cell's piece (its raw attributes text, `{}` where
 *   absent or null; its extra_piece below; a payload cell's plain_payloads below, kept in
 *   `memo` (a dict or None) by the cell's id, or found there), the history's fields found by
 *   event_fields(cell._history) once per run of cells of one history. `left`: the positions of
 *   the other cells (other kinds, a history without fields, an extra cell extra_piece or a
 *   payload cell plain_payloads declines, a payload cell with a codec), None in `pieces`, for
 *   the Python loop to fill.
 *
 * attribute_raws(cells, LazyAttributes, event_fields) -> bytes | None
 *   attribute_views._shared_fields' JSON array of the cells' raw attributes (`{}` where absent);
 *   None where a cell is of another kind or its history has no fields.
 *
 * text_buffers(values) -> (validity | None, offsets, data) | None
 *   string_buffers of a column of text: `values` (a sequence) holding only str (exactly) and
 *   None, each str as its UTF-8; None for anything else (another type, a str that has no UTF-8:
 *   a lone surrogate) or past 2 GiB of text, for pyarrow's conversion to decide as before.
 *
 * string_buffers(pieces) -> (validity | None, offsets, data)
 *   The buffers of an Arrow string array of `pieces` (buffers, None for a null), as
 *   json_cells._string_array makes them: validity bits (None without nulls), int32 offsets;
 *   OverflowError past 2 GiB of text.
 *
 * plain_payloads(raw) -> bytes | None
 *   raw: a payload cell's proto-JSON (a buffer) of the shape nearly every cell has,
 *   `{"payloads":[{"metadata":{"encoding":"anNvbi9wbGFpbg=="},"data":"<base64>"}, ...]}` (one or
 *   more json/plain payloads, JSON whitespace between tokens). Returns what
 *   json_cells._json_plain_piece gives: the JSON array of the payloads' values as
 *   `orjson.dumps([orjson.loads(data), ...])` writes it, i.e. each payload's data with the blanks
 *   between tokens dropped and its strings written as orjson writes them (escapes resolved to
 *   UTF-8 but for `"`, `\` and the control characters, written as `\"`, `\\`, `\b` `\f` `\n` `\r`
 *   `\t` and `\u00xx`). None (the Python path decides, as before) for any other shape and for data
 *   whose text would not come back byte for byte from that: no base64 of whole quanta, no JSON,
 *   invalid UTF-8, a number with a fraction or an exponent (floats are written by their shortest
 *   repr), an integer of more than 18 digits (orjson reads some as floats), `-0`, a duplicate key
 *   in an object (orjson keeps the last value at the first place), nesting deeper than 64, an
 *   object of more than 64 keys, a lone surrogate escape.
 *
 * extra_piece(fields, key) -> bytes | None
 *   fields: one event's top-level fields (dict: name -> msgspec.Raw), key: its attributes' name
 *   or None. What json_cells._extra_piece gives: the JSON object of every field but eventId,
 *   eventTime, eventType and `key`, in the dict's order, each value its raw text, as msgspec
 *   writes it. None (the Python path writes it) where a name holds a character msgspec would
 *   escape (`"`, `\`, a control character) or is no valid text, or a value is no buffer.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static PyObject *plain_payloads(PyObject *self, PyObject *arg);

#define MAX_DEPTH 64
#define MAX_KEYS 64

static int is_ws(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static Py_ssize_t skip_ws(const unsigned char *s, Py_ssize_t n, Py_ssize_t at) {
    while (at < n && is_ws(s[at])) at++;
    return at;
}

/* Skips blanks, then expects `token`; the position after it, or -1. */
static Py_ssize_t expect(const unsigned char *s, Py_ssize_t n, Py_ssize_t at, const char *token) {
    at = skip_ws(s, n, at);
    Py_ssize_t size = (Py_ssize_t)strlen(token);
    if (at + size > n || memcmp(s + at, token, (size_t)size) != 0) return -1;
    return at + size;
}

static signed char B64[256];
static unsigned char PLAIN[256]; /* ASCII a string holds as it is: not '"', '\\' or control */

static void init_b64(void) {
    const char *digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    memset(B64, -1, sizeof(B64));
    for (int i = 0; i < 64; i++) B64[(unsigned char)digits[i]] = (signed char)i;
    for (int c = 0x20; c < 0x80; c++) PLAIN[c] = c != '"' && c != '\\';
}

/* Base64 of whole quanta, "=" padding (one or two) at its end only, into `out`; the bytes
 * written, or -1 for other text (the bits a padded quantum leaves over are ignored, as
 * msgspec and binascii ignore them). */
static Py_ssize_t b64_decode(const unsigned char *s, Py_ssize_t n, unsigned char *out) {
    if (n == 0 || n % 4) return -1;
    Py_ssize_t pad = s[n - 1] == '=' ? (s[n - 2] == '=' ? 2 : 1) : 0;
    Py_ssize_t full = (pad ? n - 4 : n), w = 0;
    for (Py_ssize_t i = 0; i < full; i += 4) {
        int a = B64[s[i]], b = B64[s[i + 1]], c = B64[s[i + 2]], d = B64[s[i + 3]];
        if ((a | b | c | d) < 0) return -1;
        uint32_t v = ((uint32_t)a << 18) | ((uint32_t)b << 12) | ((uint32_t)c << 6) | (uint32_t)d;
        out[w++] = (unsigned char)(v >> 16);
        out[w++] = (unsigned char)(v >> 8);
        out[w++] = (unsigned char)v;
    }
    if (pad) {
        const unsigned char *q = s + full;
        int a = B64[q[0]], b = B64[q[1]], c = pad == 1 ? B64[q[2]] : 0;
        if ((a | b | c) < 0) return -1;
        uint32_t v = ((uint32_t)a << 18) | ((uint32_t)b << 12) | ((uint32_t)c << 6);
        out[w++] = (unsigned char)(v >> 16);
        if (pad == 1) out[w++] = (unsigned char)(v >> 8);
    }
    return w;
}

/* The length of the valid UTF-8 sequence at s[0..n) (a lead byte >= 0x80), or 0. */
static int utf8_length(const unsigned char *s, Py_ssize_t n) {
    unsigned char c = s[0];
    int size;
    unsigned char low = 0x80, high = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) size = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        size = 3;
        if (c == 0xE0) low = 0xA0;
        if (c == 0xED) high = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        size = 4;
        if (c == 0xF0) low = 0x90;
        if (c == 0xF4) high = 0x8F;
    } else
        return 0;
    if (n < size || s[1] < low || s[1] > high) return 0;
    for (int i = 2; i < size; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return size;
}

static int hex4(const unsigned char *s, uint32_t *out) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : -1;
        if (d < 0) return 0;
        v = (v << 4) | (uint32_t)d;
    }
    *out = v;
    return 1;
}

/* Writes code point `c` as orjson writes it inside a string. */
static Py_ssize_t put_char(unsigned char *o, Py_ssize_t w, uint32_t c) {
    static const char *hex = "0123456789abcdef";
    if (c < 0x20) {
        o[w++] = '\\';
        switch (c) {
        case '\b': o[w++] = 'b'; break;
        case '\f': o[w++] = 'f'; break;
        case '\n': o[w++] = 'n'; break;
        case '\r': o[w++] = 'r'; break;
        case '\t': o[w++] = 't'; break;
        default:
            o[w++] = 'u', o[w++] = '0', o[w++] = '0';
            o[w++] = (unsigned char)hex[c >> 4], o[w++] = (unsigned char)hex[c & 15];
        }
    } else if (c == '"' || c == '\\') {
        o[w++] = '\\', o[w++] = (unsigned char)c;
    } else if (c < 0x80) {
        o[w++] = (unsigned char)c;
    } else if (c < 0x800) {
        o[w++] = (unsigned char)(0xC0 | (c >> 6)), o[w++] = (unsigned char)(0x80 | (c & 63));
    } else if (c < 0x10000) {
        o[w++] = (unsigned char)(0xE0 | (c >> 12));
        o[w++] = (unsigned char)(0x80 | ((c >> 6) & 63)), o[w++] = (unsigned char)(0x80 | (c & 63));
    } else {
        o[w++] = (unsigned char)(0xF0 | (c >> 18)), o[w++] = (unsigned char)(0x80 | ((c >> 12) & 63));
        o[w++] = (unsigned char)(0x80 | ((c >> 6) & 63)), o[w++] = (unsigned char)(0x80 | (c & 63));
    }
    return w;
}

/* A JSON string at s[r] == '"', written to o[w..] as orjson writes it; returns the position
 * after its closing quote (in `*read`) and the new write position, or -1. Writing never
 * overtakes reading (an escape is never shorter than what it is written as), so `o` may be `s`.
 */
static Py_ssize_t string(const unsigned char *s, Py_ssize_t n, Py_ssize_t *read, unsigned char *o,
                         Py_ssize_t w) {
    Py_ssize_t r = *read + 1;
    o[w++] = '"';
    for (;;) {
        /* A run of plain ASCII in one step, moved only once something before it shrank. */
        Py_ssize_t from = r;
        while (r < n && PLAIN[s[r]]) r++;
        if (r > from) {
            if (o + w != s + from) memmove(o + w, s + from, (size_t)(r - from));
            w += r - from;
        }
        if (r >= n) return -1;
        unsigned char c = s[r];
        if (c == '"') break;
        if (c < 0x20) return -1;
        if (c >= 0x80) {
            int size = utf8_length(s + r, n - r);
            if (!size) return -1;
            memmove(o + w, s + r, (size_t)size);
            w += size, r += size;
            continue;
        }
        if (r + 1 >= n) return -1;
        unsigned char e = s[r + 1];
        uint32_t code;
        r += 2;
        switch (e) {
        case '"': code = '"'; break;
        case '\\': code = '\\'; break;
        case '/': code = '/'; break;
        case 'b': code = '\b'; break;
        case 'f': code = '\f'; break;
        case 'n': code = '\n'; break;
        case 'r': code = '\r'; break;
        case 't': code = '\t'; break;
        case 'u':
            if (r + 4 > n || !hex4(s + r, &code)) return -1;
            r += 4;
            if (code >= 0xDC00 && code <= 0xDFFF) return -1; /* a lone low surrogate */
            if (code >= 0xD800 && code <= 0xDBFF) {
                uint32_t low;
                if (r + 6 > n || s[r] != '\\' || s[r + 1] != 'u' || !hex4(s + r + 2, &low) ||
                    low < 0xDC00 || low > 0xDFFF)
                    return -1;
                r += 6;
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
            }
            break;
        default: return -1;
        }
        w = put_char(o, w, code);
    }
    o[w++] = '"';
    *read = r + 1;
    return w;
}

/* One integer of at most 18 digits, no fraction or exponent, not -0; position after it or -1. */
static Py_ssize_t integer(const unsigned char *s, Py_ssize_t n, Py_ssize_t r) {
    Py_ssize_t start = r;
    if (s[r] == '-') r++;
    Py_ssize_t digits = r;
    if (r >= n || s[r] < '0' || s[r] > '9') return -1;
    if (s[r] == '0') {
        r++;
        if (r - start == 2) return -1; /* -0 */
    } else
        while (r < n && s[r] >= '0' && s[r] <= '9') r++;
    if (r - digits > 18) return -1;
    if (r < n && (s[r] == '.' || s[r] == 'e' || s[r] == 'E' || (s[r] >= '0' && s[r] <= '9')))
        return -1;
    return r;
}

/* The JSON value s[0..n) rewritten into o (may be s) as orjson.dumps(orjson.loads(s)) writes
 * it; the length written, or -1 where it is not sure to be that (see the top of the file). */
static Py_ssize_t canonical(const unsigned char *s, Py_ssize_t n, unsigned char *o) {
    char stack[MAX_DEPTH];  /* '{' or '[' */
    int counts[MAX_DEPTH];  /* the values (keys) read so far in each open container */
    Py_ssize_t keys[MAX_DEPTH][MAX_KEYS][2]; /* each open object's keys as written (start, end) */
    int depth = 0;
    Py_ssize_t r = 0, w = 0;
    /* expecting: 0 a value, 1 after a value */
    int state = 0;
    for (;;) {
        r = skip_ws(s, n, r);
        if (state == 0) {
            if (r >= n) return -1;
            unsigned char c = s[r];
            if (c == '{' || c == '[') {
                if (depth == MAX_DEPTH) return -1;
                stack[depth] = (char)c, counts[depth] = 0, depth++;
                o[w++] = c, r++;
                Py_ssize_t next = skip_ws(s, n, r);
                if (next < n && s[next] == (c == '{' ? '}' : ']')) {
                    o[w++] = s[next], r = next + 1, depth--;
                    state = 1;
                    continue;
                }
                if (c == '{') { /* the first key */
                    state = 2;
                    continue;
                }
                continue;
            }
            if (c == '"') {
                w = string(s, n, &r, o, w);
                if (w < 0) return -1;
            } else if (c == '-' || (c >= '0' && c <= '9')) {
                Py_ssize_t end = integer(s, n, r);
                if (end < 0) return -1;
                memmove(o + w, s + r, (size_t)(end - r));
                w += end - r, r = end;
            } else if (n - r >= 4 && memcmp(s + r, "true", 4) == 0) {
                memmove(o + w, "true", 4), w += 4, r += 4;
            } else if (n - r >= 5 && memcmp(s + r, "false", 5) == 0) {
                memmove(o + w, "false", 5), w += 5, r += 5;
            } else if (n - r >= 4 && memcmp(s + r, "null", 4) == 0) {
                memmove(o + w, "null", 4), w += 4, r += 4;
            } else
                return -1;
            state = 1;
        } else if (state == 2) { /* a key, then ':' */
            if (r >= n || s[r] != '"') return -1;
            int level = depth - 1, count = counts[level];
            if (count == MAX_KEYS) return -1;
            Py_ssize_t start = w;
            w = string(s, n, &r, o, w);
            if (w < 0) return -1;
            for (int k = 0; k < count; k++) {
                Py_ssize_t *other = keys[level][k];
                if (other[1] - other[0] == w - start &&
                    memcmp(o + other[0], o + start, (size_t)(w - start)) == 0)
                    return -1; /* a duplicate key */
            }
            keys[level][count][0] = start, keys[level][count][1] = w;
            counts[level] = count + 1;
            r = skip_ws(s, n, r);
            if (r >= n || s[r] != ':') return -1;
            o[w++] = ':', r++;
            state = 0;
        } else { /* after a value: ',' or the container's end, or the end of the text */
            if (depth == 0) return r == n ? w : -1;
            if (r >= n) return -1;
            unsigned char c = s[r], open = (unsigned char)stack[depth - 1];
            if (c == ',') {
                o[w++] = ',', r++;
                state = open == '{' ? 2 : 0;
                if (open == '[') counts[depth - 1]++;
            } else if (c == (open == '{' ? '}' : ']')) {
                o[w++] = c, r++, depth--;
            } else
                return -1;
        }
    }
}

static const char ENCODING[] = "\"anNvbi9wbGFpbg==\""; /* base64 of json/plain, quoted */

/* One json/plain payload from `at`, its data's base64 span in span[0..1]; position after its
 * closing brace, or -1 for any other shape. */
static Py_ssize_t one_payload(const unsigned char *s, Py_ssize_t n, Py_ssize_t at,
                              Py_ssize_t span[2]) {
    static const char *before[] = {"{", "\"metadata\"", ":", "{", "\"encoding\"", ":", ENCODING,
                                   "}", ",", "\"data\"", ":", "\""};
    for (size_t i = 0; i < sizeof(before) / sizeof(*before); i++) {
        at = expect(s, n, at, before[i]);
        if (at < 0) return -1;
    }
    span[0] = at;
    while (at < n && s[at] != '"' && s[at] != '\\') at++;
    if (at >= n || s[at] != '"') return -1;
    span[1] = at;
    return expect(s, n, at + 1, "}");
}

static PyObject *plain_payloads(PyObject *self, PyObject *arg) {
    (void)self;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *s = view.buf;
    Py_ssize_t n = view.len, at = expect(s, n, 0, "{");
    PyObject *out = NULL;
    if (at >= 0) at = expect(s, n, at, "\"payloads\"");
    if (at >= 0) at = expect(s, n, at, ":");
    if (at >= 0) at = expect(s, n, at, "[");
    if (at < 0) goto other;
    /* The values' text is never longer than the base64 of their data. */
    out = PyBytes_FromStringAndSize(NULL, n + 2);
    if (out == NULL) goto done;
    unsigned char *o = (unsigned char *)PyBytes_AS_STRING(out);
    Py_ssize_t w = 0;
    o[w++] = '[';
    for (int first = 1;; first = 0) {
        if (!first) {
            Py_ssize_t next = skip_ws(s, n, at);
            if (next < n && s[next] == ']') {
                at = next + 1;
                break;
            }
            at = expect(s, n, at, ",");
            if (at < 0) goto other;
            o[w++] = ',';
        }
        Py_ssize_t span[2];
        at = one_payload(s, n, at, span);
        if (at < 0) goto other;
        Py_ssize_t size = b64_decode(s + span[0], span[1] - span[0], o + w);
        if (size < 0) goto other;
        Py_ssize_t written = canonical(o + w, size, o + w);
        if (written < 0) goto other;
        w += written;
    }
    at = expect(s, n, at, "}");
    if (at < 0 || skip_ws(s, n, at) != n) goto other;
    o[w++] = ']';
    if (_PyBytes_Resize(&out, w) < 0) out = NULL;
    goto done;
other:
    Py_CLEAR(out);
    out = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&view);
    return out;
}

static int envelope(const char *name, Py_ssize_t size) {
    return size == 7 && (memcmp(name, "eventId", 7) == 0) ? 1
         : size == 9 && (memcmp(name, "eventTime", 9) == 0 || memcmp(name, "eventType", 9) == 0);
}

/* extra_piece's text of `fields` (a dict), a new reference: bytes, None (declined) or NULL.
 * One pass, into a buffer on the stack (on the heap for an event with more to say). */
static PyObject *extra_of(PyObject *fields, PyObject *key) {
    const char *skip = NULL;
    Py_ssize_t skip_size = -1;
    if (key != Py_None) {
        if (!PyUnicode_Check(key) || (skip = PyUnicode_AsUTF8AndSize(key, &skip_size)) == NULL) {
            PyErr_Clear();
            Py_RETURN_NONE;
        }
    }
    char small[1024], *o = small;
    Py_ssize_t capacity = sizeof(small), w = 0, pos = 0;
    PyObject *name, *value, *out = NULL;
    o[w++] = '{';
    while (PyDict_Next(fields, &pos, &name, &value)) {
        Py_ssize_t size;
        const char *text = PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, &size) : NULL;
        if (text == NULL) goto declined;
        if (envelope(text, size) || (skip && size == skip_size && !memcmp(text, skip, size)))
            continue;
        for (Py_ssize_t i = 0; i < size; i++) {
            unsigned char c = (unsigned char)text[i];
            if (c < 0x20 || c == '"' || c == '\\') goto declined; /* msgspec escapes it */
        }
        Py_buffer view;
        if (PyObject_GetBuffer(value, &view, PyBUF_SIMPLE) < 0) goto declined;
        Py_ssize_t need = w + size + 4 + view.len + 1; /* , "name" : value, then } */
        if (need > capacity) {
            Py_ssize_t grown = need > 2 * capacity ? need : 2 * capacity;
            char *more = o == small ? PyMem_Malloc((size_t)grown) : PyMem_Realloc(o, (size_t)grown);
            if (more == NULL) {
                PyBuffer_Release(&view);
                PyErr_NoMemory();
                goto done;
            }
            if (o == small) memcpy(more, small, (size_t)w);
            o = more, capacity = grown;
        }
        if (w > 1) o[w++] = ',';
        o[w++] = '"';
        memcpy(o + w, text, (size_t)size), w += size;
        o[w++] = '"', o[w++] = ':';
        memcpy(o + w, view.buf, (size_t)view.len), w += view.len;
        PyBuffer_Release(&view);
    }
    o[w++] = '}';
    out = PyBytes_FromStringAndSize(o, w);
    goto done;
declined:
    PyErr_Clear();
    out = Py_NewRef(Py_None);
done:
    if (o != small) PyMem_Free(o);
    return out;
}

static PyObject *extra_piece(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *fields, *key;
    if (!PyArg_ParseTuple(args, "O!O", &PyDict_Type, &fields, &key)) return NULL;
    return extra_of(fields, key);
}

static PyObject *EMPTY_OBJECT; /* b"{}" */
static PyObject *HISTORY, *INDEX, *KEY; /* the lazy cells' slot names */

/* The fields of event `cell._index` of the history whose fields are `fields` (a list), a
 * borrowed reference; NULL, no error set, where there is no such dict. */
static PyObject *event_of(PyObject *fields, PyObject *cell) {
    PyObject *index = PyObject_GetAttr(cell, INDEX);
    if (index == NULL) return NULL;
    Py_ssize_t at = PyLong_Check(index) ? PyLong_AsSsize_t(index) : -1;
    Py_DECREF(index);
    if (at == -1 && PyErr_Occurred()) PyErr_Clear();
    if (!PyList_Check(fields) || at < 0 || at >= PyList_GET_SIZE(fields)) return NULL;
    PyObject *one = PyList_GET_ITEM(fields, at);
    return PyDict_Check(one) ? one : NULL;
}

/* `cell`'s fields by way of its history (`*history`, `*fields`: the last met and its fields,
 * owned references, replaced when the history changes); borrowed, NULL where there are none
 * (an error set only where fields_of raised). */
static PyObject *cell_event(PyObject *cell, PyObject *fields_of, PyObject **history,
                            PyObject **fields) {
    PyObject *its = PyObject_GetAttr(cell, HISTORY);
    if (its == NULL) return NULL;
    if (its != *history) {
        PyObject *found = PyObject_CallOneArg(fields_of, its);
        if (found == NULL) {
            Py_DECREF(its);
            return NULL;
        }
        Py_XSETREF(*history, its);
        Py_XSETREF(*fields, found);
    } else
        Py_DECREF(its);
    if (*fields == Py_None) return NULL;
    return event_of(*fields, cell);
}

/* The raw text of `event`'s field `key` (a new reference), or NULL where it has none. */
static PyObject *field_of(PyObject *event, PyObject *key, int *failed) {
    *failed = 0;
    if (key == Py_None) return NULL;
    PyObject *raw = PyDict_GetItemWithError(event, key);
    if (raw == NULL) {
        if (PyErr_Occurred()) *failed = 1;
        return NULL;
    }
    return Py_NewRef(raw);
}

static PyObject *CODEC, *RAW; /* a payload cell's slot names */

/* A payload cell's piece as json_cells._pieces makes it, a new reference (found in `memo`, or
 * plain_payloads' text, then kept there); NULL (an error set, or none: left to the Python path)
 * where the cell has a codec, raw text of another kind, or is declined. */
static PyObject *payload_piece(PyObject *cell, PyTypeObject *raw_type, PyObject *memo) {
    PyObject *id = NULL, *piece = NULL;
    if (memo != Py_None) {
        id = PyLong_FromVoidPtr(cell);
        if (id == NULL) return NULL;
        piece = PyDict_GetItemWithError(memo, id);
        if (piece != NULL || PyErr_Occurred()) {
            Py_DECREF(id);
            return Py_XNewRef(piece);
        }
    }
    PyObject *codec = PyObject_GetAttr(cell, CODEC);
    PyObject *raw = codec != NULL ? PyObject_GetAttr(cell, RAW) : NULL;
    if (raw != NULL && codec == Py_None && (PyBytes_Check(raw) || Py_TYPE(raw) == raw_type)) {
        piece = plain_payloads(NULL, raw);
        if (piece == Py_None) Py_CLEAR(piece);
        if (piece != NULL && id != NULL && PyDict_SetItem(memo, id, piece) < 0) Py_CLEAR(piece);
    }
    Py_XDECREF(codec);
    Py_XDECREF(raw);
    Py_XDECREF(id);
    return piece;
}

static PyObject *lazy_pieces(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *values, *attributes_type, *extra_type, *fields_of, *payloads_type, *raw_type, *memo;
    if (!PyArg_ParseTuple(args, "OOOOOOO", &values, &attributes_type, &extra_type, &fields_of,
                          &payloads_type, &raw_type, &memo))
        return NULL;
    if (memo != Py_None && !PyDict_Check(memo)) {
        PyErr_SetString(PyExc_TypeError, "memo must be a dict or None");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(values, "values must be a sequence");
    if (seq == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    PyObject *pieces = PyList_New(n), *left = PyList_New(0), *history = NULL, *fields = NULL;
    if (pieces == NULL || left == NULL) goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *value = items[i], *piece = NULL;
        PyTypeObject *type = Py_TYPE(value);
        if (value == Py_None) {
            piece = Py_NewRef(Py_None);
        } else if (type == (PyTypeObject *)attributes_type || type == (PyTypeObject *)extra_type) {
            PyObject *event = cell_event(value, fields_of, &history, &fields);
            if (event == NULL && PyErr_Occurred()) goto fail;
            PyObject *key = event != NULL ? PyObject_GetAttr(value, KEY) : NULL;
            if (event != NULL && key == NULL) goto fail;
            if (event == NULL) {
                piece = NULL;
            } else if (type == (PyTypeObject *)attributes_type) {
                int failed;
                PyObject *raw = field_of(event, key, &failed);
                if (failed) {
                    Py_DECREF(key);
                    goto fail;
                }
                Py_buffer view;
                if (raw != NULL && PyObject_GetBuffer(raw, &view, PyBUF_SIMPLE) == 0) {
                    int null = view.len == 4 && memcmp(view.buf, "null", 4) == 0;
                    PyBuffer_Release(&view);
                    piece = null ? Py_NewRef(EMPTY_OBJECT) : Py_NewRef(raw);
                } else if (raw != NULL) { /* no buffer: the Python path decides */
                    PyErr_Clear();
                } else
                    piece = Py_NewRef(EMPTY_OBJECT);
                Py_XDECREF(raw);
            } else {
                piece = extra_of(event, key);
                if (piece == NULL) {
                    Py_DECREF(key);
                    goto fail;
                }
                if (piece == Py_None) Py_CLEAR(piece);
            }
            Py_XDECREF(key);
        } else if (type == (PyTypeObject *)payloads_type) {
            piece = payload_piece(value, (PyTypeObject *)raw_type, memo);
            if (piece == NULL && PyErr_Occurred()) goto fail;
        }
        if (piece == NULL) { /* left to the Python path */
            PyObject *at = PyLong_FromSsize_t(i);
            if (at == NULL || PyList_Append(left, at) < 0) {
                Py_XDECREF(at);
                goto fail;
            }
            Py_DECREF(at);
            piece = Py_NewRef(Py_None);
        }
        PyList_SET_ITEM(pieces, i, piece);
    }
    Py_DECREF(seq);
    Py_XDECREF(history);
    Py_XDECREF(fields);
    return Py_BuildValue("(NN)", pieces, left);
fail:
    Py_DECREF(seq);
    Py_XDECREF(pieces);
    Py_XDECREF(left);
    Py_XDECREF(history);
    Py_XDECREF(fields);
    return NULL;
}

static PyObject *attribute_raws(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *cells, *attributes_type, *fields_of;
    if (!PyArg_ParseTuple(args, "OOO", &cells, &attributes_type, &fields_of)) return NULL;
    PyObject *seq = PySequence_Fast(cells, "cells must be a sequence");
    if (seq == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    PyObject *raws = PyList_New(n), *history = NULL, *fields = NULL, *out = NULL;
    Py_buffer *views = PyMem_Calloc(n ? (size_t)n : 1, sizeof(Py_buffer));
    Py_ssize_t got = 0, total = 2 + (n ? n - 1 : 0);
    if (raws == NULL || views == NULL) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *cell = items[i];
        if (Py_TYPE(cell) != (PyTypeObject *)attributes_type) goto declined;
        PyObject *event = cell_event(cell, fields_of, &history, &fields);
        if (event == NULL) {
            if (PyErr_Occurred()) goto done;
            goto declined;
        }
        PyObject *key = PyObject_GetAttr(cell, KEY);
        if (key == NULL) goto done;
        int failed;
        PyObject *raw = field_of(event, key, &failed);
        Py_DECREF(key);
        if (failed) goto done;
        if (raw == NULL) raw = Py_NewRef(EMPTY_OBJECT);
        PyList_SET_ITEM(raws, i, raw);
        if (PyObject_GetBuffer(raw, &views[i], PyBUF_SIMPLE) < 0) {
            PyErr_Clear();
            goto declined;
        }
        got = i + 1;
        total += views[i].len;
    }
    out = PyBytes_FromStringAndSize(NULL, total);
    if (out == NULL) goto done;
    char *o = PyBytes_AS_STRING(out);
    Py_ssize_t w = 0;
    o[w++] = '[';
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i) o[w++] = ',';
        memcpy(o + w, views[i].buf, (size_t)views[i].len), w += views[i].len;
    }
    o[w++] = ']';
    goto done;
declined:
    out = Py_NewRef(Py_None);
done:
    for (Py_ssize_t i = 0; i < got; i++) PyBuffer_Release(&views[i]);
    PyMem_Free(views);
    Py_DECREF(seq);
    Py_XDECREF(raws);
    Py_XDECREF(history);
    Py_XDECREF(fields);
    return out;
}

/* The (validity, offsets, data) buffers of an Arrow string array of `n` values, `texts[i]` and
 * `sizes[i]` the UTF-8 of value i (NULL for a null); `nulls` of them null, `total` bytes in all.
 * A new reference, NULL on an error. */
static PyObject *arrow_buffers(Py_ssize_t n, Py_ssize_t nulls, Py_ssize_t total,
                               const char **texts, const Py_ssize_t *sizes) {
    PyObject *validity = NULL, *out = NULL;
    PyObject *offsets = PyBytes_FromStringAndSize(NULL, (n + 1) * (Py_ssize_t)sizeof(int32_t));
    PyObject *data = PyBytes_FromStringAndSize(NULL, total);
    if (offsets == NULL || data == NULL) goto done;
    if (nulls) {
        validity = PyBytes_FromStringAndSize(NULL, (n + 7) / 8);
        if (validity == NULL) goto done;
        memset(PyBytes_AS_STRING(validity), 0, (size_t)((n + 7) / 8));
    }
    int32_t *at = (int32_t *)PyBytes_AS_STRING(offsets);
    unsigned char *bits = validity ? (unsigned char *)PyBytes_AS_STRING(validity) : NULL;
    char *o = PyBytes_AS_STRING(data);
    Py_ssize_t w = 0;
    at[0] = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (texts[i] != NULL) {
            memcpy(o + w, texts[i], (size_t)sizes[i]), w += sizes[i];
            if (bits) bits[i >> 3] |= (unsigned char)(1u << (i & 7));
        }
        at[i + 1] = (int32_t)w;
    }
    out = Py_BuildValue("(OOO)", validity ? validity : Py_None, offsets, data);
done:
    Py_XDECREF(validity);
    Py_XDECREF(offsets);
    Py_XDECREF(data);
    return out;
}

/* Room for the text pointers and sizes of `n` values; 0 (MemoryError set) on a failure. */
static int text_room(Py_ssize_t n, const char ***texts, Py_ssize_t **sizes) {
    *texts = PyMem_Calloc(n ? (size_t)n : 1, sizeof(char *));
    *sizes = PyMem_Calloc(n ? (size_t)n : 1, sizeof(Py_ssize_t));
    if (*texts == NULL || *sizes == NULL) {
        PyMem_Free((void *)*texts);
        PyMem_Free(*sizes);
        PyErr_NoMemory();
        return 0;
    }
    return 1;
}

static PyObject *string_buffers(PyObject *self, PyObject *arg) {
    (void)self;
    PyObject *seq = PySequence_Fast(arg, "pieces must be a sequence");
    if (seq == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq), nulls = 0, total = 0, got = 0;
    PyObject **items = PySequence_Fast_ITEMS(seq);
    PyObject *out = NULL;
    const char **texts = NULL;
    Py_ssize_t *sizes = NULL;
    Py_buffer *views = PyMem_Calloc(n ? (size_t)n : 1, sizeof(Py_buffer));
    if (views == NULL || !text_room(n, &texts, &sizes)) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (items[i] == Py_None) {
            nulls++;
            continue;
        }
        if (PyObject_GetBuffer(items[i], &views[i], PyBUF_SIMPLE) < 0) goto done;
        got = i + 1;
        texts[i] = views[i].buf, sizes[i] = views[i].len;
        total += views[i].len;
    }
    if (total >= ((Py_ssize_t)1 << 31)) {
        PyErr_SetString(PyExc_OverflowError, "more text than one array's 32-bit offsets address");
        goto done;
    }
    out = arrow_buffers(n, nulls, total, texts, sizes);
done:
    for (Py_ssize_t i = 0; i < got; i++)
        if (items[i] != Py_None) PyBuffer_Release(&views[i]);
    PyMem_Free(views);
    PyMem_Free((void *)texts);
    PyMem_Free(sizes);
    Py_DECREF(seq);
    return out;
}

static PyObject *text_buffers(PyObject *self, PyObject *arg) {
    (void)self;
    PyObject *seq = PySequence_Fast(arg, "values must be a sequence");
    if (seq == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq), nulls = 0, total = 0;
    PyObject **items = PySequence_Fast_ITEMS(seq);
    PyObject *out = NULL;
    const char **texts = NULL;
    Py_ssize_t *sizes = NULL;
    if (!text_room(n, &texts, &sizes)) goto done;
    /* The types and the sizes (a str's UTF-8 is made once, and kept by the str). */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *value = items[i];
        if (value == Py_None) {
            nulls++;
            continue;
        }
        if (!PyUnicode_CheckExact(value)
            || (texts[i] = PyUnicode_AsUTF8AndSize(value, &sizes[i])) == NULL) {
            PyErr_Clear();
            out = Py_NewRef(Py_None); /* another type (or no UTF-8): pyarrow converts it */
            goto done;
        }
        total += sizes[i];
    }
    out = total >= ((Py_ssize_t)1 << 31) ? Py_NewRef(Py_None)
                                          : arrow_buffers(n, nulls, total, texts, sizes);
done:
    PyMem_Free((void *)texts);
    PyMem_Free(sizes);
    Py_DECREF(seq);
    return out;
}

static PyMethodDef methods[] = {
    {"text_buffers", text_buffers, METH_O,
     "The validity, offsets and data buffers of an Arrow string array of str and None, or None."},
    {"lazy_pieces", lazy_pieces, METH_VARARGS,
     "The pieces of raw JSON events' attributes and extra cells, and the cells left over."},
    {"attribute_raws", attribute_raws, METH_VARARGS,
     "The raw attributes of raw JSON events' cells as one JSON array, or None."},
    {"string_buffers", string_buffers, METH_O,
     "The validity, offsets and data buffers of an Arrow string array of UTF-8 pieces."},
    {"extra_piece", extra_piece, METH_VARARGS,
     "The JSON text of an event's other fields, or None (see the module's source)."},
    {"plain_payloads", plain_payloads, METH_O,
     "The JSON text of a cell of json/plain payloads, or None (see the module's source)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_jsoncells", "The dataset's JSON text of payload and extra cells, in C.",
    -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__jsoncells(void) {
    init_b64();
    EMPTY_OBJECT = PyBytes_FromStringAndSize("{}", 2);
    HISTORY = PyUnicode_InternFromString("_history");
    INDEX = PyUnicode_InternFromString("_index");
    KEY = PyUnicode_InternFromString("_key");
    CODEC = PyUnicode_InternFromString("_codec");
    RAW = PyUnicode_InternFromString("_raw");
    if (!EMPTY_OBJECT || !HISTORY || !INDEX || !KEY || !CODEC || !RAW) return NULL;
    return PyModule_Create(&module);
}
