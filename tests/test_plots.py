"""Every chart renders to a PNG that fits a notebook, its words stay out of the plotting area and
inside the picture and never on one another, and what it draws equals the frame it was given
(real lab recordings)."""

from __future__ import annotations

import functools
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.text import Text
from PIL import Image

import toolkit as tk
from toolkit.errors import ToolkitError
from toolkit.plots import (
    listing_bars,
    natural_key,
    plot_activity_timeline,
    plot_delivery_timeline,
    plot_divergence,
    plot_incident_timeline,
    plot_listings_per_turn,
    plot_replay_matrix,
    replay_grid,
    timeline_rows,
)
from toolkit.plots.layout import overlapping_texts
from toolkit.plots.replay import REPLAY_COLORS

DATA = Path(__file__).resolve().parents[1] / "data"
TWIN, ADK = DATA / "go_twin", DATA / "adk"
ROLLING = ADK / "adk-1.28.1" / "rolling_upgrade_to_adk-1.29.0.json"


def _png(figure: Figure, path: Path) -> tuple[int, int]:
    """Save at 100 dpi and return the picture's size in pixels."""
    figure.savefig(path, dpi=100)
    with Image.open(path) as image:
        size = image.size
    assert 300 <= size[0] <= 960, f"{size[0]} px wide: not readable at notebook width"
    assert 200 <= size[1] <= 1600
    return size


def _words(figure: Figure) -> list[Text]:
    """The texts drawn: visible, non-empty, tick labels only for ticks inside the view."""
    hidden = set()
    for ax in figure.axes:
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks():
                if not low - 1e-9 <= tick.get_loc() <= high + 1e-9:
                    hidden |= {id(tick.label1), id(tick.label2)}
    return [t for t in figure.findobj(Text)
            if t.get_visible() and t.get_text().strip() and id(t) not in hidden]


def _check_layout(figure: Figure) -> None:
    """Every word is inside the picture and on no other; tick and axis labels stay off the
    plotting area."""
    assert overlapping_texts(figure) == []
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    box = figure.bbox
    for text in _words(figure):
        extent = text.get_window_extent(renderer)
        assert extent.x0 >= box.x0 - 1 and extent.x1 <= box.x1 + 1, f"clipped: {text.get_text()!r}"
        assert extent.y0 >= box.y0 - 1 and extent.y1 <= box.y1 + 1, f"clipped: {text.get_text()!r}"
    for ax in figure.axes:
        if not ax.axison:
            continue
        area = ax.get_window_extent(renderer)
        drawn = {id(t) for t in _words(figure)}
        labels = [*ax.get_xticklabels(), *ax.get_yticklabels(), ax.xaxis.label, ax.yaxis.label]
        for label in labels:
            if id(label) not in drawn:
                continue
            extent = label.get_window_extent(renderer)
            overlap_x = min(extent.x1, area.x1) - max(extent.x0, area.x0)
            overlap_y = min(extent.y1, area.y1) - max(extent.y0, area.y0)
            assert overlap_x <= 1 or overlap_y <= 1, f"{label.get_text()!r} covers the axes"
        notes = [t for t in ax.texts if t.get_text().strip()]
        extents = [t.get_window_extent(renderer) for t in notes]
        for i, first in enumerate(extents):
            for second, other in zip(extents[i + 1 :], notes[i + 1 :], strict=True):
                assert not first.overlaps(second), (notes[i].get_text(), other.get_text())


def _labelled(figure: Figure) -> None:
    titled = [figure.get_suptitle()]
    titled += [ax.get_title(loc=where) for ax in figure.axes for where in ("left", "center")]
    assert any(titled), "no title"
    axis_words = [ax.get_xlabel() or ax.get_ylabel() for ax in figure.axes if ax.axison]
    assert any(axis_words), "no axis label"


@pytest.fixture(scope="module")
def turns() -> pd.DataFrame:
    table = tk.listings_per_turn([ADK, TWIN])
    table["turn_kind"] = table["tool_calls"].map({0: "no tool call", 1: "one tool call"})
    table["dataset"] = ["go twin" if "go_twin" in s else "python adk" for s in table["source"]]
    return table


