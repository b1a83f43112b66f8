"""Version environments of Recorder A: one virtual environment per google-adk version.

Each environment pins google-adk and the temporalio release whose Google ADK plugin accepts it
(see ``../shared/context/python-adk-on-temporal.md``: temporalio 1.24-1.30 allow google-adk 1.x,
1.31-1.33 allow >=2.2, 1.34+ allow >=2.8). The environments live under
``data/venvs/<name>`` (gitignored); the project itself is put on ``PYTHONPATH`` of every process
started there, so the same workflow code runs in each. The newest pair is the project's own
environment (the interpreter running this code), so tests record live without extra venvs.
"""

from __future__ import annotations

import subprocess
import sys
import venv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from toolkit.errors import LabError
from toolkit.lab.lookup import by_name
from toolkit.lab.processes import REPO_ROOT, process_env

__all__ = [
    "ENVIRONMENTS", "MAIN_ENV", "AdkEnvironment", "VersionEnvironment", "ensure_environment",
    "environment", "module_command", "process_env",
]

VENVS_DIR = REPO_ROOT / "data" / "venvs"


class VersionEnvironment(Protocol):
    """What building and running a version environment needs (every framework's recorder)."""

    @property
    def name(self) -> str: ...
    @property
    def requirements(self) -> tuple[str, ...]: ...
    @property
    def main(self) -> bool: ...
    def venv_dir(self, venvs_dir: Path = ...) -> Path: ...
    def python(self, venvs_dir: Path = ...) -> Path: ...


class VenvPaths:
    """Where a version environment (a dataclass with ``name`` and ``main``) lives: the
    project's own interpreter for the main environment, else ``<venvs_dir>/<name>``."""

    name: str
    main: bool

    def venv_dir(self, venvs_dir: Path = VENVS_DIR) -> Path:
        return Path(sys.prefix) if self.main else venvs_dir / self.name

    def python(self, venvs_dir: Path = VENVS_DIR) -> Path:
        """The interpreter of this environment."""
        if self.main:
            return Path(sys.executable)
        return self.venv_dir(venvs_dir) / "bin" / "python"


@dataclass(frozen=True)
class AdkEnvironment(VenvPaths):
    """A google-adk / temporalio pair and where its interpreter lives.

    Attributes
    ----------
    name : str
        ``adk-<google-adk version>``; also the directory name under ``data/adk/``.
    google_adk, temporalio : str
        Pinned versions.
    requirements : tuple of str
        What ``pip install`` gets (exact pins).
    main : bool
        True for the project's own environment (no venv is built).
    """

    name: str
    google_adk: str
    temporalio: str
    requirements: tuple[str, ...] = field(default=())
    main: bool = False

    @property
    def listing_policy(self) -> str:
        """``per-step`` (google-adk < 1.29: L M L C L M) or ``cached`` (>= 1.29: L M C M)."""
        major, minor = (int(p) for p in self.google_adk.split(".")[:2])
        return "per-step" if (major, minor) < (1, 29) else "cached"



def _pair(google_adk: str, temporalio: str, *extra: str) -> AdkEnvironment:
    requirements = (
        f"google-adk=={google_adk}", f"temporalio[pydantic,opentelemetry]=={temporalio}", *extra
    )
    return AdkEnvironment(f"adk-{google_adk}", google_adk, temporalio, requirements)


ENVIRONMENTS: tuple[AdkEnvironment, ...] = (
    _pair("1.27.5", "1.30.0"),
    _pair("1.28.1", "1.30.0"),
    _pair("1.29.0", "1.30.0"),
    _pair("1.39.1", "1.30.0"),
    # google-adk 2.x makes MCP optional; the plugin's MCP toolsets need MCP SDK v1. 2.2.0 is the
    # oldest 2.x any plugin accepts (temporalio 1.31).
    _pair("2.2.0", "1.31.0", "mcp==1.30.0"),
    _pair("2.5.0", "1.33.0", "mcp==1.30.0"),
    # temporalio 1.33 with google-adk >= 2.9 needs the sandbox pass-through added by the worker.
    _pair("2.9.2", "1.33.0", "mcp==1.30.0"),
    AdkEnvironment("adk-2.13.0", "2.13.0", "1.35.0", main=True),
)
"""Every environment Recorder A records, oldest google-adk first."""

MAIN_ENV = next(env for env in ENVIRONMENTS if env.main)


def environment(name: str) -> AdkEnvironment:
    """The environment called ``name`` (``adk-1.28.1`` ...); a
    :class:`~toolkit.errors.LabError` naming the known ones for any other name."""
    return by_name(ENVIRONMENTS, name, "ADK environment")


def ensure_environment(env: VersionEnvironment, venvs_dir: Path = VENVS_DIR) -> Path:
    """Build ``env``'s virtual environment from its pinned requirements if needed.

    A ``.installed`` stamp holding the requirements marks a finished build; a changed pin list
    rebuilds. Returns the interpreter path.

    Raises
    ------
    LabError
        When pip fails (the message ends with pip's output).
    """
    python = env.python(venvs_dir)
    if env.main:
        return python
    target = env.venv_dir(venvs_dir)
    stamp = target / ".installed"
    wanted = "\n".join(env.requirements) + "\n"
    if stamp.exists() and stamp.read_text() == wanted and python.exists():
        return python
    venv.EnvBuilder(with_pip=True, clear=True).create(target)
    command = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
               *env.requirements]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise LabError(f"building {target} failed (pip exit {done.returncode}): "
                       f"{(done.stdout + done.stderr)[-3000:]}")
    stamp.write_text(wanted)
    return python


# Runs a toolkit.lab module without executing toolkit/__init__.py: that file imports the analysis
# half of the toolkit (pandas, the newest temporalio's APIs), which old version environments lack
# and the lab's worker and replay processes do not need. argv: root, module, module arguments.
_BOOTSTRAP = """
import runpy, sys, types
root, module = sys.argv.pop(1), sys.argv.pop(1)
package = types.ModuleType("toolkit")
package.__path__ = [root + "/toolkit"]
sys.modules["toolkit"] = package
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


def module_command(python: Path, module: str, *args: str) -> list[str]:
    """Command running ``python -m module args`` with only the lab half of the toolkit."""
    return [str(python), "-c", _BOOTSTRAP, str(REPO_ROOT), module, *args]

