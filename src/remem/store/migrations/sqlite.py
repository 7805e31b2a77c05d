"""The SQLite schema, one migration per step, and what is recorded beside it (the embedding
model, the keyword tokenizer, the keyword backfill of old files). Never edit a released
migration: add one."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from remem.db import Database
from remem.db.migrations import Migration
from remem.errors import IndexConfigError
from remem.store.sqlite_postings import TermIds, drop_terms, write_terms

__all__ = ["SQLITE_MIGRATIONS", "backfill_keywords", "register_model", "register_tokenizer"]

SQLITE_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "m001_items",
        (
            # ns: the labels, each followed by \x1f, so a namespace prefix is a string prefix
            # and byte order equals tuple order (labels cannot contain control characters).
            """CREATE TABLE items (
                id INTEGER PRIMARY KEY,
                ns TEXT NOT NULL,
                key TEXT NOT NULL,
                value TEXT NOT NULL,
                created_at REAL NOT NULL,
                updated_at REAL NOT NULL,
                ttl REAL,
                expires_at REAL,
                UNIQUE (ns, key)
            )""",
            # in index order for newest-first pages of one namespace (LIMIT stops early);
            # covering for prefix listings, which then sort ids, not values
            "CREATE INDEX items_ns_updated ON items (ns, updated_at DESC, key, expires_at)",
            "CREATE INDEX items_expires ON items (expires_at) WHERE expires_at IS NOT NULL",
            "CREATE TABLE remem_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        ),
    ),
    Migration(
        "m002_vectors",
        (
            """CREATE TABLE embedding_models (
                id INTEGER PRIMARY KEY,
                name TEXT NOT NULL UNIQUE,
                dims INTEGER NOT NULL
            )""",
            # seq: the vector_seq of the transaction that wrote the row; processes keep their
            # in-memory vector matrix in step by reading rows and tombstones newer than theirs.
            """CREATE TABLE vectors (
                id INTEGER PRIMARY KEY,
                item_id INTEGER NOT NULL,
                field TEXT NOT NULL,
                model_id INTEGER NOT NULL REFERENCES embedding_models (id),
                vec BLOB NOT NULL,
                seq INTEGER NOT NULL
            )""",
            "CREATE INDEX vectors_item ON vectors (item_id)",
            "CREATE INDEX vectors_seq ON vectors (seq)",
            "CREATE TABLE vector_tombstones (id INTEGER NOT NULL, seq INTEGER NOT NULL)",
            "CREATE INDEX vector_tombstones_seq ON vector_tombstones (seq)",
            "INSERT INTO remem_meta (key, value) VALUES ('vector_seq', '0')",
            "INSERT INTO remem_meta (key, value) VALUES ('tombstones_pruned_through', '0')",
        ),
    ),
    Migration(
        "m003_keyword_event_time",
        (
            # event_at: when what the item records happened (NULL: use created_at)
            "ALTER TABLE items ADD COLUMN event_at REAL",
            # doc_len: number of keyword terms (0: not in the keyword index)
            "ALTER TABLE items ADD COLUMN doc_len INTEGER NOT NULL DEFAULT 0",
            # one row per (term, item); BM25 reads term frequencies here and computes scores
            # in Python, so every backend scores alike
            """CREATE TABLE postings (
                term TEXT NOT NULL,
                item_id INTEGER NOT NULL,
                tf INTEGER NOT NULL,
                PRIMARY KEY (term, item_id)
            ) WITHOUT ROWID""",
            "CREATE INDEX postings_item ON postings (item_id)",
            # corpus statistics (count and total length) under a prefix from the index alone
            "CREATE INDEX items_keyword ON items (ns, expires_at, doc_len) WHERE doc_len > 0",
            # the embedding cache: a document text already embedded by this model is reused
            "ALTER TABLE vectors ADD COLUMN text_hash BLOB",
            "CREATE INDEX vectors_text_hash ON vectors (text_hash) WHERE text_hash IS NOT NULL",
            # items written before keyword search have no terms yet: SQLiteStore.setup fills
            # them in (resumably) and then removes this marker
            "INSERT INTO remem_meta (key, value) SELECT 'keyword_backfill', '0' "
            "WHERE EXISTS (SELECT 1 FROM items)",
        ),
    ),
    Migration(
        "m004_keyword_stats",
        (
            # BM25 corpus statistics per namespace for keyword-indexed items that never expire,
            # kept by triggers in the same transaction as every write to items. Searches sum
            # them over the prefix (one row per namespace) instead of an index over every item,
            # whose entries cost a random page write per put (~130 of ~670 WAL pages per
            # 100-item batch at 100k items). Items with an expiry are counted at search time
            # from items_keyword_ttl, since they leave the live set without a write.
            """CREATE TABLE keyword_stats (
                ns TEXT PRIMARY KEY,
                docs INTEGER NOT NULL,
                total_len INTEGER NOT NULL
            ) WITHOUT ROWID""",
            "INSERT INTO keyword_stats (ns, docs, total_len) SELECT ns, count(*), sum(doc_len) "
            "FROM items WHERE doc_len > 0 AND expires_at IS NULL GROUP BY ns",
            """CREATE TRIGGER items_stats_insert AFTER INSERT ON items
               WHEN new.doc_len > 0 AND new.expires_at IS NULL
               BEGIN
                 INSERT INTO keyword_stats (ns, docs, total_len) VALUES (new.ns, 1, new.doc_len)
                 ON CONFLICT (ns) DO UPDATE SET docs = docs + 1,
                                                total_len = total_len + excluded.total_len;
               END""",
            """CREATE TRIGGER items_stats_delete AFTER DELETE ON items
               WHEN old.doc_len > 0 AND old.expires_at IS NULL
               BEGIN
                 UPDATE keyword_stats SET docs = docs - 1, total_len = total_len - old.doc_len
                 WHERE ns = old.ns;
               END""",
            """CREATE TRIGGER items_stats_update AFTER UPDATE OF ns, doc_len, expires_at ON items
               WHEN (old.doc_len > 0 AND old.expires_at IS NULL)
                 OR (new.doc_len > 0 AND new.expires_at IS NULL)
               BEGIN
                 UPDATE keyword_stats SET docs = docs - 1, total_len = total_len - old.doc_len
                 WHERE ns = old.ns AND old.doc_len > 0 AND old.expires_at IS NULL;
                 INSERT INTO keyword_stats (ns, docs, total_len)
                 SELECT new.ns, 1, new.doc_len WHERE new.doc_len > 0 AND new.expires_at IS NULL
                 ON CONFLICT (ns) DO UPDATE SET docs = docs + 1,
                                                total_len = total_len + excluded.total_len;
               END""",
            "DROP INDEX items_keyword",
            "CREATE INDEX items_keyword_ttl ON items (ns, expires_at, doc_len) "
            "WHERE doc_len > 0 AND expires_at IS NOT NULL",
        ),
    ),
    Migration(
        "m005_text_hashes_in_process",
        (
            # the embedding cache finds stored texts through an in-process map (TextHashes)
            # brought up to date by vector_seq, instead of an index on the hash, whose random
            # inserts cost 114 of 542 WAL pages per 100-item batch at 100k items. The hash
            # rides in the seq index, appended to at its end, so the map reads only the index.
            "DROP INDEX vectors_text_hash",
            "DROP INDEX vectors_seq",
            "CREATE INDEX vectors_seq ON vectors (seq, text_hash)",
        ),
    ),
    Migration(
        "m006_recent_postings",
        (
            # New terms are appended here, in item order, and moved into postings (term
            # order) in bulk once RECENT_POSTINGS rows have gathered: a put no longer writes
            # into the middle of every posting list it touches (77 of 429 WAL pages of a
            # 100-item batch at 100k items), and a merge writes each list's tail once for
            # thousands of items. Searches read both tables.
            """CREATE TABLE recent_postings (
                item_id INTEGER NOT NULL,
                term TEXT NOT NULL,
                tf INTEGER NOT NULL,
                PRIMARY KEY (item_id, term)
            ) WITHOUT ROWID""",
            "INSERT INTO remem_meta (key, value) VALUES ('recent_postings', '0')",
        ),
    ),
    Migration(
        "m007_postings_items_cover",
        (
            # a keyword search joins every posting of its terms to its item for (ns, key,
            # alive, doc_len); those columns sit after the value in the row, so each lookup
            # walked the value's overflow pages (memories of 12 kB: 4.4 -> 0.5 ms for 500
            # postings). Appended at its end by new items, like the table.
            "CREATE INDEX IF NOT EXISTS items_postings_cover ON items (id, ns, key, expires_at, "
            "doc_len)",
        ),
    ),
    Migration(
        "m008_items_newest_first",
        (
            # a newest-first listing of a wide prefix (a whole tenant: 100k memories) walks
            # this from the newest entry, skips entries outside the prefix without reading
            # their row, and stops once the page is full, instead of reading and sorting the
            # whole prefix (100k memories: 352 -> 27 ms). New writes land at its front, so a
            # put adds about one index page to a commit.
            "CREATE INDEX IF NOT EXISTS items_updated ON items (updated_at DESC, ns, key, "
            "expires_at)",
        ),
    ),
    Migration(
        "m009_newest_first_on_demand",
        (
            # m008's index cost every writer ~12% of bulk-load speed (one more B-tree insert
            # per put), listing or not; SQLiteStore now builds it the first time a wide
            # newest-first listing runs (sqlite_sql.NEWEST_INDEX), so only files that are
            # listed that way pay for it
            "DROP INDEX IF EXISTS items_updated",
        ),
    ),
    Migration(
        "m010_keyword_term_ids",
        (
            # terms become integers (keyword_terms): a posting is three integers, about half
            # the bytes of one holding the term's text; then one row per item with its term
            # ids (item_terms), to find its postings again when it is replaced or deleted,
            # instead of postings_item, an index entry per posting that doubled the postings'
            # size and was written at random while postings went in in term order
            # (sqlite_postings). Rows of existing items list their ids as a JSON array.
            "CREATE TABLE keyword_terms (id INTEGER PRIMARY KEY, term TEXT NOT NULL UNIQUE)",
            "INSERT INTO keyword_terms (term) SELECT term FROM postings UNION "
            "SELECT term FROM recent_postings ORDER BY 1",
            """CREATE TABLE postings_by_id (
                term INTEGER NOT NULL,
                item_id INTEGER NOT NULL,
                tf INTEGER NOT NULL,
                PRIMARY KEY (term, item_id)
            ) WITHOUT ROWID""",
            "INSERT INTO postings_by_id (term, item_id, tf) SELECT t.id, p.item_id, p.tf "
            "FROM postings AS p JOIN keyword_terms AS t ON t.term = p.term ORDER BY 1, 2",
            "DROP TABLE postings",
            "ALTER TABLE postings_by_id RENAME TO postings",
            """CREATE TABLE recent_by_id (
                item_id INTEGER NOT NULL,
                term INTEGER NOT NULL,
                tf INTEGER NOT NULL,
                PRIMARY KEY (item_id, term)
            ) WITHOUT ROWID""",
            "INSERT INTO recent_by_id (item_id, term, tf) SELECT p.item_id, t.id, p.tf "
            "FROM recent_postings AS p JOIN keyword_terms AS t ON t.term = p.term",
            "DROP TABLE recent_postings",
            "ALTER TABLE recent_by_id RENAME TO recent_postings",
            "CREATE TABLE item_terms (item_id INTEGER PRIMARY KEY, terms BLOB NOT NULL)",
            "INSERT INTO item_terms (item_id, terms) SELECT item_id, json_group_array(term) "
            "FROM (SELECT item_id, term FROM postings UNION ALL "
            "SELECT item_id, term FROM recent_postings) GROUP BY item_id",
        ),
    ),
)


def backfill_keywords(database: Database, terms_of: Callable[[str], dict[str, int]]) -> None:
    """Give items written before keyword search (m003) their terms, ``terms_of`` their stored
    JSON, a chunk per transaction, resuming where a killed run stopped (the marker holds the
    last id done). A no-op once the marker is gone."""
    while True:
        with database.transaction(True) as tx:
            conn = tx.conn
            row = conn.execute("SELECT value FROM remem_meta WHERE key = 'keyword_backfill'"
                               ).fetchone()
            if row is None:
                return
            rows = conn.execute("SELECT id, value FROM items WHERE id > ? ORDER BY id LIMIT 1000",
                                (int(row[0]),)).fetchall()
            items = [(item_id, terms_of(value)) for item_id, value in rows]
            drop_terms(conn, [item_id for item_id, _ in items])
            write_terms(conn, items, TermIds())
            conn.executemany("UPDATE items SET doc_len = ? WHERE id = ?",
                             [(sum(terms.values()), item_id) for item_id, terms in items])
            if rows:
                conn.execute("UPDATE remem_meta SET value = ? WHERE key = 'keyword_backfill'",
                             (str(rows[-1][0]),))
            else:
                conn.execute("DELETE FROM remem_meta WHERE key = 'keyword_backfill'")


def register_model(conn: sqlite3.Connection, path: str, model: str, dims: int) -> int:
    """The id of the embedding model recorded in ``path`` (recorded now if new), inside the
    caller's write transaction; a file whose vectors came from another model is refused."""
    rows = conn.execute("SELECT id, name, dims FROM embedding_models").fetchall()
    used = {r[0] for r in conn.execute("SELECT DISTINCT model_id FROM vectors")}
    for model_id, name, held in rows:
        if model_id in used and (name != model or held != dims):
            raise IndexConfigError(
                f"{path} holds vectors of model {name!r} ({held} dims); this store was "
                f"opened with {model!r} ({dims} dims). Open it with the same embedder, "
                "or export and re-import into a new file"
            )
    match = [r[0] for r in rows if r[1] == model and r[2] == dims]
    if match:
        return int(match[0])
    return int(conn.execute("INSERT INTO embedding_models (name, dims) VALUES (?, ?)",
                            (model, dims)).lastrowid or 0)


def register_tokenizer(conn: sqlite3.Connection, path: str, name: str) -> None:
    """Record the keyword tokenizer's name, inside the caller's write transaction; a file
    holding terms of another one is refused."""
    row = conn.execute("SELECT value FROM remem_meta WHERE key = 'keyword_tokenizer'"
                       ).fetchone()
    if row is not None and row[0] != name and conn.execute(
        "SELECT 1 FROM postings UNION ALL SELECT 1 FROM recent_postings LIMIT 1"
    ).fetchone() is not None:
        raise IndexConfigError(
            f"{path} holds keyword terms made by tokenizer {row[0]!r}; this store was "
            f"opened with {name!r}. Open it with the same tokenizer "
            "(KeywordConfig(tokenizer=...)), or export and re-import into a new file"
        )
    conn.execute("INSERT INTO remem_meta (key, value) VALUES ('keyword_tokenizer', ?) "
                 "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (name,))
