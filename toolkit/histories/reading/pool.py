"""Decoding chunks of history files in worker processes, frames coming back still lazy.

A worker decodes a whole chunk of files into one events frame and sends it back. The frame's
``attributes``, ``extra`` and payload cells normally pickle as their decoded values (see
:mod:`toolkit.histories.columns.lazy`), which would make the parent pay for decoding every event
twice over; between processes of this pool they travel as what they are (the raw JSON they will
decode from), so the parent receives what an in-process read gives, at the cost of copying bytes.

Processes come from the ``forkserver`` start method (no fork of a threaded Jupyter kernel),
whose server imports the toolkit once for all its workers (:func:`start_early` has it do so
while the caller is still busy); a pool pays off from a few hundred files on. A script run
as a file without the ``if __name__ == "__main__":`` guard decodes in its own process instead
(its workers would otherwise run the script again).
"""

from __future__ import annotations

import multiprocessing
import os
import re
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from itertools import chain, islice
from multiprocessing import forkserver
from multiprocessing.reduction import ForkingPickler
from pathlib import Path
from typing import Any

import msgspec

from toolkit.histories.columns.lazy import LazyAttributes, LazyExtra, LazyPayloads
from toolkit.histories.reading.dialects import RawHistory

__all__ = ["decode_chunks", "resolve_workers", "run_chunks", "start_early"]

#: What the worker processes' server imports once, before it forks any worker.
_PRELOAD = ["toolkit.histories.reading.batch", "toolkit.datasets.writer", "toolkit.agents.budget"]


def resolve_workers(workers: int | None) -> int:
    """``None`` -> the usable cores; otherwise at least 1."""
    if workers is None:
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # not on Linux
            return max(1, os.cpu_count() or 1)
    if workers < 1:
        raise ValueError("workers must be at least 1 (or None for one per core)")
    return workers


def run_chunks(
    function: Callable[..., Any],
    chunks: Iterable[Any],
    args: tuple[Any, ...],
    workers: int | None,
) -> Iterator[Any]:
    """``function(chunk, *args)`` for each chunk, in order; in worker processes when
    ``workers`` asks for more than one and there is more than one chunk.

    ``chunks`` is consumed lazily: at most ``workers + 1`` chunks are in flight, so memory is
    bounded by the chunk size, not by the number of chunks.
    """
    queued = iter(chunks)
    first = list(islice(queued, 2))
    count = resolve_workers(workers)
    if count <= 1 or len(first) <= 1 or not _main_can_be_imported():
        for chunk in chain(first, queued):
            yield function(chunk, *args)
        return
    queued = chain(first, queued)
    watch = (os.getpid(), _PARENT_POLL_SECONDS)
    with ProcessPoolExecutor(
        count, mp_context=_context(), initializer=_end_with_parent, initargs=watch
    ) as pool:
        pending = deque(pool.submit(function, chunk, *args) for chunk in islice(queued, count + 1))
        while pending:
            result = pending.popleft().result()
            pending.extend(pool.submit(function, chunk, *args) for chunk in islice(queued, 1))
            yield result


#: How often a worker looks whether the process that started its pool is still there.
_PARENT_POLL_SECONDS = 1.0


def _end_with_parent(parent: int, every: float) -> None:
    """Worker initializer: end this worker once the process that started the pool is gone.

    A pool's workers wait for work on a queue whose other end they hold too, so a parent killed
    outright (SIGKILL, the OOM killer) would leave them waiting forever, each holding its
    imports. A daemon thread looks every ``every`` seconds whether the parent still exists and
    whether this worker was re-parented (the fork server it came from exits with the parent).
    """
    born_of = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(every)
            if os.getppid() != born_of or not _exists(parent):
                os._exit(1)  # nothing to flush: the results had nowhere to go

    threading.Thread(target=watch, name="toolkit-pool-parent", daemon=True).start()


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):  # gone, or its pid reused by someone else
        return False
    return True


def start_early(workers: int | None) -> None:
    """Start the server that forks the workers now, if a pool of ``workers`` may run here: it
    imports the toolkit (a second or two) while the caller still finds and hashes its files,
    instead of after. Unused, it only ends with the interpreter."""
    if resolve_workers(workers) > 1 and _main_can_be_imported():
        _context()
        forkserver.ensure_running()


def _context() -> multiprocessing.context.BaseContext:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_PRELOAD)
    return context


def _main_can_be_imported() -> bool:
    """Whether worker processes may import ``__main__``: Jupyter, a REPL and ``python -c`` have
    no main file; a script must keep its work under ``if __name__ == "__main__":`` (the rule of
    every ``forkserver``/``spawn`` pool), else its workers would run the script again."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if path is None or getattr(main, "__spec__", None) is not None:
        return True  # interactive, or run as a module (``python -m``), imported by name
    try:
        source = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return re.search(r"__name__\s*==\s*['\"]__main__['\"]", source) is not None


def decode_chunks(
    chunks: list[list[Path]], raise_errors: bool, read_options: dict[str, Any], workers: int | None
) -> Iterator[tuple[Any, list[dict[str, Any]]]]:
    """``(events frame, error rows)`` of each chunk of files, in order (see
    :func:`toolkit.histories.reading.batch.decode_files`)."""
    from toolkit.histories.reading.batch import decode_files

    if resolve_workers(workers) <= 1 or len(chunks) <= 1:
        for chunk in chunks:
            yield decode_files(chunk, raise_errors, read_options)
        return
    # Errors do not cross processes (a located error's constructor takes more than its message);
    # a file that failed in a worker is read again here to raise the real error.
    for frame, failures in run_chunks(decode_files, chunks, (False, read_options), workers):
        if raise_errors and failures:
            decode_files([Path(failures[0]["source"])], True, read_options)
        yield frame, failures


# Worker -> parent: cells stay undecoded. ``RawHistory`` travels without its typed events
# (parsed structs the cells never read again); the raw bytes the cells slice are kept.


def _raw_history(json_array: Any, document: Any, events: Any, name: str, where: str) -> RawHistory:
    return RawHistory(
        json_array=json_array, document=document, source_name=name, where=where,
        _json_events=events,
    )  # fmt: skip


def _reduce_history(history: RawHistory) -> tuple[Any, ...]:
    if history.proto_events is not None:
        raise TypeError("protobuf histories are not sent between processes")
    return (
        _raw_history,
        (history.json_array, history.document, history._json_events, history.source_name,
         history.where),
    )  # fmt: skip


def _reduce_json_cell(cell: LazyAttributes) -> tuple[Any, ...]:
    return (type(cell), (cell._history, cell._index, cell._key))


def _reduce_payloads(cell: LazyPayloads) -> tuple[Any, ...]:
    if cell._codec is None and isinstance(cell._raw, (bytes, msgspec.Raw)):
        return (LazyPayloads, (cell._raw, None))
    value = cell.value  # a protobuf message or a codec: send the decoded value
    return (type(value), (value,))


def _reduce_any_cell(cell: Any) -> tuple[Any, ...]:
    if isinstance(cell._history, RawHistory) and cell._history.proto_events is None:
        return _reduce_json_cell(cell)
    value = cell.value
    return (type(value), (value,))


ForkingPickler.register(RawHistory, _reduce_history)
ForkingPickler.register(LazyAttributes, _reduce_any_cell)
ForkingPickler.register(LazyExtra, _reduce_any_cell)
ForkingPickler.register(LazyPayloads, _reduce_payloads)
