"""``activities`` and ``workflow_tasks`` are built column-wise: pinned to the per-event join.

``fixtures/tables/expected.json`` holds the tables the earlier per-event implementation (one record
per entity, filled event by event in history order) gave for a few recorded histories chosen for
their edge cases: retries and attempts, failed and timed-out activities and workflow tasks,
cancellation requests, sticky queues, SDK metadata and build ids, orphan events of partial
histories, Cadence-era ``DecisionTask*`` events, a binary protobuf history. Cells are stored as
plain JSON (payloads as digests), with each column's dtype.

The property tests cover every readable history of data/ and the corpus in one batch: the values
the loader puts in columns equal those read from the attributes, lazy cells equal plain dicts, and
a frame holding every event twice gives the same rows.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd
import pytest

import toolkit as tk
from toolkit.histories.columns.event_fields import shared_event_fields
from toolkit.histories.reading.batch import find_history_files
from toolkit.histories.reading.dialects import RawHistory
from toolkit.histories.tables import activities, workflow_tasks

ROOT = Path(__file__).resolve().parents[1]
EXPECTED = Path(__file__).parent / "fixtures" / "tables" / "expected.json"
TABLES = {"activities": activities, "workflow_tasks": workflow_tasks}

#: (where, path): lab recordings (data/) and public corpus histories.
CHOSEN = [
    ("data", "adk/adk-1.27.5/list_twice.json"),  # failed + retried activities, sdk flags, sticky
    ("data", "gallery/activity-result-type-changed/v2.json"),  # failed wft, attempts, pending
    ("corpus", "temporalio__ui/all-event-types.json"),  # orphans, timeouts of every kind
    ("corpus", "temporalio__sdk-go/multiple-updates-canceled.json"),  # cancel requested
    ("corpus", "temporalio__sdk-go/basic.json"),  # DecisionTask*, open history
    ("corpus", "temporalio__sdk-go/unhandled_cmd_timer_cancel.json"),  # failed + timed-out wft
    ("corpus", "temporalio__sdk-php/simple-workflow-damaged.json"),  # partial history
    ("corpus", "coinbase__temporal-ruby/do_nothing.json"),  # binary checksum
    ("corpus", "temporalio__sdk-core/evict_while_la_running_no_interference-85_history.bin"),
]

#: Columns with an attribute fallback: blanked to make the tables read the attributes.
_FALLBACKS = ["activity_id", "activity_type", "task_queue", "scheduled_event_id", "attempt",
              "identity", "retry_state", "failure_message", "failure_type", "cause"]  # fmt: skip
#: Of those, the ones the loader spells its own way (the failure's kind, a cause's alias).
_FORMATTED = ["failure_type", "cause"]


def _cell(value: Any, column: str) -> Any:
    """One cell as plain JSON (payloads as a digest: the fixture stays small)."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, float) and np.isnan(value):
        return "NaN"  # not None: a NaN where the table holds None must show
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    if isinstance(value, pd.Timedelta):
        return int(value.value)
    if isinstance(value, np.generic):
        value = value.item()
    if column in ("input", "result"):
        text = orjson.dumps(value, default=repr, option=orjson.OPT_SORT_KEYS)
        return f"{type(value).__name__}:{hashlib.sha256(text).hexdigest()[:16]}"
    return orjson.loads(orjson.dumps(value, default=repr))  # as the fixture file holds it


def table_json(frame: pd.DataFrame) -> dict[str, Any]:
    """A table as JSON: its dtypes and its rows (the source as the file's name)."""
    plain = frame.assign(source=frame["source"].map(lambda s: Path(str(s)).name))
    return {
        "dtypes": {column: str(dtype) for column, dtype in frame.dtypes.items()},
        "rows": [
            {column: _cell(value, column) for column, value in row.items()}
            for row in plain.to_dict("records")
        ],
    }


