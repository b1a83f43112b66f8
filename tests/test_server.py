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
