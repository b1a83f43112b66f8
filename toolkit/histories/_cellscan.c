/*
 * Payload cells measured in C, many at a time, and the common ends of two buffers.
 *
 * The compiled twin of two pure paths that stay the reference (setup.py marks this optional;
 * without a C compiler the package does the same in Python, and tests/test_cellscan.py holds both
 * to the same results):
 *
 * payload_spans(cells[, groups]) -> (spans, encodings[, shares])
 *   cells: a list of buffers (a payload cell's raw proto-JSON) or anything else (skipped).
 *   For each cell of the shape nearly every cell has, one or two payloads whose metadata is only
 *   an encoding, `{"payloads":[{"metadata":{"encoding":"<base64>"},"data":"<base64>"}, ...]}`,
 *   the data optional, with JSON whitespace anywhere between tokens: spans, int64 [8][n], per
 *   payload (first, second) the number of its encoding in `encodings` (-1: no such payload),
 *   its data string's start, its end before any "=" padding, and its end (all -1 without data).
 *   A cell of another shape (or not a buffer) has -1 as its first encoding, None -2.
 *   encodings: the distinct encodings' base64 texts (bytes), in the order first met.
 *   payload_spans(cells, groups, True) reads each cell's raw text as payload_cells._cell_raw
 *   finds it (the lazy cells of an events frame, no list of their raws made first).
 *   groups (int64, one per cell): the run whose model input a cell is (-1: none), each run's
 *   inputs in order; shares, int64 [3][groups]: each run's resent() over its inputs' one
 *   json/plain text, found while each input is scanned (its bytes read from memory once), and
 *   how many inputs were read, -1 where the pure path is to read them (see Shares).
 *
 * common_prefix(a, b) -> int, common_suffix(a, b) -> int
 *   The length of the common beginning (end) of two buffers.
 *
 * resent(texts, b64) -> (resent, total) | None
 *   budget._resent of consecutive model inputs (all base64 text, or all plain bytes): the bytes
 *   each input shares with the one before it (common beginning, common end stepping over
 *   numbers), and all inputs' bytes; None where a base64 text is not plain base64.
 *
 * element_spans(buf, at, count) -> (spans, at, done)
 *   The spans of the next `count` elements of the (valid) JSON array read at `at`: what splitting
 *   a whole history's events costs, for the first few of them only (with AVX2 and carry-less
 *   multiplication, objects and arrays read 64 bytes a step, strings 32).
 *
 * span_marks(buf, marks, spans) -> list[int]
 *   Per mark (a tuple of at most 8 non-empty bytes): the number of the first of `spans` (a
 *   list of ints, start and end pairs in buf) whose bytes spell it, -1 where none does: the
 *   ledger's workflow tasks searched in place, none sliced off or joined. With AVX2, 32 places
 *   at a time for all the marks, each mark's two rarest bytes compared, then memcmp.
 *
 * run_marks(cells, starts, ends, marks, kind, place) -> list[list[int] | None]
 *   span_marks of each run's workflow tasks, cells[starts[r]:ends[r]] (cells of type `kind`, of
 *   one `_history`, their events at 2 * `_index` in the spans list that place(history, top)
 *   gives with its document), all of a ledger's runs in one call; None for a run not of that
 *   kind (the caller reads it otherwise).
 *
 * last_spans(buf, end, count) -> (spans, done)
 *   The same for the last `count` elements, read backwards from the array's closing "]".
 *
 * key_value(buf, key) -> bytes | None
 *   The raw JSON of the value of a JSON object's top-level `key` (the other values stepped over
 *   as element_spans steps over elements), b"" where it has none; None where a typed decode is to
 *   read it (no object, an escaped key, a key twice): an event's userMetadata, for its summary.
 *
 * summary_data(buf) -> bytes | None
 *   The base64-decoded data of an event's activity summary where its userMetadata is of the
 *   usual shape, {"summary": {"metadata": {"encoding": "<json/plain>"}, "data": "<base64>"}}
 *   (and "details"); None for any other (the typed decoders read it).
 *
 * plain_payloads(raws) -> list[tuple[list[bytes | None], int] | None]
 *   Per item of the list `raws` (a payload cell's raw Payloads JSON, or anything else): where it
 *   is {"payloads": [...]} of json/plain payloads with data of base64 digits alone and
 *   binary/null ones without data, each payload's metadata its encoding alone (JSON whitespace
 *   between the tokens; nothing before the "{"), a list of each payload's decoded data (None
 *   for binary/null) and the decoded bytes' total; None for anything else (not a buffer,
 *   another shape, an escape or other text in a data), which the typed decoders read. The
 *   model calls' inputs and results of a ledger, all in one call.
 *
 * b64_decode(text) -> bytes | None  (32 digits at a time with AVX2 where the CPU has it;
 *   TOOLKIT_NO_AVX2=1 in the environment keeps the scalar loop)
 *   The bytes of base64 text made of whole quanta of base64 digits, "=" padding at its end only;
 *   None for any other text (binascii.a2b_base64, which skips other characters, decodes it).
 */

