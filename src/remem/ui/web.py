"""The inspector's plumbing: templates, security headers, who is looking (:class:`Viewer`),
CSRF checks and HTML error pages. Routes (``routes_*.py``) stay about what they show.

Every page is answered by :meth:`Inspector.page`, which renders a template with Jinja2
autoescaping on (a memory holding ``<script>`` renders as text), and sends a strict
Content-Security-Policy (no inline script or style: the one script and the one style
sheet are static files), ``no-store`` caching, and the session cookie when it changed.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final, TypeVar
from urllib.parse import parse_qs, urlencode

import jinja2
from fastapi import HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException

from remem.api import Memory
from remem.errors import ConfigError, RememError
from remem.server.auth import admit
from remem.server.errors import classify
from remem.server.keys import KEYS_NAMESPACE
from remem.server.metrics import Metrics
from remem.server.state import LOCAL_TENANT, Principal, ServerState
from remem.threads import ThreadStore
from remem.ui.session import COOKIE_NAME, SESSION_SECONDS, Session, SessionCodec
from remem.ui.views import fmt_time, iso_time

__all__ = ["CSP", "Inspector", "LoginRequired", "Viewer", "form_value", "inspector", "ns_query",
           "page_routes", "safe_next"]

T = TypeVar("T")

#: the Content-Security-Policy of every page: only this server's own script, style and
#: images; no inline script or style, no framing, forms post back here only
CSP: Final = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
              "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
SECURITY_HEADERS: Final = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    # same-origin, not no-referrer: under no-referrer Chromium sends "Origin: null" with a
    # form POST, which the loopback server's DNS-rebinding guard rightly refuses
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}
#: where the session secret is kept: beside the API keys, in the server's own namespace
#: (no tenant's scoped store can reach it)
SECRET_NAMESPACE: Final = (KEYS_NAMESPACE[0], "ui")
SECRET_KEY: Final = "session_secret"
#: sessions ended by logout (until they would have expired anyway)
ENDED_NAMESPACE: Final = (KEYS_NAMESPACE[0], "ui_ended_sessions")
_TEMPLATES = Path(__file__).parent / "templates"
#: the largest form body a page accepts
MAX_FORM_BYTES: Final = 64 * 1024


class LoginRequired(Exception):
    """The page needs a logged-in session; answered with a redirect to the login page."""

    def __init__(self, next_path: str) -> None:
        super().__init__(next_path)
        self.next_path = next_path


@dataclass
class Viewer:
    """Who looks at a page: the session, the principal it acts as (``None``: not logged
    in; its tenant is the one being viewed), its CSRF token, the cookie to send back
    (``None``: unchanged), and whether its key is an ``admin`` key (which may choose the
    tenant it views; ``home`` is the key's own tenant)."""

    session: Session
    principal: Principal | None
    csrf: str
    cookie: str | None = None
    admin: bool = False
    home: str | None = None

    @property
    def can_write(self) -> bool:
        """Whether the session may change memories (logged in with a writing key)."""
        return self.principal is not None and not self.principal.read_only


def ns_query(namespace: tuple[str, ...] | list[str], **extra: Any) -> str:
    """A query string naming ``namespace`` label by label (labels may hold ``/``), plus
    ``extra`` parameters that are not ``None`` or empty."""
    pairs: list[tuple[str, Any]] = [("ns", label) for label in namespace]
    pairs += [(k, v) for k, v in extra.items() if v not in (None, "", False)]
    return urlencode(pairs)


class Inspector:
    """The inspector of one server: its state, session codec and templates."""

    def __init__(self, state: ServerState, prefix: str, *,
                 local_memory: Memory | None = None, metrics: Metrics | None = None,
                 local_tenant: str = LOCAL_TENANT) -> None:
        if local_memory is not None and state.config.auth:
            raise ConfigError("the inspector shows a whole database (local_memory) only "
                              "without auth; with API keys each tenant sees its own")
        self.state = state
        self.prefix = prefix
        self.local = not state.config.auth
        #: whose data the keyless inspector shows (``""``: the database's own)
        self.local_tenant = local_tenant
        self._local_memory = local_memory if local_tenant == LOCAL_TENANT else None
        #: the server's request metrics (the dashboard's latencies), if it keeps any
        self.metrics = metrics
        self._codec: SessionCodec | None = None
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(_TEMPLATES), autoescape=True,
            undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
        self.env.globals.update(ui=prefix, ns_query=ns_query, local=self.local)
        self.env.filters["when"] = fmt_time
        self.env.filters["iso"] = iso_time
        self.env.filters["ns"] = lambda ns: " / ".join(ns) if ns else "(all)"

    @property
    def codec(self) -> SessionCodec:
        """The session codec (after the first page: :meth:`viewer` loads the secret)."""
        if self._codec is None:
            raise RuntimeError("the session secret is read by the first viewer() call")
        return self._codec

    def _load_secret(self) -> SessionCodec:
        """The session codec under the secret kept in the server's store (made on first
        use, so every worker and restart shares it). ``remem ui`` keeps one in memory
        instead: it adds no items to the database it inspects."""
        if self._local_memory is not None:
            return SessionCodec(secrets.token_bytes(32))
        store = self.state.store
        item = store.get(SECRET_NAMESPACE, SECRET_KEY, refresh_ttl=False)
        if item is None or not isinstance(item.value.get("secret"), str):
            store.put(SECRET_NAMESPACE, SECRET_KEY, {"secret": secrets.token_hex(32)},
                      ttl=None, index=False)
            # another worker may have written its own meanwhile: everyone uses what is stored
            item = store.get(SECRET_NAMESPACE, SECRET_KEY, refresh_ttl=False)
        assert item is not None
        return SessionCodec(bytes.fromhex(str(item.value["secret"])))

    # -- who is looking ----------------------------------------------------------------------

    async def viewer(self, request: Request) -> Viewer:
        """The session of ``request`` (a new one when it has none), and the principal it
        acts as once its key is checked to be still active. Without auth every session is
        the one local user's."""
        if self._codec is None:
            self._codec = await self.state.run(self._load_secret)
        now = time.time()
        session = self.codec.load(request.cookies.get(COOKIE_NAME), now)
        fresh = session is None
        if session is None:
            session = Session.new(now, tenant=self.local_tenant if self.local else None)
        if self.local and session.tenant != self.local_tenant:
            session, fresh = Session.new(now, tenant=self.local_tenant), True
        principal: Principal | None = None
        admin = False
        if self.local:
            principal = Principal(self.local_tenant)
        elif session.logged_in and session.key_id is not None:
            key_id, sid = session.key_id, session.sid

            def check() -> tuple[Any, bool]:
                ended = self.state.store.get(ENDED_NAMESPACE, sid, refresh_ttl=False)
                return self.state.keys.lookup(key_id), ended is not None

            key, ended = await self.state.run(check)
            if (key is not None and key.active and key.tenant == session.tenant
                    and not ended):
                admin = key.admin
                # the tenant viewed comes from the key, or, for an admin key only, from the
                # session's choice: a non-admin session never views another tenant
                tenant = session.viewing if admin and session.viewing else key.tenant
                principal = Principal(tenant, key.read_only, key.key_id)
            else:  # logged out, or the key was revoked since login: the session ends
                session, fresh = Session.new(now), True
        if principal is not None:
            admit(self.state, principal)
        cookie = self.codec.dump(session) if fresh else None
        return Viewer(session, principal, self.codec.csrf_token(session), cookie, admin,
                      session.tenant if principal is not None else None)

    async def member(self, request: Request) -> tuple[Viewer, Principal]:
        """The viewer of a page that shows a tenant's data: logged in, or a redirect."""
        viewer = await self.viewer(request)
        if viewer.principal is None:
            raise LoginRequired(request.url.path + (f"?{request.url.query}"
                                                    if request.url.query else ""))
        return viewer, viewer.principal

    async def form(self, request: Request, viewer: Viewer) -> dict[str, str]:
        """The fields of a POSTed form, after checking its CSRF token (403 without the
        session's token)."""
        body = await request.body()
        if len(body) > MAX_FORM_BYTES:
            raise HTTPException(413, f"the form is larger than {MAX_FORM_BYTES} bytes")
        try:
            fields = {k: v[0] for k, v in parse_qs(body.decode("utf-8"),
                                                   keep_blank_values=True).items()}
        except UnicodeDecodeError:
            raise HTTPException(400, "the form is not UTF-8 text") from None
        if not self.codec.csrf_ok(viewer.session, fields.get("csrf_token")):
            raise HTTPException(403, "the form's CSRF token is missing or wrong (field "
                                     "csrf_token): reload the page and submit it again")
        return fields

    async def end_session(self, session: Session) -> None:
        """Record that ``session`` ended (logout), so its cookie stops working everywhere
        at once even if a copy of it survives; the record expires with the session."""
        left = session.expires - time.time()
        if session.logged_in and left > 0:
            await self.state.run(lambda: self.state.store.put(
                ENDED_NAMESPACE, session.sid, {"ended_at": time.time()}, ttl=left,
                index=False))

    def start_session(self, principal: Principal | None) -> str:
        """A cookie for a new session acting as ``principal`` (``None``: logged out)."""
        now = time.time()
        if principal is None:
            return self.codec.dump(Session.new(now))
        return self.codec.dump(Session.new(now, tenant=principal.tenant,
                                           key_id=principal.key_id,
                                           read_only=principal.read_only))

    def view_tenant(self, viewer: Viewer, tenant: str) -> str:
        """The cookie of ``viewer``'s session viewing ``tenant`` (its own: the choice is
        cleared). Only for an admin viewer; the caller checked the tenant's name and the
        form's CSRF token."""
        if not viewer.admin:
            raise RuntimeError("only an admin key's session chooses the tenant it views")
        viewing = None if tenant == viewer.home else tenant
        return self.codec.dump(replace(viewer.session, viewing=viewing))

    def memory(self, who: Principal) -> Memory:
        """The memories ``who`` may see: its tenant's (``remem ui``: the memory it opened,
        the database's own)."""
        if self._local_memory is not None and who.tenant == LOCAL_TENANT:
            return self._local_memory
        return self.state.memory_for(who)

    def threads(self, who: Principal) -> ThreadStore:
        """The threads ``who`` may see: its tenant's (the database's own: every thread)."""
        return self.state.threads_for(who)

    def tenant_of(self, who: Principal) -> str:
        """The tenant whose jobs and usage ``who`` sees (``""``: the database's own, as
        ``remem jobs`` and ``remem usage`` without ``--tenant``)."""
        return who.tenant

    async def run(self, work: Callable[[], T]) -> T:
        """Blocking store work of a page, in the server's store threads."""
        return await self.state.run(work)

    # -- answers -----------------------------------------------------------------------------

    def set_cookie(self, request: Request, response: Response, value: str) -> None:
        """Send the session cookie: HttpOnly, SameSite=Strict, Secure over https."""
        response.set_cookie(COOKIE_NAME, value, max_age=SESSION_SECONDS, path=self.prefix,
                            httponly=True, samesite="strict",
                            secure=request.url.scheme == "https")

    def page(self, request: Request, viewer: Viewer | None, template: str,
             code: int = 200, /, **context: Any) -> HTMLResponse:
        """Render ``template`` for ``viewer`` with the security headers, answered with
        HTTP status ``code``."""
        html = self.env.get_template(template).render(
            viewer=viewer, request_path=request.url.path, **context)
        response = HTMLResponse(html, status_code=code, headers=SECURITY_HEADERS)
        if viewer is not None and viewer.cookie is not None:
            self.set_cookie(request, response, viewer.cookie)
        return response

    def redirect(self, request: Request, to: str, cookie: str | None = None) -> Response:
        """A 303 to ``to`` (a path under the inspector), setting ``cookie`` if given."""
        response = RedirectResponse(to, status_code=303, headers=SECURITY_HEADERS)
        if cookie is not None:
            self.set_cookie(request, response, cookie)
        return response

    def error(self, request: Request, status: int, message: str) -> HTMLResponse:
        """An error page (the message names what was wrong and how to fix it)."""
        return self.page(request, None, "error.html", status, status_code=status,
                         message=message)

    def install_handlers(self, app: Any) -> None:
        """HTML answers for the inspector's errors (the API keeps its JSON ones)."""

        async def remem_error(request: Request, exc: Exception) -> Response:
            assert isinstance(exc, RememError)
            status, _, message = classify(exc, f"{request.method} {request.url.path}")
            return self.error(request, status, message)

        async def http_error(request: Request, exc: Exception) -> Response:
            assert isinstance(exc, StarletteHTTPException)
            return self.error(request, exc.status_code, str(exc.detail))

        async def invalid(request: Request, exc: Exception) -> Response:
            assert isinstance(exc, RequestValidationError)
            problems = []
            for err in exc.errors():
                where = ".".join(str(p) for p in err.get("loc", ())[1:]) or "request"
                problems.append(f"{where}: {err.get('msg', 'invalid')}")
            return self.error(request, 422, "; ".join(problems))

        async def login(request: Request, exc: Exception) -> Response:
            assert isinstance(exc, LoginRequired)
            query = urlencode({"next": exc.next_path})
            return self.redirect(request, f"{self.prefix}/login?{query}")

        app.add_exception_handler(RememError, remem_error)
        app.add_exception_handler(StarletteHTTPException, http_error)
        app.add_exception_handler(RequestValidationError, invalid)
        app.add_exception_handler(LoginRequired, login)


def inspector(request: Request) -> Inspector:
    """The :class:`Inspector` serving ``request``."""
    found: Inspector = request.app.state.inspector
    return found


def page_routes(routes: Iterable[Any]) -> Iterator[APIRoute]:
    """Every page route among ``routes`` (an inspector app's ``routes``), through the
    routers it includes (FastAPI keeps an included router as a wrapper around it)."""
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        inner = getattr(route, "original_router", None)
        if inner is not None:
            yield from page_routes(inner.routes)


def safe_next(prefix: str, target: str | None) -> str:
    """Where to go after login: ``target`` if it is a path of the inspector, else its
    home (never another site)."""
    if target and target.startswith(prefix + "/") and not target.startswith("//") \
            and "\\" not in target and "://" not in target:
        return target
    return prefix + "/"


def form_value(fields: Mapping[str, str], name: str) -> str:
    """A form field, stripped (empty when missing)."""
    return fields.get(name, "").strip()

