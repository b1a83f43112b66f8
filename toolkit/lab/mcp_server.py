"""A real MCP server for the lab: streamable HTTP on 127.0.0.1, in its own process, request log.

The server is the ``mcp`` package's ``MCPServer`` served by uvicorn in a subprocess
(``python -m toolkit.lab.mcp_server --port P ...``) so that it never blocks the caller's event
loop, and is stopped by its PID. Every HTTP request is appended to a JSON-lines log: HTTP method,
path, query string and, for each JSON-RPC message in a POST body, the MCP method (``tools/list``,
``tools/call`` ...) and the tool name. The query string is what tells two toolsets on one endpoint
apart (``/mcp`` versus ``/mcp?token=...``).

Tools (deterministic results): ``get_weather(city)``, ``add(a, b)``, ``lookup_order(order_id)``.

Options reproduce the tool-list shapes the incidents depend on:

* ``hide_after_first_call``: a tool stops being advertised in ``tools/list`` once it has been
  called (it stays callable);
* ``list_twice``: ``tools/list`` lists every tool twice under the same name.

With ``pages`` the server also has ``read_page(page, size)``, a tool whose result is exactly
``size`` bytes of text: the tool output of a configured size the history-budget recordings need
(:mod:`toolkit.lab.history_budget`).

Examples
--------
In a test (the server is a context manager; ``.url`` is what an MCP client connects to)::

    from toolkit.lab.mcp_server import McpServer

    def test_lists_twice(tmp_path):
        with McpServer(list_twice=True, request_log=tmp_path / "mcp.jsonl") as server:
            run_agent(server.url)                  # e.g. http://127.0.0.1:PORT/mcp
            calls = [r for r in server.requests() if r["mcp_method"] == "tools/call"]
            assert calls[0]["tool"] == "get_weather"

or as a pytest fixture::

    @pytest.fixture
    def mcp_server(tmp_path):
        with McpServer(request_log=tmp_path / "mcp.jsonl") as server:
            yield server
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from toolkit.errors import LabError, LocatedError, ToolkitError
from toolkit.lab.model import PAGE_TOOL  # the tool a server with pages=True adds
from toolkit.lab.processes import process_env, stop_process_group
from toolkit.lab.server import free_port

__all__ = [
    "PAGE_TOOL", "TOOL_NAMES", "McpServer", "add", "filler_text", "get_weather", "lookup_order",
    "read_page", "read_request_log",
]

HOST = "127.0.0.1"
MCP_PATH = "/mcp"

_WEATHER = {"paris": ("sunny", 21), "london": ("rainy", 14), "tokyo": ("cloudy", 18)}


def get_weather(city: str) -> str:
    """Return a fixed weather report for ``city`` (unknown cities get a default)."""
    sky, degrees = _WEATHER.get(city.strip().lower(), ("clear", 20))
    return f"The weather in {city} is {sky}, {degrees} °C."


def add(a: int, b: int) -> int:
    """Return ``a + b``."""
    return a + b


def lookup_order(order_id: str) -> str:
    """Return a fixed status line for ``order_id``."""
    return f"Order {order_id}: shipped, arriving in 2 days."


_FILLER = ("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor "
           "incididunt ut labore et dolore magna aliqua ")


def filler_text(size: int, head: str = "") -> str:
    """``head`` followed by deterministic ASCII words, exactly ``size`` characters (and UTF-8
    bytes) long: no quote, backslash or control character, so JSON adds nothing to it."""
    if size <= len(head):
        return head[:max(size, 0)]
    body = size - len(head)
    return head + (_FILLER * (body // len(_FILLER) + 1))[:body]


def read_page(page: int, size: int) -> str:
    """Return page ``page`` of the lab's report: exactly ``size`` characters of text."""
    return filler_text(size, f"Page {page} of the report. ")


TOOL_NAMES: tuple[str, ...] = ("get_weather", "add", "lookup_order")


# --------------------------------------------------------------------------- server process side


