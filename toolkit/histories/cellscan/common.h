/* What every part of the payload-cell scanner shares: headers, JSON whitespace, base64
 * digits, and the CPU features found at import (set by PyInit__cellscan).
 *
 * Part of the _cellscan module, included once by ../_cellscan.c (one translation unit:
 * every function stays static and inlinable); see that file for the module's functions. */

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

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_AVX2_PATH 1
static int use_avx2 = 0;  /* set at import where the CPU has AVX2 */
static int use_clmul = 0; /* set at import where the CPU has AVX2 and carry-less multiplication */
#endif
