/* Base64 decoding: tables, 32 digits a step with AVX2, and the b64_decode function.
 *
 * Part of the _cellscan module, included once by ../_cellscan.c (one translation unit:
 * every function stays static and inlinable); see that file for the module's functions. */

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

#ifdef HAVE_AVX2_PATH

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
