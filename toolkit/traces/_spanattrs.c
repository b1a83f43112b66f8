/*
 * The spans' attribute dicts made in C, all the spans of one kind in one call.
 *
 * The compiled twins of the common cases of toolkit.traces.span_columns (an activity span's
 * attributes, every field set; a turn's) and of span_rows.RunSpans._attributes (a GenAI
 * span's), which stay the references: setup.py marks this optional, and
 * tests/test_span_attributes.py holds both to the same dicts, key order and value objects
 * included (the OTLP bytes follow the order). Each function returns (attributes, missing): a
 * span this does not make exactly as the pure path would (a value of another type, a key of the
 * base among its own, ...) is None in the list and its index is in missing, for the caller to
 * make in Python.
 *
 * Every dict a call makes for a run starts as a copy of one template per run: the run's base
 * copied, then the keys set in the pure path's order with None as their values (a base key
 * set again stays in its place, as it does there). A copy of a dict with no deleted entry is a
 * clone of its table (no insertion, no resize), and setting a key the table has replaces its
 * value in place: the span's dict holds the pure path's keys in the pure path's order.
 *
 * column_attributes(bases, codes, head, event_ids, keys, spec, columns)
 *     -> (list[dict | None], list[int])
 *   The span i: bases[codes[i]] copied, then head[0] = head[1] (the kind's key and value),
 *   head[2] = event_ids[i] (an int), then keys[j] = columns[j][i] for each j, where that value
 *   is as spec[j] says: 's' a str, 'i' an int (no bool), 'f' a float that is no NaN, 'o'
 *   anything (set as it is). A value that is not: the span is missing.
 *
 * merged_attributes(bases, codes, head, kinds, event_ids, dicts, defaults, skip, fixed)
 *     -> (list[dict | None], list[int])
 *   RunSpans._attributes of the span i, whose kind is kinds[i] (head: the kind's key, the event
 *   id's key), of its own attributes: dicts[i] copied, skip (a str, or None) popped from the
 *   copy, then each (key, value) of defaults[i] (a tuple of pairs) set where the copy has no
 *   such key (dict.setdefault) -- none of them made: bases[codes[i]] copied, the kind, the
 *   event id (an int), then each item of dicts[i] but skip, then each default set, each value
 *   as span_rows._set sets it: a str, int, bool, list or dict set, a float set unless NaN,
 *   None left out. Missing: one of those keys in fixed[codes[i]] (it would replace the base's
 *   in its place, or drop it), a value of another type, a dict that is no dict, a key of a
 *   dict that is no str, defaults' keys that are no str or not distinct.
 *
 * activity_columns(codes, event_ids, turns, outcomes, scheduled, started, closed, attempts,
 *                  types, prefixes, first_times, last_times, roots, turn_spans, status_of, words)
 *     -> tuple of lists, or None
 *   The columns of the activity spans that depend on each activity alone (the compiled twin of
 *   span_columns.activity_columns_python): status, the indices whose status is ERROR, the raw
 *   start, start, end, attempt, outcome text, parent, name, id key, the indices retried
 *   (attempt above 1). words: ("UNSET", "ERROR", "open", "RunActivity:", "\x1factivity").
 *   None (no error) where a value is not as the common case holds it (a code that is no run's
 *   int, an attempt that is no exact int or None): the pure path makes the columns then.
 *
 * queue_ms(queues, slow) -> list | None
 *   span_columns.queue_milliseconds of queue times in nanoseconds, in one pass (slow: the
 *   pure rounding of one, for those near a half or large); None where one is no int64 or None.
 *
 * genai_spans(codes, event_ids, turns, roles, types, sources, histories, prefixes, models,
 *             words) -> tuple | None
 *   span_columns.genai_spans_python's walk (the GenAI spans of the activities in order, a model
 *   call naming the tool calls after it in its run, and each turn's agent), words its texts
 *   (span_columns._GENAI_WORDS). None (no error) where models is no dict or holds a value
 *   that is no dict, or a code is no run's int: the pure path walks them then.
 *
 * turn_ends(codes, turns, scheduled, started, closed) -> dict
 *   span_columns.turn_ends_python, step by step (the same comparisons in the same order).
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

/* The run's base, or NULL (no error) where codes[i] names no dict of bases. */
static PyObject *base_of(PyObject *bases, PyObject *code, Py_ssize_t *at) {
    if (!PyLong_CheckExact(code)) return NULL;
    Py_ssize_t index = PyLong_AsSsize_t(code);
    if (index == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return NULL;
    }
    if (index < 0 || index >= PyList_GET_SIZE(bases)) return NULL;
    PyObject *base = PyList_GET_ITEM(bases, index);
    if (!PyDict_CheckExact(base)) return NULL;
    *at = index;
    return base;
}

/* The templates of a call, one per run, made when first needed. */
typedef struct {
    PyObject **made;
    Py_ssize_t count;
} Templates;

