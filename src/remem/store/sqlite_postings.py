"""SQLite keyword postings: writing the terms of items, and dropping them (I/O on a connection
inside the caller's write transaction; see ``m006`` and ``m010`` of the SQLite migrations).

Three tables hold an item's terms: ``postings`` (term, item) in term order, which searches
read; ``recent_postings`` (item, term) in arrival order, where a few items' terms are
appended and later moved into ``postings`` in bulk; and ``item_terms``, one row per item
listing its terms, which is how an item's postings are found again to drop them (it replaced
an index of ``postings`` by item: one row per item instead of an index entry per term, and
no random index writes while postings are inserted in term order).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from operator import itemgetter

__all__ = ["RECENT_POSTINGS", "drop_terms", "write_terms"]

#: rows gathered in recent_postings before they move into postings; also the size from which
#: a write goes straight into postings in term order. Searches of a large scope scan
#: recent_postings, so this bounds that scan.
RECENT_POSTINGS = 20_000


def write_terms(conn: sqlite3.Connection, items: Sequence[tuple[int, Mapping[str, int]]]
                ) -> None:
    """Record each ``(item id, term -> frequency)`` (items without postings yet): a few
    postings are appended to ``recent_postings``; once :data:`RECENT_POSTINGS` would be held
    there, those and these go into ``postings`` in term order, each posting list's tail
    written once."""
    items = [(item_id, terms) for item_id, terms in items if terms]
    if not items:
        return
    conn.executemany("INSERT INTO item_terms (item_id, terms) VALUES (?, ?)",
                     [(item_id, json.dumps(list(terms), ensure_ascii=False))
                      for item_id, terms in items])
    count = sum(len(terms) for _, terms in items)
    (held,) = conn.execute("SELECT CAST(value AS INTEGER) FROM remem_meta "
                           "WHERE key = 'recent_postings'").fetchone()
    if held + count < RECENT_POSTINGS:
        conn.executemany("INSERT INTO recent_postings (item_id, term, tf) VALUES (?, ?, ?)",
                         [(item_id, term, tf) for item_id, terms in items
                          for term, tf in terms.items()])
        conn.execute("UPDATE remem_meta SET value = ? WHERE key = 'recent_postings'",
                     (str(held + count),))
        return
    if held:  # the recent ones first, so both go into postings in term order
        conn.execute("INSERT INTO postings (term, item_id, tf) SELECT term, item_id, tf "
                     "FROM recent_postings ORDER BY term, item_id")
        conn.execute("DELETE FROM recent_postings")
        conn.execute("UPDATE remem_meta SET value = '0' WHERE key = 'recent_postings'")
    rows = [(term, item_id, tf) for item_id, terms in sorted(items, key=itemgetter(0))
            for term, tf in terms.items()]
    # by term, ids ascending within a term (the sort is stable); Python orders str by code
    # point, as SQLite's BINARY collation orders UTF-8 bytes
    rows.sort(key=itemgetter(0))
    conn.executemany("INSERT INTO postings (term, item_id, tf) VALUES (?, ?, ?)", rows)


def drop_terms(conn: sqlite3.Connection, item_ids: Sequence[int]) -> None:
    """Drop every posting of these items (from both tables) and their ``item_terms`` rows."""
    arg = json.dumps(list(item_ids))
    pairs = [(term, item_id) for item_id, terms in conn.execute(
        "SELECT item_id, terms FROM item_terms WHERE item_id IN (SELECT value FROM json_each(?))",
        (arg,)) for term in json.loads(terms)]
    if pairs:
        conn.executemany("DELETE FROM postings WHERE term = ? AND item_id = ?", pairs)
        conn.execute("DELETE FROM item_terms WHERE item_id IN (SELECT value FROM json_each(?))",
                     (arg,))
    conn.execute("DELETE FROM recent_postings WHERE item_id IN (SELECT value FROM json_each(?))",
                 (arg,))
