"""The lab's MCP server: real streamable HTTP, listing options, and the request log."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from toolkit.errors import LabError
from toolkit.lab.mcp_server import PAGE_TOOL, TOOL_NAMES, McpServer

mcp_client = pytest.importorskip("mcp.client.client")


async def _session(url: str, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """List tools, make the given calls, list again; return names and text results."""
    async with mcp_client.Client(url, mode="legacy", cache=None) as client:
        first = [tool.name for tool in (await client.list_tools()).tools]
        texts = []
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)
            texts.append("".join(part.text for part in result.content))
        second = [tool.name for tool in (await client.list_tools()).tools]
    return {"first": first, "second": second, "texts": texts}


def test_tools_answer_deterministically_and_log_each_call(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    calls = [("get_weather", {"city": "Paris"}), ("add", {"a": 2, "b": 3})]
    with McpServer(request_log=log) as server:
        assert server.url.startswith("http://127.0.0.1:") and server.url.endswith("/mcp")
        outcome = asyncio.run(_session(server.url, calls))
        again = asyncio.run(_session(server.url + "?token=abc", calls[:1]))
        records = server.requests()
    assert outcome["first"] == list(TOOL_NAMES) == outcome["second"]
    assert outcome["texts"] == ["The weather in Paris is sunny, 21 °C.", "5"]
    assert again["texts"] == outcome["texts"][:1]
    rpc = [r for r in records if r["mcp_method"] in {"tools/list", "tools/call"}]
    assert [(r["mcp_method"], r["tool"], r["query"]) for r in rpc] == [
        ("tools/list", None, ""),
        ("tools/call", "get_weather", ""),
        ("tools/call", "add", ""),
        ("tools/list", None, ""),
        ("tools/list", None, "token=abc"),
        ("tools/call", "get_weather", "token=abc"),
        ("tools/list", None, "token=abc"),
    ]
    assert all(r["path"] == "/mcp" for r in records)
    assert {r["method"] for r in rpc} == {"POST"}
    assert [r["seq"] for r in records] == list(range(1, len(records) + 1))
    assert log.read_text().count("\n") == len(records)


def test_hide_after_first_call_drops_the_tool_from_later_listings() -> None:
    with McpServer(hide_after_first_call=["get_weather"]) as server:
        outcome = asyncio.run(_session(server.url, [("get_weather", {"city": "Oslo"})]))
        # The hidden tool stays callable, and stays hidden for every later session.
        later = asyncio.run(_session(server.url, [("get_weather", {"city": "Oslo"})]))
    assert outcome["first"] == list(TOOL_NAMES)
    assert outcome["second"] == ["add", "lookup_order"]
    assert later["first"] == ["add", "lookup_order"]
    assert later["texts"] == ["The weather in Oslo is clear, 20 °C."]


def test_list_twice_repeats_every_name() -> None:
    with McpServer(list_twice=True) as server:
        outcome = asyncio.run(_session(server.url, []))
    assert outcome["first"] == [name for name in TOOL_NAMES for _ in range(2)]


def test_pages_adds_a_tool_whose_result_has_the_size_asked_for() -> None:
    calls = [("read_page", {"page": 3, "size": 5000}), ("read_page", {"page": 4, "size": 10})]
    with McpServer(pages=True) as server:
        outcome = asyncio.run(_session(server.url, calls))
    assert outcome["first"] == [*TOOL_NAMES, PAGE_TOOL]
    long, short = outcome["texts"]
    assert long.startswith("Page 3 of the report. lorem ipsum ") and len(long.encode()) == 5000
    assert short == "Page 4 of "


def test_url_before_start_and_corrupt_log_raise_lab_errors(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    server = McpServer(request_log=log)
    with pytest.raises(LabError, match="not running"):
        _ = server.url
    log.write_text('{"seq": 1}\nnot json\n')
    with pytest.raises(LabError, match=r"requests.jsonl line 2"):
        server.requests()
