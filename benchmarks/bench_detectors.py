"""Benchmark the log detectors against ``read_logs`` on the same records, measured in one run.

Builds a log of N records (default 200,000) by tiling the repository's own logs (the lab's
duplicate-tool logs and the worker-log fixtures of every family), reads it once, then prints for
each detector its time divided by the ``read_logs`` time (what a detector adds to reading the
file). A second table compares the detectors' prefilter (one regular-expression pass over
``raw`` with every needle) to a per-needle ``str.contains`` loop over the same column, the way
the prefilter worked before.

Run: ``.venv/bin/python benchmarks/bench_detectors.py [--records N]``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from toolkit.logs import read_logs
from toolkit.logs.detectors import LOG_DETECTORS, rows_mentioning
from toolkit.logs.duplicate_shapes import shape_needles

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [ROOT / "data" / "duplicate_tool" / "go" / "before.log",
           ROOT / "data" / "duplicate_tool" / "go" / "after.log",
           ROOT / "data" / "duplicate_tool" / "python" / "worker.log",
           *sorted((ROOT / "tests" / "fixtures" / "logs").glob("*.log"))]


def tiled_lines(records: int) -> list[str]:
    lines: list[str] = []
    for path in SOURCES:
        text = path.read_bytes().decode("utf-8", errors="replace")
        if "\x00" not in text:  # UTF-16 fixtures tile badly; the others are enough
            lines.extend(text.splitlines())
    return (lines * (records // len(lines) + 1))[:records]


def timed(fn: Callable[[], object], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def per_needle_loop(logs: pd.DataFrame, needles: tuple[str, ...]) -> pd.Series:
    mask = logs["lines"] > 1
    raw = logs["raw"].astype(object).fillna("")
    for needle in needles:
        mask |= raw.str.contains(needle, regex=False)
    return mask


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    args = parser.parse_args()
    lines = tiled_lines(args.records)
    start = time.perf_counter()
    logs = read_logs(lines, year=2026)
    read_seconds = time.perf_counter() - start
    print(f"read_logs: {len(lines):,} lines -> {len(logs):,} records in {read_seconds:.2f} s")
    print(f"{'detector':<22}{'findings':>10}{'seconds':>10}{'/ read_logs':>13}")
    for name, detect in LOG_DETECTORS.items():
        found = detect(logs)
        seconds = timed(lambda detect=detect: detect(logs), repeat=1)
        print(f"{name:<22}{len(found):>10,}{seconds:>10.2f}{seconds / read_seconds:>13.2f}")
    needles = shape_needles()
    one_pass = timed(lambda: rows_mentioning(logs, needles))
    loop = timed(lambda: per_needle_loop(logs, needles))
    assert rows_mentioning(logs, needles).equals(per_needle_loop(logs, needles))
    print(f"prefilter, {len(needles)} needles: one pass {one_pass:.3f} s, per-needle loop "
          f"{loop:.3f} s, ratio {loop / one_pass:.1f}x")


if __name__ == "__main__":
    main()
