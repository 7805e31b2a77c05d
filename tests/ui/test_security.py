"""The inspector's security bars, probed through HTTP: another tenant's key sees none of a
tenant's data on any route (a scripted probe of every route under /ui), and no parameter,
header or cookie edit lets it choose that tenant; an admin key sees it only after choosing
it; stored XSS probes render as text, every state change needs the session's CSRF token,
cookie flags, a strict CSP without inline script or style, no secrets in pages, no open
redirect."""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from starlette.routing import Mount

from remem.background import NewJob
from remem.blocks.store import Blocks
from remem.files.permissions import Policy, Rule
from remem.files.store import StoreFileBackend
from remem.procedural.prompts import PromptRegistry
from remem.server.routes_approvals import approvals_for
from remem.server.routes_files import guarded_files, set_file_policy
from remem.server.state import Principal
from remem.ui.app import page_routes
from remem.ui.session import Session, SessionCodec
from remem.ui.web import Inspector
from tests.ui_support import Server, csrf_of, login, server

XSS = ("<script>alert(1)</script>", "<img src=x onerror=alert(1)>")
OWNER_TEXT = "owner secret: the vault code is 4711"


@dataclass
class World:
    srv: Server
    memory_id: str
    event_id: str
    thread_id: str
    checkpoint_id: str

    added_event_id: str
    job_id: str
    approval_id: str

    def secrets(self) -> tuple[str, ...]:
        """What a foreign tenant must never see and never sends itself (the probe's own
        ids and query may be echoed back, as in "no memory mem_..."): the memory's text,
        its history (reason, the id of its first event), the thread's message."""
        return ("4711", "rotated", self.added_event_id, "owner thread message")


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    with server() as srv:
        memory = srv.memory("owner")
        added = memory.add(OWNER_TEXT, user_id="owner-user", infer=False)
        memory_id = added.changes[0].memory.id
        memory.update(memory_id, OWNER_TEXT + " (changed)", reason="rotated")
        history = memory.history(memory_id)
        event_id, added_event_id = history[-1].id, history[0].id
        threads = srv.threads("owner")
        threads.create("owner-thread", messages="owner thread message")
        checkpoint = threads.checkpoint("owner-thread")
        for payload in XSS:
            memory.add(f"probe {payload} end", user_id="xss", infer=False,
                       kind=payload[:60])
        threads.create("xss-thread", messages=[f"probe {p} end" for p in XSS])
        threads.update_state("xss-thread", {"summary": XSS[1], "summary_through": 1})
        probe_id = memory.search("probe", user_id="xss").hits[0].memory.id
        memory.update(probe_id, f"probe {XSS[0]} changed", reason=XSS[1])
        owner_store = srv.state.store_for(Principal("owner"))
        Blocks(StoreFileBackend(owner_store, ("blocks",))).create(
            "owner-block", label="secrets", value="the code is 4711")
        StoreFileBackend(owner_store, ("files", "default")).write("/owner/secret.md", "4711")
        PromptRegistry(owner_store).create("owner-prompt", "the code is 4711")
        set_file_policy(srv.state, Policy((Rule("ask", "/plans/**", frozenset({"write"})),)))
        parked = guarded_files(srv.state, Principal("owner"), "default",
                               actor="agent").write("/plans/p.md", "4711")
        job = srv.state.jobs().enqueue(NewJob("memory.extract", {"note": "4711"},
                                                 tenant="owner"))
        claimed = srv.state.jobs().claim_one(job.id, "w1")
        assert claimed is not None
        srv.state.jobs().fail(job.id, "w1", "rotated", permanent=True)
        yield World(srv, memory_id, event_id, "owner-thread", checkpoint.id, added_event_id,
                    job.id, parked.approval_id)


def _ui_routes(srv: Server) -> list[APIRoute]:
    """Every page route registered under /ui (the static files aside)."""
    mount = next(r for r in srv.app.routes if isinstance(r, Mount) and r.path == "/ui")
    return list(page_routes(mount.routes))


def _fill(path: str, world: World) -> str:
    return (path.replace("{memory_id}", world.memory_id)
            .replace("{event_id}", world.event_id)
            .replace("{thread_id}", world.thread_id)
            .replace("{job_id}", world.job_id)
            .replace("{block_id}", "owner-block")
            .replace("{name}", "owner-prompt")
            .replace("{approval_id}", world.approval_id)
            .replace("{decision}", "reject"))


