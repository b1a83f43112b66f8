/* The token ledger's partial decode of model calls' payload data (toolkit.agents.model_cells).
 *
 * partial_values(datas, read_keys, threshold, loads) -> list
 *
 *   Per data (bytes, or None): its JSON value as orjson.loads makes it, except that a member
 *   of an object whose key is not in the set `read_keys` and whose raw JSON (an object, array
 *   or string) is longer than `threshold` bytes is not decoded: a stand-in takes its place
 *   (UnreadObject for an object, Unread for an array or a string). None for None. Where the
 *   check below is not sure that orjson accepts the whole data exactly as this decoder reads
 *   it, the data itself (bytes, never a JSON value) is given back: the caller decodes it as
 *   before.
 *
 *   "Sure" is conservative (anything else is "unsure"): UTF-8 valid (no surrogates, no
 *   overlong forms, nothing past U+10FFFF), no control character in a string, escapes among
 *   orjson's (\uXXXX surrogates only as a high-low pair), numbers of JSON's form with at most
 *   18 integer digits, 30 fraction digits and a 2-digit exponent (no infinity, no big int
 *   turned float), nesting at most 500 deep (orjson's limit is 1024), no duplicate key in an
 *   object decoded, no trailing comma, only JSON whitespace around the value.
 *
 *   A long member left unread whose very bytes were checked before is stepped over by one
 *   memcmp (the calls of an agent send the same tools and config each time: see skip_member).
 *
 *   Values decoded here are orjson's: strings without escapes are the UTF-8 text itself, ints
 *   of at most 18 digits exact, true/false/null the singletons; anything else (a string with
 *   escapes, a float, an exponent) is decoded by `loads` (orjson.loads) from its own text.
 *   Objects are dicts of their keys in order (duplicates are unsure: nothing to order), arrays
 *   lists.
 *
 * A stand-in stands for a value that is no null (null is 4 bytes: never left unread). Every
 * use of one raises NeedFull(key) -- attribute lookups (__class__ included, so isinstance()
 * against anything but its own type raises), comparison, hashing, truth, length, iteration,
 * membership, indexing, str() and repr() -- so a reader that completes without NeedFull used
 * none: only `is` and `type(x) is` saw it, which model_shapes' readers follow by a use (a
 * test holds the ledger equal on every corpus). model_shapes._mapping answers True for an
 * UnreadObject (the dict it stands for is a mapping) without using it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define MAX_DEPTH 500

static PyObject *NeedFull; /* the exception */

/* -- stand-ins ------------------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    PyObject *key; /* the member's key: what NeedFull names */
} Unread;

static PyTypeObject UnreadType, UnreadObjectType;

static void need_full(PyObject *self) {
    PyObject *key = ((Unread *)self)->key;
    PyObject *args = PyTuple_Pack(1, key ? key : Py_None);
    if (args != NULL) {
        PyErr_SetObject(NeedFull, args);
        Py_DECREF(args);
    }
}

static void unread_dealloc(PyObject *self) {
    Py_XDECREF(((Unread *)self)->key);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *unread_getattro(PyObject *self, PyObject *name) {
    (void)name;
    need_full(self);
    return NULL;
}
static PyObject *unread_repr(PyObject *self) {
    need_full(self);
    return NULL;
}
static Py_hash_t unread_hash(PyObject *self) {
    need_full(self);
    return -1;
}
static PyObject *unread_richcompare(PyObject *self, PyObject *other, int op) {
    (void)op;
    /* Either side may be the stand-in (a reflected comparison): name the stand-in's key. */
    need_full(PyObject_TypeCheck(self, &UnreadType) || PyObject_TypeCheck(self, &UnreadObjectType)
                  ? self : other);
    return NULL;
}
static PyObject *unread_iter(PyObject *self) {
    need_full(self);
    return NULL;
}
static int unread_bool(PyObject *self) {
    need_full(self);
    return -1;
}
static Py_ssize_t unread_length(PyObject *self) {
    need_full(self);
    return -1;
}
static int unread_contains(PyObject *self, PyObject *value) {
    (void)value;
    need_full(self);
    return -1;
}
static PyObject *unread_subscript(PyObject *self, PyObject *key) {
    (void)key;
    need_full(self);
    return NULL;
}
static PyObject *unread_item(PyObject *self, Py_ssize_t i) {
    (void)i;
    need_full(self);
    return NULL;
}
static PyObject *unread_unary(PyObject *self) {
    need_full(self);
    return NULL;
}
static PyObject *unread_binary(PyObject *a, PyObject *b) {
    need_full(PyObject_TypeCheck(a, &UnreadType) || PyObject_TypeCheck(a, &UnreadObjectType) ? a
                                                                                              : b);
    return NULL;
}
static PyObject *unread_call(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)args;
    (void)kwargs;
    need_full(self);
    return NULL;
}

