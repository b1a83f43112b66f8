"""Seeded mutations of real corpus histories: nothing but the toolkit's own errors escapes.

Each mutation puts one unreadable value into one field of one event of a public history (see
../shared/corpus/histories/SOURCES.md), by field type: times, event ids, ids linking events,
enums, counts, durations, names, payloads, whole attribute objects. Reading the file (and the
derived tables commands / markers / activities) may succeed, keeping the value, or raise a
``ToolkitError``; values the loader parses into columns (times, event ids, linked ids, counts)
must raise a located ``HistoryFormatError`` naming the event. The seed fixes the set.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from toolkit.errors import HistoryFormatError, ToolkitError
from toolkit.histories.reading.read import read_history
from toolkit.histories.tables.activity import activities
from toolkit.histories.tables.marker import markers
from toolkit.replay.commands import commands

SEED = 12
PER_FIELD_TYPE = 8
MAX_FILE_BYTES = 40_000

#: Field type -> (key to look for anywhere in an event, whether the loader parses it).
FIELD_TYPES: dict[str, tuple[tuple[str, ...], bool]] = {
    "time": (("eventTime",), True),
    "event_id": (("eventId",), True),
    "linked_id": (("scheduledEventId", "startedEventId", "workflowTaskCompletedEventId"), True),
    "count": (("attempt",), True),
    "enum": (("eventType", "retryState", "cause", "initiator", "parentClosePolicy"), False),
    "duration": (("startToCloseTimeout", "scheduleToCloseTimeout", "workflowRunTimeout"), False),
    "name": (("taskQueue", "activityType", "workflowType"), False),
    "id": (("activityId", "timerId", "markerName", "signalName"), False),
    "payload": (("payloads", "metadata", "data"), False),
    "attributes": (("EventAttributes",), False),
}
#: Values of the wrong type or out of range for every field type above.
UNREADABLE: dict[str, list[Any]] = {
    "time": ["yesterday", "2024-13-45T99:00:00Z", 2**70, "-5", {"seconds": "x"}],
    "number": ["abc", 2**70, -(2**70), "99999999999999999999", 12.5, [1], {"a": 1}],
    "other": ["yesterday", 2**70, -1, {"a": 1}, [1], True, "", 12.5],
}


def _events(document: Any) -> list[Any] | None:
    if isinstance(document, list):
        if document and isinstance(document[0], dict) and "events" in document[0]:
            return document[0]["events"]
        return document
    if isinstance(document, dict):
        if isinstance(document.get("events"), list):
            return document["events"]
        history = document.get("history")
        if isinstance(history, dict) and isinstance(history.get("events"), list):
            return history["events"]
    return None


def _places(value: Any, keys: tuple[str, ...], path: tuple[Any, ...] = ()) -> list[tuple]:
    """Paths inside one event whose last key is (or, for attributes, ends with) one of keys."""
    found = []
    if isinstance(value, dict):
        for key, inner in value.items():
            if any(key == k or (k == "EventAttributes" and key.endswith(k)) for k in keys):
                found.append((*path, key))
            found.extend(_places(inner, keys, (*path, key)))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found.extend(_places(inner, keys, (*path, index)))
    return found


def _mutations(corpus: Path) -> list[tuple[str, str, bytes, bool]]:
    """``(field type, description, mutated file bytes, must raise located)``, seeded."""
    rng = random.Random(SEED)
    files = []
    for path in sorted((corpus / "histories").glob("*/*.json")):
        if path.stat().st_size <= MAX_FILE_BYTES:
            document = json.loads(path.read_bytes())
            if _events(document):
                files.append((path, document))
    out = []
    for field_type, (keys, parsed) in FIELD_TYPES.items():
        values = UNREADABLE["time" if field_type == "time" else
                            "number" if field_type in ("event_id", "linked_id", "count") else
                            "other"]  # fmt: skip
        candidates = [
            (path, index, place)
            for path, document in files
            for index, event in enumerate(_events(document) or [])
            for place in _places(event, keys)
        ]
        for path, index, place in rng.sample(candidates, min(PER_FIELD_TYPE, len(candidates))):
            document = json.loads(path.read_bytes())
            target = _events(document)[index]
            for step in place[:-1]:
                target = target[step]
            value = rng.choice(values)
            target[place[-1]] = value
            label = f"{path.parent.name}/{path.name} event #{index} {'.'.join(map(str, place))}"
            # Parsed: the envelope's own fields and those of the event's attributes (a UI
            # export's decorations, such as its "attributes" copy, are kept, not parsed).
            in_columns = len(place) == 1 or str(place[0]).endswith("EventAttributes")
            located = parsed and in_columns
            out.append((field_type, f"{label} = {value!r}", json.dumps(document).encode(), located))
    return out


def test_unreadable_field_values_raise_only_toolkit_errors(corpus: Path) -> None:
    mutations = _mutations(corpus)
    covered = Counter(field_type for field_type, *_ in mutations)
    assert set(covered) == set(FIELD_TYPES), covered  # every field type is exercised
    escaped, unlocated, accepted = [], [], []
    for _field_type, label, data, must_locate in mutations:
        try:
            events = read_history(data)
            commands(events), markers(events), activities(events)
        except HistoryFormatError as error:
            if error.position is None or "event #" not in error.position:
                unlocated.append(f"{label}: {error}")
            continue
        except ToolkitError:
            continue
        except Exception as error:  # the point of the test
            escaped.append(f"{label}: {type(error).__name__}: {error}"[:300])
            continue
        if must_locate:
            accepted.append(label)
    assert not escaped, "\n".join(escaped)
    assert not unlocated, "\n".join(unlocated)
    # A parsed field keeps a value only where the column holds it after all: "-5" as an id.
    assert all(label.endswith("= '-5'") or label.endswith("= -1") for label in accepted), accepted


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("eventTime", "yesterday", "RFC 3339"),
        ("eventId", "99999999999999999999", "int64"),
        ("eventId", "abc", "integer"),
    ],
)
def test_located_errors_name_the_event_and_what_was_expected(
    corpus: Path, key: str, value: Any, expected: str
) -> None:
    path = corpus / "histories" / "temporalio__sdk-go" / "basic.json"
    document = json.loads(path.read_bytes())
    events = _events(document)
    events[3][key] = value
    if key == "eventTime":
        events[3].pop("timestamp", None)
    with pytest.raises(HistoryFormatError) as caught:
        read_history(json.dumps(document).encode())
    assert caught.value.position == "event #3"
    assert expected in (caught.value.expected or "")
