"""Request authentication: an API key (``Authorization: Bearer rk_...`` or ``X-API-Key``)
names the tenant every operation of the request is confined to.

The tenant comes from the key alone; no header, path or body field can choose it.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from remem.server.state import LOCAL_TENANT, Principal, ServerState

__all__ = ["Reader", "Writer", "principal", "server_state", "writer"]

_bearer = HTTPBearer(auto_error=False, description="an API key from 'remem keys create'")
_header = APIKeyHeader(name="X-API-Key", auto_error=False,
                       description="the same API key, for clients that cannot set Bearer")


def server_state(request: Request) -> ServerState:
    """The :class:`ServerState` of the app serving ``request``."""
    state: ServerState = request.app.state.remem
    return state


def authenticate(state: ServerState, token: str | None) -> Principal:
    """The principal ``token`` authenticates, or an HTTP 401."""
    if not state.config.auth:
        return Principal(LOCAL_TENANT)
    if not token:
        raise HTTPException(401, "missing API key: send 'Authorization: Bearer <key>' (create "
                                 "one with 'remem keys create --tenant T')",
                            headers={"WWW-Authenticate": "Bearer"})
    key = state.keys.verify(token.strip())
    if key is None:
        raise HTTPException(401, "invalid or revoked API key",
                            headers={"WWW-Authenticate": "Bearer"})
    return Principal(key.tenant, key.read_only, key.key_id)


async def principal(request: Request,
                    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
                    api_key: Annotated[str | None, Depends(_header)]) -> Principal:
    """FastAPI dependency: who is asking (any key, read-only or not). A key verified within
    the last ``key_cache_seconds`` is checked on the event loop; only a store read goes to a
    worker thread."""
    token = bearer.credentials if bearer is not None else api_key
    state = server_state(request)
    if state.config.auth and token and state.keys.needs_read(token.strip()):
        return await state.run(lambda: authenticate(state, token))
    return authenticate(state, token)


async def writer(who: Annotated[Principal, Depends(principal)]) -> Principal:
    """FastAPI dependency: who is asking, refusing read-only keys with a 403."""
    if who.read_only:
        raise HTTPException(403, "this API key is read-only; create a key without --read-only "
                                 "to write")
    return who


Reader = Annotated[Principal, Depends(principal)]
Writer = Annotated[Principal, Depends(writer)]
