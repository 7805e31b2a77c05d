"""A graph as JSON (everything, for programs) or GraphML (for viewers: Gephi, yEd, Cytoscape).

GraphML holds one node per entity and one directed edge per fact with an entity object;
facts with a literal value become node attributes would lose their history, so they are
left to the JSON export. Times are ISO-8601 UTC strings in GraphML (viewers filter on them),
epoch seconds in JSON.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from remem.graph.graph import Graph

__all__ = ["to_graphml", "to_json"]


def to_json(graph: Graph) -> dict[str, Any]:
    """Namespace, episodes, entities and facts (with both time lines) as JSON values."""
    return {
        "namespace": list(graph.namespace),
        "episodes": [{"id": e.id, "content": e.content, "event_at": e.event_at,
                      "recorded_at": e.recorded_at, "source_ids": list(e.source_ids),
                      "source": e.source} for e in graph.episodes()],
        "entities": [{"id": e.id, "name": e.name, "type": e.type, "aliases": list(e.aliases),
                      "summary": e.summary, "created_at": e.created_at,
                      "updated_at": e.updated_at} for e in graph.entities()],
        "facts": [f.to_dict() for f in graph.facts()],
    }


def _iso(ts: float | None) -> str:
    return "" if ts is None else datetime.fromtimestamp(ts, UTC).isoformat()


def to_graphml(graph: Graph) -> str:
    """The graph as a GraphML document (text)."""
    ns = "http://graphml.graphdrawing.org/xmlns"
    ET.register_namespace("", ns)
    root = ET.Element(f"{{{ns}}}graphml")
    keys = (("name", "node"), ("type", "node"), ("aliases", "node"), ("predicate", "edge"),
            ("fact", "edge"), ("valid_at", "edge"), ("invalid_at", "edge"),
            ("recorded_at", "edge"), ("expired_at", "edge"))
    for name, domain in keys:
        ET.SubElement(root, f"{{{ns}}}key", id=name, attrib={"for": domain, "attr.name": name,
                                                              "attr.type": "string"})
    body = ET.SubElement(root, f"{{{ns}}}graph", id="/".join(graph.namespace),
                         edgedefault="directed")

    def data(parent: ET.Element, key: str, value: str) -> None:
        ET.SubElement(parent, f"{{{ns}}}data", key=key).text = value

    for entity in graph.entities():
        node = ET.SubElement(body, f"{{{ns}}}node", id=f"n{entity.id}")
        data(node, "name", entity.name)
        data(node, "type", entity.type)
        data(node, "aliases", json.dumps(list(entity.aliases), ensure_ascii=False))
    for fact in graph.facts():
        if fact.object_id is None:
            continue
        edge = ET.SubElement(body, f"{{{ns}}}edge", id=f"e{fact.id}",
                             source=f"n{fact.subject_id}", target=f"n{fact.object_id}")
        data(edge, "predicate", fact.predicate)
        data(edge, "fact", fact.fact)
        for key in ("valid_at", "invalid_at", "recorded_at", "expired_at"):
            data(edge, key, _iso(getattr(fact, key)))
    return ET.tostring(root, encoding="unicode", xml_declaration=True)
