"""Agent runs: tool listings per turn, compared between version labels (``listing_change``).

A change in how often an agent lists its tools per turn is the signature of an agent-framework
upgrade that changes the commands it issues (the Go plugin's 3/4/2 listings, Python ADK's 3 -> 1
at 1.29.0), and the reason old runs cannot replay on new workers. Labels are compared per
workflow type and per number of tool calls in the turn (so that turns doing different work are
not mixed), each with its count of runs and spread: never averaged into one value.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pandas as pd

from toolkit.agents.roles import detect_roles
from toolkit.agents.turns import listing_rows
from toolkit.errors import ToolkitError
from toolkit.investigate.findings import finding
from toolkit.text import count

__all__ = ["WEAK_LABELS", "agent_listings", "declared_change", "declared_summary", "listing_change",
           "listing_summary"]

#: Label sources that cannot tell two releases of the application apart.
WEAK_LABELS = ("sdk", "binary_checksum", "none")


def agent_listings(
    events: pd.DataFrame, runs: pd.DataFrame, compared_only: bool = False
) -> pd.DataFrame:
    """:func:`toolkit.listings_per_turn` of every agent run, with the investigation's labels.

    Histories no agent-framework preset recognises are left out (they are no agents). With
    ``compared_only``, so are runs of workflow types recorded under a single label: nothing
    to compare them with (this is what the ``listing_change`` finding needs, and it saves most
    of the work on a fleet running one version).
    """
    if compared_only:
        labels = runs.groupby("workflow_type", dropna=False)["label"].nunique()
        # A label that cannot tell releases apart may hide a change inside it: kept too.
        compared = runs[
            (runs["workflow_type"].map(labels).fillna(0) > 1)
            | runs["label_source"].isin(WEAK_LABELS)
        ]
        events = events[events["source"].isin(set(compared["source"]))]
    scheduled = events[events["event_type"] == "ActivityTaskScheduled"]
    types = scheduled.groupby("source", sort=False)["activity_type"].unique()
    # Histories whose activities no preset recognises are no agents: not read further.
    agents = {source for source, names in types.items() if detect_roles(names) is not None}
    rows: list[dict[str, Any]] = []
    for _, one in events[events["source"].isin(agents)].groupby("source", sort=False):
        try:
            rows += listing_rows(one, "auto", with_labels=False)
        except ToolkitError:
            continue
    if not rows:
        return pd.DataFrame()
    table = pd.DataFrame(rows)
    labels = runs[["source", "history", "label", "label_source", "start"]]
    return table.merge(labels, on=["source", "history"], how="left")


def listing_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per workflow type, tool calls in the turn and label: runs, turns, listings spread."""
    if table.empty:
        return pd.DataFrame()
    # Runs with more toolsets list more often; they are compared with runs of as many toolsets.
    toolsets = table.groupby(["source", "history"])["listing_types"].agg(
        lambda names: len({n for turn in names for n in turn})
    )
    table = table.join(toolsets.rename("toolsets"), on=["source", "history"])
    answered = table[table["status"] == "answered"]
    summary = (
        answered.groupby(["workflow_type", "toolsets", "tool_calls", "label"], sort=False)
        .agg(
            label_source=("label_source", "first"),
            runs=("run_id", "nunique"),
            turns=("turn", "size"),
            listings_min=("listings", "min"),
            listings_median=("listings", "median"),
            listings_max=("listings", "max"),
            first_seen=("start", "min"),
        )
        .reset_index()
    )
    return summary.sort_values(
        ["workflow_type", "toolsets", "tool_calls", "first_seen"]
    ).reset_index(drop=True)


def _value(number: float) -> str:
    return f"{number:g}"