def test_listings_per_turn_one_bar_per_version(turns: pd.DataFrame, tmp_path: Path) -> None:
    headline = turns[turns["meta_scenario"].isin(["two_turns", "one_call_then_plain"])]
    figure = plot_listings_per_turn(headline, group="label", bars="turn_kind", facet="dataset")
    _png(figure, tmp_path / "listings.png")
    _labelled(figure)
    _check_layout(figure)
    drawn = listing_bars(headline, group="label", bars="turn_kind", facet="dataset")
    bars = [p for ax in figure.axes for p in ax.patches if isinstance(p, Rectangle)]
    assert len(bars) == len(drawn) == headline.groupby(["label", "turn_kind"]).ngroups
    expected = headline.groupby(["label", "turn_kind"])["listings"].mean()
    got = drawn.set_index(["group", "bar"])["mean"]
    pd.testing.assert_series_equal(got.sort_index(), expected.sort_index(), check_names=False)
    assert sorted(b.get_height() for b in bars) == sorted(drawn["mean"])
    # versions in version order, count ticks whole numbers, legend in words
    labels = [t.get_text() for t in figure.axes[1].get_xticklabels()]
    assert labels == sorted(labels, key=natural_key) and labels[-1] == "adk-2.13.0"
    assert all(float(t).is_integer() for t in figure.axes[0].get_yticks())
    legend = figure.legends[0]
    assert [t.get_text() for t in legend.get_texts()] == ["no tool call", "one tool call"]
    assert legend.get_title().get_text() == "turn"


def test_listings_per_turn_shows_spread_and_runs(turns: pd.DataFrame, tmp_path: Path) -> None:
    adk = turns[turns["dataset"] == "python adk"]
    figure = plot_listings_per_turn(adk, group="label", bars="turn_kind")
    _png(figure, tmp_path / "spread.png")
    _check_layout(figure)
    drawn = listing_bars(adk, group="label", bars="turn_kind")
    spread = drawn[drawn["max"] > drawn["min"]]
    assert len(spread), "the all-scenario table has labels whose runs differ"
    words = {t.get_text() for t in figure.axes[0].texts}
    assert {f"{lo:g}–{hi:g}" for lo, hi in zip(spread["min"], spread["max"], strict=True)} <= words
    runs = adk.groupby("label")["source"].nunique()
    ticks = [t.get_text() for t in figure.axes[0].get_xticklabels()]
    assert all(f"{label}\n{runs[label]} runs" in ticks for label in runs.index)


def test_empty_listings_table() -> None:
    figure = plot_listings_per_turn(pd.DataFrame(columns=["label", "turn", "listings"]))
    assert isinstance(figure, Figure)


@pytest.mark.parametrize("dataset", ["adk", "go_twin"])
def test_replay_matrix_separates_partial_from_total(dataset: str, tmp_path: Path) -> None:
    matrix = tk.read_replay_matrix(DATA / dataset / "replay_matrix.csv")
    figure = plot_replay_matrix(matrix, rows="recorded", columns="replayer")
    _png(figure, tmp_path / "matrix.png")
    _labelled(figure)
    _check_layout(figure)
    grid, key = replay_grid(matrix, rows="recorded", columns="replayer")
    cells = tk.replay_cells(matrix).set_index(["recorded", "replayer"])
    drawn = grid.set_index(["row", "column"])
    assert (drawn["failed"] == cells.loc[drawn.index, "failed"]).all()
    assert (drawn["histories"] == cells.loc[drawn.index, "histories"]).all()
    assert {"partial", "total", "ok"} <= set(grid["state"])
    colours = {matplotlib.colors.to_hex(p.get_facecolor()) for p in figure.axes[0].patches}
    assert {REPLAY_COLORS["partial"].lower(), REPLAY_COLORS["total"].lower()} <= colours
    texts = [t.get_text() for t in figure.axes[0].texts]
    partial = grid[grid["state"] == "partial"].iloc[0]
    assert any(t.startswith(f"{partial.failed}/{partial.histories}") for t in texts)
    # each failure message is written once, in the key under the grid, not in every cell
    key_text = figure.axes[1].texts[0].get_text()
    assert all(key_text.count(f"{letter}  ") == 1 for letter in key)
    assert not any("does not match" in t for t in texts)


