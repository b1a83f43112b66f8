"""Bytes from anywhere: a path, ``.gz``, bytes, text, an open file, parsed JSON or SDK objects.

The result is a :class:`Source`: either raw bytes (JSON of any dialect, or binary protobuf) or
protobuf ``History`` messages already in memory, plus what the source itself says about the run
(a run id in the file name, a namespace in a Cloud export path, a workflow id on an SDK object).
"""

from __future__ import annotations

import gzip
import os
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from temporalio.api.history.v1 import History

from toolkit.errors import HistoryFormatError

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


def _path_hints(path: Path) -> dict[str, str | None]:
    text = path.as_posix()
    run_ids = _UUID.findall(path.name) or _UUID.findall(path.parent.name)
    cloud = _CLOUD_EXPORT.search(text)
    return {
        "run_id": run_ids[-1] if run_ids else None,
        "namespace": cloud.group(1) if cloud else None,
    }


def _gunzip(data: bytes, name: str) -> bytes:
    if data[:2] != b"\x1f\x8b":
        return data
    try:
        return gzip.decompress(data)
    except (EOFError, OSError, zlib.error) as exc:
        raise HistoryFormatError(
            name, f"gzip stream is damaged or truncated ({exc})", expected="a complete gzip file"
        ) from None


def _looks_like_json_text(text: str) -> bool:
    stripped = text.lstrip()
    return stripped[:1] in ("{", "[", '"') or stripped == ""


def open_source(source: Any, *, name: str | None = None) -> Source:
    """Turn any supported ``source`` into a :class:`Source`.

    Raises
    ------
    HistoryFormatError
        For a missing file, an unsupported object, or a damaged gzip stream.
    """
    from temporalio.client import WorkflowHistory

    if isinstance(source, WorkflowHistory):
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
        return Source(label, data=_gunzip(bytes(source), label))
    if isinstance(source, str) and _looks_like_json_text(source) and not os.path.exists(source):
        return Source(name or "<str>", data=source.encode("utf-8"))
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        label = name or str(path)
        if not path.is_file():
            raise HistoryFormatError(
                label, "no such file", expected="a path to an exported history, or JSON text"
            )
        hints = _path_hints(path)
        data = _gunzip(path.read_bytes(), label)
        return Source(label, data=data, run_id=hints["run_id"], namespace=hints["namespace"])
    if hasattr(source, "read"):
        label = name or str(getattr(source, "name", "<file>"))
        content = source.read()
        if isinstance(content, str):
            content = content.encode("utf-8")
        if not isinstance(content, (bytes, bytearray)):
            raise HistoryFormatError(label, "the file object returned neither bytes nor text")
        hints = _path_hints(Path(label)) if not label.startswith("<") else {}
        return Source(
            label,
            data=_gunzip(bytes(content), label),
            run_id=hints.get("run_id"),
            namespace=hints.get("namespace"),
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
