"""The investigation report reads as an incident document: on the lab's incident bundle and on a
folder of plain public exports with real worker logs."""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path

import pytest

import toolkit as tk
from toolkit.lab.incident_bundle import lab_bundle
from toolkit.text import when

#: What a reader must never see: raw missing values, empty lists, nanosecond or offset times.
_RAW = re.compile(r"\bNaT\b|\bNone\b|\bnan\b|\[\]|<NA>|\+00:00|:\d\d\.\d{4,}|\d days \d\d:")


def _text(page: str) -> str:
    """The words of a page: styles, embedded images and tags removed."""
    page = re.sub(r"<style>.*?</style>", " ", page, flags=re.S)
    page = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", page)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> tk.Investigation:
    parts = lab_bundle(tmp_path_factory.mktemp("incident") / "incident")
    return tk.investigate(parts.histories, logs=parts.logs, configs=parts.configs)


@pytest.fixture(scope="module")
def bundle_page(bundle: tk.Investigation, tmp_path_factory: pytest.TempPathFactory) -> str:
    return bundle.to_html(tmp_path_factory.mktemp("report") / "report.html")


def test_the_head_says_what_happened_when_and_the_impact(bundle: tk.Investigation,
                                                         bundle_page: str) -> None:
    text = _text(bundle_page)
    headline = bundle.headline()
    assert headline.startswith(bundle.findings["title"].iloc[0])
    assert text.index("Incident report") < text.index(headline.split(":")[0]) < text.index("When")
    times = bundle.findings["first_seen"].dropna()
    assert f"When {when(times.min(), zone=False)}" in text
    affected = {r for rs in bundle.findings.loc[
        bundle.findings["severity"].isin(["critical", "high"]), "runs"] for r in rs}
    assert f"Impact {len(affected)} runs affected of {len(bundle.runs)} (1 open, 1 stuck, " \
           "2 failed)" in text  # fmt: skip
    assert "Incident timeline" in bundle_page and bundle_page.count("data:image/png") >= 2
    assert not _RAW.search(text), _RAW.search(text)


def test_cards_ranked_with_their_evidence_runs_and_next_step(bundle: tk.Investigation,
                                                             bundle_page: str) -> None:
    cards = re.findall(r"<article class='card (\w+)' id='finding-(\d+)'>(.*?)</article>",
                       bundle_page, flags=re.S)  # fmt: skip
    assert [int(n) for _, n, _ in cards] == list(range(1, len(bundle.findings) + 1))
    assert [s for s, _, _ in cards] == bundle.findings["severity"].tolist()
    by_kind = dict(zip(bundle.findings["kind"], (c for _, _, c in cards), strict=False))
    # The divergence: the recorded commands beside those a run of the new version issued for
    # the same signals, the first difference highlighted, reproducing the reported failure.
    divergence = by_kind["nondeterminism"]
    assert "The two command sequences" in divergence
    hit = re.findall(r"<tr class='hit'>(.*?)</tr>", divergence, flags=re.S)
    assert len(hit) == 1
    assert "weather-list-tools, id=3" in hit[0] and "weather-call-tool, id=3" in hit[0]
    assert "fails with: [TMPRL1100]" in _text(divergence)
    # Findings from logs: the lines themselves, numbered, and the ids the records carry.
    logs = bundle.evidence["logs"]
    go = next(c for _, _, c in cards if "(go_adk)" in c)
    for line in (4, 14):
        raw = logs.loc[logs["line"] == line, "raw"].item()
        assert f"<span class='no'>{line}</span>" in go and _text(raw)[:40] in _text(go)
    assert "Seen in logs (worker.log, lines 4–14); the records name session id session-s3ss10n" \
        in _text(go)  # fmt: skip
    # Runs touched link to their sections, and every link lands on one.
    anchors = set(re.findall(r"id='(run-[^']+)'", bundle_page))
    links = set(re.findall(r"href='#(run-[^']+)'", bundle_page))
    assert links and links <= anchors
    stuck = bundle.runs.loc[bundle.runs["stuck"], "run_id"].item()
    assert f"href='#run-{stuck}'" in by_kind["stuck_run"]
    section = bundle_page.split(f"id='run-{stuck}'")[1].split("</section>")[0]
    assert "Activities of" in section and "Workflow tasks that failed" in section


def test_a_shared_next_step_is_written_once(bundle: tk.Investigation) -> None:
    again = bundle.findings.iloc[[0, 0]].reset_index(drop=True)
    page = dataclasses.replace(bundle, findings=again).to_html()
    step = bundle.findings["next_step"].iloc[0]
    assert page.count(step.split(";")[0]) == 1
    assert "Next step: as for finding 1 ." in _text(page)


