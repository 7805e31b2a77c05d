"""The files and core memory blocks pages: browse a tenant's file trees (through the
server's file permission policy: what a key may not read is not shown) and read a file with
its history; list the core memory blocks with how full each is, and a block's history.

Listings are capped (:data:`MAX_ENTRIES`), files are read a page of lines at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Query, Request
from fastapi.responses import Response

from remem.blocks.core import BlockSpec
from remem.blocks.store import Blocks
from remem.files.base import FileBackend
from remem.files.store import StoreFileBackend
from remem.files.types import FileEvent
from remem.server.state import LOCAL_TENANT, Principal
from remem.store.reserved import BLOCKS, FILES
from remem.ui.views import word_diff
from remem.ui.web import Inspector, inspector

__all__ = ["router"]

router = APIRouter()

#: most directory entries or blocks one page shows, and lines of a file per page
MAX_ENTRIES = 200
LINES_PAGE = 400

Tree = Annotated[str, Query(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")]
FilePath = Annotated[str, Query(min_length=1, max_length=1024)]
BlockPath = Annotated[str, Path(min_length=1, max_length=128, pattern=r"^[^\x00-\x1f\x7f/]+$")]


def _files(ui: Inspector, who: Principal,
           tree: str) -> tuple[FileBackend, Callable[[str], str]]:
    """The file tree ``tree`` of ``who`` (``("files", tree)``, where ``remem files``,
    ``/v1/files`` and the approvals keep it) and the server's file policy's answer for
    reading a path (``allow``, ``ask`` or ``deny``; ``remem ui`` has a policy only from
    ``REMEM_FILE_POLICY``). Reads are checked here rather than through ``GuardedFiles``,
    which would park an approval for an ``ask``: looking at a page must never ask a human
    for anything."""
    from remem.server.routes_files import guarded_files

    actor = f"key:{who.key_id}" if who.key_id else "user"
    guarded = guarded_files(ui.state, who, tree, actor=actor)
    return guarded.files, lambda path: str(guarded.policy.decide("read", path, guarded.scope))


def _blocks(ui: Inspector, who: Principal) -> Blocks:
    return Blocks(StoreFileBackend(ui.memory(who).store, (BLOCKS,)))


def _timeline(events: list[FileEvent],
              text: Callable[[str], str] = lambda content: content) -> list[dict[str, Any]]:
    """File events newest first, each with the word diff of ``text`` of its contents
    before and after."""
    return [{"event": e, "diff": word_diff(text(e.before), text(e.after))
             if e.before is not None and e.after is not None else [],
             "created": text(e.after) if e.before is None and e.after is not None else None}
            for e in reversed(events)]


def _block_value(stored: str) -> str:
    """A block's value from its stored JSON (as is if it cannot be read)."""
    try:
        return BlockSpec.from_json(stored).value
    except (ValueError, KeyError, TypeError):
        return stored


@router.get("/files")
async def files(request: Request, tree: Tree = "default", path: FilePath = "/",
                start: Annotated[int, Query(ge=0, le=10_000_000)] = 0) -> Response:
    """A directory's entries, or a file's lines (a page from ``start``) and history."""
    ui = inspector(request)
    viewer, who = await ui.member(request)

    def load() -> dict[str, Any]:
        backend, may_read = _files(ui, who, tree)
        info = backend.stat(path) if path != "/" else None
        target = info.path if info is not None else path
        effect = may_read(target)
        if effect != "allow":
            rule = "deny reading" if effect == "deny" else "ask a human before reading"
            raise HTTPException(403, f"the file permissions {rule} {target!r}; the inspector "
                                     "shows only what this key may read without asking")
        if info is not None and not info.is_dir:
            read = backend.read(target, offset=start, limit=LINES_PAGE)
            return {"file": read, "history": _timeline(backend.history(target)[-50:])}
        entries = [e for e in backend.ls(path) if e.is_dir or may_read(e.path) != "deny"]
        # files `remem files` wrote before trees, not yet moved into the default tree
        legacy = (not entries and tree == "default" and path == "/"
                  and who.tenant == LOCAL_TENANT
                  and bool(ui.state.store.list_namespaces(prefix=(FILES, FILES), limit=1)))
        return {"entries": entries[:MAX_ENTRIES], "more": len(entries) > MAX_ENTRIES,
                "legacy": legacy}

    found = await ui.run(load)
    parent = path.rstrip("/").rpartition("/")[0] or "/"
    return ui.page(request, viewer, "files.html", tree=tree, path=path, parent=parent,
                   start=start, lines_page=LINES_PAGE, file=found.get("file"),
                   history=found.get("history", []), entries=found.get("entries", []),
                   more=found.get("more", False), legacy=found.get("legacy", False))


@router.get("/blocks")
async def blocks(request: Request) -> Response:
    """The core memory blocks (Letta-style), each with its label and how full it is."""
    ui = inspector(request)
    viewer, who = await ui.member(request)
    found = await ui.run(lambda: _blocks(ui, who).list_blocks())
    return ui.page(request, viewer, "blocks.html", blocks=found[:MAX_ENTRIES],
                   more=len(found) > MAX_ENTRIES)


@router.get("/blocks/{block_id}")
async def block_page(request: Request, block_id: BlockPath) -> Response:
    """A block: its value, limit and description, and its history with diffs."""
    ui = inspector(request)
    viewer, who = await ui.member(request)

    def load() -> tuple[Any, list[dict[str, Any]]]:
        store = _blocks(ui, who)
        block = store.get(block_id)
        return block, _timeline(store.history(block_id)[-50:], _block_value)

    block, history = await ui.run(load)
    return ui.page(request, viewer, "block.html", block=block, history=history)