static PyNumberMethods unread_number = {
    .nb_add = unread_binary,
    .nb_subtract = unread_binary,
    .nb_multiply = unread_binary,
    .nb_remainder = unread_binary,
    .nb_and = unread_binary,
    .nb_or = unread_binary,
    .nb_xor = unread_binary,
    .nb_bool = unread_bool,
    .nb_negative = unread_unary,
    .nb_positive = unread_unary,
    .nb_absolute = unread_unary,
    .nb_int = unread_unary,
    .nb_float = unread_unary,
    .nb_index = unread_unary,
};
static PySequenceMethods unread_sequence = {
    .sq_length = unread_length,
    .sq_item = unread_item,
    .sq_contains = unread_contains,
};
static PyMappingMethods unread_mapping = {
    .mp_length = unread_length,
    .mp_subscript = unread_subscript,
};

#define UNREAD_TYPE(NAME, DOC)                                                                  \
    {                                                                                           \
        PyVarObject_HEAD_INIT(NULL, 0).tp_name = "toolkit.agents._ledgerjson." NAME,           \
        .tp_basicsize = sizeof(Unread), .tp_dealloc = unread_dealloc, .tp_repr = unread_repr,  \
        .tp_as_number = &unread_number, .tp_as_sequence = &unread_sequence,                    \
        .tp_as_mapping = &unread_mapping, .tp_hash = unread_hash, .tp_call = unread_call,      \
        .tp_str = unread_repr, .tp_getattro = unread_getattro, .tp_flags = Py_TPFLAGS_DEFAULT, \
        .tp_doc = DOC, .tp_richcompare = unread_richcompare, .tp_iter = unread_iter,           \
    }

static PyTypeObject UnreadType =
    UNREAD_TYPE("Unread", "A JSON array or string left undecoded: any use raises NeedFull.");
static PyTypeObject UnreadObjectType =
    UNREAD_TYPE("UnreadObject", "A JSON object left undecoded: any use raises NeedFull.");

static PyObject *stand_in(PyTypeObject *type, PyObject *key) {
    Unread *self = PyObject_New(Unread, type);
    if (self == NULL) return NULL;
    Py_INCREF(key);
    self->key = key;
    return (PyObject *)self;
}

/* -- the check and the decode --------------------------------------------------------------- */

typedef struct {
    const unsigned char *s;   /* cursor */
    const unsigned char *end; /* end of the data */
    PyObject *read_keys;      /* members always decoded */
    PyObject *loads;          /* orjson.loads */
    Py_ssize_t threshold;     /* longer members (not read) are left unread */
} Parser;

/* Outcomes of the skip functions: OK, UNSURE (not orjson's for sure: the caller decodes). */
#define OK 0
#define UNSURE 1

static inline void skip_ws(Parser *p) {
    while (p->s < p->end && (*p->s == ' ' || *p->s == '\n' || *p->s == '\r' || *p->s == '\t'))
        p->s++;
}

static inline int hex4(const unsigned char *s, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = s[i], d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else return 0;
        v = v * 16 + d;
    }
    *out = v;
    return 1;
}

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* The string at p->s (its opening quote) checked and stepped over; *escaped set where it holds
 * an escape. */
static int skip_string(Parser *p, int *escaped) {
    const unsigned char *s = p->s + 1, *end = p->end;
    *escaped = 0;
    for (;;) {
        /* Eight plain bytes at a time (ASCII, no control character, no quote, no backslash),
         * stepped to the first other one: each test flags its byte and maybe bytes after it
         * (a borrow runs up), never one before, so the lowest flag is the first such byte. */
#if defined(__SSE2__)
        /* Sixteen at a time: a signed byte below 0x20 is a control character or no ASCII. */
        while (end - s >= 16) {
            __m128i x = _mm_loadu_si128((const __m128i *)s);
            int bad = _mm_movemask_epi8(_mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')),
                             _mm_cmpeq_epi8(x, _mm_set1_epi8('\\'))),
                _mm_cmplt_epi8(x, _mm_set1_epi8(0x20))));
            if (bad) {
                s += __builtin_ctz(bad);
                goto special;
            }
            s += 16;
        }
