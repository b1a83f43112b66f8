"""``read_history``: any source, any dialect -> the events frame."""

from __future__ import annotations

from typing import Any

import pandas as pd

from toolkit.errors import HistoryFormatError
from toolkit.gc_pause import paused_gc
from toolkit.histories.dialects import split_histories
from toolkit.histories.events import HistoryParts, frame_from_parts, history_parts
from toolkit.histories.sources import open_source

__all__ = ["read_history", "read_history_parts"]


def read_history(
    source: Any,
    *,
    codec: Any = None,
    decode_payloads: bool = True,
    allow_empty: bool = False,
    name: str | None = None,
) -> pd.DataFrame:
    """Read one workflow history (or every history in a multi-history source) into a DataFrame.

    Parameters
    ----------
    source
        A path (``.json``, ``.json.gz``, ``.bin``/``.binpb``, a Cloud export file), ``bytes``,
        JSON text, an open file, parsed JSON (``dict``/``list``), a
        ``temporalio.client.WorkflowHistory`` or a ``temporalio.api.history.v1.History``.
        Every dialect in :mod:`toolkit.histories.dialects` is recognised automatically.
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
        )
        return frame_from_parts(parts)


def read_history_parts(
    source: Any,
    *,
    codec: Any = None,
    decode_payloads: bool = True,
    allow_empty: bool = False,
    name: str | None = None,
) -> list[HistoryParts]:
    """What :func:`read_history` reads, as columns not yet made a frame.

    :func:`toolkit.histories.events.frame_from_parts` turns the parts of one source, or of a
    whole batch of sources, into one frame (:func:`toolkit.read_histories` builds one frame
    per batch, not one per file). Parameters and errors are those of :func:`read_history`.
    """
    opened = open_source(source, name=name)
    with paused_gc():
        histories = split_histories(opened)
        parts = history_parts(histories, opened.name, codec=codec, decode_payloads=decode_payloads)
    if not any(len(part) for part in parts) and not allow_empty:
        raise HistoryFormatError(
            opened.name,
            "the history holds no events",
            expected="at least one event (pass allow_empty=True to accept an empty history)",
        )
    return parts
