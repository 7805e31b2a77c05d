"""PostgreSQL-specific behaviour: setup, migrations, resilience, timeouts, configuration
errors, and complete namespace-scoped vector search. (Store semantics shared with the other
backends are in ``tests/conformance``.)"""

from __future__ import annotations

import itertools
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from remem.db.migrations import Migration, applied_postgres, apply_postgres
from remem.embed import FakeEmbedder
from remem.errors import ConfigError, IndexConfigError, MigrationError, StoreError
from remem.store import IndexConfig, PutOp, open_store, stored_vector_models
from remem.store.migrations.postgres import POSTGRES_MIGRATIONS
from remem.store.postgres import PostgresStore, VectorSearch

_schemas = itertools.count()


@pytest.fixture
def make(pg_database: str) -> Iterator[Callable[..., PostgresStore]]:
    """Stores in fresh schemas of the module's database, closed after the test."""
    opened: list[PostgresStore] = []

    def factory(dsn: str = pg_database, **kwargs: Any) -> PostgresStore:
        kwargs.setdefault("schema", f"t{next(_schemas)}")
        store = PostgresStore(dsn, **kwargs)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


def test_constructor_does_no_io() -> None:
    store = PostgresStore("postgresql://nobody@127.0.0.1:1/none", connect_timeout=1)
    assert store.database._pool is None  # nothing was opened
    with pytest.raises(ConfigError, match="plain identifier"):
        PostgresStore("postgresql://x/y", schema='bad"; drop')


def test_open_store_takes_a_dsn(pg_database: str) -> None:
    store = open_store(pg_database, schema=f"t{next(_schemas)}")
    try:
        assert isinstance(store, PostgresStore)
        store.put(("a",), "k", {"x": 1})
        assert store.get(("a",), "k").value == {"x": 1}  # type: ignore[union-attr]
    finally:
        store.close()


def test_strict_open_without_an_embedder_names_the_model_of_the_vectors(
        pg_database: str) -> None:
    """As on SQLite: a schema holding vectors opened without an embedder is refused by a
    strict open, and the message names the model the vectors were made with."""
    schema = f"t{next(_schemas)}"
    embedder = FakeEmbedder(32)
    with open_store(pg_database, schema=schema, index=IndexConfig(embedder)) as store:
        store.put(("a",), "k", {"text": "green tea"})
    with pytest.raises(IndexConfigError, match=f"vectors made with '{embedder.model}'"):
        open_store(pg_database, schema=schema, strict=True)
    with open_store(pg_database, schema=schema) as plain:  # not strict: it opens
        assert stored_vector_models(plain) == [embedder.model]
        assert plain.get(("a",), "k") is not None