#endif
#if defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        while (end - s >= 8) {
            uint64_t x;
            memcpy(&x, s, 8);
            uint64_t q = x ^ (ONES * '"'), b = x ^ (ONES * '\\');
            uint64_t bad =
                (x | ((x - ONES * 0x20) & ~x) | ((q - ONES) & ~q) | ((b - ONES) & ~b)) & HIGHS;
            if (bad) {
                s += __builtin_ctzll(bad) >> 3;
                break;
            }
            s += 8;
        }
#endif
        if (s >= end) return UNSURE;
#if defined(__SSE2__)
    special:;
#endif
        unsigned c = *s;
        if (c == '"') {
            p->s = s + 1;
            return OK;
        }
        if (c < 0x20) return UNSURE;
        if (c < 0x80) {
            if (c == '\\') {
                *escaped = 1;
                if (end - s < 2) return UNSURE;
                unsigned e = s[1];
                if (e == 'u') {
                    unsigned u;
                    if (end - s < 6 || !hex4(s + 2, &u)) return UNSURE;
                    if (u >= 0xD800 && u <= 0xDFFF) { /* only a high-low pair */
                        unsigned low;
                        if (u > 0xDBFF || end - s < 12 || s[6] != '\\' || s[7] != 'u'
                            || !hex4(s + 8, &low) || low < 0xDC00 || low > 0xDFFF)
                            return UNSURE;
                        s += 12;
                    } else {
                        s += 6;
                    }
                    continue;
                }
                if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n'
                    || e == 'r' || e == 't') {
                    s += 2;
                    continue;
                }
                return UNSURE;
            }
            s++;
            continue;
        }
        /* UTF-8: the well-formed sequences of Unicode's table 3-7 (no surrogates). */
        Py_ssize_t left = end - s;
        if (c >= 0xC2 && c <= 0xDF) {
            if (left < 2 || (s[1] & 0xC0) != 0x80) return UNSURE;
            s += 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
            if (left < 3 || s[1] < lo || s[1] > hi || (s[2] & 0xC0) != 0x80) return UNSURE;
            s += 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
            if (left < 4 || s[1] < lo || s[1] > hi || (s[2] & 0xC0) != 0x80
                || (s[3] & 0xC0) != 0x80)
                return UNSURE;
            s += 4;
        } else {
            return UNSURE;
        }
    }
}

/* The number at p->s checked and stepped over; *integral set for an int of at most 18 digits. */
static int skip_number(Parser *p, int *integral) {
    const unsigned char *s = p->s, *end = p->end, *start;
    *integral = 1;
    if (s < end && *s == '-') s++;
    start = s;
    if (s >= end) return UNSURE;
    if (*s == '0') {
        s++;
    } else if (*s >= '1' && *s <= '9') {
        while (s < end && *s >= '0' && *s <= '9') s++;
    } else {
        return UNSURE;
    }
    if (s - start > 18) return UNSURE;
    if (s < end && *s == '.') {
        s++;
        start = s;
        while (s < end && *s >= '0' && *s <= '9') s++;
        if (s == start || s - start > 30) return UNSURE;
        *integral = 0;
    }
    if (s < end && (*s == 'e' || *s == 'E')) {
        s++;
        if (s < end && (*s == '+' || *s == '-')) s++;
        start = s;
        while (s < end && *s >= '0' && *s <= '9') s++;
        if (s == start || s - start > 2) return UNSURE;
        *integral = 0;
    }
    p->s = s;
    return OK;
}

static int skip_value(Parser *p, int depth);

static int skip_container(Parser *p, int depth, unsigned char close) {
    if (depth >= MAX_DEPTH) return UNSURE;
    p->s++;
    skip_ws(p);
    if (p->s < p->end && *p->s == close) {
        p->s++;
        return OK;
    }
    for (;;) {
        if (close == '}') {
            int escaped;
            if (p->s >= p->end || *p->s != '"' || skip_string(p, &escaped)) return UNSURE;
            skip_ws(p);
            if (p->s >= p->end || *p->s != ':') return UNSURE;
            p->s++;
            skip_ws(p);
        }
        if (skip_value(p, depth + 1)) return UNSURE;
        skip_ws(p);
        if (p->s >= p->end) return UNSURE;
        if (*p->s == close) {
            p->s++;
            return OK;
        }
        if (*p->s != ',') return UNSURE;
        p->s++;
        skip_ws(p);
    }
}

