"""The compiled proto-JSON scanner (``_jsonscan.c``) and the msgspec decode give the same frames.

A ``{"events": [...]}`` document of at least ``json_scan.SCAN_FROM_BYTES`` is read by the scanner
where the package was built with a C compiler; anything it does not read exactly as the typed
msgspec decode would, it declines, and msgspec decodes the document as before. Here every JSON
history of the lab and of the corpus is read both ways (the threshold lowered to 0, or the scanner
turned off), and so are real documents edited into the shapes the scanner must decline or read
with care: frames (columns, dtypes, every cell) or errors must be the same.
"""

from __future__ import annotations

import random
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from toolkit.histories.reading import json_scan
from toolkit.histories.reading.dialects import _EVENTS_FIRST

sys.path.insert(0, str(Path(__file__).parent))
from test_frames_equal import SEED, _files, _name, _read

pytestmark = pytest.mark.skipif(not json_scan.compiled(), reason="built without a C compiler")


def _both(monkeypatch: pytest.MonkeyPatch, source: Any, name: str) -> tuple[Any, Any, bool]:
    """The frame digest (or error) read with the scanner and without; whether it scanned."""
    monkeypatch.setattr(json_scan, "SCAN_FROM_BYTES", 0)
    data = source if isinstance(source, bytes) else Path(source).read_bytes()
    scanned = json_scan.scan_document(data) is not None
    with_scanner = _read(source, name)
    monkeypatch.setattr(json_scan, "SCAN_FROM_BYTES", None)
    return with_scanner, _read(source, name), scanned