static int templates_init(Templates *t, Py_ssize_t count) {
    t->count = count;
    t->made = PyMem_Calloc(count ? count : 1, sizeof(PyObject *));
    if (t->made == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void templates_free(Templates *t) {
    for (Py_ssize_t i = 0; i < t->count; i++) Py_XDECREF(t->made[i]);
    PyMem_Free(t->made);
}

/* base copied, then each key of keys (a tuple) set to None, in order. */
static PyObject *template_of(PyObject *base, PyObject *keys) {
    PyObject *made = PyDict_Copy(base);
    if (made == NULL) return NULL;
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(keys); j++) {
        if (PyDict_SetItem(made, PyTuple_GET_ITEM(keys, j), Py_None) < 0) {
            Py_DECREF(made);
            return NULL;
        }
    }
    return made;
}

/* A copy of the run's template (made first where it is not yet). */
static PyObject *from_template(Templates *t, Py_ssize_t at, PyObject *base, PyObject *keys) {
    if (t->made[at] == NULL) {
        t->made[at] = template_of(base, keys);
        if (t->made[at] == NULL) return NULL;
    }
    return PyDict_Copy(t->made[at]);
}

/* The index of a span the pure path makes, noted; its place None. */
static int note(PyObject *out, PyObject *missing, Py_ssize_t index) {
    Py_INCREF(Py_None);
    PyList_SET_ITEM(out, index, Py_None);
    PyObject *number = PyLong_FromSsize_t(index);
    if (number == NULL) return -1;
    int failed = PyList_Append(missing, number);
    Py_DECREF(number);
    return failed;
}

static int one_per_span(PyObject *list, Py_ssize_t count, const char *what) {
    if (PyList_CheckExact(list) && PyList_GET_SIZE(list) == count) return 1;
    PyErr_Format(PyExc_ValueError, "%s: a list of one per span", what);
    return 0;
}

static int str_keys(PyObject *keys) {
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(keys); j++) {
        if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(keys, j))) {
            PyErr_SetString(PyExc_TypeError, "keys: str");
            return 0;
        }
    }
    return 1;
}

/* (out, missing), both handed over. */
static PyObject *done(PyObject *out, PyObject *missing) {
    PyObject *pair = PyTuple_Pack(2, out, missing);
    Py_DECREF(out);
    Py_DECREF(missing);
    return pair;
}

static int plain_value(char kind, PyObject *value) {
    switch (kind) {
        case 's': return PyUnicode_CheckExact(value);
        case 'i': return PyLong_CheckExact(value);
        case 'f': return PyFloat_CheckExact(value) && !isnan(PyFloat_AS_DOUBLE(value));
        case 'o': return 1;
        default: return 0;
    }
}

static PyObject *column_attributes(PyObject *self, PyObject *args) {
    PyObject *bases, *codes, *head, *event_ids, *keys, *columns;
    const char *spec;
    Py_ssize_t spec_size;
    if (!PyArg_ParseTuple(args, "O!O!O!OO!s#O!", &PyList_Type, &bases, &PyList_Type, &codes,
                          &PyTuple_Type, &head, &event_ids, &PyTuple_Type, &keys, &spec,
                          &spec_size, &PyList_Type, &columns))
        return NULL;
    Py_ssize_t count = PyList_GET_SIZE(codes), width = PyTuple_GET_SIZE(keys);
    if (PyTuple_GET_SIZE(head) != 3 || spec_size != width || PyList_GET_SIZE(columns) != width) {
        PyErr_SetString(PyExc_ValueError,
                        "column_attributes: a head of 3, one spec and one column per key");
        return NULL;
    }
    if (!one_per_span(event_ids, count, "event_ids") || !str_keys(keys)) return NULL;
    for (Py_ssize_t j = 0; j < width; j++) {
        if (!one_per_span(PyList_GET_ITEM(columns, j), count, "columns")) return NULL;
        if (strchr("sifo", spec[j]) == NULL) {
            PyErr_SetString(PyExc_ValueError, "spec: one of s, i, f, o per key");
            return NULL;
        }
    }
    PyObject *kind_key = PyTuple_GET_ITEM(head, 0), *kind = PyTuple_GET_ITEM(head, 1);
    PyObject *event_key = PyTuple_GET_ITEM(head, 2);
    if (!PyUnicode_CheckExact(kind_key) || !PyUnicode_CheckExact(event_key)) {
        PyErr_SetString(PyExc_TypeError, "head: str keys");
        return NULL;
    }
    /* Every key the template holds, in the pure path's order: kind, event id, the columns'. */
    PyObject *all = PyTuple_New(width + 2);
    if (all == NULL) return NULL;
    Py_INCREF(kind_key);
    PyTuple_SET_ITEM(all, 0, kind_key);
    Py_INCREF(event_key);
    PyTuple_SET_ITEM(all, 1, event_key);
    for (Py_ssize_t j = 0; j < width; j++) {
        Py_INCREF(PyTuple_GET_ITEM(keys, j));
        PyTuple_SET_ITEM(all, j + 2, PyTuple_GET_ITEM(keys, j));
    }
    Templates templates;
    PyObject *out = NULL, *missing = NULL;
    PyObject **cells = NULL;  /* the span's values, one per key */
    if (templates_init(&templates, PyList_GET_SIZE(bases)) < 0) {
        Py_DECREF(all);
        return NULL;
    }
    out = PyList_New(count);
    missing = PyList_New(0);
    cells = PyMem_Malloc((width ? width : 1) * sizeof(PyObject *));
    if (out == NULL || missing == NULL || cells == NULL) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_ssize_t at = 0;
        PyObject *base = base_of(bases, PyList_GET_ITEM(codes, i), &at);
        PyObject *event_id = PyList_GET_ITEM(event_ids, i);
        /* The values checked first: a span the pure path makes costs no copy. */
        int plain = base != NULL && PyLong_CheckExact(event_id);
        for (Py_ssize_t j = 0; j < width && plain; j++) {
            cells[j] = PyList_GET_ITEM(PyList_GET_ITEM(columns, j), i);
            plain = plain_value(spec[j], cells[j]);
        }
        if (!plain) {
            if (note(out, missing, i) < 0) goto fail;
            continue;
        }
        PyObject *attrs = from_template(&templates, at, base, all);
        if (attrs == NULL) goto fail;
        PyList_SET_ITEM(out, i, attrs);  /* the list owns it: freed with it on a failure */
        if (PyDict_SetItem(attrs, kind_key, kind) < 0 || PyDict_SetItem(attrs, event_key, event_id) < 0)
            goto fail;
        for (Py_ssize_t j = 0; j < width; j++) {
            if (PyDict_SetItem(attrs, PyTuple_GET_ITEM(keys, j), cells[j]) < 0) goto fail;
        }
    }
    PyMem_Free(cells);
    templates_free(&templates);
    Py_DECREF(all);
    return done(out, missing);
