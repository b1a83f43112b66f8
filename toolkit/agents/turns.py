"""Turns and model steps of durable agents, read from their workflow histories.

A *turn* starts at each user message (the workflow start, a user signal or update, as the
:class:`~toolkit.agents.roles.Roles` say; a start followed by no activity before the first user
signal/update is not a turn); a *model step* starts at each model activity. Per step:
the tool listings scheduled before it (since the previous step or the turn start), the tool calls
scheduled after it (until the next step), and, on a turn's last step, the listings after it.

Examples
--------
>>> toolkit.agent_steps(events)                                     # doctest: +SKIP
>>> toolkit.listings_per_turn(Path("data/adk").glob("*/*.json"))     # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson
import pandas as pd

from toolkit.agents.roles import Roles, resolve_roles
from toolkit.replay.commands import events_frame, iter_histories, per_source

__all__ = ["activity_spans", "agent_steps", "listings_per_turn", "turn_starts"]

_LETTER = {"model": "M", "listing": "L", "tool_call": "C", "other": "o"}
_CLOSED = {
    "ActivityTaskCompleted",
    "ActivityTaskFailed",
    "ActivityTaskTimedOut",
    "ActivityTaskCanceled",
}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _user_messages(events: list[dict[str, Any]], roles: Roles) -> list[tuple[int, str]]:
    """(event id, trigger) of each user message, in order; an update counts once."""
    out: list[tuple[int, str]] = []
    seen_updates: set[Any] = set()
    for event in events:
        event_type = event["event_type"]
        if event_type == "WorkflowExecutionStarted" and roles.start_is_user:
            out.append((int(event["event_id"]), "start"))
        elif event_type == "WorkflowExecutionSignaled" and roles.is_user_signal(
            _text(event.get("signal_name"))
        ):
            out.append((int(event["event_id"]), f"signal:{event.get('signal_name')}"))
        elif event_type in {"WorkflowExecutionUpdateAdmitted", "WorkflowExecutionUpdateAccepted"}:
            key = _text(event.get("update_id")) or event["event_id"]
            name = _text(event.get("update_name"))
            if key not in seen_updates and roles.is_user_update(name):
                seen_updates.add(key)
                out.append((int(event["event_id"]), f"update:{name}"))
    return out


@per_source
def activity_spans(events: Any, roles: str | Roles = "auto") -> pd.DataFrame:
    """One row per scheduled activity with its role, turn and times (for timelines).

    Columns: ``history``, ``run_id``, ``turn``, ``trigger``, ``event_id`` (scheduled),
    ``activity_type``, ``activity_id``, ``role``, ``letter`` (``M``/``L``/``C``/``o``),
    ``scheduled``, ``started``, ``closed`` (UTC timestamps; NaT when absent), ``outcome`` (the
    closing event type, or None while open).
    """
    return _spans_and_turns(events, roles)[0]


#: A turn's user message: (event id, trigger, answered: a workflow task completed after it).
_Turn = tuple[int, str, bool]


def turn_starts(
    one: pd.DataFrame,
    roles: Roles,
    scheduled: pd.DataFrame | None = None,
    records: list[dict[str, Any]] | None = None,
) -> list[tuple[int, str]]:
    """(event id, trigger) of each turn's user message of one history, in order.

    Parameters
    ----------
    one
        The events of one history.
    roles
        The resolved roles (which start, signals and updates are user messages).
    scheduled
        Its ``ActivityTaskScheduled`` events, when the caller has them already.
    records
        ``one.to_dict("records")``, when the caller has it already.

    A workflow start followed by no activity before the first user signal/update is no turn.
    """
    starts = _user_messages(one.to_dict("records") if records is None else records, roles)
    if len(starts) > 1 and starts[0][1] == "start":
        # A workflow that starts and waits for its first message: the start is no turn.
        if scheduled is None:
            scheduled = one[one["event_type"] == "ActivityTaskScheduled"]
        first_activity = scheduled["event_id"].min() if len(scheduled) else None
        if first_activity is None or first_activity > starts[1][0]:
            starts = starts[1:]
    return starts


def _spans_and_turns(
    events: Any, roles: str | Roles
) -> tuple[pd.DataFrame, dict[int, list[_Turn]]]:
    """:func:`activity_spans` and, per history, every turn's user message (turn n = item n-1).

    A turn whose user message got no activity at all (e.g. its workflow task keeps failing for
    nondeterminism) has no span; the turn list keeps it, with whether any workflow task completed
    after the message (``answered``), so that callers can report the stuck turn.
    """
    frame = events_frame(events)
    rows: list[dict[str, Any]] = []
    turns: dict[int, list[_Turn]] = {}
    for history, one in iter_histories(frame):
        source = _text(one["source"].iloc[0]) if "source" in one and len(one) else None
        scheduled = one[one["event_type"] == "ActivityTaskScheduled"]
        resolved = resolve_roles(roles, scheduled["activity_type"], source or "<events>")
        records = one.to_dict("records")
        starts = turn_starts(one, resolved, scheduled, records)
        completed = one.loc[one["event_type"] == "WorkflowTaskCompleted", "event_id"]
        last_completed = int(completed.max()) if len(completed) else 0
        turns[history] = [
            (event_id, trigger, event_id < last_completed) for event_id, trigger in starts
        ]
        closes: dict[int, Mapping[str, Any]] = {}
        started: dict[int, Any] = {}
        for event in records:
            link = event.get("scheduled_event_id")
            if link is None or pd.isna(link):
                continue
            if event["event_type"] in _CLOSED:
                closes[int(link)] = event
            elif event["event_type"] == "ActivityTaskStarted":
                started[int(link)] = event.get("event_time")
        for event in scheduled.to_dict("records"):
            event_id = int(event["event_id"])
            before = [s for s in starts if s[0] < event_id]
            turn, trigger = (len(before), before[-1][1]) if before else (0, None)
            role = resolved.role_of(_text(event.get("activity_type")))
            close = closes.get(event_id)
            rows.append(
                {
                    "history": history,
                    "run_id": event.get("run_id"),
                    "turn": turn,
                    "trigger": trigger,
                    "event_id": event_id,
                    "activity_type": event.get("activity_type"),
                    "activity_id": event.get("activity_id"),
                    "role": role,
                    "letter": _LETTER[role],
                    "scheduled": event.get("event_time"),
                    "started": started.get(event_id),
                    "closed": None if close is None else close.get("event_time"),
                    "outcome": None if close is None else close["event_type"],
                }
            )
    out = pd.DataFrame(
        rows,
        columns=[
            "history", "run_id", "turn", "trigger", "event_id", "activity_type", "activity_id",
            "role", "letter", "scheduled", "started", "closed", "outcome",
        ],
    )  # fmt: skip
    for column in ("scheduled", "started", "closed"):
        out[column] = pd.to_datetime(out[column], utc=True)
    return out, turns


@per_source
def agent_steps(events: Any, roles: str | Roles = "auto") -> pd.DataFrame:
    """Turns and model steps of each history: listings before each step, tool calls after it.

    Parameters
    ----------
    events
        An events frame (one or several histories) or anything ``read_history`` accepts.
    roles
        ``"auto"`` (detect the framework from activity names), a preset name
        (:data:`toolkit.agents.roles.PRESETS`) or a :class:`~toolkit.agents.roles.Roles`.

    Returns
    -------
    pandas.DataFrame
        One row per model step: ``history``, ``run_id``, ``turn``, ``trigger``, ``step``
        (1-based in the turn), ``model_event_id``, ``model_activity``, ``listings_before``,
        ``tool_calls``, ``listings_after`` (only on a turn's last step), ``other``,
        ``listing_activities``, ``tool_call_activities`` (lists of names), ``sequence`` (the
        step's activities as letters, e.g. ``L M C``). A turn without a model step gets one row
        with ``step`` 0 so that its activities are not lost; so does a user message that got no
        activity and after which no workflow task completed (the stuck turn, e.g. failing for
        nondeterminism after an upgrade).

    Raises
    ------
    toolkit.errors.ToolkitError
        When ``roles="auto"`` recognises no framework, or an unknown preset is named.
    """
    spans, turns = _spans_and_turns(events, roles)
    rows: list[dict[str, Any]] = []
    for history, turn, trigger, group in _every_turn(spans, turns):
        if group.empty:
            rows.append(_empty_step(history, turn, trigger, spans))
        else:
            rows.extend(_turn_steps(history, turn, group))
    columns = [
        "history", "run_id", "turn", "trigger", "step", "model_event_id", "model_activity",
        "listings_before", "tool_calls", "listings_after", "other", "listing_activities",
        "tool_call_activities", "sequence",
    ]  # fmt: skip
    out = pd.DataFrame(rows, columns=columns)
    out["model_event_id"] = out["model_event_id"].astype("Int64")
    return out


def _every_turn(
    spans: pd.DataFrame, turns: Mapping[int, list[_Turn]]
) -> list[tuple[int, int, str | None, pd.DataFrame]]:
    """(history, turn, trigger, its spans) for every turn with activities, and the stuck ones.

    A user message that got no activity is a turn when no workflow task completed after it: the
    code never answered it (its task keeps failing, e.g. for nondeterminism after an upgrade),
    which is the turn an investigator looks for. One answered without any activity (a control
    signal such as ``finish`` closing the workflow) is not. Turn 0 (activities before the first
    user message) appears only when it has activities.
    """
    out = []
    for history, starts in sorted(turns.items()):
        mine = spans[spans["history"] == history]
        stuck = {number for number, (_, _, answered) in enumerate(starts, 1) if not answered}
        for turn in sorted(set(mine["turn"].astype(int)) | stuck):
            trigger = starts[turn - 1][1] if turn >= 1 else None
            out.append((history, turn, trigger, mine[mine["turn"] == turn]))
    return out


def _first_run_id(spans: pd.DataFrame, history: int) -> Any:
    run_ids = spans.loc[spans["history"] == history, "run_id"]
    return run_ids.iloc[0] if len(run_ids) else None


def _empty_step(history: int, turn: int, trigger: str | None, spans: pd.DataFrame) -> dict:
    """The step-0 row of a turn that scheduled no activity."""
    return {
        "history": history, "run_id": _first_run_id(spans, history), "turn": turn,
        "trigger": trigger, "step": 0, "model_event_id": None, "model_activity": None,
        "listings_before": 0, "tool_calls": 0, "listings_after": 0, "other": 0,
        "listing_activities": [], "tool_call_activities": [], "sequence": "",
    }  # fmt: skip


def _turn_steps(history: int, turn: int, group: pd.DataFrame) -> list[dict[str, Any]]:
    records = group.sort_values("event_id").to_dict("records")
    models = [i for i, r in enumerate(records) if r["role"] == "model"]
    bounds = models or [len(records)]
    steps: list[dict[str, Any]] = []
    for number, start in enumerate(bounds):
        last = number + 1 == len(bounds)
        gap = records[(bounds[number - 1] + 1 if number else 0) : start]
        # What sits between two steps: tool calls stay with the earlier step, listings go to the
        # later one; before the first step everything belongs to it.
        before = gap if number == 0 else [r for r in gap if r["role"] == "listing"]
        after_to = bounds[number + 1] if not last else len(records)
        after = records[start + 1 : after_to] if models else []
        kept_after = after if last else _staying_with_step(after)
        listings = [r["activity_type"] for r in before if r["role"] == "listing"]
        calls_before = [r for r in before if r["role"] == "tool_call"]
        calls = [r["activity_type"] for r in kept_after if r["role"] == "tool_call"]
        after_listings = [r["activity_type"] for r in kept_after if r["role"] == "listing"]
        other = [r for r in before + kept_after if r["role"] == "other"]
        span = before + ([records[start]] if models else []) + kept_after
        steps.append(
            {
                "history": history,
                "run_id": records[0]["run_id"] if records else None,
                "turn": turn,
                "trigger": records[0]["trigger"] if records else None,
                "step": number + 1 if models else 0,
                "model_event_id": records[start]["event_id"] if models else None,
                "model_activity": records[start]["activity_type"] if models else None,
                "listings_before": len(listings),
                "tool_calls": len(calls) + len(calls_before),
                "listings_after": len(after_listings),
                "other": len(other),
                "listing_activities": listings + after_listings,
                "tool_call_activities": [r["activity_type"] for r in calls_before] + calls,
                "sequence": " ".join(r["letter"] for r in span),
            }
        )
    return steps


def _staying_with_step(after: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The activities after a (non-final) step that stay with it: everything but listings."""
    return [r for r in after if r["role"] != "listing"]


def _meta_labels(source: str | None) -> dict[str, Any]:
    """Scalar fields of the lab's ``<name>.meta.json`` next to a history file."""
    if not source:
        return {}
    path = Path(source)
    meta = path.with_name(path.name.removesuffix(".json") + ".meta.json")
    if not meta.is_file():
        return {}
    data = orjson.loads(meta.read_bytes())
    if not isinstance(data, Mapping):
        return {}
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping):
            for inner, item in value.items():
                if not isinstance(item, (Mapping, list)):
                    flat[f"meta_{key}_{inner}"] = item
        elif not isinstance(value, list):
            flat[f"meta_{key}"] = value
    return flat


def _sdk_label(one: pd.DataFrame) -> dict[str, Any]:
    """SDK name and version from the first ``WorkflowTaskCompleted`` that names them."""
    for attributes in one.loc[one["event_type"] == "WorkflowTaskCompleted", "attributes"]:
        metadata = attributes.get("sdkMetadata") if isinstance(attributes, Mapping) else None
        if isinstance(metadata, Mapping) and metadata.get("sdkName"):
            return {"sdk_name": metadata.get("sdkName"), "sdk_version": metadata.get("sdkVersion")}
    return {"sdk_name": None, "sdk_version": None}


def _expand(histories: Any) -> list[Any]:
    if isinstance(histories, pd.DataFrame):
        return [histories]
    if isinstance(histories, (str, Path)) and Path(histories).is_dir():
        return sorted(
            p for p in Path(histories).rglob("*.json") if not p.name.endswith(".meta.json")
        )
    if isinstance(histories, (str, Path, bytes)):
        return [histories]
    if isinstance(histories, Iterable):
        return [item for h in histories for item in _expand(h)]
    return [histories]


def listings_per_turn(histories: Any, roles: str | Roles = "auto") -> pd.DataFrame:
    """One row per (history, turn): listings, model steps and tool calls, with version labels.

    Parameters
    ----------
    histories
        A history path, a directory (every ``*.json`` under it except ``*.meta.json``), an
        events frame, or an iterable of these.
    roles
        As in :func:`agent_steps`.

    Returns
    -------
    pandas.DataFrame
        ``source``, ``history``, ``run_id``, ``workflow_type``, ``turn``, ``trigger``,
        ``listings``, ``model_steps``, ``tool_calls``, ``other``, ``sequence`` (the turn's
        activities as letters, e.g. ``L M L C L M``), ``sdk_name``, ``sdk_version`` (from the
        history's ``sdkMetadata``), ``label`` (``meta_label``/``meta_variant``/... when the lab's
        ``.meta.json`` sits next to the file, else the SDK name and version) and every scalar
        field of that ``.meta.json`` as ``meta_<key>``.
    """
    rows: list[dict[str, Any]] = []
    for item in _expand(histories):
        frame = events_frame(item)
        spans, turns = _spans_and_turns(frame, roles)
        identity: dict[int, dict[str, Any]] = {}
        labels_of: dict[int, dict[str, Any]] = {}
        for history, one in iter_histories(frame):
            source = _text(one["source"].iloc[0]) if "source" in one and len(one) else None
            identity[history] = {
                "source": source,
                "history": history,
                "run_id": _text(one["run_id"].iloc[0]) if "run_id" in one else None,
                "workflow_type": _text(one["workflow_type"].iloc[0])
                if "workflow_type" in one
                else None,
            }
            labels = {**_sdk_label(one), **_meta_labels(source)}
            labels["label"] = _label(labels)
            labels_of[history] = labels
        # Every turn gets a row: one whose workflow task never completed has zero counts.
        for history, turn, trigger, group in _every_turn(spans, turns):
            ordered = group.sort_values("event_id")
            rows.append(
                {
                    **identity[history],
                    "turn": int(turn),
                    "trigger": trigger,
                    "listings": int((ordered["role"] == "listing").sum()),
                    "model_steps": int((ordered["role"] == "model").sum()),
                    "tool_calls": int((ordered["role"] == "tool_call").sum()),
                    "other": int((ordered["role"] == "other").sum()),
                    "sequence": " ".join(ordered["letter"]),
                    **labels_of[history],
                }
            )
    return pd.DataFrame(rows)


def _label(labels: Mapping[str, Any]) -> str | None:
    for key in ("meta_label", "meta_variant", "meta_env", "meta_google_adk", "meta_adk_version"):
        if labels.get(key) is not None:
            return str(labels[key])
    if labels.get("sdk_name"):
        return f"{labels['sdk_name']} {labels.get('sdk_version') or ''}".strip()
    return None