#define PY_SSIZE_T_CLEAN
#define _GNU_SOURCE /* memrchr */
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int is_ws(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static int is_b64(unsigned char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
           c == '/';
}

/* Skips whitespace, then expects `token`; returns the position after it or -1. */
static Py_ssize_t expect(const unsigned char *s, Py_ssize_t n, Py_ssize_t at, const char *token,
                         int skip) {
    if (skip)
        while (at < n && is_ws(s[at])) at++;
    Py_ssize_t size = (Py_ssize_t)strlen(token);
    if (at + size > n || memcmp(s + at, token, (size_t)size) != 0) return -1;
    return at + size;
}

/* One payload from `at`: `{"metadata":{"encoding":"..."}` with `,"data":"..."` or not, then
 * `}`. Fills out[0..4]: encoding start and end, data start, padded end, end (-1 without data).
 * Returns the position after it, or -1 for another shape. */
static Py_ssize_t one_payload(const unsigned char *s, Py_ssize_t n, Py_ssize_t at,
                              Py_ssize_t out[5]) {
    static const char *before[] = {"{", "\"metadata\"", ":", "{", "\"encoding\"", ":", "\""};
    for (size_t i = 0; i < sizeof(before) / sizeof(*before); i++) {
        at = expect(s, n, at, before[i], 1);
        if (at < 0) return -1;
    }
    out[0] = at;
    while (at < n && is_b64(s[at])) at++;
    for (int pad = 0; pad < 2 && at < n && s[at] == '='; pad++) at++;
    out[1] = at;
    at = expect(s, n, at, "\"", 0);  /* the encoding's closing quote follows it */
    if (at < 0 || (at = expect(s, n, at, "}", 1)) < 0) return -1;
    out[2] = out[3] = out[4] = -1;
    Py_ssize_t data = expect(s, n, at, ",", 1);
    if (data >= 0) {
        if ((data = expect(s, n, data, "\"data\"", 1)) < 0) return -1;
        if ((data = expect(s, n, data, ":", 1)) < 0) return -1;
        if ((data = expect(s, n, data, "\"", 1)) < 0) return -1;
        const unsigned char *quote = memchr(s + data, '"', (size_t)(n - data));
        if (quote == NULL) return -1;
        Py_ssize_t end = quote - s, padded = end;
        while (padded > data && s[padded - 1] == '=') padded--;
        out[2] = data, out[3] = padded, out[4] = end;
        at = end + 1;
    }
    return expect(s, n, at, "}", 1);
}

/* The payloads of one cell (one or two): fills out[0..9] (five per payload, -1 for a second
 * that is not there). Returns 0 for another shape. */
static int one_cell(const unsigned char *s, Py_ssize_t n, Py_ssize_t out[10]) {
    Py_ssize_t at = expect(s, n, 0, "{", 0);  /* nothing before the opening brace */
    if (at < 0 || (at = expect(s, n, at, "\"payloads\"", 1)) < 0) return 0;
    if ((at = expect(s, n, at, ":", 1)) < 0 || (at = expect(s, n, at, "[", 1)) < 0) return 0;
    for (int k = 5; k < 10; k++) out[k] = -1;
    if ((at = one_payload(s, n, at, out)) < 0) return 0;
    Py_ssize_t more = expect(s, n, at, ",", 1);
    if (more >= 0 && (at = one_payload(s, n, more, out + 5)) < 0) return 0;
    if ((at = expect(s, n, at, "]", 1)) < 0 || (at = expect(s, n, at, "}", 1)) < 0) return 0;
    while (at < n && is_ws(s[at])) at++;
    return at == n;
}

/* The number of the encoding `text` in `names`, appended if new; -1 on a failure. */
static Py_ssize_t encoding_number(PyObject *names, const char *text, Py_ssize_t size) {
    Py_ssize_t count = PyList_GET_SIZE(names);
    for (Py_ssize_t k = 0; k < count; k++) {  /* a handful: json/plain, binary/null, ... */
        PyObject *name = PyList_GET_ITEM(names, k);
        if (PyBytes_GET_SIZE(name) == size && memcmp(PyBytes_AS_STRING(name), text, size) == 0)
            return k;
    }
    PyObject *name = PyBytes_FromStringAndSize(text, size);
    if (name == NULL || PyList_Append(names, name) < 0) {
        Py_XDECREF(name);
        return -1;
    }
    Py_DECREF(name);
    return count;
}

/* base64 digits' values; 64 for "=", 255 for anything else. */
static unsigned char B64[256];

/* The same values already shifted to their place in a 24-bit group, one table per position
 * of the digit in its quantum; BAD (bit 31) for anything that is not a digit ("=" included). */
static uint32_t B64_AT[4][256];
#define BAD 0x80000000u

static void b64_table(void) {
    const char *digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    memset(B64, 255, sizeof(B64));
    for (int j = 0; j < 4; j++)
        for (int c = 0; c < 256; c++) B64_AT[j][c] = BAD;
    for (int k = 0; k < 64; k++) {
        unsigned char c = (unsigned char)digits[k];
        B64[c] = (unsigned char)k;
        for (int j = 0; j < 4; j++) B64_AT[j][c] = (uint32_t)k << (18 - 6 * j);
    }
    B64['='] = 64;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_AVX2_PATH 1
static int use_avx2 = 0; /* set at import where the CPU has AVX2 */

/* Whole blocks of 32 base64 digits decoded 24 bytes at a time with AVX2 (the digits validated
 * and translated by nibble lookups, then packed by multiply-adds and shuffles); stops at the
 * first block holding anything but the 64 digits, and leaves at least 12 digits after the last
 * block (each store writes 32 bytes). Returns the digits decoded; the scalar loop goes on. */
__attribute__((target("avx2"))) static Py_ssize_t b64_blocks_avx2(const unsigned char *s,
                                                                  Py_ssize_t full,
                                                                  unsigned char *out) {
    const __m256i lut_lo = _mm256_setr_epi8(
        0x15, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x13, 0x1A, 0x1B, 0x1B, 0x1B,
        0x1A, 0x15, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x13, 0x1A, 0x1B, 0x1B,
        0x1B, 0x1A);
    const __m256i lut_hi = _mm256_setr_epi8(
        0x10, 0x10, 0x01, 0x02, 0x04, 0x08, 0x04, 0x08, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10,
        0x10, 0x10, 0x10, 0x01, 0x02, 0x04, 0x08, 0x04, 0x08, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10,
        0x10, 0x10);
    const __m256i lut_roll = _mm256_setr_epi8(0, 16, 19, 4, -65, -65, -71, -71, 0, 0, 0, 0, 0, 0,
                                              0, 0, 0, 16, 19, 4, -65, -65, -71, -71, 0, 0, 0, 0,
                                              0, 0, 0, 0);
    const __m256i mask_2f = _mm256_set1_epi8(0x2f);
    const __m256i pack_pairs = _mm256_set1_epi32(0x01400140);
    const __m256i pack_quads = _mm256_set1_epi32(0x00011000);
    const __m256i order = _mm256_setr_epi8(2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1,
                                           2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1);
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 7, 7);
    Py_ssize_t at = 0;
    for (; at + 32 + 12 <= full; at += 32, out += 24) {
        __m256i text = _mm256_loadu_si256((const __m256i *)(s + at));
        __m256i hi_nibbles = _mm256_and_si256(_mm256_srli_epi32(text, 4), mask_2f);
        __m256i lo_nibbles = _mm256_and_si256(text, mask_2f);
        __m256i lo = _mm256_shuffle_epi8(lut_lo, lo_nibbles);
        __m256i hi = _mm256_shuffle_epi8(lut_hi, hi_nibbles);
        if (!_mm256_testz_si256(lo, hi)) break; /* not a digit: the scalar loop says so */
        __m256i slash = _mm256_cmpeq_epi8(text, mask_2f);
        __m256i roll = _mm256_shuffle_epi8(lut_roll, _mm256_add_epi8(slash, hi_nibbles));
        __m256i values = _mm256_add_epi8(text, roll);
        __m256i pairs = _mm256_maddubs_epi16(values, pack_pairs);
        __m256i quads = _mm256_madd_epi16(pairs, pack_quads);
        __m256i bytes = _mm256_shuffle_epi8(quads, order);
        _mm256_storeu_si256((__m256i *)out, _mm256_permutevar8x32_epi32(bytes, lanes));
    }
    return at;
}
#endif

/* Decodes base64 `s` (n bytes, a multiple of 4, digits with "=" padding at its end only) into
 * `out` (room for n / 4 * 3 bytes); the decoded length, or -1 for any other text. */
static Py_ssize_t b64_into(const unsigned char *s, Py_ssize_t n, unsigned char *out) {
    if (n % 4 != 0) return -1;
    Py_ssize_t pad = 0;
    if (n && s[n - 1] == '=') pad = (n >= 2 && s[n - 2] == '=') ? 2 : 1;
    Py_ssize_t full = pad ? n - 4 : n;
    unsigned char *o = out;
    Py_ssize_t start = 0;
#ifdef HAVE_AVX2_PATH
    if (use_avx2 && full >= 64) {
        start = b64_blocks_avx2(s, full, out);
        o += start / 4 * 3;
    }
#endif
    for (Py_ssize_t i = start; i < full; i += 4, o += 3) {
        uint32_t v = B64_AT[0][s[i]] | B64_AT[1][s[i + 1]] | B64_AT[2][s[i + 2]]
                     | B64_AT[3][s[i + 3]];
        if (v & BAD) return -1;  /* not a digit (or "=" before the last quantum) */
        o[0] = (unsigned char)(v >> 16), o[1] = (unsigned char)(v >> 8), o[2] = (unsigned char)v;
    }
    if (pad) {
        unsigned a = B64[s[n - 4]], b = B64[s[n - 3]], c = pad == 1 ? B64[s[n - 2]] : 0;
        if ((a | b | c) & 0xC0) return -1;
        unsigned v = a << 18 | b << 12 | c << 6;
        o[0] = (unsigned char)(v >> 16);
        if (pad == 1) o[1] = (unsigned char)(v >> 8);
    }
    return n / 4 * 3 - pad;
}

static PyObject *b64_decode(PyObject *self, PyObject *args) {
    Py_buffer text;
    if (!PyArg_ParseTuple(args, "y*", &text)) return NULL;
    PyObject *out = PyBytes_FromStringAndSize(NULL, text.len / 4 * 3);
    if (out == NULL) {
        PyBuffer_Release(&text);
        return NULL;
    }
    Py_ssize_t size = b64_into(text.buf, text.len, (unsigned char *)PyBytes_AS_STRING(out));
    PyBuffer_Release(&text);
    if (size < 0) {
        Py_DECREF(out);
        Py_RETURN_NONE;
    }
    if (_PyBytes_Resize(&out, size) < 0) return NULL;
    return out;
}

static Py_ssize_t suffix_of(const unsigned char *x, Py_ssize_t nx, const unsigned char *y,
                            Py_ssize_t ny) {
    Py_ssize_t n = nx < ny ? nx : ny, same = 0;
    x += nx - n, y += ny - n;
    while (same + 256 <= n && memcmp(x + n - same - 256, y + n - same - 256, 256) == 0)
        same += 256;
    while (same + 8 <= n && memcmp(x + n - same - 8, y + n - same - 8, 8) == 0) same += 8;
    while (same < n && x[n - same - 1] == y[n - same - 1]) same++;
    return same;
}

static Py_ssize_t prefix_of(const unsigned char *x, Py_ssize_t nx, const unsigned char *y,
                            Py_ssize_t ny) {
    Py_ssize_t n = nx < ny ? nx : ny, same = 0;
    /* Whole blocks by the library's memcmp (vectorised), then the differing block by words. */
    while (same + 256 <= n && memcmp(x + same, y + same, 256) == 0) same += 256;
    while (same + 8 <= n && memcmp(x + same, y + same, 8) == 0) same += 8;
    while (same < n && x[same] == y[same]) same++;
    return same;
}

static PyObject *common_end(PyObject *args, int suffix) {
    Py_buffer a, b;
    if (!PyArg_ParseTuple(args, "y*y*", &a, &b)) return NULL;
    Py_ssize_t same = (suffix ? suffix_of : prefix_of)(a.buf, a.len, b.buf, b.len);
    PyBuffer_Release(&a);
    PyBuffer_Release(&b);
    return PyLong_FromSsize_t(same);
}

static int is_number_byte(unsigned char c) { return (c >= '0' && c <= '9') || c == '.'; }

/* budget._common_end: the common end of two texts, stepping over differing numbers at most
 * `rounds` times. */
static Py_ssize_t common_end_of(const unsigned char *a, Py_ssize_t na, const unsigned char *b,
                                Py_ssize_t nb, int rounds) {
    Py_ssize_t total = 0;
    for (int r = 0; r < rounds; r++) {
        Py_ssize_t same = suffix_of(a, na, b, nb);
        total += same, na -= same, nb -= same;
        Py_ssize_t i = na, j = nb;
        while (i && is_number_byte(a[i - 1])) i--;
        while (j && is_number_byte(b[j - 1])) j--;
        if (i == na || j == nb) break;  /* what differs is not a number: the new content */
        na = i, nb = j;
    }
    return total;
}

/* budget._resent fed one text at a time: what each text shares with the one before it. The
 * decoded tails live in three buffers grown as texts come (the previous tail is kept: the next
 * comparison's "before" is usually a slice of it, the conversation only growing). */
typedef struct {
    const unsigned char *prev; /* the previous text (NULL before the first) */
    Py_ssize_t prev_len;
    unsigned char *tail, *before, *kept;
    Py_ssize_t room, kept_head, kept_len;
    long long shared, total;
    Py_ssize_t texts;
    int clean; /* 0 once a base64 text is not plain base64 (the pure path decodes it leniently) */
} Resent;

static void resent_init(Resent *r) {
    memset(r, 0, sizeof(*r));
    r->kept_head = -1;
    r->clean = 1;
}

static void resent_free(Resent *r) {
    PyMem_Free(r->tail);
    PyMem_Free(r->before);
    PyMem_Free(r->kept);
    resent_init(r);
}

/* Room for the decoding of `n` base64 characters in each buffer (the kept tail survives). */
static int resent_room(Resent *r, Py_ssize_t n) {
    Py_ssize_t need = n / 4 * 3 + 3;
    if (need <= r->room) return 0;
    unsigned char **buffers[3] = {&r->tail, &r->before, &r->kept};
    for (int k = 0; k < 3; k++) {
        unsigned char *grown = PyMem_Realloc(*buffers[k], need);
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        *buffers[k] = grown;
    }
    r->room = need;
    return 0;
}

/* Adds the next text (base64 or plain): -1 on a memory error. The text must stay alive until
 * the next one is added. */
static int resent_add(Resent *r, const unsigned char *text, Py_ssize_t n, int b64) {
    if (!r->clean) return 0;
    r->texts++;
    if (b64) {
        Py_ssize_t end = n;
        while (end && text[end - 1] == '=') end--;
        r->total += end * 3 / 4;
    } else {
        r->total += n;
    }
    Py_ssize_t reusable_head = r->kept_head;
    r->kept_head = -1;
    const unsigned char *prev = r->prev;
    Py_ssize_t m = r->prev_len;
    r->prev = text, r->prev_len = n;
    if (prev == NULL) return 0;
    Py_ssize_t head = prefix_of(prev, m, text, n);
    if (!b64) {
        r->shared += head + common_end_of(text + head, n - head, prev + head, m - head, 8);
        return 0;
    }
    if (head > n - 4) head = n - 4;
    if (head > m - 4) head = m - 4;
    head = head - head % 4; /* C's % of a negative head is <= 0 as Python's max(..., 0) */
    if (head < 0) head = 0;
    if (resent_room(r, n > m ? n : m) < 0) return -1;
    Py_ssize_t tail_len = b64_into(text + head, n - head, r->tail);
    if (tail_len < 0) {
        r->clean = 0;
        return 0;
    }
    const unsigned char *old;
    Py_ssize_t old_len;
    if (reusable_head >= 0 && reusable_head <= head) {
        Py_ssize_t skip = (head - reusable_head) / 4 * 3;
        old = r->kept + skip, old_len = r->kept_len - skip;
    } else {
        old_len = b64_into(prev + head, m - head, r->before);
        if (old_len < 0) {
            r->clean = 0;
            return 0;
        }
        old = r->before;
    }
    r->shared += head * 3 / 4 + common_end_of(r->tail, tail_len, old, old_len, 8);
    /* this tail is the next comparison's "before": keep it (swap the buffers) */
    unsigned char *swap = r->kept;
    r->kept = r->tail, r->tail = swap;
    r->kept_head = head, r->kept_len = tail_len;
    return 0;
}

/* budget._resent over texts of one kind (all base64, or all plain): (resent, total), or None
 * where a base64 text is not plain base64 (the pure path decodes it leniently). */
static PyObject *resent(PyObject *self, PyObject *args) {
    PyObject *texts;
    int b64;
    if (!PyArg_ParseTuple(args, "O!p", &PyList_Type, &texts, &b64)) return NULL;
    Py_ssize_t count = PyList_GET_SIZE(texts);
    Py_buffer *views = PyMem_Calloc(count ? count : 1, sizeof(Py_buffer));
    if (views == NULL) return PyErr_NoMemory();
    Py_ssize_t got = 0;
    for (; got < count; got++)
        if (PyObject_GetBuffer(PyList_GET_ITEM(texts, got), &views[got], PyBUF_SIMPLE) < 0) break;
    PyObject *result = NULL;
    Resent r;
    resent_init(&r);
    if (got == count) {
        Py_ssize_t k = 0;
        for (; k < count && r.clean; k++)
            if (resent_add(&r, views[k].buf, views[k].len, b64) < 0) break;
        if (k == count || !r.clean)
            result = r.clean ? Py_BuildValue("(LL)", r.shared, r.total) : Py_NewRef(Py_None);
    }
    resent_free(&r);
    for (Py_ssize_t k = 0; k < got; k++) PyBuffer_Release(&views[k]);
    PyMem_Free(views);
    return result;
}

static Py_ssize_t string_end_scalar(const unsigned char *s, Py_ssize_t n, Py_ssize_t at);

#ifdef HAVE_AVX2_PATH
/* string_end, 32 bytes at a time: the first quote or backslash of each block, a backslash and
 * the byte it escapes stepped over (a history's keys and short values end in their first block,
 * with no call into memchr, which costs more than such a string; its base64 goes 32 bytes a
 * step). The last bytes (fewer than 32) are left to the scalar loop. */
__attribute__((target("avx2"))) static Py_ssize_t string_end_avx2(const unsigned char *s,
                                                                 Py_ssize_t n, Py_ssize_t at) {
    const __m256i quote = _mm256_set1_epi8('"'), backslash = _mm256_set1_epi8('\\');
    while (at + 32 <= n) {
        __m256i text = _mm256_loadu_si256((const __m256i *)(s + at));
        uint32_t hit = (uint32_t)_mm256_movemask_epi8(
            _mm256_or_si256(_mm256_cmpeq_epi8(text, quote), _mm256_cmpeq_epi8(text, backslash)));
        if (hit == 0) {
            at += 32;
            continue;
        }
        at += __builtin_ctz(hit);
        if (s[at] == '"') return at;
        at += 2; /* the backslash and the byte it escapes */
    }
    return string_end_scalar(s, n, at);
}
#endif

/* The closing quote of the JSON string whose text starts at `at` (`at` not inside an escape). */
static Py_ssize_t string_end(const unsigned char *s, Py_ssize_t n, Py_ssize_t at) {
#ifdef HAVE_AVX2_PATH
    if (use_avx2) return string_end_avx2(s, n, at);
#endif
    return string_end_scalar(s, n, at);
}

/* string_end without AVX2: memchr to each quote, then the backslashes before it (an odd number
 * escapes it). */
static Py_ssize_t string_end_scalar(const unsigned char *s, Py_ssize_t n, Py_ssize_t at) {
    while (at < n) {
        const unsigned char *quote = memchr(s + at, '"', (size_t)(n - at));
        if (quote == NULL) return n;
        Py_ssize_t q = quote - s, k = q;
        while (k > at && s[k - 1] == '\\') k--;
        if ((q - k) % 2 == 0) return q;
        at = q + 1;
    }
    return n;
}

/* The bytes value_end stops at inside an object or array: quotes, braces and brackets (1);
 * every other byte there (indentation, colons, commas, numbers) is stepped over by one test. */
static unsigned char NESTED_STOP[256];

static void nested_stop_table(void) {
    NESTED_STOP['"'] = NESTED_STOP['{'] = NESTED_STOP['}'] = NESTED_STOP['['] =
        NESTED_STOP[']'] = 1;
}

/* The end of the object or array whose inside is read from `at` at nesting `depth` (> 0): only
 * its strings, objects and arrays change anything there. */
static Py_ssize_t nested_end(const unsigned char *s, Py_ssize_t n, Py_ssize_t at,
                             Py_ssize_t depth) {
    for (; at < n; at++) {
        while (at < n && !NESTED_STOP[s[at]]) at++;
        if (at >= n) break;
        unsigned char c = s[at];
        if (c == '"') {
            at = string_end(s, n, at + 1);
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (--depth == 0) {  /* '}' or ']' */
            return at + 1;
        }
    }
    return n;
}

#ifdef HAVE_AVX2_PATH
static int use_clmul = 0; /* set at import where the CPU has AVX2 and carry-less multiplication */

/* The bits of a 64-byte block equal to `c`. */
__attribute__((target("avx2"), always_inline)) static inline uint64_t block_eq(__m256i low,
                                                                              __m256i high,
                                                                              char c) {
    const __m256i wanted = _mm256_set1_epi8(c);
    uint32_t lo = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(low, wanted));
    uint32_t hi = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(high, wanted));
    return (uint64_t)lo | (uint64_t)hi << 32;
}

