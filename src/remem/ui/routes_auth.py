"""Login and logout: paste an API key, get a session (no login without auth: one local
user); an admin key's session chooses the tenant it views (``/tenants``). A failed login
counts against the client's address like a failed ``/v1`` authentication
(:mod:`remem.server.auth`): past the limit the form answers 429 with ``Retry-After``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import Response

from remem.errors import InvalidInputError, PermissionDeniedError
from remem.server.auth import client_address, failed_authentication, refuse_blocked_client
from remem.server.keys import check_tenant, known_tenants
from remem.server.state import Principal
from remem.ui.web import Viewer, form_value, inspector, safe_next

__all__ = ["router"]

router = APIRouter()


@router.get("/")
async def home(request: Request) -> Response:
    """The inspector's home: the memory list."""
    ui = inspector(request)
    return ui.redirect(request, f"{ui.prefix}/memories")


@router.get("/login")
async def login_page(request: Request,
                     next: Annotated[str | None, Query(max_length=2000)] = None) -> Response:
    """The login form (an anonymous session carries its CSRF token)."""
    ui = inspector(request)
    viewer = await ui.viewer(request)
    if viewer.principal is not None:
        return ui.redirect(request, safe_next(ui.prefix, next), viewer.cookie)
    return ui.page(request, viewer, "login.html", next=safe_next(ui.prefix, next), problem="")


@router.post("/login")
async def login(request: Request) -> Response:
    """Check the pasted key; on success a new session (new CSRF token) for its tenant."""
    ui = inspector(request)
    viewer = await ui.viewer(request)
    fields = await ui.form(request, viewer)
    target = safe_next(ui.prefix, form_value(fields, "next"))
    if ui.local:
        return ui.redirect(request, target, viewer.cookie)
    token = form_value(fields, "api_key")
    address = client_address(request.scope)
    try:
        refuse_blocked_client(ui.state, address, token)
    except HTTPException as refused:
        page = ui.page(request, viewer, "login.html", 429, next=target,
                       problem=f"{refused.detail} (field api_key)")
        page.headers.update(refused.headers or {})
        return page
    key = await ui.run(lambda: ui.state.keys.verify(token)) if token else None
    if key is None:
        if token:
            failed_authentication(ui.state, address)
        problem = ("paste an API key (field api_key): create one with "
                   "'remem keys create --tenant T'") if not token else \
            "that API key is not valid or was revoked (field api_key)"
        return ui.page(request, viewer, "login.html", 401, next=target, problem=problem)
    cookie = ui.start_session(Principal(key.tenant, key.read_only, key.key_id))
    return ui.redirect(request, target, cookie)


@router.post("/logout")
async def logout(request: Request) -> Response:
    """End the session, on the server too (a copy of its cookie stops working), and start
    an anonymous one."""
    ui = inspector(request)
    viewer = await ui.viewer(request)
    await ui.form(request, viewer)
    if ui.local:
        return ui.redirect(request, f"{ui.prefix}/memories")
    await ui.end_session(viewer.session)
    return ui.redirect(request, f"{ui.prefix}/login", ui.start_session(None))


def _admin_only(viewer: Viewer) -> None:
    if not viewer.admin:
        raise PermissionDeniedError(
            "only an admin key chooses the tenant it views; this key sees its own tenant "
            "(create an admin key with 'remem keys create --admin')")


@router.get("/tenants")
async def tenants_page(request: Request) -> Response:
    """An admin key's tenant picker: tenants with keys or data, and any tenant by name."""
    ui = inspector(request)
    viewer, who = await ui.member(request)
    _admin_only(viewer)
    names = await ui.run(lambda: known_tenants(ui.state.store, ui.state.keys))
    return ui.page(request, viewer, "tenants.html", tenants=names, current=who.tenant)


@router.post("/tenant")
async def choose_tenant(request: Request) -> Response:
    """Switch an admin key's session to the tenant named in the form (field ``tenant``)."""
    ui = inspector(request)
    viewer, _ = await ui.member(request)
    fields = await ui.form(request, viewer)
    _admin_only(viewer)
    try:
        tenant = check_tenant(form_value(fields, "tenant"))
    except InvalidInputError as exc:
        raise InvalidInputError(f"field tenant: {exc}") from None
    target = safe_next(ui.prefix, form_value(fields, "next") or f"{ui.prefix}/memories")
    return ui.redirect(request, target, ui.view_tenant(viewer, tenant))
