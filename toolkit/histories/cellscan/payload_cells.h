/* Payload cells of the common shape: their data spans and encodings (payload_spans) and
 * their decoded data (plain_payloads).
 *
 * Part of the _cellscan module, included once by ../_cellscan.c (one translation unit:
 * every function stays static and inlinable); see that file for the module's functions. */

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
