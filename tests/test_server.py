from __future__ import annotations

import os

import pytest
from temporalio.client import Client

from toolkit.lab.server import DevServer


async def _describe(address: str) -> str:
    client = await Client.connect(address)
    info = await client.service_client.workflow_service.get_system_info(
        __import__("temporalio.api.workflowservice.v1", fromlist=["x"]).GetSystemInfoRequest()
    )
    return info.server_version


def test_dev_server_starts_serves_and_stops_by_pid() -> None:
    import asyncio

    server = DevServer().start()
    pid = server.pid
    assert pid is not None
    try:
        version = asyncio.run(_describe(server.address))
        assert version
    finally:
        server.stop()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_taken_port_is_a_clear_error_and_is_retried_elsewhere() -> None:
    import socket

    from toolkit.errors import ServerError

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ServerError, match=f"port {port}"):
            DevServer(port=port).start(attempts=1)
        server = DevServer(port=port).start(attempts=2)  # retried on a fresh port
        try:
            assert server.port != port and server.pid is not None
        finally:
            server.stop()


def test_a_server_left_running_stops_when_its_interpreter_exits() -> None:
    """A notebook whose check fails never reaches ``server.stop()``: exiting stops the server."""
    import subprocess
    import sys

    code = ("from toolkit.lab.server import DevServer\n"
            "server = DevServer().start()\n"
            "print(server.pid, flush=True)\n")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)  # fmt: skip
    pid = int(done.stdout.strip())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
