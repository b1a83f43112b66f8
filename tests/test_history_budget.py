"""tk.history_budget on runs the dev server really stopped: sizes against the server's own count,
the limit read from the history, and the forecast against where the server stopped the run."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from temporalio import activity, workflow
from temporalio.api.history.v1 import History
from temporalio.client import Client, WorkflowFailureError
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

import toolkit as tk
from toolkit.lab.server import DevServer

LIMIT = 300_000
CAN_BYTES = 90_000


# An agent in the shape of the public reports: every model call takes the whole conversation,
# every tool call adds its result to it. Activity names are the Go ADK plugin's, so the agent
# presets recognise the roles.
@activity.defn(name="InvokeModel")
async def invoke_model(conversation: list[str]) -> str:
    return f"call the tool again ({len(conversation)} messages so far)" + "." * 150


@activity.defn(name="CallMcpTool")
async def call_tool(size: int) -> str:
    return "r" * size


@workflow.defn(name="BudgetAgent")
class BudgetAgent:
    @workflow.run
    async def run(self, prompt_bytes: int, tool_bytes: int, steps: int) -> int:
        conversation = ["s" * prompt_bytes]
        for _ in range(steps):
            reply = await workflow.execute_activity(
                invoke_model, conversation, start_to_close_timeout=timedelta(seconds=20)
            )
            conversation.append(reply)
            result = await workflow.execute_activity(
                call_tool, tool_bytes, start_to_close_timeout=timedelta(seconds=20)
            )
            conversation.append(result)
        return len(conversation)


@pytest.fixture(scope="module")
def limited_server() -> Iterator[DevServer]:
    """A dev server whose history limit is a few hundred KB (a size incident in seconds)."""
    config = {"limit.historySize.error": LIMIT, "limit.historySize.warn": LIMIT // 4,
              "limit.historySize.suggestContinueAsNew": CAN_BYTES}  # fmt: skip
    with DevServer(dynamic_config=config) as server:
        yield server


async def _run(address: str, runs: list[tuple[int, int, int]]) -> list[dict[str, Any]]:
    client = await Client.connect(address)
    queue = f"budget-{uuid.uuid4().hex[:8]}"
    out = []
    async with Worker(client, task_queue=queue, workflows=[BudgetAgent],
                      activities=[invoke_model, call_tool],
                      workflow_runner=UnsandboxedWorkflowRunner()):  # fmt: skip
        for prompt, tool, steps in runs:
            handle = await client.start_workflow(
                BudgetAgent.run, args=[prompt, tool, steps], id=f"budget-{uuid.uuid4().hex[:8]}",
                task_queue=queue,
            )
            with contextlib.suppress(WorkflowFailureError):  # terminated: what this is about
                await handle.result()
            described = (await handle.describe()).raw_description.workflow_execution_info
            history = await handle.fetch_history()
            out.append({"history": History(events=history.events),
                        "json": history.to_json(),
                        "server_bytes": described.history_size_bytes,
                        "server_events": described.history_length})  # fmt: skip
    return out


@pytest.fixture(scope="module")
def recorded(limited_server: DevServer, tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    runs = asyncio.run(_run(limited_server.address, [(2000, 3000, 200), (6000, 1500, 200),
                                                     (1000, 500, 3)]))  # fmt: skip
    folder = tmp_path_factory.mktemp("budget")
    for number, run in enumerate(runs):
        run["path"] = folder / f"run{number}.json"
        run["path"].write_text(run["json"])
        run["bin"] = folder / f"run{number}.bin"
        run["bin"].write_bytes(run["history"].SerializeToString())
    return runs


@pytest.mark.server
def test_sizes_agree_with_the_servers_count(recorded: list[dict]) -> None:
    for run in recorded:
        for path in (run["path"], run["bin"]):
            sizes = tk.event_sizes(path)
            budget = tk.history_budget(tk.read_history(path))
            assert len(sizes) == run["server_events"]
            assert abs(sizes["cumulative_bytes"].iloc[-1] - run["server_bytes"]) <= \
                0.01 * run["server_bytes"]  # fmt: skip
            # The budget reads the server's own count at the last workflow task and estimates
            # the few events after it from events of their kind: a few bytes off at most.
            assert abs(budget["history_bytes"].iloc[0] - run["server_bytes"]) <= 64


@pytest.mark.server
def test_the_limit_the_server_enforced_is_read_from_the_history(recorded: list[dict]) -> None:
    budget = tk.history_budget([r["path"] for r in recorded], limits={"history_bytes": LIMIT})
    terminated, completed = budget.iloc[:2], budget.iloc[2]
    assert (terminated["status"] == "terminated").all()
    assert (terminated["limit_hit"] == "history_bytes").all()
    assert (terminated["limit_reason"] == "Workflow history size exceeds limit.").all()
    assert completed["status"] == "completed" and completed["limit_hit"] is None
    # Every model call re-sends the conversation: nearly all model input bytes are re-sent.
    assert (terminated["resent_share"] > 0.8).all()
    roles = terminated["bytes_by_role"].iloc[0]
    assert roles["model_input"] > roles["tool_result"] > roles["model_output"]
    assert sum(roles.values()) == terminated["history_bytes"].iloc[0]


@pytest.mark.server
def test_the_forecast_from_a_quarter_of_the_calls_finds_where_the_run_died(recorded) -> None:
    paths = [r["path"] for r in recorded[:2]]
    limits = {"limit.historySize.error": LIMIT,
              "limit.historySize.suggestContinueAsNew": CAN_BYTES}  # fmt: skip
    early = tk.history_budget(paths, limits=limits, fit=0.25)
    for row in early.itertuples():
        assert row.model_calls >= 8
        assert row.fit_calls == row.model_calls // 4
        assert row.first_limit == "history_bytes"
        assert abs(row.forecast_model_calls - row.model_calls) <= 1, row
        assert row.forecast_low <= row.model_calls + 1 and row.forecast_high >= row.model_calls - 1
    # The suggestion the server wrote into the history is where the forecast puts it.
    whole = tk.history_budget(paths, limits=limits)
    assert (whole["continue_as_new_at"] > 0).all()
    assert (abs(whole["continue_as_new_at"] - early["continue_as_new_at"]) <= 1).all()


@pytest.mark.server
def test_a_short_run_says_it_cannot_forecast(recorded: list[dict]) -> None:
    budget = tk.history_budget(recorded[2]["path"], fit=1)
    row = budget.iloc[0]
    assert row["forecast_model_calls"] is pd_na() and row["growth"] is None
    assert "too few to forecast" in row["note"]


def pd_na() -> Any:
    import pandas as pd

    return pd.NA


def test_limits_with_a_wrong_name_or_unit_are_clear_errors() -> None:
    events = tk.read_history(Path(__file__).parents[1] / "data/adk/adk-2.13.0/two_turns.json")
    with pytest.raises(tk.LimitsError, match="unknown limit 'history_size'"):
        tk.history_budget(events, limits={"history_size": 10})
    with pytest.raises(tk.LimitsError, match="counts events"):
        tk.history_budget(events, limits={"history_events": "4 MiB"})
    with pytest.raises(tk.LimitsError, match="in bytes"):
        tk.history_budget(events, limits={"payload_bytes": "100 events"})
    with pytest.raises(tk.LimitsError, match="unknown unit 'ms'"):
        tk.history_budget(events, limits={"history_bytes": "50 ms"})
    with pytest.raises(tk.LimitsError, match="must be positive"):
        tk.history_budget(events, limits={"limit.blobSize.error": 0})
    budget = tk.history_budget(events, limits={"limit.historySize.error": "50 MB"})
    assert budget["calls_before"].iloc[0]["history_bytes"] > 100


@pytest.mark.server
def test_the_chart_draws_each_run_against_its_limit(recorded: list[dict], tmp_path: Path) -> None:
    paths = [r["path"] for r in recorded[:2]]
    limits = {"limit.historySize.error": LIMIT, "limit.historySize.warn": LIMIT // 4,
              "limit.historySize.suggestContinueAsNew": CAN_BYTES}  # fmt: skip
    series = tk.plots.budget_series(paths, limits=limits, fit=0.25)
    for _, one in series.groupby("run_id"):
        seen = one[one["series"] == "history"].set_index("call")["bytes"]
        ahead = one[one["series"] == "forecast"].set_index("call")["bytes"]
        both = ahead.index.intersection(seen.index)
        assert len(both) >= 5  # the forecast runs over the calls it did not see
        assert ((ahead[both] - seen[both]).abs() <= 0.01 * seen[both]).all()
    figure = tk.plots.plot_history_budget(paths, limits=limits, fit=0.25)
    figure.savefig(tmp_path / "budget.png")
    panels = [ax for ax in figure.axes if ax.get_visible()]
    assert len(panels) == 2
    drawn = {line.get_label() for ax in panels for line in ax.get_lines()}
    assert {"history size limit", "stopped by the server"} <= drawn
    assert all("stopped by the server" in ax.get_title(loc="left") for ax in panels)
    assert tk.plots.overlapping_texts(figure) == []


# The lab's recordings: three agent frameworks' long tool loops, stopped by servers whose limits
# were lowered (data/history_budget/README.md).
BUDGET_DATA = Path(__file__).resolve().parents[1] / "data" / "history_budget"


def _server_limits(history: Path) -> dict[str, Any]:
    meta = Path(str(history).replace(".json.gz", ".meta.json"))
    return json.loads(meta.read_text())["budget"]["dynamic_config"]


def _terminated_for_size() -> list[Path]:
    out = []
    for meta in sorted(BUDGET_DATA.glob("*/*.meta.json")):
        reason = json.loads(meta.read_text())["budget"]["end"]["reason"] or ""
        if "history size" in reason or "history count" in reason:
            out.append(Path(str(meta).replace(".meta.json", ".json.gz")))
    return out


def test_every_lab_run_stopped_for_size_is_forecast_from_its_first_quarter() -> None:
    stopped = _terminated_for_size()
    assert len(stopped) >= 20  # the loops, the event-count runs, the continue-as-new controls
    for path in stopped:
        limits = _server_limits(path)
        whole = tk.history_budget(path, limits=limits).iloc[0]
        early = tk.history_budget(path, limits=limits, fit=0.25).iloc[0]
        assert whole["limit_hit"] in ("history_bytes", "history_events"), path
        assert early["first_limit"] == whole["limit_hit"], path
        assert abs(early["forecast_model_calls"] - whole["model_calls"]) <= 1, path.name
        assert early["fit_calls"] == max(1, whole["model_calls"] // 4)


def _stripped(path: Path, into: Path) -> Path:
    """A copy of a lab history with every payload's data cut, as an exporter that keeps only
    the metadata writes it (the server's recorded sizes stay)."""

    def cut(value: Any) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("payloads"), list):
                value["payloads"] = [{"metadata": p.get("metadata", {})} for p in value["payloads"]]
            for inner in value.values():
                cut(inner)
        elif isinstance(value, list):
            for inner in value:
                cut(inner)

    document = json.loads(gzip.decompress(path.read_bytes()))
    cut(document)
    out = into / f"{path.parent.name}-{path.name.removesuffix('.gz')}"
    out.write_text(json.dumps(document))
    return out


