"""Bytes from anywhere: a path, ``.gz``, bytes, text, an open file, parsed JSON or SDK objects.

The result is a :class:`Source`: either raw bytes (JSON of any dialect, or binary protobuf) or
protobuf ``History`` messages already in memory, plus what the source itself says about the run
(a run id in the file name, a namespace in a Cloud export path, a workflow id on an SDK object).
"""

from __future__ import annotations

import os
import re
import stat
import sys
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from temporalio.api.history.v1 import History

from toolkit.errors import HistoryFormatError
from toolkit.limits import MAX_BYTES, gunzip_limited, too_large

__all__ = ["Source", "open_source"]

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
_CLOUD_EXPORT = re.compile(r"export/([^/]+)/\d{4}/\d{1,2}/\d{1,2}/")


@dataclass
class Source:
    """One source's content and what its name tells.

    Attributes
    ----------
    name : str
        The path, or a description (``<bytes>``, ``<str>``, ``<dict>``, ``<History>``).
    data : bytes or None
        The (decompressed) content, when the source is serialised.
    histories : list of History or None
        Protobuf histories, when the source is already a message.
    workflow_id, run_id, namespace : str or None
        Hints from the source's name or object.
    """

    name: str
    data: bytes | None = None
    histories: list[History] | None = None
    workflow_id: str | None = None
    run_id: str | None = None
    namespace: str | None = None


#: ``workflow_id_from=``: a regular expression searched in the source's path (named groups
#: ``workflow_id``, ``run_id``, ``namespace``; else group 1 is the workflow id), or a function
#: of the path returning the workflow id.
IdsFromName = str | re.Pattern[str] | Callable[[str], str | None] | None


def _ids_from_name(text: str, rule: IdsFromName) -> dict[str, str]:
    if rule is None:
        return {}
    if callable(rule) and not isinstance(rule, re.Pattern):
        found = rule(text)
        return {"workflow_id": found} if found else {}
    match = re.search(rule, text)
    if match is None:
        return {}
    named = {k: v for k, v in match.groupdict().items() if v}
    if not match.re.groupindex and match.groups():
        named = {"workflow_id": match.group(1)} if match.group(1) else {}
    return {k: v for k, v in named.items() if k in ("workflow_id", "run_id", "namespace")}


def _path_hints(path: Path, rule: IdsFromName = None) -> dict[str, str | None]:
    text = path.as_posix()
    run_ids = _UUID.findall(path.name) or _UUID.findall(path.parent.name)
    cloud = _CLOUD_EXPORT.search(text)
    hints: dict[str, str | None] = {
        "run_id": run_ids[-1] if run_ids else None,
        "namespace": cloud.group(1) if cloud else None,
        "workflow_id": None,
    }
    hints.update(_ids_from_name(text, rule))  # the caller's rule wins over the guesses
    return hints


def _too_large(name: str, max_bytes: int) -> HistoryFormatError:
    return HistoryFormatError(
        name,
        too_large(max_bytes),
        position=f"byte {max_bytes:,} of the content",
        expected="a source within the limit (pass a larger max_bytes=, or max_bytes=None)",
    )


def _gunzip(data: bytes, name: str, max_bytes: int | None) -> bytes:
    if data[:2] != b"\x1f\x8b":
        return data
    try:
        content, complete = gunzip_limited(data, max_bytes)
    except (EOFError, OSError, zlib.error) as exc:
        raise HistoryFormatError(
            name, f"gzip stream is damaged or truncated ({exc})", expected="a complete gzip file"
        ) from None
    if not complete:
        raise _too_large(name, max_bytes)  # type: ignore[arg-type]
    return content