/* nested_end 64 bytes a step (the way simdjson finds structure): each block's quotes that no
 * odd run of backslashes escapes, which bytes are inside a string (the quotes' prefix XOR, by a
 * carry-less multiplication), and its braces and brackets outside strings; a block whose closes
 * cannot bring the depth to 0 is passed whole, the others looked at bracket by bracket. The last
 * bytes (fewer than 64) are left to nested_end. */
__attribute__((target("avx2,pclmul"))) static Py_ssize_t nested_end_blocks(
    const unsigned char *s, Py_ssize_t n, Py_ssize_t at, Py_ssize_t depth) {
    const uint64_t even = 0x5555555555555555ULL, odd = ~even;
    uint64_t ends_odd_backslash = 0, in_string = 0; /* carried from the block before */
    for (; at + 64 <= n; at += 64) {
        __m256i low = _mm256_loadu_si256((const __m256i *)(s + at));
        __m256i high = _mm256_loadu_si256((const __m256i *)(s + at + 32));
        uint64_t backslash = block_eq(low, high, '\\');
        uint64_t quote = block_eq(low, high, '"');
        /* The bytes an odd run of backslashes escapes (a run may go on from the block before). */
        uint64_t starts = backslash & ~(backslash << 1);
        uint64_t even_start_mask = even ^ ends_odd_backslash;
        uint64_t even_starts = starts & even_start_mask, odd_starts = starts & ~even_start_mask;
        uint64_t even_carries = backslash + even_starts, odd_carries;
        int ends_odd = __builtin_add_overflow(backslash, odd_starts, &odd_carries);
        odd_carries |= ends_odd_backslash;
        ends_odd_backslash = ends_odd ? 1 : 0;
        uint64_t escaped = ((even_carries & ~backslash) & odd) | ((odd_carries & ~backslash) & even);
        quote &= ~escaped;
        /* Inside a string: from an opening quote up to its closing one (the prefix XOR). */
        uint64_t inside = (uint64_t)_mm_cvtsi128_si64(_mm_clmulepi64_si128(
            _mm_set_epi64x(0, (long long)quote), _mm_set1_epi8((char)0xFF), 0));
        inside ^= in_string;
        in_string = (uint64_t)((int64_t)inside >> 63);
        uint64_t opens = (block_eq(low, high, '{') | block_eq(low, high, '[')) & ~inside;
        uint64_t closes = (block_eq(low, high, '}') | block_eq(low, high, ']')) & ~inside;
        if ((Py_ssize_t)__builtin_popcountll(closes) < depth) {  /* it cannot close here */
            depth += __builtin_popcountll(opens) - __builtin_popcountll(closes);
            continue;
        }
        for (uint64_t marks = opens | closes; marks; marks &= marks - 1) {
            int bit = __builtin_ctzll(marks);
            if (opens >> bit & 1) {
                depth++;
            } else if (--depth == 0) {
                return at + bit + 1;
            }
        }
    }
    if (in_string) {  /* the tail starts inside a string: its end first (past an escaped byte) */
        at = string_end(s, n, at + (ends_odd_backslash ? 1 : 0)) + 1;
    }
    return nested_end(s, n, at, depth);
}
#endif

