"""The graph page: a user's (or agent's) temporal knowledge graph: search its facts, or
open an entity to see its current facts, its fact timeline and its neighbourhood drawn as
SVG (nodes link to their own page, so the picture is navigable without JavaScript)."""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from remem.errors import InvalidInputError
from remem.ui.graph_view import picture
from remem.ui.views import parse_time
from remem.ui.web import inspector

__all__ = ["router"]

router = APIRouter()

#: fact hits of a search, and hops drawn around an entity
SEARCH_LIMIT = 20
HOPS = 2

Scope = Annotated[str, Query(max_length=256)]


@router.get("/graph")
async def graph_page(request: Request, user: Scope = "", agent: Scope = "",
                     entity: Annotated[str, Query(max_length=256)] = "",
                     q: Annotated[str, Query(max_length=2000)] = "",
                     as_of: Annotated[str, Query(max_length=64)] = "") -> Response:
    """Search the facts of a scope's graph (``q``), or show an entity's page and
    neighbourhood (``entity``: a name or an id), true at ``as_of`` (default now)."""
    ui = inspector(request)
    viewer, who = await ui.member(request)
    when = parse_time(as_of)
    at = when if when is not None else time.time()
    # "holds" is judged at a time: as_of, or now (never "at any time")
    context: dict[str, Any] = {"user": user, "agent": agent, "entity": entity, "q": q,
                               "as_of": as_of, "at": at, "hits": [], "page": None,
                               "drawing": None}
    if (q or entity) and not (user or agent):
        raise InvalidInputError("name whose graph to open: a user (field user) or an agent "
                                "(field agent)")
    if q or entity:
        memory = ui.memory(who)

        def load() -> dict[str, Any]:
            graph = memory.graph(user_id=user or None, agent_id=agent or None)
            if q:
                return {"hits": graph.search(q, limit=SEARCH_LIMIT, as_of=when)}
            key: int | str = int(entity) if entity.isdigit() else entity
            page = graph.entity(key, as_of=when)
            around = graph.expand(page.entity.id, hops=HOPS, as_of=None)
            return {"page": page, "drawing": picture(page.entity.id, page.entity.name,
                                                     around, as_of=at)}

        context.update(await ui.run(load))
    return ui.page(request, viewer, "graph.html", **context)