def test_a_dsn_without_the_extra_names_the_install_command(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg now fails
    with pytest.raises(ConfigError, match=r"pip install 'remem\[postgres\]'"):
        open_store("postgresql://user@localhost/db")


def test_setup_is_idempotent_and_safe_when_servers_start_at_once(
        make: Callable[..., PostgresStore]) -> None:
    schema = f"t{next(_schemas)}"
    stores = [make(schema=schema, index=IndexConfig(FakeEmbedder(8))) for _ in range(8)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(stores))

    def start(store: PostgresStore) -> None:
        barrier.wait()
        try:
            store.setup()
            store.setup()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    import psycopg

    with psycopg.connect(stores[0].dsn, autocommit=True) as conn:
        assert applied_postgres(conn, f'"{schema}"') == [m.name for m in POSTGRES_MIGRATIONS]
        models = conn.execute(f'SELECT count(*) FROM "{schema}".embedding_models').fetchone()
        assert models == (1,)


def test_migrations_upgrade_an_old_schema_and_refuse_a_newer_one(pg_database: str) -> None:
    import psycopg

    schema = f"t{next(_schemas)}"
    quoted = f'"{schema}"'
    step = Migration("m999_test_column", (
        "ALTER TABLE {s}.items ADD COLUMN test_note text",))
    with psycopg.connect(pg_database, autocommit=True) as conn:
        assert apply_postgres(conn, schema, quoted, POSTGRES_MIGRATIONS) == [
            m.name for m in POSTGRES_MIGRATIONS]
        conn.execute(f"INSERT INTO {quoted}.items (ns, key, value, doc, created_at, updated_at) "
                     "VALUES ('a\x1f', 'k', '{}', '{}', 1, 1)")
        assert apply_postgres(conn, schema, quoted, (*POSTGRES_MIGRATIONS, step)) == [
            "m999_test_column"]
        assert conn.execute(f"SELECT key, test_note FROM {quoted}.items").fetchall() == [
            ("k", None)]  # the old row survived the upgrade
        with pytest.raises(MigrationError, match="newer remem"):
            apply_postgres(conn, schema, quoted, POSTGRES_MIGRATIONS)


def test_a_restarted_server_costs_no_error(local_postgres_factory: Callable[[], Any]) -> None:
    server = local_postgres_factory()
    store = PostgresStore(server.dsn(), pool_min_size=2, pool_max_size=4)
    try:
        store.put(("a",), "before", {"n": 1})
        for mode in ("fast", "immediate"):  # a clean restart, then a crash-like one
            server.restart(mode=mode)
            assert store.get(("a",), "before").value == {"n": 1}  # type: ignore[union-attr]
            store.put(("a",), f"after-{mode}", {"n": 2})
        assert {i.key for i in store.search(("a",))} == {"before", "after-fast",
                                                         "after-immediate"}
        port = server.port()
        server.stop(mode="immediate")

        def start_later() -> None:
            server.start(port=port)

        timer = threading.Timer(1.0, start_later)  # the server is down when the call starts
        timer.start()
        try:
            assert store.get(("a",), "before") is not None
        finally:
            timer.join()
    finally:
        store.close()


def test_unreachable_server_is_a_store_error_naming_the_server() -> None:
    store = PostgresStore("postgresql://postgres@127.0.0.1:9/x", connect_timeout=1)
    with pytest.raises(StoreError, match=r"127\.0\.0\.1:9"):
        store.setup()


def test_statement_timeout_is_a_store_error(make: Callable[..., PostgresStore]) -> None:
    import psycopg

    store = make(statement_timeout=0.2)
    store.put(("a",), "k", {"n": 1})
    with psycopg.connect(store.dsn, autocommit=True) as blocker, blocker.transaction():
        blocker.execute(f'SELECT 1 FROM "{store.schema}".items FOR UPDATE')
        with pytest.raises(StoreError, match="statement_timeout"):
            # the second put waits on the row lock past the timeout; the batch is one
            # transaction, so the first put is rolled back with it
            store.batch([PutOp(("a",), "new", {"n": 1}), PutOp(("a",), "k", {"n": 2})])
    assert store.get(("a",), "new") is None
    store.put(("a",), "k", {"n": 3})
    assert store.get(("a",), "k").value == {"n": 3}  # type: ignore[union-attr]


def test_prepared_statements_can_be_turned_off_for_pgbouncer(
        make: Callable[..., PostgresStore]) -> None:
    store = make(prepare_threshold=None, index=IndexConfig(FakeEmbedder(8)))
    for round_ in range(8):  # more rounds than psycopg's default threshold of 5
        store.put(("a",), f"k{round_}", {"text": f"tea {round_}"})
        assert len(store.search(("a",), query="tea", limit=3)) == min(3, round_ + 1)
    assert store.database._pool is not None
    with store.database._pool.connection() as conn:
        assert conn.prepare_threshold is None


# -- namespace-scoped and filtered vector search ---------------------------------------------

DIMS = 24
USERS = 100


class _Vectors(FakeEmbedder):
    """Documents are "v:<seed>"; each embeds to a fixed random unit vector in clusters, so
    neighbours are ambiguous enough for an approximate index to make mistakes."""

    def __init__(self) -> None:
        super().__init__(DIMS)
        rng = np.random.default_rng(7)
        self.centres = rng.normal(size=(20, DIMS)).astype(np.float32)

    def _vector(self, text: str) -> np.ndarray:
        seed = int(text.split(":")[1])
        rng = np.random.default_rng(seed)
        v = self.centres[seed % 20] + 0.6 * rng.normal(size=DIMS).astype(np.float32)
        return (v / np.linalg.norm(v)).astype(np.float32)

    def embed_documents(self, texts: Any) -> np.ndarray:
        return np.stack([self._vector(t) for t in texts])

    def embed_queries(self, texts: Any) -> np.ndarray:
        return self.embed_documents(texts)


@pytest.fixture(scope="module")
def loaded(pg_database: str) -> Iterator[tuple[str, str]]:
    """10,000 items: 100 users of 99 or 100 items (1% each), one user with 10 (0.1%);
    ``group`` is 0-4 (a filter on ``group < 2`` keeps 40%)."""
    schema = "scoped"
    # loaded without the index (method="exact"), which the first HNSW store then builds in
    # one pass: a bulk build is several times faster than 10,000 single inserts
    store = PostgresStore(pg_database, schema=schema, vector=VectorSearch(method="exact"),
                          index=IndexConfig(_Vectors(), fields=("text",)), keyword=False)
    ops = []
    for n in range(10_000):
        user = "rare" if n < 10 else f"u{n % USERS}"
        ops.append(PutOp(("users", user), f"k{n}", {"text": f"v:{n}", "group": (n // 100) % 5}))
    for start in range(0, len(ops), 1000):
        store.batch(ops[start:start + 1000])
    store.close()
    yield pg_database, schema


def _search(dsn: str, schema: str, vector: VectorSearch, prefix: tuple[str, ...],
            flt: dict[str, Any] | None, queries: range) -> list[list[str]]:
    store = PostgresStore(dsn, schema=schema, index=IndexConfig(_Vectors(), fields=("text",)),
                          keyword=False, vector=vector)
    try:
        return [[h.key for h in store.search(prefix, query=f"v:{q}", filter=flt, limit=10)]
                for q in queries]
    finally:
        store.close()


@pytest.mark.parametrize("prefix,flt,expected_size", [
    (("users", "u7"), None, 10),  # one user's namespace: 1% of the rows
    (("users", "rare"), None, 10),  # 0.1% of the rows: exactly 10 items
    (("users", "u7"), {"group": {"$lt": 2}}, 10),
    (("users",), {"group": {"$lt": 2}}, 10),  # 40% selectivity over everything
    (("users",), {"group": 3, "text": {"$in": ["v:303", "v:308", "v:313"]}}, 3),  # 0.03%
])
@pytest.mark.parametrize("exact_below", [10_000, 0])  # the default, and the index path only
def test_scoped_and_filtered_search_is_complete(loaded: tuple[str, str], prefix: Any,
                                                flt: Any, expected_size: int,
                                                exact_below: int) -> None:
    dsn, schema = loaded
    queries = range(20_000, 20_012)
    truth = _search(dsn, schema, VectorSearch(method="exact"), prefix, flt, queries)
    got = _search(dsn, schema, VectorSearch(exact_below=exact_below), prefix, flt, queries)
    assert all(len(page) == expected_size for page in truth)
    assert all(len(page) == expected_size for page in got)  # the full k, every query
    recall = np.mean([len(set(g) & set(t)) / len(t) for g, t in zip(got, truth, strict=True)])
    assert recall >= 0.95, recall