/* The end of the JSON value starting at `at` (a valid document's: it was decoded before). */
static Py_ssize_t value_end(const unsigned char *s, Py_ssize_t n, Py_ssize_t at) {
    if (at < n && (s[at] == '{' || s[at] == '[')) {
#ifdef HAVE_AVX2_PATH
        if (use_clmul) return nested_end_blocks(s, n, at + 1, 1);
#endif
        return nested_end(s, n, at + 1, 1);
    }
    if (at < n && s[at] == '"') return string_end(s, n, at + 1) + 1;
    for (; at < n; at++) {  /* a number or a literal: up to what ends it */
        unsigned char c = s[at];
        if (c == ',' || c == '}' || c == ']' || is_ws(c)) return at;
    }
    return n;
}

/* Room for `count` (start, end) pairs of int64, written through `out`. */
static PyObject *new_spans(Py_ssize_t count, int64_t **out) {
    if (count < 0) count = 0;
    PyObject *spans = PyByteArray_FromStringAndSize(NULL, count * 2 * (Py_ssize_t)sizeof(int64_t));
    if (spans != NULL) *out = (int64_t *)PyByteArray_AS_STRING(spans);
    return spans;
}

/* Cuts `spans` to the `found` (start, end) pairs written; -1 (and `spans` released) on a
 * failure. */
static int fit_spans(PyObject *spans, Py_ssize_t found) {
    if (PyByteArray_Resize(spans, found * 2 * (Py_ssize_t)sizeof(int64_t)) < 0) {
        Py_DECREF(spans);
        return -1;
    }
    return 0;
}

/* The arguments of element_spans and last_spans, (buffer, position, count), and the span array
 * for `count` elements; NULL (nothing held) on a failure. */
static PyObject *spans_call(PyObject *args, Py_buffer *view, Py_ssize_t *at, Py_ssize_t *count,
                            int64_t **out) {
    if (!PyArg_ParseTuple(args, "y*nn", view, at, count)) return NULL;
    PyObject *spans = new_spans(*count, out);
    if (spans == NULL) PyBuffer_Release(view);
    return spans;
}

/* element_spans(buf, at, count) -> (spans, at, done): the spans (int64 start, end pairs) of the
 * next `count` elements of the JSON array being read at `at` (just after its "[" or after an
 * element), where to go on, and whether the array ended. */
static PyObject *element_spans(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t at, count;
    int64_t *out;
    PyObject *spans = spans_call(args, &view, &at, &count, &out);
    if (spans == NULL) return NULL;
    const unsigned char *s = view.buf;
    Py_ssize_t n = view.len, found = 0;
    int done = 0;
    while (found < count) {
        while (at < n && (is_ws(s[at]) || s[at] == ',')) at++;
        if (at >= n || s[at] == ']') {
            done = 1;
            break;
        }
        Py_ssize_t end = value_end(s, n, at);
        out[2 * found] = at, out[2 * found + 1] = end;
        found++, at = end;
    }
    PyBuffer_Release(&view);
    if (fit_spans(spans, found) < 0) return NULL;
    return Py_BuildValue("(Nni)", spans, at, done);
}

/* The opening quote of the JSON string whose closing quote is at `q` (a quote is escaped where
 * an odd number of backslashes precedes it, read from either side). */
static Py_ssize_t string_start(const unsigned char *s, Py_ssize_t q) {
    Py_ssize_t at = q;
    while (at > 0) {
        const unsigned char *quote = memrchr(s, '"', (size_t)at);
        if (quote == NULL) return -1;
        at = quote - s;
        Py_ssize_t k = at;
        while (k > 0 && s[k - 1] == '\\') k--;
        if ((at - k) % 2 == 0) return at;
    }
    return -1;
}

/* last_spans(buf, end, count) -> (spans, done): the spans of the last `count` elements of the
 * (valid) JSON array whose closing "]" is at `end`, last first, and whether its "[" was met. */
static PyObject *last_spans(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t end, count;
    int64_t *out;
    PyObject *spans = spans_call(args, &view, &end, &count, &out);
    if (spans == NULL) return NULL;
    const unsigned char *s = view.buf;
    Py_ssize_t at = (end < view.len ? end : view.len) - 1, found = 0;
    int done = 0;
    while (found < count) {
        while (at >= 0 && (is_ws(s[at]) || s[at] == ',')) at--;
        if (at < 0 || s[at] == '[') {
            done = 1;
            break;
        }
        Py_ssize_t stop = at + 1, start = -1;
        if (s[at] == '"') {
            start = string_start(s, at);
        } else if (s[at] == '}' || s[at] == ']') {
            Py_ssize_t depth = 0;
            for (; at >= 0; at--) {
                unsigned char c = s[at];
                if (c == '"') {
                    at = string_start(s, at);
                    if (at < 0) break;
                } else if (c == '}' || c == ']') {
                    depth++;
                } else if ((c == '{' || c == '[') && --depth == 0) {
                    start = at;
                    break;
                }
            }
        } else {  /* a number or a literal */
            while (at > 0 && !is_ws(s[at - 1]) && s[at - 1] != ',' && s[at - 1] != '[') at--;
            start = at;
        }
        if (start < 0) {  /* not a valid array: the caller splits the whole document */
            done = 1;
            found = 0;
            break;
        }
        out[2 * found] = start, out[2 * found + 1] = stop;
        found++, at = start - 1;
    }
    PyBuffer_Release(&view);
    if (fit_spans(spans, found) < 0) return NULL;
    return Py_BuildValue("(Ni)", spans, done);
}

/* The most marks span_marks looks for at once. */
#define MAX_MARKS 8

/* The first place at or after `at` of each of the `k` marks still wanted (`left[j]` -1) in the
 * `n` bytes of `s`, written to `left` (-2: none): each place's first byte, then memcmp (the few
 * places the vector blocks leave; memmem's setup costs more than a short text). */
static void places_tail(const unsigned char *s, Py_ssize_t n, Py_ssize_t at, Py_ssize_t k,
                        const unsigned char *const *mark, const Py_ssize_t *size, Py_ssize_t *left) {
    for (Py_ssize_t j = 0; j < k; j++) {
        if (left[j] != -1) continue;
        left[j] = -2;
        for (Py_ssize_t p = at; p + size[j] <= n; p++) {
            if (s[p] == mark[j][0] && memcmp(s + p, mark[j], (size_t)size[j]) == 0) {
                left[j] = p;
                break;
            }
        }
    }
}

#ifdef HAVE_AVX2_PATH
/* Where in the 32 places from `p` each of the first `k` marks has its two bytes `first` and
 * `last` (offsets `off[2w]` and `off[2w + 1]` into it), all marks' agreements joined. */
__attribute__((target("avx2"), always_inline)) static inline __m256i agree(
    const unsigned char *p, Py_ssize_t k, const __m256i *first, const __m256i *last,
    const Py_ssize_t *off) {
    __m256i any = _mm256_setzero_si256();
    for (Py_ssize_t w = 0; w < k; w++) {
        __m256i one = _mm256_loadu_si256((const __m256i *)(p + off[2 * w]));
        __m256i two = _mm256_loadu_si256((const __m256i *)(p + off[2 * w + 1]));
        any = _mm256_or_si256(any, _mm256_and_si256(_mm256_cmpeq_epi8(one, first[w]),
                                                    _mm256_cmpeq_epi8(two, last[w])));
    }
    return any;
}

/* How rarely byte `c` is met in proto-JSON histories, roughly (higher: rarer): a backslash, a
 * capital (a camel-case key's inner word), the small letters by their frequency in English,
 * then digits, and the structure and spaces, met everywhere. span_marks compares each mark's
 * two rarest bytes first: its first and last ("e" and "t" of "eployment") agree a hundred times
 * more often in a history's keys and times than "p" and "y" do. */
static int rarity(unsigned char c) {
    static const char small[] = "etaoinsrhldcumfpgwybvkxjqz";  /* commonest first */
    if (c == '\\') return 60;
    if (c >= 'A' && c <= 'Z') return 50;
    if (c >= 'a' && c <= 'z') return 10 + (int)(strchr(small, c) - small);
    if (c >= '0' && c <= '9') return 5;
    return 0;
}

