"""A message bus's story of one failing command, from the logs: errors, retries, dead letter.

Examples
--------
>>> toolkit.delivery_timeline(toolkit.read_logs("worker.log"))        # doctest: +SKIP
"""

from __future__ import annotations

import pandas as pd

from toolkit.logs.detectors import duplicate_tools, retries

__all__ = ["delivery_timeline"]


def delivery_timeline(logs: pd.DataFrame) -> pd.DataFrame:
    """Duplicate-tool errors, delivery attempts and dead-letters of a log, in time order.

    Read from :func:`toolkit.duplicate_tools`, which links each failure to its retry and
    dead-letter records, so each record appears once under its own reading.

    Parameters
    ----------
    logs
        :func:`toolkit.read_logs` output.

    Returns
    -------
    pandas.DataFrame
        ``line``, ``ts``, ``seconds`` (since the first row), ``kind`` (``duplicate_tool``,
        ``retry``, ``dead_letter``), ``attempt`` (Int64, retries only), ``detail`` (tool name,
        retry subject or dead-letter reason). :func:`toolkit.plots.plot_delivery_timeline`
        draws it.
    """
    found = duplicate_tools(logs)
    subjects = retries(logs).set_index("line")["subject"]
    ts_by_line = logs.drop_duplicates("line").set_index("line")["ts"]
    rows = []
    for f in found.itertuples(index=False):
        rows.append({"line": f.line, "kind": "duplicate_tool", "attempt": None, "detail": f.tool})
        if not pd.isna(f.retry_line):
            rows.append({"line": int(f.retry_line), "kind": "retry", "attempt": f.attempt,
                         "detail": subjects.get(int(f.retry_line))})  # fmt: skip
        if not pd.isna(f.dead_letter_line):
            rows.append({"line": int(f.dead_letter_line), "kind": "dead_letter", "attempt": None,
                         "detail": f.dead_letter_reason})  # fmt: skip
    frame = pd.DataFrame(rows, columns=["line", "kind", "attempt", "detail"])
    frame = frame.drop_duplicates("line")  # a finding read from a retry record is that record
    frame.insert(1, "ts", frame["line"].map(ts_by_line))
    frame = frame.sort_values(["ts", "line"], kind="stable").reset_index(drop=True)
    frame["line"] = frame["line"].astype("int64")
    frame["attempt"] = pd.array(frame["attempt"].tolist(), dtype="Int64")
    start = frame["ts"].min()
    frame.insert(2, "seconds", (frame["ts"] - start).dt.total_seconds())
    return frame
