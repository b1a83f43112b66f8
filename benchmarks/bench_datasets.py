"""Histories -> Parquet dataset: files per second against ``orjson.loads``, then one query.

Generates N histories of about 100 events (default 10,000) by giving real recorded histories
(``data/go_twin``) new run ids, workflow ids and start dates, laid out like a Cloud export tree
(``export/<namespace>/<Y>/<M>/<D>/<H>/<Min>/<run>.json``) so the namespace and date partitions
fill. Then, in the same run:

- baseline: read every file and ``orjson.loads`` it (the least any JSON reader must do);
- ``toolkit.write_dataset`` of the whole tree (events, activities, workflow_tasks, runs);
- a second ``write_dataset`` of the same tree (idempotent: everything skipped);
- ``toolkit.sql`` over all activities of the dataset (best of 3).

Usage: ``python benchmarks/bench_datasets.py [--histories N] [--keep DIR]``
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
import uuid
from pathlib import Path

import orjson

from toolkit.datasets import write_dataset
from toolkit.datasets.query import sql

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = ROOT / "data" / "go_twin"


def _templates() -> list[tuple[str, str]]:
    """(text, run id) of every recorded history with 60 to 140 events."""
    found = []
    for path in sorted(TEMPLATES.rglob("*.json")):
        if path.name.endswith(".meta.json"):
            continue
        data = orjson.loads(path.read_bytes())
        events = data["events"]
        if 60 <= len(events) <= 140:
            attributes = events[0]["workflowExecutionStartedEventAttributes"]
            found.append((path.read_text(), attributes["originalExecutionRunId"]))
    if not found:
        raise SystemExit(f"no recorded history of about 100 events under {TEMPLATES}")
    return found


def generate(out: Path, count: int) -> tuple[list[Path], int]:
    """Write ``count`` histories under ``out``; return the files and the total events."""
    templates = _templates()
    files, total = [], 0
    for index in range(count):
        text, run_id = templates[index % len(templates)]
        new_run = str(uuid.UUID(int=index + 1, version=4))
        day = 1 + index % 7
        namespace = f"team-{index % 3}"
        body = text.replace(run_id, new_run).replace("2026-11-29T", f"2026-11-{day:02d}T")
        folder = out / "export" / namespace / "2026" / "11" / f"{day:02d}" / "12" / "00"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{new_run}.json"
        path.write_text(body)
        files.append(path)
        total += body.count('"eventId"')
    return files, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--histories", type=int, default=10_000)
    parser.add_argument("--keep", type=Path, help="write here and keep (default: a temp dir)")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-datasets-"))
    try:
        files, events = generate(work / "histories", args.histories)
        print(f"{len(files)} histories, {events} events ({events / len(files):.0f} per history)")

        start = time.perf_counter()
        for path in files:
            orjson.loads(path.read_bytes())
        baseline = time.perf_counter() - start
        print(f"baseline orjson.loads per file: {baseline:.2f}s  "
              f"({len(files) / baseline:,.0f} files/s)")  # fmt: skip

        dataset = work / "dataset"
        start = time.perf_counter()
        report = write_dataset(work / "histories", dataset, progress=False)
        written = time.perf_counter() - start
        assert report.runs_written == len(files) and report.events_written == events, report
        parts = len(list(dataset.rglob("part-*.parquet")))
        print(f"write_dataset: {written:.2f}s  ({len(files) / written:,.0f} files/s, "
              f"{events / written:,.0f} events/s, {parts} Parquet files)")  # fmt: skip
        print(f"  ratio write_dataset / orjson.loads files per second: {baseline / written:.3f}")

        start = time.perf_counter()
        again = write_dataset(work / "histories", dataset, progress=False)
        rewrite = time.perf_counter() - start
        assert again.runs_written == 0 and again.files_skipped == len(files), again
        print(f"second write of the same files: {rewrite:.2f}s, nothing added "
              f"({len(files) / rewrite:,.0f} files/s skipped by hash)")  # fmt: skip

        query = ("select namespace, activity_type, count(*) n, max(attempt) max_attempt, "
                 "avg(run_duration) mean_run_s, quantile_cont(run_duration, 0.99) p99_run_s "
                 "from activities group by all order by n desc")  # fmt: skip
        timings = []
        for _ in range(3):
            start = time.perf_counter()
            result = sql(query, dataset=dataset)
            timings.append(time.perf_counter() - start)
        total = int(result["n"].sum())
        print(f"query over all {total:,} activities: best {min(timings):.3f}s "
              f"(of {', '.join(f'{t:.3f}' for t in timings)}); target < 1 s: "
              f"{'met' if min(timings) < 1 else 'MISSED'}")  # fmt: skip
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
