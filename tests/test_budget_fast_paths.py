"""The history budget's shortcuts give what the plain way gives, on real histories.

Each shortcut is checked against the way it replaced: payload cells measured off their text
against the slim decoding; the re-sent share computed with each input's decoded tail reused
against decoding every tail afresh; checkpoints and the continue-as-new point read from the
loader's columns against the attributes (a frame, or dataset rows, without those columns).
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import random
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import toolkit as tk
from toolkit.agents import resent
from toolkit.agents.growth import calls_of, runs_of
from toolkit.datasets.arrow import to_arrow
from toolkit.datasets.frames import events_from_arrow
from toolkit.datasets.layout import TABLES, file_schema
from toolkit.datasets.merge import merge_sorted, sort_rows
from toolkit.histories import payload_cells as sizes

ROOT = Path(__file__).resolve().parents[1]
BUDGET = ROOT / "data" / "history_budget"
_NEW = ["history_size_bytes", "suggest_continue_as_new"]


@pytest.fixture(scope="module")
def lab_events() -> pd.DataFrame:
    return tk.read_histories(BUDGET, errors="raise", progress=False)[0]


def _slim(cell: object) -> object:
    """measure_payload_cell with the text shortcut turned off."""
    original = sizes._one_payload
    sizes._one_payload = lambda raw: None
    try:
        return sizes.measure_payload_cell(cell)
    finally:
        sizes._one_payload = original


def _plain(found: object) -> object:
    size, text = found  # type: ignore[misc]
    return size, None if text is None else (bytes(text[0]), text[1])


def test_payload_cells_measured_off_their_text_equal_the_slim_decoding(corpus: Path) -> None:
    checked = shortcut = 0
    for folder in (ROOT / "data", corpus / "histories"):
        events = tk.read_histories(folder, progress=False)[0]
        for column in ("input", "result", "details"):
            for cell in events[column]:
                if cell is None:
                    continue
                raw = sizes._cell_raw(cell)
                textual = isinstance(raw, bytes | bytearray) or type(raw).__name__ == "Raw"
                shortcut += textual and sizes._one_payload(raw) is not None
                assert _plain(sizes.measure_payload_cell(cell)) == _plain(_slim(cell))
                checked += 1
    assert checked > 3000 and shortcut > checked // 2


def _resent_afresh(texts: list[bytes]) -> int:
    """The re-sent bytes of consecutive base64 inputs, every tail decoded on its own."""
    shared = 0
    for before, text in itertools.pairwise(texts):
        head = resent._common_prefix(before, text)
        head = min(head, len(text) - 4, len(before) - 4)
        head = max(head - head % 4, 0)
        shared += head * 3 // 4 + resent._common_end(resent._decoded(text[head:]),
                                                     resent._decoded(before[head:]))  # fmt: skip
    return shared


class _Run:
    def __init__(self, texts: list[bytes]) -> None:
        self.texts = texts

    def input_texts(self, calls: list[_Call]) -> list[tuple[bytes, bool]]:
        return [(self.texts[call.position], True) for call in calls]

    def scanned_resent(self, calls: list[_Call]) -> None:
        return None  # read here from the texts, not from a frame's scan


class _Call:
    def __init__(self, position: int) -> None:
        self.position = position


def _resent_of(texts: list[bytes]) -> int:
    calls = [_Call(p) for p in range(len(texts))]
    found, _ = resent.resent_of_run(_Run(texts), calls)  # type: ignore[arg-type]
    return found


def test_resent_with_tails_reused_equals_every_tail_decoded_afresh(lab_events) -> None:
    runs = 0
    for run in runs_of(lab_events):
        calls, _ = calls_of(run)
        texts = [run.payload_json(call.position, "input") for call in calls]
        if len(texts) < 3 or any(t is None or not t[1] for t in texts):
            continue
        plain = [bytes(t[0]) for t in texts]
        assert _resent_of(plain) == _resent_afresh(plain)
        runs += 1
    assert runs > 20
    # Characters the lenient decoder skips ("_" of URL-safe base64) shift a reused tail's
    # quanta: such a tail is decoded afresh (this input differed by a byte before).
    texts = [b"OPOr4/JfMa3PlRCsd9fg", b"OPOr4/JfMa3PlRCs6RyaGXeTitVKBQcSIQPR_1JXbJUkBAW3o",
             b"OPOr4/JfMa3PlRCs6RyaGXeTitVKBQcSIQPR_1JXbJUkBAG94kxxlozSQOLo"]  # fmt: skip
    assert _resent_of(texts) == _resent_afresh(texts)
    with pytest.raises(binascii.Error):
        binascii.a2b_base64(texts[1], strict_mode=True)


def test_budget_from_the_loader_columns_equals_the_budget_from_the_attributes(lab_events) -> None:
    with_columns = tk.history_budget(lab_events)
    without = tk.history_budget(lab_events.drop(columns=_NEW))
    pd.testing.assert_frame_equal(with_columns, without)
    assert with_columns["continue_as_new_seen"].sum() > 0


def test_dataset_rows_from_before_the_columns_read_them_off_the_attributes(lab_events) -> None:
    table = to_arrow(lab_events, TABLES["events"])
    back = events_from_arrow(table)
    old = events_from_arrow(table.drop_columns(_NEW))
    pd.testing.assert_frame_equal(back[_NEW], old[_NEW])
    assert back["history_size_bytes"].notna().sum() > 1000
    with pytest.raises(tk.ToolkitError, match="event_type"):
        events_from_arrow(table.drop_columns(["event_type"]))


def test_columns_without_values_are_read_off_the_attributes(lab_events) -> None:
    # Rows of a dataset compacted from parts written before the columns existed: present, NA.
    blank = lab_events.assign(history_size_bytes=pd.array([None] * len(lab_events), "Int64"),
                              suggest_continue_as_new=pd.array([None] * len(lab_events),
                                                               "boolean"))  # fmt: skip
    pd.testing.assert_frame_equal(tk.history_budget(blank), tk.history_budget(lab_events))


def test_compacting_parts_from_before_the_columns_keeps_every_row(lab_events, tmp_path) -> None:
    schema = file_schema("events")
    table = sort_rows(to_arrow(lab_events, TABLES["events"]), schema)
    half = table.num_rows // 2
    pq.write_table(table.slice(0, half).drop_columns(_NEW), tmp_path / "old.parquet")
    pq.write_table(table.slice(half), tmp_path / "new.parquet")
    rows = merge_sorted([tmp_path / "old.parquet", tmp_path / "new.parquet"], schema,
                        tmp_path / "merged.parquet")  # fmt: skip
    merged = pq.read_table(tmp_path / "merged.parquet")
    assert rows == merged.num_rows == table.num_rows
    assert merged.column("history_size_bytes").null_count >= 1


def test_resent_reuse_equals_afresh_on_inputs_with_characters_base64_skips() -> None:
    # Growing base64 inputs, half with a character the lenient decoder skips put anywhere
    # (URL-safe "-"/"_", a space, an escape's backslash, stray padding): 10 of 20,000 such
    # sequences differed with the length check alone.
    rng = random.Random(1)
    for _ in range(20_000):
        texts = [base64.b64encode(rng.randbytes(rng.randint(5, 40)))]
        for _ in range(3):
            grown = texts[-1][: rng.randint(0, len(texts[-1]))]
            grown += base64.b64encode(rng.randbytes(rng.randint(1, 30)))
            if rng.random() < 0.5:
                at = rng.randint(0, len(grown))
                grown = grown[:at] + rng.choice([b"_", b"-", b" ", b"\\", b"=="]) + grown[at:]
            texts.append(grown)
        assert _resent_of(texts) == _resent_afresh(texts), texts


def test_label_parts_read_off_the_text_equal_the_whole_attributes(corpus: Path) -> None:
    from toolkit.histories import versions
    from toolkit.histories.columns.lazy import LazyAttributes

    def parts(attributes: object) -> tuple[object, ...]:
        return (versions._deployment(attributes), versions._build_id(attributes),
                versions._get(attributes, "sdkMetadata", "sdkName"),
                versions._get(attributes, "sdkMetadata", "sdkVersion"),
                versions._get(attributes, "binaryChecksum"))  # fmt: skip

    checked = typed = 0
    for folder in (ROOT / "data", corpus / "histories"):
        events = tk.read_histories(folder, progress=False)[0]
        tasks = events[events["event_type"] == "WorkflowTaskCompleted"]
        for cell in tasks["attributes"]:
            whole = cell.value if isinstance(cell, LazyAttributes) else cell
            found = versions.label_parts(cell)
            assert found == parts(whole), whole
            checked += 1
            typed += isinstance(cell, LazyAttributes) and any(found)
    assert checked > 1000 and typed > checked // 2


@pytest.mark.parametrize("fields", [
    {"workerVersion": {"buildId": 7}},
    {"sdkMetadata": "temporal-python"},
    {"deploymentVersion": {"deploymentName": "", "buildId": "b1"}, "binaryChecksum": ""},
    {"deployment": {"seriesName": "s", "buildId": ""}, "workerDeploymentVersion": ""},
    {"workerDeploymentVersion": "d.1", "deploymentVersion": None},
    {"sdkMetadata": {"sdkName": "temporal-go", "sdkVersion": 1.2}},
])  # fmt: skip
def test_label_parts_of_unusual_fields_equal_the_generic_reading(fields: dict) -> None:
    """Values of another type than the API's fall back to the generic reading."""
    from toolkit.histories import versions

    event = {"eventId": "4", "eventType": "EVENT_TYPE_WORKFLOW_TASK_COMPLETED",
             "workflowTaskCompletedEventAttributes": {"scheduledEventId": "2", **fields}}
    text = json.dumps({"events": [event]}).encode()
    cell = tk.read_history(text)["attributes"].iloc[0]
    expected = (versions._deployment(fields), versions._build_id(fields),
                versions._get(fields, "sdkMetadata", "sdkName"),
                versions._get(fields, "sdkMetadata", "sdkVersion"),
                versions._get(fields, "binaryChecksum"))  # fmt: skip
    assert versions.label_parts(cell) == expected


