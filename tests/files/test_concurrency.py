"""Concurrent writers: stale etags lose with a typed conflict and nothing acknowledged is lost;
a hypothesis state machine checks every backend against a plain dict model."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from pathlib import Path

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from remem.errors import EditError, FileConflictError, NotFoundError
from remem.files import (
    ABSENT,
    FileBackend,
    InMemoryFileBackend,
    LocalFileBackend,
    StoreFileBackend,
    etag_of,
)
from remem.store import SQLiteStore
from tests.files.conftest import Opened, make_backend

ROUNDS = 8


def _twins(name: str, tmp: Path, opened: Opened,
           dsn: str | None) -> tuple[FileBackend, FileBackend]:
    """Two handles on the same files, as two processes would have."""
    if name == "local":
        return (LocalFileBackend(tmp / "shared", durable=False),
                LocalFileBackend(tmp / "shared", durable=False))
    if name == "store-sqlite":
        stores = [SQLiteStore(tmp / "shared.db") for _ in range(2)]
        opened.stores.extend(stores)
        a, b = (StoreFileBackend(s, ("shared",)) for s in stores)
        return a, b
    one = make_backend(name, tmp, opened, dsn)
    return one, one


@pytest.mark.parametrize("name", ["memory", "store-memory", "store-sqlite", "store-postgres",
                                  "local", "composite-memories"])
def test_two_writers_with_the_same_etag_one_wins(name: str, tmp_path: Path,
                                                  request: pytest.FixtureRequest) -> None:
    dsn = request.getfixturevalue("pg_database") if name == "store-postgres" else None
    opened = Opened()
    try:
        first, second = _twins(name, tmp_path, opened, dsn)
        path = "/memories/shared.md" if name.startswith("composite") else "/shared.md"
        current = "round -1"
        etag = first.write(path, current).etag
        for round_ in range(ROUNDS):
            barrier = threading.Barrier(2)
            outcomes: dict[str, object] = {}

            def writer(label: str, files: FileBackend, expected: str | None,
                       round_: int = round_, barrier: threading.Barrier = barrier,
                       outcomes: dict[str, object] = outcomes, current: str = current) -> None:
                barrier.wait()
                try:
                    if label == "edit":
                        outcomes[label] = files.edit(path, current,
                                                     f"round {round_} by {label}",
                                                     etag=expected)
                    else:
                        outcomes[label] = files.write(path, f"round {round_} by {label}",
                                                      etag=expected)
                except Exception as exc:
                    outcomes[label] = exc

            threads = [threading.Thread(target=writer, args=("write", first, etag)),
                       threading.Thread(target=writer, args=("edit", second, etag))]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            conflicts = [v for v in outcomes.values() if isinstance(v, FileConflictError)]
            winners = [k for k, v in outcomes.items() if not isinstance(v, Exception)]
            assert len(winners) == 1 and len(conflicts) == 1, outcomes
            # the winner's acknowledged write is what is stored
            assert first.read(path).content == f"round {round_} by {winners[0]}"
            assert conflicts[0].expected == etag
            current = f"round {round_} by {winners[0]}"
            etag = etag_of(current)
            assert first.read(path).etag == etag
    finally:
        opened.close()


# -- state machine --------------------------------------------------------------------------

PATHS = ("/a.md", "/d/b.md", "/d/e/c.md")
TEXTS = st.sampled_from(["", "x", "hello world", "hello hello", "多语言 text\n", "a\nb\n"])
_machines = itertools.count()


class FilesAgainstModel(RuleBasedStateMachine):
    """Writes, edits, deletes and undos with fresh or stale etags; the backend agrees with a
    dict (and, when it keeps history, with a per-path stack of previous contents)."""

    make: Callable[[], FileBackend]

    def __init__(self) -> None:
        super().__init__()
        self.files = type(self).make()
        self.model: dict[str, str] = {}
        self.previous: dict[str, str | None] = {}  # content before the latest change
        self.seen_etags: list[str] = [etag_of("never written")]

    def _etag(self, data: st.DataObject, path: str) -> str | None:
        choice = data.draw(st.sampled_from(["none", "current", "stale", "absent"]))
        if choice == "current":
            return etag_of(self.model[path]) if path in self.model else ABSENT
        if choice == "stale":
            return data.draw(st.sampled_from(self.seen_etags))
        return ABSENT if choice == "absent" else None

    def _allowed(self, path: str, etag: str | None) -> bool:
        current = etag_of(self.model[path]) if path in self.model else None
        if etag is None:
            return True
        return current is None if etag == ABSENT else etag == current

    def _changed(self, path: str, content: str | None) -> None:
        self.previous[path] = self.model.get(path)
        if content is None:
            self.model.pop(path, None)
        else:
            self.model[path] = content
            self.seen_etags.append(etag_of(content))

    @rule(path=st.sampled_from(PATHS), text=TEXTS, data=st.data())
    def write(self, path: str, text: str, data: st.DataObject) -> None:
        etag = self._etag(data, path)
        if self._allowed(path, etag):
            assert self.files.write(path, text, etag=etag).etag == etag_of(text)
            self._changed(path, text)
        else:
            with pytest.raises(FileConflictError):
                self.files.write(path, text, etag=etag)

    @rule(path=st.sampled_from(PATHS), old=st.sampled_from(["hello", "x", "b"]),
          new=st.sampled_from(["bye", "y"]), replace_all=st.booleans(), data=st.data())
    def edit(self, path: str, old: str, new: str, replace_all: bool,
             data: st.DataObject) -> None:
        etag = self._etag(data, path)
        if etag == ABSENT:
            etag = None
        if path not in self.model:
            with pytest.raises(NotFoundError):
                self.files.edit(path, old, new, etag=etag)
        elif not self._allowed(path, etag):
            with pytest.raises(FileConflictError):
                self.files.edit(path, old, new, replace_all=replace_all, etag=etag)
        elif self.model[path].count(old) == 0 or (self.model[path].count(old) > 1
                                                   and not replace_all):
            with pytest.raises(EditError):
                self.files.edit(path, old, new, replace_all=replace_all, etag=etag)
        else:
            content = self.model[path]
            edited = content.replace(old, new) if replace_all else content.replace(old, new, 1)
            self.files.edit(path, old, new, replace_all=replace_all, etag=etag)
            self._changed(path, edited)

    @rule(path=st.sampled_from(PATHS), data=st.data())
    def delete(self, path: str, data: st.DataObject) -> None:
        etag = self._etag(data, path)
        if etag == ABSENT:
            etag = None
        if path not in self.model:
            with pytest.raises(NotFoundError):
                self.files.delete(path, etag=etag)
        elif not self._allowed(path, etag):
            with pytest.raises(FileConflictError):
                self.files.delete(path, etag=etag)
        else:
            self.files.delete(path, etag=etag)
            self._changed(path, None)

    @precondition(lambda self: self.files.keeps_history)
    @rule(path=st.sampled_from(PATHS))
    def undo(self, path: str) -> None:
        if path not in self.previous:
            with pytest.raises(NotFoundError):
                self.files.undo(path)
            return
        restored = self.previous[path]
        info = self.files.undo(path)
        assert (info.etag if info else None) == (etag_of(restored) if restored is not None
                                                 else None)
        self._changed(path, restored)

    @invariant()
    def agrees_with_the_model(self) -> None:
        listed = {info.path: info.etag for info in self.files.glob("**")}
        assert listed == {path: etag_of(text) for path, text in self.model.items()}
        for path, text in self.model.items():
            assert self.files.read(path).content == text


@pytest.mark.parametrize("name", ["memory", "store-sqlite", "local"])
def test_state_machine(name: str, tmp_path: Path) -> None:
    opened = Opened()

    def make() -> FileBackend:
        if name == "memory":
            return InMemoryFileBackend()
        if name == "local":
            return LocalFileBackend(tmp_path / f"sm-{next(_machines)}", durable=False)
        store = SQLiteStore(":memory:")
        opened.stores.append(store)
        return StoreFileBackend(store, ("sm",))

    machine = type(f"Files_{name.replace('-', '_')}", (FilesAgainstModel,),
                   {"make": staticmethod(make)})
    try:
        machine.TestCase.settings = settings(
            max_examples=25, stateful_step_count=25, deadline=None,
            suppress_health_check=[HealthCheck.too_slow])
        machine.TestCase().runTest()
    finally:
        opened.close()