fail:
    PyMem_Free(cells);
    templates_free(&templates);
    Py_DECREF(all);
    Py_XDECREF(out);  /* a list's unset items are NULL, which its dealloc skips */
    Py_XDECREF(missing);
    return NULL;
}

/* 1: set, 0: left out, -1: only the pure path says (span_rows._set's common cases). */
static int settable(PyObject *value) {
    if (value == Py_None) return 0;
    if (PyUnicode_CheckExact(value) || PyLong_CheckExact(value) || PyBool_Check(value)) return 1;
    if (PyFloat_CheckExact(value)) return isnan(PyFloat_AS_DOUBLE(value)) ? 0 : 1;
    if (PyList_CheckExact(value) || PyDict_CheckExact(value)) return 1;  /* no .item() */
    return -1;
}

/* Whether key (a str) is skip (a str, or NULL: none), as dict.pop would find it. */
static int is_skip(PyObject *key, PyObject *skip) {
    return skip != NULL && (key == skip || PyUnicode_Compare(key, skip) == 0);
}

/* 1: the defaults (a tuple of pairs, distinct str keys) set as the pure path would (those own
 * lacks, none in fixed), 0: the pure path says, -1: an error. */
static int set_defaults(PyObject *attrs, PyObject *own, PyObject *defaults, PyObject *skip,
                        PyObject *fixed_keys) {
    if (!PyTuple_CheckExact(defaults)) return 0;
    Py_ssize_t size = PyTuple_GET_SIZE(defaults);
    for (Py_ssize_t j = 0; j < size; j++) {
        PyObject *pair = PyTuple_GET_ITEM(defaults, j);
        if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2
            || !PyUnicode_CheckExact(PyTuple_GET_ITEM(pair, 0)))
            return 0;
        PyObject *key = PyTuple_GET_ITEM(pair, 0);
        for (Py_ssize_t before = 0; before < j; before++) {  /* a key set twice: Python's */
            if (PyUnicode_Compare(PyTuple_GET_ITEM(PyTuple_GET_ITEM(defaults, before), 0), key) == 0)
                return 0;
        }
    }
    for (Py_ssize_t j = 0; j < size; j++) {
        PyObject *key = PyTuple_GET_ITEM(PyTuple_GET_ITEM(defaults, j), 0);
        PyObject *value = PyTuple_GET_ITEM(PyTuple_GET_ITEM(defaults, j), 1);
        if (!is_skip(key, skip)) {  /* a key own holds (even as None) keeps its value */
            int held = PyDict_Contains(own, key);
            if (held < 0) return -1;
            if (held) continue;
        }
        int found = PySet_Contains(fixed_keys, key);
        if (found < 0) return -1;
        int set = found ? -1 : settable(value);
        if (set < 0) return 0;
        if (set && PyDict_SetItem(attrs, key, value) < 0) return -1;
    }
    return 1;
}

static PyObject *merged_attributes(PyObject *self, PyObject *args) {
    PyObject *bases, *codes, *head, *kinds, *event_ids, *dicts, *defaults, *skip, *fixed;
    if (!PyArg_ParseTuple(args, "O!O!O!OOOOOO!", &PyList_Type, &bases, &PyList_Type, &codes,
                          &PyTuple_Type, &head, &kinds, &event_ids, &dicts, &defaults, &skip,
                          &PyList_Type, &fixed))
        return NULL;
    Py_ssize_t count = PyList_GET_SIZE(codes);
    if (!one_per_span(kinds, count, "kinds") || !one_per_span(event_ids, count, "event_ids")
        || !one_per_span(dicts, count, "dicts") || !one_per_span(defaults, count, "defaults"))
        return NULL;
    if (skip == Py_None) {
        skip = NULL;
    } else if (!PyUnicode_CheckExact(skip)) {
        PyErr_SetString(PyExc_TypeError, "skip: a str or None");
        return NULL;
    }
    if (PyTuple_GET_SIZE(head) != 2 || !str_keys(head)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "head: the kind's and the event id's keys");
        return NULL;
    }
    if (PyList_GET_SIZE(fixed) != PyList_GET_SIZE(bases)) {
        PyErr_SetString(PyExc_ValueError, "fixed: one per run");
        return NULL;
    }
    PyObject *kind_key = PyTuple_GET_ITEM(head, 0), *event_key = PyTuple_GET_ITEM(head, 1);
    Templates templates;
    if (templates_init(&templates, PyList_GET_SIZE(bases)) < 0) return NULL;
    PyObject *out = PyList_New(count), *missing = PyList_New(0);
    if (out == NULL || missing == NULL) goto fail;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *own = PyList_GET_ITEM(dicts, i), *key, *value;
        PyObject *event_id = PyList_GET_ITEM(event_ids, i);
        Py_ssize_t at = 0, step = 0;
        PyObject *base = base_of(bases, PyList_GET_ITEM(codes, i), &at);
        int plain = base != NULL && PyDict_CheckExact(own) && PyLong_CheckExact(event_id);
        PyObject *fixed_keys = plain ? PyList_GET_ITEM(fixed, at) : NULL;
        if (plain && !PyAnySet_CheckExact(fixed_keys)) plain = 0;
        PyObject *attrs = NULL;
        if (plain) {
            /* Made in one pass over its own items: one the pure path makes otherwise (rare)
             * drops the dict made so far. */
            attrs = from_template(&templates, at, base, head);
            if (attrs == NULL) goto fail;
            if (PyDict_SetItem(attrs, kind_key, PyList_GET_ITEM(kinds, i)) < 0
                || PyDict_SetItem(attrs, event_key, event_id) < 0) {
                Py_DECREF(attrs);
                goto fail;
            }
            while (PyDict_Next(own, &step, &key, &value)) {
                if (!PyUnicode_CheckExact(key)) {
                    plain = 0;
                    break;
                }
                if (is_skip(key, skip)) continue;
                int found = PySet_Contains(fixed_keys, key);
                int set = found ? -1 : settable(value);
                if (found < 0 || (set > 0 && PyDict_SetItem(attrs, key, value) < 0)) {
                    Py_DECREF(attrs);
                    goto fail;
                }
                if (set < 0) {
                    plain = 0;
                    break;
                }
            }
            if (plain) {
                int set = set_defaults(attrs, own, PyList_GET_ITEM(defaults, i), skip, fixed_keys);
                if (set < 0) {
                    Py_DECREF(attrs);
                    goto fail;
                }
                plain = set;
            }
        }
        if (!plain) {
            Py_XDECREF(attrs);
            if (note(out, missing, i) < 0) goto fail;
            continue;
        }
        PyList_SET_ITEM(out, i, attrs);
    }
    templates_free(&templates);
    return done(out, missing);
