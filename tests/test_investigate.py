"""``tk.investigate`` on the lab bundle, on plain exports without sidecars, and on the corpus."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import toolkit as tk
from toolkit.errors import HistoryFormatError
from toolkit.lab.server import DevServer

ROOT = Path(__file__).resolve().parents[1]
ADK = ROOT / "data" / "adk"
GO_LOGS = ROOT / "data" / "duplicate_tool" / "go"
ROLLING = sorted(ADK.glob("*/rolling_upgrade_*.json"))
UPGRADE = [p for p in ROLLING if not p.name.endswith(".meta.json")]


def _plain_exports(tmp_path: Path) -> Path:
    """The lab's ADK histories as a user would have them: flat, no sidecars, no request logs."""
    out = tmp_path / "exports"
    out.mkdir()
    for path in sorted(ADK.glob("adk-1.2*/*.json")):
        if not path.name.endswith(".meta.json"):
            shutil.copy(path, out / f"{path.parent.name}-{path.name}")
    shutil.copy(GO_LOGS / "before.log", out / "worker.log")
    return out


def _kinds(found: tk.Investigation) -> list[str]:
    return found.findings["kind"].tolist()


def test_lab_bundle_finds_both_incidents_in_one_call() -> None:
    found = tk.investigate(
        [*UPGRADE, ADK / "adk-1.28.1", ADK / "adk-1.29.0"],
        logs=GO_LOGS / "before.log",
        configs=GO_LOGS / "registry.json",
    )
    kinds = _kinds(found)
    wanted = {"nondeterminism", "stuck_run", "listing_change", "duplicate_tool", "dead_letter"}
    assert wanted <= set(kinds)
    severities = found.findings["severity"].map({"critical": 0, "high": 1, "medium": 2, "low": 3})
    assert severities.is_monotonic_increasing  # ranked by severity
    stuck = found.runs[found.runs["stuck"]]
    assert stuck["source"].str.endswith("rolling_upgrade_to_adk-1.29.0.json").tolist() == [True]
    nondeterminism = found.findings[found.findings["kind"] == "nondeterminism"].iloc[0]
    assert nondeterminism["versions"] == ["adk-1.28.1", "adk-1.29.0"]  # recorded, failing
    assert "weather-list-tools" in nondeterminism["title"]
    duplicates = found.findings[found.findings["kind"] == "duplicate_tool"]
    duplicate = duplicates[duplicates["title"].str.contains("(go_adk)", regex=False)].iloc[0]
    assert "5 failures" in duplicate["title"]  # the retry and dead-letter lines not counted again
    assert "bundled-session-memory-s3ss10n" in duplicate["next_step"]  # the entry to keep
    # Sidecars and request logs are notes, never errors; nothing failed to load.
    assert set(found.errors["status"]) == {"skipped"}
    assert found.errors["reason"].str.contains("lab metadata sidecar").any()


def test_plain_exports_without_sidecars_keep_versions_apart(tmp_path: Path) -> None:
    found = tk.investigate(_plain_exports(tmp_path) / "*.json", logs=tmp_path / "exports")
    assert {"nondeterminism", "stuck_run", "listing_change", "duplicate_tool"} <= set(
        _kinds(found)
    )
    runs = found.runs
    assert set(runs["label_source"]) == {"build_id"}
    by_env = runs.groupby(runs["source"].str.extract(r"(adk-1\.2\d\.\d)")[0])["label"].unique()
    assert all(len(labels) == 1 for labels in by_env)  # one label per release ...
    assert by_env.map(lambda labels: labels[0]).nunique() == len(by_env)  # ... none shared
    assert all("temporal-python 1.30.0" in label for label in runs["label"])  # same SDK
    assert "build ids" in found.label_note
    # 1.28.1 lists 3 times per one-call turn, 1.29.0 once: compared per label, never averaged.
    summary = found.evidence["listing_summary"]
    one_call = summary[(summary["toolsets"] == 1) & (summary["tool_calls"] == 1)]
    medians = dict(zip(one_call["label"], one_call["listings_median"], strict=True))
    old = runs.loc[runs["source"].str.contains("adk-1.28.1-two_turns"), "label"].iloc[0]
    new = runs.loc[runs["source"].str.contains("adk-1.29.0-two_turns"), "label"].iloc[0]
    assert (medians[old], medians[new]) == (3, 1)
    nondeterminism = found.findings[found.findings["kind"] == "nondeterminism"].iloc[0]
    assert nondeterminism["versions"] == [old, new]


def test_versions_override_the_history_labels(tmp_path: Path) -> None:
    exports = _plain_exports(tmp_path)
    default = tk.investigate(exports)
    first = default.runs["label"].iloc[0]
    renamed = tk.investigate(exports, versions={first: "release A"})
    assert (renamed.runs["label"] == "release A").sum() == (default.runs["label"] == first).sum()
    by_file = tk.investigate(exports, versions=lambda run: Path(run["source"]).name[:10])
    assert set(by_file.runs["label"]) == {"adk-1.27.5", "adk-1.28.1", "adk-1.29.0"}
    assert set(by_file.runs["label_source"]) == {"versions"}


def test_corpus_exports_from_every_sdk(corpus: Path) -> None:
    found = tk.investigate(corpus / "histories")
    loaded = tk.read_histories(corpus / "histories", progress=False)
    assert len(found.runs) == loaded.events.groupby(["source", "history"]).ngroups
    assert found.errors["source"].tolist() == loaded.errors["source"].tolist()
    assert set(found.runs["label_source"]) >= {"build_id", "binary_checksum", "sdk"}
    assert "nondeterminism" in _kinds(found) and "stuck_run" in _kinds(found)
    failed = set(found.errors["source"])
    for evidence in found.findings["evidence"]:
        assert not failed & set(evidence.get("sources", []))  # nothing from unloadable files


