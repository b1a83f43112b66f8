"""The toolkit's one exception family.

Every error the toolkit raises on purpose derives from :class:`ToolkitError`, so a notebook can
catch them all with one ``except``. Messages name the source and, where there is one, the position,
and say what was expected.
"""

from __future__ import annotations


class ToolkitError(Exception):
    """Base class of every error raised by the toolkit."""


class LocatedError(ToolkitError, ValueError):
    """Input the toolkit cannot read, located: ``source at position: problem; expected ...``.

    Attributes
    ----------
    source : str
        What was being read (a path or a description such as ``<bytes>``).
    problem : str
        What is wrong.
    position : str or None
        Where the problem is (``byte 1234``, ``line 3 column 7``, ``event #5``), when known.
    expected : str or None
        What the reader expected to find there.
    """

    def __init__(
        self,
        source: str,
        problem: str,
        *,
        position: str | None = None,
        expected: str | None = None,
    ) -> None:
        self.source = source
        self.problem = problem
        self.position = position
        self.expected = expected
        where = f" at {position}" if position else ""
        hint = f"; expected {expected}" if expected else ""
        super().__init__(f"{source}{where}: {problem}{hint}")


class HistoryFormatError(LocatedError):
    """A source does not hold a workflow history in any dialect the toolkit reads."""


class LogFormatError(LocatedError):
    """A log source (or a logs frame) cannot be read at all; per-line parse problems are not
    errors but rows with a ``parse_error``."""


class PayloadError(ToolkitError, ValueError):
    """A payload could not be decoded with the given converter or codec."""


class ServerError(ToolkitError, RuntimeError):
    """A Temporal server (embedded or remote) could not be started, reached or queried."""


class LabError(ToolkitError, RuntimeError):
    """A lab recording could not be produced (environment, worker or scenario failure)."""
