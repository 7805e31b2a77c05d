"""The graph page: fact search, an entity's page and its neighbourhood as SVG with ended
facts dashed, as of a time; escaped; another tenant's key sees none of it. The server's
model is scripted (tests/graph/scripts.py), the graph real, on SQLite."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from remem.llm import ChatRequest, ScriptedModel
from remem.server.state import Principal
from tests.graph.scripts import E, F, answer
from tests.ui_support import Server, server


def ts(day: str) -> float:
    return datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp()


def extract(request: ChatRequest) -> dict[str, Any]:
    episode = request.messages[-1].text.split("Episode:", 1)[1]
    if "Globex" in episode:
        graph = answer([E("Ada", existing="Ada"), E("Globex", "organization")],
                       [F("Ada", "works_at", "Globex", "Ada works at Globex",
                          valid_at="2024-05-01", contradicts=["Ada works at Acme"])])(request)
    else:
        graph = answer([E("Ada"), E("Acme <img src=x onerror=alert(1)>", "organization"),
                        E("Berlin", "place")],
                       [F("Ada", "works_at", "Acme <img src=x onerror=alert(1)>",
                          "Ada works at Acme", valid_at="2020-01-01"),
                        F("Acme <img src=x onerror=alert(1)>", "located_in", "Berlin",
                          "Acme is based in Berlin")])(request)
    return {**graph, "profile": [], "events": []}


@pytest.fixture(scope="module")
def srv() -> Iterator[Server]:
    with server(llm=ScriptedModel(default=extract)) as running:
        graph = running.state.memory_for(Principal("acme")).graph(user_id="ada")
        graph.ingest("Ada joined Acme in January 2020; Acme is in Berlin.",
                     event_at=ts("2020-02-01"))
        graph.ingest("Ada moved to Globex in May 2024.", event_at=ts("2024-05-08"))
        yield running


def test_search_facts_of_a_users_graph(srv: Server) -> None:
    page = srv.logged_in("acme").get("/ui/graph", params={"user": "ada", "q": "Ada works"})
    assert page.status_code == 200
    facts = re.findall(r'data-test="fact" data-holds="(\w+)">\s*<td>([^<]+)</td>', page.text)
    assert ("true", "Ada works at Globex") in facts
    # without as_of a fact holds *now*: the ended one is not shown as holding
    assert ("true", "Ada works at Acme") not in facts


def test_entity_page_draws_its_neighbourhood_with_ended_facts_dashed(srv: Server) -> None:
    browser = srv.logged_in("acme")
    page = browser.get("/ui/graph", params={"user": "ada", "entity": "Ada"})
    assert page.status_code == 200
    assert '<h2 id="entity-name">Ada' in page.text
    assert set(re.findall(r"<title>([^<]+)</title>", page.text)) >= {
        "Ada works at Globex", "Ada works at Acme", "Acme is based in Berlin"}
    holds = dict((text, flag) for flag, text in re.findall(
        r'data-holds="(\w+)">\s*<title>([^<]+)</title>', page.text))
    assert holds["Ada works at Acme"] == "false" and holds["Ada works at Globex"] == "true"
    assert 'class="node depth-0"' in page.text and 'href="/ui/graph?user=ada&amp;entity=' \
        in page.text
    assert "&lt;img src=x onerror=alert(1)&gt;" in page.text
    assert re.search(r"<[^>]*\sonerror=", page.text) is None
    timeline = dict((text.strip(), flag) for flag, text in re.findall(
        r'class="version" data-holds="(\w+)"><span class="meta">[^<]*</span>([^<]+)</li>',
        page.text))
    assert timeline["Ada works at Acme"] == "false"  # ended, judged now
    then = browser.get("/ui/graph", params={"user": "ada", "entity": "Ada",
                                             "as_of": "2021-01-01T00:00"})
    holds_then = dict((text, flag) for flag, text in re.findall(
        r'data-holds="(\w+)">\s*<title>([^<]+)</title>', then.text))
    assert holds_then["Ada works at Acme"] == "true"
    assert holds_then["Ada works at Globex"] == "false"


def test_graph_needs_a_scope_and_is_confined_to_the_tenant(srv: Server) -> None:
    browser = srv.logged_in("acme")
    assert browser.get("/ui/graph").status_code == 200
    missing = browser.get("/ui/graph", params={"entity": "Ada"})
    assert missing.status_code == 422 and "user" in missing.text
    assert browser.get("/ui/graph", params={"user": "ada", "entity": "Nobody"}
                       ).status_code == 404
    foreign = srv.logged_in("zeta")
    assert foreign.get("/ui/graph", params={"user": "ada", "entity": "Ada"}
                       ).status_code == 404
    found = foreign.get("/ui/graph", params={"user": "ada", "q": "Ada works"})
    assert found.status_code == 200 and "Globex" not in found.text
