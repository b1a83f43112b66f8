"""The version label of each run of the token ledger, reading only the workflow tasks that can
set it.

:func:`toolkit.histories.versions.version_labels` decodes every workflow-task event of a frame
and composes a label per event (for its ``labels`` and ``failed_labels``); the ledger needs one
label per run with model calls. :func:`run_labels` gives that label, equal to
``version_labels``' ``label`` (the lab's sidecar label first, as :func:`label_fields` puts it):

- a run's label parts are the first non-empty value of each part over its completed workflow
  tasks (all its tasks when none completed), in frame order;
- a build's SDK is the one stated by the first task of the frame (any run) with that build id
  and an SDK name.

An event whose raw JSON does not spell a part's key cannot hold that part, so it is decoded only
when it spells one that is still missing (in the Python SDK's histories only the first completed
task of a run names the SDK, every task the build id, none a deployment).

The tasks of a ``{"events": [...]}`` document (the common export) are searched in place: the
document split off as far as the run's last task (as the ledger's model calls split it after
for their own events), the marks looked for in the tasks' spans of it by one call
(``_cellscan.span_marks``), no text sliced off or joined. A run one of whose tasks escapes a
character by its code, and any other history, read their tasks' texts one by one.
"""

from __future__ import annotations

import os
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import accumulate
from typing import Any

import numpy as np
import pandas as pd

from toolkit.agents.activity_turns import ActivityTurns
from toolkit.agents.turns import sidecar_fields, sidecar_label
from toolkit.histories.columns.lazy import LazyAttributes
from toolkit.histories.reading.dialects import _cellscan
from toolkit.histories.versions import PART_MARKS, _compose, escapes, event_texts, label_parts

__all__ = ["run_labels"]

_TASK_EVENTS = ("WorkflowTaskStarted", "WorkflowTaskCompleted", "WorkflowTaskFailed")
_PARTS = ("deployment", "build_id", "sdk_name", "sdk_version", "binary_checksum")
#: The part marks and the escape of a character by its code (a text escaping one could spell a
#: key without its letters), looked for together; the escape's number in it.
_MARKS_AND_ESCAPE = (*PART_MARKS, b"\\u")
_ESCAPE = len(PART_MARKS)
#: The types of the parts a raw JSON task gives: equal parts of them compose one label.
_TEXTS = frozenset((str, type(None)))