def test_divergence_is_highlighted_and_not_clipped(tmp_path: Path) -> None:
    divergence = tk.first_divergence(TWIN / "before_fix-adk_v2.5.0" / "one_call_then_plain.json",
                                     TWIN / "before_fix-adk_v2.6.0" / "one_call_then_plain.json")
    figure = plot_divergence(divergence)
    _png(figure, tmp_path / "divergence.png")
    _check_layout(figure)
    ax = figure.axes[0]
    faces = [matplotlib.colors.to_hex(p.get_facecolor()) for p in ax.patches]
    highlighted = [face for face in faces if face == "#fcae91"]
    assert len(highlighted) == 1
    row = divergence.aligned[divergence.aligned["recorded_event_id"] == divergence.event_id].iloc[0]
    texts = [t.get_text() for t in ax.texts]
    assert any(t.startswith(str(row["recorded"])) and f"ev {divergence.event_id}," in t
               for t in texts)  # fmt: skip
    assert figure.get_suptitle().replace("\n", " ") == divergence.core_message
    # every word ends inside the picture: the right-hand column is not cut
    renderer = FigureCanvasAgg(figure).get_renderer()
    right = max(t.get_window_extent(renderer).x1 for t in ax.texts)
    assert right <= figure.bbox.x1


def test_activity_timeline_from_events_shows_the_stuck_turn(tmp_path: Path) -> None:
    events = tk.read_history(ROLLING)
    figure = plot_activity_timeline(events)
    _png(figure, tmp_path / "timeline.png")
    _labelled(figure)
    _check_layout(figure)
    rows, failures = timeline_rows(events)
    spans = tk.activity_spans(events)
    drawn = [p for ax in figure.axes for p in ax.patches if isinstance(p, Rectangle)]
    assert len(drawn) == 2 * len(spans)  # waiting + running per activity
    # the stuck turn: a panel of its own, and the failed workflow task with its cause
    assert set(rows["turn"]) == {1, 2} and rows.loc[rows["turn"] == 2, "event_id"].isna().all()
    assert len(failures) == 1 and failures["turn"].item() == 2
    words = " ".join(t.get_text() for ax in figure.axes for t in ax.texts)
    assert "no activity" in words and "non deterministic error" in words
    assert [ax.get_title(loc="left") for ax in figure.axes] == [
        "turn 1 (signal:user_turn)", "turn 2 (signal:user_turn)"]
    # the legend sits below the panels, not on a bar
    legend = figure.legends[0].get_window_extent(FigureCanvasAgg(figure).get_renderer())
    lowest = min(ax.get_window_extent().y0 for ax in figure.axes)
    assert legend.y1 <= lowest


def test_activity_timeline_from_spans_and_of_plain_workflows(tmp_path: Path) -> None:
    spans = tk.activity_spans(DATA / "duplicate_tool" / "python" / "two_toolsets.json")
    figure = plot_activity_timeline(spans)
    _png(figure, tmp_path / "spans.png")
    _check_layout(figure)
    bars = [p for ax in figure.axes for p in ax.patches if isinstance(p, Rectangle)]
    running = sorted(round(b.get_x() + b.get_width(), 6) for b in bars[1::2])
    origin = spans["scheduled"].min()
    ends = sorted(round((c - origin).total_seconds(), 6) for c in spans["closed"])
    assert np.allclose(running, ends, atol=1e-3)
    # a workflow of no agent framework: one panel, attempts and outcomes written by the bars
    plain = tk.read_history(DATA / "gallery" / "activity-renamed" / "v1.json")
    figure = plot_activity_timeline(plain)
    assert len(figure.axes) == 1 and figure.axes[0].get_title(loc="left") == "activities"
    _check_layout(figure)


def test_activity_timeline_wants_one_history() -> None:
    both = tk.read_histories([ROLLING, TWIN / "with_fix-adk_v2.5.0" / "plain_turns.json"]).events
    with pytest.raises(ToolkitError, match="several histories"):
        plot_activity_timeline(both)


def test_delivery_timeline(tmp_path: Path) -> None:
    logs = tk.read_logs(DATA / "duplicate_tool" / "go" / "before.log")
    timeline = tk.delivery_timeline(logs)
    figure = plot_delivery_timeline(timeline)
    _png(figure, tmp_path / "deliveries.png")
    _labelled(figure)
    _check_layout(figure)
    points = [c for c in figure.axes[0].collections]
    assert sum(len(c.get_offsets()) for c in points) == len(timeline)


def test_figures_save_in_scripts_and_versions_sort(tmp_path: Path) -> None:
    figure = plot_divergence(tk.first_divergence(DATA / "gallery" / "activity-renamed" / "v1.json",
                                                 DATA / "gallery" / "activity-renamed" / "v2.json"))
    figure.savefig(tmp_path / "divergence.png")
    assert (tmp_path / "divergence.png").stat().st_size > 5_000
    labels = ["adk-2.13.0", "adk-2.2.0", "adk-1.29.0", "adk-1.28.1"]
    assert sorted(labels, key=natural_key) == ["adk-1.28.1", "adk-1.29.0", "adk-2.2.0",
                                               "adk-2.13.0"]


