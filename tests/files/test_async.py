"""The async file shell: the same methods, arguments and defaults as the sync protocol
(parity), and real concurrency on a SQLite store: of two writers with one etag one wins and
the other gets the typed conflict; the event loop is never blocked by the store."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path

import pytest

from remem.errors import FileConflictError
from remem.files import FileBackend, StoreFileBackend
from remem.files.aio import AsyncFileBackend, AsyncFiles
from remem.store import SQLiteStore

METHODS = ("ls", "stat", "read", "write", "edit", "glob", "grep", "delete", "history", "undo")


@pytest.mark.parametrize("name", METHODS)
def test_async_twins_have_the_sync_signatures(name: str) -> None:
    sync = inspect.signature(getattr(FileBackend, name))
    for twin in (AsyncFileBackend, AsyncFiles):
        method = getattr(twin, name)
        assert inspect.iscoroutinefunction(method), (twin, name)
        assert inspect.signature(method) == sync, (twin, name)
    assert {n for n in dir(FileBackend) if not n.startswith("_")} == set(METHODS)


def test_concurrent_writers_one_wins_per_etag(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "a.db")
    store.setup()
    files = AsyncFiles(StoreFileBackend(store, ("files",)))
    assert isinstance(files, AsyncFileBackend)

    async def main() -> tuple[list[object], list[str]]:
        first = await files.write("/shared.md", "v1")
        outcomes = await asyncio.gather(
            *(files.write("/shared.md", f"writer {n}", etag=first.etag) for n in range(4)),
            return_exceptions=True)
        await asyncio.gather(*(files.write(f"/many/{n}.md", str(n)) for n in range(20)))
        names = [i.path for i in await files.ls("/many")]
        return list(outcomes), names

    try:
        outcomes, names = asyncio.run(main())
    finally:
        store.close()
    wins = [o for o in outcomes if not isinstance(o, BaseException)]
    assert len(wins) == 1
    assert all(isinstance(o, FileConflictError) for o in outcomes if o not in wins)
    assert len(names) == 20