def test_the_notebook_shows_the_same_head_and_cards(bundle: tk.Investigation,
                                                    bundle_page: str) -> None:
    shown = bundle._repr_html_()
    assert shown.startswith("<div class='tkr'><style>") and ".tkr " in shown
    assert bundle.headline().split(";")[0] in shown.replace("&#x27;", "'")
    assert shown.count("<article class='card") == len(bundle.findings)
    assert "<section class='run'" not in shown and "href='#run-" not in shown


def test_the_page_is_self_contained() -> None:
    found = tk.investigate([Path(__file__).resolve().parents[1] / "data" / "adk" / "adk-1.28.1"])
    page = found.to_html()
    assert page.startswith("<!doctype html>") and "<script" not in page
    assert not re.search(r"(src|href)=['\"](https?:)?//", page)
    assert "@media print" in page and "@media (max-width" in page


def test_plain_public_exports_with_real_worker_logs(corpus: Path, tmp_path: Path) -> None:
    """25 real histories of every SDK and real worker logs: a document, no raw values, the
    unexplained error records in one finding with their shapes counted."""
    folder = tmp_path / "exports"
    folder.mkdir()
    files = sorted(p for p in (corpus / "histories").rglob("*") if p.is_file())
    by_repo: dict[str, list[Path]] = {}
    for path in files:
        by_repo.setdefault(path.parent.name, []).append(path)
    chosen = [paths[i] for i in range(3) for paths in by_repo.values() if i < len(paths)][:25]
    for path in chosen:
        shutil.copy(path, folder / f"{path.parent.name}__{path.name}")
    logs = [corpus / "logs" / name for name in ("temporalio__sdk-go__integration-test.log",
                                                "temporalio__temporal__timeout-input.log",
                                                "temporalio__features__test.log")]  # fmt: skip
    found = tk.investigate(folder, logs=logs)
    page = found.to_html(tmp_path / "report.html")
    assert not _RAW.search(_text(page)), _RAW.search(_text(page))
    errors = found.findings[found.findings["kind"] == "log_errors"]
    assert len(errors) == 1  # one finding, its kinds counted in the evidence table
    shapes = found.evidence["log_errors"]
    assert errors["title"].item().startswith(f"{shapes['records'].sum()} error record")
    assert shapes["records"].is_monotonic_decreasing and len(shapes) == shapes["shape"].nunique()
    assert "seen in logs" in _text(page)


def test_without_a_run_of_the_new_code_on_the_same_inputs_the_card_says_so() -> None:
    adk = Path(__file__).resolve().parents[1] / "data" / "adk"
    found = tk.investigate([adk / "adk-1.28.1" / "rolling_upgrade_to_adk-1.29.0.json",
                            adk / "adk-1.29.0" / "list_twice.json"])  # other signals
    card = found.to_html().split("id='finding-1'>")[1].split("</article>")[0]
    assert "The two command sequences" not in card
    assert "The new code issued weather-call-tool where the history has weather-list-tools" in \
        _text(card)  # fmt: skip
    hits = re.findall(r"<tr class='hit'>(.*?)</tr>", card, flags=re.S)
    assert len(hits) == 3 and all("weather-list-tools" in h for h in hits)  # where it can be


def test_a_run_section_shows_the_per_run_tables_the_investigation_holds() -> None:
    """Run sections are not tied to today's tables: an evidence table of RUN_TABLES (here the
    model calls, tk.model_calls) appears in each run's section, cut to that run's rows."""
    from toolkit.investigate.report import LazyTables

    adk = Path(__file__).resolve().parents[1] / "data" / "adk"
    found = tk.investigate([adk / "adk-1.28.1" / "rolling_upgrade_to_adk-1.29.0.json",
                            adk / "adk-1.29.0" / "two_turns.json"])  # fmt: skip
    calls = tk.model_calls(found.evidence["events"])
    tables = {name: (lambda name=name: found.evidence[name]) for name in found.evidence}
    page = dataclasses.replace(found, evidence=LazyTables({**tables,
                                                           "model_calls": lambda: calls})).to_html()
    stuck = found.runs.loc[found.runs["stuck"], "run_id"].item()
    section = page.split(f"id='run-{stuck}'")[1].split("</section>")[0]
    assert "Model calls and their tokens" in section
    mine = calls[calls["run_id"] == stuck]
    rows = section.split("Model calls and their tokens")[1].split("</table>")[0].count("<tr>") - 1
    assert rows == len(mine) > 0