def test_a_run_whose_model_inputs_were_stripped_is_forecast_from_the_recorded_sizes(
    tmp_path: Path,
) -> None:
    """Stripped inputs weigh nothing: a growth fitted on them saw none, and forecast thousands
    of calls for runs the server stopped after a dozen (3,424 for one stopped after 24). Fitted
    on the history sizes the server recorded instead, the first quarter of every stopped run
    with three calls or more in it forecasts where it stopped within one call, or gives an
    interval that holds it; one with fewer says it is too few; the payload limits, which compare
    an input itself, are not forecast, and the note says so."""
    within = 0
    for path in _terminated_for_size():
        limits = _server_limits(path)
        whole = tk.history_budget(path, limits=limits).iloc[0]
        early = tk.history_budget(_stripped(path, tmp_path), limits=limits, fit=0.25).iloc[0]
        assert "sizes are unknown" in early["note"], path.name
        if early["fit_calls"] < 3:
            assert pd.isna(early["forecast_model_calls"]) and "too few" in early["note"]
            continue
        assert early["first_limit"] == whole["limit_hit"], path.name
        assert early["calls_before"]["payload_bytes"] is None, path.name
        off = abs(early["forecast_model_calls"] - whole["model_calls"])
        within += off <= 1
        assert off <= 1 or early["forecast_low"] <= whole["model_calls"] <= early[
            "forecast_high"], path.name
    assert within >= 14