def _build_mcp(hide_after_first_call: frozenset[str], list_twice: bool,
               pages: bool = False) -> Any:
    """The MCPServer with the lab's tools and listing options (imports ``mcp`` lazily)."""
    from mcp.server.mcpserver import MCPServer

    class LabMcpServer(MCPServer):  # type: ignore[misc,type-arg]
        """MCPServer whose tool list follows the lab's options."""

        called: set[str] = set()  # noqa: RUF012 - one server per process, state is per process

        async def list_tools(self) -> list[Any]:
            tools = [t for t in await super().list_tools() if t.name not in self._hidden()]
            # Same name twice, in listing order: what a misbehaving server would send.
            return [t for t in tools for _ in range(2)] if list_twice else tools

        def _hidden(self) -> set[str]:
            return self.called & hide_after_first_call

        async def call_tool(
            self, name: str, arguments: dict[str, Any], *args: Any, **kw: Any
        ) -> Any:
            self.called.add(name)
            return await super().call_tool(name, arguments, *args, **kw)

    server = LabMcpServer(name="toolkit-lab", log_level="WARNING", warn_on_duplicate_tools=False)
    for tool in (get_weather, add, lookup_order, *((read_page,) if pages else ())):
        server.add_tool(tool)
    return server


def _rpc_summaries(body: bytes) -> list[dict[str, Any]]:
    """MCP method and tool name of each JSON-RPC message in a POST body (batch or single)."""
    try:
        decoded = json.loads(body) if body else None
    except ValueError:
        return [{"mcp_method": None, "tool": None, "rpc_id": None, "body_error": "not JSON"}]
    messages = decoded if isinstance(decoded, list) else [decoded]
    summaries = []
    for message in messages:
        if not isinstance(message, dict):
            summaries.append({"mcp_method": None, "tool": None, "rpc_id": None})
            continue
        params = message.get("params")
        tool = params.get("name") if isinstance(params, dict) and message.get("method") == (
            "tools/call"
        ) else None
        summaries.append(
            {"mcp_method": message.get("method"), "tool": tool, "rpc_id": message.get("id")}
        )
    return summaries


class _RequestLogger:
    """ASGI middleware appending one JSON line per request (per JSON-RPC message in POSTs)."""

    def __init__(self, app: Any, log_path: Path) -> None:
        self.app = app
        self.log_path = log_path
        self.sequence = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # Read the whole body first, then replay it to the app: the app sees the same bytes.
        chunks: list[dict[str, Any]] = []
        body = b""
        more = True
        while more:
            message = await receive()
            chunks.append(message)
            body += message.get("body", b"")
            more = message.get("type") == "http.request" and message.get("more_body", False)
        self._log(scope, body)

        async def replay() -> dict[str, Any]:
            return chunks.pop(0) if chunks else await receive()

        await self.app(scope, replay, send)

    def _log(self, scope: dict[str, Any], body: bytes) -> None:
        base = {
            "time": time.time(),
            "method": scope["method"],
            "path": scope["path"],
            "query": scope.get("query_string", b"").decode("latin-1"),
        }
        rows = _rpc_summaries(body) if scope["method"] == "POST" else [
            {"mcp_method": None, "tool": None, "rpc_id": None}
        ]
        with self.log_path.open("a", encoding="utf-8") as log:
            for row in rows:
                self.sequence += 1
                log.write(json.dumps({"seq": self.sequence, **base, **row}) + "\n")


def serve(
    port: int, log_path: Path, hide_after_first_call: Sequence[str], list_twice: bool,
    pages: bool = False,
) -> None:
    """Serve the lab's MCP server on 127.0.0.1:``port`` until terminated (blocking)."""
    import uvicorn

    mcp = _build_mcp(frozenset(hide_after_first_call), list_twice, pages)
    asgi = mcp.streamable_http_app(streamable_http_path=MCP_PATH, host=HOST)
    app = _RequestLogger(asgi, log_path)
    uvicorn.run(app, host=HOST, port=port, log_level="warning", lifespan="on")


def _main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="The lab's MCP server (streamable HTTP).")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--request-log", type=Path, required=True)
    parser.add_argument("--hide-after-first-call", action="append", default=[])
    parser.add_argument("--list-twice", action="store_true")
    parser.add_argument("--pages", action="store_true")
    args = parser.parse_args(argv)
    serve(args.port, args.request_log, args.hide_after_first_call, args.list_twice, args.pages)


# --------------------------------------------------------------------------- caller side


