"""The registry of reserved roots (:mod:`remem.store.reserved`) and the guarded raw store view
(:mod:`remem.store.guarded`).

What makes the guard impossible to forget: every family is exercised through its own API on
one server store, and every top-level label found afterwards must be registered; the
registry's labels must be what each family uses by default. The view's reads over every root
are checked against plain filtering on each backend (memory, SQLite in memory and on file).
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from remem.embed import FakeEmbedder
from remem.errors import ReservedNamespaceError
from remem.files.permissions import Policy, rules
from remem.llm import ChatRequest, ScriptedModel
from remem.server import ServerConfig, create_app
from remem.server.routes_files import set_file_policy
from remem.store import BaseStore, CountOp, ListNamespacesOp, PutOp, SearchOp, open_store
from remem.store.guarded import SPLIT_LABELS, GuardedStore
from remem.store.memory import InMemoryStore
from remem.store.reserved import (
    APPROVALS,
    BLOCKS,
    BOOKKEEPING,
    EPISODES,
    FILES,
    GOVERNED,
    GRAPH,
    MEMORIES,
    PROMPTS,
    ROOTS,
    SCOPE_ROOTS,
    SERVER,
    TENANTS,
    THREADS,
    is_bookkeeping,
    root_of,
)
from tests.graph.scripts import E, F, answer


def _extract(request: ChatRequest) -> dict[str, Any]:
    """The server's model: a graph extraction for graph ingests, no memories otherwise."""
    text = request.messages[-1].text
    if "Episode:" in text:
        graph = answer([E("Ada"), E("Acme", "organization")],
                       [F("Ada", "works_at", "Acme", "Ada works at Acme")])(request)
        return {**graph, "profile": [], "events": []}
    return {"inserts": [{"memory": {"content": "Lives in Lisbon"}}]}


@pytest.fixture
def exercised(tmp_path: Path) -> Iterator[tuple[Any, str]]:
    """A server on a SQLite file after one tenant used every family through its own API."""
    app = create_app(ServerConfig(db=str(tmp_path / "all.db"), embedder=FakeEmbedder(),
                                  llm=ScriptedModel(default=_extract), mcp=False,
                                  key_cache_seconds=0))
    state = app.state.remem
    set_file_policy(state, Policy(rules([{"effect": "ask", "paths": "/memories/**",
                                          "operations": ["write"]}]), "allow"))
    agent, human = (state.keys.create("acme")[0] for _ in range(2))
    with TestClient(app, headers={"Authorization": f"Bearer {agent}"}) as http:
        def ok(response: Any) -> Any:
            assert response.status_code < 300, response.text
            return response.json()

        added = ok(http.post("/v1/memories", json={"messages": "I drink tea", "user_id": "u",
                                                   "infer": False}))
        memory_id = added["changes"][0]["memory"]["id"]
        ok(http.patch(f"/v1/memories/{memory_id}", json={"content": "I drink coffee"}))
        ok(http.post("/v1/memories", json={"messages": "I moved to Lisbon", "user_id": "v"}))
        ok(http.post("/v1/threads", json={"thread_id": "t1"}))
        ok(http.post("/v1/threads/t1/messages",
                     json={"messages": [{"role": "user", "content": "hello there"}]}))
        ok(http.post("/v1/files/write", json={"path": "/notes/a.md", "content": "x"}))
        parked = ok(http.post("/v1/files/write", json={"path": "/memories/a.md",
                                                       "content": "y"}))
        ok(http.post(f"/v1/approvals/{parked['approval_id']}/approve",
                     headers={"Authorization": f"Bearer {human}"}))
        ok(http.post("/v1/blocks", json={"id": "human", "label": "human", "value": "x"}))
        ok(http.put("/v1/agents/ag/blocks/human"))
        ok(http.post("/v1/prompts", json={"name": "p", "text": "hi {x}"}))
        ok(http.post("/v1/episodes", json={"situation": "s", "action": "a"}))
        ok(http.post("/v1/graph/episodes", json={"user_id": "ada",
                                                 "text": "Ada works at Acme."}))
        ok(http.post("/v1/memories/submit", json={"messages": "I live in Porto",
                                                  "thread_id": "t1", "user_id": "w",
                                                  "delay": 600}))
        ok(http.put("/v1/budgets", json={"user_id": "u", "max_memories": 100}))
        assert ok(http.get("/v1/usage"))["days"]  # the model calls were recorded
        yield state, "acme"
    state.close()


