"""Replay histories one at a time with workflow code, noting what the code did: the engine under
``tk.replay_check``, run in the caller's process or as a worker process of any interpreter.

It imports only the standard library and temporalio (any release from 1.1.0 on), never pandas or
the rest of the toolkit, so that ``python -m toolkit.replay.check_worker`` runs in the replaying
version's own environment (an old google-adk's virtual environment, a service's image) with
nothing but the project on ``PYTHONPATH``.

Each replay goes through temporalio's ``Replayer``, with the given runner wrapped so that every
activation and the commands the code answered it with are kept (see
:mod:`toolkit.replay.code_replay`, which turns them into command rows): a failed replay can then
be explained without replaying it again.

The worker protocol (one JSON object per line)::

    stdin   {"workflows": ["pkg.mod:Class", ...], "options": "pkg.mod:factory" | null}
    results {"ready": true, "types": [...], "dynamic": false, "temporalio": "1.35.0"}
            | {"error": "..."}
    stdin   {"index": 0, "workflow_id": "...", "history": "<base64 History protobuf>"}
    results {"index": 0, "outcome": "ok" | "nondeterminism" | "failed", "error_type": ...,
             "message": ..., "activations": [...] | null, "seconds": ...}

Results go to the file descriptor given with ``--results-fd``, not to stdout: sdk-core logs there.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import concurrent.futures
import importlib
import inspect
import json
import logging
import os
import queue
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Activation",
    "DaemonThreads",
    "Replayed",
    "Session",
    "load_object",
    "quiet_runtime",
    "workflow_classes",
    "workflow_types",
]


def load_object(spec: str) -> Any:
    """The object a ``"package.module:attribute"`` spec names (``attribute`` may be dotted).

    Raises
    ------
    ImportError
        When the module does not import or has no such attribute (the message names both).
    """
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise ImportError(f"{spec!r}: expected 'package.module:Name'")
    try:
        value: Any = importlib.import_module(module_name)
    except Exception as error:  # the user's module may raise anything while importing
        raise ImportError(f"{spec!r}: module {module_name!r} does not import: "
                          f"{type(error).__name__}: {error}") from error
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise ImportError(f"{spec!r}: module {module_name!r} has no attribute {attribute!r}")
        value = getattr(value, part)
    return value


def workflow_classes(items: Iterable[Any]) -> list[type]:
    """Workflow classes from classes and specs; a spec may name a class, a list or tuple of
    them, or a dict whose values are classes.

    Raises
    ------
    ImportError
        For a spec that does not import.
    TypeError
        For anything that is not a ``@workflow.defn`` class.
    """
    out: list[type] = []
    for item in items:
        value = load_object(item) if isinstance(item, str) else item
        values = list(value.values()) if isinstance(value, dict) else value
        for one in values if isinstance(values, (list, tuple)) else [values]:
            if not isinstance(one, type) or _definition(one) is None:
                raise TypeError(f"{item!r}: {one!r} is not a @workflow.defn class")
            if one not in out:
                out.append(one)
    return out


def _definition(cls: type) -> Any:
    return cls.__dict__.get("__temporal_workflow_definition")


def workflow_types(classes: Sequence[type]) -> tuple[list[str], bool]:
    """The workflow type names the classes register, and whether one of them is dynamic (takes
    any type)."""
    names: list[str] = []
    dynamic = False
    for cls in classes:
        name = getattr(_definition(cls), "name", None)
        if name is None:
            dynamic = True
        elif name not in names:
            names.append(name)
    return names, dynamic


_QUIET: Any = None


def quiet_runtime() -> Any:
    """A temporalio runtime whose core logs only errors (a failed replay is an expected result
    here, and core would otherwise log a warning with its whole text); None where this release
    cannot build one (its default runtime is used then)."""
    global _QUIET
    if _QUIET is None:
        try:
            from temporalio.runtime import LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter

            quiet = TelemetryFilter(core_level="ERROR", other_level="ERROR")
            _QUIET = Runtime(telemetry=TelemetryConfig(logging=LoggingConfig(filter=quiet)))
        except Exception:  # releases before the logging options: their default runtime
            _QUIET = False
    return _QUIET or None


@dataclass
class Activation:
    """One activation the code handled: its job kinds and the commands it answered with
    (``temporalio.bridge`` ``WorkflowCommand`` messages, or their serialized bytes)."""

    jobs: list[str]
    local_resolutions_only: bool
    failed: bool
    commands: list[Any] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"jobs": self.jobs, "local": self.local_resolutions_only, "failed": self.failed,
                "commands": [base64.b64encode(_serialized(c)).decode("ascii")
                             for c in self.commands]}  # fmt: skip

    @staticmethod
    def from_json(data: dict[str, Any]) -> Activation:
        commands = [base64.b64decode(text) for text in data.get("commands", [])]
        return Activation(list(data["jobs"]), bool(data["local"]), bool(data["failed"]), commands)


def _serialized(command: Any) -> bytes:
    return command if isinstance(command, bytes) else command.SerializeToString()


@dataclass
class Replayed:
    """What the Replayer made of one history.

    ``outcome`` is ``ok``, ``nondeterminism`` (a ``NondeterminismError``) or ``failed`` (any
    other replay failure: the code raised, a timeout); ``message`` the failure's whole text.
    """

    outcome: str
    error_type: str | None
    message: str | None
    activations: list[Activation]
    seconds: float

    def to_json(self, index: int) -> dict[str, Any]:
        failed = self.outcome != "ok"
        return {"index": index, "outcome": self.outcome, "error_type": self.error_type,
                "message": self.message, "seconds": self.seconds,
                "activations": [a.to_json() for a in self.activations] if failed else None}


def _classify(failure: BaseException | None) -> tuple[str, str | None, str | None]:
    if failure is None:
        return "ok", None, None
    # By name: temporalio 1.1.0 raises its nondeterminism errors under the same class name.
    names = {cls.__name__ for cls in type(failure).__mro__}
    outcome = "nondeterminism" if "NondeterminismError" in names else "failed"
    return outcome, type(failure).__name__, str(failure)


def _delegate(name: str) -> Any:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(self._inner, name)(*args, **kwargs)

    method.__name__ = name
    return method


def _inner_attribute(self: Any, name: str) -> Any:
    if name == "_inner":  # looked up before __init__ set it
        raise AttributeError(name)
    return getattr(self._inner, name)


def _wrapping(base: type, own: dict[str, Any]) -> type:
    """A subclass of the installed ``base`` ABC whose abstract methods all delegate to
    ``self._inner`` except those in ``own`` (releases differ in what the ABC asks for)."""
    namespace = {name: _delegate(name) for name in getattr(base, "__abstractmethods__", ())}
    namespace.update(own)
    namespace["__getattr__"] = _inner_attribute
    return type(f"Recording{base.__name__}", (base,), namespace)


class DaemonThreads(concurrent.futures.Executor):
    """Workflow activations run on daemon threads, a new one only when none is idle.

    ``ThreadPoolExecutor`` threads are joined when the interpreter exits, so workflow code that
    never gives its thread back (it blocks, or swallows its eviction and waits again) would keep
    the process from ending after the check has reported it; these threads end with it. A thread
    idle for ``IDLE_SECONDS`` ends too (the Replayer never shuts down an executor it is given, so
    each check would otherwise leave its threads waiting for good).
    """

    IDLE_SECONDS = 30.0

    def __init__(self, prefix: str) -> None:
        self._prefix = prefix
        self._work: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = self._started = 0

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        with self._lock:
            start = self._idle == 0
            if start:
                self._started += 1
            else:
                self._idle -= 1
        self._work.put((future, fn, args, kwargs))
        if start:
            threading.Thread(target=self._serve, name=f"{self._prefix}_{self._started - 1}",
                             daemon=True).start()  # fmt: skip
        return future

    def _serve(self) -> None:
        while True:
            try:
                future, fn, args, kwargs = self._work.get(timeout=self.IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    # Only a thread no submit has counted on may go (submit takes an idle
                    # thread's place under the lock before it queues the work).
                    if self._idle > 0:
                        self._idle -= 1
                        return
                continue
            try:
                if future.set_running_or_notify_cancel():
                    try:
                        future.set_result(fn(*args, **kwargs))
                    except BaseException as error:  # the activation's, for its awaiter
                        future.set_exception(error)
            except BaseException:  # an interruption arriving late: keep serving
                pass
            with self._lock:
                self._idle += 1


def _activate(self: Any, act: Any) -> Any:
    completion = self._inner.activate(act)
    jobs = [str(job.WhichOneof("variant")) for job in act.jobs]
    local_only = bool(act.jobs) and all(
        job.WhichOneof("variant") == "resolve_activity"
        and getattr(job.resolve_activity, "is_local", False)
        for job in act.jobs
    )
    entry = Activation(jobs, local_only, completion.HasField("failed"))
    if completion.HasField("successful"):
        entry.commands = list(completion.successful.commands)
    self._sink.append(entry)
    return completion


class _Recording:
    """Where the activations of the replay under way go: a new list for each replay, taken by
    each workflow instance when it is created, so that an abandoned replay still running
    cannot write into the next one's."""

    activations: list[Activation]

    def __init__(self) -> None:
        self.activations = []


