"""Cells of binary histories list map entries in one order in every process (upb's map order
changes from process to process), and say the same as ``MessageToDict``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from google.protobuf import json_format
from temporalio.api.history.v1 import History, HistoryEvent

from toolkit.histories.proto_json import message_to_dict

ROOT = Path(__file__).resolve().parents[1]
# The JSON text of every attributes cell of a binary history with marker details and headers.
TEXTS = (
    "import sys, orjson, toolkit as tk\n"
    "from temporalio.api.history.v1 import History, HistoryEvent\n"
    "events = []\n"
    "for i in range(1, 4):\n"
    "    e = HistoryEvent(event_id=i, event_type=29)\n"
    "    e.event_time.FromSeconds(1_700_000_000 + i)\n"
    "    a = e.marker_recorded_event_attributes\n"
    "    a.marker_name = 'Version'\n"
    "    for key in ('version', 'change-id', 'side-effect', 'data', 'result', 'id', 'zz'):\n"
    "        a.details[key].payloads.add(data=key.encode())\n"
    "        a.header.fields[key].data = b'h'\n"
    "    events.append(e)\n"
    "frame = tk.read_history(History(events=events).SerializeToString())\n"
    "print(orjson.dumps([dict(c) for c in frame['attributes']]).decode())\n"
)


def test_map_entries_come_in_one_order_in_every_process() -> None:
    command = [sys.executable, "-c", TEXTS]
    runs = [
        subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT).stdout
        for _ in range(3)
    ]
    assert runs[0] == runs[1] == runs[2] and '"change-id"' in runs[0]
    assert runs[0].index('"change-id"') < runs[0].index('"version"')


def test_the_same_dict_as_message_to_dict_on_real_histories(corpus: Path) -> None:
    checked = 0
    for path in sorted((corpus / "histories").rglob("*.bin")):
        for event in History.FromString(path.read_bytes()).events:
            assert message_to_dict(event) == json_format.MessageToDict(event), path.name
            checked += 1
    assert checked > 50  # every event of the corpus binaries


def test_maps_inside_repeated_and_nested_messages_are_sorted() -> None:
    event = HistoryEvent(event_id=1)
    started = event.workflow_execution_started_event_attributes
    for key in ("b", "a", "c"):
        started.memo.fields[key].data = b"1"
        started.search_attributes.indexed_fields[key].data = b"2"
    value = message_to_dict(event)["workflowExecutionStartedEventAttributes"]
    assert list(value["memo"]["fields"]) == ["a", "b", "c"]
    assert list(value["searchAttributes"]["indexedFields"]) == ["a", "b", "c"]
