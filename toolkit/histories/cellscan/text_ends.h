/* The common ends of two buffers, and budget._resent over consecutive model inputs.
 *
 * Part of the _cellscan module, included once by ../_cellscan.c (one translation unit:
 * every function stays static and inlinable); see that file for the module's functions. */

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

static PyObject *common_prefix(PyObject *self, PyObject *args) { return common_end(args, 0); }
static PyObject *common_suffix(PyObject *self, PyObject *args) { return common_end(args, 1); }
