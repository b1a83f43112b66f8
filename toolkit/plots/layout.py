"""Words that collide: every drawn text of a figure checked against every other.

:func:`overlapping_texts` is how the tests (and ``make demo``, on every figure the notebooks
show) prove that no chart prints a label over another one. A rotated text is its rotated
rectangle, not the axis-aligned box around it (whose corners would overlap a neighbour's even
where the words do not).
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.figure import Figure
from matplotlib.text import Text

__all__ = ["drawn_texts", "overlapping_texts"]


def drawn_texts(figure: Figure) -> list[Text]:
    """The texts a reader sees: visible, not blank, inside the figure, tick labels only for the
    ticks inside their axis' view (matplotlib keeps labels for ticks it does not draw)."""
    hidden = set()
    for ax in figure.axes:
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                inside = low - 1e-9 <= tick.get_loc() <= high + 1e-9
                if not inside or not tick.get_visible():
                    hidden |= {id(tick.label1), id(tick.label2)}
                if not tick.label1.get_visible() and not tick.label2.get_visible():
                    hidden |= {id(tick.label1), id(tick.label2)}
    texts = []
    for text in figure.findobj(Text):
        if id(text) in hidden or not text.get_visible() or not text.get_text().strip():
            continue
        if not _shown_by_parents(text):
            continue
        texts.append(text)
    return texts


def _shown_by_parents(text: Text) -> bool:
    """A text inside an invisible axes, axis or legend is not drawn."""
    axes = text.axes
    if axes is not None and not axes.get_visible():
        return False
    if axes is not None and not axes.axison:
        # Tick labels and axis labels of an axes drawn without its axis are not drawn either.
        axis_texts = {id(axes.xaxis.label), id(axes.yaxis.label)}
        for axis in (axes.xaxis, axes.yaxis):
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                axis_texts |= {id(tick.label1), id(tick.label2)}
        if id(text) in axis_texts:
            return False
    return True


def _corners(text: Text, renderer: object) -> np.ndarray:
    """The four corners of the text's own (rotated) rectangle, in pixels."""
    box = text.get_window_extent(renderer)
    rotation = text.get_rotation()
    if rotation % 180 == 0:
        return np.array([[box.x0, box.y0], [box.x1, box.y0], [box.x1, box.y1], [box.x0, box.y1]])
    # The rectangle's size is the text's unturned extent; its centre that of the turned box.
    text.set_rotation(0)
    try:
        flat = text.get_window_extent(renderer)
    finally:
        text.set_rotation(rotation)
    angle = math.radians(rotation)
    centre = np.array([(box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2])
    along = np.array([math.cos(angle), math.sin(angle)]) * flat.width / 2
    across = np.array([-math.sin(angle), math.cos(angle)]) * flat.height / 2
    return np.array([centre - along - across, centre + along - across,
                     centre + along + across, centre - along + across])  # fmt: skip


def _shrunk(corners: np.ndarray, by: float) -> np.ndarray:
    """The rectangle with each side moved inwards by ``by`` pixels (touching is not overlapping)."""
    centre = corners.mean(axis=0)
    out = []
    for corner in corners:
        offset = corner - centre
        length = np.linalg.norm(offset)
        out.append(centre if length <= by * math.sqrt(2) else corner - offset / length * by *
                   math.sqrt(2))  # fmt: skip
    return np.array(out)


def _separated(first: np.ndarray, second: np.ndarray) -> bool:
    """Separating axis test for two convex quadrilaterals."""
    for corners in (first, second):
        for index in range(4):
            edge = corners[(index + 1) % 4] - corners[index]
            normal = np.array([-edge[1], edge[0]])
            if not normal.any():
                continue
            a, b = first @ normal, second @ normal
            if a.max() <= b.min() or b.max() <= a.min():
                return True
    return False


def overlapping_texts(figure: Figure, *, tolerance: float = 1.0) -> list[tuple[str, str]]:
    """Pairs of drawn texts whose rectangles overlap by more than ``tolerance`` pixels.

    Parameters
    ----------
    figure
        Any matplotlib figure; it is drawn once (layout engines included) to measure its texts.
    tolerance
        Pixels each rectangle is shrunk by first, so that texts that merely touch (stacked
        lines of a legend) do not count.

    Returns
    -------
    list of (str, str)
        The two texts of each overlapping pair, in drawing order; empty when nothing collides.
    """
    figure.draw_without_rendering()
    renderer = figure._get_renderer()  # the renderer the draw above laid the texts out with
    texts = drawn_texts(figure)
    shapes = [_shrunk(_corners(t, renderer), tolerance) for t in texts]
    boxes = np.array([[s[:, 0].min(), s[:, 1].min(), s[:, 0].max(), s[:, 1].max()]
                      for s in shapes]).reshape(-1, 4)  # fmt: skip
    pairs = []
    for i in range(len(texts)):
        # Only pairs whose axis-aligned boxes meet need the exact test.
        near = np.nonzero((boxes[i + 1 :, 0] < boxes[i, 2]) & (boxes[i + 1 :, 2] > boxes[i, 0])
                          & (boxes[i + 1 :, 1] < boxes[i, 3]) & (boxes[i + 1 :, 3] > boxes[i, 1])
                          )[0] + i + 1  # fmt: skip
        for j in near:
            if not _separated(shapes[i], shapes[j]):
                pairs.append((texts[i].get_text(), texts[j].get_text()))
    return pairs
