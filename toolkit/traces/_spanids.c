/*
 * The spans' ids hashed in C, all of a table's at once, and the activities' scheduled times'
 * texts.
 *
 * The compiled twins of toolkit.traces.span_columns.hashed_python and of span_rows._stamp_text,
 * which stay the references (setup.py marks this optional; tests/test_span_ids.py holds both
 * to the same texts):
 *
 * digests(keys, size[, lanes]) -> list[str] | None
 *   hashlib.blake2b(key.encode(), digest_size=size).hexdigest() of each str of the list keys
 *   (BLAKE2b as RFC 7693 defines it: no key, no salt, no personalisation; size 1 to 64), or
 *   None where a key is no str or has no UTF-8 form (a lone surrogate): the caller then
 *   takes the pure path, which hashes it or raises as it always did. Keys of one block are
 *   hashed four at a time in AVX2's lanes where the processor has them; lanes=False hashes
 *   each alone (the same texts: the tests compare the two).
 *
 * stamp_texts(times) -> list[str] | None
 *   _stamp_text(t) of each int of the list times (nanoseconds since the epoch), "" for None;
 *   None where one is neither, or beyond int64.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static const uint64_t IV[8] = {
    0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL, 0xa54ff53a5f1d36f1ULL,
    0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL, 0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL,
};

static const uint8_t SIGMA[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
    {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
    {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
    {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
    {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
};

static inline uint64_t rotr(uint64_t x, int n) { return (x >> n) | (x << (64 - n)); }

static inline uint64_t load64(const unsigned char *p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t v;
    memcpy(&v, p, sizeof v);  /* the host's order is the hash's */
    return v;
#else
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];  /* little-endian, on any host */
    return v;
#endif
}

#define G(a, b, c, d, x, y)          \
    do {                             \
        v[a] = v[a] + v[b] + (x);    \
        v[d] = rotr(v[d] ^ v[a], 32); \
        v[c] = v[c] + v[d];          \
        v[b] = rotr(v[b] ^ v[c], 24); \
        v[a] = v[a] + v[b] + (y);    \
        v[d] = rotr(v[d] ^ v[a], 16); \
        v[c] = v[c] + v[d];          \
        v[b] = rotr(v[b] ^ v[c], 63); \
    } while (0)

/* F: one 128-byte block into the state h; t: the bytes hashed so far, this block's included. */
static void compress(uint64_t h[8], const unsigned char block[128], uint64_t t, int last) {
    uint64_t v[16], m[16];
    for (int i = 0; i < 16; i++) m[i] = load64(block + 8 * i);
    for (int i = 0; i < 8; i++) {
        v[i] = h[i];
        v[i + 8] = IV[i];
    }
    v[12] ^= t;  /* the counter's high word stays 0: keys are far below 2^64 bytes */
    if (last) v[14] = ~v[14];
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 12
#endif
    for (int r = 0; r < 12; r++) {
        const uint8_t *s = SIGMA[r];
        G(0, 4, 8, 12, m[s[0]], m[s[1]]);
        G(1, 5, 9, 13, m[s[2]], m[s[3]]);
        G(2, 6, 10, 14, m[s[4]], m[s[5]]);
        G(3, 7, 11, 15, m[s[6]], m[s[7]]);
        G(0, 5, 10, 15, m[s[8]], m[s[9]]);
        G(1, 6, 11, 12, m[s[10]], m[s[11]]);
        G(2, 7, 8, 13, m[s[12]], m[s[13]]);
        G(3, 4, 9, 14, m[s[14]], m[s[15]]);
    }
    for (int i = 0; i < 8; i++) h[i] ^= v[i] ^ v[i + 8];
}

/* BLAKE2b of data (no key) into out, size bytes. */
static void blake2b(const unsigned char *data, Py_ssize_t length, int size, unsigned char *out) {
    uint64_t h[8];
    memcpy(h, IV, sizeof h);
    h[0] ^= 0x01010000ULL ^ (uint64_t)size;
    Py_ssize_t done = 0;
    while (length - done > 128) {  /* every block but the last, which may be full too */
        compress(h, data + done, (uint64_t)(done + 128), 0);
        done += 128;
    }
    unsigned char block[128] = {0};
    memcpy(block, data + done, (size_t)(length - done));
    compress(h, block, (uint64_t)length, 1);
    for (int i = 0; i < size; i++) out[i] = (unsigned char)(h[i / 8] >> (8 * (i % 8)));
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) \
    && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#include <immintrin.h>
