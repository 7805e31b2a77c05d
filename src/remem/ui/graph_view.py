"""The entity-fact graph drawn as SVG (pure code): an entity at the centre, the entities
its facts reach around it by distance, each fact an edge that is solid while it holds and
dashed once it ended. Node positions are computed here; the template only draws them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from remem.graph.types import FactHit

__all__ = ["Edge", "GraphPicture", "Node", "picture"]

#: ring radius per hop, and the margin kept around the nodes for their labels
_RINGS = (0.0, 120.0, 220.0)
_MARGIN = 70.0


@dataclass(frozen=True, slots=True)
class Node:
    """An entity placed at ``(x, y)``, ``depth`` hops from the centre."""

    id: int
    name: str
    x: float
    y: float
    depth: int


@dataclass(frozen=True, slots=True)
class Edge:
    """A fact between two placed entities; ``holds``: true at the time shown."""

    fact_id: int
    label: str
    text: str
    x1: float
    y1: float
    x2: float
    y2: float
    holds: bool


@dataclass(frozen=True, slots=True)
class GraphPicture:
    """What the SVG shows, and how many facts were left out to keep it readable."""

    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    left_out: int
    #: the SVG viewBox fitting every node and its label
    view_box: str = "-300 -300 600 600"


def picture(center: int, center_name: str, hits: Sequence[FactHit], *, as_of: float,
            max_nodes: int = 30, max_edges: int = 60) -> GraphPicture:
    """Lay out ``hits`` (facts within some hops of entity ``center``, nearest first) around
    it: at most ``max_nodes`` entities and ``max_edges`` facts, the nearest kept."""
    depth: dict[int, int] = {center: 0}
    names: dict[int, str] = {center: center_name}
    kept: list[FactHit] = []
    for hit in hits:
        fact = hit.fact
        ends = [(fact.subject_id, hit.subject)]
        if fact.object_id is not None:
            ends.append((fact.object_id, hit.object or "?"))
        new = [e for e, _ in ends if e not in depth]
        if len(kept) >= max_edges or len(depth) + len(new) > max_nodes:
            continue
        near = min((depth[e] for e, _ in ends if e in depth), default=0)
        for entity, name in ends:
            if entity not in depth:
                depth[entity] = min(len(_RINGS) - 1, near + 1)
            names.setdefault(entity, name)
        kept.append(hit)
    rings: dict[int, list[int]] = {}
    for entity, hops in sorted(depth.items(), key=lambda item: (item[1], names[item[0]])):
        rings.setdefault(hops, []).append(entity)
    place: dict[int, tuple[float, float]] = {}
    for hops, members in rings.items():
        for position, entity in enumerate(members):
            angle = 2 * math.pi * position / max(1, len(members)) + hops * 0.4
            place[entity] = (round(_RINGS[hops] * math.cos(angle), 1),
                             round(_RINGS[hops] * math.sin(angle), 1))
    nodes = tuple(Node(e, names[e], *place[e], depth[e]) for e in place)
    edges = []
    for hit in kept:
        fact = hit.fact
        x1, y1 = place[fact.subject_id]
        x2, y2 = place[fact.object_id] if fact.object_id is not None else (x1, y1 - 40)
        label = fact.predicate if fact.object_id is not None else \
            f"{fact.predicate}: {fact.value or ''}"
        edges.append(Edge(fact.id, label, fact.fact, x1, y1, x2, y2, fact.holds(as_of=as_of)))
    xs, ys = [n.x for n in nodes], [n.y for n in nodes]
    left, top = min(xs) - _MARGIN, min(ys) - _MARGIN
    width = max(xs) - min(xs) + 2 * _MARGIN
    height = max(ys) - min(ys) + 2 * _MARGIN
    return GraphPicture(nodes, tuple(edges), len(hits) - len(kept),
                        f"{left:g} {top:g} {width:g} {height:g}")
