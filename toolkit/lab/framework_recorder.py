"""Recording agent frameworks other than ADK on the dev server, with the ADK recorder's tools.

The OpenAI Agents and pydantic-ai recorders differ only in their workflow, worker, scenarios and
environments; what they share lives here: a :class:`Framework` names those parts, and
:func:`record_env` / :func:`record_upgrade` run scenarios with a worker process of one version
environment, a real MCP server per run, and the ADK recorder's driver (turns as signals, replies
by query, the history exported with the CLI). Outputs have the layout of ``data/adk``:
``<out>/<env>/<scenario>.json`` and ``.meta.json``, logs under ``<env>/logs/``.

A framework whose toolsets are built when the worker starts (pydantic-ai: an agent's MCP toolsets
are fixed when it is wrapped for Temporal) sets :attr:`Framework.mcp_env`: one plain and one
list-twice MCP server then run for the whole environment, their URLs reach the worker in those
two environment variables, and each run keeps its slice of their request log.

A turn may end in a reply, in a closed run (e.g. a failed activity failing the workflow) or in a
``WorkflowTaskFailed`` event (an error raised in workflow code, retried by the server forever);
in the last case the history is exported while the run is open and the run is then terminated.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from temporalio.client import Client, WorkflowHandle

from toolkit.lab.adk_python import driver
from toolkit.lab.adk_python.envs import VersionEnvironment
from toolkit.lab.adk_python.matrix import build_matrix
from toolkit.lab.adk_python.processes import WorkerProcess
from toolkit.lab.adk_python.recorder import _request_summary, listings_per_turn, write_recording
from toolkit.lab.mcp_server import McpServer

__all__ = ["Framework", "Scenario", "listings_per_turn", "record_all", "record_env",
           "record_upgrade"]


class Scenario(Protocol):
    """What the recorder needs of a framework's scenario."""

    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def turns(self) -> tuple[str, ...]: ...
    @property
    def list_twice(self) -> bool: ...


