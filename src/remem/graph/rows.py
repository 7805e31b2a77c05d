"""Row operations over one graph transaction: the only code that writes graph SQL.

:class:`GraphRows` wraps a :class:`~remem.graph.storage.GraphTx` and the encoded namespace of one
graph; every read is confined to that namespace (entity and fact ids of another namespace are
never returned, even when asked for by id).
"""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from remem.graph import schema
from remem.graph.resolve import name_key
from remem.graph.storage import GraphTx
from remem.graph.types import Entity, Episode, Fact
from remem.retrieval.bm25 import BM25Params
from remem.retrieval.tokenize import Tokenizer
from remem.store.bad_records import (
    int_field,
    kind_of,
    optional_text,
    parse_each,
    text_field,
    time_field,
)
from remem.store.namespace_codec import decode_ns

__all__ = ["GraphRows", "entity_of_row", "episode_of_row", "fact_of_row", "json_list", "parse_rows"]

R = TypeVar("R")


def parse_rows(rows: Sequence[Sequence[Any]], parser: Callable[[Sequence[Any]], R], ns: str,
               table: str) -> list[R]:
    """``parser`` over the ``rows`` of ``table`` in graph namespace ``ns`` (encoded), whose
    first column is the id; a row that does not parse is left out and reported."""
    return parse_each(rows, parser, family="graph",
                      where=lambda row: ((*decode_ns(ns), table), str(row[0])))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _blob(vector: npt.NDArray[np.float32] | None) -> bytes | None:
    return None if vector is None else np.asarray(vector, dtype=np.float32).tobytes()


def json_list(text: Any, name: str, kind: type) -> tuple[Any, ...]:
    """A JSON array column of ``kind`` values (``ValueError``/``TypeError`` otherwise)."""
    data = json.loads(text_field(text, name))
    if not isinstance(data, list) or not all(
            isinstance(v, kind) and not isinstance(v, bool) for v in data):
        raise TypeError(f"{name} must be a JSON array of {kind.__name__}, got {kind_of(data)}")
    return tuple(data)


def _required_time(value: Any, name: str) -> float:
    found = time_field(value, name)
    if found is None:
        raise TypeError(f"{name} must be a number of seconds since the epoch, got null")
    return found


def fact_of_row(row: Sequence[Any]) -> Fact:
    """The fact a row read with :data:`~remem.graph.schema.FACT_COLUMNS` holds; a row that
    does not parse raises ``ValueError`` or ``TypeError`` naming the column."""
    (id_, subject_id, predicate, object_id, value, fact, valid_at, invalid_at, recorded_at,
     expired_at, episodes) = row
    return Fact(id=int_field(id_, "id"), subject_id=int_field(subject_id, "subject_id"),
                predicate=text_field(predicate, "predicate"),
                object_id=None if object_id is None else int_field(object_id, "object_id"),
                value=optional_text(value, "value"), fact=text_field(fact, "fact"),
                valid_at=time_field(valid_at, "valid_at"),
                invalid_at=time_field(invalid_at, "invalid_at"),
                recorded_at=_required_time(recorded_at, "recorded_at"),
                expired_at=time_field(expired_at, "expired_at"),
                episodes=json_list(episodes, "episodes", int))


def entity_of_row(row: Sequence[Any]) -> Entity:
    id_, name, type_, aliases, summary, created_at, updated_at = row
    return Entity(id=int_field(id_, "id"), name=text_field(name, "name"),
                  type=text_field(type_, "type"), aliases=json_list(aliases, "aliases", str),
                  summary=text_field(summary, "summary"),
                  created_at=_required_time(created_at, "created_at"),
                  updated_at=_required_time(updated_at, "updated_at"))


def episode_of_row(row: Sequence[Any]) -> Episode:
    id_, content, event_at, recorded_at, source_ids, source = row
    return Episode(int_field(id_, "id"), text_field(content, "content"),
                   _required_time(event_at, "event_at"),
                   _required_time(recorded_at, "recorded_at"),
                   json_list(source_ids, "source_ids", str), text_field(source, "source"))


_BM25 = BM25Params()
#: the tables whose rows are read with a parser (and removed by remem doctor --repair)
_REMOVABLE = ("graph_entities", "graph_facts", "graph_episodes", "graph_events")
_ENTITY_SELECT = f"SELECT {', '.join(schema.ENTITY_COLUMNS)} FROM graph_entities"