def _path(where: str, relative: str, corpus: Path | None) -> Path:
    if where == "data":
        return ROOT / "data" / relative
    if corpus is None:
        pytest.skip("public corpus absent")
    return corpus / "histories" / relative


@pytest.fixture(scope="module")
def expected() -> dict[str, Any]:
    return json.loads(EXPECTED.read_text())


@pytest.mark.parametrize(("where", "relative"), CHOSEN)
def test_tables_equal_the_per_event_join(
    where: str, relative: str, expected: dict[str, Any], request: pytest.FixtureRequest
) -> None:
    corpus = request.getfixturevalue("corpus") if where == "corpus" else None
    events = tk.read_history(_path(where, relative, corpus))
    for name, table in TABLES.items():
        assert table_json(table(events)) == expected[relative][name], name


def test_one_batch_gives_the_rows_of_each_history(
    expected: dict[str, Any], corpus: Path
) -> None:
    paths = [_path(where, relative, corpus) for where, relative in CHOSEN]
    events = tk.read_histories(paths, dedupe=False, workers=1, progress=False).events
    for name, table in TABLES.items():
        found = table_json(table(events))
        assert found["dtypes"] == expected[CHOSEN[0][1]][name]["dtypes"]
        for _, relative in CHOSEN:
            rows = [row for row in found["rows"] if row["source"] == Path(relative).name]
            assert rows == expected[relative][name]["rows"], (name, relative)


# --------------------------------------------------------------------------- properties


@pytest.fixture(scope="module")
def every_history(corpus: Path) -> pd.DataFrame:
    files = find_history_files([ROOT / "data", corpus / "histories"])
    events = tk.read_histories(files, dedupe=False, workers=1, progress=False).events
    assert events.groupby(["source", "history"]).ngroups > 250
    return events


@pytest.mark.parametrize("name", list(TABLES))
def test_attribute_fallbacks_give_the_column_values(
    every_history: pd.DataFrame, name: str
) -> None:
    """Blank the frame's columns (all of them, then every other event): the attributes give the
    same values, and the attribute path runs on every kind of event."""
    table = TABLES[name]
    reference = table(every_history)
    assert len(reference) > 1000
    blank = every_history.copy()
    every_other = np.arange(len(blank)) % 2 == 1
    half = every_history.copy()
    for column in _FALLBACKS:
        blank[column] = pd.Series(pd.NA, index=blank.index, dtype=blank[column].dtype)
        half.loc[every_other, column] = None
    blank["task_queue"] = ""  # empty text falls back too
    for frame in (blank, half):
        found = table(frame)
        kept = [c for c in reference.columns if c not in _FORMATTED]
        pd.testing.assert_frame_equal(found[kept], reference[kept], check_exact=True)
        for column in set(_FORMATTED) & set(reference.columns):  # read, if spelled otherwise
            assert (found[column].notna() == reference[column].notna()).all(), column


@pytest.mark.parametrize("name", list(TABLES))
def test_plain_attributes_equal_lazy_cells(every_history: pd.DataFrame, name: str) -> None:
    table = TABLES[name]
    plain = every_history.assign(
        attributes=[getattr(cell, "value", cell) for cell in every_history["attributes"]]
    )
    assert table_json(table(plain)) == table_json(table(every_history))


@pytest.mark.parametrize("name", list(TABLES))
def test_shared_event_fields_give_the_same_tables(every_history: pd.DataFrame, name: str) -> None:
    """Attributes read from the event fields a batch shares (as the dataset writer does)."""
    table = TABLES[name]
    with shared_event_fields():
        shared = table(every_history)
    pd.testing.assert_frame_equal(shared, table(every_history), check_exact=True)