/* The offsets into `mark` (`size` bytes) of its two rarest bytes (the first where tied), the
 * smaller first; both 0 for a single byte. */
static void rarest_pair(const unsigned char *mark, Py_ssize_t size, Py_ssize_t pair[2]) {
    Py_ssize_t a = 0, b = -1;
    for (Py_ssize_t i = 1; i < size; i++) {
        if (rarity(mark[i]) > rarity(mark[a])) b = a, a = i;
        else if (b < 0 || rarity(mark[i]) > rarity(mark[b])) b = i;
    }
    if (b < 0) b = a;
    pair[0] = a < b ? a : b, pair[1] = a < b ? b : a;
}

/* The first pair of 32-place blocks from `at` (to `stop`, where the last block may begin) in
 * which a mark's two bytes agree; `stop` past the last where none do. `k` is a constant in each
 * call below, so that the marks' loop is unrolled and their bytes stay in registers. */
__attribute__((target("avx2"), always_inline)) static inline Py_ssize_t next_agreeing(
    const unsigned char *s, Py_ssize_t at, Py_ssize_t stop, Py_ssize_t k, const __m256i *first,
    const __m256i *last, const Py_ssize_t *off) {
    for (; at + 32 <= stop; at += 64) {
        __m256i any = _mm256_or_si256(agree(s + at, k, first, last, off),
                                      agree(s + at + 32, k, first, last, off));
        if (!_mm256_testz_si256(any, any)) return at;
    }
    for (; at <= stop; at += 32) {
        __m256i any = agree(s + at, k, first, last, off);
        if (!_mm256_testz_si256(any, any)) return at;
    }
    return at;
}

/* places_tail for up to MAX_MARKS marks in one pass: per 32 places, the bytes at each wanted
 * mark's two rarest offsets compared with its bytes there, the agreements of all marks joined
 * into one test (a place where both bytes of a mark agree is rare: at about one place in 4096
 * of base64 text, far fewer elsewhere), and only then each mark's places compared whole. Stops
 * where all are found; the last places (fewer than 32 plus the longest mark) are left to
 * places_tail. Returns where the blocks stopped; `pair`: each mark's rarest_pair. */
__attribute__((target("avx2"))) static Py_ssize_t places_avx2(
    const unsigned char *s, Py_ssize_t n, Py_ssize_t at, Py_ssize_t k,
    const unsigned char *const *mark, const Py_ssize_t *size, const Py_ssize_t *pair,
    Py_ssize_t *left) {
    __m256i first[MAX_MARKS], last[MAX_MARKS];
    Py_ssize_t which[MAX_MARKS], off[2 * MAX_MARKS], longest = 1, wanted = 0;  /* still wanted */
    for (Py_ssize_t j = 0; j < k; j++) {
        if (left[j] != -1) continue;
        off[2 * wanted] = pair[2 * j], off[2 * wanted + 1] = pair[2 * j + 1];
        first[wanted] = _mm256_set1_epi8((char)mark[j][off[2 * wanted]]);
        last[wanted] = _mm256_set1_epi8((char)mark[j][off[2 * wanted + 1]]);
        if (size[j] > longest) longest = size[j];
        which[wanted++] = j;
    }
    Py_ssize_t stop = n - 32 - (longest - 1);  /* the last place a block may begin */
    while (wanted && at <= stop) {
        switch (wanted) {
            case 1: at = next_agreeing(s, at, stop, 1, first, last, off); break;
            case 2: at = next_agreeing(s, at, stop, 2, first, last, off); break;
            case 3: at = next_agreeing(s, at, stop, 3, first, last, off); break;
            case 4: at = next_agreeing(s, at, stop, 4, first, last, off); break;
            default: at = next_agreeing(s, at, stop, wanted, first, last, off); break;
        }
        /* The one or two blocks from `at` (each inside the buffer) where some bytes agree. */
        for (Py_ssize_t end = at + 64; wanted && at <= stop && at < end; at += 32) {
            for (Py_ssize_t w = 0; w < wanted;) {
                Py_ssize_t j = which[w];
                __m256i one = _mm256_loadu_si256((const __m256i *)(s + at + off[2 * w]));
                __m256i two = _mm256_loadu_si256((const __m256i *)(s + at + off[2 * w + 1]));
                uint32_t both = (uint32_t)_mm256_movemask_epi8(_mm256_and_si256(
                    _mm256_cmpeq_epi8(one, first[w]), _mm256_cmpeq_epi8(two, last[w])));
                for (; both; both &= both - 1) {
                    Py_ssize_t place = at + __builtin_ctz(both);
                    if (memcmp(s + place, mark[j], (size_t)size[j]) == 0) {
                        left[j] = place;
                        break;
                    }
                }
                if (left[j] == -1) {
                    w++;
                    continue;
                }
                wanted--;  /* found: the last mark still wanted takes its slot */
                first[w] = first[wanted], last[w] = last[wanted], which[w] = which[wanted];
                off[2 * w] = off[2 * wanted], off[2 * w + 1] = off[2 * wanted + 1];
            }
        }
    }
    return at;
}
#endif

/* The marks of one span_marks or run_marks call: their bytes, sizes and rarest pairs. */
typedef struct {
    Py_ssize_t count;
    const unsigned char *mark[MAX_MARKS];
    Py_ssize_t size[MAX_MARKS], pair[2 * MAX_MARKS];
} Marks;

/* Reads the tuple `marks` into `m`; -1 (an error set) where it is not one of at most
 * MAX_MARKS non-empty bytes. */
static int marks_of(PyObject *marks, Marks *m) {
    m->count = PyTuple_GET_SIZE(marks);
    if (m->count > MAX_MARKS) {
        PyErr_SetString(PyExc_ValueError, "at most 8 marks");
        return -1;
    }
    for (Py_ssize_t j = 0; j < m->count; j++) {
        PyObject *one = PyTuple_GET_ITEM(marks, j);
        if (!PyBytes_Check(one) || PyBytes_GET_SIZE(one) == 0) {
            PyErr_SetString(PyExc_TypeError, "marks must be non-empty bytes");
            return -1;
        }
        m->mark[j] = (const unsigned char *)PyBytes_AS_STRING(one);
        m->size[j] = PyBytes_GET_SIZE(one);
#ifdef HAVE_AVX2_PATH
        rarest_pair(m->mark[j], m->size[j], m->pair + 2 * j);  /* once per call, not per span */
#endif
    }
    return 0;
}

/* The marks not found yet (`first[j]` < 0) looked for at once in bytes `start` to `end` of the
 * `len` bytes of `s` (the vector blocks where AVX2 is, then the tail place by place); each found
 * gets `first[j] = k`. Returns how many were found. */
static Py_ssize_t marks_in_span(const unsigned char *s, Py_ssize_t len, Py_ssize_t start,
                                Py_ssize_t end, const Marks *m, Py_ssize_t *first, Py_ssize_t k) {
    Py_ssize_t left[MAX_MARKS], found = 0;
    if (start < 0) start = 0;
    if (end > len) end = len;
    if (start >= end) return 0;
    for (Py_ssize_t j = 0; j < m->count; j++) left[j] = first[j] < 0 ? -1 : -3;  /* -3: found */
    Py_ssize_t at = start;
#ifdef HAVE_AVX2_PATH
    if (use_avx2) at = places_avx2(s, end, at, m->count, m->mark, m->size, m->pair, left);
#endif
    places_tail(s, end, at, m->count, m->mark, m->size, left);
    for (Py_ssize_t j = 0; j < m->count; j++) {
        if (left[j] >= 0) first[j] = k, found++;
    }
    return found;
}

/* A list of `count` ints. */
static PyObject *int_list(const Py_ssize_t *values, Py_ssize_t count) {
    PyObject *out = PyList_New(count);
    for (Py_ssize_t j = 0; out != NULL && j < count; j++) {
        PyObject *number = PyLong_FromSsize_t(values[j]);
        if (number == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, j, number);
    }
    return out;
}

/* span_marks(buf, marks, spans): per span, the marks not found yet looked for in its bytes at
 * once. */