def listing_change(
    table: pd.DataFrame, summary: pd.DataFrame, label_note: str
) -> list[dict[str, Any]]:
    """A finding per workflow type whose listings per turn differ between labels."""
    if summary.empty:
        return []
    out = []
    for workflow_type, of_type in summary.groupby("workflow_type", sort=False):
        changes: list[tuple[bool, int, str]] = []
        labels: list[str] = []
        unsure: list[tuple[str, str]] = []
        for (toolsets, calls), group in of_type.groupby(["toolsets", "tool_calls"], sort=True):
            shape = f"{count(toolsets, 'toolset')}, {count(calls, 'tool call')}"
            if group["listings_median"].nunique() < 2:
                unsure += _hidden_changes(group, shape)
                continue
            # Consecutive labels (in order of first run) with the same median form one stage.
            stages: list[tuple[float, list[str]]] = []
            for row in group.itertuples():
                if stages and stages[-1][0] == row.listings_median:
                    stages[-1][1].append(row.label)
                else:
                    stages.append((row.listings_median, [row.label]))
            path = " -> ".join(_value(v) for v, _ in stages)
            text = f"{path} listings per turn ({shape})"
            # The title shows the comparison with the most runs among turns that called a tool.
            changes.append((bool(calls), int(group["runs"].sum()), text))
            labels += [label for _, names in stages for label in names]
        if not changes and unsure:
            out.append(_unsure_finding(table, of_type, workflow_type, unsure))
        if not changes:
            continue
        rows = of_type[of_type["label"].isin(labels)]
        headline = max(changes)[2]
        stages_text = "; ".join(text for _, _, text in changes)
        explanation = (
            f"Turns of {workflow_type} list their tools a different number of times "
            f"depending on the version: {stages_text} (medians per label, in order "
            "of first run; the evidence table gives runs, turns and min/max per "
            "label). Different listing activities mean different commands: runs "
            "started on one side cannot replay on the other."
        )
        if label_note:
            explanation += f" Labels: {label_note}."
        out.append(
            finding(
                "listing_change",
                "medium",
                f"Tool listings per turn change between versions of {workflow_type}: {headline}",
                runs=table.loc[
                    (table["workflow_type"] == workflow_type) & table["label"].isin(labels),
                    "run_id",
                ],
                times=rows["first_seen"],
                versions=list(dict.fromkeys(labels)),
                evidence={
                    "table": "listing_summary",
                    "workflow_type": workflow_type,
                    "labels": list(dict.fromkeys(labels)),
                },
                explanation=explanation,
                next_step="Compare the versions' agent-framework releases; keep runs started "
                "on the old version on old workers until they finish, or patch the change.",
                confidence=_confidence(label_note, "certain"),
            )
        )
    return out


def _confidence(label_note: str, certain: str) -> str:
    """``certain`` unless the labels come from build ids or the SDK alone."""
    if "build ids" not in label_note and "SDK version only" not in label_note:
        return certain
    return "labels from the history; see explanation"


def _hidden_changes(group: pd.DataFrame, shape: str) -> list[tuple[str, str]]:
    """(label, text) for weak labels whose turns of one shape list tools a varying number of
    times: runs of different releases may hide behind one label."""
    varying = group[
        (group["listings_min"] != group["listings_max"]) & group["label_source"].isin(WEAK_LABELS)
    ]
    return [
        (
            row.label,
            f"{_value(row.listings_min)} to {_value(row.listings_max)} listings per turn "
            f"({shape}) within label {row.label!r} ({count(row.runs, 'run')})",
        )
        for row in varying.itertuples()
    ]


def _unsure_finding(
    table: pd.DataFrame, of_type: pd.DataFrame, workflow_type: str, unsure: list[tuple[str, str]]
) -> dict[str, Any]:
    labels = list(dict.fromkeys(label for label, _ in unsure))
    # The title shows turns that called a tool where there are some.
    headline = next((text for _, text in unsure if " 0 tool calls" not in text), unsure[0][1])
    return finding(
        "listing_change",
        "low",
        f"Tool listings per turn vary within one version label of {workflow_type}: {headline}",
        runs=table.loc[
            (table["workflow_type"] == workflow_type) & table["label"].isin(labels), "run_id"
        ],
        times=of_type.loc[of_type["label"].isin(labels), "first_seen"],
        versions=labels,
        evidence={"table": "listing_summary", "workflow_type": workflow_type, "labels": labels},
        explanation="; ".join(text for _, text in unsure) + ". These runs carry no build id or "
        "deployment version, so the history cannot tell whether they ran different releases of "
        "the agent (which would explain the difference) or the same one: their label (SDK "
        "version or binary checksum) is too coarse.",
        next_step="Label the runs with their release (versions=...) and investigate again.",
        confidence="low: the history cannot tell these runs' versions apart",
    )


