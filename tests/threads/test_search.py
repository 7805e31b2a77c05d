"""Thread search (episodic recall) through the store's hybrid search, Chinese and English."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from remem.embed import FakeEmbedder, OpenAIEmbedder
from remem.embed.local import LocalEmbedder
from remem.errors import InvalidInputError, UsageError
from remem.messages import Message
from remem.store import IndexConfig, KeywordConfig, SQLiteStore
from remem.testing import LoopbackServer
from remem.threads import ThreadIndex, ThreadStore

CONVERSATIONS = {
    "trip": ("u1", [("user", "We should book the flights to Lisbon for April"),
                    ("assistant", "I found a direct flight on April 3rd"),
                    ("user", "Also a hotel close to the Alfama district please")]),
    "bug": ("u1", [("user", "The deploy failed with a segmentation fault in the parser"),
                   ("assistant", "Let's run it under gdb and look at the stack trace")]),
    "food": ("u1", [("user", "我想学做北京烤鸭，需要准备什么？"),
                    ("assistant", "需要一只鸭子、麦芽糖和甜面酱，还要烤箱")]),
    "garden": ("u2", [("user", "My tomatoes have yellow leaves"),
                      ("assistant", "That is often a nitrogen shortage; try compost")]),
}


def fill(threads: ThreadStore) -> None:
    for thread_id, (owner, turns) in CONVERSATIONS.items():
        chat = threads.create(thread_id, metadata={"user_id": owner})
        for role, text in turns:
            chat.append(Message(role=role, content=text))  # type: ignore[arg-type]
        chat.append(Message.system("internal note"))


@pytest.fixture
def threads(tmp_path: Path) -> Iterator[ThreadStore]:
    path = tmp_path / "memory.db"  # threads and their index in one file
    store = SQLiteStore(path, index=IndexConfig(FakeEmbedder(32), fields=("text",)),
                        keyword=KeywordConfig(fields=("text",)))
    with store, ThreadStore(path, index=ThreadIndex(store)) as threads:
        fill(threads)
        yield threads


def test_keywords_find_the_thread_and_the_message(threads: ThreadStore) -> None:
    hits = threads.search("hotel in Alfama", owner="u1")
    assert hits[0].thread_id == "trip" and hits[0].owner == "u1"
    best = hits[0].matches[0]
    assert best.text == "Also a hotel close to the Alfama district please"
    assert best.position == 2 and best.role == "user"
    assert threads.messages("trip", start=best.position, stop=best.position + 1)[0].text \
        == best.text


def test_chinese_keywords(threads: ThreadStore) -> None:
    hits = threads.search("烤鸭怎么做", owner="u1")
    assert hits[0].thread_id == "food"


def test_owner_scope_exclude_and_system_messages(threads: ThreadStore) -> None:
    assert [h.thread_id for h in threads.search("tomatoes", owner="u2")] == ["garden"]
    assert threads.search("tomatoes yellow", owner="u1", mode="keyword") == []
    assert [h.thread_id for h in threads.search("tomatoes", mode="keyword")] == ["garden"]
    assert threads.search("Lisbon", exclude=["trip"], mode="keyword") == []
    # system messages are not indexed (roles default to user and assistant)
    assert threads.search("internal note", mode="keyword") == []


def test_deleted_forked_and_copied_threads(threads: ThreadStore) -> None:
    copy = threads.copy("bug", new_thread_id="bug-copy")
    found = threads.search("segmentation fault", mode="keyword")
    assert {h.thread_id for h in found} == {"bug", "bug-copy"}
    fork = threads.fork("trip", new_thread_id="trip-fork")
    fork.append(Message.user("Switch the hotel to one in Belém instead"))
    hits = threads.search("Belém hotel", owner="u1")
    assert hits[0].thread_id == "trip-fork"
    threads.delete("bug")
    copy.delete()
    assert threads.search("segmentation fault", mode="keyword") == []
    assert threads.index is not None
    assert threads.index.remove_thread("trip-fork") == 1  # only the fork's own message


def test_reindex_a_thread(threads: ThreadStore) -> None:
    assert threads.index is not None
    threads.index.remove_thread("trip")
    assert threads.search("Lisbon flights", mode="keyword") == []
    assert threads.index.index_thread(threads, "trip") == 3
    assert threads.search("Lisbon flights")[0].thread_id == "trip"


def test_search_needs_an_index_and_a_query(tmp_path: Path) -> None:
    with ThreadStore() as plain, pytest.raises(UsageError, match="index=ThreadIndex"):
        plain.search("anything")
    store = SQLiteStore(keyword=KeywordConfig(fields=("text",)))
    with store, pytest.raises(InvalidInputError, match="query must be a non-empty string"):
        ThreadIndex(store).search("  ")


@pytest.fixture(scope="module")
def local_threads(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadStore]:
    path = tmp_path_factory.mktemp("local") / "memory.db"
    store = SQLiteStore(path, index=IndexConfig(LocalEmbedder(), fields=("text",)),
                        keyword=KeywordConfig(fields=("text",)))
    with store, ThreadStore(path, index=ThreadIndex(store)) as threads:
        fill(threads)
        yield threads


@pytest.mark.parametrize(("query", "expected"), [
    # no word in common with the conversation: only meaning can find it
    ("when was that conversation about my holiday in Portugal?", "trip"),
    ("the program crashed while we were releasing it", "bug"),
    ("那次聊到怎么烤鸭子的对话", "food"),
    ("cooking a roast duck recipe", "food"),
])
def test_paraphrases_find_the_thread_with_the_local_model(
        local_threads: ThreadStore, query: str, expected: str) -> None:
    hits = local_threads.search(query, owner="u1", limit=3)
    assert hits[0].thread_id == expected, [(h.thread_id, h.score) for h in hits]


def test_an_index_failure_does_not_fail_the_append(tmp_path: Path,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    """The append is committed before indexing: an embedding service failure is logged, the
    messages are kept, and re-indexing the thread repairs the index afterwards."""
    with LoopbackServer(dims=16) as server, OpenAIEmbedder(
            "text-embedding-test", base_url=server.url, api_key="sk-x", dims=16,
            max_retries=0) as embedder:
        path = tmp_path / "memory.db"
        store = SQLiteStore(path, index=IndexConfig(embedder, fields=("text",)),
                            keyword=KeywordConfig(fields=("text",)))
        with store, ThreadStore(path, index=ThreadIndex(store)) as threads:
            chat = threads.create("t", metadata={"user_id": "u"})
            server.enqueue(status=500, body={"error": {"message": "down", "type": "server"}})
            with caplog.at_level("WARNING", logger="remem.threads"):
                head = chat.append(Message.user("remember the blue umbrella"))
            assert head.position == 1 and chat.messages()[0].text == "remember the blue umbrella"
            assert "not indexed for search" in caplog.text and "index_thread" in caplog.text
            assert threads.search("umbrella", mode="keyword") == []
            assert threads.index is not None
            assert threads.index.index_thread(threads, "t") == 1
            assert threads.search("umbrella", mode="keyword")[0].thread_id == "t"


def test_search_with_threads_and_index_in_postgres(pg_database: str) -> None:
    from remem.store.postgres import PostgresStore

    store = PostgresStore(pg_database, schema="thread_search",
                          keyword=KeywordConfig(fields=("text",)))
    with store, ThreadStore(pg_database, schema="thread_search",
                            index=ThreadIndex(store)) as threads:
        fill(threads)
        assert threads.search("hotel in Alfama", owner="u1")[0].thread_id == "trip"
        assert threads.search("烤鸭怎么做", owner="u1")[0].thread_id == "food"
        threads.delete("trip")
        assert threads.search("Alfama hotel", mode="keyword") == []
