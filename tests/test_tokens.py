"""The token ledger (tk.model_calls, tk.token_usage) against the providers' own usage in the
lab's recordings and the public OpenAI Agents histories."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import toolkit as tk
from toolkit.agents.tokens import TOKEN_FIELDS, genai_attributes

DATA = Path(__file__).resolve().parents[1] / "data"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "agent_histories"


def _detail(usage: dict, key: str, field: str) -> int | None:
    details = usage.get(key)
    if isinstance(details, list):  # older serializations wrote a list of one
        details = details[0] if details else None
    return details.get(field) if isinstance(details, dict) else None


def _recorded_usage(result: list) -> dict[str, int | None] | None:
    """The provider's counts read straight from a model activity's result, per framework
    shape; None where the result carries none."""
    value = result[0]
    if isinstance(value, list):  # ADK: a list of LlmResponse, usage on the last that has it
        found = [v["usage_metadata"] for v in value if v.get("usage_metadata") is not None]
        if not found:
            return None
        usage = found[-1]
        return {"input_tokens": usage.get("prompt_token_count"),
                "output_tokens": usage.get("candidates_token_count"),
                "cached_input_tokens": usage.get("cached_content_token_count"),
                "reasoning_tokens": usage.get("thoughts_token_count"),
                "total_tokens": usage.get("total_token_count")}  # fmt: skip
    usage = value.get("usage")
    if not isinstance(usage, dict):
        return None
    if "parts" in value:  # pydantic-ai's ModelResponse: its RequestUsage, total not stored
        given, made = usage.get("input_tokens"), usage.get("output_tokens")
        reasoning = usage.get("output_reasoning_tokens", (usage.get("details") or {})
                              .get("reasoning_tokens"))  # fmt: skip
        return {"input_tokens": given, "output_tokens": made,
                "cached_input_tokens": usage.get("cache_read_tokens"),
                "reasoning_tokens": reasoning, "total_tokens": given + made}  # fmt: skip
    if usage.get("requests") == 0:  # the Agents SDK's Usage() default: the model counted nothing
        return None
    return {"input_tokens": usage.get("input_tokens"),
            "output_tokens": usage.get("output_tokens"),
            "cached_input_tokens": _detail(usage, "input_tokens_details", "cached_tokens"),
            "reasoning_tokens": _detail(usage, "output_tokens_details", "reasoning_tokens"),
            "total_tokens": usage.get("total_tokens")}  # fmt: skip


#: Every lab folder with model calls, and the public agent histories: how many completed
#: model calls carry the provider's usage. Every ADK model call the lab recorded carries the
#: scripted model's usage_metadata (data/adk: 61 calls over 8 releases, duplicate_tool: 4); the
#: Go twin's model records none; temporalio's own OpenAI Agents tests record Usage().
_WITH_USAGE = {"adk": 61, "duplicate_tool": 4, "go_twin": 0, "history_budget": 618,
               "openai_agents": 41, "pydantic_ai": 31, "agent_histories": 3}  # fmt: skip


@pytest.mark.parametrize("folder", sorted(_WITH_USAGE))
def test_the_ledger_is_the_providers_usage_where_recorded(folder: str) -> None:
    path = FIXTURES if folder == "agent_histories" else DATA / folder
    events, errors = tk.read_histories(path, progress=False)
    assert errors["message"].str.contains("is not a history").all()
    calls = tk.model_calls(events)
    acts = tk.activities(events)
    models = acts[acts["activity_type"].isin(calls["activity_type"].unique())]
    assert len(calls) == len(models) > 0  # one row per model activity, none lost
    merged = calls.merge(models[["source", "scheduled_event_id", "result"]],
                         left_on=["source", "event_id"],
                         right_on=["source", "scheduled_event_id"])  # fmt: skip
    assert len(merged) == len(calls)
    recorded_rows = []
    for row in merged.to_dict("records"):
        recorded = None
        if row["outcome"] == "completed" and row["result"] is not None:
            recorded = _recorded_usage(row["result"])
        if recorded is None:  # None, with the reason; never a zero made up
            assert all(pd.isna(row[name]) for name in TOKEN_FIELDS)
            assert row["usage_note"]
            continue
        recorded_rows.append(recorded)
        for name in TOKEN_FIELDS:
            expected = recorded[name]
            assert (pd.isna(row[name]) if expected is None else row[name] == expected), (
                row["source"], row["event_id"], name)
    assert len(recorded_rows) == _WITH_USAGE[folder]
    if recorded_rows:  # the ledger's sums, per run and over the folder, are the payloads'
        payloads = pd.DataFrame(recorded_rows, dtype="Int64")
        per_run = tk.token_usage(calls)
        for name in TOKEN_FIELDS:
            assert calls[name].sum() == per_run[name].sum() == payloads[name].sum(), name
            assert per_run[name].sum() > 0 or name in ("cached_input_tokens",
                                                       "reasoning_tokens")  # fmt: skip
        assert per_run["calls_with_usage"].sum() == len(recorded_rows)


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


def _ledger_frames() -> list[pd.DataFrame]:
    corpus = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "histories"
    roots = [*(p for p in sorted(DATA.iterdir()) if p.is_dir() and p.name != "venvs"), FIXTURES,
             corpus]  # fmt: skip
    frames = []
    for root in roots:
        files = [p for p in sorted(root.rglob("*.json")) if not p.name.endswith(".meta.json")]
        if files:
            frames.append(tk.read_histories(files, progress=False).events)
    return frames


def test_the_typed_ledger_table_equals_the_converted_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ledger's columns made in their dtypes at once (``_typed_table``) equal the object
    table converted column by column, on every lab folder, the fixtures and the corpus."""
    import toolkit.agents.tokens as tokens

    typed_frames = [tokens.model_calls(frame) for frame in _ledger_frames()]
    taken = []
    original = tokens._typed_table
    monkeypatch.setattr(tokens, "_typed_table", lambda *a: taken.append(original(*a)) or None)
    for frame, typed in zip(_ledger_frames(), typed_frames, strict=True):
        converted = tokens.model_calls(frame)
        assert list(typed.dtypes) == list(converted.dtypes)
        pd.testing.assert_frame_equal(typed, converted, check_exact=True)
        for column in ("requested_tools", "usage_note", "label", "source"):
            assert typed[column].tolist() == converted[column].tolist()
    assert any(t is not None for t in taken)  # the typed route was the one taken


