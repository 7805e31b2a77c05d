"""ScopedThreads, the tenancy seam of /v1/threads, tested directly on SQLite and PostgreSQL:
a tenant's ids, metadata and errors are its own, and one tenant can never read, list, search,
fork into, change or learn of another's threads."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from remem.errors import InvalidInputError, NotFoundError, StoreError
from remem.llm import ScriptedModel
from remem.messages import Message
from remem.store import KeywordConfig, SQLiteStore
from remem.store.scoped import ScopedStore
from remem.threads import ThreadIndex, ThreadStore
from remem.threads.scoped import TENANT_KEY, ScopedThreads
from tests.conftest import FakeClock

_schemas = itertools.count()


@dataclass
class Tenants:
    base: ThreadStore
    a: ScopedThreads
    b: ScopedThreads
    a_checkpoint: str

    def view(self, tenant: str) -> ScopedThreads:
        return ScopedThreads(self.base, tenant)


def _index(store: SQLiteStore, tenant: str) -> ThreadIndex:
    return ThreadIndex(ScopedStore(store, ("tenants", tenant)))


@pytest.fixture(params=["sqlite", "postgres"])
def tenants(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Tenants]:
    if request.param == "postgres":
        base = ThreadStore(request.getfixturevalue("pg_database"),
                           schema=f"scoped{next(_schemas)}")
    else:
        base = ThreadStore(tmp_path / "threads.db")
    store = SQLiteStore(tmp_path / "index.db", keyword=KeywordConfig(fields=("text",)))
    model = ScriptedModel(default="Ada plans Lisbon.")
    with base, store:
        a = ScopedThreads(base, "alpha", index=_index(store, "alpha"), summarizer=model)
        b = ScopedThreads(base, "beta", index=_index(store, "beta"), summarizer=model)
        a.create("t1", metadata={"user_id": "u1"},
                 messages=[Message.user("alpha secret about Lisbon"),
                           Message.assistant("noted")])
        yield Tenants(base, a, b, a.checkpoint("t1").id)


def test_the_tenant_sees_its_own_ids_and_metadata(tenants: Tenants) -> None:
    a, base = tenants.a, tenants.base
    info = a.get("t1")
    assert (info.thread_id, dict(info.metadata), info.head.thread_id) == (
        "t1", {"user_id": "u1"}, "t1")
    # stored under the tenant, with the tenant in the metadata
    stored = base.get("alpha/t1")
    assert stored.metadata == {"user_id": "u1", TENANT_KEY: "alpha"}
    fork = a.fork("t1", new_thread_id="t2", metadata={"topic": "fork"})
    head = fork.info().head
    assert (head.thread_id, head.metadata["from_thread"]) == ("t2", "t1")
    assert fork.info().metadata == {"user_id": "u1", "topic": "fork"}
    assert [cp.thread_id for cp in a.checkpoints("t1")] == ["t1", "t1"]  # create, append
    assert {t.thread_id for t in a.list_threads()} == {"t1", "t2"}
    assert a.search("Lisbon")[0].thread_id == "t1"
    generated = a.create()
    assert generated.id.startswith("thread_") and base.exists(f"alpha/{generated.id}")
    assert a.messages("t1", last=1)[0].text == "noted"


def test_errors_name_the_tenants_ids(tenants: Tenants) -> None:
    a = tenants.a
    with pytest.raises(NotFoundError) as missing:
        a.get("nope")
    assert str(missing.value).startswith("thread 'nope' does not exist")
    with pytest.raises(NotFoundError) as foreign:
        a.messages("t1", checkpoint_id="ckpt_x")
    assert "of thread 't1'" in str(foreign.value) and "alpha" not in str(foreign.value)
    with pytest.raises(Exception) as taken:
        a.create("t1")
    assert str(taken.value).startswith("thread 't1' already exists")


# every way tenant B could name tenant A's thread: B must get what an unknown id gets
_B_TRIES: dict[str, Callable[[ScopedThreads, str, str], Any]] = {
    "get": lambda b, t, c: b.get(t),
    "thread": lambda b, t, c: b.thread(t),
    "messages": lambda b, t, c: b.messages(t),
    "messages at A's checkpoint": lambda b, t, c: b.messages(t, checkpoint_id=c),
    "checkpoint": lambda b, t, c: b.checkpoint(t, c),
    "checkpoints": lambda b, t, c: b.checkpoints(t),
    "append": lambda b, t, c: b.append(t, "beta was here"),
    "update_state": lambda b, t, c: b.update_state(t, {"x": 1}),
    "set_metadata": lambda b, t, c: b.set_metadata(t, {"x": 1}),
    "rewind": lambda b, t, c: b.rewind(t, c),
    "fork": lambda b, t, c: b.fork(t, new_thread_id="stolen"),
    "copy": lambda b, t, c: b.copy(t, c, new_thread_id="stolen"),
    "compact": lambda b, t, c: b.compact(t),
    "context": lambda b, t, c: b.context(t),
}


@pytest.mark.parametrize("how", list(_B_TRIES))
def test_another_tenant_cannot_reach_a_thread(tenants: Tenants, how: str) -> None:
    before = (tenants.a.get("t1"), tenants.a.messages("t1"), tenants.a.checkpoints("t1"))
    with pytest.raises(NotFoundError) as real:
        _B_TRIES[how](tenants.b, "t1", tenants.a_checkpoint)
    with pytest.raises(NotFoundError) as unknown:
        _B_TRIES[how](tenants.b, "t0", "ckpt_01a0000000000000000000000")
    # the same answer as for an id that exists nowhere: nothing to learn from it
    shown = str(real.value).replace("'t1'", "ID").replace(repr(tenants.a_checkpoint), "CP")
    assert shown == str(unknown.value).replace("'t0'", "ID").replace(
        "'ckpt_01a0000000000000000000000'", "CP")
    assert "alpha" not in str(real.value)
    assert (tenants.a.get("t1"), tenants.a.messages("t1"),
            tenants.a.checkpoints("t1")) == before
    assert not tenants.b.exists("stolen")


def test_another_tenant_cannot_list_search_delete_or_detect(tenants: Tenants) -> None:
    a, b = tenants.a, tenants.b
    for where in (None, {"user_id": "u1"}, {TENANT_KEY: "alpha"},
                  {"$or": [{TENANT_KEY: "alpha"}, {"user_id": "u1"}]}):
        assert b.list_threads(where) == [], where
    assert b.search("alpha secret Lisbon") == []
    assert b.search("alpha secret Lisbon", owner="u1") == []
    assert b.exists("t1") is False
    assert b.delete("t1") is False
    assert a.exists("t1")


def test_the_same_id_in_two_tenants_is_two_threads(tenants: Tenants) -> None:
    a, b = tenants.a, tenants.b
    mine = b.create("t1", messages="beta's own")
    assert [m.text for m in mine.messages()] == ["beta's own"]
    # B's own t1 does not have A's checkpoints either
    with pytest.raises(NotFoundError, match="not a checkpoint of thread 't1'"):
        b.fork("t1", tenants.a_checkpoint, new_thread_id="f")
    b.fork("t1", new_thread_id="f")
    assert a.messages("t1")[0].text == "alpha secret about Lisbon"
    assert not a.exists("f")
    assert b.delete("t1") is True and a.exists("t1")
    assert [t.thread_id for t in b.list_threads()] == ["f"]


def test_reserved_metadata_is_refused(tenants: Tenants) -> None:
    a = tenants.a
    for attempt in (lambda: a.create(metadata={TENANT_KEY: "beta"}),
                    lambda: a.set_metadata("t1", {"_remem_owner": "x"}),
                    lambda: a.fork("t1", metadata={TENANT_KEY: "beta"})):
        with pytest.raises(InvalidInputError, match="reserved by the server"):
            attempt()
    # replacing the metadata keeps the tenant's mark (and the thread listed)
    assert a.set_metadata("t1", {"topic": "x"}, merge=False).metadata == {"topic": "x"}
    assert tenants.base.get("alpha/t1").metadata == {"topic": "x", TENANT_KEY: "alpha"}
    assert [t.thread_id for t in a.list_threads({"topic": "x"})] == ["t1"]


def test_lookalike_tenants_do_not_overlap(tenants: Tenants) -> None:
    # '-' and '.' sort before '/', '0' and letters after: the id range must still be exact
    names = ["alph", "alpha-x", "alpha.x", "alpha0", "alphaz", "alpha_"]
    for name in names:
        tenants.view(name).create("t1", messages=f"{name} thread")
    assert [t.thread_id for t in tenants.a.list_threads()] == ["t1"]
    assert tenants.a.messages("t1")[0].text == "alpha secret about Lisbon"
    for name in names:
        view = tenants.view(name)
        assert [m.text for m in view.messages("t1")] == [f"{name} thread"]
        assert len(view.list_threads()) == 1


def test_sweep_only_sweeps_the_tenants_threads(tmp_path: Path) -> None:
    clock = FakeClock()
    with ThreadStore(tmp_path / "t.db", clock=clock) as base:
        a, b = ScopedThreads(base, "alpha"), ScopedThreads(base, "beta")
        a.create("old", ttl=10)
        b.create("old", ttl=10)
        clock.advance(11)
        assert b.sweep() == 1
        # A's expired thread is invisible, but still stored until A (or the store) sweeps
        assert base.sweep() == 1


def test_ids_and_views(tenants: Tenants) -> None:
    long_id = "x" * 256  # the tenant prefix goes on top of the 256 characters
    assert tenants.a.create(long_id).id == long_id
    assert tenants.a.get(long_id).thread_id == long_id
    with pytest.raises(InvalidInputError, match="tenant must be"):
        ScopedThreads(tenants.base, "a/b")
    tenants.a.close()  # a view closes nothing: the base store still works
    assert tenants.base.exists("alpha/t1")
    assert "tenant='alpha'" in repr(tenants.a)


def test_a_key_outside_the_tenant_is_never_shown(tenants: Tenants) -> None:
    with pytest.raises(StoreError, match="outside tenant 'alpha'"):
        tenants.a._shown("beta/t1")