fail:
    templates_free(&templates);
    Py_XDECREF(out);
    Py_XDECREF(missing);
    return NULL;
}

static int append_index(PyObject *list, Py_ssize_t index) {
    PyObject *number = PyLong_FromSsize_t(index);
    if (number == NULL) return -1;
    int failed = PyList_Append(list, number);
    Py_DECREF(number);
    return failed;
}

/* status, errors, raw start, start, end, attempt, outcome text, parent, name, key, retried */
#define ACTIVITY_OUT 11

static PyObject *activity_columns(PyObject *self, PyObject *args) {
    PyObject *codes, *event_ids, *turns, *outcomes, *scheduled, *started, *closed, *attempts;
    PyObject *types, *prefixes, *first_times, *last_times, *roots, *turn_spans, *status_of;
    PyObject *words;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!O!O!O!O!O!O!O!O!O!O!", &PyList_Type, &codes,
                          &PyList_Type, &event_ids, &PyList_Type, &turns, &PyList_Type,
                          &outcomes, &PyList_Type, &scheduled, &PyList_Type, &started,
                          &PyList_Type, &closed, &PyList_Type, &attempts, &PyList_Type, &types,
                          &PyList_Type, &prefixes, &PyList_Type, &first_times, &PyList_Type,
                          &last_times, &PyList_Type, &roots, &PyDict_Type, &turn_spans,
                          &PyDict_Type, &status_of, &PyTuple_Type, &words))
        return NULL;
    Py_ssize_t count = PyList_GET_SIZE(codes), runs = PyList_GET_SIZE(prefixes);
    if (!one_per_span(event_ids, count, "event_ids") || !one_per_span(turns, count, "turns")
        || !one_per_span(outcomes, count, "outcomes") || !one_per_span(scheduled, count, "scheduled")
        || !one_per_span(started, count, "started") || !one_per_span(closed, count, "closed")
        || !one_per_span(attempts, count, "attempts") || !one_per_span(types, count, "types"))
        return NULL;
    if (PyList_GET_SIZE(first_times) != runs || PyList_GET_SIZE(last_times) != runs
        || PyList_GET_SIZE(roots) != runs) {
        PyErr_SetString(PyExc_ValueError,
                        "activity_columns: first_times, last_times, roots: one per run");
        return NULL;
    }
    if (PyTuple_GET_SIZE(words) != 5 || !str_keys(words)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "words: five str");
        return NULL;
    }
    PyObject *unset = PyTuple_GET_ITEM(words, 0), *error = PyTuple_GET_ITEM(words, 1);
    PyObject *open = PyTuple_GET_ITEM(words, 2), *name_head = PyTuple_GET_ITEM(words, 3);
    PyObject *key_tail = PyTuple_GET_ITEM(words, 4);
    /* Checked first: a value the common case does not hold leaves every column to Python. */
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *code = PyList_GET_ITEM(codes, i), *attempt = PyList_GET_ITEM(attempts, i);
        if (!PyLong_CheckExact(code)) Py_RETURN_NONE;
        Py_ssize_t at = PyLong_AsSsize_t(code);
        if (at == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        if (at < 0 || at >= runs || (attempt != Py_None && !PyLong_CheckExact(attempt)))
            Py_RETURN_NONE;
    }
    PyObject *out[ACTIVITY_OUT] = {NULL};
    for (int k = 0; k < ACTIVITY_OUT; k++) {
        /* a list's NULL items are skipped when it is freed half made */
        out[k] = PyList_New((k == 1 || k == 10) ? 0 : count);
        if (out[k] == NULL) goto fail;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *code = PyList_GET_ITEM(codes, i);
        Py_ssize_t at = PyLong_AsSsize_t(code);
        PyObject *outcome = PyList_GET_ITEM(outcomes, i);
        /* the status: _ACTIVITY_STATUS.get(outcome, "UNSET") of a str (a subclass's by its
         * own hash and equality, as dict.get finds it), else "UNSET" */
        int text = PyUnicode_Check(outcome);
        PyObject *status = text ? PyDict_GetItemWithError(status_of, outcome) : NULL;
        if (status == NULL) {
            if (PyErr_Occurred()) goto fail;
            status = unset;
        }
        Py_INCREF(status);
        PyList_SET_ITEM(out[0], i, status);
        int is_error = PyObject_RichCompareBool(status, error, Py_EQ);
        if (is_error < 0 || (is_error && append_index(out[1], i) < 0)) goto fail;
        /* the times: a missing start is the run's first time, a missing end its last (else
         * the start), an end before the start is the start */
        PyObject *s = PyList_GET_ITEM(started, i);
        if (s == Py_None) s = PyList_GET_ITEM(scheduled, i);
        PyObject *e = PyList_GET_ITEM(closed, i);
        PyObject *last = PyList_GET_ITEM(last_times, at);
        if (e == Py_None) e = last;
        Py_INCREF(s);
        PyList_SET_ITEM(out[2], i, s);
        if (s == Py_None) s = PyList_GET_ITEM(first_times, at);
        if (e == Py_None) e = last != Py_None ? last : s;
        if (s != Py_None) {
            int before = PyObject_RichCompareBool(e, s, Py_LT);
            if (before < 0) goto fail;
            if (before) e = s;
        }
        Py_INCREF(s);
        PyList_SET_ITEM(out[3], i, s);
        Py_INCREF(e);
        PyList_SET_ITEM(out[4], i, e);
        PyObject *attempt = PyList_GET_ITEM(attempts, i);
        Py_INCREF(attempt);
        PyList_SET_ITEM(out[5], i, attempt);
        if (attempt != Py_None) {  /* retried: an attempt above 1 */
            int overflow = 0;
            long long number = PyLong_AsLongLongAndOverflow(attempt, &overflow);
            if (number == -1 && PyErr_Occurred()) goto fail;
            if ((overflow > 0 || (overflow == 0 && number > 1)) && append_index(out[10], i) < 0)
                goto fail;
        }
        PyObject *outcome_text = text ? outcome : open;
        Py_INCREF(outcome_text);
        PyList_SET_ITEM(out[6], i, outcome_text);
        /* the parent: the turn's span, else the run's */
        PyObject *key = PyTuple_Pack(2, code, PyList_GET_ITEM(turns, i));
        if (key == NULL) goto fail;
        PyObject *parent = PyDict_GetItemWithError(turn_spans, key);
        Py_DECREF(key);
        if (parent == NULL) {
            if (PyErr_Occurred()) goto fail;
            parent = PyList_GET_ITEM(roots, at);
        }
        Py_INCREF(parent);
        PyList_SET_ITEM(out[7], i, parent);
        /* f"RunActivity:{type}": each value formatted as an f-string formats it */
        PyObject *kind = PyObject_Format(PyList_GET_ITEM(types, i), NULL);
        if (kind == NULL) goto fail;
        PyObject *name = PyUnicode_Concat(name_head, kind);
        Py_DECREF(kind);
        if (name == NULL) goto fail;
        PyList_SET_ITEM(out[8], i, name);
        /* the id's key: f"{prefix}{event_id}\x1factivity" */
        PyObject *prefix = PyObject_Format(PyList_GET_ITEM(prefixes, at), NULL);
        if (prefix == NULL) goto fail;
        PyObject *digits = PyObject_Format(PyList_GET_ITEM(event_ids, i), NULL);
        if (digits == NULL) {
            Py_DECREF(prefix);
            goto fail;
        }
        PyObject *head = PyUnicode_Concat(prefix, digits);
        Py_DECREF(prefix);
        Py_DECREF(digits);
        if (head == NULL) goto fail;
        PyObject *key_text = PyUnicode_Concat(head, key_tail);
        Py_DECREF(head);
        if (key_text == NULL) goto fail;
        PyList_SET_ITEM(out[9], i, key_text);
    }
    PyObject *result = PyTuple_New(ACTIVITY_OUT);
    if (result == NULL) goto fail;
    for (int k = 0; k < ACTIVITY_OUT; k++) PyTuple_SET_ITEM(result, k, out[k]);
    return result;