def declared_summary(declared: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Per workflow type, label and declared names (``names``: sorted, repeats kept, so calls
    offered the same tools compare together): ``runs``, ``model_calls``, ``run_ids``, the
    ``order`` most of these calls declared them in (``declared``: as text) and every order seen
    (``orders``, each with its calls; ``other_orders``: how many others), ``first_seen`` (the
    label's first run). From
    :func:`toolkit.agents.declared.declared_tools`."""
    if declared.empty:
        return pd.DataFrame()
    labels = runs[["source", "history", "label", "label_source", "start"]]
    table = declared.merge(labels, on=["source", "history"], how="left")
    table = table.assign(order=table["declared_tools"].map(tuple),
                         names=table["declared_tools"].map(lambda d: tuple(sorted(d))))
    first = table.groupby("label", dropna=False)["start"].min()
    rows = []
    keys = ["workflow_type", "label", "names"]
    for (workflow_type, label, names), group in table.groupby(keys, sort=False, dropna=False):
        orders = group["order"].value_counts()
        rows.append({
            "workflow_type": workflow_type, "label": label,
            "label_source": group["label_source"].iloc[0], "names": list(names),
            "runs": group["run_id"].nunique(), "model_calls": len(group),
            "run_ids": sorted(group["run_id"].dropna().unique().tolist()),
            "order": list(orders.index[0]), "declared": ", ".join(orders.index[0]),
            "other_orders": len(orders) - 1,
            "orders": [(list(order), int(n)) for order, n in orders.items()],
            "first_seen": first.get(label),
        })  # fmt: skip
    out = pd.DataFrame(rows)
    return out.sort_values(["workflow_type", "first_seen", "label"], ignore_index=True)


def _stages(rows: pd.DataFrame, key: str) -> list[tuple[Any, list[str]]]:
    """Consecutive labels (in order of first run) with the same ``key`` value: one stage each."""
    stages: list[tuple[Any, list[str]]] = []
    for value, label in zip(rows[key], rows["label"], strict=True):
        value = tuple(value) if isinstance(value, list) else value
        if stages and stages[-1][0] == value:
            stages[-1][1].append(label)
        else:
            stages.append((value, [label]))
    return stages


def _named(labels: list[str]) -> str:
    return ", ".join(labels) if len(labels) < 4 else f"{labels[0]} ... {labels[-1]}"


def declared_change(summary: pd.DataFrame, label_note: str) -> list[dict[str, Any]]:
    """A ``listing_change`` finding per workflow type whose model calls are offered their tools
    differently under different labels (in order of first run), from
    :func:`declared_summary`: the same names in another order (compared among calls offered
    the same names), or names some labels never offer."""
    if summary.empty:
        return []
    out = []
    for workflow_type, of_type in summary.groupby("workflow_type", sort=False):
        changes: list[str] = []
        labels: list[str] = []
        boundary: list[str] = []  # the labels on either side of a change: the evidence rows
        for _, group in of_type.groupby(of_type["names"].map(tuple), sort=False):
            stages = _stages(group, "order")
            if len(stages) > 1:
                changes.append(" -> ".join(f"[{', '.join(order)}] ({_named(names)})"
                                           for order, names in stages))  # fmt: skip
                labels += [label for _, names in stages for label in names]
                boundary += [label for (_, old), (_, new) in pairwise(stages)
                             for label in (old[-1], new[0])]  # fmt: skip
        per_label = of_type.groupby("label", sort=False).agg(
            first_seen=("first_seen", "first"),
            offered=("names", lambda values: sorted({n for names in values for n in names})),
        ).sort_values("first_seen").reset_index()  # fmt: skip
        every = {n for names in per_label["offered"] for n in names}
        for name in sorted(every):
            without = [r.label for r in per_label.itertuples() if name not in r.offered]
            if without:
                changes.append(f"{name} never offered under {_named(without)}")
                labels += list(per_label["label"])
                boundary += list(per_label["label"])
        if not changes:
            continue
        labels = list(dict.fromkeys(labels))
        explanation = (
            f"The tools declared to the model in {workflow_type}'s model calls differ between "
            f"versions: {'; '.join(changes)} (the order most calls used per label, among calls "
            "offered the same names). The model sees another request: another order also "
            "changes what a provider's prompt cache matches. The evidence table has every "
            "order seen per label with its calls."
        )
        if label_note:
            explanation += f" Labels: {label_note}."
        rows = of_type[of_type["label"].isin(labels)]
        out.append(
            finding(
                "listing_change",
                "low",
                f"Tools declared to the model change between versions of {workflow_type}: "
                f"{changes[0]}",
                runs=[r for ids in rows["run_ids"] for r in ids],
                times=rows["first_seen"],
                versions=labels,
                evidence={
                    "table": "declared_summary", "workflow_type": workflow_type,
                    "labels": list(dict.fromkeys(boundary)),
                },
                explanation=explanation,
                next_step="Check that the new version offers the tools it should (names, "
                "order, no duplicates) before moving traffic to it.",
                confidence=_confidence(label_note, "certain: read from the model calls' inputs"),
            )
        )
    return out
