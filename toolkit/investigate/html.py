"""Building blocks of the HTML reports: a page, tables of frames, badges, embedded charts.

Everything a report shows goes through here, so that a cell never reads ``NaT``, ``None``,
``nan`` or ``[]`` (:func:`toolkit.text.shown` says what is unknown instead), times read in UTC to
the millisecond, wide tables scroll inside their own box rather than the page, and charts are
embedded (the page needs no network). The styles are ``report.css`` beside this module, scoped
to ``.tkr`` so that a notebook output can use the same markup.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from toolkit.text import duration, is_missing, nbytes, shown, when

__all__ = ["badge", "css", "escape", "figure_html", "page", "table_html", "value_html"]

#: Columns whose values are long text: given room to wrap (the reader's message).
_LONG = ("message", "failure_message", "last_failure_message", "text", "explanation", "reason",
         "raw", "title", "sequence", "failure", "expected", "actual", "stuck_reason")  # fmt: skip


def escape(value: Any) -> str:
    return html.escape(str(value), quote=True)


@cache
def css() -> str:
    """The report's styles (``report.css``)."""
    return (Path(__file__).with_name("report.css")).read_text(encoding="utf-8")


def page(title: str, body: str) -> str:
    """A complete, self-contained HTML page: styles inline, no script, no network."""
    return ("<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{escape(title)}</title><style>{css()}</style></head>"
            f"<body style='margin:0'><main class='tkr'>{body}</main></body></html>")  # fmt: skip


def badge(text: str, tone: str | None = None) -> str:
    """A coloured pill: severities (``critical`` ...) and run statuses (``completed`` ...)."""
    tone = tone or text
    return f"<span class='badge {escape(tone)}'>{escape(text.replace('_', ' '))}</span>"


#: Columns of protobuf enum names, shown without their enum's prefix.
_ENUM_PREFIXES = {"retry_state": "RETRY_STATE_", "cause": "WORKFLOW_TASK_FAILED_CAUSE_"}


def value_html(value: Any, column: str = "") -> str:
    """One cell as HTML text: times and durations in words, lists joined, unknowns said."""
    if type(value).__module__ == "toolkit.histories.columns.lazy":
        value = value.value
    if is_missing(value):
        return "<span class='more'>—</span>"
    number = isinstance(value, int | float | np.integer | np.floating) and not isinstance(
        value, bool | np.bool_)
    if number and column.endswith("_bytes"):  # sizes as people say them
        return escape(nbytes(value))
    if number and column.endswith("_share"):
        return escape(f"{float(value):.0%}")
    if isinstance(value, str) and value.startswith(_ENUM_PREFIXES.get(column, "\0")):
        # RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED -> maximum attempts reached: a narrower column
        return escape(value[len(_ENUM_PREFIXES[column]):].lower().replace("_", " "))
    if isinstance(value, pd.Timestamp | np.datetime64):
        return escape(when(value))
    if isinstance(value, pd.Timedelta | np.timedelta64):
        return escape(duration(value))
    if isinstance(value, Mapping):
        from toolkit.datasets.arrow import json_text

        return f"<code>{escape(_clip(json_text(dict(value)) or '', 300))}</code>"
    if isinstance(value, list | tuple | np.ndarray) and any(
        isinstance(v, Mapping | list) for v in value
    ):
        from toolkit.datasets.arrow import json_text

        return f"<code>{escape(_clip(json_text(list(value)) or '', 300))}</code>"
    text = shown(value)
    if column in _LONG:
        return escape(_clip(text, 1200))
    return escape(_clip(text, 300))


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def table_html(
    frame: pd.DataFrame,
    columns: Sequence[str] | None = None,
    *,
    limit: int = 12,
    headers: Mapping[str, str] | None = None,
    cells: Mapping[str, Any] | None = None,
    highlight: Iterable[bool] | None = None,
    more: str = "",
) -> str:
    """``frame`` as a table in a scrolling box: at most ``limit`` rows, then how many more.

    ``columns`` default to those with a value somewhere; ``headers`` rename them for the reader;
    ``cells`` maps a column to a function giving a row's cell as HTML (links, badges);
    ``highlight`` marks rows (the evidence itself among its context); ``more`` says where the
    rest of the rows are.
    """
    if frame is None or frame.empty:
        return "<p class='more'>No rows.</p>"
    chosen = [c for c in (columns or frame.columns) if c in frame.columns]
    if columns is None:
        chosen = [c for c in chosen if not frame[c].map(is_missing).all()]
    shown_rows = frame.head(limit)
    marks = list(highlight)[: len(shown_rows)] if highlight is not None else []
    names = headers or {}
    numeric = {c for c in chosen if pd.api.types.is_numeric_dtype(frame[c])
               and not pd.api.types.is_bool_dtype(frame[c])}  # fmt: skip
    head = "".join(f"<th class='{'num' if c in numeric else ''}'>"
                   f"{escape(names.get(c, c.replace('_', ' ')))}</th>" for c in chosen)
    rows = []
    for index, (_, row) in enumerate(shown_rows.iterrows()):
        tds = []
        for column in chosen:
            render = (cells or {}).get(column)
            body = render(row) if render else value_html(row[column], column)
            kind = "num" if column in numeric else ("long" if column in _LONG else "")
            tds.append(f"<td class='{kind}'>{body}</td>")
        hit = " class='hit'" if index < len(marks) and marks[index] else ""
        rows.append(f"<tr{hit}>{''.join(tds)}</tr>")
    rest = len(frame) - len(shown_rows)
    tail = (f"<p class='more'>and {rest:,} more row{'s' * (rest != 1)}"
            f"{' ' + more if more else ''}.</p>") if rest > 0 else ""  # fmt: skip
    return (f"<div class='scroll'><table><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table></div>{tail}")


def figure_html(figure: Any, alt: str, caption: str = "", *, dpi: int = 110) -> str:
    """A matplotlib figure embedded as a PNG (no file beside the page), with its caption."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    width, height = (figure.get_size_inches() * dpi).round().astype(int)
    caption_html = f"<figcaption>{escape(caption)}</figcaption>" if caption else ""
    return (f"<figure><img alt='{escape(alt)}' width='{width}' height='{height}' "
            f"src='data:image/png;base64,{data}'/>{caption_html}</figure>")
