"""Charts render with Agg from real data and show what they claim."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pandas as pd
import pytest
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from toolkit.agents.turns import activity_spans, listings_per_turn
from toolkit.histories.read import read_history
from toolkit.plots import (
    plot_activity_timeline,
    plot_divergence,
    plot_listings_per_turn,
    plot_replay_matrix,
)
from toolkit.replay.divergence import first_divergence

DATA = Path(__file__).resolve().parents[1] / "data"


def _texts(figure: Figure) -> list[str]:
    return [t.get_text() for ax in figure.axes for t in ax.texts]


def _png(figure: Figure, path: Path) -> None:
    figure.savefig(path)
    assert path.stat().st_size > 5_000


def test_listings_per_turn_bars(corpus: Path, tmp_path: Path) -> None:
    table = listings_per_turn(
        [
            corpus / "histories/temporalio__sdk-python/mcp-history-stateful.json",
            corpus / "histories/temporalio__sdk-python/customer-service-workflow-history.json",
        ]
    )
    figure = plot_listings_per_turn(table, value="model_steps")
    bars = [p for p in figure.axes[0].patches if isinstance(p, Rectangle)]
    heights = sorted(b.get_height() for b in bars if b.get_height() == b.get_height())  # no NaN
    assert heights == sorted(table.model_steps.astype(float).tolist())
    _png(figure, tmp_path / "bars.png")


def test_replay_matrix_labels_failures(tmp_path: Path) -> None:
    message = (
        "[TMPRL1100] Nondeterminism error: Activity type of scheduled event 'weather-list-tools' "
        "does not match activity type of activity command 'weather-call-tool'"
    )
    matrix = pd.DataFrame(
        {
            "recorded_env": ["1.28.1", "1.28.1", "1.29.0", "1.29.0"],
            "replayer_env": ["1.28.1", "1.29.0", "1.28.1", "1.29.0"],
            "outcome": ["ok", "nondeterminism", "nondeterminism", "ok"],
            "message": ["", message, message, ""],
        }
    )
    matrix_path = DATA / "adk" / "replay_matrix.csv"
    if matrix_path.is_file():  # the lab's real matrix once it is recorded
        matrix = pd.read_csv(matrix_path, dtype=str, keep_default_na=False)
    figure = plot_replay_matrix(matrix)
    texts = _texts(figure)
    failing = matrix[matrix.outcome != "ok"]
    assert sum("does not match" in t or "No command" in t for t in texts) >= min(1, len(failing))
    assert any(t.startswith("ok") for t in texts)
    _png(figure, tmp_path / "matrix.png")


def test_divergence_highlight(corpus: Path, tmp_path: Path) -> None:
    base = corpus / "histories/temporalio__sdk-python"
    recorded = read_history(base / "mcp-history-stateful.json")
    # The same run without its first model step's tool call: a recorded event the code lacks.
    dropped = recorded[recorded.event_id != 18]
    divergence = first_divergence(recorded, dropped)
    assert divergence is not None
    figure = plot_divergence(divergence)
    highlighted = [p for p in figure.axes[0].patches if p.get_facecolor()[:3] != (1.0, 1.0, 1.0)]
    assert highlighted, "the divergent row is not highlighted"
    assert any(str(divergence.event_id) in t for t in _texts(figure))
    _png(figure, tmp_path / "divergence.png")


def test_activity_timeline(corpus: Path, tmp_path: Path) -> None:
    spans = activity_spans(corpus / "histories/temporalio__sdk-python/mcp-history-stateful.json")
    figure = plot_activity_timeline(spans)
    bars = [p for ax in figure.axes for p in ax.patches if isinstance(p, Rectangle)]
    assert len(bars) == 2 * len(spans)  # waiting + running per activity
    _png(figure, tmp_path / "timeline.png")


@pytest.mark.parametrize("empty", [pd.DataFrame(columns=["label", "turn", "listings"])])
def test_empty_listings_table(empty: pd.DataFrame) -> None:
    figure = plot_listings_per_turn(empty)
    assert isinstance(figure, Figure)


def test_version_labels_sort_as_versions() -> None:
    from toolkit.plots import natural_key

    labels = ["adk-2.13.0", "adk-2.2.0", "adk-1.29.0", "adk-1.28.1"]
    expected = ["adk-1.28.1", "adk-1.29.0", "adk-2.2.0", "adk-2.13.0"]
    assert sorted(labels, key=natural_key) == expected
