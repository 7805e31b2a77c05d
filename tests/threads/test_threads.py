"""Thread storage on real databases (SQLite in memory and in a file, PostgreSQL): checkpoints,
time travel, forks, TTL."""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem.db.migrations import Migration, apply_sqlite
from remem.errors import (
    ConflictError,
    InvalidInputError,
    MigrationError,
    NotFoundError,
    StoreError,
)
from remem.messages import Message
from remem.store import SQLiteStore
from remem.threads import Thread, ThreadStore
from remem.threads.schema import THREAD_MIGRATIONS, Segment, segments
from tests.conftest import FakeClock

_schemas = itertools.count()


def open_threads(kind: str, tmp_path: Path, request: pytest.FixtureRequest,
                 **kwargs: Any) -> ThreadStore:
    """A fresh thread store: SQLite in memory, a SQLite file, or a new PostgreSQL schema."""
    if kind == "postgres":
        dsn = request.getfixturevalue("pg_database")
        return ThreadStore(dsn, schema=f"threads{next(_schemas)}", **kwargs)
    return ThreadStore(":memory:" if kind == "memory" else tmp_path / "threads.db", **kwargs)


@pytest.fixture(params=["memory", "file", "postgres"])
def threads(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ThreadStore]:
    with open_threads(request.param, tmp_path, request) as store:
        yield store


def turn(n: int) -> list[Message]:
    return [Message.user(f"q{n}"), Message.assistant(f"a{n}")]


def texts(messages: list[Message]) -> list[str]:
    return [m.text for m in messages]


def test_create_append_read(threads: ThreadStore) -> None:
    chat = threads.create(metadata={"user_id": "u1"}, messages=[Message.system("Be brief.")])
    assert isinstance(chat, Thread)
    for n in range(3):
        head = chat.append(turn(n))
    assert head.position == 7
    assert head.metadata == {"source": "append", "added": 2}
    assert texts(chat.messages()) == ["Be brief.", "q0", "a0", "q1", "a1", "q2", "a2"]
    assert texts(chat.messages(last=2)) == ["q2", "a2"]
    assert texts(chat.messages(start=1, stop=3)) == ["q0", "a0"]
    assert texts(chat.messages(start=-1)) == ["a2"]
    assert chat.messages(last=0) == []
    info = chat.info()
    assert info.length == 7 and info.metadata == {"user_id": "u1"} and info.head.id == head.id
    # messages round-trip exactly (ids, timestamps, parts)
    stored = chat.messages()
    assert stored[1].id == chat.messages(last=6)[0].id


def test_every_change_is_a_checkpoint_with_a_parent(threads: ThreadStore) -> None:
    chat = threads.create()
    first = chat.checkpoint()
    assert first.position == 0 and first.parent_id is None
    assert first.metadata["source"] == "create"
    a = chat.append(turn(0))
    b = chat.append(turn(1))
    c = chat.update_state({"mood": "happy"})
    assert (a.parent_id, b.parent_id, c.parent_id) == (first.id, a.id, b.id)
    assert c.position == 4 and c.state == {"mood": "happy"} and b.state == {}
    assert [cp.id for cp in chat.checkpoints()] == [c.id, b.id, a.id, first.id]
    assert chat.checkpoint(b.id) == b


def test_a_checkpoint_sees_exactly_its_messages(threads: ThreadStore) -> None:
    chat = threads.create()
    marks = [chat.append(turn(n)).id for n in range(4)]
    assert texts(chat.messages(checkpoint_id=marks[1])) == ["q0", "a0", "q1", "a1"]
    chat.rewind(marks[0])
    chat.append(Message.user("other"))
    # the old checkpoints still read their own history
    assert texts(chat.messages(checkpoint_id=marks[3], last=2)) == ["q3", "a3"]
    assert texts(chat.messages()) == ["q0", "a0", "other"]