def _recording_runner(inner: Any, recording: _Recording) -> Any:
    from temporalio.worker import WorkflowInstance, WorkflowRunner

    def init(self: Any, inner: Any, sink: Any) -> None:
        self._inner, self._sink = inner, sink

    instance_class = _wrapping(WorkflowInstance, {"__init__": init, "activate": _activate})

    def create_instance(self: Any, det: Any) -> Any:
        return instance_class(self._inner.create_instance(det), self._sink.activations)

    runner_class = _wrapping(WorkflowRunner, {"__init__": init, "create_instance": create_instance})
    return runner_class(inner, recording)


#: Threads that run workflow code for a check: their SDK warnings (``Failed activation on
#: workflow ...`` with the code's traceback, which the check reports as the failure) are not
#: logged again.
THREAD_PREFIX = "toolkit-replay-check"
_SDK_LOGGERS = ("temporalio.worker._workflow_instance", "temporalio.worker._workflow")


class _QuietReplayThreads(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.threadName.startswith(THREAD_PREFIX) and record.levelno < logging.ERROR)


_QUIET_THREADS = _QuietReplayThreads()


class Session:
    """Replays histories one at a time with the given code (one ``Replayer``).

    Parameters
    ----------
    workflows
        Workflow classes, or specs naming them (see :func:`workflow_classes`).
    options
        ``temporalio.worker.Replayer`` keyword arguments (``data_converter``, ``interceptors``,
        ``workflow_runner``, ``plugins``, ``runtime``, ...), or a spec of a function returning
        them. A given workflow runner is wrapped, not replaced; options this release's
        ``Replayer`` does not take raise ``TypeError``.
    """

    def __init__(self, workflows: Iterable[Any], options: Any = None) -> None:
        from temporalio.worker import Replayer, UnsandboxedWorkflowRunner
        from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

        self.classes = workflow_classes(workflows)
        if not self.classes:
            raise TypeError("no workflow classes given")
        self.types, self.dynamic = workflow_types(self.classes)
        given = load_object(options)() if isinstance(options, str) else dict(options or {})
        if not isinstance(given, dict):
            raise TypeError(f"{options!r} returned {type(given).__name__}; expected a dict of "
                            "Replayer keyword arguments")
        accepted = inspect.signature(Replayer).parameters
        self._recording = _Recording()
        kwargs = dict(given)
        if "runtime" in accepted and "runtime" not in given and quiet_runtime() is not None:
            kwargs["runtime"] = quiet_runtime()
        if "workflow_task_executor" in accepted and "workflow_task_executor" not in given:
            kwargs["workflow_task_executor"] = DaemonThreads(THREAD_PREFIX)
            for name in _SDK_LOGGERS:
                logging.getLogger(name).addFilter(_QUIET_THREADS)  # a filter is added once
        unknown = sorted(set(kwargs) - set(accepted))
        if unknown:
            raise TypeError(f"this temporalio's Replayer takes no {', '.join(unknown)}")
        replayer = Replayer(workflows=self.classes, **kwargs)
        # The runners are wrapped once plugins have configured them: a plugin adds its sandbox
        # pass-through modules only to a runner it recognises as the sandbox.
        config = getattr(replayer, "_config", None)
        if isinstance(config, dict) and "workflow_runner" in config:
            config["workflow_runner"] = _recording_runner(
                config.get("workflow_runner") or SandboxedWorkflowRunner(), self._recording)
            if "unsandboxed_workflow_runner" in config:
                config["unsandboxed_workflow_runner"] = _recording_runner(
                    config["unsandboxed_workflow_runner"] or UnsandboxedWorkflowRunner(),
                    self._recording)
        else:  # a release that keeps its options elsewhere (and has no plugins)
            kwargs["workflow_runner"] = _recording_runner(
                given.get("workflow_runner") or SandboxedWorkflowRunner(), self._recording)
            if "unsandboxed_workflow_runner" in accepted:
                kwargs["unsandboxed_workflow_runner"] = _recording_runner(
                    given.get("unsandboxed_workflow_runner") or UnsandboxedWorkflowRunner(),
                    self._recording)
            replayer = Replayer(workflows=self.classes, **kwargs)
        self._replayer = replayer

    async def replay(
        self, workflow_id: str, events: Sequence[Any], timeout: float | None = None
    ) -> Replayed:
        """Replay one history (``HistoryEvent`` messages) under ``workflow_id``.

        A replay that takes longer than ``timeout`` seconds is ``failed`` with a message saying
        so; it is abandoned, not stopped (only a worker process can be stopped: see
        :mod:`toolkit.replay_check.pool`): its task is cancelled, which workflow code that
        swallows its eviction can keep from ever finishing, so the caller must not wait for
        its loop's tasks (see :mod:`toolkit.replay_check.in_process`).
        """
        from temporalio.client import WorkflowHistory

        activations = self._recording.activations = []
        history = WorkflowHistory(workflow_id, list(events))
        started = time.perf_counter()
        task = asyncio.ensure_future(self._one(history))
        done, _ = await asyncio.wait({task}, timeout=timeout)
        seconds = time.perf_counter() - started
        if not done:
            task.cancel()
            message = f"replay did not finish within {timeout:g} s (timeout)"
            return Replayed("failed", "TimeoutError", message, list(activations), seconds)
        outcome, error_type, message = _classify(task.result())
        return Replayed(outcome, error_type, message, list(activations), seconds)

    async def _one(self, history: Any) -> BaseException | None:
        try:
            result = await self._replayer.replay_workflow(history, raise_on_replay_failure=False)
        except TypeError as error:
            if "raise_on_replay_failure" not in str(error):
                return error
            try:  # releases before raise_on_replay_failure raise the failure instead
                await self._replayer.replay_workflow(history)
            except Exception as failure:
                return failure
            return None
        except Exception as error:  # the Replayer itself failed on this history
            return error
        return result.replay_failure