def test_overlapping_texts_sees_words_on_words_and_not_turned_neighbours() -> None:
    figure = Figure(figsize=(4, 3))
    ax: Axes = figure.add_subplot()
    ax.text(0.2, 0.5, "first label")
    ax.text(0.25, 0.5, "second label")  # starts inside the first
    ax.text(0.2, 0.1, "alone")
    assert overlapping_texts(figure) == [("first label", "second label")]
    # Labels turned 45 degrees side by side: their upright boxes overlap, their words do not.
    turned = Figure(figsize=(4, 3))
    ax = turned.add_subplot()
    ax.set_xticks(range(6), [f"a long version label {i}" for i in range(6)], rotation=45,
                  ha="right", rotation_mode="anchor")  # fmt: skip
    assert overlapping_texts(turned) == []
    ax.set_xticks(range(6), [f"a long version label {i}" for i in range(6)], rotation=0)
    assert len(overlapping_texts(turned)) >= 5


@functools.cache
def _notebook_listings() -> pd.DataFrame:
    """The listings notebook's table: both lab datasets, each turn named by its shape."""
    table = tk.listings_per_turn([ADK, TWIN])
    table["dataset"] = ["python adk" if Path(s).is_relative_to(ADK) else "go twin"
                        for s in table["source"]]  # fmt: skip
    shapes = {(2, 1): "one tool call", (1, 0): "no tool call"}
    table["turn_kind"] = [shapes.get((s, c), f"{s} steps, {c} calls")
                          for s, c in zip(table["model_steps"], table["tool_calls"], strict=True)]
    return table


def _frameworks() -> pd.DataFrame:
    """Listings per turn of the three frameworks' releases, as the listings notebook draws them."""
    folders = {"Google ADK": ADK, "OpenAI Agents": DATA / "openai_agents",
               "pydantic-ai": DATA / "pydantic_ai"}  # fmt: skip
    turns = tk.listings_per_turn([str(folder / "*" / "*.json") for folder in folders.values()])
    turns["framework"] = [next(n for n, f in folders.items() if Path(s).is_relative_to(f))
                          for s in turns["source"]]  # fmt: skip
    turns["version"] = [Path(s).parent.name for s in turns["source"]]
    turns["turn and cache"] = turns["tool_calls"].map({0: "no tool call", 1: "one tool call"})
    return turns[turns["meta_scenario"].str.startswith("two_turns")]


