"""The four variants of the Go plugin twin: plugin state × ADK release.

Every variant's workflow is registered under one workflow type name and polls one task queue, so a
history recorded with one variant can be replayed against another: exactly what happened to the
Go workers after ``go get -u`` moved them from ADK v2.5.0 to v2.6.0, or after the plugin fix.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ADK_RELEASES",
    "TASK_QUEUE",
    "VARIANTS",
    "WORKFLOW_NAME",
    "Variant",
    "variant_named",
]

WORKFLOW_NAME = "GoogleAdkAgentWorkflow"
"""The one workflow type name every variant registers (replay needs it to match)."""

TASK_QUEUE = "go-twin-googleadk"
"""The one task queue every variant's worker polls (one variant's worker at a time)."""

ADK_RELEASES: tuple[str, ...] = ("v2.5.0", "v2.6.0")


@dataclass(frozen=True)
class Variant:
    """One combination of the plugin's state and the ADK release it runs with.

    Attributes
    ----------
    plugin_fixed : bool
        False: the plugin before the fix (every ``Tools()`` and every ``ProcessRequest()`` lists);
        True: with the fix (one listing per model step, state per agent run).
    adk_release : str
        ``v2.5.0`` (``Tools()`` once per agent run, cached) or ``v2.6.0`` (``Tools()`` in every
        model step, adk-go PR #785).
    """

    plugin_fixed: bool
    adk_release: str

    def __post_init__(self) -> None:
        if self.adk_release not in ADK_RELEASES:
            raise ValueError(
                f"Variant: unknown ADK release {self.adk_release!r}; expected one of {ADK_RELEASES}"
            )

    @property
    def plugin_state(self) -> str:
        """``before_fix`` or ``with_fix``."""
        return "with_fix" if self.plugin_fixed else "before_fix"

    @property
    def tools_every_step(self) -> bool:
        """Whether ADK's toolProcessor calls ``Tools()`` in every model step (v2.6.0)."""
        return self.adk_release == "v2.6.0"

    @property
    def name(self) -> str:
        """Directory-safe name, e.g. ``before_fix-adk_v2.5.0``."""
        return f"{self.plugin_state}-adk_{self.adk_release}"

    def __str__(self) -> str:
        return self.name


VARIANTS: tuple[Variant, ...] = (
    Variant(plugin_fixed=False, adk_release="v2.5.0"),
    Variant(plugin_fixed=False, adk_release="v2.6.0"),
    Variant(plugin_fixed=True, adk_release="v2.5.0"),
    Variant(plugin_fixed=True, adk_release="v2.6.0"),
)


def variant_named(name: str) -> Variant:
    """The variant whose :attr:`Variant.name` is ``name``.

    Raises
    ------
    KeyError
        When no variant has that name (the message lists the known names).
    """
    for variant in VARIANTS:
        if variant.name == name:
            return variant
    raise KeyError(f"no twin variant named {name!r}; known: {[v.name for v in VARIANTS]}")
