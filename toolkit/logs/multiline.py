"""Which lines continue the record before them (multi-line records).

Go panics and goroutine dumps, Python tracebacks (3.11 ``^^^`` markers, chained blocks, exception
groups), Java stacks (``at``, ``Caused by:``, ``... 12 more``), Go race reports and the closing
lines of pretty-printed JSON belong to the record before them. Indented and blank lines always
do; headerless lines do when the record's family can hold raw newlines (see
:data:`toolkit.logs.formats.ONE_LINE_FAMILIES`).
"""

from __future__ import annotations

import re

__all__ = ["continuation"]

_TRACEBACK = re.compile(
    r"Traceback \(most recent call last\):|During handling of the above exception, another "
    r"exception occurred:|The above exception was the direct cause of the following exception:"
    r"|\s*\+ Exception Group Traceback"
)
_PY_EXCEPTION = re.compile(r"[A-Za-z_][\w.]*(?:: .*|:)?$")
_GOROUTINE = re.compile(r"goroutine \d+ \[")
_GO_FRAME = re.compile(
    r"created by |\S+\(.*\)(?: in goroutine \d+)?$|exit status \d+$|\[signal |\[recovered\]"
    r"|(?:[\w.\-]+/)*[\w.\-]+\.[\w.()*\[\]{}\-]+$"
)
_JAVA = re.compile(
    r"Caused by: |Suppressed: |\.\.\. \d+ (?:more|common frames omitted)"
    r"|(?:[a-zA-Z_$][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error|Throwable)\b"
)
_RACE = re.compile(r"(?:Previous )?(?:[Rr]ead|[Ww]rite) at 0x[0-9a-f]+ by |Goroutine \d+ \(|={18}$")
_JSON_CLOSER = re.compile(r"[}\]],?$")


def continuation(text: str, family: str, mode: str | None, one_line: bool) -> str | None:
    """Decide whether ``text`` continues a record of ``family`` in multi-line ``mode``.

    Returns
    -------
    str or None
        None when the line starts a record of its own; otherwise the record's new mode:
        ``"traceback"``, ``"goroutine"``, ``"java"``, ``"race"`` or ``""`` (plain continuation).
    """
    if not text or text[0] in " \t" or not text.strip():
        return mode or ""
    if _TRACEBACK.match(text):
        return "traceback"
    if mode == "traceback" and _PY_EXCEPTION.match(text):
        return ""
    if _GOROUTINE.match(text):
        return "goroutine"
    if mode == "goroutine" and _GO_FRAME.match(text):
        return "goroutine"
    if _JAVA.match(text):
        return "java"
    if (family == "go_race" or mode == "race") and _RACE.match(text):
        return "race"
    if _JSON_CLOSER.match(text):
        return mode or ""
    if not one_line:
        return mode or ""
    return None
