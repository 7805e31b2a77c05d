"""The thread pages: the tenant's threads, and one thread's messages (a page at a time),
checkpoints as a tree (forks visible) and running summary.

Everything goes through the tenant's thread view (:meth:`Inspector.threads`)."""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import Response

from remem.ui.thread_rows import relative_time, source_thread_of, thread_rows
from remem.ui.views import checkpoint_tree
from remem.ui.web import inspector

__all__ = ["router"]

router = APIRouter()

#: threads per page, messages per page, checkpoints drawn at most
THREADS_PAGE = 25
MESSAGES_PAGE = 50
CHECKPOINTS_PAGE = 100

Offset = Annotated[int, Query(ge=0, le=100_000)]
ThreadPath = Annotated[str, Path(min_length=1, max_length=256,
                                 pattern=r"^[^\x00-\x1f\x7f/]+$")]


@router.get("/threads")
async def threads(request: Request, offset: Offset = 0) -> Response:
    """The tenant's threads, most recently changed first: each with its user, a title
    (metadata ``title``, else its first user message), messages, last change, and the
    thread a fork started from."""
    ui = inspector(request)
    viewer, who = await ui.member(request)
    view = ui.threads(who)

    def load() -> tuple[list[Any], list[Any]]:
        found = view.list_threads(limit=THREADS_PAGE + 1, offset=offset)
        return found, thread_rows(view, found[:THREADS_PAGE])

    found, rows = await ui.run(load)
    return ui.page(request, viewer, "threads.html", threads=rows, now=time.time(),
                   ago=relative_time,
                   next_offset=offset + THREADS_PAGE if len(found) > THREADS_PAGE else None,
                   prev_offset=max(0, offset - THREADS_PAGE) if offset else None)


@router.get("/threads/{thread_id}")
async def thread_page(request: Request, thread_id: ThreadPath, start: Offset = 0,
                      checkpoint: Annotated[str | None, Query(max_length=256)] = None
                      ) -> Response:
    """A thread at its head (or at ``checkpoint``): messages from ``start``, its checkpoint
    tree and the running summary."""
    ui = inspector(request)
    viewer, who = await ui.member(request)
    view = ui.threads(who)

    def load() -> tuple[Any, Any, Any, Any]:
        info = view.get(thread_id)
        at = view.checkpoint(thread_id, checkpoint) if checkpoint else info.head
        messages = view.messages(thread_id, checkpoint_id=at.id, start=start,
                                 stop=start + MESSAGES_PAGE)
        checkpoints = view.checkpoints(thread_id, limit=CHECKPOINTS_PAGE)
        return info, at, messages, checkpoints

    info, at, messages, checkpoints = await ui.run(load)
    return ui.page(request, viewer, "thread.html", info=info, at=at, messages=messages,
                   start=start, tree=checkpoint_tree(checkpoints),
                   source_thread=source_thread_of(checkpoints, info.source),
                   more_checkpoints=len(checkpoints) == CHECKPOINTS_PAGE,
                   next_start=start + MESSAGES_PAGE if start + MESSAGES_PAGE < at.position
                   else None,
                   prev_start=max(0, start - MESSAGES_PAGE) if start else None)
