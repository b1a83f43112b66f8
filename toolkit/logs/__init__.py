"""Worker and agent logs: ``read_logs`` and the detectors built on it."""

from toolkit.logs.detectors import (
    LOG_DETECTORS,
    dead_letters,
    duplicate_tools,
    mcp_client_failures,
    nondeterminism_in_logs,
    retries,
)
from toolkit.logs.read import read_logs

__all__ = [
    "LOG_DETECTORS",
    "dead_letters",
    "duplicate_tools",
    "mcp_client_failures",
    "nondeterminism_in_logs",
    "read_logs",
    "retries",
]