static int skip_literal(Parser *p, const char *word, Py_ssize_t n) {
    if (p->end - p->s < n || memcmp(p->s, word, n) != 0) return UNSURE;
    p->s += n;
    return OK;
}

static int skip_value(Parser *p, int depth) {
    if (p->s >= p->end) return UNSURE;
    int flag;
    switch (*p->s) {
    case '{': return skip_container(p, depth, '}');
    case '[': return skip_container(p, depth, ']');
    case '"': return skip_string(p, &flag);
    case 't': return skip_literal(p, "true", 4);
    case 'f': return skip_literal(p, "false", 5);
    case 'n': return skip_literal(p, "null", 4);
    default: return skip_number(p, &flag);
    }
}

/* Members left unread repeat from call to call (the tools, the config, the settings every
 * call of an agent sends): the text of each long one the check was sure of is kept, and a
 * member of the very same bytes is stepped over by one memcmp, not checked again. An object,
 * an array or a string ends where its bytes say (no such value is the start of a longer one),
 * so the member that starts with a kept text is that text, sure as it was -- where it nests
 * no deeper than there (`room`: the depth it was checked at, or deeper, is enough). Found by
 * the hash of its first bytes; a slot holds the latest text of its hash. */
#define MEMO_SLOTS 4096
#define MEMO_MIN 256        /* shorter members are checked again: cheap */
#define MEMO_HEAD 32        /* bytes hashed */
#define MEMO_CAP (32 << 20) /* bytes kept at most: past it, the slots are emptied */
typedef struct {
    PyObject *text; /* bytes */
    int room;
} Memo;
static Memo memo[MEMO_SLOTS];
static Py_ssize_t memo_bytes;

static uint32_t head_hash(const unsigned char *s, Py_ssize_t n) {
    uint32_t h = 2166136261u;
    for (Py_ssize_t i = 0; i < n; i++) h = (h ^ s[i]) * 16777619u;
    return h;
}

/* skip_value of a member left unread, by the kept texts where one is its text. */
static int skip_member(Parser *p, int depth) {
    const unsigned char *start = p->s;
    Py_ssize_t left = p->end - start;
    if (left < MEMO_MIN) return skip_value(p, depth);
    Memo *slot = &memo[head_hash(start, MEMO_HEAD) % MEMO_SLOTS];
    if (slot->text != NULL && depth <= slot->room) {
        Py_ssize_t n = PyBytes_GET_SIZE(slot->text);
        if (n <= left && memcmp(start, PyBytes_AS_STRING(slot->text), n) == 0) {
            p->s = start + n;
            return OK;
        }
    }
    if (skip_value(p, depth)) return UNSURE;
    Py_ssize_t n = p->s - start;
    if (n >= MEMO_MIN) {
        PyObject *text = PyBytes_FromStringAndSize((const char *)start, n);
        if (text == NULL) { /* no memory to keep it: not kept */
            PyErr_Clear();
            return OK;
        }
        if (memo_bytes + n > MEMO_CAP) {
            for (int i = 0; i < MEMO_SLOTS; i++) Py_CLEAR(memo[i].text);
            memo_bytes = 0;
        }
        if (slot->text != NULL) memo_bytes -= PyBytes_GET_SIZE(slot->text);
        Py_XSETREF(slot->text, text);
        slot->room = depth;
        memo_bytes += n;
    }
    return OK;
}

/* Building: a new reference; NULL with no error set: unsure; NULL with an error: the error. */

/* `loads` of the text [start, p->s): a string with escapes, a float. Its error: unsure. */
static PyObject *loads_of(Parser *p, const unsigned char *start) {
    PyObject *text = PyBytes_FromStringAndSize((const char *)start, p->s - start);
    if (text == NULL) return NULL;
    PyObject *value = PyObject_CallOneArg(p->loads, text);
    Py_DECREF(text);
    if (value == NULL && !PyErr_ExceptionMatches(PyExc_MemoryError)) PyErr_Clear();
    return value;
}

static PyObject *build_string(Parser *p) {
    const unsigned char *start = p->s;
    int escaped;
    if (skip_string(p, &escaped)) return NULL;
    if (escaped) return loads_of(p, start);
    /* Valid UTF-8 without escapes: the text between the quotes is the string. */
    return PyUnicode_DecodeUTF8((const char *)start + 1, p->s - start - 2, "strict");
}

