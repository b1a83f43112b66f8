"""Turns and model steps of durable agents, read from their workflow histories.

A *turn* starts at each user message (the workflow start, a user signal or update, as the
:class:`~toolkit.agents.roles.Roles` say; a start followed by no activity before the first user
signal/update is not a turn); a *model step* starts at each model activity. Per step:
the tool listings scheduled before it (since the previous step or the turn start), the tool calls
scheduled after it (until the next step), and, on a turn's last step, the listings after it; and,
read from the model call's own payloads, the tools it was offered, the tools it asked for and the
agent making it (:mod:`toolkit.agents.model_io`, matched to what ran by
:mod:`toolkit.agents.step_tools`).

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

from toolkit.agents.activity_turns import Turn as _Turn
from toolkit.agents.activity_turns import activity_turns
from toolkit.agents.roles import Roles
from toolkit.agents.step_tools import (
    HistoryTools,
    mark_tool_runs,
    match_tools,
    step_tool_columns,
)
from toolkit.histories.reading.batch import find_history_files
from toolkit.histories.versions import apply_versions, version_labels
from toolkit.replay.commands import events_frame, iter_histories, per_source

__all__ = ["STEP_COLUMNS", "activity_spans", "agent_steps", "listings_per_turn", "turn_starts"]

#: The columns of :func:`agent_steps`, in order.
STEP_COLUMNS = [
    "history", "run_id", "turn", "trigger", "step", "model_event_id", "model_activity", "agent",
    "declared_tools", "requested_tools", "handoff", "listings_before", "tool_calls",
    "listings_after", "other", "listing_activities", "tool_call_activities", "tool_call_names",
    "tool_call_kinds", "sequence", "status", "failure",
]  # fmt: skip


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
    """:func:`activity_spans` and, per history, every turn's user message (turn n = item n-1);
    see :func:`_spans_turns_roles`."""
    spans, turns, _ = _spans_turns_roles(events, roles)
    return spans, turns


def _spans_turns_roles(
    events: Any, roles: str | Roles
) -> tuple[pd.DataFrame, dict[int, list[_Turn]], dict[int, Roles]]:
    """:func:`activity_spans`, per history every turn's user message (turn n = item n-1), and
    per history the roles resolved, of one source (:mod:`toolkit.agents.activity_turns`).

    A turn whose user message got no activity at all (e.g. its workflow task keeps failing for
    nondeterminism) has no span; the turn list keeps it, with whether any workflow task completed
    after the message (``answered``), so that callers can report the stuck turn. The first
    history no framework is recognised in raises its error.
    """
    found = activity_turns(events_frame(events), roles)
    if found.errors:
        raise next(iter(found.errors.values()))
    spans = found.spans.drop(columns="source")
    turns = {history: starts for (_, history), starts in found.turns.items()}
    every = {history: resolved for (_, history), resolved in found.roles.items()}
    return spans, turns, every


@per_source
def agent_steps(events: Any, roles: str | Roles = "auto") -> pd.DataFrame:
    """Turns and model steps of each history, in event order.

    Parameters
    ----------
    events
        An events frame (one or several histories) or anything ``read_history`` accepts.
    roles
        ``"auto"`` (detect the framework from activity names, else infer the roles from what
        the activities return: :func:`toolkit.agents.roles.infer_roles`), a preset name
        (:data:`toolkit.agents.roles.PRESETS`) or a :class:`~toolkit.agents.roles.Roles`.

    Returns
    -------
    pandas.DataFrame
        One row per model step, columns :data:`STEP_COLUMNS`: ``history``, ``run_id``,
        ``turn``, ``trigger``, ``step`` (1-based in the turn), ``model_event_id``,
        ``model_activity``; read from the model call's payloads
        (:mod:`toolkit.agents.model_io`): ``agent`` (as the framework records it, or the agent
        a handoff just before went to; None if neither), ``declared_tools`` (names offered to
        the model, in the order sent, handoffs included; None where the input does not show
        them), ``requested_tools`` (names the output asks for; None without a readable result)
        and ``handoff`` (the agent handed to); ``listings_before`` (listings scheduled before
        the model call), ``tool_calls`` (tools the model asked for that ran, and MCP calls no
        readable request names: :mod:`toolkit.agents.step_tools`), ``listings_after``
        (listings after the model call that belong to this step: those before its tool calls,
        and on a turn's last step all of them), ``other``, ``listing_activities``; per tool
        call ``tool_call_activities`` (what it ran as: an activity, local activity or child
        workflow type, or ``(handoff)``, ``(agent)``, ``(workflow)``), ``tool_call_names``
        and ``tool_call_kinds`` (``mcp``, ``activity``, ``local_activity``,
        ``child_workflow``, ``handoff``, ``agent_as_tool``, ``workflow``); ``sequence`` (the
        step's activities as letters in event order, e.g. ``L M L C``, with ``H`` / ``A`` /
        ``W`` after the ``M`` for tools run inside the workflow: a handoff, an agent used as a
        tool, workflow code), ``status`` (``answered``, or ``stuck`` for a turn after whose
        user message no workflow task completed) and ``failure`` (a stuck turn's last
        workflow-task failure, e.g. the ``[TMPRL1100]`` message).

        Steps cut the turn's activities without reordering them: what follows a model call up
        to its last tool call stays with it, listings after that go to the next step; the
        sequences of a turn's steps joined are the turn's sequence (plus the ``H`` / ``A`` /
        ``W`` letters, which have no activity). A turn without a model step gets one row with
        ``step`` 0 so that its activities are not lost; so does a stuck turn that got no
        activity (its ``status`` says ``stuck`` and ``failure`` says why).

    Raises
    ------
    toolkit.errors.ToolkitError
        When ``roles="auto"`` recognises no framework (the message says what was looked for),
        an unknown preset is named, or the named preset recognises none of the history's
        activities.
    """
    frame = events_frame(events)
    spans, turns, resolved = _spans_turns_roles(frame, roles)
    tools = {history: match_tools(one, resolved[history])
             for history, one in iter_histories(frame) if history in resolved}  # fmt: skip
    spans = mark_tool_runs(spans, tools, turns)
    rows: list[dict[str, Any]] = []
    for history, turn, trigger, group in _every_turn(spans, turns):
        state = _turn_state(turns, history, turn)
        if group.empty:
            rows.append({**_empty_step(history, turn, trigger, spans), **state})
        else:
            steps = _turn_steps(history, turn, group, tools.get(history))
            rows.extend({**step, **state} for step in steps)
    out = pd.DataFrame(rows, columns=STEP_COLUMNS)
    out["model_event_id"] = out["model_event_id"].astype("Int64")
    for column in ("agent", "handoff"):  # None where unknown, not NaN
        out[column] = out[column].astype(object).where(out[column].notna(), None)
    return out


def _turn_state(turns: Mapping[int, list[_Turn]], history: int, turn: int) -> dict[str, Any]:
    """``status`` and ``failure`` of a turn (turn 0, before any user message, is answered)."""
    starts = turns.get(history, [])
    if 1 <= turn <= len(starts):
        _, _, answered, failure = starts[turn - 1]
        if not answered:
            return {"status": "stuck", "failure": failure}
    return {"status": "answered", "failure": None}


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
        stuck = {number for number, (_, _, answered, _) in enumerate(starts, 1) if not answered}
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
        "listings_before": 0, "listings_after": 0, "other": 0, "listing_activities": [],
        **step_tool_columns([], None, None),
    }  # fmt: skip


def _step_cuts(records: list[dict[str, Any]], models: list[int]) -> list[tuple[int, int]]:
    """(start, end) slices of ``records``, one per model step, covering them in order.

    Between two model calls, everything up to the last non-listing activity (the earlier step's
    tool calls and the listings among them) stays with the earlier step; the listings after it
    prepare the later step.
    """
    cuts = []
    start = 0
    for number, model in enumerate(models):
        if number + 1 == len(models):
            end = len(records)
        else:
            end = model + 1
            for index in range(model + 1, models[number + 1]):
                if records[index]["role"] != "listing":
                    end = index + 1
        cuts.append((start, end))
        start = end
    return cuts


def _turn_steps(
    history: int, turn: int, group: pd.DataFrame, tools: HistoryTools | None
) -> list[dict[str, Any]]:
    records = group.sort_values("event_id").to_dict("records")
    models = [i for i, r in enumerate(records) if r["role"] == "model"]
    cuts = _step_cuts(records, models) if models else [(0, len(records))]
    steps: list[dict[str, Any]] = []
    for number, (start, end) in enumerate(cuts):
        span = records[start:end]
        model = models[number] if models else None
        before = span[: model - start] if model is not None else span
        after = span[model - start + 1 :] if model is not None else []
        listings_before = [r["activity_type"] for r in before if r["role"] == "listing"]
        listings_after = [r["activity_type"] for r in after if r["role"] == "listing"]
        model_event_id = records[model]["event_id"] if model is not None else None
        steps.append(
            {
                "history": history,
                "run_id": records[0]["run_id"],
                "turn": turn,
                "trigger": records[0]["trigger"],
                "step": number + 1 if models else 0,
                "model_event_id": model_event_id,
                "model_activity": records[model]["activity_type"] if model is not None else None,
                "listings_before": len(listings_before),
                "listings_after": len(listings_after),
                "other": sum(r["role"] == "other" for r in span),
                "listing_activities": listings_before + listings_after,
                **step_tool_columns(span, model_event_id, tools),
            }
        )
    return steps


def sidecar_fields(source: str | None) -> dict[str, Any]:
    """Scalar fields of the lab's ``<name>.meta.json`` next to a history file (optional)."""
    if not source:
        return {}
    path = Path(source)
    meta = path.with_name(path.name.removesuffix(".json") + ".meta.json")
    if not meta.is_file():
        return {}
    try:
        data = orjson.loads(meta.read_bytes())
    except orjson.JSONDecodeError:
        return {}  # a sidecar is a convenience; a broken one leaves the history's own labels
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


def _expand(histories: Any) -> list[Any]:
    """Frames as they are; paths, folders and globs as history files (sidecars skipped)."""
    if isinstance(histories, pd.DataFrame):
        return [histories]
    if isinstance(histories, (str, Path)):
        return list(find_history_files(histories))
    if isinstance(histories, bytes):
        return [histories]
    if isinstance(histories, Iterable):
        return [item for h in histories for item in _expand(h)]
    return [histories]


def _per_source(frame: pd.DataFrame) -> list[pd.DataFrame]:
    if "source" not in frame.columns or frame["source"].nunique(dropna=False) <= 1:
        return [frame]
    return [one for _, one in frame.groupby("source", sort=False, dropna=False)]


def listings_per_turn(
    histories: Any, roles: str | Roles = "auto", versions: Any = None
) -> pd.DataFrame:
    """One row per (history, turn): listings, model steps and tool calls, with version labels.

    Parameters
    ----------
    histories
        A history path, a directory or a glob (history files only: the lab's ``.meta.json``,
        ``.mcp.jsonl`` request logs and other non-history files are skipped), an events frame
        (one or many files), or an iterable of these.
    roles
        As in :func:`agent_steps`.
    versions
        Overrides of the version labels (see :func:`toolkit.histories.versions.apply_versions`:
        a mapping from run id, workflow id, source or default label to a label, or a callable).

    Returns
    -------
    pandas.DataFrame
        ``source``, ``history``, ``run_id``, ``workflow_type``, ``turn``, ``trigger``,
        ``listings``, ``model_steps``, ``tool_calls``, ``other``, ``sequence`` (the turn's
        activities as letters, e.g. ``L M L C L M``), ``listing_types`` (the listing activities'
        names: one per toolset), ``status`` / ``failure`` (as in
        :func:`agent_steps`), ``sdk_name``, ``sdk_version``, ``build_id``, ``label`` and
        ``label_source``. The label comes from the history itself
        (:mod:`toolkit.histories.versions`: deployment version, build id, SDK, binary checksum;
        ``label_source`` says which); where the lab's optional ``<name>.meta.json`` sits next to
        a file its ``label``/``variant``/``env`` is used instead (``label_source`` ``sidecar``)
        and its scalar fields are added as ``meta_<key>``; ``versions`` overrides both.
    """
    rows: list[dict[str, Any]] = []
    for item in _expand(histories):
        for frame in _per_source(events_frame(item)):
            rows.extend(listing_rows(frame, roles))
    out = pd.DataFrame(rows)
    if versions is not None and not out.empty:
        runs = out.drop_duplicates(["source", "history"])
        runs = apply_versions(runs, versions)[["source", "history", "label", "label_source"]]
        out = out.drop(columns=["label", "label_source"]).merge(
            runs, on=["source", "history"], how="left"
        )
    return out


def listing_rows(
    frame: pd.DataFrame, roles: str | Roles, with_labels: bool = True
) -> list[dict[str, Any]]:
    """The :func:`listings_per_turn` rows of one source (labels left out when not wanted)."""
    spans, turns = _spans_and_turns(frame, roles)
    keys = [c for c in ("source", "run_id", "workflow_type") if c in frame.columns]
    heads = frame.groupby("history", sort=True)[keys].first() if "history" in frame else None
    labels = version_labels(frame).set_index("history") if with_labels else None
    by_turn: dict[tuple[int, int], list[tuple[str, str, Any]]] = {}
    ordered = spans.sort_values(["history", "event_id"], kind="stable")
    for history, turn, role, letter, activity_type in zip(
        ordered["history"], ordered["turn"], ordered["role"], ordered["letter"],
        ordered["activity_type"], strict=True,
    ):  # fmt: skip
        by_turn.setdefault((int(history), int(turn)), []).append((role, letter, activity_type))
    rows = []
    for history, starts in sorted(turns.items()):
        head = heads.loc[history] if heads is not None and history in heads.index else {}
        identity = {
            "source": _text(head.get("source")),
            "history": history,
            "run_id": _text(head.get("run_id")),
            "workflow_type": _text(head.get("workflow_type")),
        }
        found = _labels_of(labels, history, identity["source"]) if labels is not None else {}
        stuck = {number for number, (_, _, answered, _) in enumerate(starts, 1) if not answered}
        numbers = {t for h, t in by_turn if h == history} | stuck
        # Every turn gets a row: one whose workflow task never completed has zero counts.
        for turn in sorted(numbers):
            spans_of = by_turn.get((history, turn), [])
            roles_of = [role for role, _, _ in spans_of]
            rows.append(
                {
                    **identity,
                    "turn": int(turn),
                    "trigger": starts[turn - 1][1] if turn >= 1 else None,
                    "listings": roles_of.count("listing"),
                    "model_steps": roles_of.count("model"),
                    "tool_calls": roles_of.count("tool_call"),
                    "other": roles_of.count("other"),
                    "sequence": " ".join(letter for _, letter, _ in spans_of),
                    "listing_types": sorted(
                        {str(t) for r, _, t in spans_of if r == "listing" and t is not None}
                    ),
                    **_turn_state(turns, history, turn),
                    **found,
                }
            )
    return rows


def _labels_of(labels: pd.DataFrame, history: int, source: str | None) -> dict[str, Any]:
    """Version label columns of one run: the history's own, or the lab sidecar's."""
    return label_fields(labels.loc[history] if history in labels.index else None, source)


def label_fields(own: Mapping[str, Any] | None, source: str | None) -> dict[str, Any]:
    """Version label columns of one run from its ``version_labels`` row (None: not labelled),
    or the lab sidecar's next to ``source``."""
    found = {
        "sdk_name": None if own is None else own["sdk_name"],
        "sdk_version": None if own is None else own["sdk_version"],
        "build_id": None if own is None else own["build_id"],
        "label": "unknown" if own is None else own["label"],
        "label_source": "none" if own is None else own["label_source"],
    }
    meta = sidecar_fields(source)
    sidecar = sidecar_label(meta)
    if sidecar is not None:
        found["label"], found["label_source"] = sidecar, "sidecar"
    return {**found, **meta}


def sidecar_label(meta: Mapping[str, Any]) -> str | None:
    for key in ("meta_label", "meta_variant", "meta_env", "meta_google_adk", "meta_adk_version"):
        if meta.get(key) is not None:
            return str(meta[key])
    return None
