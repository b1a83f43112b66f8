"""Every chart of the toolkit: functions that take frames and return a matplotlib ``Figure``.

Each chart fits a notebook's width at 100 dpi, labels its axes and legends in words, orders
versions as versions and counts on whole numbers. Figures are built without pyplot's global
state: ``fig.savefig("chart.png")`` works in scripts and tests, and in Jupyter a figure shows
once at the end of the cell whether it is returned or assigned.

Each ``plot_*`` function has a companion that returns the numbers it draws
(:func:`listing_bars`, :func:`replay_grid`, :func:`timeline_rows`, :func:`incident_rows`), for
tables and tests.
No chart prints a word over another (:func:`overlapping_texts` measures any figure).
"""

from __future__ import annotations

from toolkit.plots.budget import budget_series, plot_history_budget
from toolkit.plots.incident import incident_rows, plot_incident_timeline
from toolkit.plots.layout import overlapping_texts
from toolkit.plots.listings import listing_bars, plot_listings_per_turn
from toolkit.plots.replay import plot_divergence, plot_replay_matrix, replay_grid
from toolkit.plots.style import natural_key
from toolkit.plots.timeline import plot_activity_timeline, plot_delivery_timeline, timeline_rows
from toolkit.plots.tokens import plot_tokens_per_turn, token_bars

__all__ = [
    "budget_series",
    "incident_rows",
    "listing_bars",
    "natural_key",
    "overlapping_texts",
    "plot_activity_timeline",
    "plot_delivery_timeline",
    "plot_divergence",
    "plot_history_budget",
    "plot_incident_timeline",
    "plot_listings_per_turn",
    "plot_replay_matrix",
    "plot_tokens_per_turn",
    "replay_grid",
    "timeline_rows",
    "token_bars",
]
