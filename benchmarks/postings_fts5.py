"""remem's SQLite keyword postings against SQLite's FTS5 holding the same terms: the write
cost, the file, and the read of a few terms' postings with their term frequencies (what BM25
in Python needs), on ``benchmarks/scale.py``'s texts (remem issue 37).

Run from the repository root::

    python benchmarks/postings_fts5.py --items 10000 --out benchmarks/results/postings_fts5.json

Both sides get the terms of remem's default tokenizer, in batches of 500 items, one
transaction each, WAL with ``synchronous=NORMAL``. **postings**: remem's tables as of
``m006`` (``recent_postings`` appended in item order, moved into the term-ordered ``postings``
with its ``postings_item`` index once 20,000 rows have gathered). **fts5**: a contentless
FTS5 table (``detail=full``) whose text is the item's terms, each repeated ``tf`` times,
rowid = item id; postings with tf are read through ``fts5vocab(..., 'instance')``, one
``term = ?`` lookup a term (an ``IN`` list scans the vocabulary). The reads are checked equal.

Kept as the measurement that decided against FTS5. The store's layout has moved on since
(``m010``: terms as integer ids, ``item_terms`` instead of ``postings_item``; see
docs/store.md, "Write path").
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale  # benchmarks/scale.py: the texts
from remem.retrieval.tokenize import DefaultTokenizer

BATCH = 500
MERGE_ROWS = 20_000


def _connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def _postings(path: str, docs: list[dict[str, int]], query: list[str]) -> dict[str, object]:
    conn = _connect(path)
    conn.execute("CREATE TABLE postings (term TEXT NOT NULL, item_id INTEGER NOT NULL, tf "
                 "INTEGER NOT NULL, PRIMARY KEY (term, item_id)) WITHOUT ROWID")
    conn.execute("CREATE INDEX postings_item ON postings (item_id)")
    conn.execute("CREATE TABLE recent_postings (item_id INTEGER NOT NULL, term TEXT NOT NULL, "
                 "tf INTEGER NOT NULL, PRIMARY KEY (item_id, term)) WITHOUT ROWID")
    held, began = 0, time.perf_counter()
    for at in range(0, len(docs), BATCH):
        conn.execute("BEGIN IMMEDIATE")
        rows = [(at + j + 1, t, f) for j, d in enumerate(docs[at:at + BATCH])
                for t, f in d.items()]
        conn.executemany("INSERT INTO recent_postings VALUES (?, ?, ?)", rows)
        held += len(rows)
        if held >= MERGE_ROWS:
            conn.execute("INSERT INTO postings SELECT term, item_id, tf FROM recent_postings "
                         "ORDER BY term, item_id")
            conn.execute("DELETE FROM recent_postings")
            held = 0
        conn.execute("COMMIT")
    spent = time.perf_counter() - began
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    arg = json.dumps(query)
    began = time.perf_counter()
    for _ in range(20):
        rows = conn.execute(
            "SELECT item_id, term, tf FROM postings WHERE term IN (SELECT value FROM "
            "json_each(?)) UNION ALL SELECT item_id, term, tf FROM recent_postings WHERE term "
            "IN (SELECT value FROM json_each(?))", (arg, arg)).fetchall()
    read = (time.perf_counter() - began) / 20 * 1e3
    conn.close()
    return {"write_per_s": len(docs) / spent, "file_mb": os.path.getsize(path) / 2**20,
            "read_ms": read, "rows": sorted(rows)}


def _fts5(path: str, docs: list[dict[str, int]], query: list[str]) -> dict[str, object]:
    conn = _connect(path)
    conn.execute("CREATE VIRTUAL TABLE kw USING fts5(terms, content='', columnsize=0, "
                 "detail=full, tokenize=\"unicode61 categories 'L* N* Co Mn Mc Pc Pd'\")")
    conn.execute("CREATE VIRTUAL TABLE kw_v USING fts5vocab(kw, 'instance')")
    began = time.perf_counter()
    for at in range(0, len(docs), BATCH):
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("INSERT INTO kw (rowid, terms) VALUES (?, ?)", [
            (at + j + 1, " ".join(t for t, f in d.items() for _ in range(f)))
            for j, d in enumerate(docs[at:at + BATCH])])
        conn.execute("COMMIT")
    spent = time.perf_counter() - began
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    began = time.perf_counter()
    for _ in range(20):
        rows = []
        for term in query:
            rows += conn.execute("SELECT doc, term, count(*) FROM kw_v WHERE term = ? "
                                 "GROUP BY doc", (term,)).fetchall()
    read = (time.perf_counter() - began) / 20 * 1e3
    conn.close()
    return {"write_per_s": len(docs) / spent, "file_mb": os.path.getsize(path) / 2**20,
            "read_ms": read, "rows": sorted(rows)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--out", type=Path, default=None)
    opts = parser.parse_args()
    tokenizer = DefaultTokenizer()
    docs: list[dict[str, int]] = []
    for at in range(0, opts.items, BATCH):
        for text in scale.texts(at, min(BATCH, opts.items - at)):
            terms: dict[str, int] = {}
            for term in tokenizer.tokenize(text):
                terms[term] = terms.get(term, 0) + 1
            docs.append(terms)
    query = sorted(docs[5])[:3]
    tmp = tempfile.mkdtemp(prefix="remem-fts5-")
    results = {"postings": _postings(f"{tmp}/p.db", docs, query),
               "fts5": _fts5(f"{tmp}/f.db", docs, query)}
    same = results["postings"].pop("rows") == results["fts5"].pop("rows")
    print(f"{opts.items:,} items, {sum(len(d) for d in docs):,} postings; query terms {query}")
    print(f"  {'':10} {'write items/s':>14} {'file MB':>9} {'3-term read ms':>15}")
    for name, r in results.items():
        print(f"  {name:10} {r['write_per_s']:>14,.0f} {r['file_mb']:>9.1f} "
              f"{r['read_ms']:>15.1f}")
    print(f"  same postings and tf: {same}")
    if opts.out:
        opts.out.parent.mkdir(parents=True, exist_ok=True)
        opts.out.write_text(json.dumps({"items": opts.items, "query": query, "same": same,
                                        "results": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
