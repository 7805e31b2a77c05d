"""Pictures of a graph: Graphviz DOT text, and SVG drawn here (no Graphviz binary needed).

Both show one node per entity (its name; its type as the colour) and one arrow per fact
between two entities, labelled with the predicate and the fact's validity (``2019-03 ..
2024-05``); facts that ended are dashed and grey. ``as_of=`` draws only the facts true
then (solid: they held). Facts with a literal value (no object entity) are listed in the
node's tooltip.

The SVG layout is a force-directed placement (Fruchterman-Reingold: connected nodes pull
together, all nodes push apart, the step cooling each round), seeded, so the same graph
always gives the same picture. It suits the graphs one looks at (tens to a few hundred
entities); larger exports belong in a viewer that reads GraphML (:func:`to_graphml`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape

import numpy as np
import numpy.typing as npt

from remem.graph.types import Entity, Fact

if TYPE_CHECKING:
    from remem.graph.graph import Graph

__all__ = ["layout", "to_dot", "to_svg"]

#: fill colour per entity type (others: grey)
COLOURS = {"person": "#8ecae6", "organization": "#ffb703", "place": "#90be6d",
           "thing": "#cdb4db", "event": "#f4a261"}
_OTHER = "#d9d9d9"
#: a white outline under edge labels, so lines crossing them do not hide the text
_HALO = ' paint-order="stroke" stroke="white" stroke-width="3"'


def _month(ts: float | None) -> str:
    return "" if ts is None else datetime.fromtimestamp(ts, UTC).strftime("%Y-%m")


def _interval(fact: Fact) -> str:
    if fact.valid_at is None and fact.invalid_at is None:
        return ""
    return f"{_month(fact.valid_at) or '...'} .. {_month(fact.invalid_at) or 'now'}"


def _parts(graph: Graph, as_of: float | None) -> tuple[list[Entity], list[Fact]]:
    facts = graph.facts(as_of=as_of)
    entities = graph.entities()
    if as_of is not None:  # only the entities the facts of that time touch
        touched = {e for f in facts for e in (f.subject_id, f.object_id) if e is not None}
        entities = [e for e in entities if e.id in touched]
    return entities, facts


def _dot_text(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(graph: Graph, *, as_of: float | None = None) -> str:
    """The graph as Graphviz DOT (``dot -Tpng``, or any DOT viewer)."""
    entities, facts = _parts(graph, as_of)
    lines = [f"digraph {_dot_text('/'.join(graph.namespace))} {{",
             "  graph [rankdir=LR, fontname=Helvetica];",
             "  node [shape=ellipse, style=filled, fontname=Helvetica];",
             "  edge [fontname=Helvetica, fontsize=10];"]
    for e in entities:
        values = [f"{f.predicate}: {f.value}" for f in facts
                  if f.subject_id == e.id and f.object_id is None]
        tooltip = "; ".join([f"{e.type}", *values])
        lines.append(f"  n{e.id} [label={_dot_text(e.name)}, "
                     f"fillcolor={_dot_text(COLOURS.get(e.type, _OTHER))}, "
                     f"tooltip={_dot_text(tooltip)}];")
    for f in facts:
        if f.object_id is None:
            continue
        label = f.predicate + (f"\n{_interval(f)}" if _interval(f) else "")
        # ended (dashed) only in a picture of every fact; one as of a time shows what held
        style = ", style=dashed, color=grey50, fontcolor=grey40" \
            if f.invalid_at is not None and as_of is None else ""
        lines.append(f"  n{f.subject_id} -> n{f.object_id} [label={_dot_text(label)}, "
                     f"tooltip={_dot_text(f.fact)}{style}];")
    lines.append("}")
    return "\n".join(lines)


def layout(n: int, edges: Sequence[tuple[int, int]], *, iterations: int = 300,
           seed: int = 7) -> npt.NDArray[np.float64]:
    """Positions in the unit square for ``n`` nodes joined by ``edges`` (index pairs):
    Fruchterman-Reingold, deterministic for a seed."""
    if n == 0:
        return np.zeros((0, 2))
    rng = np.random.default_rng(seed)
    pos = rng.random((n, 2))
    if n == 1:
        return np.array([[0.5, 0.5]])
    k = math.sqrt(1.0 / n)
    pairs = np.array(sorted({(min(a, b), max(a, b)) for a, b in edges if a != b}),
                     dtype=np.int64).reshape(-1, 2)
    step = 0.1
    for _ in range(iterations):
        delta = pos[:, None, :] - pos[None, :, :]
        dist = np.maximum(np.linalg.norm(delta, axis=2), 1e-3)
        push = (k * k / dist ** 2)[:, :, None] * delta  # repulsion, every pair
        move = push.sum(axis=1)
        if len(pairs):
            d = pos[pairs[:, 0]] - pos[pairs[:, 1]]
            length = np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-3)
            pull = d * length / k  # attraction along edges
            np.add.at(move, pairs[:, 0], -pull)
            np.add.at(move, pairs[:, 1], pull)
        move += (0.5 - pos) * 0.05  # a light pull to the centre keeps components close
        size = np.maximum(np.linalg.norm(move, axis=1, keepdims=True), 1e-9)
        pos += move / size * np.minimum(size, step)
        step = max(step * 0.985, 0.002)
    low, high = pos.min(axis=0), pos.max(axis=0)
    span = np.where(high - low > 1e-9, high - low, 1.0)
    placed: npt.NDArray[np.float64] = (pos - low) / span
    return placed


def to_svg(graph: Graph, *, as_of: float | None = None, width: int = 900,
           height: int = 600) -> str:
    """The graph as an SVG picture (a browser, or any image viewer that reads SVG)."""
    entities, facts = _parts(graph, as_of)
    index = {e.id: i for i, e in enumerate(entities)}
    drawn = [f for f in facts if f.object_id is not None and f.subject_id in index
             and f.object_id in index]
    margin = 100
    pos = layout(len(entities), [(index[f.subject_id], index[f.object_id or 0])
                                 for f in drawn])
    xy = [(margin + p[0] * (width - 2 * margin), margin + p[1] * (height - 2 * margin))
          for p in pos]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif">',
           "<defs>",
           '<marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
           'markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" '
           'fill="#444"/></marker>',
           '<marker id="ended" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
           'markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" '
           'fill="#999"/></marker>',
           "</defs>",
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="12" y="22" font-size="13" fill="#555">{escape("/".join(graph.namespace))}'
           + (f" as of {_month(as_of)}" if as_of is not None else "") + "</text>"]
    # ellipses wide enough for their names; arrows end on their rims
    radii = [(max(34.0, 3.7 * len(e.name) + 14.0), 24.0) for e in entities]

    def rim(i: int, ux: float, uy: float) -> float:
        rx, ry = radii[i]
        return 1.0 / math.sqrt((ux / rx) ** 2 + (uy / ry) ** 2)

    # facts between the same two entities fan out so their labels do not overlap
    seen: dict[tuple[int, int], int] = {}
    for f in drawn:
        assert f.object_id is not None
        a, b = index[f.subject_id], index[f.object_id]
        key = (min(a, b), max(a, b))
        nth = seen.get(key, 0)
        seen[key] = nth + 1
        (x1, y1), (x2, y2) = xy[a], xy[b]
        dx, dy = x2 - x1, y2 - y1
        length = max(math.hypot(dx, dy), 1e-6)
        ux, uy = dx / length, dy / length
        sx, sy = x1 + ux * rim(a, ux, uy), y1 + uy * rim(a, ux, uy)
        ex, ey = x2 - ux * rim(b, ux, uy), y2 - uy * rim(b, ux, uy)
        bend = (nth - 0.0) * 36.0 * (1 if a < b else -1)
        cx, cy = (sx + ex) / 2 - uy * bend, (sy + ey) / 2 + ux * bend
        ended = f.invalid_at is not None and as_of is None
        colour = "#999" if ended else "#444"
        dash = ' stroke-dasharray="6 4"' if ended else ""
        marker = "ended" if ended else "arrow"
        out.append(f'<path d="M {sx:.1f} {sy:.1f} Q {cx:.1f} {cy:.1f} {ex:.1f} {ey:.1f}" '
                   f'fill="none" stroke="{colour}" stroke-width="1.6"{dash} '
                   f'marker-end="url(#{marker})"><title>{escape(f.fact)}</title></path>')
        lx, ly = (sx + 2 * cx + ex) / 4, (sy + 2 * cy + ey) / 4
        label = escape(f.predicate)
        when = escape(_interval(f))
        out.append(f'<text x="{lx:.1f}" y="{ly - 3:.1f}" font-size="11" fill="{colour}" '
                   f'text-anchor="middle"{_HALO}>{label}</text>')
        if when:
            out.append(f'<text x="{lx:.1f}" y="{ly + 10:.1f}" font-size="10" '
                       f'fill="{colour}" text-anchor="middle"{_HALO}>{when}</text>')
    for e, (x, y), (rx, ry) in zip(entities, xy, radii, strict=True):
        values = [f"{f.predicate}: {f.value}" for f in facts
                  if f.subject_id == e.id and f.object_id is None]
        title = escape("; ".join([f"{e.name} ({e.type})", *e.aliases, *values]))
        out.append(f'<g><title>{title}</title><ellipse cx="{x:.1f}" cy="{y:.1f}" '
                   f'rx="{rx:.0f}" ry="{ry:.0f}" fill="{COLOURS.get(e.type, _OTHER)}" '
                   f'stroke="#333" stroke-width="1.2"/>')
        out.append(f'<text x="{x:.1f}" y="{y + 4:.1f}" font-size="12" text-anchor="middle">'
                   f"{escape(e.name)}</text></g>")
    # a legend of the types drawn, top right
    for i, kind in enumerate(sorted({e.type for e in entities})):
        y = 22 + 18 * i
        out.append(f'<circle cx="{width - 110}" cy="{y - 4}" r="6" '
                   f'fill="{COLOURS.get(kind, _OTHER)}" stroke="#333"/><text '
                   f'x="{width - 98}" y="{y}" font-size="11" fill="#333">{escape(kind)}</text>')
    out.append("</svg>")
    return "\n".join(out)