/* Keys repeat (field names): the str of each short one made once, as orjson caches them. */
#define KEY_CACHE 2048
#define KEY_MAX 48
typedef struct {
    PyObject *str;
    Py_ssize_t len;
    char text[KEY_MAX];
} CachedKey;
static CachedKey key_cache[KEY_CACHE];

static PyObject *build_key(Parser *p) {
    const unsigned char *start = p->s;
    int escaped;
    if (skip_string(p, &escaped)) return NULL;
    if (escaped) return loads_of(p, start);
    const char *text = (const char *)start + 1;
    Py_ssize_t len = p->s - start - 2;
    if (len > KEY_MAX) return PyUnicode_DecodeUTF8(text, len, "strict");
    uint32_t h = 2166136261u; /* FNV-1a */
    for (Py_ssize_t i = 0; i < len; i++) h = (h ^ (unsigned char)text[i]) * 16777619u;
    CachedKey *entry = &key_cache[h % KEY_CACHE];
    if (entry->str != NULL && entry->len == len && memcmp(entry->text, text, len) == 0) {
        Py_INCREF(entry->str);
        return entry->str;
    }
    PyObject *key = PyUnicode_DecodeUTF8(text, len, "strict");
    if (key == NULL) return NULL;
    Py_XSETREF(entry->str, Py_NewRef(key));
    entry->len = len;
    memcpy(entry->text, text, len);
    return key;
}

static PyObject *build_value(Parser *p, int depth);

static PyObject *build_object(Parser *p, int depth) {
    if (depth >= MAX_DEPTH) return NULL;
    PyObject *dict = PyDict_New();
    if (dict == NULL) return NULL;
    p->s++;
    skip_ws(p);
    if (p->s < p->end && *p->s == '}') {
        p->s++;
        return dict;
    }
    for (;;) {
        if (p->s >= p->end || *p->s != '"') goto fail;
        PyObject *key = build_key(p);
        if (key == NULL) goto fail;
        skip_ws(p);
        if (p->s >= p->end || *p->s != ':') {
            Py_DECREF(key);
            goto fail;
        }
        p->s++;
        skip_ws(p);
        PyObject *value;
        int read = PySet_Contains(p->read_keys, key);
        if (read < 0) {
            Py_DECREF(key);
            goto fail;
        }
        if (read || p->s >= p->end || (*p->s != '{' && *p->s != '[' && *p->s != '"')) {
            value = build_value(p, depth + 1);
        } else {
            const unsigned char *start = p->s;
            if (skip_member(p, depth + 1)) {
                Py_DECREF(key);
                goto fail;
            }
            if (p->s - start > p->threshold) {
                value = stand_in(*start == '{' ? &UnreadObjectType : &UnreadType, key);
            } else { /* short: decoded after all (from its start again) */
                p->s = start;
                value = build_value(p, depth + 1);
            }
        }
        if (value == NULL) {
            Py_DECREF(key);
            goto fail;
        }
        Py_ssize_t before = PyDict_GET_SIZE(dict);
        int failed = PyDict_SetItem(dict, key, value);
        Py_DECREF(key);
        Py_DECREF(value);
        if (failed || PyDict_GET_SIZE(dict) == before) goto fail; /* a key twice: unsure */
        skip_ws(p);
        if (p->s >= p->end) goto fail;
        if (*p->s == '}') {
            p->s++;
            return dict;
        }
        if (*p->s != ',') goto fail;
        p->s++;
        skip_ws(p);
    }
fail:
    Py_DECREF(dict);
    return NULL;
}

static PyObject *build_array(Parser *p, int depth) {
    if (depth >= MAX_DEPTH) return NULL;
    PyObject *list = PyList_New(0);
    if (list == NULL) return NULL;
    p->s++;
    skip_ws(p);
    if (p->s < p->end && *p->s == ']') {
        p->s++;
        return list;
    }
    for (;;) {
        PyObject *value = build_value(p, depth + 1);
        if (value == NULL) goto fail;
        int failed = PyList_Append(list, value);
        Py_DECREF(value);
        if (failed) goto fail;
        skip_ws(p);
        if (p->s >= p->end) goto fail;
        if (*p->s == ']') {
            p->s++;
            return list;
        }
        if (*p->s != ',') goto fail;
        p->s++;
        skip_ws(p);
    }
fail:
    Py_DECREF(list);
    return NULL;
}