fail:
    for (int k = 0; k < ACTIVITY_OUT; k++) Py_XDECREF(out[k]);
    return NULL;
}

/* queue_ms(queues, slow) -> list | None: queue_milliseconds' arithmetic, fused (see its
 * docstring): each queue time in nanoseconds (an exact int within int64, or None) as
 * (whole + rest / 1e9) * 1000 (whole, rest: its floored divmod by 1e9), rounded to 3 places
 * by rint of it times 1000, over 1000, where that is Python's round; slow(q) otherwise (near
 * a half, or large). None where a queue time is none of those (the pure path then). */
static PyObject *queue_ms(PyObject *self, PyObject *args) {
    PyObject *queues, *slow;
    if (!PyArg_ParseTuple(args, "O!O", &PyList_Type, &queues, &slow)) return NULL;
    Py_ssize_t count = PyList_GET_SIZE(queues);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *q = PyList_GET_ITEM(queues, i);
        if (q == Py_None) continue;
        if (!PyLong_CheckExact(q)) Py_RETURN_NONE;
        int overflow = 0;
        long long value = PyLong_AsLongLongAndOverflow(q, &overflow);
        if (value == -1 && PyErr_Occurred()) return NULL;
        if (overflow) Py_RETURN_NONE;
    }
    PyObject *out = PyList_New(count);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *q = PyList_GET_ITEM(queues, i), *ms;
        if (q == Py_None) {
            Py_INCREF(Py_None);
            PyList_SET_ITEM(out, i, Py_None);
            continue;
        }
        long long value = PyLong_AsLongLong(q);
        long long whole = value / 1000000000LL, rest = value % 1000000000LL;
        if (rest < 0) {  /* floored, as Python's divmod */
            rest += 1000000000LL;
            whole -= 1;
        }
        /* numpy's steps, one at a time: the sum, the milliseconds, then times 1000 */
        volatile double sum = (double)whole + (double)rest / 1e9;
        volatile double milli = sum * 1000.0;
        volatile double scaled = milli * 1000.0;
        double slack = fabs(scaled - floor(scaled) - 0.5);
        if (fabs(scaled) < 2147483648.0 && slack > 0x1p-22) {
            ms = PyFloat_FromDouble(rint(scaled) / 1000.0);
        } else {
            ms = PyObject_CallOneArg(slow, q);
        }
        if (ms == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, ms);
    }
    return out;
}

