"""Event type spellings the API does not know are kept verbatim, whatever their case."""

from __future__ import annotations

import json

import toolkit as tk
from toolkit.histories.columns.common import type_info
from toolkit.histories.enums import EVENT_TYPES, camel


def test_every_known_type_maps_to_its_attributes_field() -> None:
    for short in EVENT_TYPES:
        info = type_info(short)
        assert info.known and info.field is not None
        assert camel(info.field) == info.key


def test_snake_case_type_is_an_unknown_type_not_a_crash() -> None:
    # Such a spelling once matched the attributes field by its snake-case name and the JSON
    # reader then failed with a KeyError; it is an unknown type, kept verbatim with its attributes.
    event = {
        "eventId": "1",
        "eventTime": "2024-01-01T00:00:00Z",
        "eventType": "workflow_execution_started",
        "workflowExecutionStartedEventAttributes": {"workflowType": {"name": "W"}},
    }
    frame = tk.read_history(json.dumps({"events": [event]}).encode())
    assert frame["event_type"].tolist() == ["workflow_execution_started"]
    assert not type_info("workflow_execution_started").known
    assert frame["attributes"][0] == {"workflowType": {"name": "W"}}
