"""Files in a Python dict: for tests, scratch space and an agent's per-run state."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

from remem.files import core
from remem.files.base import RecordBackend, ScanHint, under
from remem.files.types import FileEvent, FileRecord

__all__ = ["InMemoryFileBackend"]


class InMemoryFileBackend(RecordBackend):
    """Files and their history in memory (lost when the process ends). Thread-safe: one
    lock makes each change atomic."""

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        super().__init__(clock=clock)
        self._records: dict[str, FileRecord] = {}
        self._history: dict[str, list[FileEvent]] = {}
        self._lock = threading.Lock()

    def _load(self, path: str) -> FileRecord | None:
        return self._records.get(path)

    def _scan(self, directory: str, hint: ScanHint | None = None) -> Iterable[FileRecord]:
        with self._lock:
            found = under(list(self._records.values()), directory)
        return found if hint is None else [r for r in found if hint.admits(r.path)]

    def _commit(self, path: str, plan: core.Plan) -> core.FileChange:
        with self._lock:
            change = plan(self._records.get(path))
            self._records[path] = change.record
            self._history.setdefault(path, []).append(change.event)
            return change

    def _events(self, path: str) -> list[FileEvent]:
        with self._lock:
            return list(self._history.get(path, ()))
