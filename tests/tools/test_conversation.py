"""``conversation_search`` served by the thread search index: it finds messages in every one
of the owner's threads (not just the ``max_threads`` most recent a scan reads), never another
owner's, applies the date range, and falls back to the literal scan without an index."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from remem.messages import Message
from remem.messages.types import ToolCall
from remem.store import KeywordConfig, SQLiteStore
from remem.threads import ThreadIndex, ThreadStore
from remem.tokens import DEFAULT_COUNTER
from remem.tools.archival import ConversationTools


def _at(day: int) -> float:
    return datetime(2025, 3, day, 12, tzinfo=UTC).timestamp()


def _search(tools: ConversationTools, **arguments: object) -> dict[str, object]:
    reply = tools.execute(ToolCall(id="1", name="conversation_search", arguments=arguments))
    assert not reply.is_error, reply.text
    assert DEFAULT_COUNTER.count(reply.text) <= tools.budget
    data: dict[str, object] = json.loads(reply.text)
    return data


def test_indexed_search_reaches_every_thread_of_the_owner(tmp_path: Path) -> None:
    path = str(tmp_path / "t.db")
    store = SQLiteStore(path, keyword=KeywordConfig(fields=("text",)))
    with store, ThreadStore(path, index=ThreadIndex(store)) as threads:
        for day in (1, 2, 3, 4):  # four threads of alice's, one message about trains each
            extra = {"topic": "rail"} if day == 2 else {}
            threads.create(f"alice-{day}", metadata={"user_id": "alice", **extra})
            threads.append(f"alice-{day}", [
                Message.user(f"Book the train number {day}", created_at=_at(day)),
                Message.assistant("Done.", created_at=_at(day))])
        threads.create("bob-1", metadata={"user_id": "bob"})
        threads.append("bob-1", [Message.user("bob's secret train", created_at=_at(5))])
        indexed = ConversationTools(threads, thread_filter={"user_id": "alice"},
                                    max_threads=1)
        assert indexed.owner == "alice"
        found = _search(indexed, query="train")
        assert [m["thread_id"] for m in found["messages"]] == [  # type: ignore[index]
            "alice-4", "alice-3", "alice-2", "alice-1"]  # newest first, all four threads
        ranged = _search(indexed, query="train", start_date="2025-03-02",
                         end_date="2025-03-03")
        assert [m["text"] for m in ranged["messages"]] == [  # type: ignore[index]
            "Book the train number 3", "Book the train number 2"]
        # without an index to ask (another filter), the scan reads max_threads threads only
        scanned = ConversationTools(threads, thread_filter={"user_id": {"$eq": "alice"}},
                                    max_threads=1)
        assert scanned.owner is None
        assert len(_search(scanned, query="train")["messages"]) == 1  # type: ignore[arg-type]
        # a filter narrower than the owner is checked on each hit's thread
        narrow = ConversationTools(threads, thread_filter={"user_id": "alice", "topic": "rail"},
                                   owner="alice")
        assert [m["thread_id"] for m in _search(narrow, query="train")[
            "messages"]] == ["alice-2"]  # type: ignore[index]


def test_without_an_index_it_scans() -> None:
    with ThreadStore(":memory:") as threads:
        threads.create("t", metadata={"user_id": "alice"})
        threads.append("t", [Message.user("training plan", created_at=_at(1))])
        tools = ConversationTools(threads, thread_filter={"user_id": "alice"})
        found = _search(tools, query="train")  # literal: 'train' is in 'training'
        assert [m["text"] for m in found["messages"]] == ["training plan"]  # type: ignore[index]
