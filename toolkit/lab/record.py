"""``make record``: regenerate ``data/`` from scratch on the embedded dev server.

Every recorder runs against one dev server started here (and stopped by PID at the end):

=================  ============================================================================
part               what it writes
=================  ============================================================================
``adk``            real google-adk stacks across versions (each in its own virtual environment),
                   every scenario, and the Python replay matrix: ``data/adk/``
``go_twin``        the Go plugin twin, every scenario x variant, and its replay matrix:
                   ``data/go_twin/``
``gallery``        the gallery of workflow code changes, replayed both ways: ``data/gallery/``
``duplicate_tool`` the hosted-runtime reconstruction of the duplicate-tool incident:
                   ``data/duplicate_tool/``
``openai_agents``  OpenAI Agents on temporalio's integration across openai-agents releases (each
                   in its own virtual environment) and its replay matrix: ``data/openai_agents/``
``pydantic_ai``    pydantic-ai's Temporal integration across pydantic-ai releases, and its replay
                   matrix: ``data/pydantic_ai/``
``flag_pairs``     the same workflows under temporalio releases on either side of SDK flags, and
                   ids built from the workflow id, replayed by each release: ``data/flag_pairs/``
``history_budget`` long tool loops of ADK, OpenAI Agents and pydantic-ai until the server stops
                   them, each group on its own dev server with lowered limits (the shared one
                   is not used): ``data/history_budget/``
=================  ============================================================================

Usage: ``python -m toolkit.lab.record --data data [--only adk go_twin ...]``. Minutes are fine:
the multi-version ADK part builds several virtual environments from PyPI the first time.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

from toolkit.lab.server import DevServer

__all__ = ["PARTS", "main", "record", "scrub_machine_paths", "scrub_text"]


def _adk(data: Path, address: str) -> object:
    from toolkit.lab.adk_python import record_all

    return record_all(data, address)


def _go_twin(data: Path, address: str) -> object:
    from toolkit.lab.go_twin import record_all

    return record_all(data, address)


def _gallery(data: Path, address: str) -> object:
    from toolkit.lab.gallery import record_gallery

    return record_gallery(data, address)


def _duplicate_tool(data: Path, address: str) -> object:
    from toolkit.lab.hosted_runtime.record import record_lab

    return record_lab(data, address)


def _openai_agents(data: Path, address: str) -> object:
    from toolkit.lab.openai_agents import record_all

    return record_all(data, address)


def _pydantic_ai(data: Path, address: str) -> object:
    from toolkit.lab.pydantic_ai import record_all

    return record_all(data, address)


def _flag_pairs(data: Path, address: str) -> object:
    from toolkit.lab.flag_pairs.record import record_all

    return record_all(data, address)


def _history_budget(data: Path, address: str) -> object:
    from toolkit.lab.history_budget import record_all

    return record_all(data)  # its own dev servers: the limits are set when a server starts


PARTS: dict[str, Callable[[Path, str], object]] = {
    "go_twin": _go_twin,
    "gallery": _gallery,
    "duplicate_tool": _duplicate_tool,
    "adk": _adk,
    "openai_agents": _openai_agents,
    "pydantic_ai": _pydantic_ai,
    "flag_pairs": _flag_pairs,
    "history_budget": _history_budget,
}


# Recorded stack traces and worker logs name files on the recording machine; the committed data
# names them relative to the repository (or to the interpreter's prefix) instead.
_MACHINE_PREFIXES = (
    (str(Path(__file__).resolve().parents[2]) + "/", ""),
    (str(Path(sys.base_prefix)) + "/", "<python>/"),
)
_TEXT_SUFFIXES = (".json", ".jsonl", ".log", ".csv", ".txt")


def scrub_text(text: str) -> str:
    """``text`` with this machine's absolute paths made relative (see ``_MACHINE_PREFIXES``)."""
    for prefix, replacement in _MACHINE_PREFIXES:
        text = text.replace(prefix, replacement)
    return text


def scrub_machine_paths(root: Path) -> int:
    """Rewrite absolute paths of this machine in the text files under ``root``; returns files."""
    changed = 0
    for path in root.rglob("*"):
        if not path.is_file() or path.suffix not in _TEXT_SUFFIXES or "venvs" in path.parts:
            continue
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        new = scrub_text(text)
        if new != text:
            path.write_text(new, encoding="utf-8", errors="surrogateescape")
            changed += 1
    return changed


def record(data: Path, only: list[str] | None = None) -> dict[str, float]:
    """Record the chosen parts (all by default) into ``data``; returns seconds per part."""
    chosen = only or list(PARTS)
    unknown = sorted(set(chosen) - set(PARTS))
    if unknown:
        raise SystemExit(f"unknown parts {unknown}; choose from {sorted(PARTS)}")
    data.mkdir(parents=True, exist_ok=True)
    seconds: dict[str, float] = {}
    with DevServer() as server:
        for name in chosen:
            start = time.perf_counter()
            print(f"[record] {name} ...", flush=True)
            PARTS[name](data, server.address)
            seconds[name] = time.perf_counter() - start
            print(f"[record] {name} done in {seconds[name]:.0f} s", flush=True)
    scrub_machine_paths(data)
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m toolkit.lab.record", description=__doc__)
    parser.add_argument("--data", type=Path, default=Path("data"))
    parser.add_argument("--only", nargs="*", help=f"parts to record (default: {list(PARTS)})")
    args = parser.parse_args(argv)
    record(args.data, args.only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
