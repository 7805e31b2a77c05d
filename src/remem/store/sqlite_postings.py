"""SQLite keyword postings: writing the terms of items, and dropping them (I/O on a connection
inside the caller's write transaction; see ``m006`` and ``m010`` of the SQLite migrations).

A term is stored as a small integer (``keyword_terms``: id, term), so a posting is three
integers. Three tables hold an item's terms: ``postings`` (term, item) in term order, which
searches read; ``recent_postings`` (item, term) in arrival order, where a few items' terms are
appended and later moved into ``postings`` in bulk; and ``item_terms``, one row per item with
its term ids packed, which is how an item's postings are found again to drop them (it replaced
an index of ``postings`` by item: one row per item instead of an index entry per posting, and
no random index writes while postings are inserted in term order).
"""

from __future__ import annotations

import json
import sqlite3
import sys
from array import array
from collections.abc import Iterable, Mapping, Sequence
from itertools import repeat
from operator import itemgetter

__all__ = ["RECENT_PER_ITEM", "RECENT_POSTINGS", "RECENT_POSTINGS_MAX", "TermIds", "drop_terms",
           "term_keys", "write_terms"]

#: rows gathered in recent_postings before they move into postings, at least; also the size
#: from which a write goes straight into postings in term order. Searches of a large scope
#: scan recent_postings, so this bounds that scan.
RECENT_POSTINGS = 20_000
#: ... or this many rows per item id given so far, if more: a move rewrites the tail of about
#: every posting list, so its cost grows with the file, and gathering more rows before it
#: keeps its cost per row flat (a large scope's search reads posting lists that grow alike)
RECENT_PER_ITEM = 1
#: ... but never more than this many (what a large scope's search scans: ~1 MB)
RECENT_POSTINGS_MAX = 100_000


class TermIds:
    """Term -> id of ``keyword_terms``, remembered in process (a term's id never changes:
    terms are never deleted). Only a writer holding the write lock adds to it; after a rolled
    back transaction call :meth:`forget`, since the ids it assigned are gone."""

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}

    def of(self, conn: sqlite3.Connection, terms: Iterable[str]) -> dict[str, int]:
        """The ids of ``terms`` (and others already known), assigning ids to new terms."""
        ids = self._ids
        missing = list((terms if isinstance(terms, set) else set(terms)).difference(ids))
        if missing:
            arg = json.dumps(missing, ensure_ascii=False)
            new = set(missing) - _read_ids(conn, arg, ids)
            if new:
                conn.executemany("INSERT INTO keyword_terms (term) VALUES (?)",
                                 [(term,) for term in sorted(new)])
                _read_ids(conn, json.dumps(sorted(new), ensure_ascii=False), ids)
        return ids

    def forget(self) -> None:
        self._ids.clear()


def _read_ids(conn: sqlite3.Connection, terms_json: str, into: dict[str, int]) -> set[str]:
    found = conn.execute("SELECT term, id FROM keyword_terms WHERE term IN "
                         "(SELECT value FROM json_each(?))", (terms_json,)).fetchall()
    into.update(found)
    return {term for term, _ in found}


def term_keys(conn: sqlite3.Connection, terms: Sequence[str]) -> dict[int, str]:
    """Stored id -> term for the query ``terms`` that any item holds (read, never cached, so
    a search sees terms another process added)."""
    rows = conn.execute("SELECT id, term FROM keyword_terms WHERE term IN "
                        "(SELECT value FROM json_each(?))",
                        (json.dumps(list(terms), ensure_ascii=False),)).fetchall()
    return {int(term_id): term for term_id, term in rows}


def write_terms(conn: sqlite3.Connection, items: Sequence[tuple[int, Mapping[str, int]]],
                term_ids: TermIds) -> None:
    """Record each ``(item id, term -> frequency)`` (items without postings yet): a few
    postings are appended to ``recent_postings``; once :data:`RECENT_POSTINGS` (or
    :data:`RECENT_PER_ITEM` per item id) would be held there, those and these go into
    ``postings`` in term order, each posting list's tail written once."""
    # in id order, so a stable sort by term alone leaves each posting list in id order
    items = sorted(((item_id, terms) for item_id, terms in items if terms), key=itemgetter(0))
    if not items:
        return
    every: set[str] = set()
    for _, terms in items:
        every.update(terms)
    ids = term_ids.of(conn, every)
    # built a whole item at a time by map/zip (tens of thousands of rows a bulk batch)
    rows: list[tuple[int, int, int]] = []
    packed: list[tuple[int, bytes]] = []
    for item_id, terms in items:
        item_term_ids = list(map(ids.__getitem__, terms))
        rows += zip(item_term_ids, repeat(item_id), terms.values())
        packed.append((item_id, _pack(item_term_ids)))
    conn.executemany("INSERT INTO item_terms (item_id, terms) VALUES (?, ?)", packed)
    (held,) = conn.execute("SELECT CAST(value AS INTEGER) FROM remem_meta "
                           "WHERE key = 'recent_postings'").fetchone()
    gather = min(max(RECENT_POSTINGS, RECENT_PER_ITEM * items[-1][0]), RECENT_POSTINGS_MAX)
    if held + len(rows) < gather:
        conn.executemany("INSERT INTO recent_postings (term, item_id, tf) VALUES (?, ?, ?)",
                         rows)
        conn.execute("UPDATE remem_meta SET value = ? WHERE key = 'recent_postings'",
                     (str(held + len(rows)),))
        return
    if held:  # the recent ones first, so both go into postings in term order
        conn.execute("INSERT INTO postings (term, item_id, tf) SELECT term, item_id, tf "
                     "FROM recent_postings ORDER BY term, item_id")
        conn.execute("DELETE FROM recent_postings")
        conn.execute("UPDATE remem_meta SET value = '0' WHERE key = 'recent_postings'")
    rows.sort(key=itemgetter(0))
    conn.executemany("INSERT INTO postings (term, item_id, tf) VALUES (?, ?, ?)", rows)


def drop_terms(conn: sqlite3.Connection, item_ids: Sequence[int]) -> None:
    """Drop every posting of these items (from both tables) and their ``item_terms`` rows."""
    arg = json.dumps(list(item_ids))
    pairs = [(term_id, item_id) for item_id, packed in conn.execute(
        "SELECT item_id, terms FROM item_terms WHERE item_id IN (SELECT value FROM json_each(?))",
        (arg,)) for term_id in _unpack(packed)]
    if pairs:
        conn.executemany("DELETE FROM postings WHERE term = ? AND item_id = ?", pairs)
        conn.execute("DELETE FROM item_terms WHERE item_id IN (SELECT value FROM json_each(?))",
                     (arg,))
    conn.execute("DELETE FROM recent_postings WHERE item_id IN (SELECT value FROM json_each(?))",
                 (arg,))


def _pack(term_ids: list[int]) -> bytes:
    packed = array("i", term_ids)  # int32, little-endian in the file
    if sys.byteorder == "big":
        packed.byteswap()
    return packed.tobytes()


def _unpack(packed: bytes | str) -> list[int]:
    """Term ids of an item_terms row: packed int32 (as written here), or a JSON array (as the
    m010 migration wrote the rows of existing items)."""
    if isinstance(packed, str):
        return [int(term_id) for term_id in json.loads(packed)]
    ids = array("i", packed)
    if sys.byteorder == "big":
        ids.byteswap()
    return ids.tolist()
