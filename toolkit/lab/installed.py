"""What a version environment has installed, as the recorders' compat modules ask it.

Runs inside every version environment (worker and replay processes), so it imports only the
standard library at module level (the error class is imported when it is raised).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from importlib import metadata
from types import ModuleType

__all__ = ["first_importable", "python_version", "version_of"]


def first_importable(candidates: Sequence[str], what: str) -> ModuleType:
    """The first of ``candidates`` (module names, newest location first) that imports.

    Raises
    ------
    LabError
        When none imports: ``<what> is not importable (<each module's import error>)``.
    """
    errors = []
    for name in candidates:
        try:
            return importlib.import_module(name)
        except ImportError as error:
            errors.append(f"{name}: {error}")
    from toolkit.errors import LabError

    raise LabError(f"{what} is not importable (" + "; ".join(errors) + ")")


def version_of(distribution: str) -> str | None:
    """The installed version of ``distribution``, None when it is not installed."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def python_version() -> str:
    """This interpreter's version, ``major.minor.micro``."""
    return ".".join(str(p) for p in sys.version_info[:3])