@pytest.mark.parametrize("odd", [
    {"attempt": 2.0}, {"input_tokens": True}, {"event_id": None}, {"input_bytes": 2**70},
    {"turn": pd.NA},
])  # fmt: skip
def test_the_typed_ledger_table_leaves_other_values_to_the_conversion(odd: dict) -> None:
    """Anything but ints (and None where a column is nullable) makes ``_typed_table`` give
    way to the general route, which converts (or refuses) as it always did."""
    from toolkit.agents.tokens import MODEL_CALL_COLUMNS, _typed_table

    columns = {name: [None] for name in MODEL_CALL_COLUMNS}
    columns.update(history=[0], event_id=[5], turn=[1], step=[1], attempt=[1])
    times = {name: pd.array([pd.Timestamp(0, tz="UTC")]) for name in ("scheduled", "started",
                                                                       "closed")}  # fmt: skip
    assert _typed_table(columns, times) is not None
    columns.update({name: [value] for name, value in odd.items()})
    assert _typed_table(columns, times) is None
    assert _typed_table({**columns, **{k: [1] for k in odd}}, {"scheduled": [None]}) is None


def _genai_attributes_as_before(calls: pd.DataFrame) -> dict:
    """genai_attributes as it was written before (every key, then those not None; pd.NA as
    None): the reference of the one-dict route."""
    out: dict = {}
    names = ("source", "history", "event_id", "model", "agent", *TOKEN_FIELDS, "framework",
             "usage_note", "input_bytes", "output_bytes", "requested_tools")  # fmt: skip
    for (source, history, event_id, model, agent, input_tokens, output_tokens, cached, reasoning,
         total, framework, note, input_bytes, output_bytes, requested) in zip(
            *(calls[name].tolist() for name in names), strict=True):  # fmt: skip
        attributes = {
            "gen_ai.operation.name": "chat", "gen_ai.request.model": model,
            "gen_ai.agent.name": agent, "gen_ai.usage.input_tokens": input_tokens,
            "gen_ai.usage.output_tokens": output_tokens,
            "gen_ai.usage.cache_read.input_tokens": cached,
            "gen_ai.usage.reasoning.output_tokens": reasoning, "llm.model_name": model,
            "llm.token_count.prompt": input_tokens, "llm.token_count.completion": output_tokens,
            "llm.token_count.total": total, "llm.token_count.prompt_details.cache_read": cached,
            "llm.token_count.completion_details.reasoning": reasoning,
            "temporal.agent.framework": framework, "temporal.usage_note": note,
            "temporal.payload.input_bytes": input_bytes,
            "temporal.payload.output_bytes": output_bytes, "_requested_tools": requested,
        }  # fmt: skip
        out[(source, int(history), int(event_id))] = {
            k: (None if v is pd.NA else v) for k, v in attributes.items() if v is not None
        }
    return out


def test_genai_attributes_equal_the_two_dict_route_keys_in_order() -> None:
    frame = tk.read_histories(DATA, progress=False).events  # every lab folder (and its others)
    calls = tk.model_calls(frame)
    odd = calls.head(3).copy()  # None and pd.NA where a call has neither (NA kept as None)
    odd["model"] = [None, "m", None]
    odd["input_tokens"] = pd.array([None, 1, None], dtype="Int64")
    both = odd.copy()  # a column holding None and pd.NA, another pd.NA alone (object columns)
    both["agent"] = pd.Series([pd.NA, None, "a"], dtype=object, index=both.index)
    both["usage_note"] = pd.Series(["n", pd.NA, pd.NA], dtype=object, index=both.index)
    both["framework"] = pd.Series([None, None, None], dtype=object, index=both.index)
    for table in (calls, odd, both, calls.iloc[:0]):
        found = genai_attributes(table)
        expected = _genai_attributes_as_before(table)
        assert found == expected
        assert [list(a.items()) for a in found.values()] == [
            list(a.items()) for a in expected.values()]  # fmt: skip
    assert any(None in a.values() for a in genai_attributes(odd).values())
