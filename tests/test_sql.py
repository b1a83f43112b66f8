"""toolkit.sql over frames (events, derived tables, logs) and over Parquet files and datasets."""

from __future__ import annotations

from pathlib import Path

import orjson
import pandas as pd
import pyarrow.parquet as pq
import pytest

import toolkit as tk
from toolkit.datasets import to_arrow, write_dataset
from toolkit.datasets.query import sql
from toolkit.errors import ToolkitError

ROOT = Path(__file__).resolve().parents[1]
GO_TWIN = ROOT / "data" / "go_twin"
ADK = ROOT / "data" / "adk"
LOGS = ROOT / "tests" / "fixtures" / "logs"


@pytest.fixture(scope="module")
def agents() -> pd.DataFrame:
    """Every recorded agent history: the Go plugin twin and the Python ADK lab, many files."""
    return tk.read_histories([GO_TWIN, *sorted(ADK.glob("*/*.json"))], progress=False).events


def test_derived_tables_match_the_pandas_api(agents: pd.DataFrame) -> None:
    acts = tk.activities(agents)
    counted = sql(
        "select activity_type, count(*) n, max(attempt) top from activities group by 1",
        events=agents,
    ).set_index("activity_type")
    expected = acts.groupby("activity_type").agg(n=("attempt", "size"), top=("attempt", "max"))
    assert counted["n"].to_dict() == expected["n"].to_dict()
    assert counted["top"].to_dict() == expected["top"].to_dict()
    tasks = sql("select sum(command_count) n from workflow_tasks", events=agents)
    assert tasks["n"].iloc[0] == agents["is_command"].sum()
    commands = sql("select count(*) n, count(distinct source) files from commands", events=agents)
    assert commands["n"].iloc[0] == agents["is_command"].sum()
    assert commands["files"].iloc[0] == agents["source"].nunique()


def test_agent_steps_are_kept_apart_per_file(agents: pd.DataFrame) -> None:
    steps = sql(
        "select source, turn, sum(listings_before + listings_after) listings from agent_steps "
        "group by all order by all",
        events=agents,
    )
    per_turn = tk.listings_per_turn(sorted(agents["source"].unique()))
    expected = per_turn.groupby(["source", "turn"])["listings"].sum().sort_index()
    got = steps.set_index(["source", "turn"])["listings"].sort_index()
    assert got.to_dict() == expected.to_dict()


def test_agent_steps_leave_out_files_of_no_agent(agents: pd.DataFrame) -> None:
    one = agents[agents["source"] == sorted(agents["source"].unique())[-1]]
    plain = one.assign(source="plain.json", activity_type="not_an_agent_activity")
    mixed = pd.concat([agents, plain], ignore_index=True)
    query = "select distinct source from agent_steps"
    sources = set(sql(query, events=mixed)["source"])
    assert "plain.json" not in sources and len(sources) > 0
    assert sources == set(sql(query, events=agents)["source"])
    files = sql("select count(distinct source) n from commands", events=mixed)["n"].iloc[0]
    assert files == mixed["source"].nunique()


def test_json_columns_durations_and_times(agents: pd.DataFrame) -> None:
    scheduled = sql(
        "select activity_type, attributes->>'$.activityType.name' named, event_time "
        "from events where event_type = 'ActivityTaskScheduled'",
        events=agents,
    )
    assert len(scheduled) == (agents["event_type"] == "ActivityTaskScheduled").sum()
    assert (scheduled["activity_type"] == scheduled["named"]).all()
    assert str(scheduled["event_time"].dt.tz) == "UTC"
    durations = sql("select run_duration from activities where run_duration is not null",
                    events=agents)["run_duration"]  # fmt: skip
    seconds = tk.activities(agents)["run_duration"].dropna().dt.total_seconds()
    assert sorted(durations.round(6)) == sorted(seconds.round(6))
    first = sql("select input from events where input is not null limit 1", events=agents)
    assert isinstance(orjson.loads(first["input"].iloc[0]), list)