_SHOWN = re.compile(r'id="tenant"[^>]*\bdata-tenant="([^"]+)"')
#: query parameters and headers a probe adds, beyond the owner's ids: none of them may choose
#: the tenant a session views
_CHOOSERS = ({"tenant": "owner", "viewing": "owner", "vt": "owner"},
             {"X-Remem-Tenant": "owner", "X-Tenant": "owner"})


@dataclass
class Probe:
    requests: int
    views: int  # responses showing the owner's data
    statuses: dict[str, set[int]]
    shown: set[str]  # the tenants the pages' headers said were being viewed


def _probe(world: World, browser: TestClient, *, post: bool = True,
           few: bool = False) -> Probe:
    """Visit every route under /ui with ``browser`` (logged in), with the owner's ids in
    the paths, and query parameters and headers that try to choose the owner's tenant
    (``few``: fewer query variants)."""
    csrf = csrf_of(browser.get("/ui/memories").text)
    found = Probe(0, 0, {}, set())
    for route in _ui_routes(world.srv):
        if route.path in ("/login", "/logout"):
            continue
        url = "/ui" + _fill(route.path, world)
        extra = [{}, {"q": "vault", **_CHOOSERS[0]}, {"user": "owner-user", "q": "vault"},
                 {"path": "/owner/secret.md"}]
        if not few:
            extra += [{"q": "vault"}, {"ns": ["memories", "user", "owner-user"]},
                      {"checkpoint": world.checkpoint_id}, {"as_of": "2030-01-01T00:00"},
                      {"path": "/owner"}, {"user": "owner-user", "entity": "1"}]
        for method in sorted(route.methods if post else route.methods - {"POST"}):
            for params in extra:
                headers = _CHOOSERS[1] if "tenant" in params else None
                if method == "POST":
                    response = browser.post(url, params=params, headers=headers,
                                            data={"csrf_token": csrf, "tenant": "owner"},
                                            follow_redirects=False)
                else:
                    response = browser.get(url, params=params, headers=headers,
                                           follow_redirects=False)
                found.requests += 1
                found.statuses.setdefault(f"{method} {route.path}", set()).add(
                    response.status_code)
                body = response.text + response.headers.get("location", "")
                if any(secret in body for secret in world.secrets()):
                    found.views += 1
                found.shown.update(_SHOWN.findall(body))
    return found


def test_a_foreign_key_sees_none_of_the_owner_on_any_route(world: World) -> None:
    probe = _probe(world, world.srv.logged_in("intruder"))
    print(f"\nforeign-key probe: {probe.requests} requests on {len(probe.statuses)} "
          f"route/method pairs, {probe.views} showing another tenant's data")
    assert probe.views == 0
    assert probe.shown == {"intruder"}  # no parameter or header chose another tenant
    assert len(probe.statuses) >= 23  # every page of the inspector was probed
    for route, seen in probe.statuses.items():
        if "{" in route:  # a route naming the owner's object: never found
            assert seen == {404}, (route, seen)
        elif route in ("GET /tenants", "POST /tenant"):  # an admin key's tenant picker
            assert seen == {403}, (route, seen)
        else:
            # a page naming the owner's object in its query (a file, an entity) is 404 too;
            # the graph asks for a user when a probe sends a query without one (422)
            assert seen <= {200, 303, 404, 422}, (route, seen)
    assert world.srv.state.jobs().get(world.job_id).status == "failed"  # not retried
    owner_approvals = approvals_for(world.srv.state.store_for(Principal("owner")), "default")
    assert owner_approvals.get(world.approval_id).status == "pending"  # not resolved
    owner_memory = world.srv.memory("owner").get(world.memory_id)
    assert owner_memory.text == OWNER_TEXT + " (changed)"  # the foreign undo did nothing


def test_the_same_probe_as_the_owner_shows_the_data(world: World) -> None:
    """The probe can fail: the owner's own key sees the data on the same requests."""
    probe = _probe(world, world.srv.logged_in("owner"), post=False)
    assert probe.views >= 5 and probe.requests > probe.views
    assert probe.shown == {"owner"}


def _admin(world: World, *, read_only: bool = False) -> TestClient:
    token = world.srv.state.keys.create("ops", admin=True, read_only=read_only)[0]
    browser = world.srv.browser()
    assert login(browser, token).status_code == 303
    return browser


