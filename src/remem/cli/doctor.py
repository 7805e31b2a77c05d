"""``remem doctor``: find the stored records that do not parse, and move them aside.

Every family reads its records with one parser per record kind (:mod:`remem.store.bad_records`);
a reader skips a record that does not parse. This command runs the same parsers over a whole
database (SQLite file or PostgreSQL DSN): every store item of a family's layout (at the top
of the store and in each tenant's scope of ``remem serve``) and every row of the graph's
tables. It prints the bad records (family, namespace, key, reason) and exits 1 when it finds
any; ``--tenant`` checks one tenant's scope only.

``--repair`` moves each bad record aside: a copy goes to the quarantine namespace
``_remem.quarantine`` of its scope (the original namespace, key, reason and value, so nothing
is lost and it can be put back once fixed; see docs/doctor.md), then the record is taken out
of its family's way:

* a store item (a memory, history event, id entry, head, episode, prompt version, thread
  index entry, file history event) is deleted;
* a prompt's head is rebuilt from its latest stored version (deleted when it has none);
* a file record is replaced by a tombstone at the version its history reached (an undo
  brings back the last content the history knows);
* a file whose content does not parse as its family's (a block, an agent's block list, an
  approval, a ``SKILL.md``) is deleted through the files API, so its history keeps it;
* a graph row is deleted with the postings, edges and name keys that index it.

``--delete`` does the same without keeping a copy. Without either option nothing is written.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import click
from rich.console import Console
from rich.table import Table

from remem.cli.common import CommandFailed, db_option, format_namespace
from remem.store import BaseStore, is_dsn, open_store
from remem.store.bad_records import BadRecord, try_parse
from remem.store.types import DeleteOp, Item, Namespace, Op, PutOp

__all__ = ["QUARANTINE", "Finding", "doctor_command", "repair", "scan"]

#: where ``--repair`` keeps the copies, under each scope
QUARANTINE: Final = ("_remem", "quarantine")
#: the server keeps each tenant's scope under ``("tenants", <tenant>)``
_TENANTS: Final = "tenants"
_SERVER: Final = "_remem_server"
_FILE_ROOTS: Final = frozenset({"files", "blocks", "approvals"})
_HASH: Final = re.compile(r"[0-9a-f]{32}")
_BLOCK: Final = re.compile(r"/blocks/[^/]+\.json")
_AGENT: Final = re.compile(r"/blocks/_agents/[^/]+\.json")
_APPROVAL: Final = re.compile(r"/approvals/[^/]+\.json")
_SKILL: Final = re.compile(r"/skills/[^/]+/SKILL\.md")


@dataclass(frozen=True, slots=True)
class Finding:
    """A bad record and how to take it out of the way: ``how`` is ``"item"`` (a store
    item: ``item``), ``"head"`` (a prompt's head), ``"file"`` (a file record: ``backend``),
    ``"content"`` (a file whose content is bad: ``backend`` and ``path``) or ``"row"`` (a
    graph row: ``row``)."""

    bad: BadRecord
    scope: Namespace
    how: str
    item: Item | None = None
    backend: Namespace = ()
    path: str = ""
    row: tuple[str, str, int, dict[str, Any]] | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``--json``)."""
        return self.bad.to_dict()


# -- scanning the store -------------------------------------------------------------------------


def _split(namespace: Namespace) -> tuple[Namespace, Namespace]:
    """``(scope, the rest)``: a tenant's scope of ``remem serve``, or the store's top."""
    if len(namespace) >= 2 and namespace[0] == _TENANTS:
        return namespace[:2], namespace[2:]
    return (), namespace


def _memory_parser(rest: Namespace, item: Item) -> tuple[str, Callable[[Item], object]] | None:
    from remem.memory.history import HistoryEvent, IdEntry
    from remem.memory.records import RESERVED_LABEL, MemoryRecord
    from remem.memory.writer import head_count

    if rest[0] == RESERVED_LABEL:
        kind = rest[1] if len(rest) > 1 else ""
        if rest == (RESERVED_LABEL, "ids"):
            return "memory_ids", lambda i: IdEntry.from_value(i.value)
        if rest == (RESERVED_LABEL, "heads"):
            return "memory_heads", head_count
        if kind == "history":
            return "memory_history", lambda i: HistoryEvent.from_value(i.value)
        return None  # locks, gates, applied markers, the quarantine itself
    if item.value.get("type") in ("memory", "memory_version"):
        return "memories", MemoryRecord.from_item
    return None


def _file_layout(rest: Namespace, item: Item) -> tuple[str, int] | None:
    """``("files" | "history", i)`` when ``rest[i]`` starts a file backend's records or
    history (the backend's namespace is ``rest[:i]``)."""
    if rest[0] not in _FILE_ROOTS and item.value.get("type") not in ("file", "file_event"):
        return None
    for i in range(1, len(rest)):
        if rest[i] == "files" and all(label.startswith("/") for label in rest[i + 1:]):
            return "files", i
        if rest[i] == "history" and len(rest) == i + 2 and _HASH.fullmatch(rest[i + 1]):
            return "history", i
    return None


def _content_parser(backend_root: str, path: str) -> tuple[str, Callable[[Any], object]] | None:
    """The family and parser of a file's content, for the layouts of the blocks (backend
    ``blocks``), the approvals (backend ``approvals``) and skills (any backend)."""
    from remem.blocks.store import agent_block_ids, block_of
    from remem.files.approvals import approval_of
    from remem.files.skills import parse_skill

    if backend_root == "blocks" and _AGENT.fullmatch(path):
        return "block_agents", lambda read: agent_block_ids(read.content)
    if backend_root == "blocks" and _BLOCK.fullmatch(path):
        return "blocks", lambda read: block_of(path, read)
    if backend_root == "approvals" and _APPROVAL.fullmatch(path):
        return "approvals", approval_of
    if _SKILL.fullmatch(path):
        return "skills", lambda read: parse_skill(path, read.content)
    return None


def _check_file(store: BaseStore, scope: Namespace, rest: Namespace, i: int, item: Item,
                counted: Counter[str]) -> Iterator[Finding]:
    from remem.files import StoreFileBackend
    from remem.files.types import FileRead, etag_of

    backend = (*scope, *rest[:i])
    files = StoreFileBackend(store, backend)
    counted["files"] += 1
    record = try_parse(files.record_of, item, family="files", namespace=item.namespace,
                       key=item.key)
    if isinstance(record, BadRecord):
        yield Finding(record, scope, "file", item, backend)
        return
    if record.content is None:
        return
    found = _content_parser(rest[0], record.path)
    if found is None:
        return
    family, parser = found
    counted[family] += 1
    lines = record.content.count("\n") + 1
    read = FileRead(record.path, record.content, etag_of(record.content), 0, lines, lines)
    directory, _, name = record.path.rpartition("/")
    parsed = try_parse(parser, read, family=family, namespace=(directory or "/",), key=name)
    if isinstance(parsed, BadRecord):
        yield Finding(parsed, scope, "content", item, backend, record.path)


def _family_parser(rest: Namespace, item: Item) -> tuple[str, str, Callable[[Item], object]] \
        | None:
    """``(family, how, parser)`` of the items of the prompts, episodes and thread index."""
    from remem.episodic.episodes import episode_of
    from remem.procedural.prompts import prompt_head_of, prompt_version_of
    from remem.threads.search import index_entry_of

    if rest == ("prompts", "head"):
        return "prompts", "head", prompt_head_of
    if len(rest) == 3 and rest[:2] == ("prompts", "versions"):
        return "prompts", "item", prompt_version_of
    if rest == ("episodes",):
        return "episodes", "item", episode_of
    if len(rest) == 2 and rest[0] == "threads":
        return "thread_index", "item", lambda i: index_entry_of(i.value)
    return None


def _check_item(store: BaseStore, item: Item, counted: Counter[str]) -> Iterator[Finding]:
    scope, rest = _split(item.namespace)
    if not rest or rest[0] == _SERVER:
        return
    layout = _file_layout(rest, item)
    if layout is not None:
        kind, i = layout
        if kind == "files":
            yield from _check_file(store, scope, rest, i, item, counted)
            return
        from remem.files.types import FileEvent

        counted["file_history"] += 1
        event = try_parse(lambda it: FileEvent.from_value(it.value), item,
                          family="file_history", namespace=item.namespace, key=item.key)
        if isinstance(event, BadRecord):
            yield Finding(event, scope, "item", item)
        return
    memory = _memory_parser(rest, item)
    found = (memory[0], "item", memory[1]) if memory is not None else \
        _family_parser(rest, item)
    if found is None:
        return
    family, how, parser = found
    counted[family] += 1
    bad = try_parse(parser, item, family=family, namespace=item.namespace, key=item.key)
    if isinstance(bad, BadRecord):
        yield Finding(bad, scope, how, item)


# -- scanning the graph's tables ----------------------------------------------------------------

_GRAPH_COLUMNS: Final = {
    "graph_entities": ("id", "name", "type", "aliases", "summary", "created_at", "updated_at"),
    "graph_facts": ("id", "subject_id", "predicate", "object_id", "value", "fact", "valid_at",
                    "invalid_at", "recorded_at", "expired_at", "episodes"),
    "graph_episodes": ("id", "content", "event_at", "recorded_at", "source_ids", "source"),
    "graph_events": ("id", "happened_at", "text", "tags", "episode_id", "recorded_at"),
}


def _graph_parsers() -> dict[str, Callable[[Sequence[Any]], object]]:
    from remem.graph.profile_rows import event_of_row
    from remem.graph.rows import entity_of_row, episode_of_row, fact_of_row

    return {"graph_entities": entity_of_row, "graph_facts": fact_of_row,
            "graph_episodes": episode_of_row, "graph_events": event_of_row}


def _graph_tables(store: BaseStore) -> bool:
    """Whether the database holds the graph's tables (looked up without creating them)."""
    path, dsn = getattr(store, "path", None), getattr(store, "dsn", None)
    if isinstance(dsn, str):
        import psycopg

        schema = getattr(store, "schema", "remem")
        with psycopg.connect(dsn) as conn:
            row = conn.execute("SELECT to_regclass(%s)", (f"{schema}.graph_facts",)).fetchone()
        return row is not None and row[0] is not None
    if not isinstance(path, str | Path) or str(path) == ":memory:":
        return False
    import sqlite3

    lite = sqlite3.connect(f"file:{Path(path).resolve()}?mode=ro", uri=True)
    try:
        found = lite.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
                             "name = 'graph_facts'").fetchone()
    finally:
        lite.close()
    return found is not None