def test_rewind_is_a_new_checkpoint(threads: ThreadStore) -> None:
    chat = threads.create()
    a = chat.append(turn(0))
    b = chat.append(turn(1))
    back = chat.rewind(a.id)
    assert back.parent_id == a.id and back.position == 2
    assert back.metadata == {"source": "rewind", "from": b.id}
    assert chat.info().head.id == back.id


def test_fork_shares_history_and_diverges(threads: ThreadStore) -> None:
    source = threads.create(metadata={"user_id": "u1", "topic": "trip"})
    marks = [source.append(turn(n)) for n in range(3)]
    fork = source.fork(marks[1].id, metadata={"topic": "alt"})
    assert fork.id != source.id
    info = fork.info()
    assert info.metadata == {"user_id": "u1", "topic": "alt"}
    assert info.source == marks[1].id and info.length == 4
    assert info.head.parent_id == marks[1].id
    fork.append(Message.user("fork says"))
    source.append(Message.user("source says"))
    assert texts(fork.messages()) == ["q0", "a0", "q1", "a1", "fork says"]
    assert texts(source.messages(last=3)) == ["q2", "a2", "source says"]
    # a fork of a fork reads through two branches
    grand = fork.fork()
    grand.append(Message.user("grand"))
    assert texts(grand.messages(start=3)) == ["a1", "fork says", "grand"]


def test_fork_shares_rows_copy_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    with ThreadStore(path) as threads:
        source = threads.create()
        for n in range(50):
            source.append(turn(n))
        fork = source.fork()
        copy = source.copy()
        with closing(sqlite3.connect(path)) as conn:
            rows = conn.execute("SELECT COUNT(*) FROM thread_messages").fetchone()[0]
        assert rows == 200  # 100 for the source, none for the fork, 100 for the copy
        assert texts(fork.messages()) == texts(copy.messages()) == texts(source.messages())
        assert copy.info().head.parent_id is None


def test_delete_keeps_forks_and_collects_garbage(tmp_path: Path) -> None:
    path = tmp_path / "t.db"

    def count(table: str) -> int:
        with closing(sqlite3.connect(path)) as conn:
            return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])

    with ThreadStore(path) as threads:
        source = threads.create()
        for n in range(5):
            source.append(turn(n))
        fork = source.fork(source.checkpoints()[2].id)
        fork.append(Message.user("mine"))
        assert source.delete() is True
        assert source.delete() is False
        with pytest.raises(NotFoundError, match="does not exist"):
            source.messages()
        assert texts(fork.messages()) == ["q0", "a0", "q1", "a1", "q2", "a2", "mine"]
        assert count("thread_messages") == 11  # the source's branch stays while the fork reads it
        fork.delete()
        assert count("thread_messages") == 0
        assert count("thread_branches") == 0
        assert count("thread_states") == 0
        assert count("thread_checkpoints") == 0


def test_list_by_metadata(threads: ThreadStore, clock: FakeClock) -> None:
    threads.clock = clock
    made = []
    for n in range(5):
        made.append(threads.create(metadata={"user_id": "u1" if n % 2 == 0 else "u2", "n": n}))
        clock.advance(1)
    listed = threads.list_threads({"user_id": "u1"})
    assert [t.thread_id for t in listed] == [made[4].id, made[2].id, made[0].id]
    assert [t.thread_id for t in threads.list_threads({"n": {"$gte": 3}})] == [
        made[4].id, made[3].id]
    assert len(threads.list_threads(limit=2, offset=4)) == 1
    # an append moves a thread to the front
    clock.advance(1)
    made[0].append(turn(0))
    assert threads.list_threads({"user_id": "u1"})[0].thread_id == made[0].id
    made[0].set_metadata({"archived": True})
    assert [t.thread_id for t in threads.list_threads({"archived": True})] == [made[0].id]
    assert made[0].info().metadata == {"user_id": "u1", "n": 0, "archived": True}