/* f"{a}{b}{c}{d}" of up to four values (NULL: none), each formatted as an f-string formats it. */
static PyObject *joined(PyObject *a, PyObject *b, PyObject *c, PyObject *d) {
    PyObject *parts[4] = {a, b, c, d}, *texts[4] = {NULL};
    Py_ssize_t size = 0;
    PyObject *out = NULL;
    for (int k = 0; k < 4 && parts[k] != NULL; k++) {
        texts[k] = PyObject_Format(parts[k], NULL);
        if (texts[k] == NULL) goto done;
        size++;
    }
    {
        PyObject *empty = PyUnicode_New(0, 0);
        if (empty == NULL) goto done;
        PyObject *list = PyTuple_New(size);
        if (list == NULL) {
            Py_DECREF(empty);
            goto done;
        }
        for (Py_ssize_t k = 0; k < size; k++) {
            Py_INCREF(texts[k]);
            PyTuple_SET_ITEM(list, k, texts[k]);
        }
        out = PyUnicode_Join(empty, list);
        Py_DECREF(list);
        Py_DECREF(empty);
    }
done:
    for (int k = 0; k < 4; k++) Py_XDECREF(texts[k]);
    return out;
}

enum {
    W_AGENT, W_MODEL, W_TOOL_CALL, W_REQUESTED, W_REQUEST_MODEL, W_RESPONSE_MODEL, W_CHAT_HEAD,
    W_CHAT, W_CLIENT, W_CHAT_DEFAULTS, W_TOOL_HEAD, W_INTERNAL, W_TOOL_NAME, W_NAME,
    W_OPERATION, W_SEPARATOR, W_COUNT
};
/* at, names, kinds, roles, own attributes, defaults, id keys */
#define GENAI_OUT 7

static PyObject *genai_spans(PyObject *self, PyObject *args) {
    PyObject *codes, *event_ids, *turns, *roles, *types, *sources, *histories, *prefixes;
    PyObject *models, *words;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!O!O!OO!", &PyList_Type, &codes, &PyList_Type,
                          &event_ids, &PyList_Type, &turns, &PyList_Type, &roles, &PyList_Type,
                          &types, &PyList_Type, &sources, &PyList_Type, &histories,
                          &PyList_Type, &prefixes, &models, &PyTuple_Type, &words))
        return NULL;
    Py_ssize_t count = PyList_GET_SIZE(codes), runs = PyList_GET_SIZE(prefixes);
    if (!one_per_span(event_ids, count, "event_ids") || !one_per_span(turns, count, "turns")
        || !one_per_span(roles, count, "roles") || !one_per_span(types, count, "types"))
        return NULL;
    if (PyList_GET_SIZE(sources) != runs || PyList_GET_SIZE(histories) != runs) {
        PyErr_SetString(PyExc_ValueError, "genai_spans: sources, histories: one per run");
        return NULL;
    }
    if (PyTuple_GET_SIZE(words) != W_COUNT) {
        PyErr_SetString(PyExc_ValueError, "genai_spans: the words");
        return NULL;
    }
    if (!PyDict_CheckExact(models)) Py_RETURN_NONE;  /* another mapping's get: Python's */
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *code = PyList_GET_ITEM(codes, i);
        if (!PyLong_CheckExact(code)) Py_RETURN_NONE;
        Py_ssize_t at = PyLong_AsSsize_t(code);
        if (at == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        if (at < 0 || at >= runs) Py_RETURN_NONE;
    }
