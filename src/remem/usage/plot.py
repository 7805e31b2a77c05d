"""Bar charts per day as geometry (no I/O, no drawing library): the dashboard's template
writes the bars, ticks and labels computed here as inline SVG, so a plot needs no
JavaScript and its numbers are also in a text table beside it.

Colours are SVG presentation attributes (the inspector's Content-Security-Policy allows no
inline style), the same ones its stylesheet gives the score bars.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from remem.errors import InvalidInputError

__all__ = ["BarChart", "PlotBar", "Series", "Tick", "nice_step", "stacked_bars"]

#: series colours (the stylesheet's keyword, vector, recency and fusion colours)
COLOURS = ("#2b5797", "#2b7a3f", "#b0731f", "#7a3fb0")
#: margins around the plot area: left (y tick labels), right, top, bottom (x labels)
LEFT, RIGHT, TOP, BOTTOM = 64.0, 8.0, 10.0, 40.0


@dataclass(frozen=True, slots=True)
class Series:
    """One stacked series: its name, colour, and one value per day."""

    name: str
    values: tuple[int, ...]
    colour: str = COLOURS[0]


@dataclass(frozen=True, slots=True)
class PlotBar:
    """One rectangle; ``label`` is its tooltip (``<title>``)."""

    x: float
    y: float
    width: float
    height: float
    colour: str
    label: str


@dataclass(frozen=True, slots=True)
class Tick:
    """An axis label at ``at`` (x for the day axis, y for the value axis)."""

    at: float
    text: str


@dataclass(frozen=True, slots=True)
class BarChart:
    """A stacked bar chart, one bar per day, in SVG user units."""

    title: str
    y_label: str
    x_label: str
    width: float
    height: float
    bars: tuple[PlotBar, ...]
    y_ticks: tuple[Tick, ...]
    x_ticks: tuple[Tick, ...]
    series: tuple[Series, ...]
    days: tuple[str, ...]
    #: one sentence with the figures, for the image's accessible name
    summary: str

    @property
    def plot_left(self) -> float:
        """Where the plot area starts (the y axis)."""
        return LEFT

    @property
    def plot_bottom(self) -> float:
        """Where the plot area ends (the x axis)."""
        return self.height - BOTTOM

    @property
    def plot_right(self) -> float:
        """Where the plot area ends on the right."""
        return self.width - RIGHT

    def rows(self) -> list[tuple[str, list[int]]]:
        """``(day, [value per series])`` per day: the table beside the plot."""
        return [(day, [s.values[n] for s in self.series]) for n, day in enumerate(self.days)]


def nice_step(value: float) -> int:
    """The smallest whole 1, 2 or 5 times a power of ten that is >= ``value`` (1 for
    anything up to 1): the step between value ticks of counts."""
    if value <= 1:
        return 1
    power: int = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if value <= step * power:
            return step * power
    return 10 * power  # (not reached)


def _short(value: float) -> str:
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}"


def stacked_bars(days: Sequence[str], series: Sequence[Series], *, title: str,
                 y_label: str, x_label: str = "day (UTC)", width: float = 640.0,
                 height: float = 200.0, x_labels: int = 6) -> BarChart:
    """A chart with one bar per day stacking ``series`` (first at the bottom), the value
    axis from 0 to four whole, round steps (five ticks) above the tallest bar, and about
    ``x_labels`` day labels."""
    for s in series:
        if len(s.values) != len(days):
            raise InvalidInputError(f"series {s.name!r} has {len(s.values)} values for "
                             f"{len(days)} days; give one value per day")
    totals = [sum(s.values[n] for s in series) for n in range(len(days))]
    step = nice_step(max(totals, default=0) / 4)
    top = 4 * step
    area_w, area_h = width - LEFT - RIGHT, height - TOP - BOTTOM
    slot = area_w / max(len(days), 1)
    bar_w = max(slot * 0.8, 1.0)
    bars: list[PlotBar] = []
    for n, day in enumerate(days):
        base = 0
        for s in series:
            value = s.values[n]
            if value > 0:
                y_top = TOP + area_h * (1 - (base + value) / top)
                y_low = TOP + area_h * (1 - base / top)
                bars.append(PlotBar(round(LEFT + n * slot + (slot - bar_w) / 2, 2), round(y_top, 2),
                                round(bar_w, 2), round(y_low - y_top, 2), s.colour,
                                f"{day}: {value} {s.name}"))
            base += value
    y_ticks = tuple(Tick(round(TOP + area_h * (1 - k / 4), 2), _short(step * k))
                    for k in range(5))
    every = max(1, math.ceil(len(days) / max(x_labels, 1)))
    x_ticks = tuple(Tick(round(LEFT + n * slot + slot / 2, 2), day[5:])
                    for n, day in enumerate(days) if n % every == 0)
    total = sum(totals)
    if total and days:
        busiest = max(range(len(days)), key=lambda n: (totals[n], n))
        summary = (f"{title}, {days[0]} to {days[-1]}: {total} in total, most "
                   f"({totals[busiest]}) on {days[busiest]}.")
    else:
        summary = f"{title}: none" + (f" from {days[0]} to {days[-1]}." if days else ".")
    return BarChart(title, y_label, x_label, width, height, tuple(bars), y_ticks, x_ticks,
                    tuple(series), tuple(days), summary)
