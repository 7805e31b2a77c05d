"""Scenarios on the scripted model: each one a story of episodes and the answers the graph
must give afterwards, at several times. The scripted answers are what a model would extract;
what is tested is everything remem does with them (resolution, validity, search)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from remem.embed.fake import FakeEmbedder
from remem.graph import Graph
from remem.llm import ScriptedModel
from remem.messages import Message
from remem.store import open_store
from remem.store.scoped import ScopedStore
from tests.graph.conftest import Clock
from tests.graph.scripts import E, F, answer, choose


def ts(day: str) -> float:
    return datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp()


def graph_with(*script: object, now: str = "2025-01-01", **kwargs: object) -> Graph:
    graph = Graph.in_memory(("scenario",), model=ScriptedModel(script),  # type: ignore[arg-type]
                            clock=Clock(ts(now)), **kwargs)  # type: ignore[arg-type]
    graph.setup()
    return graph


def true_at(graph: Graph, day: str, known: str | None = None) -> set[str]:
    return {f.fact for f in graph.facts(as_of=ts(day),
                                        known_at=None if known is None else ts(known))}


def works(who: str, where: str, since: str | None = None, *, ends: str | None = None,
          existing: bool = False, until: str | None = None) -> object:
    person = E(who, existing=who if existing else None)
    return answer([person, E(where, "organization")],
                  [F(who, "works_at", where, f"{who} works at {where}", valid_at=since,
                     invalid_at=until, contradicts=[ends] if ends else [])])


def lives(who: str, where: str, since: str, *, ends: str | None = None,
          where_known: bool = False) -> object:
    return answer([E(who, existing=who if ends else None),
                   E(where, "place", existing=where if where_known else None)],
                  [F(who, "lives_in", where, f"{who} lives in {where}", valid_at=since,
                     contradicts=[ends] if ends else [])])


# -- job changes ---------------------------------------------------------------------------


def test_job_change_with_dates() -> None:
    graph = graph_with(works("Ada", "Acme", "2018-03-01"),
                       works("Ada", "Globex", "2021-09-01", ends="Ada works at Acme",
                             existing=True))
    graph.ingest("Ada joined Acme in March 2018.", event_at=ts("2018-04-01"))
    result = graph.ingest("Ada started at Globex on 1 September 2021.",
                          event_at=ts("2021-09-05"))
    assert result.llm_calls == 1 and len(result.invalidated) == 1
    assert true_at(graph, "2017-01-01") == set()
    assert true_at(graph, "2019-06-01") == {"Ada works at Acme"}
    assert true_at(graph, "2021-08-31") == {"Ada works at Acme"}
    assert true_at(graph, "2021-09-01") == {"Ada works at Globex"}
    assert true_at(graph, "2024-01-01") == {"Ada works at Globex"}
    assert len(graph.facts()) == 2  # nothing deleted


def test_job_with_a_stated_end_date() -> None:
    graph = graph_with(works("Ada", "Acme", "2015-01-01", until="2018-06-30"))
    graph.ingest("Ada worked at Acme from 2015 until the end of June 2018.")
    (fact,) = graph.facts()
    assert fact.expired_at == fact.recorded_at  # known to have ended as soon as recorded
    assert true_at(graph, "2016-01-01") == {"Ada works at Acme"}
    assert true_at(graph, "2019-01-01") == set()


def test_job_changes_twice() -> None:
    graph = graph_with(works("Ada", "Acme", "2015-01-01"),
                       works("Ada", "Globex", "2018-01-01", ends="Ada works at Acme",
                             existing=True),
                       works("Ada", "Initech", "2022-01-01", ends="Ada works at Globex",
                             existing=True))
    for text in ("Ada joined Acme.", "Ada moved to Globex.", "Ada moved to Initech."):
        graph.ingest(text)
    assert true_at(graph, "2016-01-01") == {"Ada works at Acme"}
    assert true_at(graph, "2019-01-01") == {"Ada works at Globex"}
    assert true_at(graph, "2023-01-01") == {"Ada works at Initech"}
    page = graph.entity("Ada")
    assert [f.fact for f in page.timeline] == ["Ada works at Acme", "Ada works at Globex",
                                               "Ada works at Initech"]


def test_an_older_fact_learned_late_ends_where_the_newer_begins() -> None:
    graph = graph_with(works("Ada", "Globex", "2021-01-01"),
                       works("Ada", "Acme", "2018-01-01", ends="Ada works at Globex",
                             existing=True))
    graph.ingest("Ada works at Globex since 2021.")
    result = graph.ingest("Before that, from 2018, Ada was at Acme.")
    assert result.invalidated == ()  # Globex is still current
    assert true_at(graph, "2019-01-01") == {"Ada works at Acme"}
    assert true_at(graph, "2022-01-01") == {"Ada works at Globex"}


# -- moves ---------------------------------------------------------------------------------


def test_move_and_move_back() -> None:
    graph = graph_with(lives("Ada", "Paris", "2015-01-01"),
                       lives("Ada", "Berlin", "2018-05-01", ends="Ada lives in Paris"),
                       lives("Ada", "Paris", "2022-02-01", ends="Ada lives in Berlin",
                             where_known=True))
    graph.ingest("Ada lives in Paris.")
    graph.ingest("Ada moved to Berlin in May 2018.")
    back = graph.ingest("Ada moved back to Paris in February 2022.")
    assert back.added and back.confirmed == ()  # a new edge, not the ended one revived
    assert true_at(graph, "2016-01-01") == {"Ada lives in Paris"}
    assert true_at(graph, "2019-01-01") == {"Ada lives in Berlin"}
    assert true_at(graph, "2023-01-01") == {"Ada lives in Paris"}
    assert len(graph.find_entities("Paris")) == 1
    assert len(graph.facts()) == 3


def test_validity_is_inclusive_at_the_start_and_exclusive_at_the_end() -> None:
    graph = graph_with(lives("Ada", "Paris", "2015-01-01"),
                       lives("Ada", "Berlin", "2018-05-01", ends="Ada lives in Paris"))
    graph.ingest("Ada lives in Paris.")
    graph.ingest("Ada moved to Berlin.")
    assert true_at(graph, "2015-01-01") == {"Ada lives in Paris"}
    assert true_at(graph, "2018-05-01") == {"Ada lives in Berlin"}
    assert {f.fact for f in graph.facts(as_of=ts("2018-05-01") - 1)} == {"Ada lives in Paris"}


# -- names ---------------------------------------------------------------------------------


def test_name_variants_resolve_to_one_entity() -> None:
    graph = graph_with(
        answer([E("Robert Smith", aliases=["Bob"]), E("Acme", "organization")],
               [F("Robert Smith", "works_at", "Acme", "Robert Smith works at Acme")]),
        answer([E("R. Smith"), E("Paris", "place")],
               [F("R. Smith", "lives_in", "Paris", "R. Smith lives in Paris")]),
        answer([E("Bob"), E("tennis", "thing")],
               [F("Bob", "plays", "tennis", "Bob plays tennis")]))
    graph.ingest("Robert Smith (Bob to friends) works at Acme.")
    second = graph.ingest("R. Smith lives in Paris.")
    third = graph.ingest("Bob plays tennis.")
    assert second.resolutions[0] == "lexical" and third.resolutions[0] == "exact"
    assert second.llm_calls == third.llm_calls == 1
    (robert,) = graph.find_entities("Robert Smith")
    assert graph.find_entities("R. Smith") == graph.find_entities("bob") == [
        graph.entity(robert.id).entity]
    assert set(graph.entity(robert.id).entity.aliases) == {"Bob", "R. Smith"}
    assert len(graph.entity(robert.id).current) == 3


def test_model_resolves_a_nickname_to_a_known_entity() -> None:
    graph = graph_with(
        answer([E("Robert Smith"), E("Acme", "organization")],
               [F("Robert Smith", "works_at", "Acme", "Robert Smith works at Acme")]),
        answer([E("Bobby", existing="Robert Smith"), E("chess", "thing")],
               [F("Bobby", "plays", "chess", "Bobby plays chess")]))
    graph.ingest("Robert Smith works at Acme.")
    result = graph.ingest("Bobby from Acme plays chess.")
    assert result.resolutions[0] == "model"
    assert [e.name for e in graph.find_entities("Bobby")] == ["Robert Smith"]


def test_two_people_with_the_same_first_name_stay_apart() -> None:
    graph = graph_with(
        answer([E("Bob Lee"), E("Acme", "organization")],
               [F("Bob Lee", "works_at", "Acme", "Bob Lee works at Acme")]),
        answer([E("Bob Jones"), E("Initech", "organization")],
               [F("Bob Jones", "works_at", "Initech", "Bob Jones works at Initech")]))
    graph.ingest("Bob Lee works at Acme.")
    result = graph.ingest("Bob Jones works at Initech.")
    assert result.resolutions[0] == "new" and result.llm_calls == 1
    assert len(graph.entities()) == 4
    assert graph.search("Bob Lee")[0].fact.fact == "Bob Lee works at Acme"
    assert graph.search("Bob Jones")[0].fact.fact == "Bob Jones works at Initech"


def test_an_ambiguous_first_name_asks_the_model_once() -> None:
    graph = graph_with(
        answer([E("Bob Lee"), E("Acme", "organization")],
               [F("Bob Lee", "works_at", "Acme", "Bob Lee works at Acme")]),
        answer([E("Bob Jones"), E("Initech", "organization")],
               [F("Bob Jones", "works_at", "Initech", "Bob Jones works at Initech")]),
        answer([E("Bob"), E("Oslo", "place")],
               [F("Bob", "lives_in", "Oslo", "Bob lives in Oslo")]),
        choose(Bob="Bob Jones"))
    graph.ingest("Bob Lee works at Acme.")
    graph.ingest("Bob Jones works at Initech.")
    result = graph.ingest("Bob, the one from Initech, lives in Oslo.")
    assert result.llm_calls == 2 and result.resolutions[0] == "asked"
    (jones,) = graph.find_entities("Bob Jones")
    assert {f.fact for f in graph.entity(jones.id).current} == {
        "Bob Jones works at Initech", "Bob lives in Oslo"}
    assert len(graph.entities()) == 5  # Bob Lee, Acme, Bob Jones, Initech, Oslo


def test_an_ambiguous_name_the_model_calls_new_is_a_new_entity() -> None:
    graph = graph_with(
        answer([E("Bob Lee")], []), answer([E("Bob Jones")], []),
        answer([E("Bob"), E("Rome", "place")],
               [F("Bob", "lives_in", "Rome", "Bob lives in Rome")]),
        choose(Bob=None))
    graph.ingest("Bob Lee.")
    graph.ingest("Bob Jones.")
    result = graph.ingest("A third Bob lives in Rome.")
    assert result.llm_calls == 2 and result.resolutions[0] == "asked"
    assert len(graph.find_entities("Bob")) == 1  # only the new one is named just "Bob"
    assert len([e for e in graph.entities() if e.name.startswith("Bob")]) == 3


def test_semantic_resolution_with_an_embedder() -> None:
    graph = graph_with(
        answer([E("Ada"), E("Acme Corporation", "organization")],
               [F("Ada", "works_at", "Acme Corporation", "Ada works at Acme Corporation")]),
        answer([E("Acme Corp", "organization")], []),
        embedder=FakeEmbedder(), semantic_threshold=0.45)
    graph.ingest("Ada works at Acme Corporation.")
    result = graph.ingest("Acme Corp announced results.")
    assert result.resolutions == ("semantic",)
    assert [e.name for e in graph.find_entities("Acme Corp")] == ["Acme Corporation"]


# -- corrections ---------------------------------------------------------------------------


def test_a_correction_makes_the_wrong_fact_never_true() -> None:
    graph = graph_with(
        lives("Ada", "Rome", "2020-01-01"),
        answer([E("Ada", existing="Ada"), E("Milan", "place")],
               [F("Ada", "lives_in", "Milan", "Ada lives in Milan", valid_at="2020-01-01",
                  contradicts=["Ada lives in Rome"], correction=True)]),
        now="2021-01-01")
    graph.ingest("Ada lives in Rome.")
    graph.clock.now = ts("2022-01-01")  # type: ignore[attr-defined]
    result = graph.ingest("Correction: Ada never lived in Rome, she has lived in Milan.")
    assert len(result.invalidated) == 1
    for day in ("2020-01-01", "2020-06-01", "2023-01-01"):
        assert true_at(graph, day) == {"Ada lives in Milan"}
    # what we believed in mid-2021 about mid-2020: Rome
    assert true_at(graph, "2020-06-01", known="2021-06-01") == {"Ada lives in Rome"}


def test_a_correction_of_an_employer() -> None:
    graph = graph_with(works("Ada", "Acme", "2019-01-01"),
                       answer([E("Ada", existing="Ada"), E("Globex", "organization")],
                              [F("Ada", "works_at", "Globex", "Ada works at Globex",
                                 valid_at="2019-01-01", contradicts=["Ada works at Acme"],
                                 correction=True)]))
    graph.ingest("Ada works at Acme.")
    graph.ingest("Sorry, I was wrong: Ada works at Globex, not Acme.")
    assert true_at(graph, "2020-01-01") == {"Ada works at Globex"}
    assert [f.fact for f in graph.entity("Ada").current] == ["Ada works at Globex"]


# -- dates -----------------------------------------------------------------------------------


def test_relative_dates_are_grounded_in_the_episode_time() -> None:
    model_answer = works("Ada", "Acme", "2024-03-01")
    graph = graph_with(model_answer)
    graph.ingest("Ada joined Acme last March.", event_at=ts("2024-05-10"))
    prompt = graph.model.requests[0].messages[-1].text  # type: ignore[union-attr]
    assert "Friday 2024-05-10" in prompt
    (fact,) = graph.facts()
    assert fact.valid_at == ts("2024-03-01")


def test_a_fact_without_dates_holds_from_the_episode_time() -> None:
    graph = graph_with(works("Ada", "Acme"))
    graph.ingest("Ada works at Acme.", event_at=ts("2023-07-01"))
    assert true_at(graph, "2023-06-30") == set()
    assert true_at(graph, "2023-07-02") == {"Ada works at Acme"}


def test_messages_episode_takes_the_last_message_time() -> None:
    graph = graph_with(works("Ada", "Acme"))
    sent = ts("2023-03-03")
    result = graph.ingest([Message.user("I'm Ada.", created_at=sent - 100),
                           Message.user("I work at Acme now.", created_at=sent)])
    assert result.episode.event_at == sent and result.episode.source == "messages"
    assert graph.facts()[0].valid_at == sent


def test_known_at_before_anything_was_recorded_is_empty() -> None:
    graph = graph_with(works("Ada", "Acme", "2010-01-01"), now="2024-01-01")
    graph.ingest("Ada has worked at Acme since 2010.")
    assert true_at(graph, "2015-01-01") == {"Ada works at Acme"}
    assert true_at(graph, "2015-01-01", known="2023-12-31") == set()


# -- Chinese ---------------------------------------------------------------------------------


def test_chinese_names_job_change_and_search() -> None:
    graph = graph_with(
        answer([E("张伟", aliases=["老张"]), E("阿里巴巴", "organization")],
               [F("张伟", "works_at", "阿里巴巴", "张伟在阿里巴巴工作", valid_at="2019-07-01")]),
        answer([E("老张"), E("腾讯", "organization")],
               [F("老张", "works_at", "腾讯", "张伟跳槽到腾讯", valid_at="2023-03-01",
                  contradicts=["张伟在阿里巴巴工作"])]))
    graph.ingest("张伟（老张）2019年7月加入阿里巴巴。")
    result = graph.ingest("老张今年三月跳槽到了腾讯。", event_at=ts("2023-05-01"))
    assert result.resolutions[0] == "exact" and result.llm_calls == 1
    assert true_at(graph, "2020-01-01") == {"张伟在阿里巴巴工作"}
    assert true_at(graph, "2024-01-01") == {"张伟跳槽到腾讯"}
    assert {h.fact.fact for h in graph.search("张伟", as_of=ts("2024-01-01"))} == {
        "张伟跳槽到腾讯"}
    assert [f.fact for f in graph.entity("张伟").timeline] == ["张伟在阿里巴巴工作",
                                                             "张伟跳槽到腾讯"]


def test_chinese_people_with_the_same_surname_stay_apart() -> None:
    graph = graph_with(answer([E("张伟")], []), answer([E("张三")], []))
    graph.ingest("张伟。")
    graph.ingest("张三。")
    assert len(graph.entities()) == 2


# -- sources, search, tenancy ---------------------------------------------------------------


def test_a_restated_fact_gains_a_source_even_unmarked() -> None:
    graph = graph_with(works("Ada", "Acme", "2020-01-01"),
                       answer([E("Ada", existing="Ada"), E("Acme", "organization")],
                              [F("Ada", "works_at", "Acme", "Ada is at Acme")]))
    first = graph.ingest("Ada works at Acme.")
    second = graph.ingest("As I said, Ada is at Acme.")
    assert second.confirmed == first.added and second.added == ()
    assert graph.facts()[0].episodes == (first.episode.id, second.episode.id)


def test_literal_values_change_over_time() -> None:
    graph = graph_with(
        answer([E("Ada")], [F("Ada", "diet", None, "Ada is vegetarian", value="vegetarian",
                              valid_at="2020-01-01")]),
        answer([E("Ada", existing="Ada")],
               [F("Ada", "diet", None, "Ada is vegan", value="vegan", valid_at="2023-01-01",
                  contradicts=["Ada is vegetarian"])]))
    graph.ingest("Ada is vegetarian.")
    graph.ingest("Ada went vegan this year.")
    assert true_at(graph, "2021-01-01") == {"Ada is vegetarian"}
    assert true_at(graph, "2024-01-01") == {"Ada is vegan"}


def test_search_walks_two_hops_with_the_path() -> None:
    graph = graph_with(
        answer([E("Ada"), E("Acme", "organization"), E("Berlin", "place")],
               [F("Ada", "works_at", "Acme", "Ada works at Acme"),
                F("Acme", "located_in", "Berlin", "Acme is based in Berlin")]))
    graph.ingest("Ada works at Acme, which is based in Berlin.")
    hits = {h.fact.fact: h for h in graph.search("Where is Ada?", hops=2)}
    assert hits["Acme is based in Berlin"].path == ("Ada", "Acme", "located_in", "Berlin")
    assert hits["Acme is based in Berlin"].distance == 2
    assert "Acme is based in Berlin" not in {h.fact.fact
                                             for h in graph.search("Where is Ada?", hops=1)}


def test_search_as_of_a_past_time() -> None:
    graph = graph_with(lives("Ada", "Paris", "2015-01-01"),
                       lives("Ada", "Berlin", "2018-05-01", ends="Ada lives in Paris"))
    graph.ingest("Ada lives in Paris.")
    graph.ingest("Ada moved to Berlin.")
    assert [h.fact.fact for h in graph.search("Ada lives", as_of=ts("2016-01-01"))] == [
        "Ada lives in Paris"]
    assert [h.fact.fact for h in graph.search("Ada lives", as_of=ts("2020-01-01"))] == [
        "Ada lives in Berlin"]
    assert len(graph.search("Ada lives")) == 2  # no as_of: the whole history


def test_many_episodes_never_take_more_than_two_calls() -> None:
    graph = graph_with(works("Ada", "Acme", "2018-01-01"),
                       works("Ada", "Globex", "2020-01-01", ends="Ada works at Acme",
                             existing=True),
                       answer([E("Bob Lee")], []), answer([E("Bob Jones")], []),
                       answer([E("Bob")], []), choose(Bob="Bob Lee"))
    texts = ("Ada joined Acme.", "Ada moved to Globex.", "Bob Lee.", "Bob Jones.", "Bob.")
    calls = [graph.ingest(text).llm_calls for text in texts]
    assert calls == [1, 1, 1, 1, 2]


def test_tenants_of_a_store_get_separate_graphs(tmp_path: Path) -> None:
    store = open_store(tmp_path / "remem.db")
    try:
        script = [works("Ada", "Acme", "2020-01-01"), works("Ada", "Initech", "2020-01-01")]
        acme = Graph.beside(ScopedStore(store, ("tenants", "acme")), ("graph",),
                            model=ScriptedModel(script[:1]))
        other = Graph.beside(ScopedStore(store, ("tenants", "other")), ("graph",),
                             model=ScriptedModel(script[1:]))
        assert acme.namespace == ("tenants", "acme", "graph")
        acme.ingest("Ada joined Acme.")
        other.ingest("Ada joined Initech.")
        assert [f.fact for f in acme.facts()] == ["Ada works at Acme"]
        assert [f.fact for f in other.facts()] == ["Ada works at Initech"]
        acme.close()
        other.close()
    finally:
        store.close()


@pytest.mark.parametrize("day, expected", [("2016-06-01", "Paris"), ("2019-06-01", "Berlin"),
                                           ("2023-06-01", "Paris")])
def test_where_did_ada_live(day: str, expected: str) -> None:
    graph = graph_with(lives("Ada", "Paris", "2015-01-01"),
                       lives("Ada", "Berlin", "2018-05-01", ends="Ada lives in Paris"),
                       lives("Ada", "Paris", "2022-02-01", ends="Ada lives in Berlin",
                             where_known=True))
    for text in ("Ada lives in Paris.", "Ada moved to Berlin.", "Ada is back in Paris."):
        graph.ingest(text)
    page = graph.entity("Ada", as_of=ts(day))
    assert [page.names[f.object_id or 0] for f in page.current] == [expected]


def test_summary_refresh_is_one_call_and_reads_the_facts() -> None:
    graph = graph_with(works("Ada", "Acme", "2018-01-01"),
                       works("Ada", "Globex", "2021-01-01", ends="Ada works at Acme",
                             existing=True),
                       {"summary": "Ada works at Globex; she was at Acme before."})
    graph.ingest("Ada joined Acme.")
    graph.ingest("Ada moved to Globex.")
    entity, usage = graph.refresh_summary("Ada")
    assert usage.calls == 1
    assert entity.summary == graph.entity("Ada").entity.summary == \
        "Ada works at Globex; she was at Acme before."
    prompt = graph.model.requests[-1].messages[-1].text  # type: ignore[union-attr]
    assert "Current facts:\n- Ada works at Globex" in prompt
    assert "Earlier facts:\n- Ada works at Acme" in prompt
