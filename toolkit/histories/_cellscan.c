/*
 * Payload cells measured in C, many at a time, and the common ends of two buffers.
 *
 * The module's parts, by purpose, are in cellscan/, each included once below (one translation
 * unit: every function stays static and inlinable): common.h (headers, whitespace, CPU
 * features), base64.h, text_ends.h (common_prefix, common_suffix, resent), json_spans.h
 * (element_spans, last_spans), marks.h (span_marks, run_marks), payload_cells.h (payload_spans,
 * plain_payloads), members.h (key_value, summary_data).
 *
 * The compiled twin of two pure paths that stay the reference (setup.py marks this optional;
 * without a C compiler the package does the same in Python, and tests/test_cellscan.py holds both
 * to the same results):
 *
 * payload_spans(cells[, groups]) -> (spans, encodings[, shares])
 *   cells: a list of buffers (a payload cell's raw proto-JSON) or anything else (skipped).
 *   For each cell of the shape nearly every cell has, one or two payloads whose metadata is only
 *   an encoding, `{"payloads":[{"metadata":{"encoding":"<base64>"},"data":"<base64>"}, ...]}`,
 *   the data optional, with JSON whitespace anywhere between tokens: spans, int64 [8][n], per
 *   payload (first, second) the number of its encoding in `encodings` (-1: no such payload),
 *   its data string's start, its end before any "=" padding, and its end (all -1 without data).
 *   A cell of another shape (or not a buffer) has -1 as its first encoding, None -2.
 *   encodings: the distinct encodings' base64 texts (bytes), in the order first met.
 *   payload_spans(cells, groups, True) reads each cell's raw text as payload_cells._cell_raw
 *   finds it (the lazy cells of an events frame, no list of their raws made first).
 *   groups (int64, one per cell): the run whose model input a cell is (-1: none), each run's
 *   inputs in order; shares, int64 [3][groups]: each run's resent() over its inputs' one
 *   json/plain text, found while each input is scanned (its bytes read from memory once), and
 *   how many inputs were read, -1 where the pure path is to read them (see Shares).
 *
 * common_prefix(a, b) -> int, common_suffix(a, b) -> int
 *   The length of the common beginning (end) of two buffers.
 *
 * resent(texts, b64) -> (resent, total) | None
 *   budget._resent of consecutive model inputs (all base64 text, or all plain bytes): the bytes
 *   each input shares with the one before it (common beginning, common end stepping over
 *   numbers), and all inputs' bytes; None where a base64 text is not plain base64.
 *
 * element_spans(buf, at, count) -> (spans, at, done)
 *   The spans of the next `count` elements of the (valid) JSON array read at `at`: what splitting
 *   a whole history's events costs, for the first few of them only (with AVX2 and carry-less
 *   multiplication, objects and arrays read 64 bytes a step, strings 32).
 *
 * span_marks(buf, marks, spans) -> list[int]
 *   Per mark (a tuple of at most 8 non-empty bytes): the number of the first of `spans` (a
 *   list of ints, start and end pairs in buf) whose bytes spell it, -1 where none does: the
 *   ledger's workflow tasks searched in place, none sliced off or joined. With AVX2, 32 places
 *   at a time for all the marks, each mark's two rarest bytes compared, then memcmp.
 *
 * run_marks(cells, starts, ends, marks, kind, place) -> list[list[int] | None]
 *   span_marks of each run's workflow tasks, cells[starts[r]:ends[r]] (cells of type `kind`, of
 *   one `_history`, their events at 2 * `_index` in the spans list that place(history, top)
 *   gives with its document), all of a ledger's runs in one call; None for a run not of that
 *   kind (the caller reads it otherwise).
 *
 * last_spans(buf, end, count) -> (spans, done)
 *   The same for the last `count` elements, read backwards from the array's closing "]".
 *
 * key_value(buf, key) -> bytes | None
 *   The raw JSON of the value of a JSON object's top-level `key` (the other values stepped over
 *   as element_spans steps over elements), b"" where it has none; None where a typed decode is to
 *   read it (no object, an escaped key, a key twice): an event's userMetadata, for its summary.
 *
 * summary_data(buf) -> bytes | None
 *   The base64-decoded data of an event's activity summary where its userMetadata is of the
 *   usual shape, {"summary": {"metadata": {"encoding": "<json/plain>"}, "data": "<base64>"}}
 *   (and "details"); None for any other (the typed decoders read it).
 *
 * plain_payloads(raws) -> list[tuple[list[bytes | None], int] | None]
 *   Per item of the list `raws` (a payload cell's raw Payloads JSON, or anything else): where it
 *   is {"payloads": [...]} of json/plain payloads with data of base64 digits alone and
 *   binary/null ones without data, each payload's metadata its encoding alone (JSON whitespace
 *   between the tokens; nothing before the "{"), a list of each payload's decoded data (None
 *   for binary/null) and the decoded bytes' total; None for anything else (not a buffer,
 *   another shape, an escape or other text in a data), which the typed decoders read. The
 *   model calls' inputs and results of a ledger, all in one call.
 *
 * b64_decode(text) -> bytes | None  (32 digits at a time with AVX2 where the CPU has it;
 *   TOOLKIT_NO_AVX2=1 in the environment keeps the scalar loop)
 *   The bytes of base64 text made of whole quanta of base64 digits, "=" padding at its end only;
 *   None for any other text (binascii.a2b_base64, which skips other characters, decodes it).
 */

