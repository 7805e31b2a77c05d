"""The user's profile and timeline, kept from the graph's extraction call, on every backend
(SQLite memory, SQLite file, PostgreSQL); and through a real OpenAI-wire client."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from remem.errors import InvalidInputError, StructuredOutputError, UsageError
from remem.graph import DEFAULT_PROFILE, Graph, ProfileSchema, Topic
from remem.llm import ChatRequest, ScriptedModel
from tests.graph.conftest import Clock
from tests.graph.scripts import E, F, answer

MakeGraph = Callable[..., Graph]


def ts(day: str) -> float:
    return datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp()


def kept(entities: Sequence[dict[str, Any]] = (), facts: Sequence[dict[str, Any]] = (), *,
         profile: Sequence[dict[str, Any]] = (), events: Sequence[dict[str, Any]] = ()
         ) -> Callable[[ChatRequest], dict[str, Any]]:
    """An extraction answer with graph entities and facts, profile patches and events."""
    graph = answer(entities, facts)

    def respond(request: ChatRequest) -> dict[str, Any]:
        return {**graph(request), "profile": list(profile), "events": list(events)}

    return respond


def op(kind: str, path: str, value: str | None = None) -> dict[str, Any]:
    return {"op": kind, "path": path, "value": value}


def test_one_call_keeps_graph_profile_and_timeline(make_graph: MakeGraph) -> None:
    clock = Clock(ts("2024-03-10"))
    model = ScriptedModel([kept(
        [E("Ada"), E("Acme", "organization")],
        [F("Ada", "works_at", "Acme", "Ada works at Acme", valid_at="2024-03-01")],
        profile=[op("add", "/basic_info/name", "Ada"), op("add", "/work/company", "Acme"),
                 op("add", "/interests/hobbies", ["climbing", "chess"])],  # type: ignore[list-item]
        events=[{"text": "Ada started at Acme", "date": "2024-03-01", "tags": ["Work", "job"]}])])
    graph = make_graph(model=model, clock=clock)
    result = graph.ingest("I'm Ada; I started at Acme on March 1st. I climb and play chess.",
                          event_at=ts("2024-03-10"))
    assert result.llm_calls == 1 and len(result.added) == 1
    assert result.profile_changes == (("add", "/basic_info/name", "Ada"),
                                      ("add", "/work/company", "Acme"),
                                      ("add", "/interests/hobbies", "climbing, chess"))
    profile = graph.profile()
    assert profile.to_dict() == {"basic_info": {"name": "Ada"},
                                 "interests": {"hobbies": "climbing, chess"},
                                 "work": {"company": "Acme"}}
    slot = profile.topics["work"]["company"]
    assert (slot.updated_at, slot.episode_id) == (ts("2024-03-10"), result.episode.id)
    (event,) = graph.timeline()
    assert (event.text, event.happened_at, event.tags) == ("Ada started at Acme",
                                                           ts("2024-03-01"), ("work", "job"))
    assert result.events == (event.id,)
    prompt = model.requests[0]
    assert "Profile topics (paths /topic/sub_topic):" in prompt.messages[-1].text
    assert "Current profile:\n(empty)" in prompt.messages[-1].text


def test_later_episodes_patch_the_profile_and_history_replays_it(
        make_graph: MakeGraph) -> None:
    clock = Clock(ts("2024-03-10"))
    model = ScriptedModel([
        kept(profile=[op("add", "/work/company", "Acme"), op("add", "/work/title", "intern")]),
        kept(profile=[op("replace", "/work/company", "Globex"), op("remove", "/work/title"),
                      op("add", "/basic_info/location", "Berlin")]),
        kept(profile=[op("replace", "/work/company", "Globex")]),  # no change: no history
    ])
    graph = make_graph(model=model, clock=clock)
    graph.ingest("I interned at Acme.")
    clock.now = ts("2025-01-10")
    second = graph.ingest("I left Acme for Globex and moved to Berlin.")
    assert second.profile_changes == (("replace", "/work/company", "Globex"),
                                      ("remove", "/work/title", None),
                                      ("add", "/basic_info/location", "Berlin"))
    # the second prompt showed the profile as it was, so the model could patch it
    assert "/work/company = Acme\n/work/title = intern" in model.requests[1].messages[-1].text
    clock.now = ts("2025-02-01")
    assert graph.ingest("Still at Globex.").profile_changes == ()
    assert graph.profile().to_dict() == {"basic_info": {"location": "Berlin"},
                                         "work": {"company": "Globex"}}
    history = graph.profile_history()
    assert [(c.op, c.topic, c.sub_topic, c.old, c.new) for c in history] == [
        ("add", "work", "company", None, "Acme"), ("add", "work", "title", None, "intern"),
        ("replace", "work", "company", "Acme", "Globex"),
        ("remove", "work", "title", "intern", None),
        ("add", "basic_info", "location", None, "Berlin")]
    assert [c.sub_topic for c in graph.profile_history(topic="basic_info")] == ["location"]
    assert graph.profile(as_of=ts("2024-06-01")).to_dict() == {
        "work": {"company": "Acme", "title": "intern"}}
    assert graph.profile(as_of=ts("2024-01-01")).to_dict() == {}
    assert graph.profile(as_of=ts("2025-06-01")).to_dict() == graph.profile().to_dict()


def test_a_path_outside_the_schema_goes_back_to_the_model_once(make_graph: MakeGraph) -> None:
    bad = kept(profile=[op("add", "/zodiac/sign", "Leo")])
    good = kept(profile=[op("add", "/basic_info/birthday", "1990-08-01")])
    model = ScriptedModel([bad, good])
    graph = make_graph(model=model)
    result = graph.ingest("I was born on 1 August 1990.")
    assert result.llm_calls == 2  # the retry counts
    assert "zodiac" in model.requests[1].messages[-1].text  # the error went back
    assert graph.profile().get("basic_info", "birthday") == "1990-08-01"
    # twice wrong: a typed error and nothing written (no episode either)
    graph2 = make_graph(model=ScriptedModel([bad, bad]))
    with pytest.raises(StructuredOutputError):
        graph2.ingest("I am a Leo.")
    assert graph2.profile().to_dict() == {} and graph2.episodes() == []


def test_closed_schema_refuses_new_sub_topics(make_graph: MakeGraph) -> None:
    schema = ProfileSchema({"pets": Topic("animals the user keeps", ("dog", "cat"))},
                           open_sub_topics=False)
    graph = make_graph(model=ScriptedModel([kept(profile=[op("add", "/pets/dog", "Rex")])]),
                       profile=schema)
    graph.ingest("My dog is called Rex.")
    assert graph.profile().to_dict() == {"pets": {"dog": "Rex"}}
    with pytest.raises(InvalidInputError, match=r"pets/parrot is not in the schema"):
        graph.patch_profile([op("add", "/pets/parrot", "Polly")])
    with pytest.raises(InvalidInputError, match="snake_case"):
        ProfileSchema({"Pets!": Topic("x")})
    small = make_graph(profile=ProfileSchema({"pets": Topic("animals")}, max_slots=2))
    small.patch_profile([op("add", "/pets/dog", "Rex"), op("add", "/pets/cat", "Tom")])
    with pytest.raises(InvalidInputError, match=r"max_slots \(2\)"):
        small.patch_profile([op("add", "/pets/fish", "Nemo")])
    small.patch_profile([op("replace", "/pets/dog", "Max")])  # a full profile still changes
    assert small.profile().to_dict() == {"pets": {"cat": "Tom", "dog": "Max"}}
    with pytest.raises(InvalidInputError, match="at least one topic"):
        ProfileSchema({})


def test_patch_by_hand_is_checked_and_recorded(make_graph: MakeGraph) -> None:
    graph = make_graph()
    changes = graph.patch_profile([op("add", "/work/title", "engineer"),
                                   op("add", "/preferences/diet", "vegetarian")])
    assert [(c.op, c.sub_topic, c.episode_id) for c in changes] == [
        ("add", "title", None), ("add", "diet", None)]
    assert graph.patch_profile([op("add", "/work/title", "engineer")]) == []  # unchanged
    for patch, rule in (([op("add", "/work", "x")], "/topic/sub_topic"),
                        ([op("move", "/work/title", "x")], "op"),
                        ([op("add", "/work/title", "  ")], "non-empty value"),
                        ([op("add", "/hobby/chess", "yes")], "not in the schema")):
        with pytest.raises(InvalidInputError, match=rule):
            graph.patch_profile(patch)
    assert graph.profile().to_dict() == {"preferences": {"diet": "vegetarian"},
                                         "work": {"title": "engineer"}}


def test_timeline_ranges_tags_relative_dates_and_restatements(make_graph: MakeGraph) -> None:
    clock = Clock(ts("2024-06-15"))
    model = ScriptedModel([
        kept(events=[{"text": "moved to Paris", "date": "2023-09-01", "tags": ["move"]},
                     {"text": "got married", "date": "2024-05-20", "tags": ["family"]},
                     {"text": "ran a marathon", "tags": ["sport"]}]),  # undated: episode day
        kept(events=[{"text": "moved to Paris", "date": "2023-09-01", "tags": ["move"]},
                     {"text": "moved back to Berlin", "date": "2024-06-01",
                      "tags": ["move", "home"]}]),
    ])
    graph = make_graph(model=model, clock=clock)
    first = graph.ingest("Last September I moved to Paris; I married in May. Ran a marathon!",
                         event_at=ts("2024-06-15"))
    second = graph.ingest("Moved back to Berlin at the start of June (Paris since Sept 2023).",
                          event_at=ts("2024-06-16"))
    assert len(first.events) == 3 and second.events[0] == first.events[0]  # the same event
    texts = [e.text for e in graph.timeline()]
    assert texts == ["moved to Paris", "got married", "moved back to Berlin",
                     "ran a marathon"]
    assert [e.text for e in graph.timeline(since=ts("2024-01-01"), until=ts("2024-06-01"))
            ] == ["got married"]  # since inclusive, until exclusive
    assert [e.text for e in graph.timeline(since=datetime(2024, 6, 1, tzinfo=UTC))] == [
        "moved back to Berlin", "ran a marathon"]
    assert [e.text for e in graph.timeline(tags=["MOVE"])] == ["moved to Paris",
                                                               "moved back to Berlin"]
    with pytest.raises(InvalidInputError, match="until"):
        graph.timeline(since=ts("2024-01-01"), until=ts("2023-01-01"))
    with pytest.raises(InvalidInputError, match="timezone-aware"):
        graph.timeline(since=datetime(2024, 1, 1))


def test_profiles_of_two_graphs_never_mix(make_graph: MakeGraph) -> None:
    alice = make_graph(("users", "alice"),
                       model=ScriptedModel([kept(profile=[op("add", "/work/company", "Acme")],
                                                 events=[{"text": "joined Acme"}])]))
    bob = make_graph(("users", "bob"), storage=alice.storage)
    alice.ingest("I joined Acme.")
    assert bob.profile().to_dict() == {} and bob.timeline() == []
    assert bob.profile_history() == []
    assert alice.profile().get("work", "company") == "Acme"


def test_a_graph_without_profile_asks_for_none(make_graph: MakeGraph) -> None:
    model = ScriptedModel([kept(profile=[op("add", "/work/company", "Acme")],
                                events=[{"text": "joined Acme"}])])
    graph = make_graph(model=model, profile=None)
    result = graph.ingest("I joined Acme.")
    assert result.profile_changes == () and result.events == ()
    assert "Profile topics" not in model.requests[0].messages[-1].text
    with pytest.raises(UsageError, match="keeps no profile"):
        graph.profile()
    with pytest.raises(InvalidInputError, match="ProfileSchema"):
        make_graph(profile={"work": {}})


def test_memory_profile_and_timeline_through_an_openai_wire_model(tmp_path: Path) -> None:
    """The real OpenAI client against the loopback server: the JSON it answers is the same
    extraction, and mem.profile / mem.timeline read the user's graph."""
    from remem import FakeEmbedder, Memory
    from remem.llm import OpenAIChatModel
    from remem.testing import LoopbackServer

    reply = {"entities": [{"ref": 1, "name": "张伟", "type": "person"},
                          {"ref": 2, "name": "腾讯", "type": "organization"}],
             "facts": [{"subject": 1, "predicate": "works_at", "object": 2,
                        "fact": "张伟在腾讯工作", "valid_at": "2024-03-01"}],
             "profile": [{"op": "add", "path": "/basic_info/name", "value": "张伟"},
                         {"op": "add", "path": "/work/company", "value": "腾讯"}],
             "events": [{"text": "加入腾讯", "date": "2024-03-01", "tags": ["工作"]}]}
    with LoopbackServer() as server:
        server.chat.add(reply)
        with OpenAIChatModel("scripted", base_url=server.url, api_key="sk-test") as model, \
                Memory.open(tmp_path / "m.db", embedder=FakeEmbedder(), llm=model) as mem:
            result = mem.graph(user_id="zhang").ingest("我是张伟，今年三月加入了腾讯。",
                                                       event_at=ts("2024-04-01"))
            assert result.llm_calls == 1
            assert mem.profile("zhang").to_dict() == {"basic_info": {"name": "张伟"},
                                                      "work": {"company": "腾讯"}}
            assert [e.text for e in mem.timeline("zhang", since=ts("2024-01-01"))] == [
                "加入腾讯"]
            assert mem.profile("li").to_dict() == {} and mem.timeline("li") == []
        body = server.requests[-1].body
        assert "Current profile:" in json.dumps(body["messages"], ensure_ascii=False)
        assert '"events"' in json.dumps({k: v for k, v in body.items() if k != "messages"})


def test_default_schema_has_the_memobase_topics() -> None:
    assert list(DEFAULT_PROFILE.topics) == ["basic_info", "education", "work", "interests",
                                            "life_events", "preferences"]
