"""``tk.replay_check`` against the lab's replay matrices: every cell reproduced, version by version.

Each matrix in ``data/`` stores what temporalio's ``Replayer`` said when each replaying version
replayed every recorded history. :func:`reproduce` runs :func:`toolkit.replay_check` the way a
team would before shipping that version: in the version's own environment (its virtual
environment under ``data/venvs/``, built by the lab from exact pins; the project's interpreter
for the versions it has itself), over the histories the matrix lists, with the workers' own
``Replayer`` options, and sets its verdict and message next to the stored ones.

Matrices: ``go_twin`` (the Go plugin twin's four variants, all in this interpreter), ``adk``
(google-adk releases), ``openai_agents``, ``pydantic_ai``, ``flag_pairs`` (temporalio releases on
either side of an SDK flag, and code changes) and ``gallery`` (each recorded code change: v1 and
v2 histories replayed by v1 and v2 code).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from toolkit.errors import LabError
from toolkit.lab.adk_python.envs import VENVS_DIR
from toolkit.replay.code_replay import rust_debug_field

__all__ = [
    "MATRICES", "Replaying", "explained_off_the_replayer", "matrix_rows", "replayings",
    "reproduce", "run_check",
]  # fmt: skip

#: The matrices :func:`replayings` knows, by their folder under ``data/``.
MATRICES = ("go_twin", "adk", "openai_agents", "pydantic_ai", "flag_pairs", "gallery")

_OUTCOMES = {"ok": "ok", "nondeterminism": "nondeterminism", "error": "failed", "other": "failed"}


@dataclass(frozen=True)
class Replaying:
    """One replaying version of a matrix and how :func:`toolkit.replay_check` runs it.

    Attributes
    ----------
    matrix : str
        The matrix (a folder under ``data/``).
    name : str
        The version as the matrix's replayer column names it (a gallery version is
        ``<case>/v1`` or ``<case>/v2``).
    workflows : tuple of str
        The version's workflow classes, as specs.
    options : str
        The spec of the function building its workers' ``Replayer`` options.
    env : object or None
        Its version environment (None: this interpreter).
    """

    matrix: str
    name: str
    workflows: tuple[str, ...]
    options: str
    env: Any = None

    def python(self, venvs_dir: Path = VENVS_DIR) -> str | None:
        """The interpreter to replay in (None: this process)."""
        if self.env is None or self.env.main:
            return None
        return str(self.env.python(venvs_dir))

    def available(self, venvs_dir: Path = VENVS_DIR) -> bool:
        """Whether its environment is built (this interpreter's always is): the lab's stamp of
        a finished build is there."""
        if self.python(venvs_dir) is None:
            return True
        return (self.env.venv_dir(venvs_dir) / ".installed").is_file()


def _spec(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _gallery_rows(root: Path) -> pd.DataFrame:
    rows = []
    for case_file in sorted(root.glob("*/case.json")):
        case = json.loads(case_file.read_text(encoding="utf-8"))
        for key, replay in case["replays"].items():
            recorded, replayer = key.split("_on_")
            rows.append({"history": f"{case['name']}/{recorded}.json", "recorded": recorded,
                         "replayer": f"{case['name']}/{replayer}", "outcome": replay["outcome"],
                         "error_type": replay.get("error_type"),
                         "message": replay.get("replayer_error") or replay["message"]})  # fmt: skip
    return pd.DataFrame(rows)


def matrix_rows(matrix: str, data_dir: Path) -> pd.DataFrame:
    """A matrix's rows in uniform columns: ``history`` (relative to ``data_dir/matrix``),
    ``recorded``, ``replayer``, ``outcome`` (``ok``, ``nondeterminism``, ``failed``),
    ``error_type``, ``message`` and ``core_message`` (the failure's own message)."""
    root = Path(data_dir) / matrix
    if matrix == "gallery":
        rows = _gallery_rows(root)
    else:
        from toolkit.replay.report import read_replay_matrix

        rows = read_replay_matrix(root / "replay_matrix.csv")
    rows = rows[["history", "recorded", "replayer", "outcome", "error_type", "message"]].copy()
    rows["outcome"] = rows["outcome"].map(_OUTCOMES)
    rows["core_message"] = [_core(m) for m in rows["message"]]
    return rows.reset_index(drop=True)


def _core(message: Any) -> str | None:
    if not isinstance(message, str) or not message:
        return None
    return rust_debug_field(message, "message") or message


def _agents(matrix: str) -> Callable[[str], Replaying]:
    workflows = {
        "adk": ("toolkit.lab.adk_python.workflow:LabAdkAgentWorkflow", "adk_python"),
        "openai_agents": ("toolkit.lab.openai_agents.workflow:LabOpenAIAgentWorkflow",
                          "openai_agents"),
        "pydantic_ai": ("toolkit.lab.pydantic_ai.workflow:LabPydanticAIAgentWorkflow",
                        "pydantic_ai"),
    }[matrix]  # fmt: skip

    def one(name: str) -> Replaying:
        import importlib

        envs = importlib.import_module(f"toolkit.lab.{workflows[1]}.envs")
        return Replaying(matrix, name, (workflows[0],),
                         f"toolkit.lab.{workflows[1]}.replay:replayer_options",
                         envs.environment(name))  # fmt: skip

    return one


def _go_twin(name: str) -> Replaying:
    from toolkit.lab.go_twin.workflows import WORKFLOW_CLASSES

    return Replaying("go_twin", name, (_spec(WORKFLOW_CLASSES[name]),),
                     "toolkit.lab.sandbox:sandbox_options")  # fmt: skip


def _flag_pairs(name: str) -> Replaying:
    from toolkit.lab.flag_pairs.envs import environment
    from toolkit.lab.flag_pairs.workflows import CODE_CHANGES

    release, _, code = name.partition("/")
    classes = tuple(_spec(cls) for cls in CODE_CHANGES[code or "same"])
    return Replaying("flag_pairs", name, classes, "toolkit.lab.flag_pairs.replay:replayer_options",
                     environment(f"temporalio-{release}"))  # fmt: skip


def _gallery(root: Path) -> Callable[[str], Replaying]:
    def one(name: str) -> Replaying:
        case_name, version = name.split("/")
        case = json.loads((root / case_name / "case.json").read_text(encoding="utf-8"))
        dotted = [case[version]["class"], *case["support"]]
        specs = tuple(":".join(d.rsplit(".", 1)) for d in dotted)
        return Replaying("gallery", name, specs, "toolkit.lab.sandbox:sandbox_options")

    return one


def replayings(matrix: str, data_dir: Path) -> list[Replaying]:
    """Every replaying version of ``matrix`` (one of :data:`MATRICES`), in matrix order."""
    if matrix not in MATRICES:
        raise LabError(f"no replay matrix {matrix!r}; expected one of {', '.join(MATRICES)}")
    names = list(dict.fromkeys(matrix_rows(matrix, data_dir)["replayer"]))
    make: Callable[[str], Replaying]
    if matrix == "go_twin":
        make = _go_twin
    elif matrix == "flag_pairs":
        make = _flag_pairs
    elif matrix == "gallery":
        make = _gallery(Path(data_dir) / "gallery")
    else:
        make = _agents(matrix)
    return [make(name) for name in names]


def reproduce(
    replaying: Replaying, data_dir: Path, *, venvs_dir: Path = VENVS_DIR, workers: int = 1,
    check: Any = None,
) -> pd.DataFrame:  # fmt: skip
    """Run :func:`toolkit.replay_check` as ``replaying`` over the histories its matrix lists.

    Returns the matrix rows of that replayer with the check's ``check_outcome``,
    ``check_error_type``, ``check_core_message``, ``group`` and ``explanation`` next to them, and
    ``agrees`` (same outcome, and on failure the same error type and message). ``check``: the
    :class:`~toolkit.replay_check.ReplayCheck` when already run (tests share one per version).

    Raises
    ------
    LabError
        When the version's environment is not built (``make record`` builds them).
    """
    rows = matrix_rows(replaying.matrix, data_dir)
    rows = rows[rows["replayer"] == replaying.name].reset_index(drop=True)
    if check is None:
        check = run_check(replaying, data_dir, venvs_dir=venvs_dir, workers=workers)
    results = check.results
    assert len(results) == len(rows), (len(results), len(rows))
    out = rows.assign(
        check_outcome=results["outcome"].to_numpy(),
        check_error_type=results["error_type"].to_numpy(),
        check_core_message=results["core_message"].to_numpy(),
        group=results["group"].to_numpy(), explanation=results["explanation"].to_numpy(),
    )  # fmt: skip
    out["agrees"] = [
        r.outcome == r.check_outcome and (r.outcome == "ok" or (
            r.core_message == r.check_core_message and r.error_type == r.check_error_type))
        for r in out.itertuples()
    ]  # fmt: skip
    return out


def run_check(
    replaying: Replaying, data_dir: Path, *, venvs_dir: Path = VENVS_DIR, workers: int = 1
) -> Any:
    """The :class:`~toolkit.replay_check.ReplayCheck` of ``replaying`` over its matrix's
    histories, in matrix order.

    Raises
    ------
    LabError
        When the version's environment is not built.
    """
    from toolkit.replay_check import replay_check

    if not replaying.available(venvs_dir):
        raise LabError(f"{replaying.name}: no environment at {replaying.python(venvs_dir)} "
                       "(make record builds it)")  # fmt: skip
    rows = matrix_rows(replaying.matrix, data_dir)
    rows = rows[rows["replayer"] == replaying.name]
    root = Path(data_dir) / replaying.matrix
    return replay_check([root / h for h in rows["history"]], list(replaying.workflows),
                        options=replaying.options, python=replaying.python(venvs_dir),
                        workers=workers, timeout=300.0)  # fmt: skip


def explained_off_the_replayer(check: Any) -> list[dict[str, Any]]:
    """The failures of ``check`` that the model explains in other words than the Replayer's.

    An explanation comes from the model of sdk-core matching the commands the code issued in that
    very replay; its ``core_message`` must be the one the Replayer printed (``[TMPRL1100] ...``,
    with the whole ``HistoryEvent { ... }`` where sdk-core prints it). Each row: ``history``, the
    Replayer's ``core_message`` and the model's ``model_message``. Failures the model does not
    explain at all are not listed (the check's explanation is read off the message there).
    """
    rows = check.results
    return [
        {"history": int(i), "core_message": rows.at[i, "core_message"],
         "model_message": found.core_message}
        for i, found in sorted(check.divergences.items())
        if found.core_message != rows.at[i, "core_message"]
    ]  # fmt: skip