def test_budget_labels_read_off_the_first_tasks_equal_version_labels(corpus: Path) -> None:
    """The budget composes a run's label from its first three completed workflow tasks; on
    every recording and public history that is the label version_labels gives from all."""
    from toolkit.histories.versions import version_labels

    compared = 0
    for folder in (ROOT / "data", corpus / "histories"):
        events = tk.read_histories(folder, progress=False)[0]
        budget = tk.history_budget(events)
        labels = version_labels(events)
        both = budget.merge(labels, on=["source", "history"], suffixes=("", "_all"))
        assert len(both) == len(budget)
        assert both["label"].tolist() == both["label_all"].tolist()
        compared += len(both)
    assert compared > 300


@pytest.mark.parametrize("later", [
    {"workerVersion": {"buildId": "b1"}},
    {"workerVersion": {"buildId": "b1"}, "deploymentVersion": {"deploymentName": "d",
                                                               "buildId": "b1"}},
    {"workerVersion": {"buildId": "b2"}, "sdkMetadata": {"sdkName": "temporal-go"}},
    {"binaryChecksum": "c1"},
    {"sdkMetadata": {"sdkVersion": "1.2.3"}},
    {"workerDeploymentVersion": "d.\\u0031"},
])  # fmt: skip
def test_run_labels_skipping_tasks_with_nothing_to_add_equal_reading_every_task(later) -> None:
    """run_label leaves undecoded a later task whose text holds no field a label could still
    take (a missing part, a build's SDK): the label and the builds' SDKs are those of reading
    every task."""
    from toolkit.histories import versions

    first = {"workerVersion": {"buildId": "b1"}, "sdkMetadata": {"sdkName": "temporal-python"}}
    events = [{"eventId": str(k + 1), "eventType": "EVENT_TYPE_WORKFLOW_TASK_COMPLETED",
               "workflowTaskCompletedEventAttributes": {"scheduledEventId": "1", **fields}}
              for k, fields in enumerate([first, {"workerVersion": {"buildId": "b1"}}, later])]
    text = json.dumps({"events": events}).replace("\\\\u", "\\u").encode()
    cells = list(tk.read_history(text)["attributes"])
    skipped: dict[str, str] = {}
    found = versions.run_label(cells, skipped)
    original = versions._may_add
    versions._may_add = lambda text, parts: True
    try:
        every: dict[str, str] = {}
        assert versions.run_label(list(tk.read_history(text)["attributes"]), every) == found
    finally:
        versions._may_add = original
    assert skipped == every