def _file_bytes(path: Path, label: str, max_bytes: int | None) -> bytes:
    """The bytes of the regular file at ``path``: one open, one ``fstat`` and one read (a
    batch of small files paid two ``stat`` calls more each). Opened without blocking, so a FIFO
    or device named like a history is an error, not a read that waits forever."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        raise HistoryFormatError(
            label, "no such file", expected="a path to an exported history, or JSON text"
        ) from None
    except OSError as exc:
        raise HistoryFormatError(label, f"cannot be opened ({exc.strerror})",
                                 expected="a readable file") from None  # fmt: skip
    found = os.fstat(fd)
    if not stat.S_ISREG(found.st_mode):
        os.close(fd)
        what = "a directory" if stat.S_ISDIR(found.st_mode) else "not a regular file"
        raise HistoryFormatError(
            label, f"{what}, not a history file", expected="a path to an exported history"
        )
    with open(fd, "rb", closefd=True) as handle:
        if max_bytes is not None and found.st_size > max_bytes:
            raise _too_large(label, max_bytes)
        try:
            return handle.read()
        except OSError as exc:
            raise HistoryFormatError(label, f"cannot be read ({exc.strerror})",
                                     expected="a readable file") from None  # fmt: skip


def _read_bounded(read: Any, name: str, max_bytes: int | None) -> Any:
    """``read()``, or ``read(max_bytes + 1)`` and an error if that much came back."""
    if max_bytes is None:
        return read()
    content = read(max_bytes + 1)
    if len(content) > max_bytes:
        raise _too_large(name, max_bytes)
    return content


def _looks_like_json_text(text: str) -> bool:
    stripped = text.lstrip()
    return stripped[:1] in ("{", "[", '"') or stripped == ""


def open_source(
    source: Any,
    *,
    name: str | None = None,
    max_bytes: int | None = MAX_BYTES,
    workflow_id_from: IdsFromName = None,
) -> Source:
    """Turn any supported ``source`` into a :class:`Source`.

    ``max_bytes`` bounds what is read from a file and what gzip content expands to
    (:mod:`toolkit.limits`); ``None`` removes the bound. ``workflow_id_from`` reads ids from
    the path (see :data:`IdsFromName`).

    Raises
    ------
    HistoryFormatError
        For a missing file, an unsupported object, a damaged gzip stream, or content beyond
        ``max_bytes``.
    """
    # A WorkflowHistory exists only once temporalio.client is imported: importing it here would
    # cost every worker process of a pool a quarter of a second.
    client = sys.modules.get("temporalio.client")
    if client is not None and isinstance(source, client.WorkflowHistory):
        return Source(
            name or f"<WorkflowHistory {source.workflow_id}>",
            histories=[History(events=source.events)],
            workflow_id=source.workflow_id,
        )
    if isinstance(source, History):
        return Source(name or "<History>", histories=[source])
    if isinstance(source, (dict, list)):
        return Source(name or f"<{type(source).__name__}>", data=orjson.dumps(source))
    if isinstance(source, (bytes, bytearray, memoryview)):
        label = name or "<bytes>"
        return Source(label, data=_gunzip(bytes(source), label, max_bytes))
    if isinstance(source, str) and _looks_like_json_text(source) and not os.path.exists(source):
        return Source(name or "<str>", data=source.encode("utf-8"))
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        label = name or str(path)
        hints = _path_hints(path, workflow_id_from)
        data = _gunzip(_file_bytes(path, label, max_bytes), label, max_bytes)
        return Source(label, data=data, run_id=hints["run_id"], namespace=hints["namespace"],
                      workflow_id=hints["workflow_id"])  # fmt: skip
    if hasattr(source, "read"):
        label = name or str(getattr(source, "name", "<file>"))
        content = _read_bounded(source.read, label, max_bytes)
        if isinstance(content, str):
            content = content.encode("utf-8")
        if not isinstance(content, (bytes, bytearray)):
            raise HistoryFormatError(label, "the file object returned neither bytes nor text")
        hints = _path_hints(Path(label), workflow_id_from) if not label.startswith("<") else {}
        return Source(
            label,
            data=_gunzip(bytes(content), label, max_bytes),
            run_id=hints.get("run_id"),
            namespace=hints.get("namespace"),
            workflow_id=hints.get("workflow_id"),
        )
    raise HistoryFormatError(
        name or f"<{type(source).__name__}>",
        f"cannot read a history from a {type(source).__name__}",
        expected=(
            "a path, bytes, str, file object, parsed JSON (dict/list), "
            "temporalio.client.WorkflowHistory or temporalio.api.history.v1.History"
        ),
    )


def describe(data: bytes, position: int, width: int = 30) -> str:
    """A short excerpt of ``data`` around ``position``, for error messages."""
    start = max(0, position - width // 2)
    excerpt = data[start : start + width].decode("utf-8", errors="replace")
    return excerpt.replace("\n", "\\n")
