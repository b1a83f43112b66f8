"""``tk.investigate`` against ``read_histories`` alone on the same folder (target: at most 2x).

Builds, in a temporary folder, N runs (default 1,000) of mixed lab histories (the Python ADK
runs of every recorded release, the Go plugin twin, the gallery), each copy given a new run id
so that none is dropped as a duplicate, plus a worker log of L lines (default 100,000) made of
the lab's real log lines (the duplicate-tool runtime's and the ADK workers'). Then, in the same
run, best of ``--repeat``:

- baseline: ``tk.read_histories(folder)``;
- ``tk.investigate(folder)`` (histories only) and ``tk.investigate(folder, logs=log)``;
- ``tk.read_logs(log)`` alone, to show what the log part costs on its own.

Usage: ``python benchmarks/bench_investigate.py [--runs N] [--log-lines L] [--repeat R]``
"""

from __future__ import annotations

import argparse
import tempfile
import uuid
from pathlib import Path

from timing import best

import toolkit as tk

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"


def _templates() -> list[tuple[str, str]]:
    """(text, run id) of every recorded lab history."""
    found = []
    for folder in ("adk", "go_twin", "gallery"):
        for path in sorted((DATA / folder).rglob("*.json")):
            if path.name.endswith(".meta.json") or path.name == "case.json":
                continue
            try:
                events = tk.read_history(path)
            except tk.ToolkitError:
                continue
            run_id = events["run_id"].iloc[0] if len(events) else None
            if isinstance(run_id, str) and len(run_id) >= 32:
                found.append((path.read_text(encoding="utf-8"), run_id))
    return found


def _write_runs(out: Path, count: int) -> None:
    templates = _templates()
    for index in range(count):
        text, run_id = templates[index % len(templates)]
        (out / f"run-{index:05d}.json").write_text(text.replace(run_id, str(uuid.uuid4())))


def _write_log(path: Path, lines: int) -> None:
    sources = [DATA / "duplicate_tool" / "go" / "before.log",
               DATA / "duplicate_tool" / "go" / "after.log",
               DATA / "duplicate_tool" / "python" / "worker.log",
               *sorted((DATA / "adk").glob("*/logs/*.log"))]  # fmt: skip
    pool = [line for p in sources if p.is_file() for line in p.read_text().splitlines() if line]
    with path.open("w", encoding="utf-8") as out:
        for index in range(lines):
            out.write(pool[index % len(pool)] + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--log-lines", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "histories"
        folder.mkdir()
        _write_runs(folder, args.runs)
        log = Path(tmp) / "worker.log"
        _write_log(log, args.log_lines)
        read, batch = best(lambda: tk.read_histories(folder, progress=False), args.repeat)
        runs = batch.events.groupby(["source", "history"]).ngroups
        alone, found = best(lambda: tk.investigate(folder), args.repeat)
        logs_only, _ = best(lambda: tk.read_logs(log), args.repeat)
        both, found_all = best(lambda: tk.investigate(folder, logs=log), args.repeat)
    print(f"{runs} runs, {len(batch.events)} events; {args.log_lines} log lines")
    print(f"read_histories             {read:7.2f} s  {1000 * read / runs:6.2f} ms/run")
    print(f"investigate (histories)    {alone:7.2f} s  {1000 * alone / runs:6.2f} ms/run  "
          f"ratio {alone / read:.2f} (target <= 2)")  # fmt: skip
    print(f"read_logs                  {logs_only:7.2f} s")
    print(f"investigate (+ logs)       {both:7.2f} s  {1000 * both / runs:6.2f} ms/run  "
          f"ratio {both / (read + logs_only):.2f} to read_histories + read_logs")  # fmt: skip
    print(f"findings: {found_all.findings['kind'].value_counts().to_dict()}")
    assert len(found.runs) == runs  # every run read is a run investigated


if __name__ == "__main__":
    main()
