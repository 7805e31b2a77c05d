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

from remem.store.migrations import Migration

__all__ = ["FACT_COLUMNS", "GRAPH_MIGRATIONS", "GRAPH_MIGRATIONS_POSTGRES", "expansion_sql",
           "validity_sql"]


def _tables(text: str, real: str, integer: str, blob: str, serial: str, prefix: str,
            clustered: str) -> tuple[str, ...]:
    p, c = prefix, clustered
    return (
        f"""CREATE TABLE {p}graph_episodes (
            id {serial},
            ns {text} NOT NULL,
            content {text} NOT NULL,
            source {text} NOT NULL,
            source_ids {text} NOT NULL,
            event_at {real} NOT NULL,
            recorded_at {real} NOT NULL
        )""",
        f"CREATE INDEX graph_episodes_ns ON {p}graph_episodes (ns, event_at)",
        f"""CREATE TABLE {p}graph_entities (
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
        f"CREATE INDEX graph_entities_ns ON {p}graph_entities (ns, id)",
        f"""CREATE TABLE {p}graph_entity_keys (
            ns {text} NOT NULL,
            key {text} NOT NULL,
            entity_id {integer} NOT NULL,
            PRIMARY KEY (ns, key, entity_id)
        ){c}""",
        f"""CREATE TABLE {p}graph_entity_terms (
            ns {text} NOT NULL,
            term {text} NOT NULL,
            entity_id {integer} NOT NULL,
            PRIMARY KEY (ns, term, entity_id)
        ){c}""",
        f"""CREATE TABLE {p}graph_facts (
            id {serial},
            ns {text} NOT NULL,
            subject_id {integer} NOT NULL,
            predicate {text} NOT NULL,
            object_id {integer},
            value {text},
            fact {text} NOT NULL,
            embedding {blob},
            valid_at {real},
            invalid_at {real},
            recorded_at {real} NOT NULL,
            expired_at {real},
            episodes {text} NOT NULL,
            n_terms {integer} NOT NULL
        )""",
        # the namespace is in these indexes so that a lookup by entity with ns = ? (every
        # read) uses them rather than the namespace index
        f"CREATE INDEX graph_facts_subject ON {p}graph_facts (subject_id, ns, predicate)",
        f"CREATE INDEX graph_facts_object ON {p}graph_facts (object_id, ns)",
        f"CREATE INDEX graph_facts_ns ON {p}graph_facts (ns, id)",
        f"""CREATE TABLE {p}graph_fact_terms (
            ns {text} NOT NULL,
            term {text} NOT NULL,
            fact_id {integer} NOT NULL,
            tf {integer} NOT NULL,
            -- the fact's length in terms, copied here so that BM25 reads only this index
            len {integer} NOT NULL,
            PRIMARY KEY (ns, term, fact_id)
        ){c}""",
        # a common term's best postings first (most occurrences, then shortest facts): what
        # a search reads of a term with more postings than it takes
        f"CREATE INDEX graph_fact_terms_best ON {p}graph_fact_terms (ns, term, tf DESC, len)",
        f"""CREATE TABLE {p}graph_edges (
            src {integer} NOT NULL,
            dst {integer} NOT NULL,
            fact_id {integer} NOT NULL,
            PRIMARY KEY (src, fact_id)
        ){c}""",
        f"""CREATE TABLE {p}graph_stats (
            ns {text} PRIMARY KEY,
            n_docs {integer} NOT NULL,
            total_len {integer} NOT NULL
        )""",
    )


def _profile_tables(text: str, real: str, integer: str, serial: str,
                    prefix: str) -> tuple[str, ...]:
    """The user's profile (one row per slot), its history, and the timeline of events."""
    p = prefix
    return (
        f"""CREATE TABLE {p}graph_profile (
            ns {text} NOT NULL,
            topic {text} NOT NULL,
            sub_topic {text} NOT NULL,
            value {text} NOT NULL,
            updated_at {real} NOT NULL,
            episode_id {integer},
            PRIMARY KEY (ns, topic, sub_topic)
        )""",
        f"""CREATE TABLE {p}graph_profile_history (
            id {serial},
            ns {text} NOT NULL,
            topic {text} NOT NULL,
            sub_topic {text} NOT NULL,
            op {text} NOT NULL,
            old_value {text},
            new_value {text},
            changed_at {real} NOT NULL,
            episode_id {integer}
        )""",
        f"CREATE INDEX graph_profile_history_ns ON {p}graph_profile_history (ns, id)",
        f"""CREATE TABLE {p}graph_events (
            id {serial},
            ns {text} NOT NULL,
            happened_at {real} NOT NULL,
            text {text} NOT NULL,
            tags {text} NOT NULL,
            episode_id {integer},
            recorded_at {real} NOT NULL
        )""",
        f"CREATE INDEX graph_events_ns ON {p}graph_events (ns, happened_at, id)",
    )


def _validity_index(prefix: str) -> tuple[str, ...]:
    """The time lines of each fact in an index beside its id, so a validity check reads the
    index, not the fact's row (which holds its text and embedding)."""
    return (f"CREATE INDEX graph_facts_validity ON {prefix}graph_facts "
            "(ns, id, valid_at, invalid_at, recorded_at, expired_at)",)


def _covering_postings(prefix: str) -> tuple[str, ...]:
    """PostgreSQL: the best-postings index carries the fact id, so that keyword scoring reads
    the index alone (an index-only scan) instead of one heap row per posting. A SQLite
    ``WITHOUT ROWID`` table's indexes already hold the key (``fact_id`` included), so this
    step has no SQLite statement."""
    if not prefix:
        return ()
    return (f"CREATE INDEX graph_fact_terms_best_covering ON {prefix}graph_fact_terms "
            "(ns, term, tf DESC, len) INCLUDE (fact_id)",
            f"DROP INDEX {prefix}graph_fact_terms_best")


GRAPH_MIGRATIONS: tuple[Migration, ...] = (
    # WITHOUT ROWID: the key tables are stored in key order, so a term's postings (with tf
    # and length) or an entity's edges are one contiguous range
    Migration("g001_graph", _tables("TEXT", "REAL", "INTEGER", "BLOB",
                                    "INTEGER PRIMARY KEY AUTOINCREMENT", "", " WITHOUT ROWID")),
    Migration("g002_profile", _profile_tables("TEXT", "REAL", "INTEGER",
                                              "INTEGER PRIMARY KEY AUTOINCREMENT", "")),
    Migration("g003_fact_validity", _validity_index("")),
    Migration("g004_covering_postings", _covering_postings("")),
)
#: ``{s}``: the quoted schema (the store's)
GRAPH_MIGRATIONS_POSTGRES: tuple[Migration, ...] = (
    Migration("g001_graph", _tables("text", "double precision", "bigint", "bytea",
                                    "bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
                                    "{s}.", "")),
    Migration("g002_profile", _profile_tables(
        "text", "double precision", "bigint",
        "bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY", "{s}.")),
    Migration("g003_fact_validity", _validity_index("{s}.")),
    Migration("g004_covering_postings", _covering_postings("{s}.")),
)

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