#define FOUR_LANES 1

/* BLAKE2b of four keys of one block each (at most 128 bytes) at once, a key to each 64-bit lane
 * of AVX2's vectors: the same G steps on the same words as compress, four states side by side
 * (a span's key is a few dozen bytes: one block, whose 12 rounds are all of its hashing). Used
 * where the processor has AVX2 (asked once, at import). */
#define ROTATE32(x) _mm256_shuffle_epi32((x), _MM_SHUFFLE(2, 3, 0, 1))
#define ROTATE24(x) _mm256_shuffle_epi8((x), rotate24)
#define ROTATE16(x) _mm256_shuffle_epi8((x), rotate16)
#define ROTATE63(x) _mm256_xor_si256(_mm256_srli_epi64((x), 63), _mm256_add_epi64((x), (x)))
#define G4(a, b, c, d, x, y)                                                   \
    do {                                                                       \
        v[a] = _mm256_add_epi64(_mm256_add_epi64(v[a], v[b]), (x));            \
        v[d] = ROTATE32(_mm256_xor_si256(v[d], v[a]));                         \
        v[c] = _mm256_add_epi64(v[c], v[d]);                                   \
        v[b] = ROTATE24(_mm256_xor_si256(v[b], v[c]));                         \
        v[a] = _mm256_add_epi64(_mm256_add_epi64(v[a], v[b]), (y));            \
        v[d] = ROTATE16(_mm256_xor_si256(v[d], v[a]));                         \
        v[c] = _mm256_add_epi64(v[c], v[d]);                                   \
        v[b] = ROTATE63(_mm256_xor_si256(v[b], v[c]));                         \
    } while (0)

__attribute__((target("avx2"))) static void blake2b_four(const unsigned char *const data[4],
                                                         const Py_ssize_t length[4], int size,
                                                         unsigned char out[4][64]) {
    const __m256i rotate24 = _mm256_setr_epi8(
        3, 4, 5, 6, 7, 0, 1, 2, 11, 12, 13, 14, 15, 8, 9, 10,
        3, 4, 5, 6, 7, 0, 1, 2, 11, 12, 13, 14, 15, 8, 9, 10);
    const __m256i rotate16 = _mm256_setr_epi8(
        2, 3, 4, 5, 6, 7, 0, 1, 10, 11, 12, 13, 14, 15, 8, 9,
        2, 3, 4, 5, 6, 7, 0, 1, 10, 11, 12, 13, 14, 15, 8, 9);
    unsigned char blocks[4][128];
    for (int lane = 0; lane < 4; lane++) {
        memset(blocks[lane], 0, 128);
        memcpy(blocks[lane], data[lane], (size_t)length[lane]);
    }
    __m256i m[16], v[16], h[8];
    for (int i = 0; i < 16; i++)  /* word i of each lane's block, lane 0 lowest */
        m[i] = _mm256_set_epi64x((long long)load64(blocks[3] + 8 * i),
                                 (long long)load64(blocks[2] + 8 * i),
                                 (long long)load64(blocks[1] + 8 * i),
                                 (long long)load64(blocks[0] + 8 * i));
    for (int i = 0; i < 8; i++) {
        uint64_t word = i ? IV[i] : IV[0] ^ 0x01010000ULL ^ (uint64_t)size;
        h[i] = _mm256_set1_epi64x((long long)word);
        v[i] = h[i];
        v[i + 8] = _mm256_set1_epi64x((long long)IV[i]);
    }
    v[12] = _mm256_xor_si256(v[12], _mm256_set_epi64x(length[3], length[2], length[1],
                                                      length[0]));  /* the counter */
    v[14] = _mm256_xor_si256(v[14], _mm256_set1_epi64x(-1));  /* the last block */
    for (int r = 0; r < 12; r++) {
        const uint8_t *s = SIGMA[r];
        G4(0, 4, 8, 12, m[s[0]], m[s[1]]);
        G4(1, 5, 9, 13, m[s[2]], m[s[3]]);
        G4(2, 6, 10, 14, m[s[4]], m[s[5]]);
        G4(3, 7, 11, 15, m[s[6]], m[s[7]]);
        G4(0, 5, 10, 15, m[s[8]], m[s[9]]);
        G4(1, 6, 11, 12, m[s[10]], m[s[11]]);
        G4(2, 7, 8, 13, m[s[12]], m[s[13]]);
        G4(3, 4, 9, 14, m[s[14]], m[s[15]]);
    }
    uint64_t words[8][4];
    for (int i = 0; i < 8; i++)
        _mm256_storeu_si256((__m256i *)words[i],
                            _mm256_xor_si256(h[i], _mm256_xor_si256(v[i], v[i + 8])));
    for (int lane = 0; lane < 4; lane++)
        for (int i = 0; i < size; i++)
            out[lane][i] = (unsigned char)(words[i / 8][lane] >> (8 * (i % 8)));
}

