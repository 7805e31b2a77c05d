"""SQLite-only behaviour: migrations, persistence of the index config, several connections,
threads and processes writing at once, and a process killed in the middle of a batch."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import closing
from pathlib import Path

import pytest

from remem.db.migrations import Migration, applied_sqlite, apply_sqlite
from remem.embed import FakeEmbedder
from remem.errors import IndexConfigError, MigrationError, StoreError, UsageError
from remem.retrieval import DefaultTokenizer
from remem.store import IndexConfig, KeywordConfig, PutOp, SQLiteStore
from remem.store.migrations.sqlite import SQLITE_MIGRATIONS

ROOT = Path(__file__).resolve().parents[2]


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    return env


def test_migrations_are_recorded(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "m.db") as store:
        store.put(("a",), "k", {"v": 1})
    with closing(sqlite3.connect(tmp_path / "m.db")) as conn:
        assert applied_sqlite(conn) == [m.name for m in SQLITE_MIGRATIONS]
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_upgrade_from_the_first_schema_keeps_data(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    assert apply_sqlite(conn, SQLITE_MIGRATIONS[:1]) == ["m001_items"]
    conn.execute(
        "INSERT INTO items (ns, key, value, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
        ("users\x1fu1\x1f", "k", json.dumps({"text": "old tea"}), 1.0, 2.0),
    )
    conn.close()
    with SQLiteStore(path, index=IndexConfig(FakeEmbedder(16), fields=("text",))) as store:
        old = store.get(("users", "u1"), "k")
        assert old is not None and old.value == {"text": "old tea"}
        store.put(("users", "u1"), "new", {"text": "new tea"})
        # the old item got its keywords on upgrade (no vector: it was never embedded)
        hits = store.search(("users",), query="new tea")
        assert [h.key for h in hits] == ["new", "k"]
        assert set(hits[1].details) == {"keyword"}
    with closing(sqlite3.connect(path)) as conn:
        assert applied_sqlite(conn) == [m.name for m in SQLITE_MIGRATIONS]


def test_upgrade_gives_old_items_their_keywords(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    apply_sqlite(conn, SQLITE_MIGRATIONS[:2])
    conn.executemany(
        "INSERT INTO items (ns, key, value, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
        [("u\x1f", f"k{i}", json.dumps({"text": f"old memory {i} 北京烤鸭"}), 1.0, 2.0)
         for i in range(2500)],
    )
    conn.close()
    with SQLiteStore(path) as store:
        hits = store.search(("u",), query="memory 1234", limit=3)
        assert hits[0].key == "k1234"
        assert len(store.search(("u",), query="烤鸭", limit=5000)) == 2500
    with closing(sqlite3.connect(path)) as conn:
        marker = conn.execute("SELECT 1 FROM remem_meta WHERE key = 'keyword_backfill'")
        assert marker.fetchone() is None


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    conn = sqlite3.connect(path, isolation_level=None)
    apply_sqlite(conn, [*SQLITE_MIGRATIONS, Migration("m999_future", ())])
    conn.close()
    with pytest.raises(MigrationError, match="newer remem"):
        SQLiteStore(path).setup()


def test_vectors_of_another_model_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "v.db"
    with SQLiteStore(path, index=IndexConfig(FakeEmbedder(16), fields=("text",))) as store:
        store.put(("a",), "k", {"text": "tea"})
    with pytest.raises(IndexConfigError, match="fake-16"):
        SQLiteStore(path, index=IndexConfig(FakeEmbedder(32), fields=("text",))).setup()
    with pytest.raises(IndexConfigError, match="other-model"):
        SQLiteStore(path, index=IndexConfig(FakeEmbedder(16, model="other-model"))).setup()
    with SQLiteStore(path, index=IndexConfig(FakeEmbedder(16), fields=("text",))) as store:
        assert [h.key for h in store.search(("a",), query="tea")] == ["k"]


def test_terms_of_another_tokenizer_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "k.db"
    with SQLiteStore(path) as store:
        store.put(("a",), "k", {"text": "running dogs"})
    unstemmed = KeywordConfig(tokenizer=DefaultTokenizer(stem=False))
    with pytest.raises(IndexConfigError, match="remem-v1"):
        SQLiteStore(path, keyword=unstemmed).setup()
    with SQLiteStore(tmp_path / "fresh.db", keyword=unstemmed) as fresh:
        fresh.put(("a",), "k", {"text": "running dogs"})
        assert fresh.search(("a",), query="run dog") == []  # no stemming: no match
        assert [h.key for h in fresh.search(("a",), query="running")] == ["k"]


def test_embedding_cache_survives_reopening_and_is_shared(tmp_path: Path) -> None:
    path = tmp_path / "cache.db"
    first = FakeEmbedder(16)
    with SQLiteStore(path, index=IndexConfig(first, fields=("text",))) as store:
        store.batch([PutOp(("a",), f"k{i}", {"text": f"memory number {i}"}) for i in range(50)])
    assert first.texts_embedded == 50
    second = FakeEmbedder(16)
    with SQLiteStore(path, index=IndexConfig(second, fields=("text",))) as store:
        # a re-import of the same texts under other keys embeds nothing
        store.batch([PutOp(("b",), f"k{i}", {"text": f"memory number {i}"}) for i in range(50)])
        store.put(("b",), "new", {"text": "a new text"})
        assert second.texts_embedded == 1
        assert store.embed_counts == {"embedded": 1, "cached": 50}
        hits = store.search(("b",), query="memory number 7", mode="vector", limit=1)
        assert hits[0].key == "k7" and hits[0].score == pytest.approx(1.0, abs=1e-5)


def test_reindex_without_an_embedder_refuses_to_drop_vectors(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    with SQLiteStore(path, index=IndexConfig(FakeEmbedder(16), fields=("text",))) as store:
        store.put(("a",), "k", {"text": "tea"})
    with SQLiteStore(path) as plain, pytest.raises(UsageError, match="drop every stored"):
        plain.reindex()
    with SQLiteStore(path, index=IndexConfig(FakeEmbedder(16), fields=("text",))) as store:
        assert [h.key for h in store.search(("a",), query="tea", mode="vector")] == ["k"]


def test_two_stores_on_one_file_see_each_others_vectors(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    index = IndexConfig(FakeEmbedder(16), fields=("text",))
    with SQLiteStore(path, index=index) as one, SQLiteStore(path, index=index) as two:
        one.put(("a",), "k1", {"text": "green tea"})
        assert [h.key for h in two.search(("a",), query="green tea")] == ["k1"]  # cache built
        one.put(("a",), "k2", {"text": "green tea"})
        one.delete(("a",), "k1")
        one.put(("a",), "k3", {"text": "black coffee"})
        assert [h.key for h in two.search(("a",), query="green tea", limit=5)] == ["k2", "k3"]
        assert [h.key for h in two.search(("a",), query="black coffee", limit=1)] == ["k3"]


def test_threads_write_and_read_at_once(tmp_path: Path) -> None:
    index = IndexConfig(FakeEmbedder(16), fields=("text",))
    errors: list[BaseException] = []
    with SQLiteStore(tmp_path / "t.db", index=index) as store:
        def worker(n: int) -> None:
            try:
                for i in range(100):
                    store.put(("t", str(n)), f"k{i}", {"text": f"item {i} of {n}"})
                    if i % 10 == 0:
                        store.search(("t",), query=f"item {i}", limit=3)
                        store.search(("t", str(n)), filter={"text": {"$contains": "item"}})
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert sum(1 for _ in store.iter_items()) == 800
        assert len(store.search(("t",), query="item 5 of 3", limit=50)) == 50


_WRITER = """
import sys
from remem.store import SQLiteStore
path, tag, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
with SQLiteStore(path) as store:
    for i in range(count):
        store.put(("p", tag), f"k{i}", {"i": i, "tag": tag})