class GraphRows:
    """Reads and writes of one graph (namespace ``ns``) inside one transaction."""

    def __init__(self, tx: GraphTx, ns: str, tokenizer: Tokenizer,
                 df_cache: dict[str, tuple[int, int]] | None = None) -> None:
        self.tx = tx
        self.ns = ns
        self.tokenizer = tokenizer
        #: term -> (documents when counted, document frequency): see :meth:`_term_df`
        self.df_cache: dict[str, tuple[int, int]] = {} if df_cache is None else df_cache

    def _parsed(self, rows: Sequence[Sequence[Any]], parser: Callable[[Sequence[Any]], R],
                table: str) -> list[R]:
        """``parser`` over ``rows`` (their first column is the id); a row that does not
        parse is left out and reported (:mod:`remem.store.bad_records`) as
        ``<table>/<id>`` in the graph's namespace."""
        return parse_rows(rows, parser, self.ns, table)

    def remove_row(self, table: str, row_id: int) -> None:
        """Delete row ``row_id`` of ``table`` in this graph with what indexes it (the
        postings and edges of a fact, the name keys and terms of an entity): what
        ``remem doctor --repair`` does to a row that does not parse, after keeping a copy.
        Facts about a removed entity stay (their names show its id)."""
        if table not in _REMOVABLE:
            raise ValueError(f"no graph table {table!r}; one of {', '.join(_REMOVABLE)}")
        if table == "graph_facts":
            found = self.tx.execute("SELECT n_terms FROM graph_facts WHERE ns = ? AND id = ?",
                                    (self.ns, row_id)).fetchone()
            self.tx.execute("DELETE FROM graph_fact_terms WHERE ns = ? AND fact_id = ?",
                            (self.ns, row_id))
            self.tx.execute("DELETE FROM graph_edges WHERE fact_id = ?", (row_id,))
            length = found[0] if found is not None else None
            if isinstance(length, int) and not isinstance(length, bool) and length > 0:
                self.tx.execute("UPDATE graph_stats SET n_docs = n_docs - 1, total_len = "
                                "total_len - ? WHERE ns = ?", (length, self.ns))
                self.df_cache.clear()
        elif table == "graph_entities":
            for index in ("graph_entity_keys", "graph_entity_terms"):
                self.tx.execute(f"DELETE FROM {index} WHERE ns = ? AND entity_id = ?",
                                (self.ns, row_id))
        self.tx.execute(f"DELETE FROM {table} WHERE ns = ? AND id = ?", (self.ns, row_id))

    # -- episodes ---------------------------------------------------------------------------

    def insert_episode(self, content: str, event_at: float, recorded_at: float,
                       source_ids: Sequence[str], source: str) -> Episode:
        """Store an episode."""
        episode_id = self.tx.insert(
            "INSERT INTO graph_episodes (ns, content, source, source_ids, event_at, "
            "recorded_at) VALUES (?, ?, ?, ?, ?, ?)",
            (self.ns, content, source, _json(list(source_ids)), event_at, recorded_at))
        return Episode(episode_id, content, event_at, recorded_at, tuple(source_ids), source)

    def episodes(self) -> list[Episode]:
        """Every episode, by event time."""
        rows = self.tx.execute(
            "SELECT id, content, event_at, recorded_at, source_ids, source FROM "
            "graph_episodes WHERE ns = ? ORDER BY event_at, id", (self.ns,)).fetchall()
        return self._parsed(rows, episode_of_row, "graph_episodes")

    # -- entities ---------------------------------------------------------------------------

    def _index_names(self, entity_id: int, names: Iterable[str]) -> None:
        names = list(names)
        keys = {name_key(n) for n in names} - {""}
        terms = {t for n in names for t in self.tokenizer.tokenize(n)}
        conflict = " ON CONFLICT DO NOTHING"
        self.tx.executemany("INSERT INTO graph_entity_keys (ns, key, entity_id) VALUES "
                            f"(?, ?, ?){conflict}",
                            [(self.ns, k, entity_id) for k in sorted(keys)])
        self.tx.executemany("INSERT INTO graph_entity_terms (ns, term, entity_id) VALUES "
                            f"(?, ?, ?){conflict}",
                            [(self.ns, t, entity_id) for t in sorted(terms)])

    def insert_entity(self, name: str, type_: str, aliases: Sequence[str], now: float,
                      embedding: npt.NDArray[np.float32] | None) -> Entity:
        """Store a new entity and index its names."""
        entity_id = self.tx.insert(
            "INSERT INTO graph_entities (ns, name, type, aliases, summary, embedding, "
            "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (self.ns, name, type_, _json(list(aliases)), "", _blob(embedding), now, now))
        self._index_names(entity_id, [name, *aliases])
        return Entity(entity_id, name, type_, tuple(aliases), "", now, now)

    def add_aliases(self, entity: Entity, names: Sequence[str], now: float) -> Entity:
        """Record ``names`` (those not already known) as aliases of ``entity``."""
        known = {name_key(n) for n in (entity.name, *entity.aliases)}
        new = [n for n in dict.fromkeys(names) if name_key(n) not in known and name_key(n)]
        if not new:
            return entity
        aliases = (*entity.aliases, *new)
        self.tx.execute("UPDATE graph_entities SET aliases = ?, updated_at = ? WHERE id = ?",
                        (_json(list(aliases)), now, entity.id))
        self._index_names(entity.id, new)
        return Entity(entity.id, entity.name, entity.type, aliases, entity.summary,
                      entity.created_at, now)

    def set_summary(self, entity_id: int, summary: str, now: float) -> None:
        """Replace an entity's summary."""
        self.tx.execute("UPDATE graph_entities SET summary = ?, updated_at = ? "
                        "WHERE id = ? AND ns = ?", (summary, now, entity_id, self.ns))

    def entities(self, ids: Iterable[int] | None = None) -> dict[int, Entity]:
        """The entities with these ids in this graph (``None``: all)."""
        if ids is None:
            rows = self.tx.execute(f"{_ENTITY_SELECT} WHERE ns = ? ORDER BY id",
                                   (self.ns,)).fetchall()
        else:
            wanted = sorted(set(ids))
            if not wanted:
                return {}
            marks = ", ".join("?" for _ in wanted)
            rows = self.tx.execute(f"{_ENTITY_SELECT} WHERE ns = ? AND id IN ({marks})",
                                   (self.ns, *wanted)).fetchall()
        return {e.id: e for e in self._parsed(rows, entity_of_row, "graph_entities")}

    def by_keys(self, keys: Iterable[str]) -> set[int]:
        """Entities having any of these normalised names or aliases."""
        wanted = sorted(set(keys) - {""})
        if not wanted:
            return set()
        marks = ", ".join("?" for _ in wanted)
        rows = self.tx.execute(f"SELECT entity_id FROM graph_entity_keys WHERE ns = ? AND "
                               f"key IN ({marks})", (self.ns, *wanted)).fetchall()
        return {int(r[0]) for r in rows}

    def by_terms(self, terms: Iterable[str], limit: int) -> list[tuple[int, int]]:
        """``(entity id, shared terms)`` of entities whose names share terms, most first."""
        wanted = sorted(set(terms))
        if not wanted:
            return []
        marks = ", ".join("?" for _ in wanted)
        rows = self.tx.execute(
            f"SELECT entity_id, COUNT(*) AS n FROM graph_entity_terms WHERE ns = ? AND term IN "
            f"({marks}) GROUP BY entity_id ORDER BY n DESC, entity_id LIMIT ?",
            (self.ns, *wanted, limit)).fetchall()
        return [(int(r[0]), int(r[1])) for r in rows]

    def named_in(self, key: str, terms: Iterable[str], limit: int) -> dict[int, Entity]:
        """Entities whose normalised name or alias is ``key``, and the ``limit`` sharing the
        most name terms with ``terms``: :meth:`by_keys` and :meth:`by_terms` read with their
        entities in one statement (one round trip)."""
        wanted = sorted(set(terms))
        parts = ["SELECT entity_id FROM graph_entity_keys WHERE ns = ? AND key = ?"]
        args: list[Any] = [self.ns, key]
        if wanted:
            marks = ", ".join("?" for _ in wanted)
            parts.append(f"SELECT entity_id FROM (SELECT entity_id, COUNT(*) AS n FROM "
                         f"graph_entity_terms WHERE ns = ? AND term IN ({marks}) GROUP BY "
                         f"entity_id ORDER BY n DESC, entity_id LIMIT ?) t")
            args += [self.ns, *wanted, limit]
        rows = self.tx.execute(f"{_ENTITY_SELECT} WHERE ns = ? AND id IN "
                               f"({' UNION '.join(parts)})", (self.ns, *args)).fetchall()
        return {e.id: e for e in self._parsed(rows, entity_of_row, "graph_entities")}

    def entity_vectors(self, after: int) -> list[tuple[int, bytes]]:
        """``(id, embedding)`` of the entities with an id above ``after``, by id."""
        rows = self.tx.execute("SELECT id, embedding FROM graph_entities WHERE ns = ? AND "
                               "id > ? AND embedding IS NOT NULL ORDER BY id",
                               (self.ns, after)).fetchall()
        return [(int(r[0]), bytes(r[1])) for r in rows]

    # -- facts ------------------------------------------------------------------------------

    def insert_fact(self, subject_id: int, predicate: str, object_id: int | None,
                    value: str | None, text: str, valid_at: float | None,
                    invalid_at: float | None, recorded_at: float, expired_at: float | None,
                    episode_id: int, embedding: npt.NDArray[np.float32] | None) -> Fact:
        """Store a fact with its postings, edges and the namespace's BM25 statistics."""
        terms = Counter(self.tokenizer.tokenize(text))
        length = sum(terms.values())
        fact_id = self.tx.insert(
            "INSERT INTO graph_facts (ns, subject_id, predicate, object_id, value, fact, "
            "embedding, valid_at, invalid_at, recorded_at, expired_at, episodes, n_terms) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (self.ns, subject_id, predicate, object_id, value, text, _blob(embedding),
             valid_at, invalid_at, recorded_at, expired_at, _json([episode_id]), length))
        self.tx.executemany("INSERT INTO graph_fact_terms (ns, term, fact_id, tf, len) "
                            "VALUES (?, ?, ?, ?, ?)",
                            [(self.ns, t, fact_id, n, length)
                             for t, n in sorted(terms.items())])
        if object_id is not None:
            pairs = {(subject_id, object_id), (object_id, subject_id)}
            self.tx.executemany("INSERT INTO graph_edges (src, dst, fact_id) VALUES (?, ?, ?)",
                                [(a, b, fact_id) for a, b in sorted(pairs)])
        if length:
            self.tx.execute(
                "INSERT INTO graph_stats (ns, n_docs, total_len) VALUES (?, 1, ?) "
                "ON CONFLICT (ns) DO UPDATE SET n_docs = graph_stats.n_docs + 1, "
                "total_len = graph_stats.total_len + excluded.total_len", (self.ns, length))
        return Fact(fact_id, subject_id, predicate, object_id, value, text, valid_at,
                    invalid_at, recorded_at, expired_at, (episode_id,))

    def add_source(self, fact: Fact, episode_id: int) -> Fact:
        """Record that episode ``episode_id`` stated ``fact`` again."""
        if episode_id in fact.episodes:
            return fact
        episodes = (*fact.episodes, episode_id)
        self.tx.execute("UPDATE graph_facts SET episodes = ? WHERE id = ?",
                        (_json(list(episodes)), fact.id))
        return Fact(fact.id, fact.subject_id, fact.predicate, fact.object_id, fact.value,
                    fact.fact, fact.valid_at, fact.invalid_at, fact.recorded_at,
                    fact.expired_at, episodes)

    def end(self, fact: Fact, valid_at: float | None, invalid_at: float,
            expired_at: float) -> None:
        """Set when ``fact`` stopped holding (never deletes it)."""
        self.tx.execute("UPDATE graph_facts SET valid_at = ?, invalid_at = ?, expired_at = ? "
                        "WHERE id = ?", (valid_at, invalid_at, expired_at, fact.id))

    def facts(self, ids: Iterable[int] | None = None, *, as_of: float | None = None,
              known_at: float | None = None) -> dict[int, Fact]:
        """Facts of this graph by id (``None``: all) passing the validity rule."""
        valid, params = schema.validity_sql(as_of, known_at)
        query = f"{schema.select_facts()} WHERE f.ns = ? AND {valid}"
        args: list[Any] = [self.ns, *params]
        if ids is not None:
            wanted = sorted(set(ids))
            if not wanted:
                return {}
            query += f" AND f.id IN ({', '.join('?' for _ in wanted)})"
            args.extend(wanted)
        rows = self.tx.execute(query + " ORDER BY f.id", args).fetchall()
        return {f.id: f for f in self._parsed(rows, fact_of_row, "graph_facts")}

    def valid_ids(self, ids: Iterable[int], *, as_of: float | None,
                  known_at: float | None) -> set[int]:
        """Which of these fact ids (of this graph) pass the validity rule."""
        wanted = sorted(set(ids))
        if not wanted:
            return set()
        valid, params = schema.validity_sql(as_of, known_at)
        marks = ", ".join("?" for _ in wanted)
        rows = self.tx.execute(f"SELECT f.id FROM graph_facts f WHERE f.ns = ? AND f.id IN "
                               f"({marks}) AND {valid}", (self.ns, *wanted, *params))
        return {int(r[0]) for r in rows.fetchall()}

    def facts_about(self, entity_ids: Iterable[int], *, as_of: float | None = None,
                    known_at: float | None = None, current: bool = False) -> list[Fact]:
        """Facts whose subject or object is one of ``entity_ids``; ``current``: only those
        not yet ended (``invalid_at`` unset)."""
        wanted = sorted(set(entity_ids))
        if not wanted:
            return []
        marks = ", ".join("?" for _ in wanted)
        valid, params = schema.validity_sql(as_of, known_at)
        live = " AND f.invalid_at IS NULL" if current else ""
        # one indexed lookup per end (an OR of the two lets planners scan the namespace)
        found: dict[int, Fact] = {}
        for end in ("subject_id", "object_id"):
            query = (f"{schema.select_facts()} WHERE f.{end} IN ({marks}) AND f.ns = ? "
                     f"AND {valid}{live}")
            rows = self.tx.execute(query, (*wanted, self.ns, *params)).fetchall()
            for fact in self._parsed(rows, fact_of_row, "graph_facts"):
                found[fact.id] = fact
        return [found[i] for i in sorted(found)]

    def ends_about(self, entity_ids: Iterable[int], *, as_of: float | None = None,
                   known_at: float | None = None) -> list[tuple[int, int, int | None]]:
        """``(fact id, subject id, object id)`` of the facts :meth:`facts_about` finds: what
        ranking by graph distance needs, without reading the facts themselves."""
        wanted = sorted(set(entity_ids))
        if not wanted:
            return []
        marks = ", ".join("?" for _ in wanted)
        valid, params = schema.validity_sql(as_of, known_at)
        # one indexed lookup per end, in one statement (one round trip); UNION ALL, deduped
        # here: with UNION (or ORDER BY) SQLite merges two scans of the namespace instead
        query = " UNION ALL ".join(
            f"SELECT f.id, f.subject_id, f.object_id FROM graph_facts f WHERE "
            f"f.{end} IN ({marks}) AND f.ns = ? AND {valid}"
            for end in ("subject_id", "object_id"))
        found = {int(r[0]): (int(r[0]), int(r[1]), None if r[2] is None else int(r[2]))
                 for r in self.tx.execute(query, (*wanted, self.ns, *params) * 2).fetchall()}
        return [found[i] for i in sorted(found)]

    def keyword(self, terms: Sequence[str], as_of: float | None, known_at: float | None,
                limit: int, params: BM25Params = _BM25,
                max_postings: int | None = None) -> list[tuple[int, float]]:
        """The best ``limit`` facts by BM25 for the query terms, ``(fact id, score)``.

        The scoring of :func:`remem.retrieval.bm25.bm25_scores` (non-negative IDF, ``k1``/``b``
        saturation and length normalisation, the namespace's statistics, ties by id), summed
        by the database: one statement reads each term's postings from the postings index,
        scores them, adds them up per fact (checking the validity rule when a time is given)
        and answers only the best ``limit``, so no posting crosses into Python. Sums are
        rounded to 12 decimals, so the order of additions (which SQL leaves open) cannot
        split equal scores. ``max_postings``: of a term with more postings than this, read
        only its best ones (most occurrences, then shortest facts); its document frequency
        is still counted whole. Exact for every term under the bound."""
        counted = Counter(terms)
        _, n_docs, total_len = self.doc_freq([])
        if n_docs <= 0:
            return []
        avg_len = total_len / n_docs if total_len > 0 else 1.0
        k1, b = params.k1, params.b
        parts: list[str] = []
        args: list[Any] = []
        for term in sorted(counted):
            df = self._term_df(term, n_docs)
            if df == 0:
                continue
            idf = math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
            # a repeated query term counts each time: its weight is multiplied
            read = ("SELECT fact_id, tf, len FROM graph_fact_terms WHERE ns = ? AND term = ?"
                    + (" ORDER BY tf DESC, len LIMIT ?" if max_postings is not None
                       and df > max_postings else ""))
            parts.append(f"SELECT fact_id, ? * tf / (tf + ? * (? + ? * len)) AS s "
                         f"FROM ({read}) t{len(parts)}")
            args += [counted[term] * idf * (k1 + 1.0), k1, 1.0 - b, b / avg_len, self.ns, term]
            if max_postings is not None and df > max_postings:
                args.append(int(max_postings))
        if not parts:
            return []
        # PostgreSQL rounds a double to an integer only: scale, round, scale back (a cast to
        # NUMERIC rounds the same but costs more than the rest of the aggregation)
        total = "ROUND(SUM(p.s), 12)" if self.tx.dialect == "sqlite" else \
            "ROUND(SUM(p.s) * 1e12) / 1e12"
        query = (f"SELECT p.fact_id, {total} AS score FROM ({' UNION ALL '.join(parts)}) p "
                 f"GROUP BY p.fact_id ORDER BY score DESC, p.fact_id LIMIT ? OFFSET ?")
        if as_of is None and known_at is None:
            rows = self.tx.execute(query, [*args, limit, 0]).fetchall()
            return [(int(r[0]), float(r[1])) for r in rows]
        # check validity best first, a page at a time, until the page is full: the time
        # filter usually keeps most facts, so this reads far fewer rows than all hits
        kept: list[tuple[int, float]] = []
        step = max(4 * limit, 200)
        for start in itertools.count(0, step):
            page = [(int(r[0]), float(r[1]))
                    for r in self.tx.execute(query, [*args, step, start]).fetchall()]
            keep = self.valid_ids([i for i, _ in page], as_of=as_of, known_at=known_at)
            kept += [p for p in page if p[0] in keep]
            if len(kept) >= limit or len(page) < step:
                break
        return kept[:limit]

    def _term_df(self, term: str, n_docs: int) -> int:
        """A term's document frequency, cached until the namespace's document count
        changes (every fact written changes it; facts are never deleted)."""
        cached = self.df_cache.get(term)
        if cached is not None and cached[0] == n_docs:
            return cached[1]
        row = self.tx.execute("SELECT COUNT(*) FROM graph_fact_terms WHERE ns = ? AND term = ?",
                              (self.ns, term)).fetchone()
        df = int(row[0])
        if len(self.df_cache) >= 4096:
            self.df_cache.clear()
        self.df_cache[term] = (n_docs, df)
        return df

    def doc_freq(self, terms: Sequence[str]) -> tuple[dict[str, int], int, int]:
        """``(document frequency per term, documents, total length)`` over the graph."""
        wanted = sorted(set(terms))
        row = self.tx.execute("SELECT n_docs, total_len FROM graph_stats WHERE ns = ?",
                              (self.ns,)).fetchone()
        if row is None or not wanted:
            return {}, 0 if row is None else int(row[0]), 0 if row is None else int(row[1])
        marks = ", ".join("?" for _ in wanted)
        rows = self.tx.execute(f"SELECT term, COUNT(*) FROM graph_fact_terms WHERE ns = ? AND "
                               f"term IN ({marks}) GROUP BY term", (self.ns, *wanted))
        return {r[0]: int(r[1]) for r in rows.fetchall()}, int(row[0]), int(row[1])

    def fact_vectors(self, after: int) -> list[tuple[int, bytes]]:
        """``(id, embedding)`` of the facts with an id above ``after``, by id."""
        rows = self.tx.execute("SELECT id, embedding FROM graph_facts WHERE ns = ? AND id > ? "
                               "AND embedding IS NOT NULL ORDER BY id",
                               (self.ns, after)).fetchall()
        return [(int(r[0]), bytes(r[1])) for r in rows]

    def reach(self, seeds: Sequence[int], hops: int, as_of: float | None,
              known_at: float | None) -> dict[int, tuple[int, tuple[int, ...]]]:
        """Entities within ``hops`` of ``seeds``: id -> (depth, entity ids walked)."""
        if not seeds or hops < 0:
            return {}
        query, params = schema.expansion_sql(sorted(set(seeds)), hops, as_of, known_at,
                                             self.ns)
        found: dict[int, tuple[int, tuple[int, ...]]] = {}
        for entity_id, depth, path in self.tx.execute(query, params).fetchall():
            entity_id, depth = int(entity_id), int(depth)
            if entity_id not in found or depth < found[entity_id][0]:
                found[entity_id] = (depth, tuple(int(p) for p in str(path).split(",")))
        return found