def test_shared_fields_in_one_decode_equal_the_fields_read_group_by_group(
    every_history: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every event's attributes decoded at once from the shared event fields (as the dataset
    writer reads them) give each field as the grouped reading of the cells (by attributes key,
    each group its own decode) does, value and type."""
    from toolkit.histories.columns.lazy import LazyAttributes
    from toolkit.histories.tables import activity, attribute_views, workflow_task

    cells = every_history["attributes"].to_numpy(dtype=object)
    cells = cells[[type(cell) is LazyAttributes for cell in cells]]  # not the protobuf ones
    for fields in (activity._FIELDS, workflow_task._FIELDS):
        with shared_event_fields():
            once = attribute_views._shared_fields(cells, fields)
            assert once is not None  # the path ran: every cell a raw JSON event's
            with monkeypatch.context() as patched:
                patched.setattr(attribute_views, "_shared_fields", lambda cells, names: None)
                grouped = attribute_views.attribute_fields(cells, fields)
        assert set(once) == set(fields) and len(cells) > 10_000
        for name in fields:
            expected = grouped[name]
            assert [type(v) for v in once[name]] == [type(v) for v in expected], name
            assert once[name].tolist() == expected.tolist(), name


def test_plain_columns_of_frame_rows_equal_those_of_the_rows_taken(
    every_history: pd.DataFrame,
) -> None:
    """A column of some rows read through FrameRows (from the frame's values) holds what the
    rows taken as a frame give, value and type, for every column and dtype of the events."""
    from toolkit.histories.tables.columnar import FrameRows, plain_column

    frame = every_history.assign(
        history=every_history["history"].astype("Int64"),  # nullable, and a masked row
        is_command=every_history["is_command"].astype("boolean"),
        plain_bool=every_history["is_command"].astype(bool),
        numbers=np.where(every_history["event_id"] % 3 == 0, np.nan, 1.5),
    )
    frame.loc[3, "history"] = pd.NA
    frame.loc[4, "activity_id"] = np.nan
    rows = np.union1d(np.flatnonzero(frame["event_id"].to_numpy() % 2 == 0), [3, 4])
    taken = frame.take(rows)
    for column in [*frame.columns, "absent"]:
        found, expected = plain_column(FrameRows(frame, rows), column), plain_column(taken, column)
        assert found.dtype == expected.dtype == object, column
        assert [type(v) for v in found] == [type(v) for v in expected], column
        assert found.tolist() == expected.tolist(), column


@pytest.mark.parametrize("name", list(TABLES))
def test_rows_found_in_order_are_those_the_sort_leaves_in_place(
    every_history: pd.DataFrame, name: str
) -> None:
    """The check that lets frame_of_columns skip its sort says "in order" exactly where the
    stable sort leaves every row in place, on the tables, their rows shuffled, swapped, keys
    made equal, missing or no text."""
    from toolkit.histories.tables.common import _in_order

    keys = ["source", "history", "scheduled_event_id"]
    table = TABLES[name](every_history)
    table = table[table["scheduled_event_id"].notna()].reset_index(drop=True)
    rng = np.random.default_rng(11)
    swapped = table.copy()
    swapped.loc[[5, 6]] = swapped.loc[[6, 5]].to_numpy()
    variants = {
        "as built": table,
        "shuffled": table.sample(frac=1, random_state=3).reset_index(drop=True),
        "two swapped": swapped,
        "one history": table.assign(history=1, source="s"),
        "ids tied": table.assign(scheduled_event_id=rng.integers(0, 3, len(table))),
        "a source missing": table.assign(source=[None, *table["source"].iloc[1:]]),
        "an id missing": table.assign(scheduled_event_id=pd.array(
            [pd.NA, *table["scheduled_event_id"].iloc[1:]], dtype="Int64")),
    }  # fmt: skip
    seen = set()
    for label, frame in variants.items():
        sortable = frame.assign(source=frame["source"].astype(str))
        order = sortable.sort_values(keys, kind="stable").index.to_numpy()
        in_place = bool((order == np.arange(len(frame))).all())
        found = _in_order(frame, keys)
        assert not found or in_place, label  # never in order where the sort moves a row
        if label in ("as built", "one history", "shuffled", "two swapped"):
            assert found == in_place, label  # decided, not left to the sort
        seen.add(found)
    assert seen == {True, False}


@pytest.mark.parametrize("name", list(TABLES))
def test_every_event_twice_gives_the_same_rows(every_history: pd.DataFrame, name: str) -> None:
    """The last event of a stage, the first value seen: a repeated event changes nothing (but
    the commands a completed task recorded, which are listed twice)."""
    table = TABLES[name]
    reference = table(every_history)
    doubled = table(pd.concat([every_history, every_history], ignore_index=True))
    if name == "workflow_tasks":
        assert doubled["commands"].tolist() == [c + c for c in reference["commands"]]
        assert (doubled["command_count"] == 2 * reference["command_count"]).all()
        doubled = doubled.drop(columns=["commands", "command_count"])
        reference = reference.drop(columns=["commands", "command_count"])
    pd.testing.assert_frame_equal(doubled, reference, check_exact=True)


@pytest.mark.parametrize("name", list(TABLES))
def test_a_later_copy_of_an_event_stamps_the_row(every_history: pd.DataFrame, name: str) -> None:
    """Every event again, an hour later and with other ids: the times are the later events'
    (the last event of a stage stamps the row), the activity id the first one seen."""
    table = TABLES[name]
    reference = table(every_history)
    later = every_history.assign(
        event_time=every_history["event_time"] + pd.Timedelta(hours=1),
        activity_id=[None if v is None else f"{v}#2" for v in every_history["activity_id"]],
    )
    found = table(pd.concat([every_history, later], ignore_index=True))
    for column in ("scheduled_time", "started_time", "closed_time"):
        pd.testing.assert_series_equal(found[column], reference[column] + pd.Timedelta(hours=1))
    for column in [c for c in reference.columns if c.endswith("_duration")]:
        pd.testing.assert_series_equal(found[column], reference[column])
    if "activity_id" in reference.columns:
        pd.testing.assert_series_equal(found["activity_id"], reference["activity_id"])


def test_attribute_fields_read_what_the_cells_hold() -> None:
    """Odd events (attributes null, no object, absent; no key; plain dicts) read as their cells
    show them, and one odd event does not stop the others of its batch from decoding."""
    from types import SimpleNamespace

    import msgspec

    from toolkit.histories.columns.lazy import LazyAttributes
    from toolkit.histories.tables.attribute_views import attribute_fields

    key = "activityTaskScheduledEventAttributes"
    raws = [
        {key: {"activityId": "1", "retryPolicy": {"maximumAttempts": 3}, "input": {"x": 1}}},
        {key: None},
        {key: "not an object"},
        {"eventId": "4"},
        {key: {"activityId": "5", "heartbeatTimeout": "2s"}},
    ]
    events = [msgspec.Raw(orjson.dumps(raw)) for raw in raws]
    # Events split by hand, and a raw history whose event fields the batch shares.
    split, whole = SimpleNamespace(json_events=events), RawHistory(json_array=orjson.dumps(raws))
    for history, scope in ((split, contextlib.nullcontext()), (whole, shared_event_fields())):
        cells = [LazyAttributes(history, i, key) for i in range(len(raws))]
        cells += [LazyAttributes(history, 0, None), {"activityId": "7"}, "no mapping"]
        fields = ("activityId", "retryPolicy", "heartbeatTimeout")
        with scope:
            found = attribute_fields(np.array(cells, dtype=object), fields)
        assert found["activityId"].tolist() == ["1", None, None, None, "5", None, "7", None]
        assert found["retryPolicy"].tolist()[0] == {"maximumAttempts": 3}
        assert found["heartbeatTimeout"].tolist() == [None, None, None, None, "2s", None, None,
                                                      None]  # fmt: skip
        for row, cell in enumerate(cells[:6]):  # the same as a full decode of each cell
            value = cell.value if hasattr(cell, "value") else cell
            value = value if isinstance(value, dict) else {}
            assert [found[f][row] for f in fields] == [value.get(f) for f in fields]
