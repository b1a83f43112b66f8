/* JSON values stepped over (strings 32 bytes a step, objects and arrays 64 with AVX2 and
 * carry-less multiplication), and the spans of an array's first or last elements.
 *
 * Part of the _cellscan module, included once by ../_cellscan.c (one translation unit:
 * every function stays static and inlinable); see that file for the module's functions. */

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
