"""Worker and sdk-core logs into a file, not onto the notebook or the terminal.

A lab recording or a live replay makes the SDK log on purpose: an activity that fails logs its
traceback, and sdk-core prints a ``WARN`` line with the whole failure for every workflow task
that fails (every replay that finds a nondeterminism error). Those lines are evidence, so
:func:`capture_worker_logs` keeps them in a log file in the format ``toolkit.read_logs`` reads,
and the notebook shows them where it means to (``tk.read_logs(path)``).

Examples
--------
>>> with capture_worker_logs("worker.log") as path:                  # doctest: +SKIP
...     paths = await record_samples_async(server.address, out, quick=True)
>>> tk.read_logs(path).groupby("level").size()                       # doctest: +SKIP
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["LOG_FORMAT", "capture_worker_logs"]

#: Python logging's usual layout (UTC), which ``toolkit.read_logs`` detects as ``python``.
LOG_FORMAT = "%(asctime)s - %(name)s - %(levelname)s - %(message)s"

#: How long sdk-core may hold log records before forwarding them (a few ms; generous).
_CORE_BUFFER_SECONDS = 0.3

#: Loggers the SDK writes to: its own (activity, worker, sdk-core forwarded) and the lab's.
_LOGGERS = ("temporalio", "toolkit.lab")


def _forward_core_logs() -> None:
    """Make sdk-core hand its log lines to the ``temporalio.core`` Python logger.

    sdk-core writes to the process's stderr by itself unless its runtime forwards records; the
    default runtime is replaced before any client or replayer of this block is created.
    """
    from temporalio.runtime import (
        LogForwardingConfig,
        LoggingConfig,
        Runtime,
        TelemetryConfig,
        TelemetryFilter,
    )

    forwarding = LogForwardingConfig(logger=logging.getLogger("temporalio.core"))
    config = LoggingConfig(filter=TelemetryFilter(core_level="WARN", other_level="WARN"),
                           forwarding=forwarding)  # fmt: skip
    Runtime.set_default(Runtime(telemetry=TelemetryConfig(logging=config)),
                        error_if_already_set=False)  # fmt: skip


@contextmanager
def capture_worker_logs(path: str | Path, *, level: int = logging.INFO) -> Iterator[Path]:
    """Write the SDK's and sdk-core's log records to ``path`` while the block runs.

    Clients, workers and replayers created inside the block log there and nowhere else (the
    records do not reach the root logger, so no traceback or ``WARN`` line lands in a notebook
    cell or a terminal). The file is appended to, so several blocks can share it.

    Parameters
    ----------
    path
        The log file (created with its folder).
    level
        The lowest level written.

    Yields
    ------
    pathlib.Path
        ``path``, for ``toolkit.read_logs``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _forward_core_logs()
    formatter = logging.Formatter(LOG_FORMAT)
    formatter.converter = time.gmtime  # asctime carries no offset: write UTC
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(formatter)
    handler.setLevel(level)
    saved = []
    for name in _LOGGERS:
        logger = logging.getLogger(name)
        saved.append((logger, logger.propagate, logger.level))
        logger.addHandler(handler)
        logger.propagate = False
        if logger.level == logging.NOTSET or logger.level > level:
            logger.setLevel(level)
    try:
        yield path
    finally:
        # sdk-core hands its records over in batches a few milliseconds old: wait for the last.
        time.sleep(_CORE_BUFFER_SECONDS)
        for logger, propagate, old_level in saved:
            logger.removeHandler(handler)
            logger.propagate = propagate
            logger.setLevel(old_level)
        handler.close()