def _choose(browser: TestClient, tenant: str, **form: str) -> Any:
    csrf = csrf_of(browser.get("/ui/memories").text)
    return browser.post("/ui/tenant", data={"csrf_token": csrf, "tenant": tenant, **form},
                        follow_redirects=False)


def test_an_admin_key_sees_another_tenant_only_after_choosing_it(world: World) -> None:
    browser = _admin(world)
    before = _probe(world, browser, post=False, few=True)
    assert before.views == 0 and before.shown == {"ops"}
    picker = browser.get("/ui/tenants")
    assert picker.status_code == 200
    listed = set(re.findall(r'<tr class="tenant-row[^"]*" data-tenant="([^"]+)"', picker.text))
    assert {"owner", "ops"} <= listed  # tenants with data, and with keys
    chosen = _choose(browser, "owner")
    assert (chosen.status_code, chosen.headers["location"]) == (303, "/ui/memories")
    after = _probe(world, browser, post=False, few=True)
    print(f"\nadmin-key probe: {before.requests} requests before choosing a tenant, "
          f"{before.views} showing the owner's data; {after.requests} after choosing it, "
          f"{after.views}")
    assert after.views >= 5 and after.shown == {"owner"}  # every page names the tenant
    assert 'admin key of ops' in browser.get("/ui/memories").text
    back = _choose(browser, "ops")
    assert back.status_code == 303
    assert _SHOWN.findall(browser.get("/ui/memories?q=vault").text) == ["ops"]


def test_a_non_admin_session_cannot_choose_a_tenant(world: World) -> None:
    browser = world.srv.logged_in("intruder")
    assert browser.get("/ui/tenants").status_code == 403
    refused = _choose(browser, "owner")
    assert refused.status_code == 403 and "admin key" in refused.text
    # an edited cookie (viewing the owner) fails its signature: logged out
    cookie = browser.cookies["remem_ui"]
    body, _, mac = cookie.partition(".")
    raw = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    edited = base64.urlsafe_b64encode(json.dumps({**raw, "vt": "owner"}).encode())
    other = world.srv.browser()
    other.cookies.set("remem_ui", edited.decode().rstrip("=") + "." + mac, path="/ui")
    assert other.get("/ui/memories", follow_redirects=False).status_code == 303
    # even a validly signed choice is ignored for a key that is not an admin key
    codec = _inspector(world).codec
    session = codec.load(cookie, time.time())
    assert session is not None
    browser.cookies.set("remem_ui", codec.dump(replace(session, viewing="owner")), path="/ui")
    page = browser.get("/ui/memories", params={"q": "vault"},
                       headers={"X-Remem-Tenant": "owner"})
    assert page.status_code == 200 and "4711" not in page.text
    assert _SHOWN.findall(page.text) == ["intruder"]


def test_choosing_a_tenant_needs_the_csrf_token_and_a_valid_name(world: World) -> None:
    browser = _admin(world, read_only=True)
    for token in ("", "x" * 32, csrf_of(world.srv.logged_in("owner").get("/ui/memories").text)):
        refused = browser.post("/ui/tenant", data={"csrf_token": token, "tenant": "owner"})
        assert refused.status_code == 403
    for bad in ("", "../owner", "a" * 65, "owner/x"):
        page = _choose(browser, bad)
        assert page.status_code == 422 and "field tenant" in page.text, bad
    assert _SHOWN.findall(browser.get("/ui/memories").text) == ["ops"]
    # a read-only admin key views the owner but cannot undo there
    assert _choose(browser, "owner").status_code == 303
    shown = browser.get(f"/ui/memories/{world.memory_id}")
    assert shown.status_code == 200 and "4711" in shown.text and "undo-link" not in shown.text
    undo = f"/ui/memories/{world.memory_id}/undo/{world.event_id}"
    page = browser.get(undo)
    assert browser.post(undo, data={"csrf_token": csrf_of(page.text)}).status_code == 403
    assert world.srv.memory("owner").get(world.memory_id).text == OWNER_TEXT + " (changed)"


def test_revoking_an_admin_key_ends_its_sessions(world: World) -> None:
    token, info = world.srv.state.keys.create("ops", admin=True)
    browser = world.srv.browser()
    login(browser, token)
    assert _choose(browser, "owner").status_code == 303
    assert "4711" in browser.get("/ui/memories", params={"q": "vault"}).text
    world.srv.state.keys.revoke(info.key_id)
    gone = browser.get("/ui/memories", params={"q": "vault"}, follow_redirects=False)
    assert gone.status_code == 303 and gone.headers["location"].startswith("/ui/login")