print("done", flush=True)
"""


@pytest.mark.slow
def test_two_processes_write_10000_items_each(tmp_path: Path) -> None:
    path = tmp_path / "procs.db"
    SQLiteStore.open(path).close()
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(path), tag, "10000"],
                         env=_child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
        for tag in ("a", "b")
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert out.strip() == "done"
    with SQLiteStore(path) as store:
        for tag in ("a", "b"):
            items = list(store.iter_items(("p", tag)))
            assert len(items) == 10000
            assert sorted(i.value["i"] for i in items) == list(range(10000))


_CRASHER = """
import sys
from remem.store import PutOp, SQLiteStore
path = sys.argv[1]
store = SQLiteStore(path)
for i in range(200):
    store.put(("acked",), f"k{i}", {"i": i})
    print(f"ack {i}", flush=True)
ops = [PutOp(("batch",), f"k{i}", {"i": i, "pad": "x" * 200}) for i in range(200000)]
print("batch-start", flush=True)
store.batch(ops)
print("batch-done", flush=True)
"""


@pytest.mark.slow
def test_kill_9_mid_batch_leaves_batch_all_or_nothing(tmp_path: Path) -> None:
    path = tmp_path / "crash.db"
    with subprocess.Popen([sys.executable, "-c", _CRASHER, str(path)], env=_child_env(),
                          stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        acked = -1
        for line in proc.stdout:
            if line.startswith("ack "):
                acked = int(line.split()[1])
            if line.strip() == "batch-start":
                break
        time.sleep(0.5)  # the 200k-item batch is now being written
        proc.send_signal(signal.SIGKILL)
        rest = proc.stdout.read()
        proc.wait(timeout=30)
    assert "batch-done" not in rest, "the batch finished before the kill; make it larger"
    assert acked == 199
    with SQLiteStore(path) as store:
        assert store.batch([]) == []
        assert len(list(store.iter_items(("acked",)))) == 200
        assert len(list(store.iter_items(("batch",)))) in (0, 200000)
        with closing(sqlite3.connect(path)) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_file_that_is_not_a_database_raises_store_error(tmp_path: Path) -> None:
    path = tmp_path / "junk.db"
    path.write_text("not a database " * 100)
    with pytest.raises(StoreError, match=r"junk\.db.*not a database"):
        SQLiteStore(path).setup()


def test_lock_timeouts_raise_store_error_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "locked.db"
    SQLiteStore.open(path).close()
    with closing(sqlite3.connect(path, isolation_level=None)) as holder:
        holder.execute("BEGIN IMMEDIATE")
        store = SQLiteStore(path, busy_timeout=0.05)
        with pytest.raises(StoreError, match="busy_timeout"):
            store.put(("a",), "k", {"v": 1})
        store.close()
        holder.execute("ROLLBACK")


def test_keyword_search_reads_small_scopes_item_by_item_with_the_same_results(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A prefix of few items is searched item by item, a large one through the terms'
    postings; both plans give the same hits and scores (forced here both ways), before and
    after the recent postings move into the term-ordered table."""
    import random

    from remem.store import sqlite as sqlite_module
    from remem.store import sqlite_postings

    words = ["tea", "coffee", "paris", "berlin", "music", "garden", "train", "piano", "chess",
             "茶", "咖啡", "花园"]
    rng = random.Random(7)
    store = SQLiteStore(str(tmp_path / "kw.db"), keyword=KeywordConfig(fields=("text",)))
    store.setup()
    store.batch([PutOp(("users", f"u{i % 20}"), f"k{i}",
                       {"text": " ".join(rng.choice(words) for _ in range(5)),
                        "n": i % 3})
                 for i in range(600)])
    searches = [(("users", "u3"), "tea garden", None), (("users",), "咖啡 chess", None),
                (("users", "u11"), "paris", {"n": 1}), (("users", "u0"), "nothing here", None)]

    def run() -> list[list[tuple[str, float]]]:
        return [[(h.key, h.score) for h in store.search(p, query=q, filter=f, limit=50,
                                                        mode="keyword")]
                for p, q, f in searches]

    by_items = run()
    monkeypatch.setattr(sqlite_module, "_SMALL_KEYWORD_SCOPE", 0)  # postings first always
    by_postings = run()
    # the same once the recent postings were moved into the term-ordered table
    monkeypatch.setattr(sqlite_postings, "RECENT_POSTINGS", 1)
    monkeypatch.setattr(sqlite_postings, "RECENT_PER_ITEM", 0)
    store.put(("other",), "k", {"text": "tea"})
    merged = run()
    monkeypatch.setattr(sqlite_module, "_SMALL_KEYWORD_SCOPE", 2000)
    merged_by_items = run()
    with closing(sqlite3.connect(tmp_path / "kw.db")) as conn:
        assert conn.execute("SELECT count(*) FROM recent_postings").fetchone() == (0,)
    store.close()
    assert by_items == by_postings == merged == merged_by_items
    assert all(by_items[:3]) and by_items[3] == []


