"""The ledger's run labels (read from the few workflow tasks that can set them) equal
``version_labels``' labels with the lab's sidecar labels first, as the ledger had them: on every
lab folder, the public agent histories and the corpus, and on histories edited so that a label
part appears only on a later task, under an escaped key, or a build's SDK only in another run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import toolkit as tk
from toolkit.agents.activity_turns import activity_turns
from toolkit.agents.ledger_labels import run_labels
from toolkit.agents.turns import label_fields
from toolkit.histories.versions import event_texts, version_labels

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "histories"
FOLDERS = sorted(p for p in (ROOT / "data").iterdir() if p.is_dir() and p.name != "venvs")
TWO_TURNS = ROOT / "data" / "openai_agents" / "oa-0.22.3" / "two_turns.json"


def _expected(events) -> list[str]:
    rows = {(r["source"], r["history"]): r for r in version_labels(events).to_dict("records")}
    found = activity_turns(events, "auto")
    return [label_fields(rows.get(key), key[0])["label"] for key in found.runs]


def _labels(events) -> list[str]:
    found = activity_turns(events, "auto")
    labels = run_labels(events, found, range(len(found.runs)))
    return [labels[code] for code in range(len(found.runs))]


@pytest.mark.parametrize("folder", [*FOLDERS, ROOT / "tests" / "fixtures" / "agent_histories"],
                         ids=lambda p: p.name)  # fmt: skip
def test_run_labels_equal_version_labels(folder: Path) -> None:
    events, _ = tk.read_histories(folder, progress=False)
    expected = _expected(events)
    assert _labels(events) == expected
    assert len(set(expected)) > 1 or folder.name in ("agent_histories", "duplicate_tool")


def test_run_labels_equal_version_labels_on_the_corpus(corpus: Path) -> None:
    events, _ = tk.read_histories(corpus / "histories", progress=False)
    expected = _expected(events)
    assert _labels(events) == expected
    assert len(set(expected)) > 3


def _tasks(history: dict) -> list[dict]:
    return [e for e in history["events"] if e["eventType"].endswith("WORKFLOW_TASK_COMPLETED")]


def test_parts_found_anywhere_they_are(tmp_path: Path) -> None:
    original = json.loads(TWO_TURNS.read_text())
    # A deployment named on the third completed task only.
    later = json.loads(json.dumps(original))
    _tasks(later)[2]["workflowTaskCompletedEventAttributes"]["deploymentVersion"] = {
        "deploymentName": "checkout", "buildId": "v7"}  # fmt: skip
    # The SDK named on a later task only, under escaped keys (no "sdkName" in the raw text),
    # in a build of its own (no SDK to borrow).
    late = json.loads(json.dumps(original))
    metadata = [t["workflowTaskCompletedEventAttributes"]["sdkMetadata"] for t in _tasks(late)]
    metadata[2].update(sdkName=metadata[0].pop("sdkName"), sdkVersion=metadata[0].pop("sdkVersion"))
    build = original["events"][2]["workflowTaskStartedEventAttributes"]["workerVersion"]["buildId"]
    escaped = (json.dumps(late).replace('"sdkName"', '"sdk\\u004eame"')
               .replace('"sdkVersion"', '"sdk\\u0056ersion"')
               .replace(build, "fedcba9876543210fedc"))  # fmt: skip
    assert '"sdkName"' not in escaped and '"sdkVersion"' not in escaped
    # The first task names no SDK; the build's SDK is stated in another run (earlier in the
    # frame), and another build's tasks state none at all.
    bare = json.loads(json.dumps(original))
    del _tasks(bare)[0]["workflowTaskCompletedEventAttributes"]["sdkMetadata"]["sdkName"]
    unnamed = json.loads(json.dumps(bare))
    for event in unnamed["events"]:
        for attributes in event.values():
            if isinstance(attributes, dict) and "workerVersion" in attributes:
                attributes["workerVersion"]["buildId"] = "0123456789abcdef0123"
    # Marks spelt with nothing behind them: an empty build id and SDK name on the first
    # completed task (its text spells them, its parts are empty), the values on the third (the
    # other tasks' build ids empty too).
    empty = json.loads(json.dumps(original))
    first, third = (t["workflowTaskCompletedEventAttributes"] for t in _tasks(empty)[0:3:2])
    for task in _tasks(empty):
        task["workflowTaskCompletedEventAttributes"]["workerVersion"] = {"buildId": ""}
    third["workerVersion"] = {"buildId": "00ff00ff00ff00ff"}
    third["sdkMetadata"] = {"sdkName": first["sdkMetadata"].get("sdkName"), "sdkVersion": "9"}
    first["sdkMetadata"]["sdkName"] = ""
    for name, text in (("a_plain", TWO_TURNS.read_text()), ("b_later", json.dumps(later)),
                       ("c_escaped", escaped), ("d_bare", json.dumps(bare)),
                       ("e_unnamed", json.dumps(unnamed)),
                       ("f_empty", json.dumps(empty))):  # fmt: skip
        (tmp_path / f"{name}.json").write_text(text)
    events, errors = tk.read_histories(tmp_path, progress=False, dedupe=False)
    assert errors.empty
    expected = _expected(events)
    assert len(expected) == 6
    assert "00ff00ff" in expected[5]
    assert expected[1].startswith("deployment checkout:v7")
    assert expected[0] == expected[3]  # the build's SDK borrowed from the first run
    assert expected[2] == expected[0].replace(expected[0][-8:], "fedcba98")  # the escaped name
    assert expected[4] == "build 01234567"
    assert _labels(events) == expected


def test_sidecar_labels_listed_per_folder_equal_sidecar_fields_per_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolkit.agents import ledger_labels
    from toolkit.agents.ledger_labels import _sidecar_labels
    from toolkit.agents.turns import sidecar_fields, sidecar_label

    (tmp_path / "sub").mkdir()
    (tmp_path / "a.json").write_text("{}")
    (tmp_path / "a.meta.json").write_text(json.dumps({"label": "from a"}))
    (tmp_path / "b.json").write_text("{}")  # no sidecar
    (tmp_path / "c.meta.json").mkdir()  # a folder of the sidecar's name: no sidecar
    (tmp_path / "d.meta.json").symlink_to(tmp_path / "a.meta.json")  # a link to one: read
    (tmp_path / "e.meta.json").symlink_to(tmp_path / "gone")  # a broken link: none
    (tmp_path / "sub" / "f.meta.json").write_text(json.dumps({"variant": "in sub"}))
    (tmp_path / "broken.meta.json").write_text("{not json")
    monkeypatch.chdir(tmp_path)
    sources = [str(tmp_path / n) for n in ("a.json", "b.json", "c.json", "d.json", "e.json",
                                           "broken.json", "no-such.json", "a")]  # fmt: skip
    sources += [f"{tmp_path}/sub/./f.json", f"{tmp_path}//sub/f.json", f"{tmp_path}/sub/f.json/",
                "a.json", "./a.json", "sub/f.json", "sub/../a.json", str(tmp_path / "absent" / "x"),
                f"{tmp_path}/.", "", None, float("nan"), "a.json"]  # fmt: skip
    expected = {s: sidecar_label(sidecar_fields(s if isinstance(s, str) else None))
                for s in sources}  # fmt: skip
    assert expected[str(tmp_path / "a.json")] == "from a"
    assert expected[str(tmp_path / "d.json")] == "from a"
    assert expected[f"{tmp_path}/sub/./f.json"] == "in sub"
    assert _sidecar_labels(sources) == expected  # few per folder: each looked up
    monkeypatch.setattr(ledger_labels, "_LIST_FROM", 1)  # every folder listed
    assert _sidecar_labels(sources) == expected
    with pytest.raises(ValueError):  # a path with no name: as sidecar_fields refuses it
        sidecar_fields("/")
    with pytest.raises(ValueError):
        _sidecar_labels(["/"])


def _histories(path: Path) -> list:
    """The raw histories behind a file's frame, fresh (no event split off yet)."""
    cells = tk.read_histories(path, progress=False).events["attributes"]
    found: dict[int, object] = {}
    for cell in cells:
        history = getattr(cell, "_history", None)
        if hasattr(history, "json_event_texts"):
            found.setdefault(id(history), history)
    return list(found.values())