def _scan_graph(store: BaseStore, prefix: Namespace,
                counted: Counter[str]) -> Iterator[Finding]:
    from remem.graph.storage import persistent_storage_beside
    from remem.store.namespace_codec import decode_ns, encode_ns

    if not _graph_tables(store):
        return
    storage = persistent_storage_beside(store)
    if storage is None:
        return
    parsers = _graph_parsers()
    low = encode_ns(prefix)
    try:
        with storage.transaction(False, low) as tx:
            for table, columns in _GRAPH_COLUMNS.items():
                rows = tx.execute(f"SELECT ns, {', '.join(columns)} FROM {table} "
                                  "ORDER BY ns, id").fetchall()
                for ns, *row in rows:
                    if not str(ns).startswith(low):
                        continue
                    counted["graph"] += 1
                    where = (*decode_ns(str(ns)), table)
                    bad = try_parse(parsers[table], row, family="graph", namespace=where,
                                    key=str(row[0]))
                    if isinstance(bad, BadRecord):
                        raw = {c: v for c, v in zip(columns, row, strict=True)}
                        yield Finding(bad, _split(decode_ns(str(ns)))[0], "row",
                                      row=(table, str(ns), int(row[0]), raw))
    finally:
        storage.close()


def scan(store: BaseStore, prefix: Namespace = ()) -> tuple[list[Finding], dict[str, int]]:
    """Every bad record under ``prefix`` (store items, then graph rows), and how many
    records of each family were checked."""
    counted: Counter[str] = Counter()
    found = [f for item in store.iter_items(prefix) for f in _check_item(store, item, counted)]
    found += _scan_graph(store, prefix, counted)
    return found, dict(sorted(counted.items()))


