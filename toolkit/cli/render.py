"""Frames as plain-text tables that fit the terminal, or as JSON Lines for scripts."""

from __future__ import annotations

import datetime as dt
import shutil
import sys
import textwrap
from collections.abc import Sequence
from typing import Any, TextIO

import numpy as np
import orjson
import pandas as pd

from toolkit.datasets.arrow import _missing, json_text

__all__ = ["WRAP_COLUMNS", "cell_text", "plain", "print_json", "print_table", "terminal_width"]

_MIN_WIDTH = 6
_GAP = "  "


def plain(value: Any) -> Any:
    """A cell as a JSON-ready value: lazy cells decoded, times ISO 8601, durations in seconds."""
    if type(value).__module__ == "toolkit.histories.columns.lazy":
        value = value.value
    if _missing(value):
        return None
    if isinstance(value, pd.Timestamp | dt.datetime):
        return value.isoformat()
    if isinstance(value, pd.Timedelta | dt.timedelta):
        return value.total_seconds()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, pd.DataFrame):
        return [{str(k): plain(v) for k, v in row.items()} for row in value.to_dict("records")]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return [plain(v) for v in value]
    return value


def _duration_text(seconds: float) -> str:
    sign, seconds = ("-" if seconds < 0 else ""), abs(seconds)
    if seconds < 1e-3:
        return f"{sign}{seconds * 1e6:.0f}µs"
    if seconds < 1:
        return f"{sign}{seconds * 1e3:.1f}ms"
    if seconds < 60:
        return f"{sign}{seconds:.2f}s"
    minutes, rest = divmod(seconds, 60)
    hours, minutes = divmod(int(minutes), 60)
    if hours:
        return f"{sign}{hours}:{minutes:02d}:{rest:06.3f}"
    return f"{sign}{minutes}m{rest:06.3f}s"


def cell_text(value: Any) -> str:
    """One cell as a single line of text (times in UTC to the millisecond, durations human)."""
    if isinstance(value, pd.Timestamp | dt.datetime) and not _missing(value):
        utc = pd.Timestamp(value).tz_convert("UTC") if pd.Timestamp(value).tzinfo else value
        return pd.Timestamp(utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    if isinstance(value, pd.Timedelta | dt.timedelta) and not _missing(value):
        return _duration_text(value.total_seconds())
    value = plain(value)
    if value is None:
        return ""
    if isinstance(value, float):
        text = f"{value:.6g}"
    elif isinstance(value, str):
        text = value
    elif isinstance(value, bool | int):
        text = str(value)
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        text = " ".join(value)
    else:
        text = json_text(value) or ""
    return text.replace("\r", "").replace("\n", " ⏎ ").replace("\t", " ")


def terminal_width(stream: TextIO = sys.stdout) -> int:
    """Columns available when writing to a terminal; 0 (no limit) when piped."""
    try:
        is_tty = stream.isatty()
    except (AttributeError, ValueError):
        is_tty = False
    return shutil.get_terminal_size((100, 24)).columns if is_tty else 0


#: Columns whose text is the finding: wrapped onto more lines rather than cut.
WRAP_COLUMNS = ("message", "failure_message", "core_message", "model_message", "go_message",
                "java_message", "last_failure_message", "reason")  # fmt: skip
_WRAP_MIN = 24


def _fit(headers: list[int], contents: list[int], limit: int, wrap: int | None) -> list[int]:
    """Column widths that fit ``limit`` characters (0: no limit).

    Headers are never cut. The ``wrap`` column (the message) takes whatever the other columns
    leave, but at least a readable minimum; if that is not enough the other columns shrink,
    widest first, down to their header's width.
    """
    widths = [max(h, c) for h, c in zip(headers, contents, strict=True)]
    if limit <= 0:
        return widths
    budget = limit - len(_GAP) * (len(widths) - 1)
    if wrap is not None and sum(widths) > budget:
        others = sum(widths) - widths[wrap]
        floor = max(headers[wrap], min(contents[wrap], _WRAP_MIN))
        widths[wrap] = max(floor, budget - others)
    floors = [max(h, _MIN_WIDTH) if i != wrap else widths[i] for i, h in enumerate(headers)]
    while sum(widths) > budget:  # one character at a time from the widest: cuts stay even
        shrinkable = [i for i in range(len(widths)) if widths[i] > floors[i]]
        if not shrinkable:
            break
        widths[max(shrinkable, key=widths.__getitem__)] -= 1
    return widths


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def _wrap_column(names: list[str]) -> int | None:
    """The column to wrap: the first message column present (None: cut what does not fit)."""
    for name in WRAP_COLUMNS:
        if name in names:
            return names.index(name)
    return None


def print_table(
    frame: pd.DataFrame,
    columns: Sequence[str] | None = None,
    *,
    width: int | None = None,
    out: TextIO = sys.stdout,
) -> None:
    """Print ``frame`` as an aligned text table that fits ``width`` (default: the terminal's).

    Headers are printed whole. A message column (``message``, ``failure_message``, ...) is
    wrapped onto continuation lines instead of being cut; other columns that do not fit are
    cut with ``…``.
    """
    names = [c for c in (columns or list(frame.columns)) if c in frame.columns]
    cells = [[cell_text(v) for v in frame[name].tolist()] for name in names]
    contents = [max([0, *(len(text) for text in column)]) for column in cells]
    headers = [len(name) for name in names]
    limit = terminal_width(out) if width is None else width
    wrap = _wrap_column(names)
    widths = _fit(headers, contents, limit, wrap)
    numeric = [pd.api.types.is_numeric_dtype(frame[n]) and not pd.api.types.is_bool_dtype(frame[n])
               for n in names]  # fmt: skip

    def line(values: Sequence[str]) -> str:
        parts = []
        for text, size, right in zip(values, widths, numeric, strict=True):
            clipped = _clip(text, size)
            parts.append(clipped.rjust(size) if right else clipped.ljust(size))
        return _GAP.join(parts).rstrip()

    out.write(line(names) + "\n")
    out.write(_GAP.join("-" * w for w in widths) + "\n")
    for row in zip(*cells, strict=True):
        if wrap is None or len(row[wrap]) <= widths[wrap]:
            out.write(line(row) + "\n")
            continue
        pieces = textwrap.wrap(row[wrap], widths[wrap], break_on_hyphens=False) or [""]
        out.write(line([*row[:wrap], pieces[0], *row[wrap + 1 :]]) + "\n")
        blank = [""] * len(row)
        for piece in pieces[1:]:
            out.write(line([*blank[:wrap], piece, *blank[wrap + 1 :]]) + "\n")


def print_json(value: Any, out: TextIO = sys.stdout) -> None:
    """Print JSON Lines: a frame as one object per row, any other value as one line."""
    rows = value.to_dict("records") if isinstance(value, pd.DataFrame) else [value]
    for row in rows:
        text = orjson.dumps(plain(row), default=lambda v: json_text(v) or None)
        out.write(text.decode("utf-8") + "\n")
