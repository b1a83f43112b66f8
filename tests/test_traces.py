"""Agent runs as OpenTelemetry spans (toolkit.traces): the span tree, OTLP JSON, the endpoint's
errors. Phoenix reading the spans back is tests/test_traces_phoenix.py."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import orjson
import pandas as pd
import pytest

import toolkit as tk
from toolkit.lab.server import free_port
from toolkit.traces.otlp import OtlpExportError, send
from toolkit.traces.spans import trace_spans

DATA = Path(__file__).resolve().parents[1] / "data"
LAB = [DATA / "openai_agents" / "oa-0.22.3", DATA / "pydantic_ai" / "pa-2.68.0",
       DATA / "adk" / "adk-2.13.0"]  # fmt: skip


@pytest.fixture(scope="module")
def lab_events() -> pd.DataFrame:
    events, errors = tk.read_histories(LAB)
    assert errors.empty
    return events


def test_every_run_is_one_trace_with_one_root_and_parents_inside_it(lab_events) -> None:
    spans = trace_spans(lab_events)
    runs = lab_events.drop_duplicates(["source", "history"])
    assert spans["trace_id"].nunique() == len(runs)
    assert spans["span_id"].is_unique
    roots = spans[spans["parent_span_id"].isna()]
    assert list(roots["role"].unique()) == ["workflow"] and len(roots) == len(runs)
    ids = dict(zip(spans["span_id"], spans["trace_id"], strict=True))
    children = spans[spans["parent_span_id"].notna()]
    assert all(
        ids[parent] == trace
        for parent, trace in zip(children["parent_span_id"], children["trace_id"], strict=True)
    )
    # every activity has its span; every model and tool-call activity its GenAI span inside
    acts = tk.activities(lab_events)
    activity_spans = spans[spans["role"] == "activity"]
    assert len(activity_spans) == len(acts)
    genai = spans[spans["role"].isin(["model", "tool_call"])]
    parents = activity_spans.set_index("span_id")
    assert (
        parents.loc[genai["parent_span_id"], "event_id"].to_numpy() == genai["event_id"].to_numpy()
    ).all()
    roles = dict(zip(activity_spans["event_id"].astype(str) + activity_spans["source"],
                     activity_spans["attributes"].map(lambda a: a["temporal.agent.role"]),
                     strict=True))  # fmt: skip
    assert sum(r == "model" for r in roles.values()) == (genai["role"] == "model").sum()
    assert (spans["end"] >= spans["start"]).all()


def test_turns_follow_the_agent_steps(lab_events) -> None:
    spans = trace_spans(lab_events)
    steps = tk.agent_steps(lab_events)
    turns = spans[spans["role"] == "turn"]
    expected = steps.drop_duplicates(["source", "history", "turn"])
    expected = expected[expected["turn"] > 0]
    assert sorted(zip(turns["source"], turns["turn"], strict=True)) == sorted(
        zip(expected["source"], expected["turn"], strict=True)
    )
    assert turns["name"].str.startswith("invoke_agent ").all()
    models = spans[spans["role"] == "model"]
    assert len(models) == steps["model_event_id"].notna().sum()


def test_ids_are_derived_so_exports_are_identical(lab_events, tmp_path: Path) -> None:
    first = tk.to_otel(LAB, path=tmp_path / "a.json")
    second = tk.to_otel(LAB, path=tmp_path / "b.json")
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    assert first.spans["span_id"].tolist() == second.spans["span_id"].tolist()
    other = tk.to_otel(lab_events, namespace="prod")
    assert set(other.spans["trace_id"]).isdisjoint(first.spans["trace_id"])


def test_files_read_without_extra_cells_export_what_the_frame_read_in_full_does(
    tmp_path: Path,
) -> None:
    # to_otel reads files without the events' extra cells and makes the model calls' own from
    # their attributes (their summaries): the same spans and ledger as a frame read in full.
    folders = sorted(p for p in DATA.iterdir() if p.is_dir() and p.name != "venvs")
    for folder in folders:
        events = tk.read_histories(folder, progress=False).events
        if events.empty:
            continue
        from_files = tk.to_otel(folder, path=tmp_path / "files.json")
        from_frame = tk.to_otel(events, path=tmp_path / "frame.json")
        assert (tmp_path / "files.json").read_bytes() == (tmp_path / "frame.json").read_bytes()
        pd.testing.assert_frame_equal(from_files.model_calls, from_frame.model_calls,
                                      check_exact=True)  # fmt: skip
        pd.testing.assert_frame_equal(from_files.spans, from_frame.spans, check_exact=True)


def test_otlp_json_file_is_an_export_request(tmp_path: Path) -> None:
    out = tk.to_otel(LAB[0], path=tmp_path / "traces.json", project="lab")
    document = orjson.loads((tmp_path / "traces.json").read_bytes())
    (resource,) = document["resourceSpans"]
    keys = {a["key"]: a["value"] for a in resource["resource"]["attributes"]}
    assert keys["openinference.project.name"] == {"stringValue": "lab"}
    spans = resource["scopeSpans"][0]["spans"]
    assert len(spans) == len(out.spans)
    assert all(len(s["traceId"]) == 32 and len(s["spanId"]) == 16 for s in spans)
    assert all(int(s["endTimeUnixNano"]) >= int(s["startTimeUnixNano"]) for s in spans)
    chat = next(s for s in spans if s["name"].startswith("chat"))
    attributes = {a["key"]: a["value"] for a in chat["attributes"]}
    assert attributes["gen_ai.operation.name"] == {"stringValue": "chat"}
    assert attributes["openinference.span.kind"] == {"stringValue": "LLM"}
    assert "input.value" not in attributes  # contents stay in the history unless asked for


def test_content_puts_the_payload_values_in(tmp_path: Path) -> None:
    spans = tk.to_otel(LAB[0] / "two_turns.json", content=True).spans
    chat = spans[spans["role"] == "model"].iloc[0]["attributes"]
    assert "weather" in chat["input.value"].lower()
    assert orjson.loads(chat["output.value"])  # the result as JSON


def test_workflow_task_failures_are_exceptions_on_the_run_span() -> None:
    failing = DATA / "openai_agents" / "oa-0.22.3" / "same_server_twice.json"
    events = tk.read_history(failing)
    failures = events[events["event_type"] == "WorkflowTaskFailed"]
    assert len(failures)
    root = trace_spans(events).iloc[0]
    exceptions = [e for e in root["events"] if e["name"] == "exception"]
    assert len(exceptions) == len(failures)
    assert {e["attributes"]["temporal.event_id"] for e in exceptions} == set(failures["event_id"])
    assert root["attributes"]["temporal.workflow.task_failures"] == len(failures)


def test_a_workflow_that_is_no_agent_has_run_and_activity_spans(corpus) -> None:
    events = tk.read_history(corpus / "histories/temporalio__sdk-go/basic.json")
    spans = trace_spans(events)
    assert set(spans["role"]) == {"workflow", "activity"}
    assert (spans["role"] == "activity").sum() == len(tk.activities(events))


def test_an_endpoint_that_is_down_is_named_and_nothing_counts_as_sent() -> None:
    endpoint = f"http://127.0.0.1:{free_port()}/v1/traces"
    with pytest.raises(OtlpExportError, match="cannot be reached") as caught:
        tk.to_otel(LAB[0], endpoint=endpoint)
    assert caught.value.endpoint == endpoint and caught.value.sent == 0
    assert endpoint in str(caught.value)


class _Receiver(http.server.BaseHTTPRequestHandler):
    """A real OTLP/HTTP receiver on 127.0.0.1 that accepts its first ``accept`` requests."""

    accept = 1
    bodies: ClassVar[list[bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if len(self.bodies) < self.accept:
            self.bodies.append(body)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b"{}")
        else:
            self.send_response(503, "Service Unavailable")
            self.end_headers()
            self.wfile.write(b"overloaded")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def receiver() -> Iterator[str]:
    _Receiver.bodies = []
    server = http.server.HTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
    finally:
        server.shutdown()
        server.server_close()


def test_a_refused_batch_stops_with_what_was_accepted(lab_events, receiver: str) -> None:
    spans = trace_spans(lab_events)
    with pytest.raises(OtlpExportError, match="HTTP 503") as caught:
        send(spans, receiver, {"service.name": "t"}, encoding="json", batch_spans=40)
    (accepted,) = _Receiver.bodies
    sent = sum(len(s["spans"]) for r in orjson.loads(accepted)["resourceSpans"]
               for s in r["scopeSpans"])  # fmt: skip
    assert caught.value.sent == sent and 0 < sent < len(spans)
    assert f"the other {len(spans) - sent} were not sent" in str(caught.value)
    # whole traces per batch: the accepted batch holds every span of its traces
    traces = {s["traceId"] for r in orjson.loads(accepted)["resourceSpans"]
              for sc in r["scopeSpans"] for s in sc["spans"]}  # fmt: skip
    assert sent == spans["trace_id"].isin(traces).sum()


def test_cli_writes_the_file_and_names_unreadable_ones(tmp_path: Path, capsys) -> None:
    from toolkit.cli import main

    bad = tmp_path / "bad.json"
    bad.write_text("{bad")
    out = tmp_path / "traces.json"
    code = main(["traces", str(LAB[0] / "two_turns.json"), str(bad), "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 1 and "unreadable:" in captured.err and str(bad) in captured.err
    spans = orjson.loads(out.read_bytes())["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert f"{len(spans)} spans in 1 traces" in captured.out
    assert main(["traces", str(LAB[0])]) == 2  # neither --otlp nor --out
    down = f"http://127.0.0.1:{free_port()}/v1/traces"
    assert main(["traces", str(LAB[0]), "--otlp", down]) == 2
    assert down in capsys.readouterr().err
