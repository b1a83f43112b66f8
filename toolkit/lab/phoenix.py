"""A real trace receiver for the lab and the tests: Arize Phoenix (PyPI ``arize-phoenix``).

Phoenix is started as its own process (``phoenix serve``, the script next to the running
interpreter) on 127.0.0.1 and free ports, with its SQLite database in a temporary folder, and is
stopped by its PID. It takes OTLP/HTTP (protobuf) at ``traces_endpoint`` and hands the spans it
stored back through its REST API (:meth:`PhoenixServer.spans`). The extra ``otel`` installs it.

Examples
--------
>>> from toolkit.lab.phoenix import PhoenixServer
>>> with PhoenixServer() as phoenix:                                  # doctest: +SKIP
...     tk.to_otel(events, endpoint=phoenix.traces_endpoint)
...     phoenix.spans()
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

import orjson

from toolkit.errors import ServerError
from toolkit.lab.processes import stop_process_group
from toolkit.lab.server import free_port

__all__ = ["PhoenixServer", "find_phoenix"]


def find_phoenix() -> Path:
    """The ``phoenix`` script of PyPI ``arize-phoenix`` (next to the interpreter, else on PATH).

    Raises
    ------
    ServerError
        When it is not installed; the message says how to install it.
    """
    candidates = [Path(sys.executable).parent / "phoenix"]
    on_path = shutil.which("phoenix")
    if on_path:
        candidates.append(Path(on_path))
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise ServerError(
        "no `phoenix` script found (looked at " + ", ".join(map(str, candidates)) + "); "
        "install the toolkit's extra: pip install 'temporal-agent-toolkit[otel]'"
    )


class PhoenixServer:
    """An Arize Phoenix process on 127.0.0.1, started and stopped by this object.

    Parameters
    ----------
    startup_timeout
        Seconds to wait for ``/healthz`` (Phoenix imports for about 20 s on a busy 2-core
        machine).

    Attributes
    ----------
    url : str
        ``http://127.0.0.1:<port>``: the web UI and the REST API.
    traces_endpoint : str
        Where OTLP/HTTP spans go (``<url>/v1/traces``).
    pid : int or None
        The process id while it runs.
    """

    def __init__(self, *, startup_timeout: float = 180.0) -> None:
        self.script = find_phoenix()
        self.host = "127.0.0.1"
        self.port = free_port()
        self.startup_timeout = startup_timeout
        self.startup_seconds: float | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._workdir: tempfile.TemporaryDirectory[str] | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def traces_endpoint(self) -> str:
        return f"{self.url}/v1/traces"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def start(self) -> PhoenixServer:
        """Start Phoenix and wait until ``/healthz`` answers (``startup_seconds`` says how long)."""
        if self._process is not None:
            return self
        began = time.monotonic()
        self._workdir = tempfile.TemporaryDirectory(prefix="toolkit-phoenix-")
        log_path = Path(self._workdir.name) / "phoenix.log"
        env = {
            **os.environ,
            "PHOENIX_WORKING_DIR": self._workdir.name,
            "PHOENIX_HOST": self.host,
            "PHOENIX_PORT": str(self.port),
            "PHOENIX_GRPC_PORT": str(free_port()),
            "PHOENIX_TELEMETRY_ENABLED": "false",
        }
        with log_path.open("wb") as log:
            self._process = subprocess.Popen(
                [str(self.script), "serve"], stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, env=env, start_new_session=True,
            )  # fmt: skip
        atexit.register(self.stop)
        deadline = began + self.startup_timeout
        while time.monotonic() < deadline:
            code = self._process.poll()
            if code is not None:
                output = log_path.read_text(errors="replace")[-2000:]
                self.stop()
                raise ServerError(f"phoenix exited with code {code} on port {self.port}: {output}")
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as answer:
                    if answer.status == 200:
                        self.startup_seconds = time.monotonic() - began
                        return self
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.25)
        self.stop()
        raise ServerError(f"phoenix on {self.url} not healthy after {self.startup_timeout:.0f} s")

    def stop(self) -> None:
        """Stop Phoenix by PID (SIGTERM, then SIGKILL) and remove its database."""
        process, self._process = self._process, None
        if process is not None:
            stop_process_group(process)
        if self._workdir is not None:
            self._workdir.cleanup()
            self._workdir = None

    def spans(self, project: str = "default") -> list[dict[str, Any]]:
        """Every span Phoenix stored in ``project``, as its REST API returns them (paged)."""
        spans: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            query = {"limit": "1000", **({"cursor": cursor} if cursor else {})}
            path = f"/v1/projects/{urllib.parse.quote(project, safe='')}/spans"
            try:
                with urllib.request.urlopen(
                    f"{self.url}{path}?{urllib.parse.urlencode(query)}", timeout=30
                ) as answer:
                    page = orjson.loads(answer.read())
            except urllib.error.HTTPError as error:
                if error.code == 404:
                    return []  # no span arrived yet, so Phoenix has no such project
                raise ServerError(f"phoenix {path}: HTTP {error.code} {error.reason}") from error
            spans.extend(page.get("data") or [])
            cursor = page.get("next_cursor")
            if not cursor:
                return spans

    def __enter__(self) -> PhoenixServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