static PyObject *span_marks(PyObject *self, PyObject *args) {
    Py_buffer view;
    PyObject *marks, *spans;
    if (!PyArg_ParseTuple(args, "y*O!O!", &view, &PyTuple_Type, &marks, &PyList_Type, &spans))
        return NULL;
    Marks m;
    if (marks_of(marks, &m) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    Py_ssize_t pairs = PyList_GET_SIZE(spans) / 2, first[MAX_MARKS], wanted = m.count;
    for (Py_ssize_t j = 0; j < m.count; j++) first[j] = -1;  /* the first span spelling it */
    const unsigned char *s = view.buf;
    for (Py_ssize_t k = 0; k < pairs && wanted; k++) {
        Py_ssize_t start = PyLong_AsSsize_t(PyList_GET_ITEM(spans, 2 * k));
        Py_ssize_t end = PyLong_AsSsize_t(PyList_GET_ITEM(spans, 2 * k + 1));
        if (PyErr_Occurred()) {
            PyBuffer_Release(&view);
            return NULL;
        }
        wanted -= marks_in_span(s, view.len, start, end, &m, first, k);
    }
    PyBuffer_Release(&view);
    return int_list(first, m.count);
}

static PyObject *HISTORY_NAME, *INDEX_NAME; /* "_history", "_index", interned at import */

/* The tuple (document, spans) that `place(history, top)` returns for a run, or NULL with no
 * error set where it returns None or something else (the run is then not searched here). */
static PyObject *placed(PyObject *place, PyObject *history, Py_ssize_t top) {
    PyObject *got = PyObject_CallFunction(place, "On", history, top);
    if (got == NULL) return NULL;
    if (!PyTuple_Check(got) || PyTuple_GET_SIZE(got) != 2 ||
        !PyBytes_Check(PyTuple_GET_ITEM(got, 0)) || !PyList_Check(PyTuple_GET_ITEM(got, 1))) {
        Py_DECREF(got);
        return NULL;
    }
    return got;
}

/* run_marks(cells, starts, ends, marks, kind, place) -> list[list[int] | None]: span_marks of
 * each run's cells, cells[starts[r]:ends[r]], in their document, all runs in one call. A run is
 * searched where its cells are all of type `kind` with one `_history`, for which
 * `place(history, top)` (top: the largest `_index` of them) gives (document bytes, spans list)
 * holding each cell's event at 2 * _index; None for any other run (and an empty one). */
static PyObject *run_marks(PyObject *self, PyObject *args) {
    PyObject *cells, *starts, *ends, *marks, *kind, *place;
    if (!PyArg_ParseTuple(args, "O!O!O!O!OO", &PyList_Type, &cells, &PyList_Type, &starts,
                          &PyList_Type, &ends, &PyTuple_Type, &marks, &kind, &place))
        return NULL;
    Marks m;
    if (marks_of(marks, &m) < 0) return NULL;
    Py_ssize_t runs = PyList_GET_SIZE(starts), cell_count = PyList_GET_SIZE(cells);
    if (PyList_GET_SIZE(ends) != runs) {
        PyErr_SetString(PyExc_ValueError, "starts and ends differ in length");
        return NULL;
    }
    PyObject *out = PyList_New(runs);
    Py_ssize_t *index = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(cell_count + 1));
    PyObject *last = NULL, *last_history = NULL;  /* the last place got, for its history */
    Py_ssize_t last_top = -1;
    if (out == NULL || index == NULL) goto fail;
    for (Py_ssize_t r = 0; r < runs; r++) {
        Py_ssize_t start = PyLong_AsSsize_t(PyList_GET_ITEM(starts, r));
        Py_ssize_t end = PyLong_AsSsize_t(PyList_GET_ITEM(ends, r));
        if (PyErr_Occurred()) goto fail;
        if (start < 0) start = 0;
        if (end > cell_count) end = cell_count;
        PyObject *history = NULL, *result = Py_None;
        Py_ssize_t top = -1, ok = end > start;
        for (Py_ssize_t i = start; ok && i < end; i++) {
            PyObject *cell = PyList_GET_ITEM(cells, i);
            if ((PyObject *)Py_TYPE(cell) != kind) {
                ok = 0;
                break;
            }
            PyObject *one = PyObject_GetAttr(cell, HISTORY_NAME);
            if (one == NULL) goto fail;
            if (history == NULL) history = one;
            else {
                ok = one == history;
                Py_DECREF(one);
            }
            PyObject *number = ok ? PyObject_GetAttr(cell, INDEX_NAME) : NULL;
            if (ok && number == NULL) goto fail_run;
            if (number != NULL) {
                index[i - start] = PyLong_CheckExact(number) ? PyLong_AsSsize_t(number) : -1;
                Py_DECREF(number);
                if (index[i - start] == -1 && PyErr_Occurred()) PyErr_Clear();
                if (index[i - start] < 0) ok = 0;
                else if (index[i - start] > top) top = index[i - start];
            }
        }
        if (ok && !(last != NULL && history == last_history && top <= last_top)) {
            Py_CLEAR(last);
            Py_CLEAR(last_history);
            last = placed(place, history, top);
            if (last == NULL && PyErr_Occurred()) goto fail_run;
            last_history = history, last_top = top;
            Py_INCREF(last_history);
        }
        if (ok && last != NULL) {
            PyObject *document = PyTuple_GET_ITEM(last, 0), *spans = PyTuple_GET_ITEM(last, 1);
            const unsigned char *s = (const unsigned char *)PyBytes_AS_STRING(document);
            Py_ssize_t len = PyBytes_GET_SIZE(document), first[MAX_MARKS], wanted = m.count;
            if (2 * top + 1 >= PyList_GET_SIZE(spans)) ok = 0;  /* not split so far */
            for (Py_ssize_t j = 0; j < m.count; j++) first[j] = -1;
            for (Py_ssize_t k = 0; ok && wanted && k < end - start; k++) {
                Py_ssize_t a = PyLong_AsSsize_t(PyList_GET_ITEM(spans, 2 * index[k]));
                Py_ssize_t b = PyLong_AsSsize_t(PyList_GET_ITEM(spans, 2 * index[k] + 1));
                if (PyErr_Occurred()) goto fail_run;
                wanted -= marks_in_span(s, len, a, b, &m, first, k);
            }
            if (ok && (result = int_list(first, m.count)) == NULL) goto fail_run;
        } else {
            ok = 0;
        }
        if (!ok) Py_INCREF(result = Py_None);
        Py_XDECREF(history);
        PyList_SET_ITEM(out, r, result);
        continue;
    fail_run:
        Py_XDECREF(history);
        goto fail;
    }
    PyMem_Free(index);
    Py_XDECREF(last);
    Py_XDECREF(last_history);
    return out;
fail:
    PyMem_Free(index);
    Py_XDECREF(last);
    Py_XDECREF(last_history);
    Py_XDECREF(out);
    return NULL;
}

/* Whether payload `k` of a cell (five entries of one_cell's `found`) has the encoding `b64`. */
static int encoded_as(const unsigned char *s, const Py_ssize_t *payload, const char *b64) {
    Py_ssize_t size = (Py_ssize_t)strlen(b64);
    return payload[0] >= 0 && payload[1] - payload[0] == size && memcmp(s + payload[0], b64, size) == 0;
}

#define JSON_PLAIN "anNvbi9wbGFpbg==" /* base64 of json/plain, as proto-JSON writes metadata */
#define BINARY_NULL "YmluYXJ5L251bGw="

/* The span of a cell's one json/plain payload's data (PayloadTexts' start and end: a binary/null
 * payload that holds nothing beside it is no other payload); 0 where it has none. */
static int plain_text(const unsigned char *s, const Py_ssize_t found[10], Py_ssize_t span[2]) {
    for (int k = 0; k < 2; k++) {
        const Py_ssize_t *mine = found + 5 * k, *other = found + 5 * (1 - k);
        if (!encoded_as(s, mine, JSON_PLAIN) || mine[2] < 0) continue;
        int alone = other[0] < 0 && k == 0;
        int empty = encoded_as(s, other, BINARY_NULL) && (other[2] < 0 || other[2] == other[4]);
        if (alone || empty) {
            span[0] = mine[2], span[1] = mine[4];
            return 1;
        }
        return 0; /* the first plain payload decides, as PayloadTexts' choice */
    }
    return 0;
}

/* The re-sent share of each group of cells (groups[i] >= 0: the model inputs of one run, in
 * order, the groups one after another): out[3][groups] of resent bytes, total bytes, and how
 * many inputs were read, or -1 where the share is left to the pure path (an input without one
 * plain payload, not plain base64, or a group met twice). */
typedef struct {
    const int64_t *groups;
    int64_t *out;
    Py_ssize_t count, current;
    Resent r;
    Py_buffer held; /* the current group's last input, the next one's "before" */
    int holding;
} Shares;

static void shares_close(Shares *g) {
    if (g->current >= 0) {
        Py_ssize_t c = g->current;
        if (g->out[2 * g->count + c] >= 0) {
            int fine = g->r.clean;
            g->out[c] = g->r.shared, g->out[g->count + c] = g->r.total;
            g->out[2 * g->count + c] = fine ? g->r.texts : -1;
        }
    }
    if (g->holding) PyBuffer_Release(&g->held);
    g->holding = 0;
    g->current = -1;
    resent_free(&g->r);
}

/* Makes `group` the current one (a group met again, after another, is left to the pure path). */
static void shares_enter(Shares *g, Py_ssize_t group) {
    if (group == g->current) return;
    shares_close(g);
    if (g->out[2 * g->count + group] != 0) g->out[2 * g->count + group] = -1;
    g->current = group;
}

/* One cell of group `group`: its view (handed over: released here or held), its payloads (NULL:
 * not of the common shape); `view` NULL for a cell that is no buffer. */
static int shares_add(Shares *g, Py_ssize_t group, Py_buffer *view, const Py_ssize_t *found) {
    shares_enter(g, group);
    if (view == NULL) {
        g->out[2 * g->count + group] = -1;
        return 0;
    }
    Py_ssize_t span[2];
    int64_t *state = &g->out[2 * g->count + group];
    if (*state < 0 || found == NULL || !plain_text(view->buf, found, span)) {
        *state = -1;
        PyBuffer_Release(view);
        return 0;
    }
    if (resent_add(&g->r, (const unsigned char *)view->buf + span[0], span[1] - span[0], 1) < 0) {
        PyBuffer_Release(view);
        return -1;
    }
    if (g->holding) PyBuffer_Release(&g->held);
    g->held = *view, g->holding = 1;
    return 0;
}

/* What a payload cell decodes from, as payload_cells._cell_raw finds it: its `_raw` (proto-JSON
 * bytes), the cell itself where it looks its field up in parsed events (`_events`: a protobuf
 * message, no buffer), None for anything else. A new reference, NULL on an error. */