class Upgrade(Protocol):
    """A rolling upgrade between two environments (names) of one framework."""

    @property
    def before(self) -> str: ...
    @property
    def after(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def scenario(self) -> Any: ...
    @property
    def split(self) -> int:
        """Turns sent to the ``before`` worker (the rest go to the ``after`` worker)."""


@dataclass(frozen=True)
class Framework:
    """The parts of one framework's recorder.

    Attributes
    ----------
    name
        Directory under ``data/`` and the prefix of workflow ids and task queues.
    workflow_type
        The agent workflow's type name.
    worker_module, replay_module
        Entry points run in a version environment (see :mod:`toolkit.lab.adk_python.processes`
        and :func:`toolkit.lab.adk_python.matrix.replay_in`).
    listing
        Regular expression (full match) for the activity types that list tools; the metadata's
        ``listings_per_turn`` counts them between ``user_turn`` signals.
    spec
        The workflow input for a scenario whose MCP server is at a URL.
    environment
        Looks an environment up by name (for upgrades and :func:`record_all`'s ``envs``).
    environments, scenarios, upgrades
        Everything :func:`record_all` records by default: environments oldest first, the
        scenarios recorded in each, the rolling upgrades.
    version_keys
        Keys of the worker's ready line copied into the metadata.
    applies
        Whether a scenario is recorded in an environment (all of them when None).
    mcp_env
        Names of the environment variables from which the worker builds its toolsets at start:
        the plain MCP server's URL and the list-twice one's (None: every run gets its own MCP
        server, whose URL is in the workflow input).
    """

    name: str
    workflow_type: str
    worker_module: str
    replay_module: str
    listing: str
    spec: Callable[[Any, str], dict[str, Any]]
    environment: Callable[[str], Any]
    version_keys: tuple[str, ...]
    environments: Sequence[VersionEnvironment]
    scenarios: Sequence[Any]
    upgrades: Sequence[Upgrade]
    applies: Callable[[Any, Any], bool] | None = None
    mcp_env: tuple[str, str] | None = None


def _versions(framework: Framework, info: dict[str, Any]) -> dict[str, Any]:
    return {key: info.get(key) for key in framework.version_keys}


async def _turns(handle: WorkflowHandle[Any, Any], turns: Sequence[str],
                 first: int = 0) -> list[dict[str, Any]]:
    """Send ``turns`` one after the other; stop after the first one that gets no reply."""
    sent: list[dict[str, Any]] = []
    for index, text in enumerate(turns, start=first):
        sent.append(await driver.send_turn_or_stop(handle, text, index))
        if sent[-1]["reply"] is None:
            break
    return sent


async def _close(address: str, handle: WorkflowHandle[Any, Any],
                 turns: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """Finish the run (or, when a workflow task failed, export it open and terminate it)."""
    stuck = turns[-1]["status"] == "WORKFLOW_TASK_FAILED"
    status = "RUNNING" if stuck else turns[-1]["status"]
    if status == "RUNNING" and not stuck:
        status = await driver.finish(handle)
    history = driver.export_history(address, handle.id, handle.result_run_id or "")
    if stuck:
        await handle.terminate("lab: recording done (the workflow task keeps failing)")
    return status, history


class _McpServers:
    """The MCP servers of one environment's runs: shared ones (fixed-MCP frameworks) or one per
    run; :meth:`run` yields the server of a scenario and collects its requests."""

    def __init__(self, shared: dict[bool, McpServer] | None, log_dir: Path,
                 names: tuple[str, str] | None = None) -> None:
        self.shared, self.log_dir, self.names = shared, log_dir, names
        self.requests: list[dict[str, Any]] = []

    @contextlib.contextmanager
    def run(self, name: str, list_twice: bool) -> Iterator[McpServer]:
        if self.shared is None:
            with McpServer(list_twice=list_twice,
                           request_log=self.log_dir / f"{name}.mcp.jsonl") as server:
                yield server
                self.requests = server.requests()
            return
        server = self.shared[list_twice]
        before = len(server.requests())
        yield server
        self.requests = server.requests()[before:]

    def worker_env(self) -> dict[str, str] | None:
        if self.shared is None or self.names is None:
            return None
        return {self.names[0]: self.shared[False].url, self.names[1]: self.shared[True].url}


@contextlib.contextmanager
def _mcp_servers(framework: Framework, log_dir: Path, prefix: str = "") -> Iterator[_McpServers]:
    if framework.mcp_env is None:
        yield _McpServers(None, log_dir)
        return
    with McpServer(request_log=log_dir / f"{prefix}mcp.jsonl") as plain, \
            McpServer(list_twice=True, request_log=log_dir / f"{prefix}mcp_twice.jsonl") as twice:
        yield _McpServers({False: plain, True: twice}, log_dir, framework.mcp_env)


async def _run_scenario(framework: Framework, client: Client, address: str,
                        worker: WorkerProcess, scenario: Any, out_dir: Path,
                        servers: _McpServers) -> Path:
    env = worker.env
    workflow_id = f"lab-{framework.name}-{env.name}-{scenario.name}-{uuid.uuid4().hex[:8]}"
    began = time.monotonic()
    with servers.run(scenario.name, scenario.list_twice) as mcp:
        handle = await driver.start_agent(
            client, framework.spec(scenario, mcp.url), workflow_id=workflow_id,
            task_queue=worker.task_queue, workflow_type=framework.workflow_type)
        turns = await _turns(handle, scenario.turns)
        status, history = await _close(address, handle, turns)
    meta = {
        "scenario": scenario.name, "description": scenario.description, "env": env.name,
        **_versions(framework, worker.info), "workflow_id": workflow_id,
        "run_id": handle.result_run_id, "task_queue": worker.task_queue, "status": status,
        "turns": turns,
        "timings": {"worker_start_seconds": round(worker.started_seconds, 3),
                    "run_seconds": round(time.monotonic() - began, 3)},
        "mcp_requests": _request_summary(servers.requests),
    }
    return write_recording(out_dir / env.name / f"{scenario.name}.json", history, meta,
                           framework.listing)


async def record_env(framework: Framework, env: VersionEnvironment, address: str,
                     out_dir: Path, scenarios: Sequence[Any], *,
                     venvs_dir: Path | None = None, log_dir: Path | None = None) -> list[Path]:
    """Record ``scenarios`` with one worker of ``env``; return the history paths."""
    with tempfile.TemporaryDirectory(prefix=f"toolkit-{framework.name}-") as tmp:
        logs = log_dir or Path(tmp)
        task_queue = f"lab-{framework.name}-{env.name}-{uuid.uuid4().hex[:8]}"
        client = await Client.connect(address)
        with _mcp_servers(framework, logs) as servers, \
                WorkerProcess(env, address, task_queue, logs / "worker.log",
                              venvs_dir=venvs_dir, module=framework.worker_module,
                              extra_env=servers.worker_env()) as worker:
            return [await _run_scenario(framework, client, address, worker, s, out_dir, servers)
                    for s in scenarios]


async def record_upgrade(framework: Framework, upgrade: Upgrade, address: str, out_dir: Path,
                         *, venvs_dir: Path | None = None,
                         log_dir: Path | None = None) -> Path:
    """The first ``upgrade.split`` turns on a worker of ``upgrade.before``, the others on a fresh
    worker of ``upgrade.after``."""
    before, after = framework.environment(upgrade.before), framework.environment(upgrade.after)
    scenario = upgrade.scenario
    workflow_id = f"lab-{framework.name}-{before.name}-{upgrade.name}-{uuid.uuid4().hex[:8]}"
    task_queue = f"lab-{framework.name}-upgrade-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory(prefix=f"toolkit-{framework.name}-") as tmp:
        logs = Path(log_dir or tmp)
        client = await Client.connect(address)
        began = time.monotonic()

        def log(kind: str) -> Path:  # not with_suffix: the upgrade name holds version dots
            return logs / f"{upgrade.name}.{kind}"

        with _mcp_servers(framework, logs, f"{upgrade.name}.") as servers, \
                servers.run(upgrade.name, scenario.list_twice) as mcp:
            with WorkerProcess(before, address, task_queue, log("before.worker.log"),
                               venvs_dir=venvs_dir, module=framework.worker_module,
                               extra_env=servers.worker_env()) as old:
                handle = await driver.start_agent(
                    client, framework.spec(scenario, mcp.url), workflow_id=workflow_id,
                    task_queue=task_queue, workflow_type=framework.workflow_type)
                turns = await _turns(handle, scenario.turns[:upgrade.split])
            with WorkerProcess(after, address, task_queue, log("after.worker.log"),
                               venvs_dir=venvs_dir, module=framework.worker_module,
                               extra_env=servers.worker_env()) as new:
                turns += await _turns(handle, scenario.turns[upgrade.split:],
                                      first=upgrade.split)
                status, history = await _close(address, handle, turns)
        requests = servers.requests
    meta = {
        "scenario": "rolling_upgrade", "description": f"{upgrade.split} turn(s) on {before.name}, "
        f"the next on a fresh {after.name} worker", "env": before.name, "env_after": after.name,
        **_versions(framework, old.info), "versions_after": _versions(framework, new.info),
        "workflow_id": workflow_id, "run_id": handle.result_run_id, "task_queue": task_queue,
        "status": status, "turns": turns,
        "timings": {"worker_start_seconds": round(old.started_seconds, 3),
                    "worker_after_start_seconds": round(new.started_seconds, 3),
                    "run_seconds": round(time.monotonic() - began, 3)},
        "mcp_requests": _request_summary(requests),
    }
    return write_recording(out_dir / before.name / f"{upgrade.name}.json", history, meta,
                           framework.listing)


def record_all(framework: Framework, data_dir: Path, address: str,
               envs: Sequence[str] | None = None) -> list[Path]:
    """Record every scenario in every environment (or those named in ``envs``), the upgrades
    whose two environments are selected, then replay every history in every selected environment
    (``replay_matrix.csv``).

    Histories go to ``data_dir/<framework.name>/<env>/``, environments are built under
    ``data_dir/venvs/<env>`` when missing. Returns the history files, then the matrix CSV.
    """
    environments = (list(framework.environments) if envs is None
                    else [framework.environment(name) for name in envs])
    out_dir, venvs_dir = Path(data_dir) / framework.name, Path(data_dir) / "venvs"
    names = {env.name for env in environments}
    paths: list[Path] = []
    for env in environments:
        chosen = [s for s in framework.scenarios
                  if framework.applies is None or framework.applies(env, s)]
        paths += asyncio.run(record_env(framework, env, address, out_dir, chosen,
                                        venvs_dir=venvs_dir, log_dir=out_dir / env.name / "logs"))
    for upgrade in framework.upgrades:
        if {upgrade.before, upgrade.after} <= names:
            paths.append(asyncio.run(record_upgrade(
                framework, upgrade, address, out_dir, venvs_dir=venvs_dir,
                log_dir=out_dir / upgrade.before / "logs")))
    paths.append(build_matrix(out_dir, list(environments), venvs_dir=venvs_dir,
                              module=framework.replay_module))
    return paths
