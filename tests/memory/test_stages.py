"""Memory.search ranks with the conversation stages remem eval measured (remem.memory.stages):
what add(messages, infer=False) records per message, what the stages do for memories with a
thread, that plain facts rank exactly as plain hybrid search, and the stages option."""

from __future__ import annotations

from pathlib import Path

import pytest

from remem.api import Memory
from remem.embed import FakeEmbedder
from remem.errors import InvalidInputError
from remem.memory.stages import parse_stages, staged_ranking
from remem.messages import Message
from remem.retrieval.ranking import Ranking
from tests.conftest import FakeClock
from tests.memory_support import make_store, rule_model

CONVERSATION = [
    Message.user("Did you go hiking with the kids?", name="Alice", created_at=1_000.0),
    Message.user("Yes, I went hiking last Saturday with them", name="Bob",
                 created_at=1_060.0),
    Message.user("Hiking is fun, I like hiking in the hills", name="Alice",
                 created_at=1_120.0),
    Message.user("The kids loved the hiking trip", name="Bob", created_at=1_180.0),
]
PLAIN = ["Did you go hiking with the kids?", "Bob went hiking last Saturday",
         "Hiking is fun in the hills", "The kids loved the hiking trip",
         "Bob drinks green tea", "Alice works at Acme"]
STAGE_SIGNALS = {"sessions", "speakers", "timing", "questions", "mentions", "neighbours"}


@pytest.fixture(params=["sqlite", "postgres"])
def mem(request: pytest.FixtureRequest, tmp_path: Path) -> Memory:
    if request.param == "postgres":
        dsn = request.getfixturevalue("pg_database")
        memory = Memory.open(dsn, embedder=FakeEmbedder())
        memory.delete_all(user_id="u", hard=True)
        return memory
    return Memory(make_store("sqlite"), owns_store=True)


def test_infer_false_keeps_each_message_where_and_when_it_was_said(mem: Memory) -> None:
    result = mem.add(CONVERSATION, user_id="u", thread_id="s1", infer=False)
    added = sorted(result.added, key=lambda r: r.source.turn or 0)
    assert [r.text for r in added] == [m.text for m in CONVERSATION]
    assert [r.source.speaker for r in added] == ["Alice", "Bob", "Alice", "Bob"]
    assert [r.source.turn for r in added] == [1, 2, 3, 4]
    assert [r.event_time for r in added] == [1_000.0, 1_060.0, 1_120.0, 1_180.0]
    assert [r.source.message_ids for r in added] == [(m.id,) for m in CONVERSATION]
    assert {r.source.thread_id for r in added} == {"s1"}
    stored = mem.get(added[1].id)  # read back from the store, not the add's result
    assert (stored.source.speaker, stored.source.turn, stored.event_time) == ("Bob", 2,
                                                                              1_060.0)



def test_each_message_is_keyword_searchable_by_the_turn_before_it(mem: Memory) -> None:
    """A reply is often unintelligible alone: its source keeps the message before it in
    the add and the day it was said, which keyword search reads with its text (never the
    vectors, never its text)."""
    said = [Message.user("Where did you run the marathon?", name="Alice",
                         created_at=1_683_540_000.0),  # 8 May 2023
            Message.user("In Boston, with my sister", name="Bob", created_at=1_683_540_060.0)]
    first, reply = sorted(mem.add(said, user_id="u", thread_id="s1", infer=False).added,
                          key=lambda r: r.source.turn or 0)
    assert first.source.context == "8 May 2023"
    assert reply.source.context == "Where did you run the marathon?\n8 May 2023"
    assert reply.text == "In Boston, with my sister"
    assert mem.get(reply.id).source.context == reply.source.context  # stored, read back
    hits = mem.search("marathon", user_id="u", mode="keyword", limit=5).hits
    assert reply.id in [hit.memory.id for hit in hits]
    hits = mem.search("May 2023", user_id="u", mode="keyword", limit=5).hits
    assert {hit.memory.id for hit in hits} == {first.id, reply.id}
    facts = mem.add("Carol likes tea", user_id="u", infer=False).added
    assert facts[0].source.context is not None  # a lone message has its day, no turn before
    assert "\n" not in (facts[0].source.context or "")

