"""Files kept as items of any remem store (SQLite, PostgreSQL, in-memory), through the public
:class:`~remem.store.BaseStore` API only.

Layout under the backend's ``namespace``:

* ``(*namespace, "files", "/a", "/b")``, key = ``c.md``: the record of ``/a/b/c.md`` (content,
  version, the content before its latest change). Each directory is a namespace label (with
  a leading ``/``, so no name can be mistaken for the store's ``*`` wildcard), so listing a
  directory is a namespace-prefix search, which the stores index. A deleted file stays as a
  tombstone (``live: false``) so versions keep counting and the delete can be undone.
  Beside the content a record keeps its ``etag`` and ``size`` (listings need no hashing) and
  its last ``name`` and ``depth`` in segments, which the store filters on in SQL: globbing
  ``*/SKILL.md`` fetches only records named ``SKILL.md`` two levels down. Records written
  before those fields existed lack them; scans always fetch such records too (the glob is
  matched on every record fetched), and any change, or :meth:`StoreFileBackend.upgrade`,
  rewrites them with the fields.
* ``(*namespace, "history", <path hash>)``, key = the zero-padded version: one event per
  change, written in the same batch as the change.

A change takes the path's write lock (:mod:`remem.memory.locking`, tickets built from store
batches, so it holds across processes and on every backend), reads the record in the
acquiring batch, plans the change in pure code, and writes record, event and the lock's
release as one atomic batch. So an ``etag=`` check cannot race: of two writers holding the
same etag, one wins and the other gets :class:`~remem.errors.FileConflictError`.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from remem.files import core
from remem.files.base import RecordBackend, ScanHint
from remem.files.paths import segments
from remem.files.types import FileEvent, FileInfo, FileRecord, etag_of, file_op
from remem.memory.flow import Flow, StoreBatch, run_sync
from remem.memory.locking import LockSettings, acquire, release_op
from remem.store.bad_records import (
    check_record,
    int_field,
    optional_text,
    parse_items,
    parse_or_raise,
    text_field,
    time_field,
)
from remem.store.base import BaseStore
from remem.store.reserved import FILES
from remem.store.types import GetOp, Item, Namespace, Op, PutOp, validate_namespace

__all__ = ["StoreFileBackend"]

_PAGE = 1000


def _path_label(path: str) -> str:
    return hashlib.sha256(path.encode("utf-8")).hexdigest()[:32]


def _event(item: Item) -> FileEvent:
    return FileEvent.from_value(item.value)


def _valued(parse: Callable[[Item], FileRecord]) -> Callable[[Item], Item]:
    """A parser that checks an item with ``parse`` and keeps the item (listings read its
    stored etag and size)."""
    def check(item: Item) -> Item:
        parse(item)
        return item
    return check


#: the records written before records kept ``name`` (and ``depth``, ``etag``, ``size``)
_OLDER: dict[str, Any] = {"name": {"$exists": False}}


def _scan_filter(hint: ScanHint | None) -> dict[str, Any]:
    """The store filter of a scan: live records, of the hint's name and depth when it fixes
    them, plus every record written before records kept ``name`` (the caller matches the
    glob on each)."""
    fixed: dict[str, Any] = {}
    if hint is not None and hint.name is not None:
        fixed["name"] = hint.name
    if hint is not None and hint.depth is not None:
        fixed["depth"] = hint.depth
    if not fixed:
        return {"live": True}
    return {"live": True, "$or": [fixed, _OLDER]}


class StoreFileBackend(RecordBackend):
    """Files (and their history) as items under ``namespace`` in ``store``.

    ``ttl``: seconds until an untouched file (and its history) expires; ``None`` keeps them.
    ``lock``: how long a crashed writer may block a path, and how long a writer waits.
    """

    def __init__(self, store: BaseStore, namespace: Sequence[str] = (FILES,), *,
                 ttl: float | None = None, lock: LockSettings | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        super().__init__(clock=clock)
        self.store = store
        self.namespace: Namespace = validate_namespace(tuple(namespace))
        self.ttl = ttl
        self.lock = lock or LockSettings()
        self._files: Namespace = (*self.namespace, "files")

    def _where(self, path: str) -> tuple[Namespace, str]:
        """The namespace and key of the record of ``path``."""
        parts = segments(path)
        return (*self._files, *(f"/{part}" for part in parts[:-1])), parts[-1]

    def _dir_ns(self, directory: str) -> Namespace:
        return (*self._files, *(f"/{part}" for part in segments(directory)))

    def _history_ns(self, path: str) -> Namespace:
        return (*self.namespace, "history", _path_label(path))

    # -- records <-> items ------------------------------------------------------------------

    def path_of(self, namespace: Namespace, key: str) -> str:
        """The path a record kept at ``namespace`` / ``key`` of this backend must hold."""
        return "/" + "/".join([*(label[1:] for label in namespace[len(self._files):]), key])

    def _checked(self, namespace: Namespace, key: str, value: dict[str, Any]) -> FileRecord:
        """The record a stored value holds; another shape (or another path than where it is
        kept) raises ``ValueError`` or ``TypeError`` naming the field."""
        path = text_field(value["path"], "path")
        if path != self.path_of(namespace, key):
            raise ValueError(f"path is {path!r} but the record is kept for "
                             f"{self.path_of(namespace, key)!r}")
        modified = time_field(value["modified_at"], "modified_at")
        if modified is None:
            raise TypeError("modified_at must be a number of seconds since the epoch, got null")
        for name in ("etag", "name"):
            optional_text(value.get(name), name)
        if value.get("size") is not None:
            int_field(value["size"], "size", minimum=0)
        return FileRecord(path, optional_text(value.get("content"), "content"),
                          int_field(value["version"], "version", minimum=1), modified,
                          optional_text(value.get("previous"), "previous"),
                          file_op(value.get("last_op", "write")))

    def record_of(self, item: Item) -> FileRecord:
        """The file record a store item under this backend holds; one that does not parse
        raises ``ValueError`` or ``TypeError`` naming the field (``remem doctor`` reads
        records with it)."""
        return self._checked(item.namespace, item.key, item.value)

    def _record(self, item: Item | None, path: str) -> FileRecord | None:
        """The record of ``path`` held by ``item``; one that does not parse raises
        :class:`~remem.errors.BadRecordError` (it is never written over: its history stays)."""
        if item is None:
            return None
        return parse_or_raise(self.record_of, item, family="files", namespace=item.namespace,
                              key=item.key, what=f"file {path!r}")

    @staticmethod
    def _info(value: dict[str, Any]) -> FileInfo:
        """The listing entry of a live record's value, hashing the content only for records
        written without ``etag`` and ``size``."""
        etag, size = value.get("etag"), value.get("size")
        if etag is None or size is None:
            content: str = value["content"]
            etag, size = etag_of(content), len(content.encode("utf-8"))
        return FileInfo(value["path"], size=int(size), etag=etag,
                        modified_at=float(value["modified_at"]))

    def _value(self, record: FileRecord) -> dict[str, Any]:
        parts = record.path.split("/")
        value = {"type": "file", "path": record.path, "content": record.content,
                 "version": record.version, "modified_at": record.modified_at,
                 "previous": record.previous, "last_op": record.last_op,
                 "live": record.content is not None, "name": parts[-1],
                 "depth": len(parts) - 1}
        if record.content is not None:
            value["etag"] = record.etag
            value["size"] = len(record.content.encode("utf-8"))
        return value

    # -- primitives -------------------------------------------------------------------------

    def _load(self, path: str) -> FileRecord | None:
        namespace, key = self._where(path)
        return self._record(self.store.get(namespace, key, refresh_ttl=False), path)

    def _values(self, directory: str, hint: ScanHint | None) -> Iterator[dict[str, Any]]:
        """The values of the live records under ``directory``, each path once; with a
        ``hint``, only those of its name and depth (and records older than those fields).
        A record that does not parse is left out (and reported)."""
        where = self._dir_ns(directory)
        filter_ = _scan_filter(hint)
        seen: set[str] = set()
        offset = 0
        while True:  # pages; a file changed meanwhile may move, the keys dedupe it
            page = self.store.search(where, filter=filter_, limit=_PAGE, offset=offset,
                                     refresh_ttl=False)
            for item in parse_items(page, _valued(self.record_of), family="files"):
                value = item.value
                if value.get("content") is not None and value["path"] not in seen:
                    seen.add(value["path"])
                    yield value
            if len(page) < _PAGE:
                return
            offset += _PAGE

    def _scan(self, directory: str, hint: ScanHint | None = None) -> Iterable[FileRecord]:
        return [FileRecord(v["path"], v["content"], int(v["version"]),
                           float(v["modified_at"]), v.get("previous"),
                           v.get("last_op", "write"))
                for v in self._values(directory, hint)]

    def _infos(self, directory: str, hint: ScanHint | None = None) -> Iterable[FileInfo]:
        return [self._info(value) for value in self._values(directory, hint)]

    def _commit(self, path: str, plan: core.Plan) -> core.FileChange:
        return run_sync(self._commit_flow(path, plan), self.store)

    def _commit_flow(self, path: str, plan: core.Plan) -> Flow[core.FileChange]:
        changes: list[core.FileChange] = []
        namespace, key = self._where(path)

        def writes(current: Item | None) -> list[Op]:
            change = plan(self._record(current, path))
            changes.append(change)
            value, event = self._value(change.record), change.event.to_value()
            event_key = f"{change.event.version:010d}"
            # what is written must read back (remem.store.bad_records)
            check_record(lambda v: self._checked(namespace, key, v), value, family="files",
                         namespace=namespace, key=key)
            check_record(FileEvent.from_value, event, family="file_history",
                         namespace=self._history_ns(path), key=event_key)
            return [PutOp(namespace, key, value, ttl=self.ttl, index=False),
                    PutOp(self._history_ns(path), event_key, event, ttl=self.ttl,
                          index=False)]

        yield from self._locked_flow(path, writes)
        return changes[0]

    def _locked_flow(self, path: str, writes: Callable[[Item | None], list[Op]]) -> Flow[None]:
        """Take the write lock of ``path``, read its record in the acquiring batch, and write
        what ``writes`` makes of it together with the lock's release (released at once when
        ``writes`` raises or the write fails)."""
        lock_ns = (*self.namespace, "lock", _path_label(path))
        namespace, key = self._where(path)
        token, reads = yield from acquire(
            lock_ns, [GetOp(namespace, key, refresh_ttl=False)], self.lock)
        release = release_op(lock_ns, token)
        try:
            current = reads[0]
            assert current is None or isinstance(current, Item)
            ops = [*writes(current), release]
        except BaseException:
            yield StoreBatch([release])
            raise
        try:
            yield StoreBatch(ops)
        except BaseException:
            yield StoreBatch([release])  # nothing was written: free the path at once
            raise

    def upgrade(self) -> int:
        """Add ``name``, ``depth``, ``etag`` and ``size`` to the records written before
        records kept them, so globs leave those out in SQL too; the number rewritten. Each is
        rewritten under its path's write lock with the same content, version and history
        (with a ``ttl``, its expiry starts again). Safe while others write; a no-op once
        done."""
        rewritten = 0
        tried: set[str] = set()
        while True:  # from the first page each time: a rewritten record leaves the filter
            page = self.store.search(self._files, filter=_OLDER, limit=_PAGE,
                                     refresh_ttl=False)
            found = [r.path for r in parse_items(page, self.record_of, family="files")]
            paths = [path for path in found if path not in tried]
            if not paths:
                return rewritten
            for path in paths:
                tried.add(path)
                rewritten += int(self._upgrade_one(path))

    def _upgrade_one(self, path: str) -> bool:
        done: list[bool] = []
        namespace, key = self._where(path)

        def writes(current: Item | None) -> list[Op]:
            if current is None or "name" in current.value:
                return []  # gone, or rewritten by a change meanwhile
            record = self._record(current, path)
            assert record is not None
            done.append(True)
            return [PutOp(namespace, key, self._value(record), ttl=self.ttl, index=False)]

        run_sync(self._locked_flow(path, writes), self.store)
        return bool(done)

    def _events(self, path: str) -> list[FileEvent]:
        events: list[FileEvent] = []
        offset = 0
        where = self._history_ns(path)
        while True:
            page = self.store.search(where, limit=_PAGE, offset=offset, refresh_ttl=False)
            events.extend(parse_items((item for item in page if item.namespace == where),
                                      _event, family="file_history"))
            if len(page) < _PAGE:
                break
            offset += _PAGE
        return sorted({e.version: e for e in events}.values(), key=lambda e: e.version)
