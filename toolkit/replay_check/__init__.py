"""``tk.replay_check``: replay recorded histories with new code before it ships (see
:mod:`toolkit.replay_check.check`), with the :class:`ReplayCheck` it returns.

Modules: :mod:`.sources` and :mod:`.server` (where histories come from), :mod:`.items` (one
history each), :mod:`.sampling`, :mod:`.in_process` and :mod:`.pool` (replaying here, or in
worker processes), :mod:`.explain`, :mod:`.groups`, :mod:`.result` (the :class:`ReplayCheck`),
:mod:`.report` (its page, through the investigation report), :mod:`.pytest_plugin` (the check
in a project's own test suite).

The package is callable (``toolkit.replay_check(...)`` runs :func:`replay_check`): importing it
binds the package onto ``toolkit`` (the pytest plugin does at startup), which would otherwise
hide the function of the same name. Its names load on first use, so that the plugin costs a
test session nothing until a test asks for a check.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

__all__ = ["ReplayCheck", "replay_check"]

_EXPORTS = {
    "replay_check": "toolkit.replay_check.check",
    "ReplayCheck": "toolkit.replay_check.result",
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'toolkit.replay_check' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


class _CallableModule(types.ModuleType):
    """The package itself runs :func:`replay_check` (see the module docstring)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from toolkit.replay_check.check import replay_check

        return replay_check(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

if TYPE_CHECKING:
    from toolkit.replay_check.check import replay_check
    from toolkit.replay_check.result import ReplayCheck