def _marks_each(text: bytes, marks: tuple[bytes, ...], spans: list[int]) -> list[int]:
    """Per mark of ``marks``, the number of the first of ``spans`` (start and end pairs in
    ``text``) whose bytes spell it, -1 where none does: :func:`_cellscan.span_marks`' pure
    twin."""
    pairs = range(len(spans) // 2)
    return [next((k for k in pairs
                  if text.find(mark, max(spans[2 * k], 0), max(spans[2 * k + 1], 0)) >= 0), -1)
            for mark in marks]  # fmt: skip


_span_marks = _marks_each if _cellscan is None else _cellscan.span_marks


def _runs_each(cells: list[Any], starts: list[int], ends: list[int], marks: tuple[bytes, ...],
               kind: type, place: Any) -> list[list[int] | None]:
    """Per run (``cells[starts[r]:ends[r]]``, its workflow tasks): :func:`_marks_each` of its
    cells' spans in their document, where they are all of type ``kind`` with one ``_history``
    and ``place(history, top)`` (``top`` their largest ``_index``) gives that document and the
    spans list holding event ``i`` at ``2 * i``; None for any other run (or an empty one):
    :func:`_cellscan.run_marks`' pure twin."""
    out: list[list[int] | None] = []
    for start, end in zip(starts, ends, strict=True):
        mine = cells[max(start, 0) : max(end, 0)]
        history = mine[0]._history if mine and type(mine[0]) is kind else None
        if not mine or not all(type(cell) is kind and cell._history is history
                               for cell in mine):  # fmt: skip
            out.append(None)
            continue
        indices = [cell._index for cell in mine]
        if not all(type(i) is int and i >= 0 for i in indices):
            out.append(None)
            continue
        got = place(history, max(indices))
        if (type(got) is not tuple or len(got) != 2 or type(got[0]) is not bytes
                or type(got[1]) is not list or 2 * max(indices) + 1 >= len(got[1])):  # fmt: skip
            out.append(None)
            continue
        text, spans = got
        out.append(_marks_each(text, marks, [x for i in indices for x in spans[2 * i : 2 * i + 2]]))
    return out


_run_marks = _runs_each if _cellscan is None else _cellscan.run_marks


def _place(history: Any, top: int) -> tuple[bytes, list[int]] | None:
    """A raw JSON ``{"events": [...]}`` history's document and the spans of its first events,
    split off as far as event ``top`` (:meth:`RawHistory.prefix_through`); None for any other
    history (its runs are read by :func:`_run_parts`)."""
    text = getattr(history, "document", None)
    through = getattr(history, "prefix_through", None)
    if type(text) is not bytes or through is None:
        return None
    spans = through(top)
    return None if spans is None else (text, spans)


class _Tasks:
    """The workflow-task events of a frame: their parts, each event decoded at most once."""

    def __init__(self, cells: Sequence[Any]) -> None:
        self.cells = cells
        self.parts: list[tuple[Any, ...] | None] = [None] * len(cells)
        self.raws: list[bytes | bool | None] = [False] * len(cells)  # False: not looked at

    def spans(self, rows: Sequence[int]) -> tuple[bytes, list[int]] | None:
        """The document holding the events ``rows`` and their spans in it (start and end pairs,
        in the order of ``rows``), the document split off as far as the last of them; None
        where they are not all events of one raw JSON document whose events can be placed."""
        cells = self.cells
        first = cells[rows[0]]
        history = first._history if type(first) is LazyAttributes else None
        text = getattr(history, "document", None)
        if type(text) is not bytes or not hasattr(history, "spans_of"):
            return None
        mine = [cells[row] for row in rows]
        if not all(type(cell) is LazyAttributes and cell._history is history for cell in mine):
            return None
        spans = history.spans_of([cell._index for cell in mine])
        return None if spans is None else (text, spans)

    def raw(self, index: int) -> bytes | None:
        """The raw JSON of event ``index``; None for a cell that is no raw JSON, or whose text
        escapes a character (it could spell a key without its letters)."""
        raw = self.raws[index]
        if raw is False:
            cell = self.cells[index]
            raw = bytes(cell.raw) if type(cell) is LazyAttributes else None
            if raw is not None and escapes(raw):
                raw = None
            self.raws[index] = raw
        return raw  # type: ignore[return-value]

    def texts(self, rows: Sequence[int]) -> list[bytes | None]:
        """:meth:`raw` of each of ``rows``; those of one raw JSON history's events not looked at
        yet read together (:meth:`RawHistory.json_event_texts`), the same bytes."""
        raws, cells = self.raws, self.cells
        fresh = [index for index in rows if raws[index] is False]
        found = event_texts([cells[index] for index in fresh]) if fresh else None
        if found is not None:
            for index, text in zip(fresh, found, strict=True):
                # escapes(text), inlined: one call less per event
                raws[index] = None if b"\\" in text and b"\\u" in text else text
        return [self.raw(index) if raws[index] is False else raws[index] for index in rows]

    def may_hold(self, index: int, wanted: Sequence[int]) -> bool:
        """Whether event ``index`` can hold all the parts at positions ``wanted``."""
        if self.raws[index] is False:  # not read: its text searched in place, where it can be
            searched = self.spans([index])
            if searched is not None:
                text, spans = searched
                marks = (*(PART_MARKS[i] for i in wanted), _MARKS_AND_ESCAPE[_ESCAPE])
                found = _span_marks(text, marks, spans)
                return found[-1] >= 0 or min(found[:-1]) >= 0  # (an escape: it may)
        raw = self.raw(index)
        return raw is None or all(PART_MARKS[i] in raw for i in wanted)

    def get(self, index: int) -> tuple[Any, ...]:
        """The parts of event ``index`` (as ``task_versions`` reads them)."""
        found = self.parts[index]
        if found is None:
            found = self.parts[index] = label_parts(self.cells[index])
        return found


def _run_parts(tasks: _Tasks, rows: Sequence[int]) -> dict[str, Any]:
    """The first non-empty value of each part over the events ``rows``, in order."""
    parts: list[Any] = [None] * len(_PARTS)
    searched = tasks.spans(rows)
    if searched is not None:
        text, spans = searched
        found = _span_marks(text, _MARKS_AND_ESCAPE, spans)
        if found[_ESCAPE] < 0:  # no task's text escapes a character: keys spelt with letters
            # Each part is the one of the first event spelling its mark that gives it (the
            # same parts as the joined texts' search below, the texts searched in place).
            for i, k in enumerate(found[:_ESCAPE]):
                while k >= 0:
                    value = tasks.get(rows[k])[i]
                    if value:
                        parts[i] = value
                        break
                    later = _span_marks(text, PART_MARKS[i : i + 1], spans[2 * k + 2 :])[0]
                    k = k + 1 + later if later >= 0 else -1
            return dict(zip(_PARTS, parts, strict=True))
    texts = tasks.texts(rows)
    if None not in texts:  # (bytes compare unequal to None: no text is looked into)
        # An event gives a part only if its text spells the part's mark: each part is the one
        # of the first event spelling its mark that gives it, found by one search of all the
        # texts joined from where the last look ended (a part no event spells is None without
        # a look at each event; a part the first event gives ends its search there). The same
        # parts as the loop below, which decodes an event spelling any part still missing.
        joined = b"\x00".join(texts)  # type: ignore[arg-type]
        ends = list(accumulate(len(text) + 1 for text in texts))  # past each text's separator
        for i, mark in enumerate(PART_MARKS):
            at = joined.find(mark)
            while at >= 0:
                k = bisect_right(ends, at)  # the text holding position ``at``
                value = tasks.get(rows[k])[i]
                if value:
                    parts[i] = value
                    break
                at = joined.find(mark, ends[k])
        return dict(zip(_PARTS, parts, strict=True))
    wanted = list(range(len(_PARTS)))
    for index, text in zip(rows, texts, strict=True):
        missing = [i for i in wanted if parts[i] is None]
        if not missing:
            break
        if text is not None and not any(PART_MARKS[i] in text for i in missing):
            continue
        found = tasks.get(index)
        for i in missing:
            if found[i]:
                parts[i] = found[i]
    return dict(zip(_PARTS, parts, strict=True))


def _stating(tasks: _Tasks, start: int) -> tuple[int, list[int] | None]:
    """Where the events from ``start`` that may state a build's SDK are: the end of the events
    of one raw JSON document that follow each other from ``start``, and of those the ones whose
    text spells an SDK name and a build id (or escapes a character: they may), found by a few
    searches of their spans in place; None where they cannot be searched so (each event is
    then looked at by :meth:`_Tasks.may_hold`)."""
    cells = tasks.cells
    first = cells[start]
    if type(first) is not LazyAttributes:
        return start + 1, None
    history, stop = first._history, start + 1
    while stop < len(cells) and type(cells[stop]) is LazyAttributes \
            and cells[stop]._history is history:  # fmt: skip
        stop += 1
    searched = tasks.spans(range(start, stop))
    if searched is None:
        return stop, None
    text, spans = searched
    name, build, escape = PART_MARKS[2], PART_MARKS[1], _MARKS_AND_ESCAPE[_ESCAPE]
    found, k = [], 0
    while 2 * k < len(spans):
        # The next event spelling an SDK name, or escaping a character, from event k on.
        named, escaped = _span_marks(text, (name, escape), spans[2 * k :])
        step = min(named if named >= 0 else len(spans), escaped if escaped >= 0 else len(spans))
        if step >= len(spans):
            break
        k += step
        if escaped == step or _span_marks(text, (build,), spans[2 * k : 2 * k + 2])[0] == 0:
            found.append(start + k)
        k += 1
    return stop, found


def _sdk_of_builds(tasks: _Tasks, builds: set[Any]) -> dict[Any, str]:
    """Per build id of ``builds``: the SDK the first event of the frame with it states. The
    events of one document that follow each other are searched together for those that may
    state one (a run's first completed task, mostly), not one by one."""
    out: dict[Any, str] = {}
    start, count = 0, len(tasks.cells)
    while start < count and len(out) < len(builds):
        stop, found = _stating(tasks, start)
        candidates = found if found is not None else (
            index for index in range(start, stop) if tasks.may_hold(index, (1, 2)))  # fmt: skip
        for index in candidates:  # (may_hold of the others: False; in frame order)
            if len(out) == len(builds):
                break
            _, build, name, version, _ = tasks.get(index)
            if build and name and build not in out:
                sdk = " ".join(str(p) for p in (name, version) if p)
                if build in builds:
                    out[build] = sdk
        start = stop
    return out


#: Sources of one folder from which the folder is listed rather than each sidecar looked up (a
#: listing of a large folder costs more than a few lookups).
_LIST_FROM = 16


def _sidecar_labels(sources: Iterable[Any]) -> dict[Any, str | None]:
    """``sidecar_label(sidecar_fields(source))`` of each distinct source. A folder holding many
    of them is listed once for its ``*.meta.json`` files (not one ``stat`` per history: a folder
    of 500 histories has none), and a sidecar found is read by :func:`sidecar_fields` itself; a
    source of a folder holding few, a source whose name ``pathlib`` would read otherwise than a
    split at its last ``/``, or one of a folder that cannot be listed, is looked up by
    :func:`sidecar_fields` alone."""
    out: dict[Any, str | None] = {}
    placed: dict[Any, tuple[str, str, str]] = {}  # source -> (its text, folder, name)
    for source in sources:
        if source in out or source in placed:
            continue
        text = source if isinstance(source, str) else None
        folder, _, name = (text or "").rpartition("/")
        if not text or os.sep != "/" or name in ("", ".") or "\x00" in text:
            out[source] = sidecar_label(sidecar_fields(text))
        else:
            placed[source] = (text, folder or ("/" if text.startswith("/") else "."), name)
    counts = Counter(folder for _, folder, _ in placed.values())
    listed: dict[str, set[str] | None] = {}
    for source, (text, folder, name) in placed.items():
        if counts[folder] < _LIST_FROM:
            out[source] = sidecar_label(sidecar_fields(text))
            continue
        if folder not in listed:
            try:
                with os.scandir(folder) as entries:
                    listed[folder] = {entry.name for entry in entries
                                      if entry.name.endswith(".meta.json") and entry.is_file()}
            except OSError:
                listed[folder] = None
        metas = listed[folder]
        meta = name.removesuffix(".json") + ".meta.json"
        if metas is None or meta in metas:
            out[source] = sidecar_label(sidecar_fields(text))
        else:
            out[source] = None  # sidecar_fields: no such file, {}; sidecar_label({}): None
    return out


def run_labels(frame: pd.DataFrame, found: ActivityTurns, codes: Sequence[int]) -> dict[int, str]:
    """The ledger's ``label`` of each run code in ``codes`` (runs as in ``found.runs``)."""
    types = found.positions.get("types")
    if types is not None:
        # The frame's event types as activity_turns coded them: small integers tested, no
        # type's text hashed or compared again per event (the same rows).
        type_codes, type_names = types
        rows = np.flatnonzero(np.isin(type_codes, [code for code, name in enumerate(type_names)
                                                   if name in _TASK_EVENTS]))  # fmt: skip
        completed = np.isin(type_codes[rows], [code for code, name in enumerate(type_names)
                                               if name == "WorkflowTaskCompleted"])  # fmt: skip
    else:
        # By pandas' hash table (each type hashed once), not numpy's compare of every event
        # with each of the three names: the same rows.
        rows = np.flatnonzero(frame["event_type"].isin(_TASK_EVENTS).to_numpy(dtype=bool))
        completed = frame["event_type"].to_numpy(dtype=object)[rows] == "WorkflowTaskCompleted"
    cells = (frame["attributes"].to_numpy(dtype=object)[rows] if "attributes" in frame.columns
             else np.full(len(rows), None, dtype=object))  # fmt: skip
    tasks = _Tasks(cells.tolist())  # (a list: each cell taken without numpy's indexing)
    run = found.positions["rows"][rows]
    wanted = sorted(set(codes))
    # Each run's completed tasks (all its tasks where none completed), together in frame order:
    # chosen for all runs at once, each run's rows then a slice of one list.
    has_done = np.zeros(len(found.runs), dtype=bool)
    has_done[run[completed]] = True
    chosen = np.flatnonzero(completed | ~has_done[run])
    order = chosen[np.argsort(run[chosen], kind="stable")]
    starts = np.searchsorted(run[order], wanted, side="left").tolist()
    ends = np.searchsorted(run[order], wanted, side="right").tolist()
    rows_in_order = order.tolist()
    parts_of: dict[int, dict[str, Any] | None] = {}
    # All runs' tasks searched in place by one call (each run's first task spelling each mark);
    # a run it cannot search, or one whose task escapes a character or spells a part's mark
    # with an empty value, is read by _run_parts (the same parts).
    searched = _run_marks(cells[order].tolist(), starts, ends, _MARKS_AND_ESCAPE,
                          LazyAttributes, _place)  # fmt: skip
    get = tasks.get
    for code, start, end, spelt in zip(wanted, starts, ends, searched, strict=True):
        if end <= start:
            parts_of[code] = None
            continue
        if spelt is not None and spelt[_ESCAPE] < 0:
            parts: list[Any] = [None] * len(_PARTS)
            for i in range(_ESCAPE):
                k = spelt[i]
                if k >= 0:
                    value = get(rows_in_order[start + k])[i]
                    if not value:
                        break  # a later task may give it: _run_parts searches on
                    parts[i] = value
            else:
                parts_of[code] = dict(zip(_PARTS, parts, strict=True))
                continue
        parts_of[code] = _run_parts(tasks, rows_in_order[start:end])
    builds = {p["build_id"] for p in parts_of.values()
              if p is not None and p["build_id"] and not p["deployment"]}  # fmt: skip
    sdk_of_build = _sdk_of_builds(tasks, builds) if builds else {}
    out: dict[int, str] = {}
    sidecars = _sidecar_labels(found.runs[code][0] for code in parts_of)
    composed: dict[tuple[Any, ...], str] = {}  # one label per distinct parts: a fleet has few
    for code, parts in parts_of.items():
        sidecar = sidecars[found.runs[code][0]]
        if sidecar is not None:
            out[code] = sidecar
        elif parts is None:
            out[code] = "unknown"
        else:
            key = tuple(parts.values())  # (in _PARTS' order, as _run_parts makes them)
            deployment, build, name, version, checksum = key
            if not (type(deployment) in _TEXTS and type(build) in _TEXTS and type(name) in _TEXTS
                    and type(version) in _TEXTS and type(checksum) in _TEXTS):  # fmt: skip
                out[code] = _compose(parts, sdk_of_build)[0]  # equal parts may print apart
                continue
            label = composed.get(key)
            if label is None:
                label = composed[key] = _compose(parts, sdk_of_build)[0]
            out[code] = label
    return out
