"""The graph's tables in each dialect and the statements over them (no I/O).

The graph keeps its tables beside the store's, in the same SQLite file or PostgreSQL schema,
with its own named migrations (family ``g``, recorded in ``remem_migrations`` beside the
store's ``m...``, the threads' ``t...`` and the jobs' ``j...``). Every row carries the encoded
namespace (:mod:`remem.store.namespace_codec`) of the graph it belongs to, so graphs of
different users or tenants share the tables and never see each other's rows.

Tables: ``graph_episodes``; ``graph_entities`` with ``graph_entity_keys`` (normalised names
and aliases, for exact matching) and ``graph_entity_terms`` (name terms, for lexical
matching); ``graph_facts`` with ``graph_fact_terms`` (BM25 postings), ``graph_edges`` (each
fact between two entities twice, once per direction, which is what the recursive expansion
walks) and ``graph_stats`` (document count and length per namespace, for BM25).

Statements use ``?`` placeholders; the PostgreSQL backend turns them into ``%s``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from remem.db import Migration, Schema

__all__ = ["FACT_COLUMNS", "GRAPH_MIGRATIONS", "GRAPH_MIGRATIONS_POSTGRES", "GRAPH_SCHEMA",
           "expansion_sql", "validity_sql"]


#: the graph's tables in both dialects (family ``g``); WITHOUT ROWID (``{clustered}``, SQLite):
#: the key tables are stored in key order, so a term's postings (with tf and length) or an
#: entity's edges are one contiguous range
GRAPH_SCHEMA = Schema.typed("graph", [
    ("g001_graph", (
        """CREATE TABLE {t}graph_episodes (
            id {serial},
            ns {text} NOT NULL,
            content {text} NOT NULL,
            source {text} NOT NULL,
            source_ids {text} NOT NULL,
            event_at {real} NOT NULL,
            recorded_at {real} NOT NULL
        )""",
        "CREATE INDEX graph_episodes_ns ON {t}graph_episodes (ns, event_at)",
        """CREATE TABLE {t}graph_entities (
            id {serial},
            ns {text} NOT NULL,
            name {text} NOT NULL,
            type {text} NOT NULL,
            aliases {text} NOT NULL,
            summary {text} NOT NULL,
            embedding {blob},
            created_at {real} NOT NULL,
            updated_at {real} NOT NULL
        )""",
        "CREATE INDEX graph_entities_ns ON {t}graph_entities (ns, id)",
        """CREATE TABLE {t}graph_entity_keys (
            ns {text} NOT NULL,
            key {text} NOT NULL,
            entity_id {bigint} NOT NULL,
            PRIMARY KEY (ns, key, entity_id)
        ){clustered}""",
        """CREATE TABLE {t}graph_entity_terms (
            ns {text} NOT NULL,
            term {text} NOT NULL,
            entity_id {bigint} NOT NULL,
            PRIMARY KEY (ns, term, entity_id)
        ){clustered}""",
        """CREATE TABLE {t}graph_facts (
            id {serial},
            ns {text} NOT NULL,
            subject_id {bigint} NOT NULL,
            predicate {text} NOT NULL,
            object_id {bigint},
            value {text},
            fact {text} NOT NULL,
            embedding {blob},
            valid_at {real},
            invalid_at {real},
            recorded_at {real} NOT NULL,
            expired_at {real},
            episodes {text} NOT NULL,
            n_terms {bigint} NOT NULL
        )""",
        # the namespace is in these indexes so that a lookup by entity with ns = ? (every
        # read) uses them rather than the namespace index
        "CREATE INDEX graph_facts_subject ON {t}graph_facts (subject_id, ns, predicate)",
        "CREATE INDEX graph_facts_object ON {t}graph_facts (object_id, ns)",
        "CREATE INDEX graph_facts_ns ON {t}graph_facts (ns, id)",
        """CREATE TABLE {t}graph_fact_terms (
            ns {text} NOT NULL,
            term {text} NOT NULL,
            fact_id {bigint} NOT NULL,
            tf {bigint} NOT NULL,
            -- the fact's length in terms, copied here so that BM25 reads only this index
            len {bigint} NOT NULL,
            PRIMARY KEY (ns, term, fact_id)
        ){clustered}""",
        # a common term's best postings first (most occurrences, then shortest facts): what
        # a search reads of a term with more postings than it takes
        "CREATE INDEX graph_fact_terms_best ON {t}graph_fact_terms (ns, term, tf DESC, len)",
        """CREATE TABLE {t}graph_edges (
            src {bigint} NOT NULL,
            dst {bigint} NOT NULL,
            fact_id {bigint} NOT NULL,
            PRIMARY KEY (src, fact_id)
        ){clustered}""",
        """CREATE TABLE {t}graph_stats (
            ns {text} PRIMARY KEY,
            n_docs {bigint} NOT NULL,
            total_len {bigint} NOT NULL
        )""",
    )),
    # the user's profile (one row per slot), its history, and the timeline of events
    ("g002_profile", (
        """CREATE TABLE {t}graph_profile (
            ns {text} NOT NULL,
            topic {text} NOT NULL,
            sub_topic {text} NOT NULL,
            value {text} NOT NULL,
            updated_at {real} NOT NULL,
            episode_id {bigint},
            PRIMARY KEY (ns, topic, sub_topic)
        )""",
        """CREATE TABLE {t}graph_profile_history (
            id {serial},
            ns {text} NOT NULL,
            topic {text} NOT NULL,
            sub_topic {text} NOT NULL,
            op {text} NOT NULL,
            old_value {text},
            new_value {text},
            changed_at {real} NOT NULL,
            episode_id {bigint}
        )""",
        "CREATE INDEX graph_profile_history_ns ON {t}graph_profile_history (ns, id)",
        """CREATE TABLE {t}graph_events (
            id {serial},
            ns {text} NOT NULL,
            happened_at {real} NOT NULL,
            text {text} NOT NULL,
            tags {text} NOT NULL,
            episode_id {bigint},
            recorded_at {real} NOT NULL
        )""",
        "CREATE INDEX graph_events_ns ON {t}graph_events (ns, happened_at, id)",
    )),
    # the time lines of each fact in an index beside its id, so a validity check reads the
    # index, not the fact's row (which holds its text and embedding)
    ("g003_fact_validity", (
        "CREATE INDEX graph_facts_validity ON {t}graph_facts "
        "(ns, id, valid_at, invalid_at, recorded_at, expired_at)",
    )),
    # PostgreSQL: the best-postings index carries the fact id, so that keyword scoring reads
    # the index alone (an index-only scan) instead of one heap row per posting. A SQLite
    # WITHOUT ROWID table's indexes already hold the key (fact_id included): no statement
    ("g004_covering_postings", {"sqlite": (), "postgres": (
        "CREATE INDEX graph_fact_terms_best_covering ON {t}graph_fact_terms "
        "(ns, term, tf DESC, len) INCLUDE (fact_id)",
        "DROP INDEX {t}graph_fact_terms_best",
    )}),
])
GRAPH_MIGRATIONS: tuple[Migration, ...] = GRAPH_SCHEMA.sqlite
#: ``{s}``: the quoted schema (the store's)
GRAPH_MIGRATIONS_POSTGRES: tuple[Migration, ...] = GRAPH_SCHEMA.postgres

FACT_COLUMNS = ("id", "subject_id", "predicate", "object_id", "value", "fact", "valid_at",
                "invalid_at", "recorded_at", "expired_at", "episodes")
ENTITY_COLUMNS = ("id", "name", "type", "aliases", "summary", "created_at", "updated_at")
EPISODE_COLUMNS = ("id", "content", "event_at", "recorded_at", "source_ids", "source")


def select_facts(alias: str = "f") -> str:
    """``SELECT`` of :data:`FACT_COLUMNS` from ``graph_facts`` as ``alias``."""
    return (f"SELECT {', '.join(f'{alias}.{c}' for c in FACT_COLUMNS)} "
            f"FROM graph_facts {alias}")


def validity_sql(as_of: float | None, known_at: float | None,
                 alias: str = "f") -> tuple[str, list[Any]]:
    """The bi-temporal rule of :func:`remem.graph.types.holds` as a SQL condition over the
    fact alias ``alias`` (``"1=1"`` when neither time is given)."""
    clauses: list[str] = []
    params: list[Any] = []
    if known_at is not None:
        clauses.append(f"{alias}.recorded_at <= ?")
        params.append(known_at)
    if as_of is not None:
        clauses.append(f"({alias}.valid_at IS NULL OR {alias}.valid_at <= ?)")
        params.append(as_of)
        ended = f"{alias}.invalid_at IS NULL OR {alias}.invalid_at > ?"
        params.append(as_of)
        if known_at is not None:
            ended += f" OR {alias}.expired_at > ?"
            params.append(known_at)
        clauses.append(f"({ended})")
    return (" AND ".join(clauses) or "1=1"), params


def expansion_sql(seeds: Sequence[int], hops: int, as_of: float | None,
                  known_at: float | None, ns: str) -> tuple[str, list[Any]]:
    """Entities of namespace ``ns`` within ``hops`` edges of ``seeds`` by facts of ``ns``
    that pass the validity rule: rows ``(entity_id, depth, path)`` where ``path`` is the
    comma-separated entity ids walked (``WITH RECURSIVE``, the same text on SQLite and
    PostgreSQL). ``UNION`` (not ``ALL``) drops repeated rows, so cycles end at the depth
    bound. A seed of another namespace starts nothing; a fact links entities of one graph, so
    every entity reached from a seed of ``ns`` is of ``ns`` (a test on the facts' namespace
    would lead SQLite to scan the namespace's facts at each step instead of reading each
    edge's fact by id)."""
    valid, vparams = validity_sql(as_of, known_at)
    marks = ", ".join("?" for _ in seeds)
    query = (
        "WITH RECURSIVE reach(entity_id, depth, path) AS ("
        f"SELECT e.id, 0, CAST(e.id AS TEXT) FROM graph_entities e WHERE e.id IN ({marks}) "
        "AND e.ns = ? "
        "UNION "
        "SELECT g.dst, r.depth + 1, r.path || ',' || CAST(g.dst AS TEXT) FROM reach r "
        "JOIN graph_edges g ON g.src = r.entity_id "
        f"JOIN graph_facts f ON f.id = g.fact_id WHERE r.depth < ? AND {valid}"
        ") SELECT entity_id, depth, path FROM reach"
    )
    return query, [*seeds, ns, hops, *vparams]