#: Every public chart, drawn on the lab data the way the notebooks and the report draw it.
CHARTS = {
    "plot_listings_per_turn: both datasets' versions, faceted": lambda: plot_listings_per_turn(
        (t := _notebook_listings())[t["meta_scenario"].isin(["two_turns", "one_call_then_plain"])],
        group="label", bars="turn_kind", facet="dataset",
        title="Listings per turn: the Go plugin twin's variants and real google-adk releases"),
    "plot_listings_per_turn: per run, one cluster per twin scenario": lambda: (
        plot_listings_per_turn((r := _notebook_listings().groupby(
            ["dataset", "meta_scenario", "label"], as_index=False)["listings"].sum())[
                r["dataset"] == "go twin"], group="meta_scenario", bars="label",
            title="ListMcpTools per run, Go plugin twin")),
    "plot_listings_per_turn: per run, one cluster per adk scenario": lambda: (
        plot_listings_per_turn((r := _notebook_listings().groupby(
            ["dataset", "meta_scenario", "label"], as_index=False)["listings"].sum())[
                r["dataset"] == "python adk"], group="meta_scenario", bars="label",
            title="list-tools activities per run, google-adk")),
    "plot_listings_per_turn: three frameworks by release": lambda: plot_listings_per_turn(
        _frameworks(), group="version", bars="turn and cache", facet="framework",
        title="Listings per turn in three agent frameworks on Temporal, by release"),
    "plot_listings_per_turn: the report's labels (SDK and build id)": lambda: tk.investigate(
        [ADK / "adk-1.28.1", ADK / "adk-1.29.0"]).figures["listings_per_turn"],
    "plot_replay_matrix: go twin": lambda: plot_replay_matrix(
        tk.read_replay_matrix(TWIN / "replay_matrix.csv"), rows="recorded", columns="replayer",
        title="Go plugin twin: replay with temporalio's Replayer"),
    "plot_replay_matrix: google-adk releases": lambda: plot_replay_matrix(
        tk.read_replay_matrix(ADK / "replay_matrix.csv"), rows="recorded", columns="replayer",
        title="Real google-adk: replay with each release's Replayer"),
    "plot_divergence: adk 1.28.1 against 1.29.0": lambda: plot_divergence(tk.first_divergence(
        ADK / "adk-1.28.1" / "two_turns.json", ADK / "adk-1.29.0" / "two_turns.json")),
    "plot_divergence: the twin's timer case": lambda: plot_divergence(tk.first_divergence(
        TWIN / "before_fix-adk_v2.5.0" / "instruction_timer.json",
        TWIN / "before_fix-adk_v2.6.0" / "instruction_timer.json")),
    "plot_activity_timeline: the stuck rolling upgrade": lambda: plot_activity_timeline(
        tk.read_history(ROLLING), title="The rolling upgrade 1.28.1 → 1.29.0: turn 2 is stuck"),
    "plot_activity_timeline: two toolsets on one endpoint": lambda: plot_activity_timeline(
        tk.read_history(DATA / "duplicate_tool" / "python" / "two_toolsets.json"),
        title="Python ADK, two toolsets on one endpoint: the call runs on weather-token"),
    "plot_history_budget: two frameworks' two-turn runs": lambda: tk.plots.plot_history_budget(
        [ADK / "adk-2.13.0" / "two_turns.json",
         DATA / "openai_agents" / "oa-0.22.3" / "two_turns.json"]),
    "plot_delivery_timeline: the go runtime before the fix": lambda: plot_delivery_timeline(
        tk.delivery_timeline(tk.read_logs(DATA / "duplicate_tool" / "go" / "before.log")),
        "before the fix: cmd-2, the tool turn"),
    "plot_incident_timeline: the lab's incident bundle": lambda: _incident(
        [ADK / "adk-1.28.1", ADK / "adk-1.29.0"], DATA / "duplicate_tool" / "go" / "before.log"),
    "plot_incident_timeline: the go twin's variants": lambda: _incident([TWIN], None),
    "plot_tokens_per_turn: two frameworks by release": lambda: tk.plots.plot_tokens_per_turn(
        tk.model_calls([DATA / "openai_agents", DATA / "pydantic_ai"]), facet="framework"),
}  # fmt: skip


def _incident(histories: list[Path], logs: Path | None) -> Figure:
    """The report's first chart, as Investigation.to_html draws it."""
    found = tk.investigate(histories, logs=logs)
    return plot_incident_timeline(found.runs, found.evidence["events"], found.findings)


@pytest.mark.parametrize("chart", list(CHARTS))
def test_no_chart_prints_words_over_words(chart: str) -> None:
    figure = CHARTS[chart]()
    assert overlapping_texts(figure) == [], chart


def test_every_public_chart_is_checked_for_overlapping_words() -> None:
    public = {name for name in tk.plots.__all__ if name.startswith("plot_")}
    assert public <= {chart.split(":")[0] for chart in CHARTS}


def test_incident_timeline_draws_every_run_in_its_version_lane(tmp_path: Path) -> None:
    found = tk.investigate([ADK / "adk-1.28.1", ADK / "adk-1.29.0"],
                           logs=DATA / "duplicate_tool" / "go" / "before.log")  # fmt: skip
    events = found.evidence["events"]
    figure = plot_incident_timeline(found.runs, events, found.findings)
    _png(figure, tmp_path / "incident.png")
    _labelled(figure)
    _check_layout(figure)
    bars, marks = tk.plots.incident_rows(found.runs, events, found.findings)
    assert len(bars) == len(found.runs) and set(bars["lane"]) == set(found.runs["label"])
    drawn = [p for p in figure.axes[0].patches if isinstance(p, Rectangle)]
    assert len(drawn) == len(bars)
    # lanes in order of first run (the rollout), the stuck run marked, every failed task marked
    firsts = found.runs.groupby("label")["start"].min().sort_values()
    assert list(dict.fromkeys(bars["lane"])) == list(firsts.index)
    assert bars.loc[bars["open"], "status"].tolist() == ["stuck"]
    failed = events["event_type"].isin(["WorkflowTaskFailed", "WorkflowTaskTimedOut"]).sum()
    assert (marks["kind"] == "workflow_task_failed").sum() == failed
    logs_only = found.findings[found.findings["run_count"] == 0]
    assert (marks["kind"] == "seen_in_logs").sum() == len(logs_only) > 0
