"""The built-in gallery cases; importing this package registers them, in this order."""

from toolkit.lab.gallery.builtin import (  # noqa: F401
    activity_cases,
    child_cases,
    handler_cases,
    misc_cases,
    patch_cases,
    timer_cases,
)
