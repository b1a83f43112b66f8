"""mcp_endpoints: endpoint keys, groups, and keeping the session-scoped server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from toolkit.agents.mcp import mcp_endpoints
from toolkit.errors import ToolkitError

# The incident's registry: the bundled server under its own id and again as a session-scoped
# binding (same endpoint plus ?<param>=<token>), listed in both orders below.
BALDA = {"type": "http", "url": "http://127.0.0.1:8931/balda"}
SCOPED = {"type": "http", "url": "http://127.0.0.1:8931/balda?ctx=tok123"}


@pytest.mark.parametrize("order", [("balda", "scoped"), ("scoped", "balda")])
def test_scoped_entry_is_kept_in_either_order(order: tuple[str, str]) -> None:
    configs = {
        "balda": BALDA,
        "balda-session-memory-tok123": SCOPED,
        "other": {"url": "http://127.0.0.1:9000/mcp"},
    }
    names = {"balda": "balda", "scoped": "balda-session-memory-tok123"}
    ordered = {names[o]: configs[names[o]] for o in order} | {"other": configs["other"]}
    frame = mcp_endpoints(ordered).set_index("id")
    # Sensitive: fails if the unscoped entry were kept (crash gone, session memory lost).
    assert bool(frame.loc["balda-session-memory-tok123", "keep"]) is True
    assert bool(frame.loc["balda", "keep"]) is False
    assert frame.loc["balda", "group"] == frame.loc["balda-session-memory-tok123", "group"]
    assert frame.loc["balda", "endpoint"] == "http://127.0.0.1:8931/balda"
    assert frame.loc["balda", "group_size"] == 2
    assert "duplicate of 'balda-session-memory-tok123'" in frame.loc["balda", "reason"]
    assert bool(frame.loc["other", "keep"]) and frame.loc["other", "group_size"] == 1
    assert frame["keep"].sum() == 2


def test_endpoint_key_normalisation() -> None:
    frame = mcp_endpoints([
        {"id": "a", "url": "HTTP://Example.COM/mcp#frag"},
        {"id": "b", "url": "http://example.com:80/mcp?x=1"},
        {"id": "c", "url": "https://example.com/mcp"},
        {"id": "d", "url": "http://example.com/mcp/"},
        {"id": "e", "url": "http://example.com:8080/sse"},
    ]).set_index("id")
    assert frame.loc["a", "endpoint"] == "http://example.com:80/mcp"
    assert frame.loc["a", "group"] == frame.loc["b", "group"]
    assert frame.loc["c", "endpoint"] == "https://example.com:443/mcp"
    assert frame.loc["c", "group"] != frame.loc["a", "group"]
    assert frame.loc["d", "group"] != frame.loc["a", "group"]  # the path differs
    assert frame.loc["e", "transport"] == "sse" and frame.loc["e", "port"] == 8080
    assert list(frame["keep"]) == [False, True, True, True, True]


def test_stdio_never_collapses() -> None:
    frame = mcp_endpoints({
        "fs1": {"command": "npx", "args": ["server-filesystem", "/tmp"]},
        "fs2": {"command": "npx", "args": ["server-filesystem", "/tmp"]},
    })
    assert list(frame["transport"]) == ["stdio", "stdio"]
    assert frame["endpoint"].isna().all()
    assert frame["group"].is_unique and frame["keep"].all()


def test_claude_style_json_and_yaml_files(tmp_path: Path) -> None:
    servers = {"balda": BALDA, "balda-session-memory-tok123": SCOPED}
    as_json = tmp_path / "claude_desktop_config.json"
    as_json.write_text(json.dumps({"mcpServers": servers}))
    as_yaml = tmp_path / "servers.yaml"
    as_yaml.write_text(yaml.safe_dump([{"id": k, **v} for k, v in servers.items()]))
    for path in (as_json, str(as_yaml)):
        frame = mcp_endpoints(path)
        assert list(frame.loc[frame["keep"], "id"]) == ["balda-session-memory-tok123"]


@pytest.mark.parametrize(
    ("configs", "message"),
    [
        ({"a": {"type": "http"}}, "has no url"),
        ({"a": {"type": "carrier-pigeon", "url": "http://x/"}}, "unknown transport"),
        ({"a": {"url": "ftp://x/mcp"}}, "not an http"),
        ([{"url": "http://x/"}], "entry #0"),
        (42, "unsupported configs type"),
        ("/nonexistent/mcp.json", "no such file"),
    ],
)
def test_bad_configs_raise(configs: object, message: str) -> None:
    with pytest.raises(ToolkitError, match=message):
        mcp_endpoints(configs)