def test_every_label_a_family_writes_is_registered(exercised: tuple[Any, str]) -> None:
    """The test that makes the guard unforgettable: a family writing under a new top-level
    label fails here until the label is in the registry (and so guarded)."""
    from remem.graph.quota import rows_under

    state, tenant = exercised
    base: BaseStore = state.store
    top = {ns[0] for ns in base.list_namespaces(max_depth=1, limit=1000)}
    assert top == {SERVER, TENANTS}
    scope = {ns[2] for ns in base.list_namespaces(prefix=(TENANTS, tenant), max_depth=3,
                                                  limit=1000)}
    assert scope <= SCOPE_ROOTS, scope - SCOPE_ROOTS
    # the exercise reached every family that keeps items (else the check above proves little)
    assert scope == {MEMORIES, BOOKKEEPING, FILES, APPROVALS, BLOCKS, PROMPTS, EPISODES,
                     THREADS}
    # the graph keeps rows of its own tables, every one of them under its label
    everything = rows_under(base, (TENANTS, tenant))
    under_graph = rows_under(base, (TENANTS, tenant, GRAPH))
    assert everything is not None and everything[0] > 0 and under_graph == everything


def test_the_registry_is_what_each_family_uses_by_default() -> None:
    from remem.cli.blocks import blocks_group
    from remem.episodic.episodes import EpisodeStore
    from remem.files import StoreFileBackend
    from remem.graph import Graph
    from remem.memory.namespaces import scope_namespace
    from remem.memory.records import RESERVED_LABEL, history_namespace
    from remem.procedural.prompts import PromptRegistry
    from remem.server import quotas
    from remem.server.keys import KEYS_NAMESPACE, tenant_prefix
    from remem.server.routes_approvals import approvals_for
    from remem.server.routes_blocks import blocks_for
    from remem.threads.search import ThreadIndex
    from remem.ui.web import SECRET_NAMESPACE

    store = open_store(":memory:")
    assert scope_namespace(user_id="u")[0] == MEMORIES
    assert RESERVED_LABEL == BOOKKEEPING == quotas.BOOKKEEPING
    assert history_namespace(("memories",))[0] == BOOKKEEPING
    assert StoreFileBackend(store).namespace == (FILES,)
    approvals = approvals_for(store, "t")
    assert approvals.store.namespace == (APPROVALS, "t")  # type: ignore[attr-defined]
    assert approvals.files.namespace == (FILES, "t")  # type: ignore[attr-defined]
    assert blocks_for(store).files.namespace == (BLOCKS,)  # type: ignore[attr-defined]
    namespace_option = next(p for p in blocks_group.commands["list"].params
                            if p.name == "namespace")
    assert namespace_option.default == BLOCKS
    assert PromptRegistry(store).prefix == (PROMPTS,)
    assert EpisodeStore(store).prefix == (EPISODES,)
    assert ThreadIndex(store).namespace == (THREADS,)
    graph = Graph.in_memory()
    assert graph.namespace == (GRAPH,)
    graph.close()
    assert KEYS_NAMESPACE[0] == SECRET_NAMESPACE[0] == SERVER
    assert tenant_prefix("acme")[0] == TENANTS
    assert {root.label for root in ROOTS.values()
            if root.governed_reads and not root.server_only} == GOVERNED == {FILES, APPROVALS}
    assert ROOTS[SERVER].governed_reads  # keys and secrets: in a whole store, admins only
    store.close()


def test_root_of_reads_a_scope_and_a_whole_store() -> None:
    assert root_of(("files", "default")) == (ROOTS[FILES], None)
    assert root_of(("filesx",)) is None and root_of(()) is None
    assert root_of((SERVER, "api_keys")) is None  # a tenant may name it: it is only its own
    assert root_of((SERVER, "api_keys"), whole_store=True) == (ROOTS[SERVER], None)
    assert root_of((TENANTS, "acme", "_remem", "ids"), whole_store=True) == (
        ROOTS[BOOKKEEPING], "acme")
    assert root_of((TENANTS, "acme", "notes"), whole_store=True) is None
    assert root_of((TENANTS, "acme"), whole_store=True) == (ROOTS[TENANTS], "acme")
    assert is_bookkeeping((TENANTS, "a", BOOKKEEPING, "heads"), whole_store=True)
    assert not is_bookkeeping((TENANTS, "a", BOOKKEEPING, "heads"))
    assert not is_bookkeeping((FILES,))


def test_the_store_routes_reach_the_store_only_through_the_guard() -> None:
    """``/v1/store`` cannot reach the unguarded store by accident: it never calls
    ``store_for`` (nor touches ``state.store``)."""
    from remem.server import routes_store

    tree = ast.parse(inspect.getsource(routes_store))
    called = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    assert "raw_store_for" in called
    assert not called & {"store_for", "memory_for", "store"}


# -- the view over each backend -----------------------------------------------------------------


