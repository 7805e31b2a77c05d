"""The store's PostgreSQL schema, one migration per step (applied by
:func:`remem.db.migrations.apply_postgres`, as every family's are).

Never edit a released migration: add one. Statements name tables as ``{s}.table``; the store
fills in its (quoted) schema, so several stores can live in one database.
"""

from __future__ import annotations

from remem.db.migrations import Migration

__all__ = ["POSTGRES_MIGRATIONS"]

POSTGRES_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "m001_items",
        (
            "CREATE TABLE IF NOT EXISTS {s}.remem_meta (key text PRIMARY KEY, value text NOT NULL)",
            # ns: the labels, each followed by \x1f, so a namespace prefix is a string prefix
            # and byte order (COLLATE "C") equals tuple order, as in the SQLite backend.
            # value: the JSON text exactly as written (round trips NUL and key order);
            # doc: the jsonb shadow filters run on (remem.store.filters_postgres.postgres_document).
            """CREATE TABLE {s}.items (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                ns text COLLATE "C" NOT NULL,
                key text COLLATE "C" NOT NULL,
                value text NOT NULL,
                doc jsonb NOT NULL,
                created_at double precision NOT NULL,
                updated_at double precision NOT NULL,
                ttl double precision,
                expires_at double precision,
                event_at double precision,
                doc_len integer NOT NULL DEFAULT 0,
                UNIQUE (ns, key)
            )""",
            # newest-first pages of one namespace walk this index and stop after LIMIT rows
            "CREATE INDEX items_ns_updated ON {s}.items (ns, updated_at DESC, key)",
            "CREATE INDEX items_expires ON {s}.items (expires_at) WHERE expires_at IS NOT NULL",
            # BM25 statistics (count, total length) under a prefix
            "CREATE INDEX items_keyword ON {s}.items (ns) INCLUDE (doc_len, expires_at) "
            "WHERE doc_len > 0",
            # one row per (term, item); BM25 is computed in Python from these, as on every
            # backend, so ranking is identical
            """CREATE TABLE {s}.postings (
                term text COLLATE "C" NOT NULL,
                item_id bigint NOT NULL REFERENCES {s}.items (id) ON DELETE CASCADE,
                tf integer NOT NULL,
                PRIMARY KEY (term, item_id)
            )""",
            "CREATE INDEX postings_item ON {s}.postings (item_id)",
            """CREATE TABLE {s}.embedding_models (
                id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                name text NOT NULL,
                dims integer NOT NULL,
                UNIQUE (name, dims)
            )""",
            # vec has no fixed dimension: each model gets a partial HNSW index on
            # (vec::vector(dims)) WHERE model_id = its id, built by PostgresStore.setup.
            # ns is copied from the item so a namespace-scoped search reads only its rows.
            """CREATE TABLE {s}.vectors (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                item_id bigint NOT NULL REFERENCES {s}.items (id) ON DELETE CASCADE,
                ns text COLLATE "C" NOT NULL,
                field text NOT NULL,
                model_id integer NOT NULL REFERENCES {s}.embedding_models (id),
                vec vector NOT NULL,
                text_hash bytea
            )""",
            "CREATE INDEX vectors_item ON {s}.vectors (item_id)",
            "CREATE INDEX vectors_scope ON {s}.vectors (model_id, ns)",
            "CREATE INDEX vectors_text_hash ON {s}.vectors (text_hash) "
            "WHERE text_hash IS NOT NULL",
        ),
    ),
    Migration(
        "m002_items_newest_first",
        (
            # a newest-first listing of a wide prefix (a whole tenant) walks this from the
            # newest entry and stops once the page is full, instead of sorting the prefix
            "CREATE INDEX IF NOT EXISTS items_updated ON {s}.items (updated_at DESC, ns, key)",
        ),
    ),
)