static PyObject *build_number(Parser *p) {
    const unsigned char *start = p->s;
    int integral;
    if (skip_number(p, &integral)) return NULL;
    if (!integral) return loads_of(p, start);
    const unsigned char *s = start;
    int negative = *s == '-';
    long long v = 0;
    for (s += negative; s < p->s; s++) v = v * 10 + (*s - '0'); /* at most 18 digits */
    return PyLong_FromLongLong(negative ? -v : v);
}

static PyObject *build_value(Parser *p, int depth) {
    if (p->s >= p->end) return NULL;
    switch (*p->s) {
    case '{': return build_object(p, depth);
    case '[': return build_array(p, depth);
    case '"': return build_string(p);
    case 't': if (skip_literal(p, "true", 4)) return NULL; Py_RETURN_TRUE;
    case 'f': if (skip_literal(p, "false", 5)) return NULL; Py_RETURN_FALSE;
    case 'n': if (skip_literal(p, "null", 4)) return NULL; Py_RETURN_NONE;
    default: return build_number(p);
    }
}

/* One data's partial value; the data itself where unsure; NULL on an error. */
static PyObject *partial_value(PyObject *data, Parser *p) {
    if (!PyBytes_Check(data)) {
        Py_INCREF(data);
        return data; /* no bytes: the caller's decode says what it is */
    }
    p->s = (const unsigned char *)PyBytes_AS_STRING(data);
    p->end = p->s + PyBytes_GET_SIZE(data);
    skip_ws(p);
    PyObject *value = build_value(p, 0);
    if (value != NULL) {
        skip_ws(p);
        if (p->s == p->end) return value;
        Py_DECREF(value); /* content after the value: unsure */
    } else if (PyErr_Occurred()) {
        return NULL;
    }
    Py_INCREF(data);
    return data;
}

static PyObject *partial_values(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *datas, *read_keys, *loads;
    Parser p;
    if (!PyArg_ParseTuple(args, "O!O!nO:partial_values", &PyList_Type, &datas, &PySet_Type,
                          &read_keys, &p.threshold, &loads))
        return NULL;
    p.read_keys = read_keys;
    p.loads = loads;
    Py_ssize_t n = PyList_GET_SIZE(datas);
    PyObject *out = PyList_New(n);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *data = PyList_GET_ITEM(datas, i), *value;
        if (data == Py_None) {
            Py_INCREF(Py_None);
            value = Py_None;
        } else {
            value = partial_value(data, &p);
            if (value == NULL) {
                Py_DECREF(out);
                return NULL;
            }
        }
        PyList_SET_ITEM(out, i, value);
    }
    return out;
}

/* sure(data) -> bool: whether the check is sure of the whole data (the tests' view of it). */
static PyObject *sure(PyObject *self, PyObject *data) {
    (void)self;
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) return NULL;
    Parser p;
    p.s = view.buf;
    p.end = p.s + view.len;
    skip_ws(&p);
    int unsure = skip_value(&p, 0);
    skip_ws(&p);
    unsure = unsure || p.s != p.end;
    PyBuffer_Release(&view);
    return PyBool_FromLong(!unsure);
}

static PyMethodDef methods[] = {
    {"partial_values", partial_values, METH_VARARGS,
     "partial_values(datas, read_keys, threshold, loads) -> list: each data's value, its long "
     "members not in read_keys left unread (stand-ins); the data itself where unsure."},
    {"sure", sure, METH_O, "sure(data) -> bool: whether the check is sure orjson reads data."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ledgerjson", NULL, -1, methods};

PyMODINIT_FUNC PyInit__ledgerjson(void) {
    if (PyType_Ready(&UnreadType) < 0 || PyType_Ready(&UnreadObjectType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    NeedFull = PyErr_NewExceptionWithDoc(
        "toolkit.agents._ledgerjson.NeedFull",
        "A stand-in was used: the call is read again from its payloads decoded whole (args: "
        "the member's key).",
        NULL, NULL);
    if (NeedFull == NULL || PyModule_AddObjectRef(m, "NeedFull", NeedFull) < 0
        || PyModule_AddObjectRef(m, "Unread", (PyObject *)&UnreadType) < 0
        || PyModule_AddObjectRef(m, "UnreadObject", (PyObject *)&UnreadObjectType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