@pytest.mark.parametrize("folder", [ROOT / "data" / "openai_agents", ROOT / "data" / "adk",
                                    ROOT / "data" / "pydantic_ai", CORPUS],
                         ids=lambda p: p.name)  # fmt: skip
@pytest.mark.parametrize("scanned", [False, True], ids=["split", "scanned"])
def test_json_event_texts_equal_each_json_event(
    folder: Path, scanned: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    import random

    from toolkit.histories.reading import json_scan

    if scanned:  # every document read by the compiled scanner: the events' spans all known
        if json_scan._compiled is None:
            pytest.skip("built without a C compiler: no scanner")
        monkeypatch.setattr(json_scan, "SCAN_FROM_BYTES", 0)
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent (the shared corpus is not laid out here)")
    generator = random.Random(7)
    paths = sorted(folder.rglob("*.json"))
    paths = [p for p in paths if not p.name.endswith(".meta.json")][:40]
    checked = spans = 0
    for path in paths:
        for ours, theirs, counted in zip(_histories(path), _histories(path), _histories(path),
                                         strict=True):  # fmt: skip
            count = len(counted.json_events)
            expected = [bytes(theirs.json_event(i)) for i in range(count)]  # one by one
            # Ascending, then any order and repeats, on the same history as its split grows,
            # the last events (read backwards from the end), then after a whole split.
            for indices in (list(range(0, count, 3)), generator.sample(range(count), count),
                            [count - 1, count - 2, 0, count - 1], list(range(count))):
                indices = [i for i in indices if i >= 0]
                assert ours.json_event_texts(indices) == [expected[i] for i in indices]
            ours.json_events  # noqa: B018 - split whole: then json_event reads that split
            assert ours.json_event_texts([0, count - 1]) == [expected[0], expected[-1]]
            checked += 1
            spans += ours.event_spans is not None
    assert checked
    # The scanner declines some documents (they are split as without it); never all of them.
    assert bool(spans) == scanned


def _spans(history) -> list[tuple[int, int]]:
    """Each event's (start, end) in its history's document, found from the whole split."""
    out, at = [], 0
    for event in history.json_events:
        text = bytes(event)
        at = history.document.index(text, at)
        out.append((at, at + len(text)))
        at += len(text)
    return out


@pytest.mark.parametrize("scanned", [False, True], ids=["split", "scanned"])
def test_spans_of_equal_the_whole_split(scanned: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The events' places in their document, split off only as far as the last asked for, in
    any order and repeated, equal the whole split's; none past the last event."""
    import random

    from toolkit.histories.reading import json_scan

    if scanned:
        if json_scan._compiled is None:
            pytest.skip("built without a C compiler: no scanner")
        monkeypatch.setattr(json_scan, "SCAN_FROM_BYTES", 0)
    generator = random.Random(5)
    paths = [p for p in sorted((ROOT / "data").rglob("*.json"))
             if not p.name.endswith("meta.json")][:30]  # fmt: skip
    checked = 0
    for path in paths:
        for ours, theirs in zip(_histories(path), _histories(path), strict=True):
            if ours.document is None or ours.spans_of([0]) is None:
                continue
            spans = _spans(theirs)
            count = len(spans)
            for indices in ([0], [2, 1, 1], generator.sample(range(count), min(count, 9)),
                            list(range(count)), []):  # fmt: skip
                indices = [i for i in indices if i < count]
                assert ours.spans_of(indices) == [x for i in indices for x in spans[i]]
            assert ours.spans_of([count]) is None
            assert ours.spans_of([-1]) is None
            if not scanned:  # the list itself, split as far as asked (the scanner's: None)
                for top in (0, count // 2, count - 1):
                    through = ours.prefix_through(top)
                    assert through is ours._prefix and len(through) >= 2 * top + 2
                    assert through[: 2 * top + 2] == [x for i in range(top + 1) for x in spans[i]]
            else:
                assert ours.prefix_through(0) is None
            assert ours.prefix_through(count) is None and ours.prefix_through(-1) is None
            checked += 1
    assert checked > 10


def _two_runs(events, cut: int):
    """``events`` of one history made two runs of the same document: its events from row
    ``cut`` on another history of the same source."""
    events = events.copy()
    history = events["history"].to_numpy().copy()
    history[cut:] = 1
    events["history"] = history
    return events


def test_runs_of_one_document_and_frames_out_of_order(tmp_path: Path) -> None:
    """A document holding two runs (a part spelt only in the second run's tasks, or only in
    the first's), and frames whose rows are not in the documents' order: each run's label is
    the one of its own tasks, in frame order."""
    original = json.loads(TWO_TURNS.read_text())
    later = json.loads(json.dumps(original))
    tasks = _tasks(later)
    tasks[-1]["workflowTaskCompletedEventAttributes"]["deploymentVersion"] = {
        "deploymentName": "late", "buildId": "v9"}  # fmt: skip
    tasks[0]["workflowTaskCompletedEventAttributes"]["binaryChecksum"] = "0123456789abcdef00"
    (tmp_path / "later.json").write_text(json.dumps(later))
    events, errors = tk.read_histories(tmp_path, progress=False)
    assert errors.empty
    completed = [i for i, t in enumerate(events["event_type"]) if t == "WorkflowTaskCompleted"]
    checked = set()
    for cut in (completed[1], completed[-1], completed[-1] + 1, 1):
        two = _two_runs(events, cut)
        expected = _expected(two)
        assert _labels(two) == expected
        checked.update(expected)
        for frame in (two.iloc[::-1], two.sample(frac=1, random_state=3), events.iloc[::-1]):
            assert _labels(frame) == _expected(frame)
    assert any(label.startswith("deployment late:v9") for label in checked)
    assert any(not label.startswith("deployment") for label in checked)


@pytest.mark.parametrize("folder", [ROOT / "data" / "openai_agents", ROOT / "data" / "adk",
                                    ROOT / "tests" / "fixtures" / "agent_histories"],
                         ids=lambda p: p.name)  # fmt: skip
def test_pure_paths_give_the_same_labels(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tasks searched in place by bytes.find (no compiled span_marks), and their texts
    sliced off and joined (no compiled splitter: no event can be placed), give the labels the
    compiled search gives; with it, the runs of the lab's documents are searched in place."""
    from toolkit.agents import ledger_labels
    from toolkit.histories.reading import dialects

    events, _ = tk.read_histories(folder, progress=False)
    expected = _expected(events)
    joined = []
    monkeypatch.setattr(ledger_labels, "event_texts",
                        lambda cells: joined.append(len(cells)) or event_texts(cells))  # fmt: skip
    assert _labels(tk.read_histories(folder, progress=False).events) == expected
    if ledger_labels._cellscan is not None and folder.name != "agent_histories":
        assert len(joined) < len(expected) / 2  # (a run escaping a character joins its texts)
    monkeypatch.setattr(ledger_labels, "_span_marks", ledger_labels._marks_each)
    monkeypatch.setattr(ledger_labels, "_run_marks", ledger_labels._runs_each)
    assert _labels(tk.read_histories(folder, progress=False).events) == expected
    monkeypatch.setattr(dialects, "_cellscan", None)
    joined.clear()
    assert _labels(tk.read_histories(folder, progress=False).events) == expected
    assert joined


def test_a_part_under_an_escaped_key_of_a_task(tmp_path: Path) -> None:
    """A deployment (or build id) named under a key escaping a letter by its code: no task's
    text spells the mark, the run's label still names it (its tasks read one by one)."""
    original = json.loads(TWO_TURNS.read_text())
    named = json.loads(json.dumps(original))
    _tasks(named)[1]["workflowTaskCompletedEventAttributes"]["deploymentVersion"] = {
        "deploymentName": "quiet", "buildId": "v3"}  # fmt: skip
    text = json.dumps(named).replace('"deploymentVersion"', '"deploym\\u0065ntVersion"')
    assert '"deploymentVersion"' not in text
    (tmp_path / "escaped.json").write_text(text)
    build = json.dumps(original).replace('"buildId"', '"build\\u0049d"')
    (tmp_path / "escaped_build.json").write_text(build)
    events, errors = tk.read_histories(tmp_path, progress=False, dedupe=False)
    assert errors.empty
    expected = _expected(events)
    assert expected[0].startswith("deployment quiet:v3")
    assert "build" in expected[1]
    assert _labels(events) == expected


def test_a_build_s_sdk_stated_under_an_escaped_key_in_another_run(tmp_path: Path) -> None:
    """A build's SDK (and the build id) named only under escaped keys (no text spells
    ``sdkName`` or ``buildId``), in a run before another of the same build naming no SDK: the
    second run borrows it."""
    original = json.loads(TWO_TURNS.read_text())
    build = original["events"][2]["workflowTaskStartedEventAttributes"]["workerVersion"]["buildId"]
    bare = json.loads(json.dumps(original))
    for task in _tasks(bare):
        task["workflowTaskCompletedEventAttributes"].get("sdkMetadata", {}).pop("sdkName", None)
    escaped = (json.dumps(original).replace('"sdkName"', '"sdk\\u004eame"')
               .replace('"buildId"', '"build\\u0049d"'))  # fmt: skip
    (tmp_path / "a_escaped.json").write_text(escaped.replace(build, "abcabcabcabcabcabc12"))
    (tmp_path / "b_bare.json").write_text(json.dumps(bare).replace(build, "abcabcabcabcabcabc12"))
    events, errors = tk.read_histories(tmp_path, progress=False, dedupe=False)
    assert errors.empty
    expected = _expected(events)
    assert expected[0] == expected[1] and " · build abcabcab" in expected[1]
    assert not expected[1].startswith("build")
    assert _labels(events) == expected


def test_labels_without_the_type_codes_equal_with_them() -> None:
    """Turns found without activity_turns' event type codes: the task rows read off the
    frame's event types, the same labels."""
    events, _ = tk.read_histories(ROOT / "data" / "openai_agents", progress=False)
    found = activity_turns(events, "auto")
    assert "types" in found.positions
    expected = run_labels(events, found, range(len(found.runs)))
    found.positions.pop("types")
    assert run_labels(events, found, range(len(found.runs))) == expected
    assert len(set(expected.values())) > 1
