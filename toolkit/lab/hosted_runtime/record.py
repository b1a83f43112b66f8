"""Record the duplicate-tool lab into ``data/duplicate_tool/``.

``go/``: the hosted runtime (the Go service's reconstruction) on the real MCP server, before and
after the endpoint fix: slog logs (``before.log`` and ``after.log`` in text, ``before.jsonl`` in
JSON), the MCP request logs (``*.mcp.jsonl``), the agent's registry (``registry.json``) and
``meta.json`` (outcomes per command, tool calls seen by the server per query string).

``python/``: real google-adk on the dev server (see :mod:`.adk_capture`).
"""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

from toolkit.lab.hosted_runtime.bus import CommandOutcome
from toolkit.lab.hosted_runtime.registry import agent_servers
from toolkit.lab.hosted_runtime.runtime import RuntimeOptions, run_session
from toolkit.lab.mcp_server import McpServer

__all__ = ["RUNS", "TURNS", "record_go", "record_lab"]

TURNS = ["Hello there.", "What is the weather in Paris?"]
"""A plain text turn, then a turn that asks for a tool."""

# (file stem, slog format, endpoint fix)
RUNS: tuple[tuple[str, str, bool], ...] = (
    ("before", "text", False),
    ("after", "text", True),
    ("before", "json", False),
)


def _outcome(outcome: CommandOutcome) -> dict[str, Any]:
    result = outcome.result
    return {"command_id": outcome.command.id, "text": outcome.command.text,
            "status": outcome.status, "deliveries": outcome.deliveries, "error": outcome.error,
            "reply": getattr(result, "text", None),
            "function_response_part_count": getattr(result, "function_response_part_count", 0),
            "served_by": getattr(result, "served_by", None)}


def _calls(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    counts = Counter((r["query"], r["tool"]) for r in requests if r["mcp_method"] == "tools/call")
    return [{"query": q, "tool": t, "count": n} for (q, t), n in sorted(counts.items())]


def record_go(out_dir: Path, *, backoff: float = 0.1) -> list[Path]:
    """Run the hosted runtime before and after the fix; write logs and metadata to ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    options = RuntimeOptions(backoff=backoff)
    runs, written = [], []
    for stem, fmt, fix in RUNS:
        log_path = out_dir / (f"{stem}.log" if fmt == "text" else f"{stem}.jsonl")
        request_log = out_dir / f"{stem}.{fmt}.mcp.jsonl"
        with McpServer(request_log=request_log) as mcp:
            stream = io.StringIO()
            outcomes = run_session(mcp.url, TURNS, stream, fmt=fmt, endpoint_fix=fix,  # type: ignore[arg-type]
                                   backoff=backoff, token=options.token)
            requests = mcp.requests()
            url = mcp.url
        request_log.with_suffix(".stderr.log").unlink(missing_ok=True)
        log_path.write_text(stream.getvalue(), encoding="utf-8")
        written += [log_path, request_log]
        registry, ids = agent_servers(url, session_memory=options.session_memory,
                                      token=options.token)
        runs.append({"log": log_path.name, "format": fmt, "endpoint_fix": fix,
                     "mcp_request_log": request_log.name, "mcp_url": url,
                     "registry": {"mcpServers": registry.as_configs(ids)},
                     "commands": [_outcome(o) for o in outcomes], "tool_calls": _calls(requests)})
    registry_path = out_dir / "registry.json"
    registry_path.write_text(json.dumps(runs[0]["registry"], indent=1) + "\n", encoding="utf-8")
    meta = {"what": "hosted-agent runtime (Go service reconstruction) on the lab's MCP server, "
                    "session memory on, before and after the endpoint fix",
            "turns": TURNS, "max_deliveries": options.max_deliveries, "backoff_seconds": backoff,
            "session_token": options.token, "runs": runs}
    meta_path = out_dir / "meta.json"
    meta_path.write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return [*written, registry_path, meta_path]


def record_lab(data_dir: Path, server_address: str) -> list[Path]:
    """Everything under ``data_dir/duplicate_tool``: ``go/`` and ``python/``."""
    from toolkit.lab.hosted_runtime.adk_capture import capture_python_duplicate_tools

    root = Path(data_dir) / "duplicate_tool"
    return record_go(root / "go") + capture_python_duplicate_tools(server_address,
                                                                  root / "python")