@pytest.fixture(params=["memory", "sqlite", "sqlite-file"])
def inner(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseStore]:
    store: BaseStore = (InMemoryStore() if request.param == "memory" else open_store(
        ":memory:" if request.param == "sqlite" else str(tmp_path / "g.db")))
    # newest last: files and approvals interleave with raw items, most of them newest
    clock = iter(range(1_000, 10_000))
    for n in range(40):
        where = ((FILES, "default", "files", f"/d{n % 3}") if n % 4 in (1, 2) else
                 (APPROVALS, "default") if n % 8 == 0 else ("notes", f"n{n % 2}"))
        store.batch([PutOp(where, f"k{n:02}", {"text": f"tea {n}", "n": n},
                           created_at=float(next(clock)), updated_at=float(next(clock)))])
    yield store
    store.close()


def _plain(store: BaseStore, **search: Any) -> list[Any]:
    """What a non-admin should see: the search over everything, governed records dropped."""
    return [(i.namespace, i.key) for i in store.search((), limit=1000, **search)
            if i.namespace[0] not in GOVERNED]


def test_a_spanning_search_count_and_listing_leave_governed_roots_out(inner: BaseStore) -> None:
    raw = GuardedStore(inner)
    expected = _plain(inner)
    assert len(expected) == 15 and inner.count() == 40
    for offset, limit in ((0, 3), (2, 3), (5, 10), (14, 1), (15, 5), (0, 15)):
        page = [(i.namespace, i.key) for i in raw.search(limit=limit, offset=offset)]
        assert page == expected[offset:offset + limit], (offset, limit)
    ranked = _plain(inner, query="tea 7")
    assert [(i.namespace, i.key) for i in raw.search(query="tea 7", limit=4)] == ranked[:4]
    assert raw.count() == 15 and raw.count(filter={"n": {"$lt": 20}}) == len(
        [n for n in range(20) if n % 4 == 3 or n % 8 == 4])
    names = [ns for ns in inner.list_namespaces(limit=1000) if ns[0] not in GOVERNED]
    assert raw.list_namespaces() == names == [("notes", "n0"), ("notes", "n1")]
    assert raw.list_namespaces(prefix=("*",), max_depth=1) == [("notes",)]
    assert raw.list_namespaces(offset=1, limit=1) == [("notes", "n1")]
    assert [i.key for i in raw.iter_items()] == [k for ns, k in sorted(expected)]
    # an admin's view shows everything, and the operator's whole-store view too
    admin = GuardedStore(inner, admin=True)
    assert admin.count() == inner.count() == 40
    assert len(admin.search(limit=100)) == 40


@pytest.mark.parametrize("governed", [False, True])
def test_a_newest_first_search_of_a_scope_with_nothing_readable_is_empty(
        governed: bool) -> None:
    """No readable label means no per-label search to send: the page is empty (it was an
    IndexError, a 500 on /v1/store/search for a tenant holding nothing but files)."""
    store = InMemoryStore()
    if governed:
        store.put((FILES, "default", "files", "/"), "a.md", {"text": "secret"})
    raw = GuardedStore(store)
    assert raw.search(limit=5) == []
    assert [r for r in raw.batch([SearchOp((), limit=3), CountOp(())])] == [[], 0]


def test_a_ranked_search_reads_past_at_most_hidden_window_governed_records() -> None:
    store = open_store(":memory:")
    for n in range(15):  # five notes, then ten files that rank above them
        where, text = (("notes",), "tea") if n < 5 else ((FILES, "d", "files", "/d"),
                                                          "tea tea tea")
        store.put(where, f"k{n:02}", {"text": text})
    assert {i.namespace[0] for i in store.search(query="tea", limit=10)} == {FILES}
    wide = GuardedStore(store).search(query="tea", limit=2)
    assert [i.namespace for i in wide] == [("notes",), ("notes",)]
    # past three files at most: the page comes back short (documented), never with a file
    assert GuardedStore(store, hidden_window=3).search(query="tea", limit=2) == []
    assert [i.key for i in GuardedStore(store, hidden_window=10).search(
        query="tea", limit=2)] == [i.key for i in wide]
    # newest first, the search runs per readable label: exact, whatever the window
    assert [i.key for i in GuardedStore(store, hidden_window=1).search(limit=3)] == [
        "k04", "k03", "k02"]
    store.close()


def test_a_newest_first_search_over_many_labels_reads_a_window() -> None:
    store = open_store(":memory:")
    for n in range(SPLIT_LABELS + 6):  # more labels than a search is split into
        store.put((f"l{n:03}",), "k", {"text": "x"}, index=False)
    for n in range(30):
        store.put((FILES, "d"), f"f{n}", {"text": "x"}, index=False)
    expected = [(i.namespace, i.key) for i in store.search(limit=200)
                if i.namespace[0] != FILES]
    got = GuardedStore(store).search(limit=5, offset=3)
    assert [(i.namespace, i.key) for i in got] == expected[3:8]
    store.close()