static int has_avx2;
#endif

static const char HEX[] = "0123456789abcdef";

/* A digest's hex text, a new str. */
static PyObject *hex_text(const unsigned char *digest, int size) {
    PyObject *text = PyUnicode_New(2 * size, 127);
    if (text == NULL) return NULL;
    Py_UCS1 *at = PyUnicode_1BYTE_DATA(text);
    for (int b = 0; b < size; b++) {
        at[2 * b] = (Py_UCS1)HEX[digest[b] >> 4];
        at[2 * b + 1] = (Py_UCS1)HEX[digest[b] & 15];
    }
    return text;
}

static PyObject *digests(PyObject *self, PyObject *args) {
    PyObject *keys;
    int size, lanes = 1;
    if (!PyArg_ParseTuple(args, "O!i|p", &PyList_Type, &keys, &size, &lanes)) return NULL;
    if (size < 1 || size > 64) {
        PyErr_SetString(PyExc_ValueError, "digests: size must be 1 to 64");
        return NULL;
    }
    Py_ssize_t count = PyList_GET_SIZE(keys);
    PyObject *out = PyList_New(count);
    if (out == NULL) return NULL;
    unsigned char digest[64];
#ifdef FOUR_LANES
    lanes = lanes && has_avx2;  /* lanes=False: the one-key path alone (its tests) */
    const unsigned char *waiting[4];  /* keys of one block, hashed four at a time */
    Py_ssize_t lengths[4], places[4];
    int held = 0;
    unsigned char four[4][64];
#endif
    for (Py_ssize_t i = 0; i <= count; i++) {
        const char *utf8 = NULL;
        Py_ssize_t length = 0;
        if (i < count) {
            PyObject *key = PyList_GET_ITEM(keys, i);
            utf8 = PyUnicode_CheckExact(key) ? PyUnicode_AsUTF8AndSize(key, &length) : NULL;
            if (utf8 == NULL) {  /* no str, or a lone surrogate: the pure path says what it is */
                PyErr_Clear();
                Py_DECREF(out);
                Py_RETURN_NONE;
            }
        }
#ifdef FOUR_LANES
        if (lanes && (i == count || length <= 128)) {
            if (i < count) {
                waiting[held] = (const unsigned char *)utf8;
                lengths[held] = length;
                places[held++] = i;
            }
            if (held == 4 || (i == count && held)) {
                for (int lane = held; lane < 4; lane++) {  /* the last lanes: idle copies */
                    waiting[lane] = waiting[0];
                    lengths[lane] = lengths[0];
                }
                blake2b_four(waiting, lengths, size, four);
                for (int lane = 0; lane < held; lane++) {
                    PyObject *text = hex_text(four[lane], size);
                    if (text == NULL) {
                        Py_DECREF(out);
                        return NULL;
                    }
                    PyList_SET_ITEM(out, places[lane], text);
                }
                held = 0;
            }
            continue;
        }
#endif
        if (i == count) break;
        blake2b((const unsigned char *)utf8, length, size, digest);
        PyObject *text = hex_text(digest, size);
        if (text == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, text);
    }
    return out;
}

