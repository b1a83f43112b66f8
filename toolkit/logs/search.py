"""Search log records the way a person reads them: message, then each structured field, then raw.

``toolkit logs --grep`` used to match the raw line and show the message, so a pattern that only
matched inside a field (``error="agent run: duplicate tool: ..."``) printed "agent run failed"
with no hint of why. :func:`grep_records` also searches the decoded field values (where JSON or
logfmt escaping is gone, so ``duplicate tool: "get_weather"`` matches as written) and says where
each record matched.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import orjson
import pandas as pd

__all__ = ["grep_records"]

_CONTEXT = 40  # characters kept on each side of the match in ``matched``


def _excerpt(text: str, match: re.Match[str]) -> str:
    start, end = max(0, match.start() - _CONTEXT), min(len(text), match.end() + _CONTEXT)
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")


def _field_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, dict | list):
        return orjson.dumps(value, default=str).decode()
    return str(value)


def _where(pattern: re.Pattern[str], message: Any, fields: Any, raw: Any) -> str | None:
    if isinstance(message, str) and (m := pattern.search(message)):
        return f"message: {_excerpt(message, m)}"
    if isinstance(fields, Mapping):
        for key, value in fields.items():
            text = _field_text(value)
            if text is not None and (m := pattern.search(text)):
                return f"{key}: {_excerpt(text, m)}"
    if isinstance(raw, str) and (m := pattern.search(raw)):
        return f"raw: {_excerpt(raw, m)}"
    return None


def grep_records(logs: pd.DataFrame, pattern: re.Pattern[str]) -> pd.DataFrame:
    """The records matching ``pattern`` in their message, a field value or the raw line.

    Parameters
    ----------
    logs
        A frame from :func:`toolkit.read_logs`.
    pattern
        A compiled regular expression.

    Returns
    -------
    pandas.DataFrame
        The matching rows of ``logs`` with a ``matched`` column: where the first match is
        (``message``, a field's key, or ``raw``) and the text around it.
    """
    columns = logs.reindex(columns=["message", "fields", "raw"])
    where = [_where(pattern, message, fields, raw)
             for message, fields, raw in columns.itertuples(index=False)]
    found = logs.assign(matched=where)
    return found[found["matched"].notna()]