def test_keyword_postings_read_their_items_from_the_covering_index(tmp_path: Path) -> None:
    """The postings query of a large scope joins each posting to its item through
    ``items_postings_cover`` (m007), never the table row, whose large value would be walked
    page by page; a value filter is not in that query (it is checked on the best few)."""
    from remem.store.sqlite_sql import SQLiteDialect
    from remem.store.types import SearchOp

    path = tmp_path / "cover.db"
    with SQLiteStore(path, keyword=KeywordConfig(fields=("text",))) as store:
        store.batch([PutOp(("u",), f"k{i}", {"text": f"tea {i}", "pad": "x" * 9000,
                                             "status": "current"}) for i in range(50)])
    dialect = SQLiteDialect()
    op = SearchOp(("u",), filter={"status": "current"}, query="tea")
    with closing(sqlite3.connect(path)) as conn:
        # postings hold a term's id (m010)
        (tea,) = conn.execute("SELECT id FROM keyword_terms WHERE term = 'tea'").fetchone()
        statement = dialect.keyword_postings(
            [tea], *dialect.items_where(op, 0.0, with_filter=False), items_first=False)
        assert "json" not in statement[0].replace("json_each", "")
        plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + statement[0],
                                               statement[1])]
        rows = conn.execute(*statement).fetchall()
    item_steps = [step for step in plan if step.startswith("SEARCH i")]
    assert item_steps and all("COVERING INDEX items_postings_cover" in s for s in item_steps)
    assert sorted(row[2] for row in rows) == sorted(f"k{i}" for i in range(50))