# -- repairing ----------------------------------------------------------------------------------


def _copy(finding: Finding, now: float) -> PutOp:
    """The quarantine copy of a finding (its key is stable: repairing twice keeps one)."""
    bad = finding.bad
    where = json.dumps([bad.family, list(bad.namespace), bad.key])
    key = f"{bad.family}-{hashlib.sha256(where.encode()).hexdigest()[:24]}"
    if finding.row is not None:
        table, _, _, raw = finding.row
        original: Any = {"table": table, "row": {c: v for c, v in raw.items()
                                                 if not isinstance(v, bytes | memoryview)}}
    elif finding.how == "content":
        assert finding.item is not None
        original = {"path": finding.path, "content": finding.item.value.get("content")}
    else:
        assert finding.item is not None
        original = finding.item.value
    return PutOp((*finding.scope, *QUARANTINE), key, {
        "type": "quarantined", **bad.to_dict(), "at": now,
        # as text: a value at the store's depth limit would not fit one level down
        "value_json": json.dumps(original, ensure_ascii=False, default=str),
    }, index=False, ttl=None)


def _tombstone(store: BaseStore, finding: Finding, now: float) -> list[Op]:
    """A deleted-file record at the version the path's history reached (``previous``: its
    last known content, what an undo brings back); no history: the item goes."""
    from remem.files import StoreFileBackend

    item = finding.item
    assert item is not None
    files = StoreFileBackend(store, finding.backend)
    path = files.path_of(item.namespace, item.key)
    events = files.history(path)  # events that do not parse are left out (and reported)
    if not events:
        return [DeleteOp(item.namespace, item.key)]
    last = max(events, key=lambda e: e.version)
    parts = path.split("/")
    return [PutOp(item.namespace, item.key, {
        "type": "file", "path": path, "content": None, "version": last.version,
        "modified_at": now, "previous": last.after if last.after is not None else last.before,
        "last_op": "delete", "live": False, "name": parts[-1], "depth": len(parts) - 1,
    }, index=False, ttl=None)]


