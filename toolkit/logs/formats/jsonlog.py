"""JSON-lines families, told apart by their keys.

slog JSON (``time``/``level`` upper case/``msg``), logrus JSON (same keys, lower-case level), zap
(``ts``/``msg``, ``caller``, ``stacktrace``), Temporal server zap (``logging-call-at``), zerolog
(``level``/``time``/``message``), bunyan (``v``, numeric ``level``), structlog JSON (``event``),
python-json-logger (``levelname``), Rust tracing JSON (``fields.message``, ``target``), Temporal
TypeScript SDK (``message`` with ``taskQueue``/``namespace``/``sdkComponent``), OTLP JSON
(``resourceLogs``, several records per line) and anything else as ``json``.

The header keys are popped so that ``fields`` keeps only the structured attributes.
"""

from __future__ import annotations

from typing import Any

import msgspec
import orjson

from toolkit.logs.formats.base import Parsed
from toolkit.logs.normalize import (
    epoch_to_ns,
    level_from_number,
    norm_level,
    otlp_severity_level,
)

__all__ = [
    "LEVEL_KEYS", "LOGGER_KEYS", "MAX_DEPTH", "MSG_KEYS", "SIGNATURE_KEYS", "TS_KEYS",
    "classify_json", "family_of", "json_text", "json_ts", "loads_json", "orjson_number",
    "otlp_records",
]

# Header keys, most preferred first: a record's header is the first of each list it has.
TS_KEYS = ("time", "ts", "timestamp", "@timestamp", "t", "asctime", "datetime", "date", "Time")
LEVEL_KEYS = ("level", "severity", "lvl", "levelname", "log.level", "loglevel", "Level")
MSG_KEYS = ("msg", "message", "event", "MESSAGE", "Message", "body")
LOGGER_KEYS = ("logger", "name", "logger_name", "loggerName", "target", "component")
#: Every key whose presence decides a record's family, header or envelope (see family_of).
SIGNATURE_KEYS = frozenset({
    *TS_KEYS, *LEVEL_KEYS, *MSG_KEYS, *LOGGER_KEYS, "logging-call-at", "v", "hostname", "pid",
    "sdkComponent", "taskQueue", "namespace", "fields", "log", "resourceLogs",
    "__REALTIME_TIMESTAMP", "_PID", "PRIORITY", "__CURSOR",
})


# Numbers beyond the double range (``1e400``, 400-digit integers) make orjson refuse a whole line;
# this decoder reads them (as +-inf, or as Python ints) so that such a line is still a JSON record.
# The JSON fast path (msgspec, which skips unread values without range checks) agrees with it.
_LENIENT = msgspec.json.Decoder(float_hook=float)
_INT_RANGE = range(-(2**63), 2**64)
#: Nesting orjson accepts; deeper texts are no JSON records for either decoder.
MAX_DEPTH = 1024


def loads_json(text: str) -> Any:
    """Decode one JSON text (orjson; numbers out of the double range read by msgspec).

    Raises
    ------
    orjson.JSONDecodeError
        The text is not JSON.
    """
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        # Bracket counts bound the depth: past orjson's limit the text stays refused.
        if text.count("{") + text.count("[") <= MAX_DEPTH:
            try:
                return _LENIENT.decode(text)
            except (msgspec.DecodeError, RecursionError, UnicodeError):
                pass  # surrogates and the like: not JSON for orjson either
        raise


def orjson_number(value: Any) -> Any:
    """An int as orjson decodes it: beyond 64 bits it becomes a float (when one can hold it)."""
    if type(value) is int and value not in _INT_RANGE:
        try:
            return float(value)
        except OverflowError:
            return value
    return value


