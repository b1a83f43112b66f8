"""The token ledger (tk.model_calls, tk.token_usage) against the providers' own usage in the
lab's recordings and the public OpenAI Agents histories."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import toolkit as tk
from toolkit.agents.tokens import TOKEN_FIELDS

DATA = Path(__file__).resolve().parents[1] / "data"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "agent_histories"


def _recorded_usage(result: list) -> dict[str, int | None]:
    """The provider's counts straight from a model activity's result, per framework shape."""
    value = result[0]
    if isinstance(value, list):  # ADK: a list of LlmResponse, usage on the last
        usage = value[-1].get("usage_metadata") or {}
        return {"input_tokens": usage.get("prompt_token_count"),
                "output_tokens": usage.get("candidates_token_count")}  # fmt: skip
    usage = value.get("usage") or {}
    if usage.get("requests") == 0:  # the Agents SDK's Usage() default: the model counted nothing
        return {"input_tokens": None, "output_tokens": None}
    return {"input_tokens": usage.get("input_tokens"),
            "output_tokens": usage.get("output_tokens")}  # fmt: skip


@pytest.mark.parametrize("folder", ["openai_agents", "pydantic_ai", "adk"])
def test_the_ledger_is_the_providers_usage_where_recorded(folder: str) -> None:
    events, errors = tk.read_histories(DATA / folder)
    assert errors.empty
    calls = tk.model_calls(events)
    acts = tk.activities(events)
    models = acts[acts["activity_type"].isin(calls["activity_type"].unique())]
    assert len(calls) == len(models)  # one row per model activity, none lost
    merged = calls.merge(models[["source", "scheduled_event_id", "result"]],
                         left_on=["source", "event_id"],
                         right_on=["source", "scheduled_event_id"])  # fmt: skip
    with_usage = 0
    for row in merged.to_dict("records"):
        if row["outcome"] != "completed":
            assert pd.isna(row["input_tokens"]) and row["usage_note"]
            continue
        recorded = _recorded_usage(row["result"])
        if recorded["input_tokens"] is None:
            assert pd.isna(row["input_tokens"]) and row["usage_note"]  # None, with the reason
        else:
            with_usage += 1
            assert row["input_tokens"] == recorded["input_tokens"]
            assert row["output_tokens"] == recorded["output_tokens"]
    if folder == "pydantic_ai":  # FunctionModel counts its own usage in every release
        assert with_usage == (merged["outcome"] == "completed").sum() > 0


def test_the_sdks_empty_usage_is_none_with_its_reason() -> None:
    # temporalio's own tests record Usage() (requests 0, every count 0): nothing was counted.
    calls = tk.model_calls(FIXTURES / "customer-service-workflow-history.json")
    assert len(calls) == 6
    assert calls["input_tokens"].isna().all() and calls["output_tokens"].isna().all()
    assert calls["usage_note"].str.contains("empty default").all()
    usage = tk.token_usage(calls)
    assert usage["calls"].tolist() == [6] and usage["calls_with_usage"].tolist() == [0]
    assert usage["input_tokens"].isna().all()  # <NA>, not 0


def test_sums_per_run_turn_and_label_add_up() -> None:
    calls = tk.model_calls(DATA / "pydantic_ai")
    per_turn = tk.token_usage(calls, by=("label", "run_id", "turn"))
    per_run = tk.token_usage(calls)
    for name in ("input_tokens", "output_tokens", "total_tokens"):
        assert per_turn[name].sum() == per_run[name].sum() == calls[name].sum()
    assert per_run["calls"].sum() == len(calls)
    assert set(per_turn["label"]) == {"pa-2.2.0", "pa-2.40.0", "pa-2.68.0"}
    totals = calls.assign(total=calls["input_tokens"] + calls["output_tokens"])
    assert (totals["total"] == totals["total_tokens"]).all()


def test_cost_only_from_a_given_price_table() -> None:
    calls = tk.model_calls(DATA / "pydantic_ai" / "pa-2.68.0")
    assert "cost" not in tk.token_usage(calls).columns  # no prices are built in
    prices = {"lab-scripted-model": {"input": 2.0, "output": 8.0, "cached_input": 0.5}}
    priced = tk.token_usage(calls, by="model", prices=prices)
    expected = (calls["input_tokens"].sum() * 2.0 + calls["output_tokens"].sum() * 8.0) / 1e6
    assert priced["cost"].iloc[0] == pytest.approx(expected)
    assert priced["unpriced_calls"].iloc[0] == 0
    other = tk.token_usage(calls, by="model", prices={"gpt-4o": {"input": 1, "output": 1}})
    assert other["cost"].isna().all() and other["unpriced_calls"].iloc[0] == len(calls)
    with pytest.raises(tk.ToolkitError, match="per million tokens"):
        tk.token_usage(calls, prices={"m": {"input": 1}})
    with pytest.raises(tk.ToolkitError, match="no non-negative numbers"):
        tk.token_usage(calls, prices={"m": {"input": -1, "output": "x"}})
    with pytest.raises(tk.ToolkitError, match="no model_calls columns"):
        tk.token_usage(calls, by="colour")


def test_failed_and_retried_calls_are_counted_apart() -> None:
    # The go twin's "tool failure" style runs have no failed model calls; build the case from
    # a real recording: the last model call still open (history cut before it closed).
    events = tk.read_history(DATA / "pydantic_ai" / "pa-2.68.0" / "two_turns.json")
    calls = tk.model_calls(events)
    last = int(calls["event_id"].max())
    cut = events[events["event_id"] <= last + 1]  # scheduled and started, never closed
    open_calls = tk.model_calls(cut)
    assert open_calls["outcome"].iloc[-1] is None
    assert pd.isna(open_calls["input_tokens"].iloc[-1]) and open_calls["usage_note"].iloc[-1]
    usage = tk.token_usage(open_calls)
    assert usage["failed_calls"].iloc[0] == 1
    assert usage["input_tokens"].iloc[0] == calls["input_tokens"].iloc[:-1].sum()


def test_a_history_without_agents_has_no_model_calls(corpus) -> None:
    calls = tk.model_calls(corpus / "histories/temporalio__sdk-go/basic.json")
    assert calls.empty and list(calls.columns)[: len(TOKEN_FIELDS)] != []


def test_tokens_per_turn_chart_draws_the_ledger(tmp_path: Path) -> None:
    calls = tk.model_calls([DATA / "openai_agents", DATA / "pydantic_ai", DATA / "adk"])
    bars = tk.plots.token_bars(calls, facet="framework")
    per_turn = tk.token_usage(calls, by=("source", "history", "label", "turn", "framework"))
    assert bars["total_tokens"].sum() == per_turn["total_tokens"].sum()
    assert bars.attrs["turns_without_usage"] == per_turn["total_tokens"].isna().sum()
    figure = tk.plots.plot_tokens_per_turn(calls, facet="framework")
    figure.savefig(tmp_path / "tokens.png")
    assert (tmp_path / "tokens.png").stat().st_size > 10_000
    assert tk.plots.overlapping_texts(figure) == []
    drawn = tk.plots.listing_bars(bars, value="total_tokens", facet="framework")
    assert set(drawn["group"]) == set(calls.loc[calls["total_tokens"].notna(), "label"])
    with pytest.raises(tk.ToolkitError, match="no turn reports token usage"):
        tk.plots.plot_tokens_per_turn(calls[calls["framework"] == "go_twin"])


def test_investigate_holds_the_ledger_and_the_report_shows_tokens_per_turn() -> None:
    inv = tk.investigate(DATA / "pydantic_ai")
    calls = inv.evidence["model_calls"]
    assert len(calls) == len(tk.model_calls(DATA / "pydantic_ai"))
    per_turn = inv.evidence["tokens_per_turn"]
    assert per_turn["input_tokens"].sum() == calls["input_tokens"].sum()
    assert set(per_turn["label"]) <= set(inv.runs["label"])
    assert "Tokens per turn" in inv.to_html()