@pytest.mark.parametrize("kind", ["file", "postgres"])
def test_ttl_expires_renews_and_sweeps(kind: str, tmp_path: Path, clock: FakeClock,
                                       request: pytest.FixtureRequest) -> None:
    with open_threads(kind, tmp_path, request, ttl=60, clock=clock) as threads:
        short = threads.create("short")
        forever = threads.create("forever", ttl=None)
        assert short.info().expires_at == clock.now + 60
        clock.advance(50)
        short.append(turn(0))  # a change renews the TTL
        clock.advance(50)
        assert short.messages()[0].text == "q0"
        clock.advance(11)
        with pytest.raises(NotFoundError):
            short.info()
        assert [t.thread_id for t in threads.list_threads()] == ["forever"]
        assert threads.exists("short") is False
        # an expired id can be reused before any sweep
        again = threads.create("short", ttl=5)
        assert again.messages() == []
        clock.advance(6)
        assert threads.sweep() == 1
        assert forever.info().ttl is None


def test_errors_name_the_problem(threads: ThreadStore) -> None:
    chat = threads.create("t1")
    other = threads.create("t2")
    with pytest.raises(ConflictError, match="already exists"):
        threads.create("t1")
    # arguments are validated as request values: the error names the request and the field
    with pytest.raises(InvalidInputError, match="GetThreadRequest: thread_id: String should "
                                                "have at least 1 character"):
        threads.get("")
    with pytest.raises(InvalidInputError, match=r"messages\[1\] is a int"):
        chat.append([Message.user("ok"), 42])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError, match="at least one message"):
        chat.append([])
    with pytest.raises(NotFoundError, match="not a checkpoint of thread 't1'"):
        chat.messages(checkpoint_id=other.checkpoint().id)
    with pytest.raises(NotFoundError, match=r"ThreadStore\.list_threads\(\)"):
        threads.thread("nope")
    with pytest.raises(InvalidInputError, match="ttl: Input should be greater than 0"):
        threads.create(ttl=-1)
    head = chat.append(turn(0))
    chat.append(turn(1))
    with pytest.raises(ConflictError, match="moved on"):
        chat.append(turn(2), expected_head=head.id)
    assert chat.info().length == 4  # the refused append wrote nothing
    with pytest.raises(InvalidInputError, match="metadata: Input should be a valid dictionary"):
        threads.create(metadata=["x"])  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match=r"limit: Input should be greater than or equal "
                                                r"to 1 \(got -1\)"):
        chat.checkpoints(limit=-1)
    with pytest.raises(InvalidInputError, match="offset: Input should be greater than or equal"):
        threads.list_threads(offset=-5)
    with pytest.raises(InvalidInputError, match="last: Input should be greater than or equal"):
        chat.messages(last=-1)


def test_same_file_as_the_store(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with SQLiteStore(path) as store, ThreadStore(path) as threads:
        store.put(("u1",), "k", {"text": "tea"})
        threads.create("t").append(turn(0))
    # reopening in either order works: each applies only its own migration family
    with ThreadStore(path) as threads, SQLiteStore(path) as store:
        assert texts(threads.thread("t").messages()) == ["q0", "a0"]
        assert store.get(("u1",), "k") is not None
    with closing(sqlite3.connect(path)) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM remem_migrations ORDER BY name")]
    assert "t001_threads" in names and "m001_items" in names


def test_a_newer_thread_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    conn = sqlite3.connect(path, isolation_level=None)
    apply_sqlite(conn, [*THREAD_MIGRATIONS, Migration("t999_future", ())])
    conn.close()
    with pytest.raises(MigrationError, match="t999_future"):
        ThreadStore(path).setup()
    SQLiteStore(path).setup()  # the store's family is unaffected


def test_segments_walk_the_branch_chain() -> None:
    bases: dict[int, tuple[int | None, int]] = {1: (None, 0), 2: (1, 10), 3: (2, 15)}
    assert segments(bases.__getitem__, 3, 0, 20) == [
        Segment(1, 0, 10), Segment(2, 10, 15), Segment(3, 15, 20)]
    assert segments(bases.__getitem__, 3, 12, 14) == [Segment(2, 12, 14)]
    assert segments(bases.__getitem__, 3, 16, 20) == [Segment(3, 16, 20)]
    assert segments(bases.__getitem__, 3, 5, 5) == []


# -- the model: any sequence of operations reads like plain lists ------------------------------

OPS = st.lists(st.tuples(st.sampled_from(["append", "rewind", "fork", "copy", "switch",
                                          "delete"]),
                         st.integers(0, 10_000), st.integers(1, 3)), max_size=25)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPS)
