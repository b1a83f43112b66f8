"""Benchmark read_logs against ``[orjson.loads(l) for l in lines]`` measured in the same run.

Generates, in a temporary directory, a 1,000,000-line JSON log (slog-style records with a few
attributes) and a 1,000,000-line mixed text log (slog text, klog, Python logging, Go SDK logger,
Rust tracing, tracebacks and panics), then prints, for each, the read_logs time divided by the
time of ``[orjson.loads(l) for l in lines]`` on the same lines already in memory (target on JSON:
<= 1.0, issue 25; ``--lines 200000 --only json`` is the measurement the issue names). The JSON
baseline is the same in both rows. Three more JSON logs in other loggers' layouts (zap with
epoch-second times, logrus with offsets, structlog with a logger) print their ratio against
orjson over their own lines.

Run: ``.venv/bin/python benchmarks/bench_read_logs.py [--lines N]``.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson
import pandas as pd

from toolkit.logs import read_logs

LEVELS = ["INFO", "DEBUG", "WARN", "ERROR"]


def json_lines(n: int, rng: random.Random) -> list[str]:
    out = []
    for i in range(n):
        sec, frac = divmod(i, 1000)
        record = {
            "time": f"2026-09-27T10:{(sec // 60) % 60:02d}:{sec % 60:02d}.{frac:03d}Z",
            "level": rng.choice(LEVELS),
            "msg": rng.choice(["tool call", "model step", "listing tools", "turn complete"]),
            "workflow_id": f"agent-{i % 97}",
            "activity_type": rng.choice(["InvokeModel", "ListMcpTools", "CallMcpTool"]),
            "attempt": 1 + i % 3,
            "duration_ms": rng.randint(1, 5000),
        }
        out.append(orjson.dumps(record).decode())
    return out


def layout_lines(name: str, n: int, rng: random.Random) -> list[str]:
    """JSON lines as zap, logrus or structlog write them."""
    def zap(i: int) -> dict[str, object]:
        return {"level": rng.choice(["info", "warn", "error"]), "ts": 1727431200.5 + i / 1000,
                "caller": "agent/run.go:42", "msg": rng.choice(["tool call", "listing tools"]),
                "workflow_id": f"agent-{i % 97}", "attempt": 1 + i % 3}

    def logrus(i: int) -> dict[str, object]:
        return {"level": rng.choice(["info", "warning"]), "msg": rng.choice(["tool call", "step"]),
                "time": f"2026-09-27T10:00:{i % 60:02d}+02:00", "workflow_id": f"agent-{i % 97}"}

    def structlog(i: int) -> dict[str, object]:
        return {"event": rng.choice(["tool call", "step"]), "level": rng.choice(["info", "error"]),
                "logger": rng.choice(["agent.runner", "agent.mcp"]), "attempt": i % 5,
                "timestamp": f"2026-09-27T10:00:{i % 60:02d}.{i % 1000:03d}Z"}

    make = {"zap": zap, "logrus": logrus, "structlog": structlog}[name]
    return [orjson.dumps(make(i)).decode() for i in range(n)]


def text_lines(n: int, rng: random.Random) -> list[str]:
    shapes = [
        'time=2026-09-27T10:00:{s:02d}.000Z level=INFO msg="tool call" tool=search attempt={a}',
        'I0927 10:00:{s:02d}.000000       1 controller.go:120] "Reconciling" agent="a-{a}"',
        "2026-09-27 10:00:{s:02d},123 - agent.runner - WARNING - slow model step {a}",
        "2026/09/27 10:00:{s:02d} INFO  Started Worker Namespace default TaskQueue q{a}",
        "2026-09-27T10:00:{s:02d}.000000Z  WARN temporal_sdk_core::worker: poll failed n={a}",
        "plain text line number {a}",
    ]
    block = [
        "2026-09-27 10:00:00,000 ERROR failed",
        "Traceback (most recent call last):",
        '  File "/app/x.py", line 1, in <module>',
        "ValueError: bad",
        "panic: boom",
        "",
        "goroutine 1 [running]:",
        "main.main()",
        "\t/app/main.go:10",
    ]
    out: list[str] = []
    while len(out) < n:
        if rng.random() < 0.01:
            out.extend(block)
        else:
            out.append(rng.choice(shapes).format(s=len(out) % 60, a=len(out) % 7))
    return out[:n]


def best_of(repeats: int, fn: Callable[[], object]) -> tuple[float, object]:
    """Best wall time of ``repeats`` calls, and the last result.

    The previous result is released before the clock starts: freeing a million rows is not part
    of the next call's work (for either side of a ratio).
    """
    best, result = float("inf"), None
    for _ in range(repeats):
        result = None
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", choices=["json", "mixed text", "json layouts"],
                        help="run one of the logs (default: all)")
    args = parser.parse_args()
    rng = random.Random(7)
    json_version = json_lines(args.lines, rng)
    text_version = text_lines(args.lines, rng)

    logs: list[tuple[str, list[str], list[str]]] = [
        ("json", json_version, json_version), ("mixed text", text_version, json_version)]
    if args.only in (None, "json layouts"):
        for layout in ("zap", "logrus", "structlog"):
            lines = layout_lines(layout, args.lines, rng)
            logs.append((layout, lines, lines))
    with tempfile.TemporaryDirectory() as tmp:
        for name, lines, baseline_lines in logs:
            if args.only and name != args.only and not (
                    args.only == "json layouts" and name in ("zap", "logrus", "structlog")):
                continue

            def baseline(baseline_lines: list[str] = baseline_lines) -> object:
                return [orjson.loads(x) for x in baseline_lines]

            path = Path(tmp) / f"{name.replace(' ', '_')}.log"
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
            # Interleaved, so that load from other processes hits both sides alike. The baseline
            # is orjson over JSON lines already in memory (for mixed text: the first JSON log's).
            base, elapsed, frame = float("inf"), float("inf"), None
            for _ in range(args.repeats):
                base = min(base, best_of(1, baseline)[0])
                frame = None
                took, frame = best_of(1, lambda path=path: read_logs(path, progress=False))
                elapsed = min(elapsed, took)
            assert isinstance(frame, pd.DataFrame) and frame["lines"].sum() == args.lines
            print(f"{name:>10}: {args.lines:,} lines  read_logs {elapsed:6.2f}s  "
                  f"orjson baseline {base:6.2f}s  ratio {elapsed / base:5.2f}x  "
                  f"({len(frame):,} records, {frame['format'].nunique()} formats)", flush=True)


if __name__ == "__main__":
    main()