def test_a_writing_admin_key_undoes_in_the_tenant_it_chose(world: World) -> None:
    memory = world.srv.memory("acme")
    added = memory.add("acme likes tea", user_id="u", infer=False).changes[0].memory
    memory.update(added.id, "acme likes coffee")
    event = memory.history(added.id)[-1].id
    browser = _admin(world)
    url = f"/ui/memories/{added.id}/undo/{event}"
    assert browser.get(url).status_code == 404  # its own tenant has no such memory
    assert _choose(browser, "acme").status_code == 303
    page = browser.get(url)
    assert page.status_code == 200 and "undo-confirm" in page.text
    done = browser.post(url, data={"csrf_token": csrf_of(page.text)}, follow_redirects=False)
    assert done.status_code == 303
    assert memory.get(added.id).text == "acme likes tea"
    assert f"key:{_key_id(browser, world)}" in [e.actor for e in memory.history(added.id)]


def _key_id(browser: TestClient, world: World) -> str:
    session = _inspector(world).codec.load(browser.cookies["remem_ui"], time.time())
    assert session is not None and session.key_id is not None
    return session.key_id


def _inspector(world: World) -> Inspector:
    mount = next(r for r in world.srv.app.routes if isinstance(r, Mount) and r.path == "/ui")
    found: Inspector = mount.app.state.inspector  # type: ignore[attr-defined]
    return found


def test_stored_xss_probes_render_as_text_on_every_page(world: World) -> None:
    browser = world.srv.logged_in("owner")
    probe = world.srv.memory("owner").search("probe changed", user_id="xss").hits[0].memory
    pages = [browser.get("/ui/memories", params={"q": "probe"}),
             browser.get("/ui/memories", params=[("ns", "memories"), ("ns", "user"),
                                                 ("ns", "xss")]),
             browser.get("/ui/namespaces"),
             browser.get(f"/ui/memories/{probe.id}"),
             browser.get(f"/ui/memories/{probe.id}/undo/"
                         f"{world.srv.memory('owner').history(probe.id)[-1].id}"),
             browser.get("/ui/threads"),
             browser.get("/ui/threads/xss-thread")]
    for page in pages:
        assert page.status_code == 200, page.url
        html = page.text
        for payload in XSS:
            assert payload not in html, (page.url, payload)
        assert re.search(r"<[^>]*\son\w+\s*=", html) is None, page.url  # no handler attribute
        assert html.count("<script") == 1  # only the static file of the page
        assert '<script src="/ui/static/ui.js" defer></script>' in html
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert escaped in pages[0].text and escaped in pages[3].text
    assert "&lt;img src=x onerror=alert(1)&gt;" in pages[6].text  # message and summary
    assert "&lt;img src=x onerror=alert(1)&gt;" in pages[3].text  # kind and reason


def test_every_state_change_needs_the_session_csrf_token(world: World) -> None:
    srv = world.srv
    memory = srv.memory("owner")
    target = f"/ui/memories/{world.memory_id}/undo/{world.event_id}"
    browser = srv.logged_in("owner")
    other = srv.logged_in("owner")
    foreign_token = csrf_of(other.get("/ui/memories").text)
    for data in ({}, {"csrf_token": ""}, {"csrf_token": "x" * 32},
                 {"csrf_token": foreign_token}):
        assert browser.post(target, data=data).status_code == 403
        assert browser.post("/ui/logout", data=data).status_code == 403
        anonymous = srv.browser()
        anonymous.get("/ui/login")
        refused = anonymous.post("/ui/login", data={**data, "api_key": srv.key("owner")},
                                 follow_redirects=False)
        assert refused.status_code == 403
    assert memory.get(world.memory_id).text == OWNER_TEXT + " (changed)"
    assert browser.get("/ui/memories").status_code == 200  # the refused logout did nothing
    no_cookie = srv.browser()
    assert no_cookie.post(target, data={"csrf_token": foreign_token},
                          follow_redirects=False).status_code == 303
    assert memory.get(world.memory_id).text == OWNER_TEXT + " (changed)"


