"""What patch and version markers identify, in every layout the SDKs have written.

One reader for ``tk.markers`` and for the command identity of ``tk.commands``, so both agree.
Each function takes ``first(key)``: the first decoded value of a marker detail entry (or None).

Layouts (from the SDKs' sources; nothing here is executed):

- sdk-core ``core_patch``, current: ``patch-data`` holds one JSON payload ``{"id", "deprecated"}``
  (sdk-core ``build_has_change_marker_details``).
- sdk-core ``core_patch``, before the JSON layout: ``patch_id`` holds the id as ``binary/plain``
  bytes and ``deprecated`` a single byte, non-zero meaning deprecated (sdk-core still reads it:
  ``decode_change_marker_details``; its test history ``old_change_marker_format``).
- Go ``Version``: ``change-id`` and ``version`` (JSON payloads).
- Java ``Version``: ``changeId`` and ``version`` (``VersionMarkerUtils``).
- Pre-1.0 Go/Cadence ``Version``: one blob of JSON values, the change id then the version (read
  by the caller's legacy decoding and passed here as a list).
- TypeScript, .NET, Python and Ruby write sdk-core's ``core_patch`` layouts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["legacy_version", "patch_identity", "version_identity"]

First = Callable[[str], Any]


def _text(value: Any) -> str | None:
    """A marker id as text: JSON strings as they are, ``binary/plain`` bytes as UTF-8."""
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return bytes(value).hex()
    return str(value)


def _flag(value: Any) -> bool | None:
    """A deprecated flag: JSON booleans as they are; sdk-core's old single byte, non-zero = True."""
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        return bool(value) and value[0] != 0
    return bool(value)


def _whole(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        return None
    # Beyond int64 no SDK wrote it: the raw value stays in ``details``.
    return number if -(2**63) <= number < 2**63 else None


def patch_identity(first: First) -> tuple[str | None, bool | None]:
    """``(patch_id, deprecated)`` of a ``core_patch`` marker, current or old sdk-core layout."""
    data = first("patch-data") or first("patch_data")
    if isinstance(data, Mapping):
        return _text(data.get("id")), _flag(data.get("deprecated", False))
    patch_id = first("patch_id")
    if patch_id is None:
        return None, None
    deprecated = _flag(first("deprecated"))
    return _text(patch_id), bool(deprecated)


def version_identity(first: First) -> tuple[str | None, int | None]:
    """``(change_id, version)`` of a Go or Java ``Version`` marker."""
    change = first("change-id")
    if change is None:
        change = first("changeId")
    return _text(change), _whole(first("version"))


def legacy_version(values: list[Any]) -> tuple[str | None, int | None]:
    """``(change_id, version)`` from a pre-1.0 blob of JSON values (change id, then version)."""
    change = next((v for v in values if isinstance(v, str)), None)
    version = next((v for v in values if isinstance(v, int) and not isinstance(v, bool)), None)
    return change, version