def test_explicit_tables_win_and_unused_derivations_are_not_built() -> None:
    gallery_like = tk.read_history(sorted(ADK.glob("adk-*/two_turns.json"))[-1])
    mine = pd.DataFrame({"activity_type": ["x"]})
    out = sql("select * from activities", events=gallery_like, activities=mine)
    assert out["activity_type"].tolist() == ["x"]
    # A history that is no agent: agent_steps would raise, but only when the query names it.
    # (Renaming an agent's activities is not enough: its results still read as model calls.)
    plain = tk.read_history(ROOT / "data/gallery/activity-renamed/v1.json")
    assert sql("select count(*) n from events", events=plain)["n"].iloc[0] == len(plain)
    with pytest.raises(ToolkitError):
        sql("select * from agent_steps", events=plain)


def test_logs_fields_are_json() -> None:
    logs = tk.read_logs(LOGS / "duplicate_tool_incident.log")
    out = sql(
        "select level, count(*) n, count(fields->>'$.command') with_command from logs group by 1",
        logs=logs,
    ).set_index("level")
    assert out["n"].to_dict() == logs["level"].value_counts().to_dict()
    has_command = logs.groupby("level")["fields"].apply(lambda f: sum("command" in d for d in f))
    assert out["with_command"].to_dict() == has_command.to_dict()


def test_parquet_paths_and_datasets(agents: pd.DataFrame, tmp_path: Path) -> None:
    acts = tk.activities(agents)
    pq.write_table(to_arrow(acts), tmp_path / "acts.parquet")
    out = sql("select count(*) n from a", a=tmp_path / "acts.parquet")
    assert out["n"].iloc[0] == len(acts)
    write_dataset(GO_TWIN, tmp_path / "ds")
    joined = sql(
        "select r.status, count(*) n from activities a join runs r using (run_id) group by 1",
        dataset=tmp_path / "ds",
    )
    twin = tk.read_histories(GO_TWIN, progress=False).events
    assert joined["n"].sum() == len(tk.activities(twin))


def test_errors_name_the_problem(agents: pd.DataFrame, tmp_path: Path) -> None:
    with pytest.raises(ToolkitError, match=r"registered: events\): Parser Error: syntax"):
        sql("selec 1", events=agents)
    with pytest.raises(ToolkitError, match="nope"):
        sql("select * from nope", events=agents)
    with pytest.raises(ToolkitError, match="no such file"):
        sql("select 1", t=tmp_path / "absent.parquet")
    with pytest.raises(ToolkitError, match="cannot register"):
        sql("select 1", t=42)
    with pytest.raises(ToolkitError, match="not a toolkit dataset"):
        sql("select 1", dataset=tmp_path)


def test_log_detectors_are_tables_built_when_named() -> None:
    before = tk.read_logs(ROOT / "data" / "duplicate_tool" / "go" / "before.log")
    out = sql("select d.line, d.attempt, r.attempt as retry_attempt, d.dead_letter_line "
              "from duplicate_tools d left join retries r on r.line = d.retry_line "
              "order by d.line", logs=before)
    assert out["line"].tolist() == [4, 6, 8, 10, 12]
    assert out["attempt"].tolist() == out["retry_attempt"].tolist() == [1, 2, 3, 4, 5]
    assert out["dead_letter_line"].isna().sum() == 4
    dead = sql("select subject, reason from dead_letters", logs=before)
    assert dead.to_dict("records") == [{"subject": "cmd-2",
                                        "reason": "terminal:unclassified"}]
    core = tk.read_logs(LOGS / "temporal_core.log")
    assert sql("select sdk from nondeterminism", logs=core)["sdk"].tolist() == ["core"]
    assert sql("select sdk from nondeterminism_errors", logs=core)["sdk"].tolist() == ["core"]
    with pytest.raises(ToolkitError, match="tables registered: logs"):
        sql("select * from duplicate_tools_typo", logs=before)
    # A table passed explicitly wins over the detector.
    mine = pd.DataFrame({"line": [1]})
    assert sql("select count(*) n from retries", logs=before, retries=mine)["n"].iloc[0] == 1
