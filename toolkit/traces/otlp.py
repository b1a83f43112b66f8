"""Spans as OTLP: JSON documents (files) and OTLP/HTTP requests (protobuf or JSON).

The JSON is OTLP's own mapping (``ExportTraceServiceRequest``: ``resourceSpans`` ->
``scopeSpans`` -> ``spans``, ids in hex, 64-bit integers as strings), which collectors and
``otel-cli``-style tools read. Over HTTP the body is protobuf (``application/x-protobuf``, what
every OTLP receiver must accept; Phoenix accepts nothing else), built with the
``opentelemetry-proto`` classes of the extra ``otel``; ``encoding="json"`` sends the JSON.

Spans go in batches (``batch_spans`` each, whole traces kept together where they fit). A
receiver that refuses a batch, or cannot be reached, stops the export with an
:class:`OtlpExportError` that names the endpoint and says how many spans it had accepted before;
nothing is reported as sent that the receiver did not answer with 2xx.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from typing import Any

import orjson
import pandas as pd

from toolkit import __version__
from toolkit.errors import ToolkitError
from toolkit.gc_pause import paused_gc
from toolkit.traces.otlp_wire import encode_columns

try:  # the spans' JSON written from the columns (setup.py builds it where a C compiler is)
    from toolkit.traces import _otlpjson
except ImportError:  # pragma: no cover - depends on the install
    _otlpjson = None

__all__ = ["OtlpExportError", "batches", "otlp_document", "otlp_json", "otlp_protobuf", "send",
           "write_otlp_json"]

_KIND = {"INTERNAL": 1, "SERVER": 2, "CLIENT": 3}
_STATUS = {"UNSET": 0, "OK": 1, "ERROR": 2}
SCOPE = {"name": "temporal-agent-toolkit", "version": __version__}


class OtlpExportError(ToolkitError, RuntimeError):
    """An OTLP receiver refused spans or could not be reached.

    Attributes
    ----------
    endpoint : str
        Where the spans were sent.
    sent : int
        Spans the receiver had accepted (2xx) before the failure; the rest were not sent.
    """

    def __init__(self, endpoint: str, sent: int, total: int, problem: str) -> None:
        self.endpoint, self.sent, self.total = endpoint, sent, total
        super().__init__(
            f"{endpoint}: {problem}; {sent} of {total} spans had been accepted before, "
            f"the other {total - sent} were not sent"
        )


def _value(value: Any) -> dict[str, Any]:
    """An attribute value in OTLP JSON (``AnyValue``)."""
    if type(value) is str:  # most attributes: no isinstance chain
        return {"stringValue": value}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [_value(v) for v in value]}}
    return {"stringValue": str(value)}


def _attributes(attributes: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"key": key, "value": _value(value)} for key, value in attributes.items()]


class _Entries:
    """The ``KeyValue`` entries of one document's attributes, each distinct (key, str, int or
    bool value) built once: most repeat from span to span (ids, types, names, counts), and the
    document holds the same entry object wherever it repeats."""

    def __init__(self) -> None:
        self.known: dict[tuple[str, type, Any], dict[str, Any]] = {}

    def __call__(self, attributes: Mapping[str, Any]) -> list[dict[str, Any]]:
        known, out = self.known, []
        for key, value in attributes.items():
            kind = type(value)
            if kind is str or kind is int or kind is bool:  # the type too: True == 1
                token = (key, kind, value)
                entry = known.get(token)
                if entry is None:
                    entry = known[token] = {"key": key, "value": _value(value)}
            else:
                entry = {"key": key, "value": _value(value)}
            out.append(entry)
        return out


def _nanos(value: Any) -> str:
    return str(pd.Timestamp(value).value)


def _all_nanos(times: pd.Series) -> list[str]:
    """:func:`_nanos` of a whole column at once."""
    return [str(n) for n in _all_ints(times)]


def _all_ints(times: pd.Series) -> list[int]:
    """``pd.Timestamp(t).value`` of each time of a column, at once (NaT: the int64 minimum)."""
    return pd.DatetimeIndex(times).as_unit("ns").asi8.tolist()  # type: ignore[no-any-return]


def otlp_document(spans: pd.DataFrame, resource: Mapping[str, Any]) -> dict[str, Any]:
    """The spans as one OTLP JSON ``ExportTraceServiceRequest`` (one resource, one scope).

    An attribute repeated across spans is one ``KeyValue`` object wherever it appears: serialize
    the document, or copy it before changing an entry in place.
    """
    with paused_gc():  # a dozen small dicts per span, none in a cycle
        return _document(spans, resource)


def _document(spans: pd.DataFrame, resource: Mapping[str, Any]) -> dict[str, Any]:
    out, entries = [], _Entries()
    for trace, span_id, parent, name, kind, start, end, attributes, status, message, events in zip(
        spans["trace_id"].tolist(), spans["span_id"].tolist(),
        spans["parent_span_id"].tolist(), spans["name"].tolist(), spans["kind"].tolist(),
        _all_nanos(spans["start"]), _all_nanos(spans["end"]), spans["attributes"].tolist(),
        spans["status"].tolist(), spans["status_message"].tolist(), spans["events"].tolist(),
        strict=True,
    ):  # fmt: skip
        span = {"traceId": trace, "spanId": span_id, "name": name, "kind": _KIND[kind],
                "startTimeUnixNano": start, "endTimeUnixNano": end,
                "attributes": entries(attributes),
                "status": {"code": _STATUS[status]}}  # fmt: skip
        if parent:
            span["parentSpanId"] = parent
        if message:
            span["status"]["message"] = message
        if events:
            span["events"] = _events(events, entries)
        out.append(span)
    return _shell(resource, out)


def _events(events: Any, entries: _Entries) -> list[dict[str, Any]]:
    """A span's ``events`` in OTLP JSON."""
    return [{"timeUnixNano": _nanos(event["time"]), "name": event["name"],
             "attributes": entries(event["attributes"])} for event in events]  # fmt: skip


