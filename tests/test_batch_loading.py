"""Batch loading builds one frame per chunk of files: the same frame as file by file.

Every file in data/ and in the corpus's histories is read both ways (``read_history`` per file
and concatenated, against ``read_histories`` in chunks, in this process and in a process pool);
the frames must agree value for value and dtype for dtype, and so must the error tables.
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pandas as pd
import pytest

import toolkit as tk
from toolkit.histories.reading.batch import find_history_files

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def every_file(corpus: Path) -> list[Path]:
    files = find_history_files([ROOT / "data", corpus / "histories"])
    assert len(files) > 300
    return files


@pytest.fixture(scope="module")
def file_by_file(every_file: list[Path]) -> tuple[pd.DataFrame, list[tuple[str, str, str]]]:
    frames, failures = [], []
    for path in every_file:
        try:
            frames.append(tk.read_history(path))
        except tk.ToolkitError as exc:
            failures.append((str(path), type(exc).__name__, str(exc)))
    assert failures, "the corpus holds unreadable files; they must be reported"
    return pd.concat(frames, ignore_index=True), failures


Expected = tuple[pd.DataFrame, list[tuple[str, str, str]]]


def _same(batch: tk.HistoryBatch, expected: Expected) -> None:
    events, failures = expected
    assert list(batch.events.columns) == list(events.columns)
    assert list(batch.events.dtypes) == list(events.dtypes)
    for column in events.columns:  # column by column, so a failure names the column
        pd.testing.assert_series_equal(batch.events[column], events[column], check_exact=True)
    found = list(batch.errors[["source", "error_type", "message"]].itertuples(index=False))
    assert [tuple(row) for row in found] == failures


@pytest.mark.parametrize("workers", [1, 2])
def test_chunked_batches_equal_file_by_file(
    every_file: list[Path], file_by_file: tuple[pd.DataFrame, list[tuple[str, str, str]]],
    workers: int,
) -> None:  # fmt: skip
    chunks = list(tk.read_histories(every_file, dedupe=False, chunksize=90, workers=workers))
    assert len(chunks) == -(-len(every_file) // 90)
    assert all(len(c.events) for c in chunks)
    joined = tk.HistoryBatch(
        pd.concat([c.events for c in chunks], ignore_index=True),
        pd.concat([c.errors for c in chunks], ignore_index=True),
    )
    _same(joined, file_by_file)


def test_one_frame_equals_file_by_file(
    every_file: list[Path], file_by_file: tuple[pd.DataFrame, list[tuple[str, str, str]]]
) -> None:
    _same(tk.read_histories(every_file, dedupe=False, workers=1), file_by_file)


#: Stands for a real history with bytes that are not UTF-8 inside one event's identity.
NOT_UTF8 = b"<not utf-8>"


def _fleet(tmp_path: Path, bad: bytes) -> list[Path]:
    """Twelve copies of a recorded history (half gzipped) with one damaged file in the middle."""
    template = next((ROOT / "data" / "go_twin").rglob("one_call_then_plain.json"), None)
    if template is None:
        pytest.skip("data/go_twin not recorded (make record)")
    text = template.read_text()
    run_id = tk.read_history(template)["run_id"].iloc[0]
    files = []
    for index in range(12):
        body = text.replace(run_id, f"00000000-0000-4000-8000-{index:012d}").encode()
        path = tmp_path / f"run-{index:02d}.json"
        if index % 2:
            path = path.with_suffix(".json.gz")
            body = gzip.compress(body)
        path.write_bytes(body)
        files.append(path)
    if bad == NOT_UTF8:
        at = text.rindex('"identity":"') + len('"identity":"')
        bad = text[:at].encode() + b"\xff\xfe" + text[at:].encode()
    files[5].write_bytes(bad)
    return files


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize(
    "bad", [b'{"events": [{"eventId": "1", ', b"\x1f\x8b\x08\x00garbage", NOT_UTF8]
)
def test_a_damaged_file_is_reported_and_never_poisons_its_chunk(
    tmp_path: Path, bad: bytes, workers: int
) -> None:
    files = _fleet(tmp_path, bad)
    chunks = list(tk.read_histories(tmp_path, chunksize=4, workers=workers))
    assert [len(c.errors) for c in chunks] == [0, 1, 0]
    failure = chunks[1].errors.iloc[0]
    assert failure["source"] == str(files[5]) and failure["error_type"] == "HistoryFormatError"
    assert failure["position"] is not None or "gzip" in failure["message"]
    per_file = [len(tk.read_history(f)) for f in files if f != files[5]]
    assert sum(len(c.events) for c in chunks) == sum(per_file)
    assert chunks[1].events["source"].nunique() == 3
    with pytest.raises(tk.HistoryFormatError, match="run-05"):
        list(tk.read_histories(tmp_path, chunksize=4, workers=workers, errors="raise"))


def test_a_file_that_is_not_utf8_is_one_error_of_a_dataset_write(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    files = _fleet(tmp_path / "in", NOT_UTF8)
    report = tk.write_dataset(tmp_path / "in", tmp_path / "ds", workers=1, progress=False)
    assert report.errors["source"].tolist() == [str(files[5])]
    assert "UTF-8" in report.errors["message"].iloc[0] and report.errors["position"].iloc[0]
    runs = tk.sql("select count(*) n from runs", dataset=tmp_path / "ds")["n"].iloc[0]
    assert runs == len(files) - 1


def test_duplicates_are_dropped_across_chunks(tmp_path: Path) -> None:
    files = _fleet(tmp_path, b"")
    files[5].unlink()
    for path in files[:3]:  # Cloud exports deliver at least once: the same run in a later file
        shutil.copy(path, tmp_path / f"zz-again-{path.name}")
    whole = tk.read_histories(tmp_path, workers=1)
    chunks = list(tk.read_histories(tmp_path, chunksize=5, workers=1))
    assert whole.events["run_id"].nunique() == 11
    assert whole.events.groupby("run_id")["source"].nunique().max() == 1
    joined = pd.concat([c.events for c in chunks], ignore_index=True)
    pd.testing.assert_frame_equal(joined, whole.events)


def test_an_option_no_reader_takes_is_named_before_any_file_is_read(tmp_path: Path) -> None:
    """A misspelt option (``batch_files`` for ``chunksize``, ``max_size`` for ``max_bytes``) is
    a TypeError that names it and lists the options there are, raised at the call: not a
    traceback from inside the first file's read (or a worker's)."""
    _fleet(tmp_path, b'{"events": []}')
    for call in (lambda: tk.read_histories(tmp_path, max_size=10),
                 lambda: tk.iter_histories(tmp_path, batch_files=4)):  # fmt: skip
        with pytest.raises(TypeError) as raised:
            call()
        message = str(raised.value)
        assert "unexpected option" in message and "max_bytes" in message
        assert "'max_size'" in message or "'batch_files'" in message
    assert len(tk.read_histories(tmp_path, max_bytes=1 << 20, progress=False).events)


@pytest.mark.parametrize("expected_chunks", [1, 3, 1000])
def test_chunks_grown_into_one_frame_equal_their_concatenation(
    tmp_path: Path, expected_chunks: int
) -> None:
    """read_histories copies each chunk into arrays sized from the first (grown by half when
    the estimate is short, views of them when it is long): the frame is pd.concat's of the
    chunks, dtypes included, whatever the estimate, with a chunk of no events among them."""
    from toolkit.histories.reading.growing import GrowingFrame

    root = Path(__file__).resolve().parents[1] / "data"
    frames = [b.events for b in tk.iter_histories([root / "adk", root / "go_twin"], chunksize=7,
                                                  progress=False)]  # fmt: skip
    frames.insert(2, frames[0].iloc[:0])
    assert len(frames) > 4
    grown = GrowingFrame(expected_chunks)
    for frame in frames:
        grown.append(frame)
    want = pd.concat(frames, ignore_index=True)
    got = grown.frame()
    pd.testing.assert_frame_equal(got, want)
    assert list(got.dtypes) == list(want.dtypes)


def test_a_read_of_many_chunks_equals_its_chunks_concatenated() -> None:
    root = Path(__file__).resolve().parents[1] / "data"
    chunks = tk.iter_histories(root, chunksize=25, progress=False)
    count = len(chunks)
    frames = [b.events for b in chunks]
    assert count == len(frames) > 2
    whole = tk.read_histories(root, progress=False).events
    pd.testing.assert_frame_equal(whole, pd.concat(frames, ignore_index=True))


def test_iter_histories_tells_its_chunks_and_stops_early_like_a_generator() -> None:
    root = Path(__file__).resolve().parents[1] / "data"
    chunks = tk.iter_histories(root, chunksize=25, progress=False)
    files = len(find_history_files(root))
    assert len(chunks) == -(-files // 25)
    assert len(next(chunks).events)
    chunks.close()
    with pytest.raises(StopIteration):
        next(chunks)
