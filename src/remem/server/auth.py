"""Request authentication: an API key (``Authorization: Bearer rk_...`` or ``X-API-Key``)
names the tenant every operation of the request is confined to.

The tenant comes from the key alone; no path or body field can choose it. The one exception
is an admin key (``remem keys create --admin``): its request may name another tenant in the
``X-Remem-Tenant`` header, and then acts for that tenant (read-only if the key is). Any
other key sending that header gets a 403 ``permission_denied``, so a client that believes
it acts for another tenant learns at once that it does not. Every ``/v1`` route reads the
header through :func:`principal`, the one dependency that says who is asking.

Failed authentications are limited per client address (``/v1``, ``/mcp`` and the
inspector's login alike; see :mod:`remem.server.ratelimit`): past the limit, an address's
requests get a 429 with ``Retry-After`` before their key is looked up, unless the key is
one this process verified moments ago (:func:`refuse_blocked_client`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Final

from fastapi import Depends, HTTPException, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from remem.errors import InvalidInputError, PermissionDeniedError
from remem.server.keys import ApiKey, check_tenant
from remem.server.state import LOCAL_TENANT, Principal, ServerState

__all__ = ["TENANT_HEADER", "Reader", "Writer", "acting_principal", "admit", "authenticate",
           "client_address", "failed_authentication", "principal", "refuse_blocked_client",
           "request_principal", "server_state", "tenant_header_of", "token_of",
           "verified_key", "writer"]

#: the header an admin key names the tenant it acts for with
TENANT_HEADER: Final = "X-Remem-Tenant"

_bearer = HTTPBearer(auto_error=False, description=(
    "an API key from 'remem keys create'; an admin key ('--admin') may add the header "
    f"'{TENANT_HEADER}: T' to act for tenant T"))
_header = APIKeyHeader(name="X-API-Key", auto_error=False,
                       description="the same API key, for clients that cannot set Bearer")


def server_state(request: Request) -> ServerState:
    """The :class:`ServerState` of the app serving ``request``."""
    state: ServerState = request.app.state.remem
    return state


def client_address(scope: Mapping[str, Any]) -> str:
    """The address an ASGI request came from (what failed authentications are counted by);
    ``"unknown"`` when the server does not say."""
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def refuse_blocked_client(state: ServerState, address: str, token: str | None) -> None:
    """An HTTP 429 with ``Retry-After`` if ``address`` made too many failed authentications
    lately, unless ``token`` is a key verified within ``key_cache_seconds`` (checking it then
    reads nothing, and a client sharing a proxy's address with a guesser keeps working)."""
    wait = state.auth_failures.wait(address)
    if wait <= 0:
        return
    if token and not state.keys.needs_read(token) and state.keys.verify(token) is not None:
        return
    raise HTTPException(429, f"too many failed authentications from this address; retry in "
                             f"{wait:.0f} s with a valid API key",
                        headers={"Retry-After": state.auth_failures.retry_after(wait)})


def failed_authentication(state: ServerState, address: str) -> None:
    """Count a failed authentication (an unknown, revoked or malformed key) of ``address``."""
    state.auth_failures.check(address)


def verified_key(state: ServerState, token: str | None,
                 address: str | None = None) -> ApiKey | None:
    """The active key ``token`` is (``None`` when the server runs without auth), or an
    HTTP 401. With the client's ``address``, a failure is counted against it, and an
    address over its limit gets a 429 before the key is looked up."""
    if not state.config.auth:
        return None
    if not token:
        raise HTTPException(401, "missing API key: send 'Authorization: Bearer <key>' (create "
                                 "one with 'remem keys create --tenant T')",
                            headers={"WWW-Authenticate": "Bearer"})
    token = token.strip()
    if address is not None:
        refuse_blocked_client(state, address, token)
    key = state.keys.verify(token)
    if key is None:
        if address is not None:
            failed_authentication(state, address)
        raise HTTPException(401, "invalid or revoked API key",
                            headers={"WWW-Authenticate": "Bearer"})
    return key


def _home(key: ApiKey | None) -> Principal:
    return Principal(LOCAL_TENANT) if key is None else Principal(key.tenant, key.read_only,
                                                                 key.key_id, key.admin)


def authenticate(state: ServerState, token: str | None) -> Principal:
    """The principal ``token`` authenticates (its key's own tenant), or an HTTP 401."""
    return _home(verified_key(state, token))


def acting_principal(key: ApiKey | None, requested: str | None) -> Principal:
    """Who a request of ``key`` acts as when it names tenant ``requested`` in the
    :data:`TENANT_HEADER` header (``None``: it does not). Pure: raises
    :class:`PermissionDeniedError` for a key that is not an admin key (or without auth),
    :class:`InvalidInputError` for a tenant name that breaks the rule."""
    if requested is None:
        return _home(key)
    if key is None:
        raise PermissionDeniedError(
            f"{TENANT_HEADER}: this server runs without API keys (--no-auth), so every "
            f"request acts for tenant {LOCAL_TENANT!r}; drop the header")
    if not key.admin:
        raise PermissionDeniedError(
            f"{TENANT_HEADER}: only an admin key ('remem keys create --admin') may act for "
            f"another tenant; this key acts for its own tenant {key.tenant!r}: drop the "
            "header")
    try:
        tenant = check_tenant(requested.strip())
    except InvalidInputError as exc:
        raise InvalidInputError(f"header {TENANT_HEADER}: {exc}") from None
    return Principal(tenant, key.read_only, key.key_id, key.admin)


def tenant_header_of(headers: Sequence[tuple[bytes, bytes]]) -> str | None:
    """The :data:`TENANT_HEADER` value raw ASGI ``headers`` carry (``None``: absent); an
    HTTP 400 if it is repeated."""
    name = TENANT_HEADER.lower().encode()
    values = [value.decode("latin-1") for key, value in headers if key.lower() == name]
    if len(values) > 1:
        raise HTTPException(400, f"the request has {len(values)} {TENANT_HEADER} headers; "
                                 "send it once")
    return values[0] if values else None


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
    """Who makes ``request``: its key's own tenant (401 without a valid key, 400 with two,
    429 from an address with too many failed authentications), counted against its rate
    (429). A key verified within the last ``key_cache_seconds`` is
    checked on the event loop; only a store read goes to a worker thread. The key is kept
    on ``request.state.remem_key`` for :func:`principal`."""
    cached: Principal | None = getattr(request.state, "remem_principal", None)
    if cached is not None:
        return cached
    token = token_of(request.scope.get("headers", ()))
    state = server_state(request)
    address = client_address(request.scope)
    if state.config.auth and token:  # on the loop, before a worker thread is taken
        refuse_blocked_client(state, address, token.strip())
    if state.config.auth and token and state.keys.needs_read(token):
        key = await state.run(lambda: verified_key(state, token, address))
    else:
        key = verified_key(state, token, address)
    who = _home(key)
    admit(state, who)
    request.state.remem_key = key
    request.state.remem_principal = who
    return who


async def principal(request: Request,
                    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
                    api_key: Annotated[str | None, Depends(_header)]) -> Principal:
    """FastAPI dependency: who is asking (any key, read-only or not), and for which tenant:
    the key's own, or the one an admin key names in :data:`TENANT_HEADER` (403
    ``permission_denied`` for the header with any other key). ``bearer`` and ``api_key``
    document the headers in the OpenAPI schema; :func:`request_principal` reads them."""
    del bearer, api_key
    who = await request_principal(request)
    requested = tenant_header_of(request.scope.get("headers", ()))
    if requested is None:
        return who
    return acting_principal(getattr(request.state, "remem_key", None), requested)


async def writer(who: Annotated[Principal, Depends(principal)]) -> Principal:
    """FastAPI dependency: who is asking, refusing read-only keys with a 403."""
    if who.read_only:
        raise HTTPException(403, "this API key is read-only; create a key without --read-only "
                                 "to write")
    return who


Reader = Annotated[Principal, Depends(principal)]
Writer = Annotated[Principal, Depends(writer)]