def test_any_history_matches_a_list_model(ops: list[tuple[str, int, int]]) -> None:
    """Appends, rewinds, forks, copies and deletes in any order: every live checkpoint of every
    thread reads exactly the messages a copy-everything model says it has."""
    with ThreadStore() as threads:
        check_against_model(threads, ops)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPS)
def test_any_history_matches_a_list_model_on_postgres(pg_database: str,
                                                     ops: list[tuple[str, int, int]]) -> None:
    with ThreadStore(pg_database, schema=f"model{next(_schemas)}") as threads:
        check_against_model(threads, ops)


def check_against_model(threads: ThreadStore, ops: list[tuple[str, int, int]]) -> None:
    """Run ``ops`` on ``threads`` and on plain lists, then compare every checkpoint."""
    first = threads.create()
    model: dict[str, dict[str, list[str]]] = {first.id: {first.checkpoint().id: []}}
    current = first.id
    counter = 0
    for kind, pick, size in ops:
        live = sorted(model)
        if not live:
            break
        current = current if current in model else live[0]
        head = threads.checkpoint(current)
        history = model[current][head.id]
        if kind == "append":
            new = [f"m{counter + i}" for i in range(size)]
            counter += size
            cp = threads.append(current, [Message.user(t) for t in new])
            model[current][cp.id] = history + new
        elif kind == "rewind":
            ids = sorted(model[current])
            target = ids[pick % len(ids)]
            cp = threads.rewind(current, target)
            model[current][cp.id] = model[current][target]
        elif kind in ("fork", "copy"):
            ids = sorted(model[current])
            target = ids[pick % len(ids)]
            make = threads.fork if kind == "fork" else threads.copy
            made = make(current, target)
            model[made.id] = {made.checkpoint().id: model[current][target]}
        elif kind == "switch":
            current = live[pick % len(live)]
        elif kind == "delete" and len(live) > 1:
            threads.delete(current)
            del model[current]
    for thread_id, checkpoints in model.items():
        for checkpoint_id, expected in checkpoints.items():
            got = threads.messages(thread_id, checkpoint_id=checkpoint_id)
            assert texts(got) == expected
            tail = threads.messages(thread_id, checkpoint_id=checkpoint_id, last=2)
            assert texts(tail) == expected[-2:]


def test_same_schema_as_the_postgres_store(pg_database: str) -> None:
    from remem.store.postgres import PostgresStore

    schema = f"shared{next(_schemas)}"
    with PostgresStore(pg_database, schema=schema) as store, \
            ThreadStore(pg_database, schema=schema) as threads:
        store.put(("u1",), "k", {"text": "tea"})
        threads.create("t").append(turn(0))
    with ThreadStore(pg_database, schema=schema) as threads, \
            PostgresStore(pg_database, schema=schema) as store:
        assert texts(threads.thread("t").messages()) == ["q0", "a0"]
        assert store.get(("u1",), "k") is not None


def test_open_and_closed(tmp_path: Path) -> None:
    threads = ThreadStore.open(tmp_path / "t.db")
    threads.create("t")
    threads.close()
    with pytest.raises(StoreError, match="closed"):
        threads.get("t")
    with ThreadStore(tmp_path / "t.db") as again:
        assert again.exists("t")
