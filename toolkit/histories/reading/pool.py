"""Decoding chunks of history files in worker processes, frames coming back still lazy.

A worker decodes a whole chunk of files into one events frame and sends it back. The frame's
``attributes``, ``extra`` and payload cells normally pickle as their decoded values (see
:mod:`toolkit.histories.columns.lazy`), which would make the parent pay for decoding every event
twice over; between processes of this pool they travel as what they are (the raw JSON they will
decode from), so the parent receives what an in-process read gives, at the cost of copying bytes.

Where this process runs no other Python thread (a script, ``python -c``, a plain REPL: on Linux),
the workers are forked from it: they start in milliseconds with the toolkit already imported.
Anywhere else (a Jupyter kernel runs threads of its own, and a fork copies none of them, nor
releases the locks they hold) they come from the ``forkserver`` start method, whose server
imports the toolkit once for all its workers (:func:`start_early` has it do so while the caller
is still busy, and the caller runs chunks itself until the workers exist); a pool pays off from
a few hundred files on. A script run as a file without the ``if __name__ == "__main__":``
guard decodes in its own process instead (a fork server's workers would run the script again).
Progress bars made by :func:`progress_bar` start no thread (tqdm's monitor), so they leave a
pool free to fork.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import re
import sys
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from functools import cache, partial
from itertools import chain, islice
from multiprocessing import forkserver
from multiprocessing.reduction import ForkingPickler
from pathlib import Path
from typing import Any

import msgspec

from toolkit.forking import may_fork
from toolkit.histories.columns.lazy import LazyAttributes, LazyExtra, LazyPayloads
from toolkit.histories.reading.dialects import RawHistory

__all__ = ["decode_chunks", "progress_bar", "resolve_workers", "run_chunks", "start_early"]

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

    ``chunks`` is consumed lazily: at most ``workers + 1`` chunks are in flight in the pool
    (and :data:`_MOST_RUN_HERE` run here wait for their turn), so memory is bounded by the
    chunk size, not by the number of chunks.

    A thread starts the pool and keeps its workers fed: the first submission waits for the fork
    server's imports (half a second or more), and a worker finishing a chunk gets the next one
    at once, whatever this thread is doing. Meanwhile this process runs the first chunk itself,
    and more while the workers do not exist yet; each chunk is run once, here or in a worker.
    """
    queued = iter(chunks)
    first = list(islice(queued, 2))
    count = resolve_workers(workers)
    if count <= 1 or len(first) <= 1 or not _main_can_be_imported():
        for chunk in chain(first, queued):
            yield function(chunk, *args)
        return
    queued = chain(first, queued)
    if may_fork():
        yield from _forked(function, queued, args, count)
        return
    here = next(queued)
    watch = (os.getpid(), _PARENT_POLL_SECONDS)
    pool = ProcessPoolExecutor(
        count, mp_context=_context(), initializer=_end_with_parent, initargs=watch
    )
    feeder = _Feeder(pool, function, queued, args, count + 1)
    try:
        yield function(here, *args)
        waiting_here = 0  # chunks run here whose results wait for their turn
        while True:
            taken = feeder.next_slot(steal=waiting_here < _MOST_RUN_HERE)
            if taken is None:
                return
            slot, chunk = taken
            if chunk is not _END:  # the pool is still starting: this one is run here
                slot.set_result(function(chunk, *args))  # its slot waits in its place
                waiting_here += 1
                continue
            result = slot.result()
            if feeder.taken(slot):
                waiting_here -= 1
            yield result
    finally:
        feeder.close()


def _forked(
    function: Callable[..., Any], queued: Iterator[Any], args: tuple[Any, ...], count: int
) -> Iterator[Any]:
    """:func:`run_chunks` by workers forked from this process
    (:func:`toolkit.forking.may_fork`)."""
    watch = (os.getpid(), _PARENT_POLL_SECONDS)
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(
        count, mp_context=context, initializer=_end_with_parent, initargs=watch
    ) as pool:
        # The first submission forks every worker (before the pool's own threads start). Frozen,
        # the objects they inherit stay out of their collections, whose marks would copy pages.
        gc.freeze()
        try:
            with warnings.catch_warnings():  # Python 3.12+ warns of any native thread: see may_fork
                warnings.filterwarnings("ignore", _FORK_WARNING, DeprecationWarning)
                pending = deque([pool.submit(function, next(queued), *args)])
        finally:
            gc.unfreeze()
        pending.extend(pool.submit(function, chunk, *args) for chunk in islice(queued, count))
        while pending:
            result = pending.popleft().result()
            pending.extend(pool.submit(function, chunk, *args) for chunk in islice(queued, 1))
            yield result


#: What Python 3.12+ says of a fork in a process with native threads (its libraries' pools).
_FORK_WARNING = r".*use of fork\(\) may lead to deadlocks in the child"


