/* Members of a JSON object read without decoding it: key_value, and summary_data (an
 * event's usual activity summary).
 *
 * Part of the _cellscan module, included once by ../_cellscan.c (one translation unit:
 * every function stays static and inlinable); see that file for the module's functions. */

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
