"""MCP server configurations: endpoint keys, servers sharing an endpoint, which one to keep.

Two configured servers at one endpoint expose the same tools twice (the duplicate-tool incident).
The endpoint key is the URL without query and fragment, with the default port made explicit;
stdio servers have no shared endpoint and never collapse. Of a group, the session-scoped entry
(its URL carries a query, such as a context token) is kept: it is a strict superset of the
unscoped one, and dropping it would silently lose the session binding.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pandas as pd
import yaml

from toolkit.errors import ToolkitError

__all__ = ["mcp_endpoints"]

_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
_URL_KEYS = ("url", "serverUrl", "server_url", "httpUrl", "endpoint")
_TRANSPORT_ALIASES = {
    "http": "http", "streamable-http": "http", "streamable_http": "http", "streamablehttp": "http",
    "streamableHttp": "http", "sse": "sse", "stdio": "stdio", "local": "stdio",
}
COLUMNS = ["id", "transport", "url", "scheme", "host", "port", "path", "endpoint", "scoped",
           "group", "group_size", "keep", "reason"]


def _config_error(source: str, problem: str, position: str | None = None) -> ToolkitError:
    where = f" at {position}" if position else ""
    return ToolkitError(f"{source}{where}: {problem}")


def _load(configs: Any) -> tuple[str, list[tuple[str, Mapping[str, Any]]]]:
    """Normalise every accepted shape to (source name, [(server id, config)])."""
    source = "<configs>"
    if isinstance(configs, str | Path):
        path = Path(configs)
        source = str(path)
        if not path.is_file():
            raise _config_error(source, "no such file; expected a JSON or YAML MCP config")
        text = path.read_text(encoding="utf-8")
        try:
            configs = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
        except (json.JSONDecodeError, yaml.YAMLError) as exc:
            raise _config_error(source, f"not valid JSON/YAML ({exc})") from None
    if isinstance(configs, Mapping):
        for key in ("mcpServers", "mcp_servers", "servers"):
            if isinstance(configs.get(key), Mapping | list):
                configs = configs[key]
                break
    if isinstance(configs, Mapping):
        items = [(str(k), v) for k, v in configs.items()]
    elif isinstance(configs, list):
        items = []
        for i, entry in enumerate(configs):
            if not isinstance(entry, Mapping):
                raise _config_error(source, "entry is not a mapping", f"entry #{i}")
            ident = entry.get("id") or entry.get("name") or entry.get("server_id")
            if not ident:
                raise _config_error(source, "entry has no id or name", f"entry #{i}")
            items.append((str(ident), entry))
    else:
        raise _config_error(source, f"unsupported configs type {type(configs).__name__}; "
                            "expected a mapping of id -> config, a list of configs or a path")
    for ident, cfg in items:
        if not isinstance(cfg, Mapping):
            raise _config_error(source, "server config is not a mapping", f"server {ident!r}")
    return source, items


def _transport(source: str, ident: str, cfg: Mapping[str, Any], url: str | None) -> str:
    declared = cfg.get("type") or cfg.get("transport")
    if declared is not None:
        transport = _TRANSPORT_ALIASES.get(str(declared)) or _TRANSPORT_ALIASES.get(
            str(declared).lower())
        if transport is None:
            raise _config_error(source, f"unknown transport {declared!r} (expected http, sse or "
                                "stdio)", f"server {ident!r}")
        return transport
    if cfg.get("command"):
        return "stdio"
    if url and urlsplit(url).path.rstrip("/").endswith("/sse"):
        return "sse"
    return "http"


def _row(source: str, ident: str, cfg: Mapping[str, Any]) -> dict[str, Any]:
    url = next((cfg[k] for k in _URL_KEYS if isinstance(cfg.get(k), str) and cfg[k]), None)
    transport = _transport(source, ident, cfg, url)
    row: dict[str, Any] = {"id": ident, "transport": transport, "url": url, "scheme": None,
                           "host": None, "port": None, "path": None, "endpoint": None,
                           "scoped": False}
    if transport == "stdio":
        row["url"] = None
        return row
    if not url:
        raise _config_error(source, f"{transport} server has no url", f"server {ident!r}")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise _config_error(source, f"not an http(s) URL: {url!r}", f"server {ident!r}")
    port = parts.port or _DEFAULT_PORTS[scheme]
    path = parts.path or "/"
    host = parts.hostname.lower()
    shown_host = f"[{host}]" if ":" in host else host
    row.update(scheme=scheme, host=host, port=port, path=path,
               endpoint=f"{scheme}://{shown_host}:{port}{path}", scoped=bool(parts.query))
    return row


def mcp_endpoints(configs: Any) -> pd.DataFrame:
    """One row per configured MCP server with its endpoint key, its group and the one to keep.

    Parameters
    ----------
    configs : mapping, list, str or Path
        ``{id: config}``, a Claude/Cursor style ``{"mcpServers": {id: config}}``, a list of
        configs each with ``id`` or ``name``, or the path of a JSON or YAML file holding one of
        these. A config has ``url`` (or ``serverUrl``/``httpUrl``) and optionally ``type`` /
        ``transport`` (``http``, ``streamable-http``, ``sse``, ``stdio``); ``command`` means stdio.

    Returns
    -------
    pandas.DataFrame
        ``id``, ``transport`` (http/sse/stdio), ``url``, ``scheme``, ``host``, ``port`` (default
        port made explicit), ``path``, ``endpoint`` (``scheme://host:port/path``: query and
        fragment removed; None for stdio), ``scoped`` (the URL carries a query), ``group`` (the
        endpoint, or ``stdio:<id>``: stdio never collapses), ``group_size``, ``keep`` (bool) and
        ``reason``. Of servers sharing an endpoint the scoped one is kept (the first scoped one in
        configuration order when several are), else the first one.

    Raises
    ------
    ToolkitError
        Unreadable file, unsupported shape, a server without a usable URL or transport.
    """
    source, items = _load(configs)
    rows = [_row(source, ident, cfg) for ident, cfg in items]
    for row in rows:
        row["group"] = row["endpoint"] or f"stdio:{row['id']}"
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row["group"], []).append(row)
    for members in groups.values():
        keeper = next((r for r in members if r["scoped"]), members[0])
        for row in members:
            row["group_size"] = len(members)
            row["keep"] = row is keeper
            if row["transport"] == "stdio":
                row["reason"] = "stdio server: no shared endpoint, never collapses"
            elif len(members) == 1:
                row["reason"] = "only server at this endpoint"
            elif row is keeper:
                row["reason"] = ("session-scoped URL (carries a query): a superset of the "
                                 "unscoped entries, keeps the session binding" if row["scoped"]
                                 else "first of the servers at this endpoint")
            else:
                row["reason"] = (f"duplicate of {keeper['id']!r}: same endpoint "
                                 f"{row['endpoint']}, its tools would be declared twice")
    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame["port"] = frame["port"].astype("Int64")
    frame["keep"] = frame["keep"].astype(bool)
    frame["scoped"] = frame["scoped"].astype(bool)
    return frame
