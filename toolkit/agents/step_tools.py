"""Which tool each model call asked for ran, and as what: matched across one history.

A model call's output names the tools it asks for (:mod:`toolkit.agents.model_io`); the history
shows what ran after it. Walking the history in event order, each execution is matched to the
earliest pending request of the same name from a model call that had completed by then:

============================  ===============  =============================================
ran as                        ``kind``         recognised by
============================  ===============  =============================================
the preset's MCP call         ``mcp``          a tool-call activity (its input names the tool)
an activity                   ``activity``     an activity whose type is the requested name
a local activity              ``local_activity``  a local-activity marker of that type
a child workflow              ``child_workflow``  a child workflow of that type
a handoff                     ``handoff``      a requested handoff answered in a later model
                                               call's input, or followed by a model call of
                                               the agent handed to
an agent used as a tool       ``agent_as_tool``  answered in a later call's input, with other
                                               model calls (the tool agent's) in between
inside the workflow           ``workflow``     answered in a later call's input, nothing
                                               in between (a function tool run in workflow
                                               code)
============================  ===============  =============================================

A request nothing answers (the run ended) did not visibly run and is not matched, nor is a
request of a tool the history's MCP listings returned that no MCP call ran (the workflow
answered without running it: a filter excluded it, an approval was refused). Tools the provider
runs within the call (``hosted``: web search) are no tool calls of the workflow. How sure:
activities, markers and children are matched by name, so two concurrent requests of one name
may swap; an answer is matched by call id and name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from toolkit.agents.model_io import ModelCall, ToolRequest, read_model_call, summary_of
from toolkit.agents.roles import Roles
from toolkit.histories.columns.lazy import LazyCell

__all__ = ["IN_WORKFLOW_LETTERS", "HistoryTools", "ToolRun", "mark_tool_runs", "match_tools",
           "step_tool_columns"]

#: Where an MCP call activity's input names its tool: Go plugin and ADK ``name``, OpenAI Agents
#: ``tool_name``, pydantic-ai ``name``.
_TOOL_NAME_KEYS = ("name", "tool_name")
_CLOSED = ("ActivityTaskCompleted", "ActivityTaskFailed", "ActivityTaskTimedOut",
           "ActivityTaskCanceled")  # fmt: skip
_IN_WORKFLOW = ("handoff", "agent_as_tool", "workflow")
_COLUMNS = ("event_id", "event_type", "activity_type", "input", "result", "extra",
            "scheduled_event_id", "child_workflow_type")  # fmt: skip


@dataclass(frozen=True)
class ToolRun:
    """One tool execution: what ran, as what, and which model call asked for it."""

    tool: str | None
    ran_as: str
    kind: str
    event_id: int | None = None
    model_event_id: int | None = None


@dataclass
class HistoryTools:
    """The model calls of one history and the tool runs matched to them."""

    calls: dict[int, ModelCall] = field(default_factory=dict)
    runs: list[ToolRun] = field(default_factory=list)
    agents: dict[int, tuple[str | None, str | None]] = field(default_factory=dict)

    def by_event(self) -> dict[int, ToolRun]:
        """Runs that have an event of their own (activity, marker, child), by that event id."""
        return {r.event_id: r for r in self.runs if r.event_id is not None}

    def in_workflow(self, model_event_id: int) -> list[ToolRun]:
        """Runs without an event of their own that the model call ``model_event_id`` asked for."""
        return [r for r in self.runs if r.event_id is None and r.model_event_id == model_event_id]


@dataclass
class _Pending:
    model_event_id: int
    ready: int  # event id of the model call's completion
    request: ToolRequest
    order: int


def _values(cell: Any) -> Any:
    return cell.value if isinstance(cell, LazyCell) else cell


def _mcp_tool_name(event: Mapping[str, Any]) -> str | None:
    values = _values(event.get("input"))
    first = values[0] if isinstance(values, list) and values else None
    if isinstance(first, Mapping):
        for key in _TOOL_NAME_KEYS:
            if isinstance(first.get(key), str):
                return first[key]
    return None


def _executions(
    records: list[dict[str, Any]], marked: pd.DataFrame, roles: Roles
) -> list[tuple[int, str, str | None, str]]:
    """(event id, kind, tool name, ran as) of every activity, local activity (``marked``: the
    history's marker events) and child workflow that could run a tool, in event order."""
    out = []
    for event in records:
        kind = event["event_type"]
        name = event.get("activity_type")
        if kind == "ActivityTaskScheduled" and isinstance(name, str):
            role = roles.role_of(name)
            named = _mcp_tool_name(event) if role == "tool_call" else None
            if role == "tool_call" and (named is not None or roles.name != "inferred"):
                out.append((int(event["event_id"]), "mcp", named, name))
            elif role not in ("model", "listing"):
                # An activity named after the tool (inferred roles call these tool calls).
                out.append((int(event["event_id"]), "activity", name, name))
        elif kind == "StartChildWorkflowExecutionInitiated":
            child = event.get("child_workflow_type")
            if isinstance(child, str):
                out.append((int(event["event_id"]), "child_workflow", child, child))
    if len(marked):
        from toolkit.histories.tables.marker import markers

        local = markers(marked)
        local = local[local["kind"] == "local_activity"]
        for event_id, name in zip(local["event_id"], local["local_activity_type"], strict=True):
            if isinstance(name, str):
                out.append((int(event_id), "local_activity", name, name))
    return sorted(out)


def _listed_names(records: list[dict[str, Any]], roles: Roles) -> set[str]:
    """Names the history's MCP listing activities returned (lists of names or of tool objects,
    pydantic-ai's map of name to definition)."""
    wanted = {int(e["event_id"]) for e in records if e["event_type"] == "ActivityTaskScheduled"
              and roles.role_of(e.get("activity_type")) == "listing"}  # fmt: skip
    names: set[str] = set()
    for event in records:
        link = event.get("scheduled_event_id")
        done = event["event_type"] == "ActivityTaskCompleted" and pd.notna(link)
        if not done or int(link) not in wanted:
            continue
        values = _values(event.get("result"))
        for value in values if isinstance(values, list) else []:
            items = list(value) if isinstance(value, Mapping) else value
            for item in items if isinstance(items, list) else []:
                name = item.get("name") if isinstance(item, Mapping) else item
                if isinstance(name, str):
                    names.add(name)
    return names


def _answers(call: ModelCall, request: ToolRequest) -> bool:
    """Whether ``call``'s input hands back the output of ``request``."""
    for result in call.tool_results or ():
        if request.call_id is not None and result.call_id == request.call_id:
            if result.name is None or result.name == request.name:
                return True
        elif result.name == request.name and (request.call_id is None or result.call_id is None):
            return True
    return False


def match_tools(one: pd.DataFrame, roles: Roles) -> HistoryTools:
    """Read every model call of one history and match the tools they asked for to what ran.

    Parameters
    ----------
    one
        The events of one history.
    roles
        The resolved roles (which activities are model calls, MCP calls, listings).
    """
    out = HistoryTools()
    # One record per event, of the columns read below: pandas filters cost more per call than
    # this whole analysis (markers keep every column: their details are decoded from them).
    markers_only = one[one["event_type"] == "MarkerRecorded"]
    records = one[[c for c in _COLUMNS if c in one.columns]].to_dict("records")
    models = [e for e in records if e["event_type"] == "ActivityTaskScheduled"
              and roles.role_of(e.get("activity_type")) == "model"]  # fmt: skip
    if not models:
        return out
    closes = {int(e["scheduled_event_id"]): e for e in records
              if e["event_type"] in _CLOSED and pd.notna(e.get("scheduled_event_id"))}  # fmt: skip
    order: list[int] = []
    ready: dict[int, int] = {}
    for event in models:
        model = int(event["event_id"])
        close = closes.get(model)
        # Payload sizes are not needed here: read_model_call skips decoding whole events.
        done = close is not None and close["event_type"] == "ActivityTaskCompleted"
        result = close.get("result") if done else None  # type: ignore[union-attr]
        out.calls[model] = read_model_call(event.get("input"), result,
                                           activity_type=event.get("activity_type"),
                                           summary=summary_of(event.get("extra")))  # fmt: skip
        order.append(model)
        ready[model] = int(close["event_id"]) if close is not None else 10**18
    pending = [
        _Pending(model, ready[model], request, number)
        for model in order
        for number, request in enumerate(out.calls[model].requested or ())
        if request.kind != "hosted"
    ]
    for event_id, kind, name, ran_as in _executions(records, markers_only, roles):
        found = next((p for p in pending if p.ready < event_id and p.request.name == name), None)
        if found is not None:
            pending.remove(found)
            out.runs.append(ToolRun(name, ran_as, kind, event_id, found.model_event_id))
        elif kind == "mcp":  # an MCP call no readable request names: still a tool call
            out.runs.append(ToolRun(name, ran_as, kind, event_id, None))
    # An MCP tool runs only as an MCP call: one answered without any was not run (a filter or
    # an approval answered for it, as the Go plugin does for an excluded tool).
    mcp_tools = _listed_names(records, roles) if pending else set()
    for item in pending:
        if item.request.kind == "function" and item.request.name in mcp_tools:
            continue
        run = _ran_in_workflow(item, order, out.calls)
        if run is not None:
            out.runs.append(run)
    out.agents = _agents(order, out)
    return out


def _ran_in_workflow(
    item: _Pending, order: list[int], calls: dict[int, ModelCall]
) -> ToolRun | None:
    """The run of a request that no activity, marker or child executed, if the history shows it
    ran inside the workflow (a later model call answers it, or a handoff's agent speaks next)."""
    later = [m for m in order if m > item.model_event_id]
    request = item.request
    answering = next((m for m in later if _answers(calls[m], request)), None)
    if request.kind == "handoff":
        first = later[0] if later else None
        if answering is None and (first is None or calls[first].agent != request.target):
            return None
        return ToolRun(request.name, "(handoff)", "handoff", None, item.model_event_id)
    if answering is None:
        return None
    between = [m for m in later if m < answering]
    if between:
        return ToolRun(request.name, "(agent)", "agent_as_tool", None, item.model_event_id)
    return ToolRun(request.name, "(workflow)", "workflow", None, item.model_event_id)


def _agents(order: list[int], tools: HistoryTools) -> dict[int, tuple[str | None, str | None]]:
    """(agent, where it came from) per model call: as recorded, else the agent a handoff asked
    for just before went to."""
    handed = {r.model_event_id: tools.calls[r.model_event_id].handoff
              for r in tools.runs if r.kind == "handoff"}  # fmt: skip
    out = {}
    previous = None
    for model in order:
        call = tools.calls[model]
        if call.agent is not None:
            out[model] = (call.agent, call.agent_source)
        elif handed.get(previous):
            out[model] = (handed[previous], "handoff")
        else:
            out[model] = (None, None)
        previous = model
    return out


#: Letters of tools run inside the workflow (no activity of their own) in a step's sequence.
IN_WORKFLOW_LETTERS = {"handoff": "H", "agent_as_tool": "A", "workflow": "W"}


def mark_tool_runs(
    spans: pd.DataFrame,
    tools: Mapping[int, HistoryTools],
    starts: Mapping[int, list[tuple[Any, ...]]],
) -> pd.DataFrame:
    """``spans`` (:func:`toolkit.activity_spans` rows) with a ``tool`` and ``tool_kind`` per tool
    call: activities that ran a requested tool become tool calls (``C``), and local activities
    and child workflows that ran one are added as rows of their own (their event ids place them).

    ``starts`` are each history's turn starts (event id first) to number the added rows' turns.
    """
    runs = {history: found.by_event() for history, found in tools.items()}
    role, letter = spans["role"].tolist(), spans["letter"].tolist()
    tool: list[Any] = [None] * len(spans)
    kind: list[Any] = [None] * len(spans)
    run_ids: dict[int, Any] = {}
    columns = zip(spans["history"], spans["event_id"], spans["run_id"], strict=True)
    for index, (history, event_id, run_id) in enumerate(columns):
        run_ids.setdefault(int(history), run_id)
        run = runs.get(int(history), {}).pop(int(event_id), None)
        if run is not None:
            role[index], letter[index], tool[index], kind[index] = (
                "tool_call", "C", run.tool, run.kind)
    spans = spans.assign(role=role, letter=letter, tool=tool, tool_kind=kind)
    added = []
    for history, left in runs.items():
        for event_id, run in left.items():  # markers and children: no span of their own
            before = [s for s in starts.get(history, []) if s[0] < event_id]
            added.append({
                "history": history, "run_id": run_ids.get(history), "turn": len(before),
                "trigger": before[-1][1] if before else None, "event_id": event_id,
                "activity_type": run.ran_as, "role": "tool_call", "letter": "C",
                "tool": run.tool, "tool_kind": run.kind,
            })  # fmt: skip
    if added:
        spans = pd.concat([spans, pd.DataFrame(added)], ignore_index=True)
        spans = spans.sort_values(["history", "event_id"], kind="stable", ignore_index=True)
    return spans


def step_tool_columns(
    span: list[dict[str, Any]], model_event_id: int | None, tools: HistoryTools | None
) -> dict[str, Any]:
    """The tool columns of one model step of :func:`toolkit.agent_steps` from its activities
    (``span``, in event order, with :func:`mark_tool_runs`' columns) and the history's matches.
    """
    call = tools.calls.get(model_event_id) if tools and model_event_id is not None else None
    virtual = tools.in_workflow(model_event_id) if tools and model_event_id is not None else []
    letters: list[str] = []
    ran: list[tuple[str, str | None, str]] = []
    for record in span:
        letters.append(record["letter"])
        if record["role"] == "tool_call":
            kind = record.get("tool_kind")
            ran.append((record["activity_type"], record.get("tool"),
                        kind if isinstance(kind, str) else "mcp"))  # fmt: skip
        if record["role"] == "model" and record["event_id"] == model_event_id:
            letters += [IN_WORKFLOW_LETTERS[r.kind] for r in virtual]
            ran += [(r.ran_as, r.tool, r.kind) for r in virtual]
    agent = tools.agents.get(model_event_id, (None, None))[0] if tools else None
    declared = None if call is None or call.declared_tools is None else list(call.declared_tools)
    return {
        "agent": agent,
        "declared_tools": declared,
        "requested_tools": None if call is None else call.requested_tools,
        "handoff": None if call is None else call.handoff,
        "tool_calls": len(ran),
        "tool_call_activities": [r[0] for r in ran],
        "tool_call_names": [r[1] for r in ran],
        "tool_call_kinds": [r[2] for r in ran],
        "sequence": " ".join(letters),
    }