def test_session_cookie_flags_over_http_and_https(world: World) -> None:
    token = world.srv.key("owner")
    for https in (False, True):
        browser = world.srv.browser(https=https)
        response = login(browser, token)
        cookie = response.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/ui" in cookie
        assert ("Secure" in cookie) is https
        assert token not in cookie and token[16:] not in cookie


def test_a_forged_or_altered_cookie_is_a_logged_out_session(world: World) -> None:
    browser = world.srv.logged_in("owner")
    cookie = browser.cookies["remem_ui"]
    body, _, mac = cookie.partition(".")
    forged = SessionCodec(b"k" * 32).dump(Session.new(0.0 + 4e9, tenant="owner"))
    for value in (body + "x." + mac, body + "." + mac[:-2] + "AA", forged, "garbage"):
        other = world.srv.browser()
        other.cookies.set("remem_ui", value, path="/ui")
        assert other.get("/ui/memories", follow_redirects=False).status_code == 303


def test_session_codec_rules() -> None:
    codec = SessionCodec(b"s" * 32)
    session = Session.new(100.0, tenant="t", key_id="abc")
    cookie = codec.dump(session)
    assert codec.load(cookie, 101.0) == session
    assert codec.load(cookie, session.expires + 1) is None  # expired
    assert SessionCodec(b"o" * 32).load(cookie, 101.0) is None  # another server's secret
    assert codec.csrf_ok(session, codec.csrf_token(session))
    assert not codec.csrf_ok(Session.new(100.0), codec.csrf_token(session))
    with pytest.raises(ValueError, match="32 bytes"):
        SessionCodec(b"short")


def test_pages_send_a_strict_csp_and_hold_no_inline_script_style_or_keys(
        world: World) -> None:
    token = world.srv.key("owner")
    browser = world.srv.browser()
    login(browser, token)
    for url in ("/ui/memories?q=vault", "/ui/namespaces", "/ui/threads",
                f"/ui/memories/{world.memory_id}", "/ui/threads/owner-thread",
                "/ui/memories/mem_missing"):
        page = browser.get(url)
        csp = page.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src 'self'" in csp
        assert "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp
        assert page.headers["x-content-type-options"] == "nosniff"
        assert page.headers["cache-control"] == "no-store"
        assert " style=" not in page.text and "<style" not in page.text
        assert re.search(r"<script(?![^>]*\ssrc=)", page.text) is None  # no inline script
        assert token not in page.text and token[16:] not in page.text
        assert "<label" in page.text or "<form" not in page.text.split("</header>")[1]


def test_login_never_redirects_to_another_site(world: World) -> None:
    token = world.srv.key("owner")
    for target in ("//evil.example/x", "https://evil.example", "/ui/../v1/x\\y",
                   "/elsewhere"):
        browser = world.srv.browser()
        response = login(browser, token, target)
        assert response.headers["location"] == "/ui/", target


def test_every_page_labels_its_controls_and_has_no_inline_style(world: World) -> None:
    """Every GET page of the inspector, as an admin key viewing the owner sees it (the
    owner's ids filled in; the tenant picker included): each form control has a
    <label for>, ids are unique, no inline style or script."""
    browser = _admin(world)
    assert _choose(browser, "owner").status_code == 303
    pages = {"/ui/login": world.srv.browser().get("/ui/login")}
    for route in _ui_routes(world.srv):
        if "GET" in route.methods and route.path not in ("/", "/login"):
            url = "/ui" + _fill(route.path, world)
            pages[url] = browser.get(url, params={"q": "vault", "user": "owner-user"}
                                     if route.path == "/graph" else {"q": "vault"})
    assert len(pages) >= 15
    for url, page in pages.items():
        assert page.status_code == 200, (url, page.status_code)
        html = page.text
        labelled = set(re.findall(r'<label for="([^"]+)"', html))
        for attributes in re.findall(r"<(?:input|select|textarea)\b([^>]*)>", html):
            if 'type="hidden"' in attributes:
                continue
            control_id = re.search(r'\bid="([^"]+)"', attributes)
            assert control_id is not None and control_id.group(1) in labelled, (url,
                                                                                attributes)
        ids = re.findall(r'\sid="([^"]+)"', html)
        assert len(ids) == len(set(ids)), (url, sorted(i for i in ids if ids.count(i) > 1))
        assert " style=" not in html and "<style" not in html, url
        assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in html
