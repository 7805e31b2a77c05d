"""Pictures of a graph: DOT text and the SVG drawn without Graphviz; ``remem graph export
--format dot|svg``."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from remem.cli import cli
from remem.graph import Graph, SQLiteGraphStorage, to_dot, to_svg
from remem.graph.picture import layout
from remem.llm import ScriptedModel
from tests.graph.conftest import Clock
from tests.graph.scripts import E, F, answer

SVG = "{http://www.w3.org/2000/svg}"


def ts(day: str) -> float:
    return datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp()


def story(graph_path: Path | None = None) -> Graph:
    model = ScriptedModel([
        answer([E("Ada <Lovelace>", aliases=["Ada"]), E("Acme & Co", "organization"),
                E("Berlin", "place")],
               [F("Ada <Lovelace>", "works_at", "Acme & Co", 'Ada works at "Acme"',
                  valid_at="2019-03-01"),
                F("Acme & Co", "located_in", "Berlin", "Acme is based in Berlin"),
                F("Ada <Lovelace>", "age", None, "Ada is 36", value="36")]),
        answer([E("Ada", existing="Ada <Lovelace>"), E("Globex", "organization")],
               [F("Ada", "works_at", "Globex", "Ada works at Globex", valid_at="2024-05-01",
                  contradicts=['Ada works at "Acme"'])]),
    ])
    clock = Clock(ts("2019-04-01"))
    storage = SQLiteGraphStorage(graph_path if graph_path is not None else ":memory:")
    graph = Graph(storage, ("users", "ada"), model=model, clock=clock)
    graph.setup()
    graph.ingest("Ada joined Acme in March 2019; Acme is in Berlin. Ada is 36.",
                 event_at=clock.now)
    clock.now = ts("2024-05-08")
    graph.ingest("Ada started at Globex last week.", event_at=clock.now)
    return graph


def test_svg_draws_every_entity_and_fact_edge_and_escapes_names() -> None:
    with story() as graph:
        svg = to_svg(graph)
        root = ET.fromstring(svg)  # well-formed despite <, & and " in names and facts
        assert root.tag == f"{SVG}svg"
        names = [t.text for t in root.iter(f"{SVG}text")]
        assert {"Ada <Lovelace>", "Acme & Co", "Berlin", "Globex"} <= set(names)
        assert len(list(root.iter(f"{SVG}ellipse"))) == 4
        edges = list(root.iter(f"{SVG}path"))
        drawn = [p for p in edges if p.get("marker-end")]
        assert len(drawn) == 3  # the literal value (age 36) is no edge
        dashed = [p for p in drawn if p.get("stroke-dasharray")]
        assert [p.find(f"{SVG}title").text for p in dashed] == ['Ada works at "Acme"']
        assert "2019-03 .. 2024-05" in names and "2024-05 .. now" in names
        # the value shows in the node's tooltip
        assert any("age: 36" in (t.text or "") for t in root.iter(f"{SVG}title"))
        assert to_svg(graph) == svg  # the same picture every time

        then = ET.fromstring(to_svg(graph, as_of=ts("2020-01-01")))
        shown = {t.text for t in then.iter(f"{SVG}text")}
        assert "Globex" not in shown and "Acme & Co" in shown
        assert not [p for p in then.iter(f"{SVG}path") if p.get("stroke-dasharray")]


def test_dot_lists_nodes_and_edges_with_intervals() -> None:
    with story() as graph:
        dot = to_dot(graph)
        assert dot.startswith('digraph "users/ada" {') and dot.endswith("}")
        assert 'label="Ada <Lovelace>"' in dot and 'tooltip="Ada works at \\"Acme\\""' in dot
        assert dot.count(" -> ") == 3 and dot.count("style=dashed") == 1
        assert 'label="works_at\\n2024-05 .. now"' in dot
        assert 'tooltip="person; age: 36"' in dot
        assert to_dot(graph, as_of=ts("2025-01-01")).count(" -> ") == 2


def test_layout_is_deterministic_and_fills_the_square() -> None:
    edges = [(0, 1), (1, 2), (2, 0), (3, 4)]
    first = layout(5, edges)
    assert np.array_equal(first, layout(5, edges))
    assert first.min() == 0.0 and first.max() == 1.0
    assert not np.array_equal(first, layout(5, edges, seed=8))
    assert layout(0, []).shape == (0, 2) and layout(1, []).tolist() == [[0.5, 0.5]]
    # connected nodes end up nearer each other than unconnected ones, on average
    d = np.linalg.norm(first[:, None] - first[None], axis=2)
    assert np.mean([d[a, b] for a, b in edges]) < d[np.triu_indices(5, 1)].mean()


def test_cli_exports_dot_and_svg(tmp_path: Path) -> None:
    db = tmp_path / "g.db"
    story(db).close()
    runner = CliRunner()
    out = tmp_path / "g.svg"
    done = runner.invoke(cli, ["graph", "export", "--db", str(db), "--graph", "users.ada",
                               "--format", "svg", "--out", str(out)])
    assert done.exit_code == 0, done.output
    assert len(list(ET.parse(out).getroot().iter(f"{SVG}ellipse"))) == 4
    dot = runner.invoke(cli, ["graph", "export", "--db", str(db), "--graph", "users.ada",
                              "--format", "dot", "--as-of", "2020-01-01"])
    assert dot.exit_code == 0 and dot.output.count(" -> ") == 2 and "Globex" not in dot.output
    refused = runner.invoke(cli, ["graph", "export", "--db", str(db), "--graph", "users.ada",
                                  "--as-of", "2020-01-01"])
    assert refused.exit_code == 2 and "--as-of draws the facts true then" in refused.output


def test_the_docs_picture_is_an_svg_of_a_graph() -> None:
    picture = Path(__file__).parents[2] / "docs" / "graph-example.svg"
    root = ET.parse(picture).getroot()
    assert len(list(root.iter(f"{SVG}ellipse"))) == 6
    assert len([p for p in root.iter(f"{SVG}path") if p.get("marker-end")]) == 7
