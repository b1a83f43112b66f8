"""``markers(events)``: one row per ``MarkerRecorded``, with what each SDK's markers identify.

Marker layouts differ by SDK and era (all read here, none executed):

===========================  ================================  =================================
marker name                  producer                          details read
===========================  ================================  =================================
``core_patch``               Core SDKs (Python, TS, .NET, Ruby) ``patch-data`` {id, deprecated};
                                                               older core: ``patch_id`` bytes,
                                                               ``deprecated`` one byte
``Version``                  Go / Java / PHP ``GetVersion``    ``change-id``/``changeId``,
                                                               ``version``; pre-1.0: JSON blob
``core_local_activity``      Core SDKs                         ``data`` {activity_id,
                                                               activity_type, attempt, ...}
``LocalActivity``            Go / Java                         Go ``data`` {ActivityID,
                                                               ActivityType, Attempt}; Java
                                                               ``activityId``, ``type``, ``meta``
``SideEffect``,              Go / Java                         ``side-effect-id``
``MutableSideEffect``
===========================  ================================  =================================

Pre-1.0 histories hold marker details as one base64 string of JSON values; those are decoded as
JSON when they are JSON, and left as they are otherwise.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

import pandas as pd

from toolkit.histories.payloads import decode_payloads
from toolkit.histories.tables.build import Record, column_or_attribute, new_record, record_failure
from toolkit.histories.tables.common import (
    EVENT_BASICS,
    HISTORY_SCHEMA,
    attr,
    build_frame,
    check_events,
    event_rows,
    first_present,
    nullable,
    to_int,
)
from toolkit.histories.tables.marker_details import legacy_version, patch_identity, version_identity

__all__ = ["MARKER_COLUMNS", "markers"]

_KINDS = {
    "core_patch": "patch",
    "Version": "version",
    "core_local_activity": "local_activity",
    "LocalActivity": "local_activity",
    "SideEffect": "side_effect",
    "MutableSideEffect": "mutable_side_effect",
}
_READ = (*EVENT_BASICS, "marker_name", "failure_message", "failure_type", "details")

#: Column -> dtype of the markers table.
MARKER_COLUMNS: dict[str, str] = {
    **HISTORY_SCHEMA,
    "event_id": "Int64", "event_time": "datetime", "workflow_task": "Int64",
    "marker_name": "object", "kind": "object", "details_keys": "object",
    "patch_id": "object", "version": "Int64", "deprecated": "boolean",
    "local_activity_id": "object", "local_activity_type": "object", "attempt": "Int64",
    "side_effect_id": "object", "failure_message": "object", "failure_type": "object",
    "details": "object",
}


def markers(events: pd.DataFrame) -> pd.DataFrame:
    """One row per marker, with the patch/version or local-activity identity it records.

    Parameters
    ----------
    events
        The events frame of :func:`toolkit.read_history` (one or many histories).

    Returns
    -------
    pandas.DataFrame
        Sorted by (source, history, event_id), with these columns:

        ===================  ==============  ===================================================
        column               dtype           meaning
        ===================  ==============  ===================================================
        source, history      object, Int64   which history (as in the events frame)
        workflow_id, run_id  object          the workflow run
        event_id             Int64           the ``MarkerRecorded`` event
        event_time           datetime64 UTC  its time
        workflow_task        Int64           the task whose completion recorded it
        marker_name          object          as recorded
        kind                 object          ``patch``, ``version``, ``local_activity``,
                                             ``side_effect``, ``mutable_side_effect``, ``other``
        details_keys         object          sorted list of the details map's keys
        patch_id             object          patch id (``core_patch``) or change id (``Version``)
        version              Int64           ``Version`` markers: the version recorded
        deprecated           boolean         ``core_patch``: recorded by ``deprecate_patch``
        local_activity_id    object          local-activity markers: the activity id
        local_activity_type  object          local-activity markers: the activity type
        attempt              Int64           local-activity markers: the attempt recorded
        side_effect_id       object          (mutable) side-effect markers: their id
        failure_message      object          failed local activity: the failure
        failure_type         object          application failure type or failure kind
        details              object          decoded details (dict of lists, or the raw value)
        ===================  ==============  ===================================================

    Raises
    ------
    HistoryFormatError
        When ``events`` is not an events frame.
    """
    check_events(events, ("marker_name",), "markers")
    records = [_record(event) for event in event_rows(events, ("MarkerRecorded",), _READ)]
    return build_frame(records, MARKER_COLUMNS, ("source", "history", "event_id"))


def _record(event: Any) -> Record:
    name = column_or_attribute(event, "marker_name", "markerName")
    details = _details(event)
    record = new_record(
        MARKER_COLUMNS,
        event,
        event_id=event.event_id,
        event_time=nullable(event.event_time),
        workflow_task=nullable(event.workflow_task),
        marker_name=name,
        kind=_KINDS.get(name, "other"),
        details_keys=sorted(details) if isinstance(details, Mapping) else [],
        details=details,
    )
    record_failure(record, event)
    if isinstance(details, Mapping):
        _identify(record, details)
    else:
        _identify_legacy(record, _legacy_values(details))
    return record


def _details(event: Any) -> Any:
    """Decoded details: the frame's column, else decoded here (frames read without payloads)."""
    decoded = nullable(event.details)
    if decoded is not None:
        return decoded
    raw = attr(event.attributes, "details")
    if isinstance(raw, Mapping):
        return decode_payloads(raw)
    return raw