def json_ts(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value or None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return epoch_to_ns(value)
    return None


def _pop_first(d: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if key in d:
            return d.pop(key)
    return None


def json_text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def family_of(d: dict[str, Any]) -> str:
    """Name the family from the keys still present (header keys not yet popped)."""
    if "logging-call-at" in d:
        return "temporal_server"
    if "msg" in d:
        if "ts" in d:
            return "zap"
        if "v" in d and "hostname" in d and "pid" in d:
            return "bunyan"
        level = d.get("level")
        if isinstance(level, str) and "time" in d:
            return "slog_json" if level[:1].isupper() else "logrus_json"
        return "json"
    if "message" in d:
        if "sdkComponent" in d or ("taskQueue" in d and "namespace" in d):
            return "typescript_sdk"
        if "levelname" in d:
            return "python_json"
        if "level" in d and "time" in d:
            return "zerolog"
        return "json"
    if "event" in d and ("level" in d or "timestamp" in d or "logger" in d):
        return "structlog_json"
    if isinstance(d.get("fields"), dict) and "target" in d:
        return "rust_tracing_json"
    return "json"


def classify_json(d: dict[str, Any]) -> Parsed:
    """Parse one decoded JSON log object (not an envelope, not OTLP) into a record."""
    family = family_of(d)
    if family == "rust_tracing_json":
        inner = d.pop("fields")
        message = json_text(inner.pop("message", None))
        ts = json_ts(d.pop("timestamp", None))
        level = norm_level(d.pop("level", None))
        logger = d.pop("target", None)
        d.update(inner)
        return family, ts, level, logger, message, d
    ts = json_ts(_pop_first(d, TS_KEYS))
    raw_level = _pop_first(d, LEVEL_KEYS)
    if family == "bunyan" and isinstance(raw_level, int):
        level = level_from_number(raw_level)
    else:
        level = norm_level(raw_level)
    message = json_text(_pop_first(d, MSG_KEYS))
    logger = _pop_first(d, LOGGER_KEYS)
    if logger is not None and not isinstance(logger, str):
        d["logger"] = logger
        logger = None
    return family, ts, level, logger, message, d


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _otlp_value(value: Any) -> Any:
    """An OTLP ``AnyValue`` to a Python value."""
    if not isinstance(value, dict):
        return value
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return value["intValue"]
    if "arrayValue" in value:
        return [_otlp_value(v) for v in _list(_mapping(value["arrayValue"]).get("values"))]
    if "kvlistValue" in value:
        return _otlp_attributes(_mapping(value["kvlistValue"]).get("values"))
    return value or None


def _otlp_attributes(items: Any) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for item in _list(items):
        if isinstance(item, dict):
            key = item.get("key")
            out[key if key is None or isinstance(key, str | int | float) else str(key)] = (
                _otlp_value(item.get("value", {})))
    return out


def _otlp_time(value: Any) -> Any:
    """``timeUnixNano`` (a decimal string or a number) as int ns; other text as it is."""
    if value in (None, "", "0", 0) or isinstance(value, dict | list):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return value  # not a number: the frame builder parses it or reports it


def otlp_records(d: dict[str, Any]) -> list[Parsed]:
    """Every log record of an OTLP/JSON ``ExportLogsServiceRequest`` (one line, many records).

    Parts of another shape than OTLP's (a string where a list of records belongs ...) hold no
    records; a line without any is read as an ordinary JSON record.
    """
    out: list[Parsed] = []
    for resource_logs in _list(d.get("resourceLogs")):
        resource_logs = _mapping(resource_logs)
        resource = _otlp_attributes(_mapping(resource_logs.get("resource")).get("attributes"))
        for scope_logs in _list(resource_logs.get("scopeLogs")):
            scope_logs = _mapping(scope_logs)
            scope = _mapping(scope_logs.get("scope"))
            for rec in _list(scope_logs.get("logRecords")):
                if not isinstance(rec, dict):
                    continue
                fields: dict[str, Any] = {f"resource.{k}": v for k, v in resource.items()}
                fields.update(_otlp_attributes(rec.get("attributes")))
                for key in ("traceId", "spanId", "flags", "observedTimeUnixNano"):
                    if key in rec:
                        fields[key] = rec[key]
                ts = _otlp_time(rec.get("timeUnixNano") or rec.get("observedTimeUnixNano"))
                number = rec.get("severityNumber")
                level = norm_level(rec.get("severityText")) or otlp_severity_level(
                    number if type(number) is int else None)
                body = _otlp_value(rec.get("body") or {})
                out.append(("otlp", ts, level, scope.get("name"), json_text(body), fields))
    return out