def _rebuilt_head(store: BaseStore, finding: Finding) -> list[Op]:
    """A prompt's head rebuilt from its latest stored version (deleted when it has none)."""
    import uuid

    from remem.procedural.prompts import prompt_version_of
    from remem.store.bad_records import parse_items

    item = finding.item
    assert item is not None
    versions = (*item.namespace[:-1], "versions", item.key)
    found = parse_items(store.iter_items(versions), prompt_version_of, family="prompts")
    latest = max(found, key=lambda v: v.version, default=None)
    if latest is None:
        return [DeleteOp(item.namespace, item.key)]
    return [PutOp(item.namespace, item.key, {"name": item.key, "record": latest.to_dict(),
                                              "write_id": uuid.uuid4().hex}, index=False)]


def _fix(store: BaseStore, finding: Finding, now: float) -> list[Op]:
    """The writes that take a bad store item out of its family's way."""
    item = finding.item
    assert item is not None
    if finding.how == "file":
        return _tombstone(store, finding, now)
    if finding.how == "head":
        return _rebuilt_head(store, finding)
    return [DeleteOp(item.namespace, item.key)]


def repair(store: BaseStore, findings: Sequence[Finding], *, keep: bool = True,
           clock: Callable[[], float] = time.time) -> int:
    """Move each finding aside (``keep``: with a copy in the quarantine of its scope; see
    the module docstring); the number repaired."""
    from remem.files import StoreFileBackend
    from remem.graph.rows import GraphRows
    from remem.graph.storage import persistent_storage_beside
    from remem.retrieval.tokenize import DefaultTokenizer

    done = 0
    for finding in findings:
        now = clock()
        copy = [_copy(finding, now)] if keep else []
        if finding.how == "content":
            if copy:
                store.batch(copy)
            StoreFileBackend(store, finding.backend).delete(finding.path, actor="remem doctor")
        elif finding.how == "row":
            assert finding.row is not None
            table, ns, row_id, _ = finding.row
            if copy:
                store.batch(copy)
            storage = persistent_storage_beside(store)
            assert storage is not None
            try:
                with storage.transaction(True, ns) as tx:
                    GraphRows(tx, ns, DefaultTokenizer()).remove_row(table, row_id)
            finally:
                storage.close()
        else:
            store.batch([*copy, *_fix(store, finding, now)])  # one atomic batch
        done += 1
    return done


