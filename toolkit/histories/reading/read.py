"""``read_history``: any source, any dialect -> the events frame."""

from __future__ import annotations

from typing import Any

import pandas as pd

from toolkit.errors import HistoryFormatError
from toolkit.gc_pause import paused_gc
from toolkit.histories.events import HistoryParts, frame_from_parts, history_parts
from toolkit.histories.reading.dialects import split_histories
from toolkit.histories.reading.sources import IdsFromName, Source, open_source
from toolkit.limits import MAX_BYTES, deepest_point

__all__ = ["DECODER_DEPTH", "read_history", "read_history_parts"]

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
    opened = open_source(source, name=name, max_bytes=max_bytes, workflow_id_from=workflow_id_from)
    if max_depth is not None and opened.data is not None:
        depth, byte = deepest_point(opened.data, max_depth)
        if depth > max_depth:
            raise _too_deep(opened, max_depth, byte)
    try:
        with paused_gc():
            histories = split_histories(opened)
            parts = history_parts(
                histories, opened.name, codec=codec, decode_payloads=decode_payloads
            )
    except RecursionError:
        # The decoder recursed as deep as the interpreter allows: locate the nesting that did it.
        limit = max_depth or DECODER_DEPTH
        raise _too_deep(opened, limit, deepest_point(opened.data or b"", limit)[1]) from None
    if not any(len(part) for part in parts) and not allow_empty:
        raise HistoryFormatError(
            opened.name,
            "the history holds no events",
            expected="at least one event (pass allow_empty=True to accept an empty history)",
        )
    return parts