def progress_bar(**options: Any) -> Any:
    """A ``tqdm.auto`` bar (``options`` as tqdm takes them) that starts no monitor thread, so
    that a pool may still fork its workers (:func:`toolkit.forking.may_fork`). The monitor
    only redraws bars that stall between many tiny updates; these move a batch at a time."""
    from tqdm.auto import tqdm  # (a twentieth of a second; pool workers never show a bar)

    return _without_monitor(tqdm)(**options)


@cache
def _without_monitor(bar: type) -> type:
    return type(bar.__name__, (bar,), {"monitor_interval": 0})


#: At most this many chunks run here wait for their turn (each holds its result).
_MOST_RUN_HERE = 2
#: The end of an iterator, for ``next(iterator, _END)``.
_END = object()


class _Feeder:
    """The chunks of :func:`run_chunks` after its first, in order, each a future: submitted to
    the pool by a thread of its own (at most ``limit`` in flight), or, until the pool's first
    submission returns (its workers exist), taken by the caller to run itself."""

    def __init__(
        self,
        pool: ProcessPoolExecutor,
        function: Callable[..., Any],
        chunks: Iterator[Any],
        args: tuple[Any, ...],
        limit: int,
    ) -> None:
        self._pool, self._function, self._chunks, self._args = pool, function, chunks, args
        self._limit = limit
        self._changed = threading.Condition()
        self._slots: deque[Future[Any]] = deque()  # pulled, not yet handed to the caller
        self._here: set[int] = set()  # ids of the slots the caller runs
        self._in_flight = 0  # slots of the pool not handed to the caller yet
        self._ended = False  # every chunk pulled (or pulling one raised)
        self._closed = False
        self.started = threading.Event()  # the pool's first submission returned
        self._thread = threading.Thread(target=self._feed, name="toolkit-pool-feed", daemon=True)
        self._thread.start()

    def _pull(self) -> tuple[Future[Any], Any] | None:
        """The next chunk and its slot, appended in order (under the lock); None at the end."""
        try:
            chunk = next(self._chunks, _END)
        except BaseException as exc:  # raised where the caller reaches it, in order
            chunk, failed = _END, exc
        else:
            failed = None
        if chunk is _END:
            self._ended = True
            if failed is None:
                return None
        slot: Future[Any] = Future()
        if failed is not None:
            slot.set_exception(failed)
        self._slots.append(slot)
        self._changed.notify_all()
        return slot, chunk

    def _feed(self) -> None:
        while True:
            with self._changed:
                while self._in_flight >= self._limit and not self._closed:
                    self._changed.wait()
                if self._closed or self._ended:
                    return
                pulled = self._pull()
                if pulled is None or pulled[1] is _END:
                    return
                slot, chunk = pulled
                self._in_flight += 1
            try:  # outside the lock: the first submission waits for the workers to start
                future = self._pool.submit(self._function, chunk, *self._args)
            except BaseException as exc:  # e.g. BrokenProcessPool: raised where it is reached
                slot.set_exception(exc)
                self.started.set()
                return
            self.started.set()
            future.add_done_callback(partial(_settle, slot))

    def next_slot(self, *, steal: bool) -> tuple[Future[Any], Any] | None:
        """The next slot in order and ``_END``; or, with ``steal`` while the pool has not
        started, the slot of the next chunk (left in its place) and the chunk, for the caller
        to run and settle; None once every chunk was handed on."""
        with self._changed:
            if steal and not self.started.is_set() and not self._ended:
                pulled = self._pull()
                if pulled is not None and pulled[1] is not _END:
                    self._here.add(id(pulled[0]))
                    return pulled
            while not self._slots and not self._ended:
                self._changed.wait()
            if not self._slots:
                return None
            return self._slots.popleft(), _END

    def taken(self, slot: Future[Any]) -> bool:
        """Count ``slot``'s result as handed on; whether the caller ran it."""
        with self._changed:
            if id(slot) in self._here:
                self._here.discard(id(slot))
                return True
            self._in_flight -= 1
            self._changed.notify_all()
            return False

    def close(self) -> None:
        """Stop feeding and shut the pool down (its workers end): at once, or, while its first
        submission still waits for the workers, from a thread of its own once it returns."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()

        def stop() -> None:
            self._thread.join()
            self._pool.shutdown(wait=True, cancel_futures=True)

        if self.started.is_set():
            stop()
        else:
            threading.Thread(target=stop, name="toolkit-pool-stop", daemon=True).start()


def _settle(slot: Future[Any], future: Future[Any]) -> None:
    """Give ``slot`` the outcome of the pool's ``future`` (cancelled: the pool shut down)."""
    if future.cancelled():
        slot.cancel()
        return
    failure = future.exception()
    if failure is not None:
        slot.set_exception(failure)
    else:
        slot.set_result(future.result())


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
    if resolve_workers(workers) > 1 and _main_can_be_imported() and not may_fork():
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