#include "cellscan/common.h"
#include "cellscan/base64.h"
#include "cellscan/text_ends.h"
#include "cellscan/json_spans.h"
#include "cellscan/marks.h"
#include "cellscan/payload_cells.h"
#include "cellscan/members.h"

static PyMethodDef methods[] = {
    {"payload_spans", payload_spans, METH_VARARGS,
     "Data spans and encodings of payload cells of the common shape."},
    {"common_prefix", common_prefix, METH_VARARGS, "Length of the common beginning of a and b."},
    {"common_suffix", common_suffix, METH_VARARGS, "Length of the common end of a and b."},
    {"element_spans", element_spans, METH_VARARGS,
     "Spans of the next elements of a JSON array, where to go on, whether it ended."},
    {"span_marks", span_marks, METH_VARARGS,
     "The number of the first span spelling each mark (-1: none)."},
    {"run_marks", run_marks, METH_VARARGS,
     "span_marks of each run's cells in their document, None where not searched so."},
    {"last_spans", last_spans, METH_VARARGS,
     "Spans of the last elements of a JSON array, last first, and whether it began."},
    {"resent", resent, METH_VARARGS,
     "budget._resent over base64 (or plain) texts: (resent, total), or None."},
    {"b64_decode", b64_decode, METH_VARARGS,
     "Decoded base64 of whole quanta and only base64 digits, else None."},
    {"key_value", key_value, METH_VARARGS,
     "The raw JSON of a top-level key's value in a JSON object, b'' where absent, None: undecided."},
    {"plain_payloads", plain_payloads, METH_VARARGS,
     "Decoded data and total bytes of Payloads JSON of json/plain and binary/null payloads."},
    {"summary_data", summary_data, METH_VARARGS,
     "The decoded data of an event's json/plain activity summary, None: another shape."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cellscan", NULL, -1, methods};

PyMODINIT_FUNC PyInit__cellscan(void) {
    b64_table();
    nested_stop_table();
    HISTORY_NAME = PyUnicode_InternFromString("_history");
    INDEX_NAME = PyUnicode_InternFromString("_index");
    if (HISTORY_NAME == NULL || INDEX_NAME == NULL) return NULL;
#ifdef HAVE_AVX2_PATH
    __builtin_cpu_init();
    use_avx2 = __builtin_cpu_supports("avx2") && getenv("TOOLKIT_NO_AVX2") == NULL;
    use_clmul = use_avx2 && __builtin_cpu_supports("pclmul");
#endif
    return PyModule_Create(&module);
}
