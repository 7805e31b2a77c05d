"""The ``subjects`` stage: a question naming a person searches that person's sessions again.

The pure parts (which sessions a name picks, how the two searches merge), its option in the
request (``stages="...,subjects:N"``), and the stage through ``Memory.search`` on SQLite, the
in-memory store and PostgreSQL: many people's near-alike first-person messages, each person
named only where they introduce themself.
"""

from __future__ import annotations

import pytest

from remem.api import Memory
from remem.embed import FakeEmbedder
from remem.errors import InvalidInputError
from remem.memory.stages import staged_ranking
from remem.messages import Message
from remem.retrieval.ranking import Ranking
from remem.retrieval.subjects import Subjects, merge_subject, subject_sessions
from tests.memory_support import make_store

STAGE = Subjects(take=2, probe=3, max_sessions=2)


def test_a_name_held_by_the_probe_hits_of_one_session_picks_that_session() -> None:
    hits = [("我叫陈美玲，在成都生活", "t1"), ("陈美玲的同事", "t1"), ("我买了杯咖啡", "t2")]
    assert subject_sessions(["陈美玲"], hits, STAGE) == ["t1"]


def test_a_name_said_in_too_many_sessions_picks_no_one() -> None:
    hits = [("Caroline: hi", 1), ("Caroline: yes", 2), ("Caroline: later", 3)]
    assert subject_sessions(["Caroline"], hits, STAGE) == []
    assert subject_sessions(["Caroline"], hits[:2], STAGE) == [1, 2]


def test_only_the_probe_hits_read_and_only_names_as_written_count() -> None:
    hits = [("nothing here", "a"), ("nor here", "b"), ("still nothing", "c"),
            ("陈美玲", "d")]
    assert subject_sessions(["陈美玲"], hits, STAGE) == []  # the 4th is past the probe
    assert subject_sessions(["", " "], [("x", "a")], STAGE) == []
    assert subject_sessions(["陈美玲"], [("陈美玲", None)], STAGE) == []  # no session


def test_the_subjects_best_lead_then_the_ordinary_results_each_once() -> None:
    assert merge_subject(["s1", "s2", "s3"], ["o1", "s2", "o2"], STAGE) == [
        "s1", "s2", "o1", "o2"]
    assert merge_subject([], ["o1", "o2"], STAGE) == ["o1", "o2"]


@pytest.mark.parametrize("field,value", [("take", 0), ("probe", -1), ("max_sessions", 1.5),
                                         ("field", "")])
def test_bad_options_name_the_option(field: str, value: object) -> None:
    with pytest.raises(InvalidInputError, match=f"Subjects.{field}"):
        Subjects(**{field: value})  # type: ignore[arg-type]


def test_the_request_option_turns_it_on_and_sets_how_many_lead() -> None:
    assert staged_ranking(Ranking(), "陈美玲买了几杯咖啡", "sessions,subjects:4").subjects \
        == Subjects(field="source.thread_id", take=4)
    assert staged_ranking(Ranking(), "陈美玲买了几杯咖啡", "sessions").subjects is None
    for bad in ("subjects:0", "subjects:2.5"):
        with pytest.raises(InvalidInputError, match="subjects"):
            staged_ranking(Ranking(), "陈美玲买了几杯咖啡", bad)


#: forty people: more near-alike coffee messages (120) than a search's candidates (100)
PEOPLE = tuple(s + g for s in "陈刘王赵孙周吴郑" for g in ("美玲", "建国", "思远", "雅婷", "浩然"))
ASKED = PEOPLE.index("周建国")
SHOPS = ("瑞幸", "星巴克", "库迪")


def _add_people(memory: Memory) -> None:
    """Forty people, each a thread: an introduction, then three coffee messages said alike by
    everyone (the same shops and drinks, other prices), and one about the weather."""
    for number, name in enumerate(PEOPLE):
        messages = [Message.user(f"你好，我叫{name}，以后日常的事都跟你说", id=f"{number}:0")]
        messages += [Message.user(f"我早上在{SHOPS[i]}买了杯拿铁，{10 + number + i}块",
                                  id=f"{number}:{i + 1}") for i in range(3)]
        messages.append(Message.user("今天好热啊", id=f"{number}:4"))
        memory.add(messages, user_id="pool", thread_id=f"person-{number}", infer=False)


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def memory(request: pytest.FixtureRequest) -> Memory:
    if request.param == "postgres":
        return Memory.open(request.getfixturevalue("pg_database"), embedder=FakeEmbedder())
    return Memory(make_store(request.param), owns_store=True)


def test_the_named_persons_own_messages_lead_on_every_backend(memory: Memory) -> None:
    _add_people(memory)
    query = "周建国买了几杯拿铁？"
    own = f"person-{ASKED}"
    hits = memory.search(query, user_id="pool", limit=4, stages="sessions,subjects:3").hits
    assert [h.memory.source.thread_id for h in hits[:3]] == [own] * 3
    assert all("subjects" in h.details for h in hits[:3])
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    # without the stage the other people's near-alike messages crowd hers out
    plain = memory.search(query, user_id="pool", limit=3, stages="sessions").hits
    assert [h.memory.source.thread_id for h in plain] != [own] * 3
    # a question naming no one ranks as without the stage
    nobody = "谁买了拿铁？"
    assert [h.memory.id for h in memory.search(nobody, user_id="pool", limit=5,
                                               stages="sessions,subjects").hits] == \
        [h.memory.id for h in memory.search(nobody, user_id="pool", limit=5,
                                            stages="sessions").hits]
    memory.close()


def test_paging_through_a_subject_search_returns_each_memory_once(memory: Memory) -> None:
    _add_people(memory)
    query = "周建国买了几杯拿铁？"
    whole = [h.memory.id for h in memory.search(query, user_id="pool", limit=8,
                                                 stages="subjects:3").hits]
    pages = [h.memory.id for offset in (0, 4) for h in memory.search(
        query, user_id="pool", limit=4, offset=offset, stages="subjects:3").hits]
    assert pages == whole and len(set(whole)) == len(whole)
    memory.close()