def test_writes_under_any_root_are_refused_before_anything_runs(inner: BaseStore) -> None:
    before = inner.count()
    for admin in (False, True):
        raw = GuardedStore(inner, admin=admin)
        for label in sorted(SCOPE_ROOTS):
            with pytest.raises(ReservedNamespaceError) as refused:
                raw.batch([PutOp(("notes", "ok"), "w", {"text": "x"}),
                           PutOp((label, "x"), "k", {"text": "y"})])
            assert refused.value.root == label and refused.value.use in str(refused.value)
            assert refused.value.family == ROOTS[label].family
            with pytest.raises(ReservedNamespaceError):
                raw.delete((label, "x"), "k")
    assert inner.count() == before  # the allowed put of each refused batch was not written


def test_reads_of_governed_roots_are_refused_unless_admin(inner: BaseStore) -> None:
    raw, admin = GuardedStore(inner), GuardedStore(inner, admin=True)
    where = (FILES, "default", "files", "/d1")
    for read in (lambda s: s.get(where, "k01"), lambda s: s.search((FILES,)),
                 lambda s: s.count((APPROVALS, "default")),
                 lambda s: s.list_namespaces(prefix=(FILES, "*")),
                 lambda s: list(s.iter_items((FILES,))), lambda s: s.ttl_of(where, "k01")):
        with pytest.raises(ReservedNamespaceError, match="admin keys only") as refused:
            read(raw)
        assert refused.value.root in GOVERNED and "/v1/" in refused.value.use
        read(admin)  # no error
    assert admin.get(where, "k01").value["n"] == 1  # type: ignore[union-attr]
    # roots without a read policy stay readable (the blocks, the bookkeeping...)
    inner.put((BLOCKS, "files"), "b", {"text": "block"})
    assert raw.get((BLOCKS, "files"), "b").value == {"text": "block"}  # type: ignore[union-attr]


def test_a_batch_sees_its_own_writes_through_a_spanning_read(inner: BaseStore) -> None:
    raw = GuardedStore(inner)
    results = raw.batch([PutOp(("notes", "new"), "fresh", {"text": "new"}),
                         CountOp(()), SearchOp((), limit=1),
                         ListNamespacesOp(None, None, 1, 10, 0)])
    assert results[1] == 16
    assert [(i.namespace, i.key) for i in results[2]] == [(("notes", "new"), "fresh")]
    assert results[3] == [("notes",)]


def test_a_whole_store_view_checks_inside_each_tenant() -> None:
    """``remem store`` (admin) and a keyless server's local tenant (not) see the whole
    store: the server's own labels and every tenant's roots are checked there."""
    inner = InMemoryStore()
    for namespace in ((TENANTS, "acme", "notes"), (TENANTS, "acme", FILES, "default"),
                      (TENANTS, "beta", APPROVALS, "default"), (SERVER, "api_keys"),
                      (FILES, "default"), ("notes",), (TENANTS, "beta", "x")):
        inner.put(namespace, "k", {"text": "x"})
    for admin in (False, True):
        whole = GuardedStore(inner, admin=admin, whole_store=True)
        whole.put((TENANTS, "acme", "notes"), "k2", {"text": "x"})
        for namespace in ((TENANTS, "acme", FILES, "default"), (TENANTS, "acme"),
                          (SERVER, "api_keys"), (BOOKKEEPING, "ids"), (MEMORIES,)):
            with pytest.raises(ReservedNamespaceError):
                whole.put(namespace, "k", {})
    raw = GuardedStore(inner, whole_store=True)
    for namespace in ((TENANTS, "acme", FILES, "default"), (SERVER, "api_keys"),
                      (FILES, "default")):
        with pytest.raises(ReservedNamespaceError, match="admin keys only"):
            raw.get(namespace, "k")
    visible = [(TENANTS, "acme", "notes"), (TENANTS, "beta", "x"), ("notes",)]
    assert sorted(i.namespace for i in raw.search(limit=100)) == sorted(
        [*visible, (TENANTS, "acme", "notes")])  # k and k2
    assert raw.count() == 4 and raw.count((TENANTS,)) == 3 and raw.count((TENANTS, "beta")) == 1
    assert raw.list_namespaces() == sorted(visible)
    assert raw.list_namespaces(prefix=(TENANTS, "*", "*")) == sorted(visible[:2])
    admin = GuardedStore(inner, admin=True, whole_store=True)
    assert admin.count() == 8 and len(admin.list_namespaces()) == 7