def test_bad_input_is_listed_or_raises(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "a.json").write_text('{"events": [')
    (broken / "a.meta.json").write_text("{}")
    with pytest.raises(HistoryFormatError, match="no history could be read"):
        tk.investigate(broken)
    shutil.copy(UPGRADE[0], broken / "run.json")
    found = tk.investigate(broken)
    assert len(found.runs) == 1
    assert found.errors.set_index("source").loc[str(broken / "a.json"), "status"] == "failed"
    assert found.errors.set_index("source").loc[str(broken / "a.meta.json"), "status"] == "skipped"


def test_report_html_is_self_contained_and_markdown_is_a_skeleton(tmp_path: Path) -> None:
    found = tk.investigate([ADK / "adk-1.28.1", ADK / "adk-1.29.0"], logs=GO_LOGS / "before.log")
    page = found.to_html(tmp_path / "report.html")
    assert (tmp_path / "report.html").read_text(encoding="utf-8") == page
    assert "data:image/png;base64," in page and "src='http" not in page
    assert "weather-list-tools" in page and found._repr_html_().startswith("<div class='tkr'>")
    markdown = found.to_markdown()
    for section in ("## Timeline", "## Impact", "## Root cause candidates", "## Evidence",
                    "## Fix checks"):  # fmt: skip
        assert section in markdown
    assert "duplicate_tool" in markdown


def test_runs_from_a_server_and_replay_with_the_new_code(
    dev_server: DevServer, samples: dict[str, Path]
) -> None:
    from toolkit.lab.samples.workflows import DriftingWorkflowV1, DriftingWorkflowV2

    recorded = tk.read_history(samples["nondeterminism"])
    query = "WorkflowType = 'DriftingWorkflow'"
    new_code = tk.investigate(server=dev_server.address, query=query,
                              workflows=[DriftingWorkflowV2])  # fmt: skip
    assert recorded["run_id"].iloc[0] in set(new_code.runs["run_id"])
    replay = new_code.evidence["replay"]
    assert (replay["outcome"] == "nondeterminism").all()
    confidences = set(new_code.findings.loc[new_code.findings["kind"] == "nondeterminism",
                                            "confidence"])  # fmt: skip
    assert "replayer" in confidences  # the Replayer's verdict, next to the recorded failure
    old_code = tk.investigate(server=dev_server.address, query=query,
                              workflows=[DriftingWorkflowV1])  # fmt: skip
    assert (old_code.evidence["replay"]["outcome"] == "ok").all()
    assert "replayer" not in set(old_code.findings["confidence"])


def test_cli_exit_codes_and_json(tmp_path: Path) -> None:
    def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "toolkit.cli", "investigate", *map(str, args)]
        return subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=ROOT)

    report = tmp_path / "report.html"
    found = run("--json", ADK / "adk-1.28.1", ADK / "adk-1.29.0", "--logs", GO_LOGS / "before.log",
                "--html", report)  # fmt: skip
    assert found.returncode == 1, found.stderr
    kinds = {row["kind"] for row in json.loads(found.stdout)["findings"]}
    assert {"nondeterminism", "duplicate_tool"} <= kinds and report.stat().st_size > 10_000
    text = run(ADK / "adk-1.28.1", ADK / "adk-1.29.0", "--logs", GO_LOGS / "before.log",
               "--width", "0")  # fmt: skip
    lines = text.stdout.splitlines()
    titles = [line for line in lines if line[:1].isdigit() and ". [" in line]
    assert lines[0] == json.loads(found.stdout)["headline"]  # the report's one sentence first
    findings = json.loads(found.stdout)["findings"]
    assert len(titles) == len(findings)
    assert all(t.startswith(f"{n}. [{f['severity']}] {f['title']} ({f['kind']}")
               for n, (t, f) in enumerate(zip(titles, findings, strict=True), 1))  # fmt: skip
    assert any(t.endswith("; seen in logs)") for t in titles)  # the Go runtime's log findings
    quiet = ROOT / "data" / "go_twin" / "with_fix-adk_v2.5.0" / "plain_turns.json"
    nothing = run(quiet)
    assert nothing.returncode == 0 and "Found: nothing" in nothing.stdout
    (tmp_path / "bad.json").write_text("[1, 2")
    bad = run(tmp_path / "bad.json")
    assert bad.returncode == 2 and "no history could be read" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_when_the_history_cannot_tell_versions_apart_it_says_so(tmp_path: Path) -> None:
    # Exports whose workers set no build id: only the SDK version (the same) is left.
    for env in ("adk-1.28.1", "adk-1.29.0"):
        history = json.loads((ADK / env / "two_turns.json").read_text())
        for event in history["events"]:
            for key, value in event.items():
                if key.endswith("EventAttributes") and isinstance(value, dict):
                    value.pop("workerVersion", None)
        (tmp_path / f"{env}.json").write_text(json.dumps(history))
    found = tk.investigate(tmp_path)
    assert set(found.runs["label"]) == {"temporal-python 1.30.0"}
    assert set(found.runs["label_source"]) == {"sdk"}
    assert "SDK version only" in found.label_note
    change = found.findings[found.findings["kind"] == "listing_change"].iloc[0]
    assert change["confidence"].startswith("low") and "1 to 3 listings" in change["title"]
    summary = found.evidence["listing_summary"]
    assert (summary["listings_min"] < summary["listings_max"]).any()  # spread, not an average
