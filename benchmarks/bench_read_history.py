"""How fast is read_history on a history at the server's hard limit (51,200 events)?

Builds the history by tiling the activity/workflow-task events of a real recorded history (ids and
links renumbered), writes it as CLI-style proto-JSON (~43 MiB) and as binary protobuf, then prints,
from one run, ratios against baselines measured on the same bytes in the same process (CPU time of
the process, the best of ``--repeat`` runs; the median is printed too):

- read_history(JSON) / orjson.loads            target <= 0.3 (issue 25)
- read_history(binary) / orjson.loads          target <= 0.1 (issue 25)
- pd.json_normalize(events) / read_history     (how much slower the by-hand way is)
- WorkflowHistory.from_json / read_history     target >= 20
- peak memory of each (tracemalloc, separate runs)

The parsers are timed while the process holds little else: ``orjson.loads`` builds ~2 million
objects with the cyclic collector on (as a user would call it), and every full collection scans
whatever else is alive, so timing it next to the benchmark's own parsed copy of the history made
the baseline ~50% slower than in a fresh process. The parsed events that ``json_normalize``
needs are made afterwards. ``orjson.loads (gc off)`` is printed for reference: the parse alone.

Usage: ``python benchmarks/bench_read_history.py [--events 51200] [--repeat 3] [--source FILE]``
(the default seed is the lab's recorded google-adk two-turn history in ``data/adk``).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
from google.protobuf import json_format
from temporalio.api.history.v1 import History
from temporalio.client import WorkflowHistory

import toolkit as tk

ROOT = Path(__file__).resolve().parents[1]


def _shift_ids(value: Any, start: int, offset: int) -> Any:
    """Shift every ``*EventId`` at or after ``start`` by ``offset`` (recursively)."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key.endswith("EventId") and str(item).lstrip("-").isdigit() and int(item) >= start:
                out[key] = str(int(item) + offset)
            else:
                out[key] = _shift_ids(item, start, offset)
        return out
    if isinstance(value, list):
        return [_shift_ids(v, start, offset) for v in value]
    return value


def build_large_history(source: Path, target: int) -> dict[str, Any]:
    """Tile the middle of a real history until it holds ``target`` events."""
    events = orjson.loads(Path(source).read_bytes())["events"]
    first_completed = next(
        i for i, e in enumerate(events) if e["eventType"].endswith("WORKFLOW_TASK_COMPLETED")
    )
    head = events[: first_completed + 1]
    block = events[first_completed + 1 : -1]
    tail = events[-1:]
    block_start = int(block[0]["eventId"])
    out = list(head)
    copy = 0
    while len(out) + len(tail) < target:
        offset = copy * len(block)
        for event in block:
            if len(out) + len(tail) >= target:
                break
            shifted = _shift_ids(event, block_start, offset)
            shifted["eventId"] = str(int(event["eventId"]) + offset)
            out.append(shifted)
        copy += 1
    last = len(out)
    for event in tail:
        closing = _shift_ids(event, block_start, last - block_start + 1)
        closing["eventId"] = str(last + 1)
        out.append(closing)
    return {"events": out}


def _best(fn: Callable[[], Any], repeat: int) -> float:
    """The least CPU time of ``repeat`` runs (steadier than the wall clock on a shared machine);
    the median goes to ``_MEDIANS``."""
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    _MEDIANS.append(statistics.median(times))
    return min(times)


_MEDIANS: list[float] = []


def _without_gc(fn: Callable[[], Any]) -> Any:
    gc.disable()
    try:
        return fn()
    finally:
        gc.enable()


def _peak(fn: Callable[[], Any]) -> float:
    gc.collect()
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=51_200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--source", type=Path, help="a real proto-JSON history to tile")
    args = parser.parse_args()
    # Default seed: a real agent history recorded by the lab (google-adk on temporalio).
    source = args.source or ROOT / "data" / "adk" / "adk-2.13.0" / "two_turns.json"
    if not source.exists():
        sys.exit(f"no seed history at {source}; pass --source FILE (any recorded proto-JSON)")
    history = build_large_history(source, args.events)
    count = len(history["events"])
    json_bytes = orjson.dumps(history, option=orjson.OPT_INDENT_2)
    binary = json_format.ParseDict(history, History()).SerializeToString()
    del history  # keep the heap small while the parsers are timed (see the docstring)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "big.json").write_bytes(json_bytes)
    text = json_bytes.decode()
    print(
        f"history: {count:,} events, JSON {len(json_bytes) / 2**20:.1f} MiB, "
        f"binary {len(binary) / 2**20:.1f} MiB (tiled from {source.name})"
    )
    assert len(tk.read_history(json_bytes)) == count == args.events
    assert len(tk.read_history(binary)) == args.events

    runs: dict[str, Callable[[], Any]] = {
        "orjson.loads": lambda: orjson.loads(json_bytes),
        "orjson.loads (gc off)": lambda: _without_gc(lambda: orjson.loads(json_bytes)),
        "read_history(json)": lambda: tk.read_history(json_bytes),
        "read_history(binary)": lambda: tk.read_history(binary),
        "read_history(json, no payloads)": lambda: tk.read_history(
            json_bytes, decode_payloads=False
        ),
        "WorkflowHistory.from_json": lambda: WorkflowHistory.from_json("bench", text),
    }
    seconds = {
        name: _best(fn, args.repeat if "from_json" not in name else 1) for name, fn in runs.items()
    }
    medians = dict(zip(runs, _MEDIANS, strict=True))
    peaks = {name: _peak(fn) for name, fn in runs.items() if "from_json" not in name}
    events = orjson.loads(json_bytes)["events"]  # only now: json_normalize needs them parsed
    seconds["pd.json_normalize(events)"] = _best(lambda: pd.json_normalize(events), args.repeat)
    peaks["pd.json_normalize(events)"] = _peak(lambda: pd.json_normalize(events))
    base = seconds["orjson.loads"]
    medians["pd.json_normalize(events)"] = _MEDIANS[-1]
    print(f"\n{'run (CPU seconds)':34} {'best':>8} {'median':>8} {'x orjson':>9} {'peak MiB':>9}")
    for name, value in seconds.items():
        peak = f"{peaks[name]:9.0f}" if name in peaks else f"{'-':>9}"
        print(f"{name:34} {value:8.3f} {medians[name]:8.3f} {value / base:9.2f} {peak}")
    json_ratio = seconds["read_history(json)"] / base
    binary_ratio = seconds["read_history(binary)"] / base
    normalize_ratio = seconds["pd.json_normalize(events)"] / seconds["read_history(json)"]
    from_json_ratio = seconds["WorkflowHistory.from_json"] / seconds["read_history(json)"]
    print("\nratios (targets in brackets)")
    print(f"  read_history(json)   / orjson.loads : {json_ratio:6.2f}  [<= 0.30]")
    print(f"  read_history(binary) / orjson.loads : {binary_ratio:6.2f}  [<= 0.10]")
    print(f"  json_normalize       / read_history : {normalize_ratio:6.2f}")
    print(f"  from_json            / read_history : {from_json_ratio:6.2f}  [>= 20]")


if __name__ == "__main__":
    main()