def test_every_json_history_reads_alike(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scanned = 0
    files = [p for p in _files() if p.suffix == ".json"]
    for path in files:
        with_scanner, without, used = _both(monkeypatch, path, _name(path))
        assert with_scanner == without, _name(path)
        scanned += used
    # The lab's and the CLI's exports are read by the scanner, not merely declined.
    assert scanned > 0.5 * len(files), (scanned, len(files))


def _seed() -> bytes:
    if not SEED.exists():
        pytest.skip(f"the seed history {SEED} is absent")
    return SEED.read_bytes()


_EDITS: list[tuple[str, str, str, int]] = [
    # (what, pattern, replacement, how many: 0 for all)
    ("escaped text", r'"activityId": "', r'"activityId": "\\u00e9\\ud83d\\ude00\\n', 1),
    ("escaped key", r'"eventType"', r'"event\\u0054ype"', 1),
    ("escaped attribute key", r'"activityId"', r'"activity\\u0049d"', 1),
    ("lone surrogate", r'"activityId": "', r'"activityId": "\\ud83d', 1),
    ("unknown spelling", r'"EVENT_TYPE_', '"EventType', 1),
    ("legacy timestamp", r'"eventTime"', '"timestamp"', 1),
    ("float id", r'"eventId": "(\d+)"', r'"eventId": \1.0', 1),
    ("number id", r'"eventId": "(\d+)"', r'"eventId": \1', 0),
    ("empty id", r'"eventId": "(\d+)"', '"eventId": ""', 1),
    ("odd int", r'"attempt": 1', '"attempt": "01"', 1),
    ("text int", r'"attempt": 1', '"attempt": "x"', 1),
    ("empty int", r'"scheduledEventId": "(\d+)"', '"scheduledEventId": ""', 1),
    ("null text", r'"identity": "', '"identity": null, "x": "', 1),
    ("bare name", r'"taskQueue": \{\s*"name": ("[^"]*")', r'"taskQueue": \1, "q": {"name": \1', 1),
    ("null name", r'"activityType": \{\s*"name": "[^"]*"', '"activityType": {"name": null', 1),
    ("repeated key", r'"identity": "', '"identity": "a", "identity": "', 1),
    ("flag", r'"historySizeBytes": "(\d+)"',
     r'"historySizeBytes": "\1", "suggestContinueAsNew": true', 2),
    ("false flag", r'"historySizeBytes": "(\d+)"',
     r'"suggestContinueAsNew": false, "historySizeBytes": "\1"', 2),
    ("quoted flag", r'"historySizeBytes": "(\d+)"',
     r'"historySizeBytes": "\1", "suggestContinueAsNew": "true"', 2),
    ("bad flag", r'"historySizeBytes": "(\d+)"',
     r'"historySizeBytes": "\1", "suggestContinueAsNew": 1', 1),
    ("producer zero", r'"workflowTaskCompletedEventId": "(\d+)"',
     r'"workflowTaskCompletedEventId": 0, "decisionTaskCompletedEventId": "\1"', 3),
    ("producer text zero", r'"workflowTaskCompletedEventId": "(\d+)"',
     r'"workflowTaskCompletedEventId": "0", "decisionTaskCompletedEventId": "\1"', 3),
    ("legacy producer", r'"workflowTaskCompletedEventId"', '"decisionTaskCompletedEventId"', 0),
    ("empty time", r'"eventTime": "[^"]*"', '"eventTime": ""', 2),
    ("odd time", r'"eventTime": "[^"]*"', '"eventTime": "2024-01-31 12:00:00+00:00"', 1),
    ("bad time", r'"eventTime": "[^"]*"', '"eventTime": "yesterday"', 1),
    ("null attributes", r'"(\w+)EventAttributes": \{', r'"\1EventAttributes": null, "was": {', 2),
    ("control character", r'"identity": "', '"identity": "\x01', 1),
    ("bad number", r'"attempt": 1', '"attempt": 01', 1),
    ("top-level facts", r'^\{', r'{"workflowId": "w\\u00e9", "runId": "r", "namespace": 7, ', 1),
    ("bad failure", r'"failure": \{', '"failure": {"message": 5, "x": ', 1),
    ("retry as number", r'"retryState": "[A-Z_]+"', '"retryState": 2', 1),
    ("failure without message", r'"failure": \{(\s*)"message": "[^"]*",', r'"failure": {\1', 1),
]
#: Real documents the edits are made to (each edit must apply to at least one).
SEEDS = [SEED, SEED.parent / "list_twice.json"]


def _variants(text: str) -> Iterator[tuple[str, str]]:
    """Real documents edited into shapes the scanner declines, or must read with care."""
    yield "as recorded", text
    document = orjson.loads(text)
    yield "compact", orjson.dumps(document).decode()
    # Each event's attributes before its id, time and type (legal JSON; the scanner reads them
    # once it knows the type).
    events = [dict(sorted(e.items(), key=lambda kv: not kv[0].endswith("Attributes")))
              for e in document["events"]]  # fmt: skip
    yield "attributes first", orjson.dumps({**document, "events": events}).decode()
    yield "truncated", text[: len(text) // 2]
    yield "trailing", text + " x"
    for what, pattern, replacement, count in _EDITS:
        edited = re.sub(pattern, replacement, text, count=count, flags=re.S)
        if edited != text:  # the edit found its place in this document
            yield what, edited


def test_edited_documents_read_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    _seed()
    applied, scanned = set(), set()
    for seed in SEEDS:
        for name, variant in _variants(seed.read_text()):
            data = variant.encode("utf-8", "surrogatepass")
            with_scanner, without, used = _both(monkeypatch, data, "edited")
            assert with_scanner == without, (seed.name, name)
            applied.add(name)
            if used:
                scanned.add(name)
    assert applied >= {what for what, *_ in _EDITS}, {what for what, *_ in _EDITS} - applied
    assert "attributes first" in applied
    # Those the scanner reads itself (the rest it declines, and msgspec reads them).
    assert scanned >= {"as recorded", "compact", "escaped text", "number id", "odd int",
                       "empty int", "null text", "bare name", "null name", "flag", "false flag",
                       "quoted flag", "producer zero", "producer text zero", "legacy producer",
                       "empty time", "odd time", "bad time", "null attributes", "top-level facts",
                       "retry as number", "attributes first", "text int",
                       "failure without message"}, scanned  # fmt: skip


def test_invalid_utf8_inside_a_payload_is_declined(monkeypatch: pytest.MonkeyPatch) -> None:
    """msgspec skips such text unread (the cell fails when read); the scanner leaves it to it."""
    data = _seed().replace(b'"data": "', b'"data": "\xff', 1)
    assert data != _seed()
    monkeypatch.setattr(json_scan, "SCAN_FROM_BYTES", 0)
    assert json_scan.scan_document(data) is None
    assert json_scan.scan_document(_seed()) is not None


def test_large_documents_use_the_scanner() -> None:
    """Above the threshold the scanner reads the benchmark's tiled history (not declined)."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
    from bench_read_history import build_large_history

    _seed()
    data = orjson.dumps(build_large_history(SEED, 5_000), option=orjson.OPT_INDENT_2)
    assert json_scan.SCAN_FROM_BYTES is not None and len(data) >= json_scan.SCAN_FROM_BYTES
    scanned = json_scan.scan_document(data)
    assert scanned is not None and len(scanned.ids) == 5_000


_BYTES = b'"\\{}[],:0e-.+ \nntfu\x00\x7f\xc3\xff1aZ'


def _outcome(data: bytes) -> Any:
    """The frame digest, or whatever error reading it (or decoding its cells) raises."""
    try:
        return _read(data, "mutated")
    except Exception as exc:  # both paths must fail alike, whatever the failure
        return f"{type(exc).__name__}: {exc}"


def test_random_mutations_read_alike(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seeded byte edits of small real documents: the scanner declines, or reads what msgspec
    reads (frames or errors alike)."""
    rng = random.Random(25)
    small = [p for p in _files() if p.suffix == ".json" and 2_000 < p.stat().st_size < 60_000]
    small = [p for p in small if _EVENTS_FIRST.match(p.read_bytes())]
    assert len(small) > 20
    scanned = 0
    for _ in range(300):
        data = bytearray(rng.choice(small).read_bytes())
        for _ in range(rng.choice((1, 1, 2, 3))):
            at = rng.randrange(len(data))
            edit = rng.random()
            if edit < 0.6:
                data[at] = rng.choice(_BYTES)
            elif edit < 0.8:
                del data[at]
            else:
                data[at:at] = data[at : at + rng.randrange(1, 12)]
        mutated = bytes(data)
        monkeypatch.setattr(json_scan, "SCAN_FROM_BYTES", 0)
        scanned += json_scan.scan_document(mutated) is not None
        with_scanner = _outcome(mutated)
        monkeypatch.setattr(json_scan, "SCAN_FROM_BYTES", None)
        assert with_scanner == _outcome(mutated), mutated[:200]
    assert scanned > 30  # many edits land in text the scanner reads (not only declines)
