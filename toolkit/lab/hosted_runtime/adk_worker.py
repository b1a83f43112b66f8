"""Recorder A's worker with a production-like log: timestamps, levels, logger names, in UTC.

``python -m toolkit.lab.hosted_runtime.adk_worker --address HOST:PORT --task-queue QUEUE``

The lab's own worker (:mod:`toolkit.lab.adk_python.worker`) leaves logging to Python's defaults
(``WARNING:root:msg``, no time), which cannot be lined up with a history. This entry point
configures the root logger the way services commonly do (``%(asctime)s - %(name)s -
%(levelname)s - %(message)s``, UTC), forwards the SDK core's own log lines into it, then runs
that same worker. Everything goes to stderr; stdout carries only the ready line.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
from collections.abc import Sequence

__all__ = ["LOG_FORMAT", "configure_logging"]

LOG_FORMAT = "%(asctime)s - %(name)s - %(levelname)s - %(message)s"


def configure_logging(level: int = logging.INFO) -> None:
    """Root logger to stderr in :data:`LOG_FORMAT` (UTC), SDK core lines forwarded into it."""
    from temporalio.runtime import (
        LogForwardingConfig,
        LoggingConfig,
        Runtime,
        TelemetryConfig,
        TelemetryFilter,
    )

    formatter = logging.Formatter(LOG_FORMAT)
    formatter.converter = time.gmtime  # asctime prints no offset: make it UTC
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # Connection chatter of the HTTP clients says nothing about the agent.
    for noisy in ("httpx", "httpcore", "mcp.client.streamable_http"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    core = LoggingConfig(filter=TelemetryFilter(core_level="WARN", other_level="WARN"),
                         forwarding=LogForwardingConfig(logger=logging.getLogger("temporalio.core")))
    Runtime.set_default(Runtime(telemetry=TelemetryConfig(logging=core)),
                        error_if_already_set=False)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Recorder A worker with timestamped logs.")
    parser.add_argument("--address", required=True, help="Temporal frontend, host:port")
    parser.add_argument("--task-queue", required=True)
    parser.add_argument("--identity", default="duplicate-tool-capture")
    args = parser.parse_args(argv)
    configure_logging()
    from toolkit.lab.adk_python.worker import run_worker

    asyncio.run(run_worker(args.address, args.task_queue, args.identity))


if __name__ == "__main__":
    main()