def _shell(resource: Mapping[str, Any], spans: list[dict[str, Any]]) -> dict[str, Any]:
    """The document around its ``spans`` (one resource, one scope)."""
    return {
        "resourceSpans": [{
            "resource": {"attributes": _attributes(resource)},
            "scopeSpans": [{"scope": SCOPE, "spans": spans}],
        }]
    }  # fmt: skip


def otlp_json(spans: pd.DataFrame, resource: Mapping[str, Any]) -> bytes:
    """``orjson.dumps(otlp_document(spans, resource))``: the document's bytes, its spans
    written by the compiled writer straight from the columns where it is built (no dict per
    span and attribute first), else through :func:`otlp_document`."""
    if _otlpjson is not None:
        written = _compiled(spans, *_shell_parts(resource))
        if written is not None:
            return written  # type: ignore[return-value]
    return orjson.dumps(otlp_document(spans, resource))


def write_otlp_json(spans: pd.DataFrame, resource: Mapping[str, Any],
                    path: str | os.PathLike[str]) -> None:  # fmt: skip
    """Write :func:`otlp_json`'s bytes to the file ``path``: by the compiled writer a chunk at
    a time where it is built (a document of a million spans is never held whole; a chunk's
    memory, used again, is not faulted in anew), else at once."""
    with open(path, "wb") as file:
        if _otlpjson is not None:
            try:
                if _compiled(spans, *_shell_parts(resource), file.fileno()) is not None:
                    return
            except OSError as error:  # the writer's own write(2): name the file, as open does
                raise OSError(error.errno, error.strerror, os.fspath(path)) from None
            file.seek(0)  # a value the pure path writes (or refuses): the file anew by it
            file.truncate()
        file.write(orjson.dumps(otlp_document(spans, resource)))


_SHELL_END = b"[]}]}]}"


def _shell_parts(resource: Mapping[str, Any]) -> tuple[bytes, bytes]:
    """The document's bytes before its spans' objects and after them."""
    shell = orjson.dumps(_shell(resource, []))  # ends in the empty array and its closings
    cut = len(shell) - len(_SHELL_END)
    if shell[cut:] != _SHELL_END:  # pragma: no cover - the shell's last key is "spans"
        raise AssertionError(f"unexpected OTLP document shell {shell[-32:]!r}")
    return shell[: cut + 1], shell[cut + 1 :]