def read_request_log(path: str | Path, error: type[ToolkitError] = LabError
                     ) -> list[dict[str, Any]]:
    """The records of a request log written by ``--request-log`` (JSON lines), oldest first.

    Blank lines are skipped.

    Parameters
    ----------
    path
        The log file (it must exist).
    error
        Class of the error raised for a bad line (``LabError`` by default). A
        :class:`~toolkit.errors.LocatedError` subclass (e.g. ``LogFormatError``) gets the file as
        ``source`` and ``line N`` as ``position``.

    Raises
    ------
    error
        A line is not a JSON object (the message names the file and the line number).
    """
    path = Path(path)

    def bad(number: int, problem: str) -> ToolkitError:
        expected = "one JSON object per line"
        if issubclass(error, LocatedError):
            return error(str(path), problem, position=f"line {number}", expected=expected)
        return error(f"{path} line {number}: {problem}; expected {expected}")

    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as problem:
            raise bad(number, f"not JSON ({problem})") from problem
        if not isinstance(record, dict):
            raise bad(number, "not a JSON object")
        records.append(record)
    return records


class McpServer:
    """The lab's MCP server in a subprocess, started and stopped by this object.

    Parameters
    ----------
    hide_after_first_call
        Tool names that disappear from ``tools/list`` after their first ``tools/call``.
    list_twice
        List every tool twice (same name) in ``tools/list``.
    pages
        Add the ``read_page(page, size)`` tool.
    request_log
        JSON-lines file receiving one record per request (emptied at start); a temporary file
        when omitted.
    startup_timeout
        Seconds to wait for the port to accept connections.

    Attributes
    ----------
    url : str
        ``http://127.0.0.1:PORT/mcp`` while running.
    pid : int or None
        The server process id while it runs.
    """

    def __init__(
        self,
        *,
        hide_after_first_call: Iterable[str] = (),
        list_twice: bool = False,
        pages: bool = False,
        request_log: Path | None = None,
        startup_timeout: float = 30.0,
    ) -> None:
        self.hide_after_first_call = tuple(hide_after_first_call)
        self.list_twice = list_twice
        self.pages = pages
        self.startup_timeout = startup_timeout
        self._tmpdir: tempfile.TemporaryDirectory[str] | None = None
        if request_log is None:
            self._tmpdir = tempfile.TemporaryDirectory(prefix="toolkit-mcp-")
            request_log = Path(self._tmpdir.name) / "requests.jsonl"
        self.request_log = Path(request_log)
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr_path = self.request_log.with_suffix(".stderr.log")

    @property
    def url(self) -> str:
        if self._process is None:
            raise LabError("McpServer.url: the server is not running; call start() first")
        return f"http://{HOST}:{self.port}{MCP_PATH}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def start(self) -> McpServer:
        """Start the server process and wait until its port accepts connections."""
        if self._process is not None:
            return self
        self.request_log.parent.mkdir(parents=True, exist_ok=True)
        self.request_log.write_text("", encoding="utf-8")  # a fresh server, a fresh log
        self.port = free_port(HOST)
        args = [sys.executable, "-m", "toolkit.lab.mcp_server", "--port", str(self.port),
                "--request-log", str(self.request_log)]
        for name in self.hide_after_first_call:
            args += ["--hide-after-first-call", name]
        if self.list_twice:
            args.append("--list-twice")
        if self.pages:
            args.append("--pages")
        with self._stderr_path.open("wb") as stderr:
            self._process = subprocess.Popen(
                args, stdout=subprocess.DEVNULL, stderr=stderr, stdin=subprocess.DEVNULL,
                env=process_env(), start_new_session=True,
            )
        self._wait_listening()
        return self

    def _wait_listening(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                output = self._stderr_path.read_text(errors="replace")[-2000:]
                code = self._process.returncode
                self._process = None
                raise LabError(f"MCP server exited with code {code} on port {self.port}: {output}")
            with contextlib.suppress(OSError), socket.create_connection((HOST, self.port), 0.2):
                return
            time.sleep(0.05)
        self.stop()
        raise LabError(f"MCP server on {HOST}:{self.port} not listening after "
                       f"{self.startup_timeout:.0f} s")

    def stop(self) -> None:
        """Stop the server by PID (SIGTERM, then SIGKILL). The request log is kept until GC."""
        process, self._process = self._process, None
        if process is not None:
            stop_process_group(process)

    def requests(self) -> list[dict[str, Any]]:
        """The logged requests, oldest first.

        Each record has ``seq``, ``time``, ``method``, ``path``, ``query``, ``mcp_method``,
        ``tool`` and ``rpc_id`` (one record per JSON-RPC message of a POST body).

        Raises
        ------
        LabError
            When a log line is not a JSON object (names the file and line number).
        """
        if not self.request_log.exists():
            return []
        return read_request_log(self.request_log)

    def __enter__(self) -> McpServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"{self.url}, pid={self.pid}" if self._process else "stopped"
        return f"McpServer({state})"


if __name__ == "__main__":
    _main()