def _first(details: Mapping[str, Any], *keys: str) -> Any:
    """The first value of the first key present (details hold a list per key)."""
    for key in keys:
        values = details.get(key)
        if isinstance(values, list) and values:
            return values[0]
        if values is not None and not isinstance(values, list):
            return values
    return None


def _identify(record: Record, details: Mapping[str, Any]) -> None:
    kind = record["kind"]
    if kind == "patch":
        record["patch_id"], record["deprecated"] = patch_identity(lambda k: _first(details, k))
    elif kind == "version":
        record["patch_id"], record["version"] = version_identity(lambda k: _first(details, k))
    elif kind == "local_activity":
        data = _first(details, "data")
        if isinstance(data, Mapping):
            _local_activity(record, [data])
        else:  # Java keeps the fields as separate details entries
            meta = _first(details, "meta")
            record["local_activity_id"] = _text(_first(details, "activityId"))
            record["local_activity_type"] = _text(_first(details, "type"))
            record["attempt"] = to_int(attr(meta, "atpt"))
    elif kind in ("side_effect", "mutable_side_effect"):
        record["side_effect_id"] = _text(_first(details, "side-effect-id"))


def _local_activity(record: Record, values: list[Any]) -> None:
    data = next((v for v in values if isinstance(v, Mapping)), None)
    if data is None:
        return
    record["local_activity_id"] = _text(first_present(
        data.get("activity_id"), data.get("ActivityID"), data.get("activityId"),
    ))
    record["local_activity_type"] = _text(first_present(
        data.get("activity_type"), data.get("ActivityType"), data.get("activityType"),
    ))
    record["attempt"] = to_int(first_present(data.get("attempt"), data.get("Attempt")))


def _identify_legacy(record: Record, values: list[Any]) -> None:
    if not values:
        return
    if record["kind"] == "local_activity":
        _local_activity(record, values)
    elif record["kind"] == "version":
        record["patch_id"], record["version"] = legacy_version(values)
    elif record["kind"] in ("side_effect", "mutable_side_effect"):
        first = values[0]
        record["side_effect_id"] = _text(first.get("id") if isinstance(first, Mapping) else first)


def _legacy_values(details: Any) -> list[Any]:
    """Pre-1.0 details: base64 of one or more JSON values separated by newlines."""
    if not isinstance(details, str):
        return []
    try:
        text = base64.b64decode(details, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return []
    values = []
    for line in text.splitlines():
        try:
            values.append(json.loads(line))
        except ValueError:
            continue
    return values


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
