"""The JSON fast path gives the frame the line-by-line assembler gives, on every real log.

Every log the lab recorded (``data/``), every log of the public corpus and every fixture log is
read twice: as ``read_logs`` reads it, and with the fast path off (each line through the
assembler). The frames must be equal column for column (names, dtypes, cells). The same files
are then read in small blocks and sub-blocks, tiled, so that runs of JSON lines start and end
inside blocks and across them.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pandas as pd
import pytest

import toolkit.logs.jsonfast as jsonfast
import toolkit.logs.read as read_module
import toolkit.logs.sources as sources
from toolkit.logs import read_logs

ROOT = Path(__file__).resolve().parents[1]
LOG_SUFFIXES = (".log", ".jsonl", ".gz", ".0", ".txt", ".json")


def _lab_logs() -> list[Path]:
    """Log files of the lab and the fixtures: what lives in a ``logs`` folder, every ``*.log``."""
    found = {p for p in (ROOT / "data").rglob("*.log") if p.is_file()}
    found |= {p for p in (ROOT / "data").rglob("logs/*") if p.is_file()
              and p.name.endswith(LOG_SUFFIXES)}
    found |= {p for p in (ROOT / "tests" / "fixtures" / "logs").rglob("*") if p.is_file()}
    return sorted(p for p in found if p.stat().st_size)  # an empty file is refused by both


LAB_LOGS = _lab_logs()


def _line_by_line(source: object, monkeypatch: pytest.MonkeyPatch) -> pd.DataFrame:
    with monkeypatch.context() as patch:
        patch.setattr(read_module, "JSON_FAST_PATH", False)
        return read_logs(source)


def _same(fast: pd.DataFrame, slow: pd.DataFrame, name: str) -> None:
    assert list(fast.columns) == list(slow.columns), name
    assert len(fast) == len(slow), name
    for column in fast.columns:
        assert fast[column].dtype == slow[column].dtype, (name, column)
        if not fast[column].equals(slow[column]):
            bad = (fast[column] != slow[column]) & ~(fast[column].isna() & slow[column].isna())
            row = int(bad.to_numpy().argmax())
            raise AssertionError(f"{name}: column {column} differs at row {row}: "
                                 f"{fast[column].iloc[row]!r} != {slow[column].iloc[row]!r}")


def test_the_lab_has_json_logs() -> None:
    """The comparison covers JSON lines (the fast path's input), not only text logs."""
    json_rows = sum(
        read_logs(path)["format"].isin(["slog_json", "logrus_json", "json", "zap"]).sum()
        for path in LAB_LOGS if path.suffix == ".jsonl")
    assert len(LAB_LOGS) > 100 and json_rows > 800


@pytest.mark.parametrize("path", LAB_LOGS, ids=lambda p: str(p.relative_to(ROOT)))
def test_lab_log_fast_path_equals_line_by_line(path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    fast = read_logs(path)
    _same(fast, _line_by_line(path, monkeypatch), str(path))


def test_corpus_logs_fast_path_equals_line_by_line(corpus: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    paths = sorted(p for p in (corpus / "logs").iterdir() if p.is_file())
    assert len(paths) > 20
    for path in paths:
        _same(read_logs(path), _line_by_line(path, monkeypatch), path.name)


def _tiled(paths: list[Path], copies: int) -> bytes:
    """The files' bytes (decompressed) one after another, ``copies`` times."""
    parts = []
    for path in paths:
        data = path.read_bytes()
        data = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
        if data[:2] in (b"\xff\xfe", b"\xfe\xff") or data[:1] in (b"\x01", b"\x02"):
            continue  # UTF-16 and Docker frames cannot be concatenated as bytes
        parts.append(data if data.endswith(b"\n") else data + b"\n")
    return b"".join(parts) * copies


@pytest.mark.parametrize("block_bytes", [4096, 1 << 16])
def test_tiled_logs_in_small_blocks(block_bytes: int, corpus: Path,
                                    monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Runs cut by block and sub-block ends: the lab's JSON logs and the corpus, tiled."""
    paths = [p for p in LAB_LOGS if p.suffix == ".jsonl"]
    paths += sorted(p for p in (corpus / "logs").iterdir() if p.is_file())
    path = tmp_path / "tiled.log"
    path.write_bytes(_tiled(paths, 2))
    with monkeypatch.context() as patch:
        patch.setattr(sources, "BLOCK_BYTES", block_bytes)
        patch.setattr(jsonfast, "_SUB_BLOCK", 97)
        fast = read_logs(path)
    slow = _line_by_line(path, monkeypatch)
    _same(fast, slow, f"tiled, {block_bytes}-byte blocks")
    assert fast["lines"].sum() == path.read_bytes().count(b"\n")
