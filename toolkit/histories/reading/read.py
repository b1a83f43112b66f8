"""``read_history``: any source, any dialect -> the events frame."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import pandas as pd

from toolkit.errors import HistoryFormatError, ToolkitError
from toolkit.gc_pause import paused_gc
from toolkit.histories.events import HistoryParts, build_parts, frame_from_parts
from toolkit.histories.reading.dialects import RawHistory, split_histories
from toolkit.histories.reading.sources import IdsFromName, Source, open_source
from toolkit.limits import MAX_BYTES, deepest_point

__all__ = [
    "DECODER_DEPTH",
    "READ_OPTIONS",
    "OpenedSource",
    "build_sources",
    "check_read_options",
    "open_histories",
    "read_history",
    "read_history_parts",
    "read_many_parts",
]

#: Nesting the JSON decoder is known to handle here (it recurses once per level, within
#: Python's recursion limit of 1,000 frames).
DECODER_DEPTH = 900


def _too_deep(opened: Source, limit: int, byte: int) -> HistoryFormatError:
    data = opened.data or b""
    line = data.count(b"\n", 0, byte) + 1
    column = byte - (data.rfind(b"\n", 0, byte) + 1) + 1
    return HistoryFormatError(
        opened.name,
        f"JSON nested deeper than {limit} levels",
        position=f"line {line} column {column} (byte {byte})",
        expected=f"at most {limit} levels of nesting (max_depth=; real histories nest < 20)",
    )


def read_history(
    source: Any,
    *,
    codec: Any = None,
    decode_payloads: bool = True,
    allow_empty: bool = False,
    name: str | None = None,
    max_bytes: int | None = MAX_BYTES,
    max_depth: int | None = None,
    workflow_id_from: IdsFromName = None,
) -> pd.DataFrame:
    """Read one workflow history (or every history in a multi-history source) into a DataFrame.

    Parameters
    ----------
    source
        A path (``.json``, ``.json.gz``, ``.bin``/``.binpb``, a Cloud export file), ``bytes``,
        JSON text, an open file, parsed JSON (``dict``/``list``), a
        ``temporalio.client.WorkflowHistory`` or a ``temporalio.api.history.v1.History``.
        Every dialect in :mod:`toolkit.histories.reading.dialects` is recognised automatically.
    codec
        A ``temporalio.converter.PayloadCodec`` applied to payloads before decoding (for
        encrypted payloads); without it encrypted payloads stay opaque.
    decode_payloads
        Decode ``input``/``result``/``details``; ``False`` leaves them ``None`` (faster).
    allow_empty
        Return an empty frame (all columns, no rows) for a history with no events instead of
        raising.
    name
        What to call the source in the ``source`` column and in errors (defaults to the path).
    max_bytes
        Refuse a source larger than this many bytes once read or decompressed (default
        :data:`toolkit.limits.MAX_BYTES`, 1 GiB; ``None``: no limit). Decompression stops at
        the limit, so a gzip bomb costs about ``max_bytes`` of memory.
    max_depth
        Refuse JSON nested deeper than this many levels (checked with one extra pass over the
        bytes). By default the decoder's own bound applies (about 990 levels; real histories
        nest fewer than 20), reported the same way.
    workflow_id_from
        Where a file's name or folder holds the workflow id (and perhaps the run id and
        namespace) for histories that do not say it themselves: a regular expression searched
        in the path, with named groups ``workflow_id``, ``run_id``, ``namespace`` (or one
        unnamed group: the workflow id), e.g. ``"(?P<workflow_id>[^/]+)/(?P<run_id>[^/]+)[.]json$"``
        for ``temporal workflow show -o json`` output saved as ``<workflow id>/<run id>.json``;
        or a function of the path returning the workflow id. The history's own fields win
        (order in :mod:`toolkit.histories`).

    Returns
    -------
    pandas.DataFrame
        One row per event, sorted by ``history`` then ``event_id``; columns as documented in
        :mod:`toolkit.histories` (and the README).

    Raises
    ------
    HistoryFormatError
        Empty, truncated or damaged input, or content that is not a history; the message names
        the source and the position and says what was expected.
    """
    with paused_gc():  # ~10 objects per event, none in a cycle
        parts = read_history_parts(
            source,
            codec=codec,
            decode_payloads=decode_payloads,
            allow_empty=allow_empty,
            name=name,
            max_bytes=max_bytes,
            max_depth=max_depth,
            workflow_id_from=workflow_id_from,
        )
        return frame_from_parts(parts)


def read_history_parts(
    source: Any,
    *,
    codec: Any = None,
    decode_payloads: bool = True,
    allow_empty: bool = False,
    name: str | None = None,
    max_bytes: int | None = MAX_BYTES,
    max_depth: int | None = None,
    workflow_id_from: IdsFromName = None,
) -> list[HistoryParts]:
    """What :func:`read_history` reads, as columns not yet made a frame.

    :func:`toolkit.histories.events.frame_from_parts` turns the parts of one source, or of a
    whole batch of sources, into one frame (:func:`toolkit.read_histories` builds one frame
    per batch, not one per file). Parameters and errors are those of :func:`read_history`.
    """
    opened = open_histories(
        source, name=name, max_bytes=max_bytes, max_depth=max_depth,
        workflow_id_from=workflow_id_from,
    )  # fmt: skip
    parts, failures = build_sources(
        [opened], codec=codec, decode_payloads=decode_payloads, allow_empty=allow_empty
    )
    if failures:
        raise failures[0][1]
    return parts


@dataclass
class OpenedSource:
    """A source read and split into its histories, whose columns are not built yet."""

    source: Source
    histories: list[RawHistory]


def open_histories(
    source: Any,
    *,
    name: str | None = None,
    max_bytes: int | None = MAX_BYTES,
    max_depth: int | None = None,
    workflow_id_from: IdsFromName = None,
) -> OpenedSource:
    """Read ``source`` and find its histories (the first half of :func:`read_history_parts`).

    Raises
    ------
    HistoryFormatError
        As :func:`read_history` does for what can be told before the columns are built.
    """
    opened = open_source(source, name=name, max_bytes=max_bytes, workflow_id_from=workflow_id_from)
    if max_depth is not None and opened.data is not None:
        depth, byte = deepest_point(opened.data, max_depth)
        if depth > max_depth:
            raise _too_deep(opened, max_depth, byte)
    try:
        with paused_gc():
            return OpenedSource(opened, split_histories(opened))
    except RecursionError:
        raise _recursed(opened, max_depth) from None


def build_sources(
    sources: list[OpenedSource],
    *,
    codec: Any = None,
    decode_payloads: bool = True,
    allow_empty: bool = False,
) -> tuple[list[HistoryParts], list[tuple[int, ToolkitError]]]:
    """The columns of every history of many sources, and the errors of those that fail.

    The histories of all sources are built together (see
    :func:`toolkit.histories.events.build_parts`); if that fails, each source is built alone,
    so one damaged file costs only itself. Returns the parts of the sources that succeeded,
    in order, and ``(index into sources, error)`` for each that failed (or held no events
    when ``allow_empty`` is false).
    """
    options = {"codec": codec, "decode_payloads": decode_payloads}
    try:
        with paused_gc():
            items = [(h, k, s.source.name) for s in sources for k, h in enumerate(s.histories)]
            parts = build_parts(items, **options)
    except ToolkitError as exc:
        if len(sources) == 1:
            return [], [(0, exc)]
        return _build_each(sources, options, allow_empty)
    except RecursionError:
        if len(sources) == 1:
            return [], [(0, _recursed(sources[0].source, None))]
        return _build_each(sources, options, allow_empty)
    if allow_empty:
        return parts, []
    sizes: dict[str, int] = {}
    for part in parts:
        for facts, count in zip(part.facts, part.counts.tolist(), strict=True):
            sizes[facts[0]] = sizes.get(facts[0], 0) + count
    empty = {s.source.name for s in sources if not sizes.get(s.source.name)}
    if not empty:
        return parts, []
    failures = [(k, _empty(s.source.name)) for k, s in enumerate(sources) if s.source.name in empty]
    kept = [_without(part, empty) for part in parts]
    return [part for part in kept if part.facts], failures


def _build_each(
    sources: list[OpenedSource], options: dict[str, Any], allow_empty: bool
) -> tuple[list[HistoryParts], list[tuple[int, ToolkitError]]]:
    parts: list[HistoryParts] = []
    failures: list[tuple[int, ToolkitError]] = []
    for index, source in enumerate(sources):
        found, failed = build_sources([source], **options, allow_empty=allow_empty)
        parts += found
        failures += [(index, error) for _, error in failed]
    return parts, failures


def _without(part: HistoryParts, sources: set[str]) -> HistoryParts:
    """``part`` without the (event-less) histories of ``sources``."""
    keep = [k for k, facts in enumerate(part.facts) if facts[0] not in sources]
    return dataclasses.replace(
        part, facts=[part.facts[k] for k in keep], counts=part.counts[keep]
    )


def _empty(name: str) -> HistoryFormatError:
    return HistoryFormatError(
        name,
        "the history holds no events",
        expected="at least one event (pass allow_empty=True to accept an empty history)",
    )


def _recursed(opened: Source, max_depth: int | None) -> HistoryFormatError:
    """The decoder recursed as deep as the interpreter allows: locate the nesting that did it."""
    limit = max_depth or DECODER_DEPTH
    return _too_deep(opened, limit, deepest_point(opened.data or b"", limit)[1])


_BUILD_OPTIONS = ("codec", "decode_payloads", "allow_empty")
#: The options of :func:`read_history` a batch of files passes on to each (``name`` aside: each
#: file is named by its path).
READ_OPTIONS = (*_BUILD_OPTIONS, "max_bytes", "max_depth", "workflow_id_from")


def check_read_options(options: dict[str, Any], caller: str) -> None:
    """A ``TypeError`` naming the option ``caller`` was given that no reader takes (a
    misspelling would otherwise surface from deep inside the first file's read, or a
    worker's)."""
    unknown = sorted(set(options) - set(READ_OPTIONS))
    if unknown:
        raise TypeError(
            f"{caller}() got unexpected option{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(repr, unknown))}; it takes its own keywords and read_history's "
            f"{', '.join(READ_OPTIONS)}"
        )


def read_many_parts(
    sources: list[Any], names: list[str | None] | None = None, **read_options: Any
) -> tuple[list[HistoryParts], dict[int, ToolkitError]]:
    """:func:`read_history_parts` of many sources at once, built together (a batch of small
    files costs a few column fills, not a few per file).

    Returns the parts of the sources that could be read, in order, and the error of each
    that could not, by its index in ``sources``; ``read_options`` are :func:`read_history`'s.
    """
    build = {key: read_options.pop(key) for key in _BUILD_OPTIONS if key in read_options}
    opened: list[OpenedSource] = []
    at: list[int] = []
    errors: dict[int, ToolkitError] = {}
    for index, source in enumerate(sources):
        try:
            name = names[index] if names is not None else None
            opened.append(open_histories(source, name=name, **read_options))
            at.append(index)
        except ToolkitError as exc:
            errors[index] = exc
    parts, failed = build_sources(opened, **build)
    errors.update((at[k], exc) for k, exc in failed)
    return parts, dict(sorted(errors.items()))