def test_lab_sizes_are_the_servers() -> None:
    for meta in sorted(BUDGET_DATA.glob("*/*.meta.json")):
        budget = json.loads(meta.read_text())["budget"]
        # A stack trace naming the recording machine's paths was cut from the committed file:
        # the server counted those bytes too.
        server = budget["server"]["history_size_bytes"] - budget["scrubbed_bytes"]
        path = Path(str(meta).replace(".meta.json", ".json.gz"))
        assert tk.event_sizes(path)["cumulative_bytes"].iloc[-1] == server, path.name
        assert abs(tk.history_budget(path)["history_bytes"].iloc[0] - server) <= 64, path.name


def test_investigate_reports_the_terminated_runs_and_no_completed_one() -> None:
    folder = BUDGET_DATA / "oa-0.22.3"
    limits = {**_server_limits(folder / "loop_c8k_t256.json.gz"), "limit.historyCount.error": 300,
              "limit.blobSize.error": 65536}
    found = tk.investigate(folder, logs=folder / "logs", limits=limits)
    sized = {r for runs in found.findings.loc[found.findings["kind"] == "history_size", "runs"]
             for r in runs}  # fmt: skip
    stopped = {json.loads(m.read_text())["run_id"] for m in folder.glob("*.meta.json")
               if str(m).replace(".meta.json", ".json.gz") in map(str, _terminated_for_size())}
    finished = set(found.runs.loc[found.runs["status"].isin(["completed", "continued_as_new"]),
                                  "run_id"])  # fmt: skip
    assert stopped <= sized and not sized & finished
    payload = found.findings[found.findings["kind"] == "payload_size"]
    assert len(payload) and payload["title"].str.contains("input of model call").any()


