"""Thread search holds only what threads' current histories hold: a rewind, a delete or any
other change that takes messages out of a thread takes them out of search (and of the index)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem.embed import FakeEmbedder
from remem.messages import Message
from remem.store import IndexConfig, KeywordConfig, SQLiteStore
from remem.threads import ThreadIndex, ThreadStore
from remem.threads.scoped import ScopedThreads


def indexed(index: ThreadIndex) -> set[tuple[str, int, str]]:
    """Every (thread id, position, message id) the index store holds."""
    found = index.store.search(index.namespace, limit=10_000)
    return {(str(i.value["thread_id"]), int(i.value["position"]), str(i.value["message_id"]))
            for i in found}


def held(threads: ThreadStore, thread_id: str) -> set[tuple[str, int, str]]:
    if not threads.exists(thread_id):
        return set()
    return {(thread_id, pos, m.id) for pos, m in enumerate(threads.messages(thread_id))}


@pytest.fixture
def threads(tmp_path: Path) -> Iterator[ThreadStore]:
    path = tmp_path / "memory.db"
    store = SQLiteStore(path, index=IndexConfig(FakeEmbedder(16), fields=("text",)),
                        keyword=KeywordConfig(fields=("text",)))
    with store, ThreadStore(path, index=ThreadIndex(store)) as threads:
        yield threads


def test_a_rewind_takes_the_words_out_of_search(threads: ThreadStore) -> None:
    chat = threads.create("t", metadata={"user_id": "u"})
    first = chat.append(Message.user("Book a table for two"))
    chat.append(Message.user("My passport number is X123"))
    assert threads.search("passport", mode="keyword")[0].thread_id == "t"
    threads.rewind("t", first.id)
    assert threads.search("passport", mode="keyword") == []
    # nor by meaning (the fake embedder finds neighbours, never the words taken back)
    assert all("passport" not in m.text for h in threads.search("passport X123")
               for m in h.matches)
    # and the index itself forgot them, not only the answers
    assert threads.index is not None
    assert all("passport" not in text for *_, text in
               [(i.key, str(i.value["text"])) for i in
                threads.index.store.search(threads.index.namespace, limit=100)])
    # what the rewind kept is still found; a rewind forward brings the words back
    assert threads.search("table", mode="keyword")[0].matches[0].position == 0
    threads.rewind("t", next(c for c in threads.checkpoints("t")
                         if c.position == 2).id)
    assert threads.search("passport", mode="keyword")[0].matches[0].position == 1


def test_a_rewind_to_an_empty_thread_and_appends_after_it(threads: ThreadStore) -> None:
    chat = threads.create("t", metadata={"user_id": "u"})
    empty = chat.checkpoint()
    chat.append([Message.user("the vault code is 4471"), Message.assistant("noted")])
    chat.rewind(empty.id)
    assert threads.search("vault code", mode="keyword") == []
    chat.append(Message.user("the garden gate is green"))
    hits = threads.search("garden gate", mode="keyword")
    assert hits[0].matches[0].position == 0
    assert threads.index is not None
    assert indexed(threads.index) == held(threads, "t")


def test_a_scoped_view_rewinds_its_own_index(tmp_path: Path) -> None:
    from remem.store.scoped import ScopedStore

    path = tmp_path / "memory.db"
    store = SQLiteStore(path, keyword=KeywordConfig(fields=("text",)))
    with store, ThreadStore(path) as inner:
        acme = ScopedThreads(inner, "acme", index=ThreadIndex(ScopedStore(store, "acme")))
        chat = acme.create("t")
        first = chat.append(Message.user("hello there"))
        chat.append(Message.user("my passport number is X123"))
        acme.rewind("t", first.id)
        assert acme.search("passport", mode="keyword") == []
        assert store.search(("tenants",), query="passport", mode="keyword") == []


def test_search_checks_hits_against_the_current_history(threads: ThreadStore) -> None:
    """Even an index that missed a change (a crash between commit and indexing) never
    answers with a message the thread no longer holds."""
    chat = threads.create("t", metadata={"user_id": "u"})
    first = chat.append(Message.user("lunch at noon"))
    chat.append(Message.user("the alarm code is 9911"))
    stale = threads.index
    threads.index = None  # the rewind commits, the index is not told
    threads.rewind("t", first.id)
    threads.index = stale
    assert threads.search("alarm code", mode="keyword") == []
    assert threads.search("lunch", mode="keyword")[0].thread_id == "t"


WORDS = ("apple", "river", "stone", "cloud")
OPS = st.one_of(
    st.tuples(st.just("create"), st.integers(0, 3)),
    st.tuples(st.just("append"), st.integers(0, 3), st.lists(st.sampled_from(WORDS),
                                                             min_size=1, max_size=3)),
    st.tuples(st.just("rewind"), st.integers(0, 3), st.integers(0, 20)),
    st.tuples(st.just("fork"), st.integers(0, 3), st.integers(0, 20)),
    st.tuples(st.just("copy"), st.integers(0, 3), st.integers(0, 20)),
    st.tuples(st.just("delete"), st.integers(0, 3)),
)
_runs = itertools.count()


@pytest.fixture(scope="module")
def shared() -> Iterator[ThreadStore]:
    # one store for every example (cheap); each example writes under its own owner and ids
    store = SQLiteStore(index=IndexConfig(FakeEmbedder(8), fields=("text",)),
                        keyword=KeywordConfig(fields=("text",)))
    with store, ThreadStore(index=ThreadIndex(store)) as threads:
        yield threads


@settings(max_examples=500, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(ops=st.lists(OPS, max_size=12))
def test_search_never_returns_what_a_history_does_not_hold(
        shared: ThreadStore, ops: list[tuple]) -> None:  # type: ignore[type-arg]
    run = next(_runs)
    owner, names = f"o{run}", [f"r{run}-{n}" for n in range(4)]
    extra = itertools.count()
    alive: list[str] = []
    for op in ops:
        name = names[op[1]]
        if op[0] == "create":
            if name not in alive:
                shared.create(name, metadata={"user_id": owner})
                alive.append(name)
            continue
        if name not in alive and op[0] == "append":
            shared.create(name, metadata={"user_id": owner})
            alive.append(name)
        if name not in alive:
            continue
        if op[0] == "append":
            shared.append(name, [Message.user(f"{w} note") for w in op[2]])
        elif op[0] == "delete":
            shared.delete(name)
            alive.remove(name)
        else:
            points = shared.checkpoints(name)
            target = points[op[2] % len(points)].id
            if op[0] == "rewind":
                shared.rewind(name, target)
            else:
                new = f"{name}-{op[0]}{next(extra)}"
                getattr(shared, op[0])(name, target, new_thread_id=new)
                alive.append(new)
    assert shared.index is not None
    holds = set().union(*(held(shared, t) for t in alive)) if alive else set()
    mine = {hit for hit in indexed(shared.index) if hit[0].startswith(f"r{run}-")}
    assert mine <= holds, mine - holds
    for word in WORDS:
        for hit in shared.search(word, owner=owner, limit=50, per_thread=50):
            for match in hit.matches:
                assert (hit.thread_id, match.position, match.message_id) in holds


def test_a_new_owner_takes_the_thread_out_of_the_old_owners_search(
        threads: ThreadStore) -> None:
    chat = threads.create("t", metadata={"user_id": "u1"})
    chat.append(Message.user("my salary is 5000"))
    threads.set_metadata("t", {"user_id": "u2"})
    assert threads.search("salary", owner="u1", mode="keyword") == []
    assert threads.search("salary", owner="u2", mode="keyword")[0].thread_id == "t"


def test_a_rewind_takes_the_words_out_of_search_in_postgres(pg_database: str) -> None:
    from remem.store.postgres import PostgresStore

    store = PostgresStore(pg_database, schema="thread_rewind",
                          keyword=KeywordConfig(fields=("text",)))
    with store, ThreadStore(pg_database, schema="thread_rewind",
                            index=ThreadIndex(store)) as threads:
        chat = threads.create("t", metadata={"user_id": "u"})
        first = chat.append(Message.user("book a table for two"))
        chat.append(Message.user("my passport number is X123"))
        threads.rewind("t", first.id)
        assert threads.search("passport", mode="keyword") == []
        assert threads.index is not None
        assert indexed(threads.index) == held(threads, "t")
        chat.append(Message.user("the passport is renewed"))
        assert [m.position for h in threads.search("passport", mode="keyword")
                for m in h.matches] == [1]
