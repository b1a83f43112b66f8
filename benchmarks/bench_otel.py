"""``tk.to_otel`` against ``read_histories`` alone on the same folder (target: at most 2x).

Builds, in a temporary folder, N runs (default 500) of the lab's agent histories (OpenAI
Agents, pydantic-ai and Python ADK, every recorded release), each copy given a new run id so
that none is dropped as a duplicate and every trace is distinct. Then, in the same run, best of
``--repeat``:

- baseline: ``tk.read_histories(folder)``;
- ``tk.to_otel(folder, path=...)``: read, build the spans and the token ledger, write OTLP JSON;
- the parts on their own, each on a frame just read (its cells undecoded, as ``to_otel`` finds
  them): the ledger, the spans, the OTLP JSON bytes (by the compiled writer where it is built,
  and for comparison orjson of ``otlp_document``'s dicts, the same bytes) and the protobuf
  encoding (written field by field, and for comparison by filling the ``opentelemetry-proto``
  messages, the same bytes).

Times are CPU seconds of this process (``time.process_time``: the machine is shared, and every
step runs in it). First of all, before anything else fills the process, ``read_histories`` and
``to_otel`` as a user calls them (progress bar included) run in ``--rounds`` alternating rounds,
each round's ratio taken within it: their median is the headline ratio. The best-of figures
follow, none timed beside a frame of an earlier run still held (a read into fresh memory beside
one costs a third more). Prints spans per second and the ratios to the baseline.

Usage: ``python benchmarks/bench_otel.py [--runs N] [--repeat R] [--rounds K]``
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import uuid
from pathlib import Path

import orjson
import pandas as pd
from timing import alternating, best_cpu

import toolkit as tk
from toolkit.agents.tokens import genai_attributes, model_calls
from toolkit.traces.otlp import _from_messages, otlp_document, otlp_json, otlp_protobuf
from toolkit.traces.spans import trace_spans

DATA = Path(__file__).resolve().parents[1] / "data"


def _write_runs(out: Path, count: int) -> None:
    templates = []
    for folder in ("openai_agents", "pydantic_ai", "adk"):
        for path in sorted((DATA / folder).rglob("*.json")):
            if path.name.endswith(".meta.json"):
                continue
            run_id = tk.read_history(path)["run_id"].iloc[0]
            templates.append((path.read_text(encoding="utf-8"), run_id))
    for index in range(count):
        text, run_id = templates[index % len(templates)]
        (out / f"run-{index:05d}.json").write_text(text.replace(run_id, str(uuid.uuid4())))


def _request() -> object:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    return ExportTraceServiceRequest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=7, help="alternating CPU rounds")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "runs"
        folder.mkdir()
        _write_runs(folder, args.runs)

        def fresh() -> pd.DataFrame:
            # A frame just read: its cells still undecoded, as to_otel finds them.
            return tk.read_histories(folder, progress=False).events

        out = Path(tmp) / "traces.json"
        tk.to_otel(folder, path=out)  # imports and caches warm for both
        # First, before anything else fills the process: the two in alternating rounds, the
        # ratio taken within each (both see the same machine and process state). Both as a user
        # calls them: to_otel reads the folder as read_histories does by default, progress bar
        # included (the parts below time a frame read without it).
        pairs = alternating(lambda: tk.read_histories(folder),
                            lambda: tk.to_otel(folder, path=out), args.rounds)  # fmt: skip
        ratios = sorted(export / read for read, export in pairs)
        read, _ = best_cpu(fresh, args.repeat)  # no frame held while another is made
        export, done = best_cpu(lambda: tk.to_otel(folder, path=out), args.repeat)
        events = fresh()
        ledger, calls = best_cpu(model_calls, args.repeat, fresh)
        attributes = genai_attributes(calls)
        spans_time, spans = best_cpu(lambda frame: trace_spans(frame, model_attributes=attributes),
                                 args.repeat, fresh)  # fmt: skip
        resource = {"service.name": "bench"}
        as_json, written = best_cpu(lambda: otlp_json(spans, resource), args.repeat)
        dicts, dumped = best_cpu(lambda: orjson.dumps(otlp_document(spans, resource)), args.repeat)
        assert written == dumped  # the same bytes either way
        as_proto, encoded = best_cpu(lambda: otlp_protobuf(spans, resource), args.repeat)
        messages, filled = best_cpu(lambda: _from_messages(spans, resource,
                                                           _request()), args.repeat)  # fmt: skip
        assert encoded == filled  # the same bytes either way
    count = len(done.spans)
    print(f"{args.runs} runs, {len(events):,} events, {count:,} spans, "
          f"{len(calls):,} model calls (CPU seconds, best of {args.repeat})")
    print(f"to_otel against read_histories: ratio {statistics.median(ratios):.2f}x (target "
          f"<= 2), the median of {len(pairs)} alternating rounds ({ratios[0]:.2f}x at best)")
    print(f"read_histories        {read:8.3f} s")
    print(f"to_otel (path=)       {export:8.3f} s   {count / export:,.0f} spans/s   "
          f"ratio {export / read:.2f}x read_histories (best of each)")
    print(f"  model_calls         {ledger:8.3f} s   {ledger / read:.2f}x")
    print(f"  trace_spans         {spans_time:8.3f} s   {spans_time / read:.2f}x")
    print(f"  OTLP JSON bytes     {as_json:8.3f} s   {as_json / read:.2f}x   "
          f"(dicts + orjson: {dicts:.3f} s, {dicts / read:.2f}x)")
    print(f"  OTLP protobuf       {as_proto:8.3f} s   {as_proto / read:.2f}x   "
          f"(messages filled: {messages:.3f} s, {messages / read:.2f}x)")


if __name__ == "__main__":
    main()