static PyObject *cell_raw(PyObject *cell) {
    static PyObject *raw_name = NULL, *events_name = NULL;
    if (raw_name == NULL && (raw_name = PyUnicode_InternFromString("_raw")) == NULL) return NULL;
    if (events_name == NULL && (events_name = PyUnicode_InternFromString("_events")) == NULL)
        return NULL;
    PyObject *found[2] = {NULL, NULL};
    PyObject *names[2] = {raw_name, events_name};
    for (int k = 0; k < 2; k++) {
        found[k] = PyObject_GetAttr(cell, names[k]);
        if (found[k] == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return NULL;
            PyErr_Clear();  /* getattr(cell, name, None) */
        }
        if (found[k] != NULL && found[k] != Py_None) break;
        Py_CLEAR(found[k]);
    }
    if (found[0] != NULL) return found[0];
    if (found[1] != NULL) {
        Py_DECREF(found[1]);
        return Py_NewRef(cell);
    }
    return Py_NewRef(Py_None);
}

/* payload_spans(cells[, groups]): with groups (int64, one per cell, -1 for a cell of none),
 * also the groups' re-sent shares (Shares), read as each input is scanned: its bytes are read
 * from memory once for both. */
static PyObject *payload_spans(PyObject *self, PyObject *args) {
    PyObject *cells, *group_arg = Py_None;
    int lazy = 0;
    if (!PyArg_ParseTuple(args, "O!|Op", &PyList_Type, &cells, &group_arg, &lazy)) return NULL;
    Py_ssize_t count = PyList_GET_SIZE(cells);
    Py_buffer group_view = {0};
    Shares g = {0};
    g.current = -1;
    resent_init(&g.r);
    PyObject *spans = NULL, *names = NULL, *shares = NULL;
    if (group_arg != Py_None) {
        if (PyObject_GetBuffer(group_arg, &group_view, PyBUF_SIMPLE) < 0) return NULL;
        if (group_view.len != count * (Py_ssize_t)sizeof(int64_t)) {
            PyErr_SetString(PyExc_ValueError, "groups: one int64 per cell");
            goto fail;
        }
        g.groups = group_view.buf;
        for (Py_ssize_t i = 0; i < count; i++)
            if (g.groups[i] >= g.count) g.count = g.groups[i] + 1;
        shares = PyByteArray_FromStringAndSize(NULL, 3 * g.count * (Py_ssize_t)sizeof(int64_t));
        if (shares == NULL) goto fail;
        g.out = (int64_t *)PyByteArray_AS_STRING(shares);
        memset(g.out, 0, 3 * g.count * sizeof(int64_t));
    }
    spans = PyByteArray_FromStringAndSize(NULL, count * 8 * (Py_ssize_t)sizeof(int64_t));
    names = PyList_New(0);
    if (spans == NULL || names == NULL) goto fail;
    int64_t *out = (int64_t *)PyByteArray_AS_STRING(spans);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *cell = PyList_GET_ITEM(cells, i), *owned = NULL;
        if (lazy && cell != Py_None) {  /* a cell: what it decodes from */
            if ((owned = cell_raw(cell)) == NULL) goto fail;
            cell = owned;
        }
        Py_ssize_t found[10];
        int64_t row[8] = {cell == Py_None ? -2 : -1, -1, -1, -1, -1, -1, -1, -1};
        Py_ssize_t group = g.groups != NULL ? g.groups[i] : -1;
        if (cell != Py_None && PyObject_CheckBuffer(cell)) {
            Py_buffer view;
            if (PyObject_GetBuffer(cell, &view, PyBUF_SIMPLE) < 0) {
                Py_XDECREF(owned);
                goto fail;
            }
            Py_XDECREF(owned); /* the view holds the buffer's owner from here on */
            int shaped = one_cell((const unsigned char *)view.buf, view.len, found);
            if (shaped) {
                for (int k = 0; k < 2; k++) {
                    const Py_ssize_t *payload = found + 5 * k;
                    if (payload[0] < 0) continue;
                    Py_ssize_t number = encoding_number(
                        names, (const char *)view.buf + payload[0], payload[1] - payload[0]);
                    if (number < 0) {
                        PyBuffer_Release(&view);
                        goto fail;
                    }
                    row[4 * k] = number;
                    for (int j = 0; j < 3; j++) row[4 * k + 1 + j] = payload[2 + j];
                }
            }
            if (group >= 0) {
                if (shares_add(&g, group, &view, shaped ? found : NULL) < 0) goto fail;
            } else {
                PyBuffer_Release(&view);
            }
        } else {
            Py_XDECREF(owned);
            if (group >= 0) shares_add(&g, group, NULL, NULL); /* no buffer: the pure path */
        }
        for (int k = 0; k < 8; k++) out[k * count + i] = row[k];
    }
    if (g.groups != NULL) {
        shares_close(&g);
        PyBuffer_Release(&group_view);
        return Py_BuildValue("(NNN)", spans, names, shares);
    }
    return Py_BuildValue("(NN)", spans, names);
fail:
    shares_close(&g);
    if (group_view.obj != NULL) PyBuffer_Release(&group_view);
    Py_XDECREF(spans);
    Py_XDECREF(names);
    Py_XDECREF(shares);
    return NULL;
}

static PyObject *common_prefix(PyObject *self, PyObject *args) { return common_end(args, 0); }
static PyObject *common_suffix(PyObject *self, PyObject *args) { return common_end(args, 1); }

/* key_value(buf, key) -> bytes | None: the raw JSON of the value of the top-level key `key`
 * (bytes, spelt without escapes) of the (valid) JSON object in buf, b"" where the object has no
 * such key (a value is never empty); None where a typed decoder is to say (buf is no object, a key escapes a
 * character, the key comes twice, anything unexpected between the tokens). The other values
 * are stepped over by value_end (an event's payloads 64 bytes a step), not decoded. */
static PyObject *key_value(PyObject *self, PyObject *args) {
    Py_buffer view, want;
    if (!PyArg_ParseTuple(args, "y*y*", &view, &want)) return NULL;
    const unsigned char *s = view.buf, *w = want.buf;
    Py_ssize_t n = view.len, size = want.len, at = 0, start = -1, end = -1;
    int declined = 0;
    while (at < n && is_ws(s[at])) at++;
    if (at >= n || s[at] != '{') {
        declined = 1;
        goto done;
    }
    at++;
    for (int first = 1;; first = 0) {
        while (at < n && is_ws(s[at])) at++;
        if (first && at < n && s[at] == '}') break; /* {} */
        if (at >= n || s[at] != '"') {
            declined = 1;
            break;
        }
        Py_ssize_t name = at + 1, name_end = string_end(s, n, name);
        if (name_end >= n || memchr(s + name, '\\', (size_t)(name_end - name)) != NULL) {
            declined = 1;
            break;
        }
        at = name_end + 1;
        while (at < n && is_ws(s[at])) at++;
        if (at >= n || s[at] != ':') {
            declined = 1;
            break;
        }
        at++;
        while (at < n && is_ws(s[at])) at++;
        if (at >= n) {
            declined = 1;
            break;
        }
        Py_ssize_t value = at;
        at = value_end(s, n, at);
        if (at <= value || at > n) {
            declined = 1;
            break;
        }
        if (name_end - name == size && memcmp(s + name, w, (size_t)size) == 0) {
            if (start >= 0) { /* twice: which one counts is the decoder's to say */
                declined = 1;
                break;
            }
            start = value, end = at;
        }
        while (at < n && is_ws(s[at])) at++;
        if (at < n && s[at] == ',') {
            at++;
            continue;
        }
        if (at < n && s[at] == '}') break;
        declined = 1;
        break;
    }
    if (!declined) { /* past the closing "}": nothing but whitespace (as a decoder reads it) */
        for (at++; at < n && is_ws(s[at]); at++) {
        }
        declined = at < n;
    }
done:
    PyObject *out = declined ? Py_NewRef(Py_None)
                             : PyBytes_FromStringAndSize((const char *)s + (start < 0 ? 0 : start),
                                                         start < 0 ? 0 : end - start);
    PyBuffer_Release(&view);
    PyBuffer_Release(&want);
    return out;
}


/* The next member of the (valid) JSON object read at `*at` (just after its "{", `first`, or
 * after a member and its comma): its name's text in span[0..1], its value in span[2..3], `*at`
 * moved past it and the comma or "}" after it. 1: a member, more follow; 2: a member, the
 * object ended; 0: the object is empty; -1: what a typed decoder is to read (a name escaping a
 * character, anything unexpected between the tokens). */
static int next_member(const unsigned char *s, Py_ssize_t n, Py_ssize_t *at, int first,
                       Py_ssize_t span[4]) {
    Py_ssize_t i = *at;
    while (i < n && is_ws(s[i])) i++;
    if (first && i < n && s[i] == '}') {
        *at = i + 1;
        return 0;
    }
    if (i >= n || s[i] != '"') return -1;
    span[0] = i + 1, span[1] = string_end(s, n, i + 1);
    if (span[1] >= n || memchr(s + span[0], '\\', (size_t)(span[1] - span[0])) != NULL) return -1;
    for (i = span[1] + 1; i < n && is_ws(s[i]); i++) {
    }
    if (i >= n || s[i] != ':') return -1;
    for (i++; i < n && is_ws(s[i]); i++) {
    }
    if (i >= n) return -1;
    span[2] = i, span[3] = value_end(s, n, i);
    if (span[3] <= i || span[3] > n) return -1;
    for (i = span[3]; i < n && is_ws(s[i]); i++) {
    }
    if (i >= n || (s[i] != ',' && s[i] != '}')) return -1;
    *at = i + 1;
    return s[i] == ',' ? 1 : 2;
}