def _totals_one_run_at_a_time(sizes, running):  # the loop the arrays replaced
    import numpy as np

    whole = np.concatenate([[0], np.cumsum(sizes.measured_sizes)])
    out = np.full(len(sizes.starts), -1, np.int64)
    for run in range(len(sizes.starts)):
        last = int(sizes._last_point[run])
        if last < 0:
            out[run] = whole[sizes.ends[run]] - whole[sizes.starts[run]]
            continue
        start, base = int(sizes.points[last]), int(sizes.point_bytes[last])
        if last >= 1 and sizes.run_of[sizes.points[last - 1]] == run:
            p0, s0 = int(sizes.points[last - 1]), int(sizes.point_bytes[last - 1])
            away = np.abs(s0 + running[p0 : start + 1] - running[p0] - base)
            boundary = int(away.argmin())
            if away[boundary] <= 32 and p0 + boundary < start:
                start = p0 + boundary
        out[run] = base + running[sizes.ends[run]] - running[start]
    return out


@pytest.mark.parametrize("seed", range(5))
def test_run_totals_as_arrays_equal_the_loop_over_runs(seed: int) -> None:
    """Each history's size from its last recorded checkpoint (moved back to where the one
    before it agrees within a few bytes) is, for every run at once, what the loop over runs
    gave: checkpoints none, one or many, sizes that agree, nearly agree, or do not."""
    from types import SimpleNamespace

    import numpy as np

    from toolkit.agents.frame_sizes import _EventSizes

    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 40, size=300)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    ends = starts + lengths
    run_of = np.repeat(np.arange(len(lengths)), lengths)
    event_sizes = rng.integers(50, 400, size=int(lengths.sum()))
    running = np.concatenate([[0], np.cumsum(event_sizes)])
    points, point_bytes, last = [], [], np.full(len(lengths), -1)
    for run, (start, end) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
        for at in sorted(rng.choice(np.arange(start, end), size=min(rng.integers(0, 4),
                                                                    end - start), replace=False)):
            # the server's size there: the events before it, now and then a few bytes off
            size = int(running[at] - running[start]) + int(rng.choice([0, 0, 5, -20, 300]))
            points.append(int(at))
            point_bytes.append(size)
            last[run] = len(points) - 1
    sizes = SimpleNamespace(
        starts=starts, ends=ends, run_of=run_of, measured_sizes=event_sizes,
        points=np.array(points, np.int64), point_bytes=np.array(point_bytes, np.int64),
        _last_point=last, run_total=np.full(len(lengths), -1, np.int64))  # fmt: skip
    _EventSizes._totals(sizes, running)  # type: ignore[arg-type]
    assert sizes.run_total.tolist() == _totals_one_run_at_a_time(sizes, running).tolist()


def test_budget_of_files_read_without_extra_cells_equals_the_budget_of_their_frame(corpus) -> None:
    """A folder's budget reads its files without the events' extra cells (it never looks at
    them; an event measured whole gets its cell made from its attributes): the rows are those
    of the folder's events frame read in full, on data/ and the corpus (whose UI downloads hold
    decoded payloads, measured off rebuilt events)."""
    from toolkit.histories.columns.lazy import without_extra_cells

    for folder in (ROOT / "data", corpus / "histories"):
        read = tk.read_histories(folder, progress=False)[0]
        with without_extra_cells():
            bare = tk.read_histories(folder, progress=False)[0]
        assert bare["extra"].isna().sum() > len(bare) // 2
        pd.testing.assert_frame_equal(tk.history_budget(folder), tk.history_budget(read),
                                      check_exact=True)  # fmt: skip
        pd.testing.assert_frame_equal(tk.history_budget(bare), tk.history_budget(read),
                                      check_exact=True)  # fmt: skip
