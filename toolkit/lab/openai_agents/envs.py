"""Version environments of the OpenAI Agents recorder: one virtual environment per release.

Where temporalio's OpenAI Agents integration lives, and which ``openai-agents`` it accepts (read
from the packages' metadata on PyPI):

==========================  ===========================================  ====================
integration                 module                                       openai-agents
==========================  ===========================================  ====================
temporalio 1.30 - 1.31      ``temporalio.contrib.openai_agents``         >=0.17.5
temporalio 1.32 - 1.34      ``temporalio.contrib.openai_agents``         >=0.19.2,<0.20
temporalio-openai-agents    ``temporalio.openai_agents`` (temporalio     1.0.0: >=0.20,<0.21;
1.0.0 / 1.1.0               1.35 re-exports it under ``contrib``)        1.1.0: >=0.22,<0.23
==========================  ===========================================  ====================

The project's own environment has no openai-agents, so every release is a virtual environment
under ``data/venvs/<name>`` (gitignored), built from the exact pins below; the project is put on
``PYTHONPATH`` of every process started there (see :mod:`toolkit.lab.adk_python.envs`).
"""

from __future__ import annotations

from dataclasses import dataclass

from toolkit.lab.adk_python.envs import VenvPaths
from toolkit.lab.lookup import by_name

__all__ = ["ENVIRONMENTS", "AgentsEnvironment", "environment"]


@dataclass(frozen=True)
class AgentsEnvironment(VenvPaths):
    """An openai-agents release with the integration that accepts it.

    Attributes
    ----------
    name : str
        ``oa-<openai-agents version>``; also the directory name under ``data/openai_agents/``.
    openai_agents, temporalio : str
        Pinned versions.
    integration : str
        ``temporalio`` (the ``contrib`` module) or ``temporalio-openai-agents <version>``.
    mcp_v2 : bool
        The integration has MCP v2 servers (``temporal_mcp_server``; ``temporalio-mcp``).
    requirements : tuple of str
        What ``pip install`` gets (exact pins).
    """

    name: str
    openai_agents: str
    temporalio: str
    integration: str
    requirements: tuple[str, ...]
    mcp_v2: bool = False
    main: bool = False


def _contrib(openai_agents: str, temporalio: str, *extra: str) -> AgentsEnvironment:
    return AgentsEnvironment(
        f"oa-{openai_agents}", openai_agents, temporalio, "temporalio",
        (f"temporalio[openai-agents,pydantic,opentelemetry]=={temporalio}",
         f"openai-agents=={openai_agents}", *extra),
    )


def _standalone(openai_agents: str, integration: str) -> AgentsEnvironment:
    return AgentsEnvironment(
        f"oa-{openai_agents}", openai_agents, "1.35.0", f"temporalio-openai-agents {integration}",
        ("temporalio[pydantic,opentelemetry]==1.35.0",
         f"temporalio-openai-agents[mcp]=={integration}", f"openai-agents=={openai_agents}",
         "temporalio-mcp==0.2.0"),
        mcp_v2=True,
    )


ENVIRONMENTS: tuple[AgentsEnvironment, ...] = (
    # openai >= 2.45 made InputTokensDetails.cache_write_tokens required, which openai-agents
    # 0.17 does not set (every run fails its first workflow task): the openai of its time.
    _contrib("0.17.8", "1.30.0", "openai==2.36.0"),
    _contrib("0.19.4", "1.34.0"),
    _standalone("0.20.0", "1.0.0"),
    _standalone("0.22.3", "1.1.0"),
)
"""Every environment the recorder records, oldest openai-agents first."""


def environment(name: str) -> AgentsEnvironment:
    """The environment called ``name`` (``oa-0.19.4`` ...); a
    :class:`~toolkit.errors.LabError` naming the known ones for any other name."""
    return by_name(ENVIRONMENTS, name, "OpenAI Agents environment")
