"""The limits a Temporal server enforces on one workflow run, with their defaults and sources.

========================  ===========  ===========================================  ==============
name                      default      server setting (dynamic config)              when exceeded
========================  ===========  ===========================================  ==============
``history_bytes``         50 MiB       ``limit.historySize.error``                  run terminated
``history_bytes_warn``    10 MiB       ``limit.historySize.warn``                   server log line
``history_events``        51,200       ``limit.historyCount.error``                 run terminated
``history_events_warn``   10,240       ``limit.historyCount.warn``                  server log line
``payload_bytes``         2 MiB        ``limit.blobSize.error``                     see below
``payload_bytes_warn``    512 KiB      ``limit.blobSize.warn``                      log lines
``task_completion_bytes`` 4 MiB        gRPC's default largest message (frontend)    task fails
``continue_as_new_bytes`` 4 MiB        ``limit.historySize.suggestContinueAsNew``   suggestion
``continue_as_new_events`` 4,096       ``limit.historyCount.suggestContinueAsNew``  suggestion
========================  ===========  ===========================================  ==============

Self-hosted defaults are the server's own constants (temporalio/temporal
``common/dynamicconfig/constants.go``, the same from 1.30 to 1.32; the frontend sets no gRPC
message size, so gRPC's 4 MiB applies). Temporal Cloud documents the same values for the ones it
states (docs.temporal.io ``cloud/limits`` and ``workflow-execution/limits``: 51,200 events or
50 MB, a 2 MB payload, a 4 MB gRPC message); the continue-as-new suggestion and the warning
thresholds are assumed to be the server's defaults there. Sizes in Temporal's documents use
MB for 1024 x 1024 bytes, and so do the strings this module reads ("2 MB" = 2 MiB).

What happens at each limit: the history size and count are checked when the next change to the
run is written, after the change that crossed the limit; the run is terminated with the reason
``Workflow history size exceeds limit.`` (or ``count``). A payload over ``payload_bytes``: an
activity result is failed by the server (``Complete result exceeds size limit.``); a command's
input (an activity's, a child's, the run's result) terminates the run
(``BadScheduleActivityAttributes: ScheduleActivityTaskCommandAttributes.Input exceeds size
limit.``), except that Python SDK >= 1.23 and Go SDK >= 1.43 check first and fail the workflow
task with cause ``PAYLOADS_TOO_LARGE`` (the run stays open, retrying). A workflow task
completion over 4 MiB is rejected by gRPC; newer SDKs fail the task with cause
``GRPC_MESSAGE_TOO_LARGE``.

Examples
--------
>>> resolve_limits({"history_bytes": "256 KiB", "limit.blobSize.error": 65536})  # doctest: +SKIP
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from toolkit.errors import ToolkitError

__all__ = ["CLOUD", "DEFAULTS", "DYNAMIC_CONFIG", "ERROR_LIMITS", "LimitsError", "limits_from_text",
           "resolve_limits"]

KIB, MIB = 1024, 1024 * 1024

DEFAULTS: dict[str, int] = {
    "history_bytes": 50 * MIB,
    "history_bytes_warn": 10 * MIB,
    "history_events": 50 * 1024,
    "history_events_warn": 10 * 1024,
    "payload_bytes": 2 * MIB,
    "payload_bytes_warn": 512 * KIB,
    "task_completion_bytes": 4 * MIB,
    "continue_as_new_bytes": 4 * MIB,
    "continue_as_new_events": 4 * 1024,
}
"""Self-hosted server defaults (temporal server 1.30-1.32)."""

CLOUD: dict[str, int] = dict(DEFAULTS)
"""Temporal Cloud: the documented values (the same as the self-hosted defaults)."""

#: The limits that stop a run (the others warn or suggest).
ERROR_LIMITS = ("history_bytes", "history_events", "payload_bytes", "task_completion_bytes")

#: The server's dynamic-config keys, for users who pass their server's settings as they are.
DYNAMIC_CONFIG: dict[str, str] = {
    "limit.historySize.error": "history_bytes",
    "limit.historySize.warn": "history_bytes_warn",
    "limit.historyCount.error": "history_events",
    "limit.historyCount.warn": "history_events_warn",
    "limit.blobSize.error": "payload_bytes",
    "limit.blobSize.warn": "payload_bytes_warn",
    "limit.historySize.suggestContinueAsNew": "continue_as_new_bytes",
    "limit.historyCount.suggestContinueAsNew": "continue_as_new_events",
}

_UNITS = {"": 1, "b": 1, "kb": KIB, "kib": KIB, "mb": MIB, "mib": MIB, "gb": 1024 * MIB,
          "gib": 1024 * MIB}  # fmt: skip
_QUANTITY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")


class LimitsError(ToolkitError, ValueError):
    """A ``limits=`` mapping names an unknown limit or gives a value of the wrong unit."""


def resolve_limits(limits: Mapping[str, Any] | str | None = None) -> dict[str, int]:
    """The limits to measure against: the defaults, overridden by ``limits``.

    Parameters
    ----------
    limits
        None (self-hosted defaults), ``"cloud"``, ``"self-hosted"``, or a mapping from a limit
        name (the table above) or a server dynamic-config key (``limit.historySize.error``) to
        a value: bytes or events as a number, or a string with a unit for byte limits
        (``"256 KiB"``, ``"2 MB"``; KB/MB/GB mean 1024-based units, as in Temporal's documents)
        and ``"4096 events"`` or a bare number for event limits.

    Raises
    ------
    LimitsError
        For an unknown name, a byte unit on an event limit (or the reverse), a negative or zero
        value, or text that is not a quantity.
    """
    if limits is None or (isinstance(limits, str) and limits in ("self-hosted", "default")):
        return dict(DEFAULTS)
    if isinstance(limits, str):
        if limits.lower() == "cloud":
            return dict(CLOUD)
        raise LimitsError(f"unknown limits preset {limits!r}; expected 'self-hosted' or 'cloud'")
    if not isinstance(limits, Mapping):
        kind = type(limits).__name__
        raise LimitsError(f"limits must be a mapping or a preset name, not {kind}")
    out = dict(DEFAULTS)
    for key, value in limits.items():
        name = DYNAMIC_CONFIG.get(key, key)
        if name not in DEFAULTS:
            known, keys = ", ".join(sorted(DEFAULTS)), ", ".join(sorted(DYNAMIC_CONFIG))
            raise LimitsError(f"unknown limit {key!r}; expected one of {known}, or a server "
                              f"dynamic-config key ({keys})")
        out[name] = _quantity(name, value)
    return out


def _quantity(name: str, value: Any) -> int:
    events = name.endswith(("_events", "_events_warn"))
    what = "events" if events else "bytes"
    if isinstance(value, bool):
        raise LimitsError(f"limit {name!r}: {value!r} is not a number of {what}")
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        match = _QUANTITY.match(value)
        if match is None:
            raise LimitsError(f"limit {name!r}: {value!r} is not a quantity of {what} "
                              f"(e.g. {'4096' if events else '256 KiB'})")  # fmt: skip
        amount, unit = float(match.group(1)), match.group(2).lower()
        if events:
            if unit not in ("", "events", "event"):
                raise LimitsError(f"limit {name!r} counts events; {value!r} has the unit "
                                  f"{match.group(2)!r}")  # fmt: skip
            number = amount
        else:
            if unit in ("events", "event"):
                raise LimitsError(f"limit {name!r} is in bytes; {value!r} counts events")
            if unit not in _UNITS:
                raise LimitsError(f"limit {name!r}: unknown unit {match.group(2)!r} in "
                                  f"{value!r} (use B, KiB, MiB, GiB; KB/MB/GB are read as "
                                  "the same)")  # fmt: skip
            number = amount * _UNITS[unit]
    else:
        raise LimitsError(f"limit {name!r}: {value!r} is not a number of {what}")
    if number <= 0 or number != number:
        raise LimitsError(f"limit {name!r} must be positive, not {value!r}")
    if not float(number).is_integer():
        raise LimitsError(f"limit {name!r}: {value!r} is not a whole number of {what}")
    return int(number)


def limits_from_text(text: str) -> dict[str, int]:
    """The limits a command line or a config gives: ``cloud`` / ``self-hosted``, a JSON object,
    ``name=value`` pairs separated by commas (``history_bytes=256KiB,payload_bytes=64KiB``), or
    the path of a server dynamic-config YAML file (each ``limit.*`` key's first value; the
    constraints of a namespace-scoped value are not read)."""
    from pathlib import Path

    stripped = text.strip()
    if stripped.lower() in ("cloud", "self-hosted", "default"):
        return resolve_limits(stripped.lower())
    if stripped.startswith("{"):
        import orjson

        try:
            value = orjson.loads(stripped)
        except orjson.JSONDecodeError as exc:
            raise LimitsError(f"--limits: not a JSON object ({exc})") from None
        return resolve_limits(value)
    path = Path(stripped)
    if path.suffix.lower() in (".yaml", ".yml", ".json") or path.is_file():
        return resolve_limits(_dynamic_config_file(path))
    pairs: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in stripped.split(","))):
        name, sep, value = part.partition("=")
        if not sep:
            raise LimitsError(f"--limits: {part!r} is not name=value (e.g. history_bytes=256KiB)")
        pairs[name.strip()] = value.strip()
    return resolve_limits(pairs)


def _dynamic_config_file(path: Any) -> dict[str, Any]:
    import yaml

    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise LimitsError(f"{path}: cannot read the dynamic config ({exc})") from None
    if not isinstance(document, Mapping):
        raise LimitsError(f"{path}: a dynamic config maps setting names to values")
    found = {}
    for key, value in document.items():
        if key not in DYNAMIC_CONFIG:
            continue
        if isinstance(value, list) and value and isinstance(value[0], Mapping):
            value = value[0].get("value")
        found[key] = value
    return found
