"""A fleet of small histories: read_histories and write_dataset against an orjson loop, then SQL.

Generates N histories (default 20,000) by giving real recorded lab histories (``data/go_twin``
and ``data/adk``, 40 to 200 events) new run ids, workflow ids and start dates, laid out like a
Cloud export tree (``export/<namespace>/<Y>/<M>/<D>/<H>/<Min>/<run>.json``), every other file
gzipped. Then, in the same run, against the same files:

- baseline: read every file, gunzip the gzipped ones and ``orjson.loads`` it (the least any
  JSON reader must do), files/s and events/s;
- ``toolkit.read_histories`` of the tree, in this process and with a process pool (one worker
  per core): files/s, events/s, ratio to the baseline (target >= 0.25), its package imported
  before the clock starts;
- ``toolkit.write_dataset`` of the tree in a child process (so its peak memory is measured
  alone, sampled over that process and its pool workers: the largest one, target < 1 GB, and
  all of them together), ratio to the baseline (target >= 0.15), then a second write of the
  same tree (everything skipped);
- a query over all activities: ``toolkit.sql`` against DuckDB reading the same Parquet files
  directly, best of 5 each (target: overhead <= 1.2x).

Every ratio is given twice: in wall time, and in CPU time of all the processes a contender ran
(its pool's workers and their fork server included), which other work on a shared machine
disturbs far less; with workers the CPU ratio is the work done, not how soon it was done.

Usage: ``python benchmarks/bench_datasets.py [--histories N] [--workers W] [--keep DIR]``
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import inspect
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import duckdb
import orjson
import psutil

ROOT = Path(__file__).resolve().parents[1]
QUERY = (
    "select namespace, activity_type, count(*) n, max(attempt) max_attempt, "
    "avg(run_duration) mean_run_s, quantile_cont(run_duration, 0.99) p99_run_s "
    "from activities group by all order by n desc"
)


def _templates() -> list[tuple[str, str, str]]:
    """(text, run id, start day) of every recorded lab history with 40 to 200 events."""
    found = []
    for path in sorted([*(ROOT / "data" / "go_twin").rglob("*.json"),
                        *(ROOT / "data" / "adk").rglob("*.json")]):  # fmt: skip
        if path.name.endswith(".meta.json"):
            continue
        data = orjson.loads(path.read_bytes())
        events = data.get("events") if isinstance(data, dict) else None
        if not events or not 40 <= len(events) <= 200:
            continue
        started = events[0].get("workflowExecutionStartedEventAttributes") or {}
        if started.get("originalExecutionRunId"):
            day = events[0]["eventTime"][:10]
            found.append((path.read_text(), started["originalExecutionRunId"], day))
    if not found:
        raise SystemExit("no recorded lab history of 40 to 200 events under data/ (make record)")
    return found


def generate(out: Path, count: int) -> tuple[list[Path], int]:
    """Write ``count`` histories under ``out``; return the files and the total events."""
    templates = _templates()
    files, total = [], 0
    for index in range(count):
        text, run_id, day = templates[index % len(templates)]
        new_run = str(uuid.UUID(int=index + 1, version=4))
        new_day = 1 + index % 7
        namespace = f"team-{index % 3}"
        body = text.replace(run_id, new_run).replace(f"{day}T", f"2026-11-{new_day:02d}T")
        folder = out / "export" / namespace / "2026" / "11" / f"{new_day:02d}" / "12" / "00"
        folder.mkdir(parents=True, exist_ok=True)
        if index % 2:
            path = folder / f"{new_run}.json.gz"
            path.write_bytes(gzip.compress(body.encode(), compresslevel=6))
        else:
            path = folder / f"{new_run}.json"
            path.write_text(body)
        files.append(path)
        total += body.count('"eventId"')
    return files, total


def cpu_seconds() -> float:
    """CPU seconds of this process and of every process under it, those that ended included
    once reaped (a pool's workers are reaped by their fork server, which outlives the pool):
    the whole work of a call, steadier than the wall clock on a shared machine."""
    me, total = psutil.Process(), 0.0
    for process in [me, *me.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            total += sum(process.cpu_times()[:4])  # its own and its reaped children's
    return total


def _baseline(files: list[Path]) -> tuple[float, float]:
    start, cpu = time.perf_counter(), cpu_seconds()
    for path in files:
        data = path.read_bytes()
        orjson.loads(gzip.decompress(data) if path.suffix == ".gz" else data)
    return time.perf_counter() - start, cpu_seconds() - cpu


def _line(
    label: str, took: tuple[float, float], files: int, events: int, baseline: tuple[float, float]
) -> None:
    (seconds, cpu), (base_seconds, base_cpu) = took, baseline
    print(f"{label}: {seconds:.2f}s  {files / seconds:,.0f} files/s  {events / seconds:,.0f} "
          f"events/s  ratio to orjson loop {base_seconds / seconds:.3f}; CPU {cpu:.2f}s "
          f"(all processes), ratio {base_cpu / cpu:.3f}")  # fmt: skip


def _write_in_child(
    histories: Path, dataset: Path, workers: int | None
) -> tuple[float, float, float, float]:
    """``write_dataset`` in a child process: (seconds, CPU seconds of the child and its pool,
    peak MB of its largest process, peak MB of the child and its pool workers together),
    memory sampled every 0.1 s."""
    code = (
        "import sys, time, toolkit as tk\n"
        "import toolkit.datasets.writer\n"  # imported before the clock starts
        "import contextlib, psutil\n"
        f"{inspect.getsource(cpu_seconds)}"
        "start, cpu = time.perf_counter(), cpu_seconds()\n"
        f"report = tk.write_dataset({str(histories)!r}, {str(dataset)!r}, progress=False, "
        f"workers={workers!r})\n"
        "print(time.perf_counter() - start, cpu_seconds() - cpu, report.runs_written)\n"
    )
    child = psutil.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE,
                         text=True)  # fmt: skip
    largest = total = 0
    while child.poll() is None:
        sizes = []
        for process in [child, *child.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                sizes.append(process.memory_info().rss)
        largest, total = max(largest, *sizes, 0), max(total, sum(sizes))
        time.sleep(0.1)
    out, _ = child.communicate()
    if child.returncode:
        raise SystemExit(f"write_dataset failed in the child (exit {child.returncode})")
    seconds, cpu = map(float, out.split()[:2])
    return seconds, cpu, largest / 2**20, total / 2**20


def _best(function: object, repeat: int = 5) -> float:
    timings = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()  # type: ignore[operator]
        timings.append(time.perf_counter() - start)
    return min(timings)


def main() -> None:
    import toolkit as tk

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--histories", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=None, help="pool size (default: cores)")
    parser.add_argument("--keep", type=Path, help="write here and keep (default: a temp dir)")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-datasets-"))
    try:
        files, events = generate(work / "histories", args.histories)
        print(f"{len(files)} histories (half gzipped), {events} events "
              f"({events / len(files):.0f} per history)")  # fmt: skip
        _baseline(files)  # warm the page cache: every contender reads cached files
        baseline = _baseline(files)
        _line("baseline read + gunzip + orjson.loads", baseline, len(files), events, baseline)

        read_histories = tk.read_histories  # imported before the clock, as in the child
        for workers in (1, args.workers):
            start, cpu = time.perf_counter(), cpu_seconds()
            batch = read_histories(work / "histories", progress=False, workers=workers)
            took = time.perf_counter() - start, cpu_seconds() - cpu
            assert len(batch.events) == events and batch.errors.empty
            del batch
            _line(f"read_histories workers={workers or 'cores'}", took, len(files), events,
                  baseline)  # fmt: skip

        dataset = work / "dataset"
        *took, largest, together = _write_in_child(work / "histories", dataset, args.workers)
        parts = len(list(dataset.rglob("part-*.parquet")))
        _line(f"write_dataset workers={args.workers or 'cores'}", tuple(took), len(files), events,
              baseline)  # fmt: skip
        print(f"  peak resident memory: largest process {largest:,.0f} MB (target < 1,024), "
              f"all its processes together {together:,.0f} MB; {parts} Parquet files")
        start = time.perf_counter()
        again = tk.write_dataset(work / "histories", dataset, progress=False)
        assert again.runs_written == 0 and again.files_skipped == len(files), again
        print(f"second write of the same files: {time.perf_counter() - start:.2f}s, nothing added")

        def direct() -> object:
            pattern = str(dataset / "activities" / "*.parquet")
            connection = duckdb.connect()
            connection.execute("set TimeZone = 'UTC'")
            connection.execute(f"create view activities as select * from read_parquet('{pattern}')")
            return connection.execute(QUERY).df()

        ours = _best(lambda: tk.sql(QUERY, dataset=dataset))
        theirs = _best(direct)
        print(f"query over all activities: tk.sql {ours:.3f}s, DuckDB on the same files "
              f"{theirs:.3f}s, overhead {ours / theirs:.2f}x (target <= 1.2)")  # fmt: skip
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
