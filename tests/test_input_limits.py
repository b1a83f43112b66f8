"""Bounded input: decompression bombs and deep nesting give located errors, in bounded memory."""

from __future__ import annotations

import gzip
import tracemalloc
from pathlib import Path

import pytest

import toolkit as tk
from toolkit.errors import HistoryFormatError, LogFormatError
from toolkit.limits import MAX_BYTES

DATA = Path(__file__).resolve().parents[1] / "data"
HISTORY = DATA / "gallery" / "activity-added-end" / "v1.json"
LIMIT = 32 << 20


def _bomb(path: Path, expands_to: int, head: bytes = b"", fill: bytes = b"\0") -> Path:
    """A multi-member gzip file: ``head``, then ``fill`` repeated, ``expands_to`` bytes in all,
    written in ~1 MB (members of 64 MiB of one repeated pattern compress ~1000:1)."""
    member = gzip.compress(fill * ((64 << 20) // len(fill)), compresslevel=9)
    with path.open("wb") as out:
        out.write(gzip.compress(head))
        for _ in range(expands_to // (64 << 20)):
            out.write(member)
    return path


def test_default_limit_is_far_above_temporals_history_limit() -> None:
    # The server refuses histories over 50 MiB (binary); as JSON text that is ~2-3x more.
    assert MAX_BYTES >= 8 * (50 << 20)


def test_a_history_bomb_stops_at_the_limit_in_bounded_memory(tmp_path: Path) -> None:
    bomb = _bomb(tmp_path / "bomb.json.gz", 1 << 30, head=HISTORY.read_bytes()[:-5])
    assert bomb.stat().st_size < 2 << 20
    tk.read_history(HISTORY)  # imports done before memory is traced
    tracemalloc.start()
    try:
        with pytest.raises(HistoryFormatError) as caught:
            tk.read_history(bomb, max_bytes=LIMIT)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1.5 * LIMIT  # the limit, not the 1 GiB the file expands to
    error = caught.value
    assert error.source == str(bomb) and f"max_bytes={LIMIT:,}" in str(error)
    assert error.position == f"byte {LIMIT:,} of the content"
    # The same file within a larger limit is only refused for what it is (not a history).
    with pytest.raises(HistoryFormatError, match="max_bytes"):
        tk.read_history(bomb.read_bytes(), max_bytes=LIMIT)


def test_limits_apply_to_plain_files_and_file_objects(tmp_path: Path) -> None:
    small = len(HISTORY.read_bytes()) - 1
    with pytest.raises(HistoryFormatError, match=f"max_bytes={small:,}"):
        tk.read_history(HISTORY, max_bytes=small)
    with HISTORY.open("rb") as handle, pytest.raises(HistoryFormatError, match="max_bytes"):
        tk.read_history(handle, max_bytes=small)
    packed = tmp_path / "run.json.gz"
    packed.write_bytes(gzip.compress(HISTORY.read_bytes()))
    assert len(tk.read_history(packed)) == len(tk.read_history(HISTORY))
    with pytest.raises(HistoryFormatError, match="max_bytes"):
        tk.read_history(packed, max_bytes=small)
    assert len(tk.read_history(packed, max_bytes=None)) == len(tk.read_history(HISTORY))
    # Several gzip members are one stream (as gzip.decompress reads them).
    text = HISTORY.read_bytes()
    split = tmp_path / "two-members.json.gz"
    split.write_bytes(gzip.compress(text[:100]) + gzip.compress(text[100:]))
    assert len(tk.read_history(split)) == len(tk.read_history(HISTORY))


@pytest.mark.parametrize(
    "shape",
    [
        b"%s",  # the document itself
        b'{"events": %s}',  # where the events should be
        b'{"events": [{"eventId": "1", "eventType": "EVENT_TYPE_WORKFLOW_EXECUTION_STARTED", '
        b'"workflowExecutionStartedEventAttributes": {"input": %s}}]}',  # inside an event
    ],
)
def test_deep_nesting_is_a_located_error(shape: bytes) -> None:
    deep = b"[" * 200_000 + b"]" * 200_000
    data = shape.replace(b"%s", deep)
    with pytest.raises(HistoryFormatError, match="nested deeper than 900 levels") as caught:
        tk.read_history(data)
    start = data.index(b"[" * 1000)
    outer = data[:start].count(b"{") + data[:start].count(b"[")
    # The position is the bracket that opens level 901.
    assert caught.value.position.endswith(f"(byte {start + 900 - outer})")
    assert "max_depth=" in caught.value.expected


def test_max_depth_enforces_a_lower_limit() -> None:
    text = HISTORY.read_bytes()
    assert len(tk.read_history(text, max_depth=20)) == len(tk.read_history(HISTORY))
    with pytest.raises(HistoryFormatError, match="deeper than 3 levels") as caught:
        tk.read_history(text, max_depth=3)
    # Brackets inside strings do not count.
    assert text.count(b"[") >= 1 and "line" in caught.value.position


def test_a_gzip_log_bomb_stops_at_the_limit(tmp_path: Path) -> None:
    head = b'{"level":"info","msg":"worker started"}\n' * 3
    bomb = _bomb(tmp_path / "worker.log.gz", 1 << 30, head=head, fill=b"x" * 1023 + b"\n")
    tk.read_logs(head)  # imports done before memory is traced
    limit = 8 << 20
    tracemalloc.start()
    try:
        with pytest.raises(LogFormatError) as caught:
            tk.read_logs(bomb, max_bytes=limit)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # The lines read before the limit are parsed rows (their raw text included), plus the
    # reader's fixed buffers (8 MiB blocks): far from the 1 GiB the file expands to.
    assert peak < 2 * limit + (16 << 20)
    assert caught.value.source == str(bomb) and f"max_bytes={limit:,}" in str(caught.value)
    # Within the limit the same kind of file reads, every line accounted for.
    fine = tmp_path / "fine.log.gz"
    fine.write_bytes(gzip.compress(head))
    assert tk.read_logs(fine, max_bytes=len(head))["lines"].sum() == 3
    with pytest.raises(LogFormatError, match="max_bytes"):
        tk.read_logs(fine, max_bytes=len(head) - 1)


def test_a_deeply_nested_log_line_is_a_row_not_a_crash() -> None:
    deep = b'{"level":"info","msg":"x","a":' + b"[" * 200_000 + b"]" * 200_000 + b"}\n"
    logs = tk.read_logs(deep * 2 + b'{"level":"info","msg":"after"}\n')
    assert logs["lines"].sum() == 3 and logs["message"].iloc[-1] == "after"
