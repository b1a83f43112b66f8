"""tk.to_otel into a real receiver: Arize Phoenix (extra ``otel``) started on a free port for this
module, stopped by PID. The spans are read back through Phoenix's REST API."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

import toolkit as tk
from toolkit.lab.phoenix import PhoenixServer

DATA = Path(__file__).resolve().parents[1] / "data"
LAB = [DATA / "openai_agents" / "oa-0.22.3", DATA / "pydantic_ai" / "pa-2.68.0",
       DATA / "adk" / "adk-2.13.0"]  # fmt: skip
MARKER = DATA / "pydantic_ai" / "pa-2.2.0" / "two_turns.json"
PUBLIC = "histories/temporalio__sdk-python/customer-service-workflow-history.json"


@pytest.fixture(scope="module")
def phoenix() -> Iterator[PhoenixServer]:
    with PhoenixServer() as server:
        print(f"phoenix up in {server.startup_seconds:.1f} s")
        yield server


def _stored(phoenix: PhoenixServer, project: str, count: int, wait: float = 60.0) -> list[dict]:
    """Phoenix's spans of ``project`` once it holds ``count`` of them (it ingests in the
    background, in the order it received them)."""
    deadline = time.monotonic() + wait
    while True:
        spans = phoenix.spans(project)
        if len(spans) >= count or time.monotonic() > deadline:
            return spans
        time.sleep(0.25)


def _check_tree(stored: list[dict], sent) -> None:
    by_id = {s["context"]["span_id"]: s for s in stored}
    assert len(by_id) == len(stored) == len(sent)
    assert Counter(s["name"] for s in stored) == Counter(sent["name"])
    parents = dict(zip(sent["span_id"], sent["parent_span_id"], strict=True))
    assert {i: s["parent_id"] for i, s in by_id.items()} == parents
    kinds = Counter(s["span_kind"] for s in stored)
    assert kinds["LLM"] == (sent["role"] == "model").sum()
    assert kinds["AGENT"] == (sent["role"] == "turn").sum()
    assert kinds["TOOL"] == (sent["role"] == "tool_call").sum()


def test_phoenix_shows_the_lab_runs_and_a_second_export_adds_nothing(phoenix) -> None:
    first = tk.to_otel(LAB, endpoint=phoenix.traces_endpoint, project="lab")
    assert first.sent == len(first.spans) > 100
    stored = _stored(phoenix, "lab", len(first.spans))
    _check_tree(stored, first.spans)
    assert len({s["context"]["trace_id"] for s in stored}) == first.traces
    # token sums as the ledger has them (the providers' counts), per trace too
    calls = first.model_calls
    llm = [s for s in stored if s["span_kind"] == "LLM"]
    for key, column in (("llm.token_count.prompt", "input_tokens"),
                        ("llm.token_count.completion", "output_tokens")):  # fmt: skip
        assert sum(s["attributes"].get(key, 0) for s in llm) == calls[column].sum() > 0
    by_trace = Counter()
    for s in llm:
        by_trace[s["attributes"]["temporalRunID"]] += s["attributes"].get(
            "gen_ai.usage.input_tokens", 0
        )
    ledger = tk.token_usage(calls)
    assert {r: n for r, n in by_trace.items() if n} == {
        r: int(n) for r, n in zip(ledger["run_id"], ledger["input_tokens"], strict=True)
        if not pd.isna(n) and n}  # fmt: skip

    again = tk.to_otel(LAB, endpoint=phoenix.traces_endpoint, project="lab")
    assert again.sent == len(first.spans)
    # Phoenix ingests in order: once a later trace is in, the re-export has been handled.
    marker = tk.to_otel(MARKER, endpoint=phoenix.traces_endpoint, project="lab")
    after = _stored(phoenix, "lab", len(first.spans) + len(marker.spans))
    assert len(after) == len(first.spans) + len(marker.spans)


def test_the_public_openai_agents_history_in_phoenix(phoenix, corpus) -> None:
    out = tk.to_otel(corpus / PUBLIC, endpoint=phoenix.traces_endpoint, project="public")
    stored = _stored(phoenix, "public", len(out.spans))
    _check_tree(stored, out.spans)
    llm = [s for s in stored if s["span_kind"] == "LLM"]
    assert len(llm) == 6  # six invoke_model_activity calls in the recording
    # the run was canceled: its span says so
    (root,) = [s for s in stored if s["parent_id"] is None]
    assert root["attributes"]["temporal.workflow.status"] == "canceled"


def test_phoenix_refusing_json_is_a_clear_error(phoenix) -> None:
    with pytest.raises(tk.ToolkitError, match=r"HTTP 415.*0 of \d+ spans had been accepted"):
        tk.to_otel(LAB[0], endpoint=phoenix.traces_endpoint, encoding="json")
