"""Request authentication: an API key (``Authorization: Bearer rk_...`` or ``X-API-Key``)
names the tenant every operation of the request is confined to.

The tenant comes from the key alone; no header, path or body field can choose it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from remem.server.state import LOCAL_TENANT, Principal, ServerState

__all__ = ["Reader", "Writer", "admit", "authenticate", "principal", "request_principal",
           "server_state", "token_of", "writer"]

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


def token_of(headers: Sequence[tuple[bytes, bytes]]) -> str | None:
    """The API key raw ASGI ``headers`` carry (``Authorization: Bearer`` first, then
    ``X-API-Key``); an HTTP 400 if either header is repeated, since proxies and frameworks
    disagree on which copy counts."""
    found: dict[bytes, list[str]] = {b"authorization": [], b"x-api-key": []}
    for name, value in headers:
        lowered = name.lower()
        if lowered in found:
            found[lowered].append(value.decode("latin-1"))
    for name, values in found.items():
        if len(values) > 1:
            raise HTTPException(400, f"the request has {len(values)} {name.decode()} headers; "
                                     "send the API key once")
    auth = found[b"authorization"]
    if auth:
        scheme, _, credentials = auth[0].strip().partition(" ")
        if scheme.lower() == "bearer" and credentials.strip():
            return credentials.strip()
    return found[b"x-api-key"][0].strip() if found[b"x-api-key"] else None


def admit(state: ServerState, who: Principal) -> None:
    """Count a request of ``who`` against its key's rate: an HTTP 429 with ``Retry-After``
    over it. Keys are limited one by one; without auth, the one tenant is."""
    if state.limiter is None:
        return
    wait = state.limiter.check(who.key_id or f"tenant:{who.tenant}")
    if wait > 0:
        raise HTTPException(429, f"this API key is limited to {state.limiter.rate:g} requests "
                                 f"per second; retry in {wait:.2f} s",
                            headers={"Retry-After": state.limiter.retry_after(wait)})


async def request_principal(request: Request) -> Principal:
    """Who makes ``request`` (401 without a valid key, 400 with two), counted against its
    rate (429). A key verified within the last ``key_cache_seconds`` is checked on the event
    loop; only a store read goes to a worker thread."""
    cached: Principal | None = getattr(request.state, "remem_principal", None)
    if cached is not None:
        return cached
    token = token_of(request.scope.get("headers", ()))
    state = server_state(request)
    if state.config.auth and token and state.keys.needs_read(token):
        who = await state.run(lambda: authenticate(state, token))
    else:
        who = authenticate(state, token)
    admit(state, who)
    request.state.remem_principal = who
    return who


async def principal(request: Request,
                    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
                    api_key: Annotated[str | None, Depends(_header)]) -> Principal:
    """FastAPI dependency: who is asking (any key, read-only or not). ``bearer`` and
    ``api_key`` document the headers in the OpenAPI schema; :func:`request_principal` reads
    them."""
    del bearer, api_key
    return await request_principal(request)


async def writer(who: Annotated[Principal, Depends(principal)]) -> Principal:
    """FastAPI dependency: who is asking, refusing read-only keys with a 403."""
    if who.read_only:
        raise HTTPException(403, "this API key is read-only; create a key without --read-only "
                                 "to write")
    return who


Reader = Annotated[Principal, Depends(principal)]
Writer = Annotated[Principal, Depends(writer)]
