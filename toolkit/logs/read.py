"""``read_logs``: any worker or agent log into a DataFrame, one row per record."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pandas as pd

from toolkit.gc_pause import paused_gc
from toolkit.limits import MAX_BYTES
from toolkit.logs.assemble import Assembler
from toolkit.logs.blocks import ByteBlock, TextLines
from toolkit.logs.frame import build_frame
from toolkit.logs.jsonfast import JsonRuns, Lines
from toolkit.logs.sources import LineSource, open_source

__all__ = ["read_logs"]

_PROGRESS_MIN_BYTES = 64 << 20
#: Read runs of JSON lines a block at a time (toolkit.logs.jsonfast); off, every line goes through
#: the assembler one by one. Same frames either way (the tests compare them).
JSON_FAST_PATH = True


def _frames(src: LineSource, tz: str, year: int, chunksize: int | None,
            progress: Any, year_hint: int | None) -> Iterator[pd.DataFrame]:
    asm = Assembler()
    json_runs = JsonRuns(asm) if JSON_FAST_PATH else None
    line_no = 1
    emitted = 0
    for block in src.blocks:
        frame = None
        with paused_gc():  # millions of rows' objects, none in a cycle
            _feed_block(asm, json_runs, block, line_no)
            line_no += len(block)
            if chunksize and len(asm.out) >= chunksize:
                frame = build_frame(asm.out.take(), src.name, tz, year, emitted, year_hint)
                emitted += len(frame)
        if progress is not None:
            position = src.position()
            progress.update((position - progress.n) if position is not None else len(block))
        if frame is not None:
            yield frame  # the collector runs while the caller has the frame
    with paused_gc():
        asm.finish()
        last = len(asm.out) or not emitted
        frame = build_frame(asm.out.take(), src.name, tz, year, emitted, year_hint) if last \
            else None
    if frame is not None:
        yield frame


def _feed_block(asm: Assembler, json_runs: JsonRuns | None, block: list[Any] | ByteBlock,
                line_no: int) -> None:
    if type(block) is ByteBlock and not (
            json_runs is not None and block.fast and block.opens_object.mean() >= 0.5):
        # Mostly JSON blocks have their runs decoded from the bytes (other lines decoded one by
        # one); the others are decoded and split once, and read as text.
        block = block.lines
    if type(block) is list and type(block[0]) is tuple:  # Docker stream: (line, stream) pairs
        for offset, (text, stream) in enumerate(block):
            asm.feed(line_no + offset, text, stream=stream)
        return
    lines: Lines = block if type(block) is ByteBlock else TextLines(block)  # type: ignore[assignment]
    json_starts = lines.json_starts() if json_runs is not None else None
    feed = asm.feed
    i, n = 0, len(lines)
    while i < n:
        if json_starts is not None and json_starts[i] and asm.idle():
            end = json_runs.feed(lines, i, line_no)  # type: ignore[union-attr]
            if end > i:  # a run of JSON records, read column by column
                i = end
                continue
        feed(line_no + i, lines.line(i))
        i += 1


def read_logs(
    source: Any,
    *,
    tz: str = "UTC",
    year: int | None = None,
    progress: bool | None = None,
    chunksize: int | None = None,
    max_bytes: int | None = MAX_BYTES,
) -> pd.DataFrame | Iterator[pd.DataFrame]:
    """Read a worker / agent log into a DataFrame, one row per log record.

    Parameters
    ----------
    source : path, str, bytes, file object or list of str
        A path (plain or gzip; UTF-8, UTF-16 with BOM, invalid UTF-8 kept with U+FFFD), the text
        itself, raw bytes, an open file (text or binary) or a list of lines. A ``str`` is a path
        when it names an existing file or looks like one (no newline, a path separator or a log
        file suffix); otherwise it is the log text.
    tz : str
        Time zone of timestamps printed without an offset (IANA name); default UTC.
    year : int, optional
        Year for timestamps printed without one (klog, syslog); default: the year of the
        closest dated record before them in the same frame, else the current year.
    progress : bool, optional
        Show a tqdm progress bar; default: only for files over 64 MiB.
    chunksize : int, optional
        When given, return an iterator of frames of this many records each, the last one the
        rest (memory bounded by a block of input, about 8 MiB); otherwise one frame.
    max_bytes : int, optional
        Stop a gzip source after this many decompressed bytes with a LogFormatError (default
        :data:`toolkit.limits.MAX_BYTES`, 1 GiB; ``None``: no limit), so a decompression
        bomb costs no more than the limit.

    Returns
    -------
    pandas.DataFrame or iterator of DataFrame
        Columns ``ts`` (datetime64[ns, UTC]), ``level`` (debug/info/warning/error/critical or
        None), ``logger``, ``message``, ``fields`` (dict), ``line`` (first input line, 1-based),
        ``lines`` (input lines spanned; extra records of one OTLP line have 0), ``format``
        (family), ``envelope`` (envelopes stripped, joined by ``+``), ``stream``, ``container``,
        ``host``, ``raw`` (the record's text, pandas' Arrow-backed ``str`` dtype), ``parse_error``
        (None or why), ``source``. The ``lines`` column sums to the number of input lines.

    Raises
    ------
    LogFormatError
        The source cannot be read at all (missing, empty, binary, corrupt compression, gzip
        content beyond ``max_bytes``).

    Notes
    -----
    Runs of JSON lines are read a block at a time, their header keys only; the ``fields`` of
    such records are decoded when first read (:class:`toolkit.logs.cells.LazyFields`, a read-only
    mapping equal to the dict, which ``.value`` returns). Files and bytes are read as UTF-8 blocks
    of whole lines and such runs decoded from the bytes (:mod:`toolkit.logs.blocks`); the frame is
    the same as for the same lines given as text.
    """
    src = open_source(source, max_bytes=max_bytes)
    year_hint = year
    year = year or dt.datetime.now(dt.UTC).year
    show = progress if progress is not None else (src.total or 0) >= _PROGRESS_MIN_BYTES
    bar = None
    if show:
        from tqdm import tqdm

        bar = tqdm(total=src.total, unit="B", unit_scale=True, desc=src.name, leave=False)
    frames = _frames(src, tz, year, chunksize, bar, year_hint)
    if chunksize:
        return _closing(_exact_chunks(frames, chunksize), bar)
    try:
        return next(frames)
    finally:
        frames.close()
        if bar is not None:
            bar.close()


def _exact_chunks(frames: Iterator[pd.DataFrame], size: int) -> Iterator[pd.DataFrame]:
    """Frames of exactly ``size`` rows (the last: the rest), from frames of a block or more."""
    pending: pd.DataFrame | None = None
    yielded = False
    for frame in frames:
        if pending is not None and len(pending):
            frame = pd.concat([pending, frame])
        start = 0
        while len(frame) - start >= size:
            yield frame.iloc[start:start + size]
            yielded = True
            start += size
        pending = frame.iloc[start:]
    if pending is not None and (len(pending) or not yielded):
        yield pending


def _closing(frames: Iterator[pd.DataFrame], bar: Any) -> Iterator[pd.DataFrame]:
    try:
        yield from frames
    finally:
        if bar is not None:
            bar.close()