def test_a_folder_measured_in_worker_processes_gives_the_same_budget(monkeypatch) -> None:
    import toolkit.agents.budget as budget_module

    monkeypatch.setattr(budget_module, "_POOL_FROM", 2)  # a pool even for a small folder
    folder = BUDGET_DATA / "adk-2.13.0"
    alone = tk.history_budget(folder, workers=1).sort_values("source", ignore_index=True)
    pooled = tk.history_budget(folder, workers=2).sort_values("source", ignore_index=True)
    assert len(alone) == len(pooled) == len(list(folder.glob("*.json.gz")))
    columns = ["run_id", "history_bytes", "model_calls", "limit_hit", "forecast_model_calls",
               "resent_share", "label"]
    pd.testing.assert_frame_equal(alone[columns], pooled[columns])


@pytest.mark.parametrize("where", ["lab", "corpus"])
def test_a_mixed_folder_in_worker_processes_gives_the_budget_of_one_frame(
    where: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """Chunks of many frameworks, workflow types and builds, each measured by a worker with the
    samples and builds the chunks before it found (a chunk sent before those were known is
    measured again): every column equals the budget of the whole folder read as one frame, not
    a few bytes off where a chunk took its own sample of an event kind."""
    import toolkit.agents.budget as budget_module

    data = Path(__file__).resolve().parents[1] / "data"
    paths = ([request.getfixturevalue("corpus")] if where == "corpus" else
             [data / name for name in ("adk", "openai_agents", "pydantic_ai", "go_twin",
                                       "duplicate_tool", "history_budget")])  # fmt: skip
    monkeypatch.setattr(budget_module, "_POOL_FROM", 2)
    monkeypatch.setattr(budget_module, "_CHUNK_FILES", 4)  # many chunks, several in flight
    alone = tk.history_budget(paths, workers=1)
    pooled = tk.history_budget(paths, workers=2)
    assert len(alone) > 40
    pd.testing.assert_frame_equal(alone, pooled)
    assert alone.attrs.get("errors") == pooled.attrs.get("errors")