def _compiled(spans: pd.DataFrame, head: bytes, tail: bytes,
              fd: int | None = None) -> bytes | int | None:  # fmt: skip
    """``head``, the spans' objects joined by commas as orjson writes :func:`otlp_document`'s,
    and ``tail`` (written to the file descriptor ``fd`` where given, and their count returned);
    None where a value is one the compiled writer leaves to the pure path.

    The columns go as arrays, read in place (no list of each made, no int made of each time);
    the events too, each span's list of dicts written by the compiled writer as
    :func:`_events` builds them."""
    return _otlpjson.spans(  # type: ignore[union-attr,no-any-return]
        head, tail, *(_objects(spans[name]) for name in _OBJECT_COLUMNS[:5]),
        _all_times(spans["start"]), _all_times(spans["end"]),
        *(_objects(spans[name]) for name in _OBJECT_COLUMNS[5:]), _KIND, _STATUS,
        orjson.dumps, pd.Timestamp, _nanos_int, *(() if fd is None else (fd,)),
    )  # fmt: skip


# The columns the compiled writer reads as objects (the times between the fifth and sixth).
_OBJECT_COLUMNS = ("trace_id", "span_id", "parent_span_id", "name", "kind", "attributes",
                   "status", "status_message", "events")  # fmt: skip


def _objects(column: pd.Series) -> Any:
    """The column's items as an object array (the frame's own where it holds objects): the
    items ``tolist`` gives, without a list made of them."""
    return column.to_numpy(dtype=object)


def _all_times(times: pd.Series) -> Any:
    """:func:`_all_ints` as an int64 array (no int object made of each)."""
    return pd.DatetimeIndex(times).as_unit("ns").asi8


def _nanos_int(value: Any) -> int:
    """``pd.Timestamp(value).value``: an event time's nanoseconds (:func:`_nanos`'s int)."""
    return pd.Timestamp(value).value  # type: ignore[no-any-return]


def _any_value(message: Any, value: Any) -> None:
    if isinstance(value, bool):
        message.bool_value = value
    elif isinstance(value, int):
        message.int_value = value
    elif isinstance(value, float):
        message.double_value = value
    elif isinstance(value, (list, tuple)):
        for item in value:
            _any_value(message.array_value.values.add(), item)
    else:
        message.string_value = str(value)


def _key_values(target: Any, attributes: Mapping[str, Any]) -> None:
    for key, value in attributes.items():
        entry = target.add()
        entry.key = key
        _any_value(entry.value, value)


def _encoded(spans: pd.DataFrame, resource: Mapping[str, Any]) -> bytes:
    """:func:`otlp_protobuf`'s bytes by :func:`toolkit.traces.otlp_wire.encode_columns`."""
    return encode_columns(_wire_columns(spans), resource, (SCOPE["name"], SCOPE["version"]),
                          _KIND, _STATUS)  # fmt: skip


def _wire_columns(spans: pd.DataFrame) -> list[list[Any]]:
    """The spans' fields as :func:`toolkit.traces.otlp_wire.encode_request`'s rows hold them,
    column by column (times in nanoseconds, each span's events as (time, name, attributes))."""
    return [
        spans["trace_id"].tolist(), spans["span_id"].tolist(), spans["parent_span_id"].tolist(),
        spans["name"].tolist(), spans["kind"].tolist(), _all_ints(spans["start"]),
        _all_ints(spans["end"]), spans["attributes"].tolist(), spans["status"].tolist(),
        spans["status_message"].tolist(),
        [[(pd.Timestamp(e["time"]).value, e["name"], e["attributes"]) for e in events]
         for events in spans["events"].tolist()],
    ]  # fmt: skip


def otlp_protobuf(spans: pd.DataFrame, resource: Mapping[str, Any]) -> bytes:
    """The spans as a serialized protobuf ``ExportTraceServiceRequest``.

    Raises
    ------
    toolkit.errors.ToolkitError
        When ``opentelemetry-proto`` is not installed (the extra ``otel``).
    """
    try:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )
    except ImportError as error:
        raise ToolkitError(
            "OTLP/HTTP protobuf needs opentelemetry-proto: pip install "
            "'temporal-agent-toolkit[otel]' (or send encoding='json')"
        ) from error
    try:  # the same bytes as the messages give, written directly (toolkit.traces.otlp_wire)
        return _encoded(spans, resource)
    except (ValueError, TypeError, OverflowError):  # Unencodable, or times pandas cannot read
        pass  # a value the messages refuse or change: they say so, as they always did
    return _from_messages(spans, resource, ExportTraceServiceRequest())


