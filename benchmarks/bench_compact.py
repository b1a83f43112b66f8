"""Many small incremental writes, then ``compact_dataset``: files, bytes, time, query time.

Writes ``--writes`` batches (default 50) of ``--runs`` histories each (default 1: the worst
case, one file per table per run) with one ``write_dataset`` call per batch, from the lab's
gallery recordings given fresh run ids. Then prints, in the same run: files and bytes of the
committed batches before and after ``compact_dataset`` (run in a child process, whose peak
memory is printed: target < 1 GB at any size), its wall time, a ``toolkit.sql`` query
over all events before and after (best of 5; the answers must be equal), and the time of a
second compaction (a no-op).

Usage: ``python benchmarks/bench_compact.py [--writes N] [--runs K] [--keep DIR]``
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUERY = (
    "select workflow_type, count(*) as events, count(distinct source) as runs from events "
    "group by workflow_type order by workflow_type"
)
_RUN_ID = re.compile(r'"originalExecutionRunId": "([^"]+)"')


def _histories(folder: Path, count: int) -> list[Path]:
    templates = sorted((ROOT / "data" / "gallery").glob("*/v1.json"))
    folder.mkdir(parents=True)
    paths = []
    for number in range(count):
        text = templates[number % len(templates)].read_text()
        old = _RUN_ID.search(text).group(1)  # type: ignore[union-attr]
        path = folder / f"run-{number:06d}.json"
        path.write_text(text.replace(old, str(uuid.uuid4())))
        paths.append(path)
    return paths


def _query(dataset: Path) -> tuple[float, list[list[object]]]:
    import toolkit as tk

    times: list[float] = []
    answer: list[list[object]] = []
    for _ in range(5):
        started = time.perf_counter()
        answer = tk.sql(QUERY, dataset=dataset).values.tolist()
        times.append(time.perf_counter() - started)
    return min(times), answer


def _compact_in_child(dataset: Path) -> tuple[dict[str, float], float]:
    """``compact_dataset`` in a child process: its report and the child's peak RSS in MB (its
    own, all threads; nothing else in the child holds much)."""
    code = (
        "import json, resource, sys, toolkit as tk\n"
        "done = tk.compact_dataset(sys.argv[1])\n"
        "keys = ('files_before', 'files_after', 'bytes_before', 'bytes_after', 'seconds')\n"
        "out = {k: getattr(done, k) for k in keys}\n"
        "out['peak'] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n"
        "print(json.dumps(out))\n"
    )
    child = subprocess.run([sys.executable, "-c", code, str(dataset)], capture_output=True,
                           text=True, check=True)  # fmt: skip
    report = json.loads(child.stdout.strip().splitlines()[-1])
    return report, report.pop("peak")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=50)
    parser.add_argument("--runs", type=int, default=1, help="histories per write")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it")
    args = parser.parse_args()
    import toolkit as tk

    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-compact-"))
    try:
        paths = _histories(work / "in", args.writes * args.runs)
        dataset = work / "ds"
        started = time.perf_counter()
        for first in range(0, len(paths), args.runs):
            tk.write_dataset(paths[first : first + args.runs], dataset, workers=1, progress=False)
        print(f"{args.writes} writes of {args.runs} run(s): {time.perf_counter() - started:.1f} s")
        before, answer = _query(dataset)
        done, peak = _compact_in_child(dataset)
        after, again = _query(dataset)
        assert again == answer and tk.check_dataset(dataset).ok, "compaction changed the answer"
        print(f"files {done['files_before']} -> {done['files_after']}, bytes "
              f"{done['bytes_before']:,} -> {done['bytes_after']:,}, compaction "
              f"{done['seconds']:.2f} s, peak memory of the compacting process {peak:,.0f} MB "
              "(target < 1,000)")  # fmt: skip
        print(f"tk.sql over events: {before * 1000:.0f} ms before, {after * 1000:.0f} ms after")
        second = tk.compact_dataset(dataset)
        print(f"second compaction: {len(second.written)} batches written, {second.seconds:.3f} s")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