#define WORD(k) PyTuple_GET_ITEM(words, k)
    PyObject *out[GENAI_OUT] = {NULL}, *agents = PyDict_New(), *pending = NULL;
    PyObject *result = NULL;
    Py_ssize_t next = 0, pending_code = -1;  /* the run's requested names, the next one's place */
    int fallback = 0;
    if (agents == NULL) return NULL;
    for (int k = 0; k < GENAI_OUT; k++) {
        out[k] = PyList_New(0);
        if (out[k] == NULL) goto fail;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *code = PyList_GET_ITEM(codes, i), *event_id = PyList_GET_ITEM(event_ids, i);
        PyObject *turn = PyList_GET_ITEM(turns, i), *role = PyList_GET_ITEM(roles, i);
        Py_ssize_t at = PyLong_AsSsize_t(code);
        PyObject *key = PyTuple_Pack(3, PyList_GET_ITEM(sources, at),
                                     PyList_GET_ITEM(histories, at), event_id);
        if (key == NULL) goto fail;
        PyObject *found = PyDict_GetItemWithError(models, key);  /* borrowed */
        Py_DECREF(key);
        if (found == NULL && PyErr_Occurred()) goto fail;
        if (found == Py_None) found = NULL;
        if (found != NULL && !PyDict_CheckExact(found)) {
            fallback = 1;  /* another mapping's get and truth: Python's */
            goto fail;
        }
        if (found != NULL) {
            PyObject *pair = PyTuple_Pack(2, code, turn);
            if (pair == NULL) goto fail;
            int held = PyDict_Contains(agents, pair);
            PyObject *agent = held == 0 ? PyDict_GetItemWithError(found, WORD(W_AGENT)) : NULL;
            int set = held == 0 && agent != NULL ? PyObject_IsTrue(agent) : 0;
            if (held < 0 || (held == 0 && agent == NULL && PyErr_Occurred()) || set < 0
                || (set && PyDict_SetItem(agents, pair, agent) < 0)) {
                Py_DECREF(pair);
                goto fail;
            }
            Py_DECREF(pair);
        }
        int model = PyObject_RichCompareBool(role, WORD(W_MODEL), Py_EQ);
        if (model < 0) goto fail;
        if (!model) {
            int tool = PyObject_RichCompareBool(role, WORD(W_TOOL_CALL), Py_EQ);
            if (tool < 0) goto fail;
            if (!tool) continue;
        }
        if (at != pending_code) {  /* a new run: no tool requested yet */
            Py_CLEAR(pending);
            next = 0;
            pending_code = at;
        }
        /* the own attributes: the model's, else an empty dict of the span's own */
        PyObject *own = found != NULL && PyDict_GET_SIZE(found) ? found : NULL;
        if (own != NULL) {
            Py_INCREF(own);
        } else {
            own = PyDict_New();
            if (own == NULL) goto fail;
        }
        PyObject *name = NULL, *kind, *defaults = NULL;
        if (model) {
            PyObject *requested = PyDict_GetItemWithError(own, WORD(W_REQUESTED));
            if (requested == NULL && PyErr_Occurred()) goto fail_own;
            int any = requested != NULL ? PyObject_IsTrue(requested) : 0;
            if (any < 0) goto fail_own;
            Py_CLEAR(pending);
            next = 0;
            pending = PyList_New(0);
            if (pending == NULL) goto fail_own;
            if (any) {  /* [str(name) for name in requested] */
                PyObject *names = PyObject_GetIter(requested), *item;
                if (names == NULL) goto fail_own;
                while ((item = PyIter_Next(names)) != NULL) {
                    PyObject *text = PyObject_Str(item);
                    Py_DECREF(item);
                    if (text == NULL || PyList_Append(pending, text) < 0) {
                        Py_XDECREF(text);
                        Py_DECREF(names);
                        goto fail_own;
                    }
                    Py_DECREF(text);
                }
                Py_DECREF(names);
                if (PyErr_Occurred()) goto fail_own;
            }
            /* own.get("gen_ai.request.model") or own.get("gen_ai.response.model") */
            PyObject *chosen = PyDict_GetItemWithError(own, WORD(W_REQUEST_MODEL));
            if (chosen == NULL && PyErr_Occurred()) goto fail_own;
            int truth = chosen != NULL ? PyObject_IsTrue(chosen) : 0;
            if (truth < 0) goto fail_own;
            if (!truth) {
                chosen = PyDict_GetItemWithError(own, WORD(W_RESPONSE_MODEL));
                if (chosen == NULL && PyErr_Occurred()) goto fail_own;
                truth = chosen != NULL ? PyObject_IsTrue(chosen) : 0;
                if (truth < 0) goto fail_own;
            }
            if (truth) {
                name = joined(WORD(W_CHAT_HEAD), chosen, NULL, NULL);
                if (name == NULL) goto fail_own;
            } else {
                name = WORD(W_CHAT);
                Py_INCREF(name);
            }
            kind = WORD(W_CLIENT);
            defaults = WORD(W_CHAT_DEFAULTS);
            Py_INCREF(defaults);
        } else {
            /* the run's next requested name while any remain (a non-empty one), else the
             * activity's type where it is a str, else None */
            PyObject *tool = NULL;
            if (pending != NULL && next < PyList_GET_SIZE(pending)) {
                tool = PyList_GET_ITEM(pending, next++);
                if (PyUnicode_GET_LENGTH(tool) == 0) tool = NULL;
            }
            if (tool == NULL) {
                tool = PyList_GET_ITEM(types, i);
                if (!PyUnicode_Check(tool)) tool = Py_None;
            }
            name = joined(WORD(W_TOOL_HEAD), tool, NULL, NULL);
            if (name == NULL) goto fail_own;
            kind = WORD(W_INTERNAL);
            PyObject *first = PyTuple_Pack(2, WORD(W_TOOL_NAME), tool);
            PyObject *second = PyTuple_Pack(2, WORD(W_NAME), tool);
            if (first != NULL && second != NULL)
                defaults = PyTuple_Pack(3, first, second, WORD(W_OPERATION));
            Py_XDECREF(first);
            Py_XDECREF(second);
            if (defaults == NULL) goto fail_name;
        }
        PyObject *id_key = joined(PyList_GET_ITEM(prefixes, at), event_id, WORD(W_SEPARATOR), role);
        if (id_key == NULL) goto fail_defaults;
        PyObject *index = PyLong_FromSsize_t(i);
        PyObject *row[GENAI_OUT] = {index, name, kind, role, own, defaults, id_key};
        int failed = index == NULL;
        for (int k = 0; k < GENAI_OUT && !failed; k++) failed = PyList_Append(out[k], row[k]) < 0;
        Py_XDECREF(index);
        Py_DECREF(id_key);
        Py_DECREF(defaults);
        Py_DECREF(name);
        Py_DECREF(own);
        if (failed) goto fail;
        continue;
    fail_defaults:
        Py_DECREF(defaults);
    fail_name:
        Py_DECREF(name);
    fail_own:
        Py_DECREF(own);
        goto fail;
    }
