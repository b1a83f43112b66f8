"""``tk.to_otel``: workflow histories as OpenTelemetry traces, to a file or an OTLP endpoint.

Examples
--------
>>> tk.to_otel("data/openai_agents/", path="traces.json")              # doctest: +SKIP
>>> tk.to_otel(events, endpoint="http://127.0.0.1:6006/v1/traces")     # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from toolkit.agents.activity_turns import activity_turns
from toolkit.agents.roles import Roles
from toolkit.agents.tokens import genai_attributes, model_calls_of
from toolkit.gc_pause import paused_gc
from toolkit.histories.columns.lazy import without_extra_cells
from toolkit.replay.commands import events_frame
from toolkit.traces.otlp import send, write_otlp_json
from toolkit.traces.spans import spans_of, with_run_columns

__all__ = ["OtelExport", "to_otel"]


@dataclass
class OtelExport:
    """What :func:`to_otel` built and where it went.

    Attributes
    ----------
    spans : pandas.DataFrame
        One row per span (:data:`toolkit.traces.spans.SPAN_COLUMNS`).
    model_calls : pandas.DataFrame
        The token ledger the ``chat`` spans carry (:func:`toolkit.model_calls`).
    errors : pandas.DataFrame
        Files that could not be read (as :func:`toolkit.read_histories` reports them).
    path : Path or None
        The OTLP JSON file written.
    endpoint : str or None
        The OTLP/HTTP endpoint the spans were sent to.
    sent : int
        Spans the endpoint accepted (all of them, or :func:`to_otel` raised).
    """

    spans: pd.DataFrame
    model_calls: pd.DataFrame = field(default_factory=pd.DataFrame)
    errors: pd.DataFrame = field(default_factory=pd.DataFrame)
    path: Path | None = None
    endpoint: str | None = None
    sent: int = 0

    @property
    def traces(self) -> int:
        """Number of traces (runs)."""
        return int(self.spans["trace_id"].nunique())

    def __repr__(self) -> str:
        where = [str(self.path)] if self.path else []
        where += [f"{self.endpoint} ({self.sent} accepted)"] if self.endpoint else []
        return (
            f"OtelExport({len(self.spans)} spans in {self.traces} traces"
            + (f" -> {', '.join(where)}" if where else "")
            + (f", {len(self.errors)} unreadable files" if len(self.errors) else "")
            + ")"
        )


def to_otel(
    histories: Any,
    *,
    path: str | os.PathLike[str] | None = None,
    endpoint: str | None = None,
    namespace: str | None = None,
    content: bool = False,
    codec: Any = None,
    roles: str | Roles = "auto",
    service_name: str = "temporal-agent-toolkit",
    project: str | None = None,
    headers: Mapping[str, str] | None = None,
    encoding: str = "protobuf",
    timeout: float = 30.0,
) -> OtelExport:
    """Build OpenTelemetry spans of agent runs from their histories; write and/or send them.

    Parameters
    ----------
    histories
        An events frame, or files, folders and globs (read with :func:`toolkit.read_histories`;
        unreadable files are listed in ``errors``, never exported half).
    path
        Write one OTLP JSON document (``ExportTraceServiceRequest``) there.
    endpoint
        An OTLP/HTTP traces endpoint (``http://127.0.0.1:6006/v1/traces`` for a local Phoenix,
        ``http://collector:4318/v1/traces`` for an OpenTelemetry Collector or Jaeger).
    namespace
        The Temporal namespace in ids and attributes (by default the frame's column, else
        ``""``); keep it the same between exports so that they replace, never add.
    content
        Include the payloads' decoded values (``input.value`` / ``output.value``); by default
        only their sizes leave the history.
    codec
        A ``temporalio.converter.PayloadCodec`` for encrypted or compressed payloads (files only;
        a frame is taken as it was read).
    roles
        The framework's activity roles (:func:`toolkit.agent_steps`).
    service_name, project
        Resource attributes: ``service.name``, and ``openinference.project.name`` (the Phoenix
        project; Phoenix's ``default`` when None).
    headers, encoding, timeout
        For ``endpoint``: extra HTTP headers (an API key), ``protobuf`` (default) or ``json``,
        seconds per request.

    Returns
    -------
    OtelExport
        The spans table, unreadable files, where the spans went and how many were accepted.

    Raises
    ------
    toolkit.traces.otlp.OtlpExportError
        When the endpoint refuses a batch or cannot be reached; it names the endpoint and the
        spans accepted before (``.sent``).
    """
    errors = pd.DataFrame()
    if isinstance(histories, pd.DataFrame):
        events = histories
    else:
        from toolkit.histories.reading.batch import read_histories

        options = {"codec": codec} if codec is not None else {}
        with without_extra_cells():  # only the model calls' summaries are read off them (made)
            events, errors = read_histories(histories, **options)
    events = events_frame(events)
    frame = with_run_columns(events)
    with paused_gc():  # many small dicts, no cycles: as the loader, without the collector
        found = activity_turns(frame, roles)  # once, for the ledger and the spans
        calls = model_calls_of(events, found)
        spans = spans_of(frame, found, namespace=namespace, content=content,
                         model_attributes=genai_attributes(calls))  # fmt: skip
        # Dropped before the collector resumes: its first pass then scans only what is kept.
        del found, frame
    resource: dict[str, Any] = {"service.name": service_name}
    if project:
        resource["openinference.project.name"] = project
    result = OtelExport(spans=spans, model_calls=calls, errors=errors)
    if path is not None:
        result.path = Path(path)
        write_otlp_json(spans, resource, result.path)
    if endpoint is not None:
        result.endpoint = endpoint
        result.sent = send(spans, endpoint, resource, encoding=encoding, headers=headers,
                           timeout=timeout)  # fmt: skip
    return result
