/* Marks (short byte strings) searched in spans of a document: span_marks and run_marks.
 *
 * Part of the _cellscan module, included once by ../_cellscan.c (one translation unit:
 * every function stays static and inlinable); see that file for the module's functions. */

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
