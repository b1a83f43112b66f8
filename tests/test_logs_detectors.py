"""Detectors on the incident logs and on every family's fixtures."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from toolkit.logs import (
    dead_letters,
    duplicate_tools,
    mcp_client_failures,
    nondeterminism_in_logs,
    read_logs,
    retries,
)

FIXTURES = Path(__file__).parent / "fixtures" / "logs"


@pytest.fixture(scope="module")
def incident() -> pd.DataFrame:
    return read_logs(FIXTURES / "duplicate_tool_incident.log")


def test_strict_duplicate_tool_vs_naive_grep(incident: pd.DataFrame) -> None:
    found = duplicate_tools(incident)
    assert list(found["line"]) == [2, 4, 6, 8, 10]
    # The retry records (no error quoted) follow each failure of cmd-7: linked, not counted.
    assert found["retry_line"].tolist() == [3, 5, 7, 9, 11]
    assert found["attempt"].tolist() == [1, 2, 3, 4, 5]
    assert found["dead_letter_line"].isna().tolist() == [True] * 4 + [False]
    assert found["dead_letter_line"].iloc[-1] == 12
    assert set(found["kind"]) == {"go_adk"} and set(found["tool"]) == {"balda.control.shutdown"}
    # The naive grep counts the fix's own "skipping duplicate toolset" line as well.
    naive = incident["raw"].str.contains("duplicate tool", regex=False)
    assert naive.sum() == 6
    skip_line = int(incident.loc[naive, "line"].max())
    assert skip_line == 13 and skip_line not in set(found["line"])
    after_fix = incident[incident["ts"] >= pd.Timestamp("2026-09-27T11:00:00Z")]
    assert duplicate_tools(after_fix).empty


def test_retries_count_delivery_attempts_to_dead_letter(incident: pd.DataFrame) -> None:
    found = retries(incident)
    attempts = found[found["pattern"] == "delivery_attempt"]
    assert list(attempts["attempt"]) == [1, 2, 3, 4, 5, 5]
    assert list(attempts["max_attempts"].dropna()) == [5, 5, 5, 5, 5]
    assert set(attempts["subject"]) == {"agent.turn"}
    assert set(attempts["subject_kind"]) == {"command"}
    dead = dead_letters(incident)
    assert list(dead["line"]) == [12]
    assert dead.iloc[0]["reason"] == "terminal:unclassified"
    assert dead.iloc[0]["subject"] == "agent.turn"


def test_every_duplicate_shape_and_nothing_else() -> None:
    found = duplicate_tools(read_logs(FIXTURES / "python_shadow.log"))
    assert list(found["kind"]) == ["python_adk", "mcp_plugin", "mcp_plugin_legacy", "gemini",
                                   "pydantic_ai"]
    assert list(found["behaviour"]) == ["shadowed", "retried", "retried", "failed", "failed"]
    assert list(found["retried_by"]) == [None, "activity", "activity", None, None]
    assert set(found["tool"]) == {"search"}
    pyd = found[found["kind"] == "pydantic_ai"].iloc[0]
    assert pyd["existing"].endswith("?token=abc')")
    assert 6 not in set(found["line"]) and 7 not in set(found["line"])


@pytest.mark.parametrize(
    ("name", "lines"),
    [
        ("slog_json.log", [2]), ("slog_text.log", [3]), ("zap_console.log", [2]),
        ("hclog.log", [2]), ("docker_json.log", [2]), ("cri.log", [2]),
        ("journald_json_pretty.log", [1]), ("go_panic.log", [2]),
        ("pytest_live.log", [3]), ("otlp.jsonl", [1]),
    ],
)
def test_duplicates_found_through_envelopes_and_fields(name: str, lines: list[int]) -> None:
    assert list(duplicate_tools(read_logs(FIXTURES / name))["line"]) == lines


def test_nondeterminism_in_logs_across_sdks() -> None:
    go = nondeterminism_in_logs(read_logs(FIXTURES / "temporal_go_sdk.log"))
    assert list(go["line"]) == [3]
    assert (go.iloc[0]["sdk"], go.iloc[0]["kind"], go.iloc[0]["actual"]) == (
        "go", "extra_replay_command", "ListMcpTools")
    core = nondeterminism_in_logs(read_logs(FIXTURES / "temporal_core.log"))
    assert (core.iloc[0]["sdk"], core.iloc[0]["run_id"]) == (
        "core", "0d8a5a3e-1c4f-4b7e-9a3c-1f2e3d4c5b6a")
    assert (core.iloc[0]["expected"], core.iloc[0]["actual"]) == ("InvokeModel", "ListMcpTools")
    java = nondeterminism_in_logs(read_logs(FIXTURES / "java_logback.log"))
    assert (java.iloc[0]["sdk"], java.iloc[0]["event_id"], java.iloc[0]["line"]) == ("java", 5, 2)
    assert str(java["event_id"].dtype) == "Int64"
    assert nondeterminism_in_logs(read_logs(FIXTURES / "python_logging.log")).empty


def test_retry_shapes() -> None:
    frames = {name: retries(read_logs(FIXTURES / name)) for name in
              ("hclog.log", "klog.log", "spring_boot.log", "temporal_go_sdk.log", "logfmt.log")}
    assert frames["hclog.log"].iloc[0][["attempt", "pattern"]].tolist() == [2, "paren_attempt"]
    klog = frames["klog.log"].set_index("line")
    assert (klog.loc[3, "attempt"], klog.loc[3, "max_attempts"]) == (3, 5)
    spring = frames["spring_boot.log"].iloc[0]
    assert (spring["attempt"], spring["max_attempts"], spring["subject"]) == (2, 5, "search")
    sdk = frames["temporal_go_sdk.log"].set_index("line")
    assert (sdk.loc[2, "attempt"], sdk.loc[2, "subject"]) == (2, "ListMcpTools")
    assert frames["logfmt.log"].iloc[0]["attempt"] == 3


def test_dead_letter_shapes() -> None:
    journald = dead_letters(read_logs(FIXTURES / "journald_json.log"))
    assert list(journald["line"]) == [2]
    syslog = dead_letters(read_logs(FIXTURES / "syslog.log", year=2026))
    assert list(syslog["reason"]) == ["max attempts"]
    logrus = dead_letters(read_logs(FIXTURES / "logrus_json.log"))
    assert logrus.iloc[0]["reason"] == "terminal:unclassified"
    history = read_logs(["level=info msg=\"workflow history archived\" attempts=3 failed=0",
                         "level=warn msg=\"message archived after max attempts\""])
    assert list(dead_letters(history)["line"]) == [2]


def test_mcp_client_failures() -> None:
    rows = []
    for name in ("zerolog.log", "structlog_json.log", "klog.log", "rich.log", "log4j2.log",
                 "uvicorn.log", "bunyan.log"):
        rows.append(mcp_client_failures(read_logs(FIXTURES / name)))
    found = pd.concat(rows, ignore_index=True)
    assert found["kind"].value_counts().to_dict() == {
        "client_closed": 3, "list_tools_failed": 2, "session_terminated": 2}
    klog = found[found["source"].str.endswith("klog.log")].iloc[0]
    assert klog["server"] == "http://10.0.0.5:8931/mcp"
    structlog = found[found["source"].str.endswith("structlog_json.log")].iloc[0]
    assert structlog["server"] == "http://127.0.0.1:8931/mcp"


def test_detectors_on_empty_results_keep_columns(incident: pd.DataFrame) -> None:
    quiet = incident.iloc[:1]
    assert list(duplicate_tools(quiet).columns) == [
        "line", "ts", "level", "source", "kind", "framework", "behaviour", "retried_by", "tool",
        "toolset", "existing", "correlation_id", "attempt", "max_attempts", "retry_line",
        "dead_letter_line", "dead_letter_reason", "echo_lines", "text"]
    assert str(duplicate_tools(quiet)["dead_letter_line"].dtype) == "Int64"
    assert nondeterminism_in_logs(quiet).empty
    assert str(retries(quiet)["ts"].dtype) == "datetime64[ns, UTC]"


def test_detectors_on_the_corpus(corpus: Path) -> None:
    logs = read_logs(corpus / "logs" / "temporalio__sdk-go__integration-test.log")
    assert duplicate_tools(logs).empty and dead_letters(logs).empty
    php = read_logs(corpus / "logs" / "antmendoza__my-temporal-pocs__test.log")
    assert duplicate_tools(php).empty