/* Whether name [span[0], span[1]) of s is `name`. */
static int named(const unsigned char *s, const Py_ssize_t span[4], const char *name) {
    size_t size = strlen(name);
    return (size_t)(span[1] - span[0]) == size && memcmp(s + span[0], name, size) == 0;
}

/* The members of the object whose value starts at `at` named by `names` (at most 4; NULL
 * ended), each value's span in values[2k..2k+1] (-1 where absent); 0, or -1 where the value
 * is no object, a member has another name or comes twice, or next_member declines. */
static int members(const unsigned char *s, Py_ssize_t n, Py_ssize_t at, const char *names[],
                   Py_ssize_t values[8]) {
    for (int k = 0; k < 8; k++) values[k] = -1;
    if (at >= n || s[at] != '{') return -1;
    at++;
    for (int first = 1;; first = 0) {
        Py_ssize_t span[4];
        int got = next_member(s, n, &at, first, span);
        if (got <= 0) return got;
        int k = 0;
        while (names[k] != NULL && !named(s, span, names[k])) k++;
        if (names[k] == NULL || values[2 * k] >= 0) return -1;
        values[2 * k] = span[2], values[2 * k + 1] = span[3];
        if (got == 2) return 0;
    }
}

/* summary_data(buf) -> bytes | None: the decoded data of the activity summary of the event
 * whose raw JSON is buf, where its userMetadata is {"summary": <payload>} (and "details"),
 * the payload {"metadata": {"encoding": "<json/plain in base64>"}, "data": "<base64>"}, its
 * data base64 digits alone, no name escaping a character and none twice; None for anything
 * else (the typed decoders read it). */
static PyObject *summary_data(PyObject *self, PyObject *args) {
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view)) return NULL;
    const unsigned char *s = view.buf;
    Py_ssize_t n = view.len, at = 0, metadata[2] = {-1, -1};
    PyObject *out = NULL;
    while (at < n && is_ws(s[at])) at++;
    if (at >= n || s[at] != '{') goto decline;
    at++;
    for (int first = 1;; first = 0) { /* the top level: its userMetadata, once */
        Py_ssize_t span[4];
        int got = next_member(s, n, &at, first, span);
        if (got < 0) goto decline;
        if (got == 0) break;
        if (named(s, span, "userMetadata")) {
            if (metadata[0] >= 0) goto decline;
            metadata[0] = span[2], metadata[1] = span[3];
        }
        if (got == 2) break;
    }
    while (at < n && is_ws(s[at])) at++;
    if (at < n || metadata[0] < 0) goto decline;
    static const char *top[] = {"summary", "details", NULL};
    static const char *payload[] = {"metadata", "data", NULL};
    static const char *encoding[] = {"encoding", NULL};
    static const char plain[] = "\"anNvbi9wbGFpbg==\""; /* json/plain */
    Py_ssize_t found[8], parts[8], meta[8];
    if (members(s, n, metadata[0], top, found) < 0 || found[0] < 0) goto decline;
    if (members(s, n, found[0], payload, parts) < 0 || parts[0] < 0 || parts[2] < 0) goto decline;
    if (members(s, n, parts[0], encoding, meta) < 0 || meta[0] < 0) goto decline;
    if (meta[1] - meta[0] != (Py_ssize_t)strlen(plain)
        || memcmp(s + meta[0], plain, strlen(plain)) != 0)
        goto decline;
    Py_ssize_t data = parts[2] + 1, size = parts[3] - parts[2] - 2;
    if (size < 0 || s[parts[2]] != '"' || s[parts[3] - 1] != '"') goto decline;
    out = PyBytes_FromStringAndSize(NULL, size / 4 * 3);
    if (out == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    Py_ssize_t decoded = b64_into(s + data, size, (unsigned char *)PyBytes_AS_STRING(out));
    if (decoded < 0) {
        Py_CLEAR(out);
        goto decline;
    }
    PyBuffer_Release(&view);
    if (_PyBytes_Resize(&out, decoded) < 0) return NULL;
    return out;
decline:
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
}


/* One item of plain_payloads: the tuple (datas, total) of the Payloads JSON s[0..n), or
 * Py_None (a new reference either way; NULL on an error). */
static PyObject *plain_cell(const unsigned char *s, Py_ssize_t n) {
    Py_ssize_t at = expect(s, n, 0, "{", 0); /* nothing before the opening brace */
    if (at < 0 || (at = expect(s, n, at, "\"payloads\"", 1)) < 0) Py_RETURN_NONE;
    if ((at = expect(s, n, at, ":", 1)) < 0 || (at = expect(s, n, at, "[", 1)) < 0)
        Py_RETURN_NONE;
    PyObject *datas = PyList_New(0);
    if (datas == NULL) return NULL;
    Py_ssize_t total = 0, more = expect(s, n, at, "]", 1);
    if (more >= 0) {
        at = more; /* no payload */
    } else {
        for (;;) {
            Py_ssize_t found[5];
            if ((at = one_payload(s, n, at, found)) < 0) goto decline;
            PyObject *data;
            if (encoded_as(s, found, JSON_PLAIN) && found[2] >= 0) {
                Py_ssize_t size = found[4] - found[2];
                data = PyBytes_FromStringAndSize(NULL, size / 4 * 3);
                if (data == NULL) goto fail;
                Py_ssize_t got = b64_into(s + found[2], size, (unsigned char *)PyBytes_AS_STRING(data));
                if (got < 0) {
                    Py_DECREF(data);
                    goto decline; /* no plain base64 (an escape, other text): msgspec reads it */
                }
                if (_PyBytes_Resize(&data, got) < 0) goto fail;
                total += got;
            } else if (encoded_as(s, found, BINARY_NULL) && found[2] < 0) {
                data = Py_NewRef(Py_None); /* binary/null: no data, 0 bytes */
            } else {
                goto decline; /* another payload: the general route reads it */
            }
            int appended = PyList_Append(datas, data);
            Py_DECREF(data);
            if (appended < 0) goto fail;
            if ((more = expect(s, n, at, ",", 1)) < 0) break;
            at = more;
        }
        if ((at = expect(s, n, at, "]", 1)) < 0) goto decline;
    }
    if ((at = expect(s, n, at, "}", 1)) < 0) goto decline;
    while (at < n && is_ws(s[at])) at++;
    if (at != n) goto decline;
    return Py_BuildValue("(Nn)", datas, total);
decline:
    Py_DECREF(datas);
    Py_RETURN_NONE;
fail:
    Py_DECREF(datas);
    return NULL;
}

static PyObject *plain_payloads(PyObject *self, PyObject *args) {
    PyObject *raws;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &raws)) return NULL;
    Py_ssize_t count = PyList_GET_SIZE(raws);
    PyObject *out = PyList_New(count);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *raw = PyList_GET_ITEM(raws, i), *item;
        if (raw == Py_None || !PyObject_CheckBuffer(raw)) {
            item = Py_NewRef(Py_None);
        } else {
            Py_buffer view;
            if (PyObject_GetBuffer(raw, &view, PyBUF_SIMPLE) < 0) {
                Py_DECREF(out);
                return NULL;
            }
            item = plain_cell(view.buf, view.len);
            PyBuffer_Release(&view);
            if (item == NULL) {
                Py_DECREF(out);
                return NULL;
            }
        }
        PyList_SET_ITEM(out, i, item);
    }
    return out;
}


static PyMethodDef methods[] = {
    {"payload_spans", payload_spans, METH_VARARGS,
     "Data spans and encodings of payload cells of the common shape."},
    {"common_prefix", common_prefix, METH_VARARGS, "Length of the common beginning of a and b."},
    {"common_suffix", common_suffix, METH_VARARGS, "Length of the common end of a and b."},
    {"element_spans", element_spans, METH_VARARGS,
     "Spans of the next elements of a JSON array, where to go on, whether it ended."},
    {"span_marks", span_marks, METH_VARARGS,
     "The number of the first span spelling each mark (-1: none)."},
    {"run_marks", run_marks, METH_VARARGS,
     "span_marks of each run's cells in their document, None where not searched so."},
    {"last_spans", last_spans, METH_VARARGS,
     "Spans of the last elements of a JSON array, last first, and whether it began."},
    {"resent", resent, METH_VARARGS,
     "budget._resent over base64 (or plain) texts: (resent, total), or None."},
    {"b64_decode", b64_decode, METH_VARARGS,
     "Decoded base64 of whole quanta and only base64 digits, else None."},
    {"key_value", key_value, METH_VARARGS,
     "The raw JSON of a top-level key's value in a JSON object, b'' where absent, None: undecided."},
    {"plain_payloads", plain_payloads, METH_VARARGS,
     "Decoded data and total bytes of Payloads JSON of json/plain and binary/null payloads."},
    {"summary_data", summary_data, METH_VARARGS,
     "The decoded data of an event's json/plain activity summary, None: another shape."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cellscan", NULL, -1, methods};

PyMODINIT_FUNC PyInit__cellscan(void) {
    b64_table();
    nested_stop_table();
    HISTORY_NAME = PyUnicode_InternFromString("_history");
    INDEX_NAME = PyUnicode_InternFromString("_index");
    if (HISTORY_NAME == NULL || INDEX_NAME == NULL) return NULL;
#ifdef HAVE_AVX2_PATH
    __builtin_cpu_init();
    use_avx2 = __builtin_cpu_supports("avx2") && getenv("TOOLKIT_NO_AVX2") == NULL;
    use_clmul = use_avx2 && __builtin_cpu_supports("pclmul");
#endif
    return PyModule_Create(&module);
}
