"""SQLite writes a put's keyword terms in the put's own transaction, as integer term ids
(m010): every acknowledged put is found by the next keyword search, in this process or another,
after a kill -9 too; a search never writes, so it answers while another writer holds the lock
and on a connection that refuses writes; replacing or deleting an item drops its postings; and
a file from before m010 upgrades with its postings."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

from remem.db.migrations import applied_sqlite
from remem.store import PutOp, SearchOp, SQLiteStore

ROOT = Path(__file__).resolve().parents[2]


def _unindexed(path: Path) -> int:
    """Items with keyword text whose terms are not in the index (none, ever)."""
    with closing(sqlite3.connect(path)) as conn:
        return int(conn.execute("SELECT count(*) FROM items WHERE id NOT IN "
                                "(SELECT item_id FROM item_terms)").fetchone()[0])


def _keys(store: SQLiteStore, query: str) -> list[str]:
    return [h.key for h in store.search(("u",), query=query, mode="keyword", limit=50)]


def test_every_put_is_indexed_in_its_transaction_and_searches_never_write(
        tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    with SQLiteStore(path) as writer, SQLiteStore(path) as reader:
        writer.batch([PutOp(("u",), f"k{i}", {"text": f"green tea number{i}"})
                      for i in range(50)])
        assert _unindexed(path) == 0  # the puts wrote their terms
        with closing(sqlite3.connect(path, isolation_level=None)) as other:
            other.execute("BEGIN IMMEDIATE")  # another process's writer holds the lock
            assert _keys(reader, "number7") == ["k7"]  # and a search does not wait for it
            other.execute("ROLLBACK")
        with reader._connection() as conn:  # this thread's connection refuses every write
            conn.execute("PRAGMA query_only = ON")
            assert len(_keys(reader, "green")) == 50
            hybrid = reader.search(("u",), query="number3 tea", limit=3)
            assert hybrid[0].key == "k3"
            conn.execute("PRAGMA query_only = OFF")
        # a search after a put of the same batch sees it
        found = writer.batch([PutOp(("u",), "new", {"text": "black coffee"}),
                              SearchOp(("u",), query="coffee", mode="keyword")])[1]
        assert [h.key for h in found] == ["new"]  # type: ignore[union-attr]
        # replacing an item drops its old terms; deleting it drops the new ones
        writer.put(("u",), "k7", {"text": "oolong"})
        assert _keys(reader, "number7") == []
        assert _keys(reader, "oolong") == ["k7"]
        writer.delete(("u",), "k7")
        assert _keys(reader, "oolong") == []
        # a put with its own fields
        writer.put(("u",), "own", {"title": "jasmine", "text": "x"}, index=["title"])
        assert _keys(reader, "jasmine") == ["own"]
        assert _unindexed(path) == 0
    with closing(sqlite3.connect(path)) as conn:
        left = conn.execute("SELECT count(*) FROM postings WHERE item_id NOT IN "
                            "(SELECT id FROM items)").fetchone()[0]
        rows = conn.execute("SELECT count(*) FROM item_terms").fetchone()[0]
        assert (left, rows) == (0, 51)  # 49 of the 50, "new" and "own"


_WRITER = """
import sys, time
from remem.store import PutOp, SQLiteStore
store = SQLiteStore(sys.argv[1])
for i in range(40):
    store.put(("u",), f"k{i}", {"text": f"memory number{i}"})
    print(f"ack {i}", flush=True)
store.batch([PutOp(("u",), f"b{i}", {"text": f"memory batch{i}"}) for i in range(600)])
print("ack batch", flush=True)
time.sleep(120)
"""


def test_puts_acknowledged_before_a_kill_9_are_found_by_another_process(tmp_path: Path) -> None:
    path = tmp_path / "killed.db"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"),
                                                        os.environ.get("PYTHONPATH", "")]))
    with subprocess.Popen([sys.executable, "-c", _WRITER, str(path)], env=env,
                          stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        acked = 0
        for line in proc.stdout:
            acked += line.startswith("ack ")
            if line.strip() == "ack batch":
                break
        proc.send_signal(signal.SIGKILL)  # every put acknowledged, none searched yet
        proc.wait(timeout=30)
    assert acked == 41
    # found without writing anything (this thread's connection refuses every write)
    with SQLiteStore(path) as store, store._connection() as conn:
        conn.execute("PRAGMA query_only = ON")
        assert _keys(store, "number39") == ["k39"]
        assert _keys(store, "batch599") == ["b599"]
        assert len(store.search(("u",), query="memory", mode="keyword", limit=1000)) == 640
        conn.execute("PRAGMA query_only = OFF")
    assert _unindexed(path) == 0


def undo_m010(conn: sqlite3.Connection) -> None:
    """The schema as remem before m010 kept it, the same terms in it: postings and recent
    postings by term text, postings indexed by item; no term ids nor item_terms."""
    conn.execute("DROP TABLE item_terms")
    for table, key in (("postings", "term, item_id"), ("recent_postings", "item_id, term")):
        conn.execute(f"CREATE TABLE by_text (term TEXT NOT NULL, item_id INTEGER NOT NULL, "
                     f"tf INTEGER NOT NULL, PRIMARY KEY ({key})) WITHOUT ROWID")
        conn.execute(f"INSERT INTO by_text SELECT t.term, p.item_id, p.tf FROM {table} AS p "
                     "JOIN keyword_terms AS t ON t.id = p.term")
        conn.execute(f"DROP TABLE {table}")
        conn.execute(f"ALTER TABLE by_text RENAME TO {table}")
    conn.execute("CREATE INDEX postings_item ON postings (item_id)")
    conn.execute("DROP TABLE keyword_terms")
    conn.execute("DELETE FROM remem_migrations WHERE name = 'm010_keyword_term_ids'")


def _downgrade_to_m009(path: Path) -> None:
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("BEGIN")
        undo_m010(conn)
        conn.execute("COMMIT")


def test_a_file_from_before_m010_keeps_its_postings_and_drops_them_on_replace(
        tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with SQLiteStore(path) as store:
        store.batch([PutOp(("u",), f"k{i}", {"text": f"tea garden word{i % 5}"})
                     for i in range(30)])
        before = [(h.key, h.score) for h in store.search(("u",), query="tea word3",
                                                          mode="keyword", limit=50)]
        store.put(("u",), "late", {"text": "tea"})  # in recent_postings
        assert _keys(store, "tea")
    _downgrade_to_m009(path)
    with SQLiteStore(path) as store:
        with closing(sqlite3.connect(path)) as conn:
            assert "m010_keyword_term_ids" in applied_sqlite(conn)
            assert conn.execute("SELECT count(*) FROM item_terms").fetchone()[0] == 31
            # the same terms, now by id
            assert conn.execute("SELECT count(*) FROM keyword_terms").fetchone()[0] == 7
        store.delete(("u",), "late")
        assert [(h.key, h.score) for h in store.search(("u",), query="tea word3",
                                                       mode="keyword", limit=50)] == before
        store.put(("u",), "k3", {"text": "coffee"})
        assert "k3" not in _keys(store, "tea")
        assert _keys(store, "coffee") == ["k3"]