def test_the_stages_rank_memories_of_a_conversation(mem: Memory) -> None:
    mem.add(CONVERSATION, user_id="u", thread_id="s1", infer=False)
    query = "When did Bob go hiking?"
    staged = {h.memory.text: h for h in mem.search(query, user_id="u").hits}
    plain = {h.memory.text: h for h in mem.search(query, user_id="u", stages="none").hits}
    bob = staged["Yes, I went hiking last Saturday with them"]
    assert {"speakers", "timing"} <= set(bob.details)
    assert "questions" in staged["Did you go hiking with the kids?"].details
    alice = "Hiking is fun, I like hiking in the hills"
    assert not STAGE_SIGNALS & set(staged[alice].details)
    # the sessions stage adds its session's score (it has no signal of its own)
    assert staged[alice].score is not None and plain[alice].score is not None
    assert staged[alice].score > plain[alice].score
    assert all(not STAGE_SIGNALS & set(h.details) for h in plain.values())
    # Bob's answer gains on the question that only asks
    asked, answer = "Did you go hiking with the kids?", bob.memory.text
    gap = {name: (hits[answer].score or 0.0) - (hits[asked].score or 0.0)
           for name, hits in (("staged", staged), ("plain", plain))}
    assert gap["staged"] > gap["plain"] + 0.2
    # a stage's weight is an option: a heavier speakers stage adds more to Bob's turns
    heavier = {h.memory.text: h for h in mem.search(query, user_id="u",
                                                    stages="speakers:0.9").hits}
    lighter = {h.memory.text: h for h in mem.search(query, user_id="u",
                                                    stages="speakers:0.1").hits}
    said_by_bob = "The kids loved the hiking trip"
    assert heavier[said_by_bob].score is not None and lighter[said_by_bob].score is not None
    assert heavier[said_by_bob].score > lighter[said_by_bob].score


def test_plain_facts_rank_exactly_as_plain_hybrid(mem: Memory) -> None:
    for text in PLAIN:
        mem.add(text, user_id="u", infer=False)
    for query in ("When did Bob go hiking?", "Did the kids like hiking?", "green tea"):
        default = mem.search(query, user_id="u").hits
        every = mem.search(query, user_id="u", stages="sessions,speakers,timing,questions,"
                                                       "mentions,neighbours,spread").hits
        plain = mem.search(query, user_id="u", stages="none").hits
        assert default and len(default) == len(PLAIN)
        for hits in (default, every):
            assert [(h.memory.id, h.score, dict(h.details)) for h in hits] == [
                (h.memory.id, h.score, dict(h.details)) for h in plain]


def test_extracted_memories_keep_their_thread_speaker_and_time(clock: FakeClock) -> None:
    mem = Memory(make_store("sqlite"), llm=rule_model(), clock=clock, owns_store=True)
    said = Message.user("I live in Oslo", name="Carol", created_at=5_000.0)
    [record] = mem.add([said], user_id="u", thread_id="t7", infer=True).added
    assert record.text == "Lives in Oslo"
    assert (record.source.thread_id, record.source.speaker) == ("t7", "Carol")
    assert record.source.turn is None and record.event_time == 5_000.0
    two = [Message.user("I work at Acme", name="Carol"), Message.user("I live in Rome",
                                                                      name="Dan")]
    for record in mem.add(two, user_id="v", thread_id="t8", infer=True).added:
        assert record.source.thread_id == "t8" and record.source.speaker is None
    mem.close()


def test_stages_option() -> None:
    assert parse_stages("none") == {} and parse_stages("") == {}
    assert parse_stages(" Sessions:0.8, speakers ,timing:.05") == {
        "sessions": 0.8, "speakers": None, "timing": 0.05}
    for bad in ("sessions,bogus", "speakers:-1", "timing:x", "sessions;speakers"):
        with pytest.raises(InvalidInputError, match="is not a stage"):
            parse_stages(bad)
    mem = Memory(make_store("memory"))
    with pytest.raises(InvalidInputError, match="stages"):
        mem.search("tea", user_id="u", stages="bogus")
    english = staged_ranking(Ranking(), "When did Bob go hiking?", None)
    assert (english.sessions, english.speakers, english.timing, english.questions) != (
        None, None, None, None) and english.mentions is None
    chinese = staged_ranking(Ranking(), "我那个在杭州上班的朋友生日是哪天", None)
    assert chinese.sessions is not None and chinese.mentions is not None
    assert chinese.speakers is None and chinese.timing is None
    assert staged_ranking(Ranking(), None, None) == Ranking()
    assert staged_ranking(Ranking(), "tea", "none") == Ranking()