#undef WORD
    result = PyTuple_New(GENAI_OUT + 1);
    if (result == NULL) goto fail;
    for (int k = 0; k < GENAI_OUT; k++) PyTuple_SET_ITEM(result, k, out[k]);
    PyTuple_SET_ITEM(result, GENAI_OUT, agents);
    Py_XDECREF(pending);
    return result;
fail:
    for (int k = 0; k < GENAI_OUT; k++) Py_XDECREF(out[k]);
    Py_DECREF(agents);
    Py_XDECREF(pending);
    if (fallback) Py_RETURN_NONE;
    return NULL;
}

/* Python's `a == b` (no identity shortcut) and `a > b`, as truth values; -1 on an error. */
static int equal(PyObject *a, PyObject *b) {
    PyObject *result = PyObject_RichCompare(a, b, Py_EQ);
    if (result == NULL) return -1;
    int truth = PyObject_IsTrue(result);
    Py_DECREF(result);
    return truth;
}

/* ends[(code, turn)] = held unless ends holds a value as large (turn_ends_python's step). */
static int keep_latest(PyObject *ends, PyObject *code, PyObject *turn, PyObject *held) {
    PyObject *key = PyTuple_Pack(2, code, turn);
    if (key == NULL) return -1;
    PyObject *before = PyDict_GetItemWithError(ends, key);
    int set = before == NULL || before == Py_None;
    if (before == NULL && PyErr_Occurred()) set = -1;
    if (set == 0) set = PyObject_RichCompareBool(held, before, Py_GT);
    int failed = set < 0 || (set && PyDict_SetItem(ends, key, held) < 0);
    Py_DECREF(key);
    return failed ? -1 : 0;
}

/* The later of latest and value where value is set (latest may be NULL: none yet); NULL with an
 * error set where they do not compare. */
static PyObject *later(PyObject *latest, PyObject *value, int *failed) {
    if (value == Py_None) return latest;
    if (latest == Py_None) return value;
    int greater = PyObject_RichCompareBool(value, latest, Py_GT);
    if (greater < 0) *failed = 1;
    return greater > 0 ? value : latest;
}

static PyObject *turn_ends(PyObject *self, PyObject *args) {
    PyObject *codes, *turns, *scheduled, *started, *closed;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!", &PyList_Type, &codes, &PyList_Type, &turns,
                          &PyList_Type, &scheduled, &PyList_Type, &started, &PyList_Type,
                          &closed))
        return NULL;
    Py_ssize_t count = PyList_GET_SIZE(codes);
    if (!one_per_span(turns, count, "turns") || !one_per_span(scheduled, count, "scheduled")
        || !one_per_span(started, count, "started") || !one_per_span(closed, count, "closed"))
        return NULL;
    PyObject *ends = PyDict_New(), *held_code = PyLong_FromLong(-1);
    PyObject *held_turn = Py_None, *held = Py_None;  /* borrowed from the lists */
    if (ends == NULL || held_code == NULL) goto fail;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *code = PyList_GET_ITEM(codes, i), *turn = PyList_GET_ITEM(turns, i);
        int failed = 0;
        PyObject *latest = PyList_GET_ITEM(closed, i);
        latest = later(latest, PyList_GET_ITEM(scheduled, i), &failed);
        if (!failed) latest = later(latest, PyList_GET_ITEM(started, i), &failed);
        if (failed) goto fail;
        if (latest == Py_None) continue;
        int same = equal(code, held_code);
        if (same > 0) same = equal(turn, held_turn);
        if (same < 0) goto fail;
        if (same) {
            int greater = PyObject_RichCompareBool(latest, held, Py_GT);
            if (greater < 0) goto fail;
            if (greater) held = latest;
            continue;
        }
        if (held != Py_None && keep_latest(ends, held_code, held_turn, held) < 0) goto fail;
        Py_INCREF(code);
        Py_SETREF(held_code, code);
        held_turn = turn;
        held = latest;
    }
    if (held != Py_None && keep_latest(ends, held_code, held_turn, held) < 0) goto fail;
    Py_DECREF(held_code);
    return ends;
fail:
    Py_XDECREF(ends);
    Py_XDECREF(held_code);
    return NULL;
}

static PyMethodDef methods[] = {
    {"column_attributes", column_attributes, METH_VARARGS,
     "Each span's attributes from its run's base, its kind and event id and columns of its "
     "own; None where the pure path makes them (their indices: the second list)."},
    {"merged_attributes", merged_attributes, METH_VARARGS,
     "RunSpans._attributes of each span; None where the pure path makes them (their indices: "
     "the second list)."},
    {"activity_columns", activity_columns, METH_VARARGS,
     "The activity spans' columns that depend on each activity alone; None where the pure "
     "path makes them."},
    {"queue_ms", queue_ms, METH_VARARGS,
     "queue_milliseconds of queue times in nanoseconds; None where the pure path says."},
    {"genai_spans", genai_spans, METH_VARARGS,
     "The GenAI spans of the activities, in order (span_columns.genai_spans_python); None "
     "where the pure path says."},
    {"turn_ends", turn_ends, METH_VARARGS,
     "Each (run code, turn)'s latest time of its activities (span_columns.turn_ends_python)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_spanattrs", NULL, -1, methods};

PyMODINIT_FUNC PyInit__spanattrs(void) { return PyModule_Create(&module); }