# -- the command --------------------------------------------------------------------------------


def _open(db: str) -> BaseStore:
    if db != ":memory:" and not is_dsn(db) and not Path(db).exists():
        raise CommandFailed(f"no database at {db}; pass --db PATH or set REMEM_DB")
    return open_store(db)  # no embedder: records are read, never vectors


def _table(findings: Sequence[Finding]) -> Table:
    table = Table(show_edge=False, pad_edge=False)
    for name in ("family", "namespace", "key", "reason"):
        table.add_column(name, overflow="fold")
    for finding in findings:
        bad = finding.bad
        table.add_row(bad.family, format_namespace(bad.namespace), bad.key, bad.reason)
    return table


@click.command(name="doctor")
@db_option("The database to check (SQLite path or postgresql:// DSN).")
@click.option("--tenant", metavar="NAME", default=None,
              help="Check only this tenant's scope of `remem serve` (default: the whole "
                   "database, every tenant included).")
@click.option("--repair", "move_aside", is_flag=True,
              help="Move each bad record aside: a copy to _remem.quarantine of its scope, "
                   "then out of its family's way (see docs/doctor.md).")
@click.option("--delete", "delete", is_flag=True,
              help="Like --repair, without keeping a copy.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.pass_context
def doctor_command(ctx: click.Context, db: str, tenant: str | None, move_aside: bool,
                   delete: bool, as_json: bool) -> None:
    """Find the stored records that do not parse (every family: memories and their history,
    ids and heads, files, blocks, approvals, skills, prompts, episodes, the thread index, the
    graph). Exits 1 when any are found and left in place, 0 otherwise."""
    if move_aside and delete:
        raise click.UsageError("--repair and --delete are two ways to repair: pick one")
    prefix: Namespace = ()
    if tenant is not None:
        from remem.cli.memory import _tenant_prefix

        prefix = _tenant_prefix(tenant)
    store = _open(db)
    try:
        findings, counted = scan(store, prefix)
        fixed = repair(store, findings, keep=not delete) \
            if (move_aside or delete) and findings else 0
    finally:
        store.close()
    if as_json:
        click.echo(json.dumps({"bad": [f.to_dict() for f in findings], "checked": counted,
                               "repaired": fixed,
                               "kept_in": format_namespace(QUARANTINE) if move_aside else None},
                              ensure_ascii=False, indent=2))
    else:
        total = sum(counted.values())
        if findings:
            Console(soft_wrap=False).print(_table(findings))
        click.echo(f"{len(findings)} bad record(s) among {total} checked"
                   + (f"; repaired {fixed}" + (f" (copies in {format_namespace(QUARANTINE)} "
                                               "of each scope)" if move_aside else " (deleted)")
                      if fixed else ""))
    if findings and not fixed:
        ctx.exit(1)