/* value's digits, zero-padded to width (value: 0 to 10**width - 1). */
static void put_digits(char **at, long long value, int width) {
    for (int i = width - 1; i >= 0; i--) {
        (*at)[i] = (char)('0' + value % 10);
        value /= 10;
    }
    *at += width;
}

/* str(pd.Timestamp(nanos, tz="UTC")) (span_rows._stamp_text): "YYYY-MM-DD HH:MM:SS", nine
 * fraction digits where there are nanoseconds, six where microseconds, none else, "+00:00". */
static PyObject *stamp_text(long long nanos) {
    long long seconds = nanos / 1000000000LL, fraction = nanos % 1000000000LL;
    if (fraction < 0) {  /* floored, as divmod */
        fraction += 1000000000LL;
        seconds -= 1;
    }
    long long days = seconds / 86400, rest = seconds % 86400;
    if (rest < 0) {
        rest += 86400;
        days -= 1;
    }
    /* The civil date of a day count (H. Hinnant's days_from_civil, inverted). */
    long long z = days + 719468;
    long long era = (z >= 0 ? z : z - 146096) / 146097;
    long long doe = z - era * 146097;
    long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    long long mp = (5 * doy + 2) / 153;
    long long day = doy - (153 * mp + 2) / 5 + 1;
    long long month = mp < 10 ? mp + 3 : mp - 9;
    long long year = yoe + era * 400 + (month <= 2);
    char text[48], *at = text;  /* the digits written directly (snprintf: ~300 ns each) */
    put_digits(&at, year, 4);
    *at++ = '-';
    put_digits(&at, month, 2);
    *at++ = '-';
    put_digits(&at, day, 2);
    *at++ = ' ';
    put_digits(&at, rest / 3600, 2);
    *at++ = ':';
    put_digits(&at, rest % 3600 / 60, 2);
    *at++ = ':';
    put_digits(&at, rest % 60, 2);
    if (fraction % 1000) {
        *at++ = '.';
        put_digits(&at, fraction, 9);
    } else if (fraction) {
        *at++ = '.';
        put_digits(&at, fraction / 1000, 6);
    }
    memcpy(at, "+00:00", 6);
    at += 6;
    Py_ssize_t size = at - text;
    return PyUnicode_FromStringAndSize(text, size);
}

static PyObject *stamp_texts(PyObject *self, PyObject *args) {
    PyObject *times;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &times)) return NULL;
    Py_ssize_t count = PyList_GET_SIZE(times);
    PyObject *out = PyList_New(count);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *time = PyList_GET_ITEM(times, i), *text;
        if (time == Py_None) {
            text = PyUnicode_New(0, 127);
        } else {
            int overflow = 0;
            long long nanos = PyLong_CheckExact(time)
                                  ? PyLong_AsLongLongAndOverflow(time, &overflow) : 0;
            if (!PyLong_CheckExact(time) || overflow) {  /* the pure path writes it */
                Py_DECREF(out);
                Py_RETURN_NONE;
            }
            if (nanos == -1 && PyErr_Occurred()) {
                Py_DECREF(out);
                return NULL;
            }
            text = stamp_text(nanos);
        }
        if (text == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, text);
    }
    return out;
}

static PyMethodDef methods[] = {
    {"stamp_texts", stamp_texts, METH_VARARGS,
     "span_rows._stamp_text of each int (\"\" for None); or None."},
    {"digests", digests, METH_VARARGS,
     "hashlib.blake2b(key.encode(), digest_size=size).hexdigest() of each key; or None. "
     "lanes=False: one key at a time, never four in AVX2's lanes."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_spanids", NULL, -1, methods};

PyMODINIT_FUNC PyInit__spanids(void) {
#ifdef FOUR_LANES
    __builtin_cpu_init();
    has_avx2 = __builtin_cpu_supports("avx2");
#endif
    return PyModule_Create(&module);
}
