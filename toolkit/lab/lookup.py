"""Looking up a recorder's environments and scenarios by name, with one error for unknown names.

Scenario modules run inside the old version environments too, so this imports nothing at module
level but the standard library (the error class is imported when it is raised).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, TypeVar

__all__ = ["by_name"]


class _Named(Protocol):
    @property
    def name(self) -> str: ...


T = TypeVar("T", bound=_Named)


def by_name(candidates: Iterable[T], name: str, what: str) -> T:
    """The candidate called ``name``.

    Parameters
    ----------
    candidates
        Environments or scenarios (anything with a ``name``).
    what
        What they are, for the error (``"scenario"``, ``"pydantic-ai environment"`` ...).

    Raises
    ------
    LabError
        For an unknown name (the message lists the known ones).
    """
    known = list(candidates)
    for candidate in known:
        if candidate.name == name:
            return candidate
    from toolkit.errors import LabError

    raise LabError(f"unknown {what} {name!r}; expected one of "
                   + ", ".join(c.name for c in known))