def _from_messages(spans: pd.DataFrame, resource: Mapping[str, Any], request: Any) -> bytes:
    """:func:`otlp_protobuf` by filling the ``opentelemetry-proto`` messages."""
    resource_spans = request.resource_spans.add()
    _key_values(resource_spans.resource.attributes, resource)
    scope_spans = resource_spans.scope_spans.add()
    scope_spans.scope.name, scope_spans.scope.version = SCOPE["name"], SCOPE["version"]
    for row in spans.to_dict("records"):
        span = scope_spans.spans.add()
        span.trace_id = bytes.fromhex(row["trace_id"])
        span.span_id = bytes.fromhex(row["span_id"])
        if row["parent_span_id"]:
            span.parent_span_id = bytes.fromhex(row["parent_span_id"])
        span.name = row["name"]
        span.kind = _KIND[row["kind"]]
        span.start_time_unix_nano = pd.Timestamp(row["start"]).value
        span.end_time_unix_nano = pd.Timestamp(row["end"]).value
        _key_values(span.attributes, row["attributes"])
        span.status.code = _STATUS[row["status"]]
        if row["status_message"]:
            span.status.message = row["status_message"]
        for event in row["events"]:
            added = span.events.add()
            added.time_unix_nano = pd.Timestamp(event["time"]).value
            added.name = event["name"]
            _key_values(added.attributes, event["attributes"])
    return request.SerializeToString()


def batches(spans: pd.DataFrame, batch_spans: int) -> Iterator[pd.DataFrame]:
    """The spans in batches of about ``batch_spans``, never splitting a trace that fits in one."""
    start, count = 0, 0
    sizes = spans.groupby("trace_id", sort=False).size()
    for size in sizes:
        if count and count + size > batch_spans:
            yield spans.iloc[start : start + count]
            start, count = start + count, 0
        count += int(size)
    if count:
        yield spans.iloc[start : start + count]


def send(
    spans: pd.DataFrame,
    endpoint: str,
    resource: Mapping[str, Any],
    *,
    encoding: str = "protobuf",
    headers: Mapping[str, str] | None = None,
    timeout: float = 30.0,
    batch_spans: int = 2000,
) -> int:
    """POST the spans to an OTLP/HTTP traces endpoint; returns the number of spans accepted.

    ``spans`` must be ordered by trace (as :func:`~toolkit.traces.spans.trace_spans` returns
    them). Raises :class:`OtlpExportError` at the first batch that is refused or cannot be sent.
    """
    if encoding not in ("protobuf", "json"):
        raise ToolkitError(f"unknown OTLP encoding {encoding!r}; expected 'protobuf' or 'json'")
    content_type = "application/x-protobuf" if encoding == "protobuf" else "application/json"
    sent, total = 0, len(spans)
    for batch in batches(spans, batch_spans):
        body = (otlp_protobuf(batch, resource) if encoding == "protobuf"
                else otlp_json(batch, resource))  # fmt: skip
        request = urllib.request.Request(
            endpoint, data=body, method="POST",
            headers={"Content-Type": content_type, **dict(headers or {})},
        )  # fmt: skip
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                rejected = _rejected(answer.read(), answer.headers.get("Content-Type", ""))
        except urllib.error.HTTPError as error:
            text = error.read()[:300].decode(errors="replace").strip()
            problem = f"HTTP {error.code} {error.reason}" + (f" ({text})" if text else "")
            raise OtlpExportError(endpoint, sent, total, problem) from error
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise OtlpExportError(endpoint, sent, total, f"cannot be reached ({reason})") from error
        if rejected:
            raise OtlpExportError(
                endpoint,
                sent + len(batch) - rejected,
                total,
                f"the receiver rejected {rejected} spans of a batch",
            )
        sent += len(batch)
    return sent


def _rejected(body: bytes, content_type: str) -> int:
    """``partial_success.rejected_spans`` of an export response (0 when it says nothing)."""
    if not body:
        return 0
    try:
        if "json" in content_type:
            partial = orjson.loads(body).get("partialSuccess") or {}
            return int(partial.get("rejectedSpans") or 0)
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceResponse,
        )

        response = ExportTraceServiceResponse()
        response.ParseFromString(body)
        return int(response.partial_success.rejected_spans)
    except Exception:  # an answer we cannot read is no evidence of rejection
        return 0
