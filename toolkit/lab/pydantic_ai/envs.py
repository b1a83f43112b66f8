"""Version environments of the pydantic-ai recorder: one virtual environment per release.

pydantic-ai's Temporal integration (``pydantic_ai.durable_exec.temporal``: ``TemporalAgent``,
``AgentPlugin``, ``PydanticAIPlugin``) is part of ``pydantic-ai-slim[temporal]`` and accepts any
temporalio >= 1.24 (>= 1.27 from 2.68); releases run with temporalio 1.35 unless noted. MCP toolsets
are ``pydantic_ai.mcp.MCPToolset`` (FastMCP client) in every 2.x release. 2.40 moved activity
naming into ``TemporalOperationNamer`` (the names stayed). Environments live under
``data/venvs/<name>`` (gitignored), built from the exact pins below.
"""

from __future__ import annotations

from dataclasses import dataclass

from toolkit.lab.adk_python.envs import VenvPaths
from toolkit.lab.lookup import by_name

__all__ = ["ENVIRONMENTS", "PydanticAIEnvironment", "environment"]


@dataclass(frozen=True)
class PydanticAIEnvironment(VenvPaths):
    """A pydantic-ai release with temporalio.

    Attributes
    ----------
    name : str
        ``pa-<pydantic-ai version>``; also the directory name under ``data/pydantic_ai/``.
    pydantic_ai, temporalio : str
        Pinned versions.
    requirements : tuple of str
        What ``pip install`` gets (exact pins).
    """

    name: str
    pydantic_ai: str
    temporalio: str
    requirements: tuple[str, ...]
    main: bool = False


def _release(pydantic_ai: str, *extra: str, temporalio: str = "1.35.0") -> PydanticAIEnvironment:
    return PydanticAIEnvironment(
        f"pa-{pydantic_ai}", pydantic_ai, temporalio,
        (f"pydantic-ai-slim[temporal,mcp]=={pydantic_ai}", f"temporalio=={temporalio}", *extra),
    )


ENVIRONMENTS: tuple[PydanticAIEnvironment, ...] = (
    # 2.2.0 accepts any fastmcp-slim >= 3.3, but its MCPToolset fails against FastMCP 4
    # ("FastMCP Client initialization returned no result"): the FastMCP of its time.
    _release("2.2.0", "fastmcp-slim[client]==3.4.11"),
    # 2.40 cannot import its Temporal integration with temporalio >= 1.34 (pydantic has no
    # schema for ActivityConfig's new EventGroup field): the temporalio of its time; its
    # pydantic_ai.mcp imports httpx, which FastMCP 4 no longer brings.
    _release("2.40.0", "httpx==0.28.1", temporalio="1.33.0"),
    _release("2.68.0"),
)
"""Every environment the recorder records, oldest pydantic-ai first."""


def environment(name: str) -> PydanticAIEnvironment:
    """The environment called ``name`` (``pa-2.68.0`` ...); a
    :class:`~toolkit.errors.LabError` naming the known ones for any other name."""
    return by_name(ENVIRONMENTS, name, "pydantic-ai environment")