def _write(out: Any, data: dict[str, Any]) -> None:
    out.write(json.dumps(data) + "\n")
    out.flush()


async def _serve(requests: Any, out: Any) -> None:
    from temporalio.api.history.v1 import History

    setup = json.loads(requests.readline() or "{}")
    try:
        session = Session(setup.get("workflows") or [], setup.get("options"))
    except Exception as error:  # any import or option error: the parent reports it
        _write(out, {"error": f"{type(error).__name__}: {error}"})
        return
    from importlib import metadata

    _write(out, {"ready": True, "types": session.types, "dynamic": session.dynamic,
                 "temporalio": metadata.version("temporalio")})  # fmt: skip
    for line in requests:
        request = json.loads(line)
        events = History.FromString(base64.b64decode(request["history"])).events
        replayed = await session.replay(request["workflow_id"], events, request.get("timeout"))
        _write(out, replayed.to_json(int(request["index"])))


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m toolkit.replay.check_worker --results-fd N``: serve replays until stdin ends."""
    parser = argparse.ArgumentParser(description="Replay histories sent on stdin.")
    parser.add_argument("--results-fd", type=int, required=True)
    args = parser.parse_args(argv)
    with os.fdopen(args.results_fd, "w", encoding="utf-8") as out:
        asyncio.run(_serve(sys.stdin, out))
    # temporalio 1.1.0's bridge aborts the interpreter's finalization (PyGILState_Release) after
    # replays have run; everything is written and closed by now, so skip finalizing.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
