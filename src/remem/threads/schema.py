"""The thread schema and the I/O-free core of thread storage: migrations, SQL, pure planning.

Storage model (why appends, tail reads and forks stay fast at any length):

* A **branch** is a run of message positions owned by one thread. Branch ``b`` holds the
  messages at positions ``base_position(b) <= p < length(b)``; earlier positions are read from
  its base branch (recursively). A thread starts with one branch without base.
* Every message is stored **once**, in ``thread_messages`` keyed by ``(branch, position)``.
  Rows are never rewritten: an append writes new positions at the end of a branch.
* A **checkpoint** is ``(branch, position)`` plus a parent, a small state and metadata. Its
  messages are positions ``0 .. position - 1`` read along the branch chain, so a checkpoint
  sees exactly the messages as of its creation whatever happened later.
* Appending after a checkpoint that is not the end of a branch this thread owns (after a
  rewind, or in a fork) starts a new branch based on it (structural sharing): fork is O(1).
  ``copy`` duplicates the messages instead.
* States are shared rows: a checkpoint that does not change the state points at its parent's.

The statements below are shared by both dialects: they use ``?`` placeholders, which
:class:`remem.db.Tx` translates (PostgreSQL connections' ``search_path`` names the schema). Each
dialect has its own migrations. Everything here is free of I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from remem.db import Migration, Schema

__all__ = ["THREAD_MIGRATIONS", "THREAD_MIGRATIONS_POSTGRES", "THREAD_SCHEMA", "Segment",
           "segments"]

THREAD_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "t001_threads",
        (
            # head: the current checkpoint; source: the checkpoint a fork or copy started from
            """CREATE TABLE threads (
                id TEXT PRIMARY KEY,
                metadata TEXT NOT NULL,
                head TEXT NOT NULL,
                source TEXT,
                created_at REAL NOT NULL,
                updated_at REAL NOT NULL,
                ttl REAL,
                expires_at REAL
            )""",
            "CREATE INDEX threads_updated ON threads (updated_at DESC)",
            "CREATE INDEX threads_expires ON threads (expires_at) WHERE expires_at IS NOT NULL",
            # AUTOINCREMENT: ids are cached by readers (branches are immutable but for length),
            # so an id must never be reused after garbage collection.
            # thread_id NULL: the owner was deleted but a fork still reads these messages.
            """CREATE TABLE thread_branches (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                thread_id TEXT,
                base_id INTEGER,
                base_position INTEGER NOT NULL,
                length INTEGER NOT NULL
            )""",
            "CREATE INDEX thread_branches_thread ON thread_branches (thread_id)",
            "CREATE INDEX thread_branches_base ON thread_branches (base_id)",
            """CREATE TABLE thread_messages (
                branch_id INTEGER NOT NULL,
                position INTEGER NOT NULL,
                id TEXT NOT NULL,
                data TEXT NOT NULL,
                PRIMARY KEY (branch_id, position)
            )""",
            "CREATE TABLE thread_states (id INTEGER PRIMARY KEY AUTOINCREMENT, data TEXT NOT NULL)",
            # seq orders the checkpoints of a thread (newest last)
            """CREATE TABLE thread_checkpoints (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL UNIQUE,
                thread_id TEXT NOT NULL,
                parent_id TEXT,
                branch_id INTEGER NOT NULL,
                position INTEGER NOT NULL,
                state_id INTEGER NOT NULL,
                metadata TEXT NOT NULL,
                created_at REAL NOT NULL
            )""",
            "CREATE INDEX thread_checkpoints_thread ON thread_checkpoints (thread_id, seq)",
            "CREATE INDEX thread_checkpoints_state ON thread_checkpoints (state_id)",
        ),
    ),
)

#: the same tables in PostgreSQL (``{s}``: the quoted schema); identity ids are never reused
THREAD_MIGRATIONS_POSTGRES: tuple[Migration, ...] = (
    Migration(
        "t001_threads",
        (
            # metadata: the JSON text as written; metadata_doc: the jsonb shadow filters read
            """CREATE TABLE {s}.threads (
                id text PRIMARY KEY,
                metadata text NOT NULL,
                metadata_doc jsonb NOT NULL,
                head text NOT NULL,
                source text,
                created_at double precision NOT NULL,
                updated_at double precision NOT NULL,
                ttl double precision,
                expires_at double precision
            )""",
            "CREATE INDEX threads_updated ON {s}.threads (updated_at DESC)",
            "CREATE INDEX threads_expires ON {s}.threads (expires_at) "
            "WHERE expires_at IS NOT NULL",
            """CREATE TABLE {s}.thread_branches (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                thread_id text,
                base_id bigint,
                base_position bigint NOT NULL,
                length bigint NOT NULL
            )""",
            "CREATE INDEX thread_branches_thread ON {s}.thread_branches (thread_id)",
            "CREATE INDEX thread_branches_base ON {s}.thread_branches (base_id)",
            """CREATE TABLE {s}.thread_messages (
                branch_id bigint NOT NULL,
                position bigint NOT NULL,
                id text NOT NULL,
                data text NOT NULL,
                PRIMARY KEY (branch_id, position)
            )""",
            """CREATE TABLE {s}.thread_states (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                data text NOT NULL
            )""",
            """CREATE TABLE {s}.thread_checkpoints (
                seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                id text NOT NULL UNIQUE,
                thread_id text NOT NULL,
                parent_id text,
                branch_id bigint NOT NULL,
                position bigint NOT NULL,
                state_id bigint NOT NULL,
                metadata text NOT NULL,
                created_at double precision NOT NULL
            )""",
            "CREATE INDEX thread_checkpoints_thread ON {s}.thread_checkpoints (thread_id, seq)",
            "CREATE INDEX thread_checkpoints_state ON {s}.thread_checkpoints (state_id)",
        ),
    ),
)

ALIVE = "(t.expires_at IS NULL OR t.expires_at > ?)"

#: the thread, its head checkpoint, the head's branch and state, in one row
SELECT_HEAD = (
    "SELECT t.id, t.metadata, t.head, t.source, t.created_at, t.updated_at, t.ttl, "
    "t.expires_at, c.parent_id, c.branch_id, c.position, c.state_id, s.data, c.metadata, "
    "c.created_at, b.thread_id, b.length "
    "FROM threads t JOIN thread_checkpoints c ON c.id = t.head "
    "JOIN thread_states s ON s.id = c.state_id JOIN thread_branches b ON b.id = c.branch_id "
)

SELECT_CHECKPOINT = (
    "SELECT c.id, c.thread_id, c.parent_id, c.branch_id, c.position, c.state_id, s.data, "
    "c.metadata, c.created_at FROM thread_checkpoints c "
    "JOIN thread_states s ON s.id = c.state_id "
)

INSERT_CHECKPOINT = (
    "INSERT INTO thread_checkpoints (id, thread_id, parent_id, branch_id, position, state_id, "
    "metadata, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
INSERT_BRANCH = (
    "INSERT INTO thread_branches (thread_id, base_id, base_position, length) VALUES (?, ?, ?, ?)"
)
INSERT_MESSAGE = "INSERT INTO thread_messages (branch_id, position, id, data) VALUES (?, ?, ?, ?)"
SELECT_MESSAGES = (
    "SELECT data FROM thread_messages WHERE branch_id = ? AND position >= ? AND position < ? "
    "ORDER BY position"
)
COPY_MESSAGES = (
    "INSERT INTO thread_messages (branch_id, position, id, data) "
    "SELECT CAST(? AS bigint), position, id, data FROM thread_messages "
    "WHERE branch_id = ? AND position >= ? AND position < ?"
)
#: branches nobody owns and nobody builds on: their messages can go
ORPHAN_BRANCHES = (
    "SELECT b.id FROM thread_branches b WHERE b.thread_id IS NULL AND NOT EXISTS "
    "(SELECT 1 FROM thread_branches c WHERE c.base_id = b.id)"
)


@dataclass(frozen=True, slots=True)
class Segment:
    """Positions ``start .. stop - 1`` are stored in branch ``branch``."""

    branch: int
    start: int
    stop: int


def segments(base_of: Callable[[int], tuple[int | None, int]], branch: int, start: int,
             stop: int) -> list[Segment]:
    """Where positions ``start .. stop - 1`` of a checkpoint on ``branch`` are stored, in order.

    ``base_of(branch)`` returns ``(base branch, base position)``; positions before the base
    position live in the base branch. Pure: the caller supplies the lookup (cached, since a
    branch's base never changes).
    """
    found: list[Segment] = []
    current: int | None = branch
    high = stop
    while high > start and current is not None:
        base, base_position = base_of(current)
        low = max(start, base_position)
        if low < high:
            found.append(Segment(current, low, high))
        high = min(high, base_position)
        current = base
    found.reverse()
    return found


#: the threads' tables in both dialects (family ``t``)
THREAD_SCHEMA = Schema("threads", THREAD_MIGRATIONS, THREAD_MIGRATIONS_POSTGRES)
