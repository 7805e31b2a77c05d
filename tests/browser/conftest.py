"""The web inspector in a real browser: Debian's Chromium driven by Playwright, against a
real ``remem serve`` on a free loopback port.

One browser and one server for the package (seconds, not minutes); each test gets a fresh
browser context, so cookies never leak from one test to the next. Package scope, not session:
Playwright's sync API keeps an event loop running on the main thread while it is open, where
remem's sync calls refuse to block, so the browser must be gone before the rest of the suite
runs. Chromium missing is never
a skip: as root the fixture installs it with apt-get (as ``.ci/run`` does), otherwise the
session fails saying how to install it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import (
    Browser,
    ConsoleMessage,
    Dialog,
    Page,
    ViewportSize,
    sync_playwright,
)

from remem.server.keys import KeyStore
from remem.store import open_store
from remem.testing import LoopbackServer
from remem.testing.chat_server import ChatCall
from remem.testing.server import ServerProcess
from tests.graph.scripts import E, F, answer

CHROMIUM = Path("/usr/bin/chromium")
#: flags that keep headless Chromium quiet and offline on a shared CI machine
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update",
               "--disable-sync"]
#: where the screenshots shown in docs/ui.md are written (viewport-sized, overwritten)
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "img" / "ui"
VIEWPORT: ViewportSize = {"width": 1100, "height": 760}

USER = "ada"
#: the memory the tests correct, search for and undo
TEA = "Ada drinks jasmine tea every morning"
TEA_CORRECTED = "Ada drinks oolong tea every morning"
#: a memory that is markup: it must render as text, never run or add elements
XSS = ('<script>window.__xss = "script"</script><img src="x" id="xss-img" '
       'onerror="window.__xss = \'onerror\'"> tea probe')
#: the memory the undo test reverts (a test of its own, so the others never see it change)
BIRD = "Ada's parrot is called Kiwi"
BIRD_CORRECTED = "Ada's parrot is called Mango"
ALPHA_MEMORIES = [TEA, BIRD, "Ada's dog is called Biscuit", "Ada prefers window seats on trains",
                  "Ada is allergic to peanuts", "Ada keeps green tea and black tea at work",
                  XSS]
BETA_SECRET = "Bob hides a spare key under the blue tea pot"


def ensure_chromium(executable: Path = CHROMIUM, *, may_install: bool | None = None) -> Path:
    """``executable``, with Debian's ``chromium`` installed by apt-get when it is missing and
    ``may_install`` (default: running as root with apt-get); otherwise the session fails
    naming the install command (never a skip: the browser tests are part of the suite)."""
    if executable.exists():
        return executable
    fix = ("install Debian's Chromium first: sudo apt-get update && sudo apt-get install -y "
           f"chromium (the browser tests in tests/browser drive {executable})")
    if may_install is None:
        may_install = os.geteuid() == 0 and shutil.which("apt-get") is not None
    if not may_install:
        pytest.fail(f"{executable} is missing; {fix}", pytrace=False)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", "chromium"]):
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            pytest.fail(f"{' '.join(command)} failed ({done.returncode}): "
                        f"{done.stderr[-2000:]}; {fix}", pytrace=False)
    if not executable.exists():
        pytest.fail(f"apt-get installed chromium but {executable} is still missing; {fix}",
                    pytrace=False)
    return executable


@dataclass
class Seeded:
    """What the session's server holds: two tenants' keys and the ids the tests look for."""

    url: str
    alpha_key: str
    beta_key: str
    human_key: str  # a second key of alpha: a human approving what alpha's agent asked
    tea_id: str
    xss_id: str
    beta_id: str
    thread_id: str
    tea_event: str  # the tea memory's correction, an event only alpha may undo
    queued_job: str
    cancelled_job: str
    approval_id: str  # alpha's write to /approve/plan.md, parked by the file policy
    ids: dict[str, str] = field(default_factory=dict)  # alpha memory text -> id


def _post(client: httpx.Client, path: str, key: str, body: dict[str, Any]) -> Any:
    response = client.post(path, json=body, headers={"Authorization": f"Bearer {key}"})
    assert response.status_code in (200, 201), (path, response.status_code, response.text)
    return response.json()


#: a file whose writing the server's file policy asks a human about
PLAN = "/approve/plan.md"
#: an organisation whose name is markup: the graph page draws it as text
ACME = 'Acme <img src=x id="xss-node" onerror="window.__xss = 1">'


def _extract_graph(call: ChatCall) -> dict[str, Any]:
    """The loopback model's answer to a graph extraction: Ada worked at Acme (in Berlin),
    then moved to Globex (ending the Acme fact)."""
    episode = call.messages[-1].text.split("Episode:", 1)[1]
    if "Globex" in episode:
        graph = answer([E("Ada", existing="Ada"), E("Globex", "organization")],
                       [F("Ada", "works_at", "Globex", "Ada works at Globex",
                          valid_at="2024-05-01", contradicts=["Ada works at Acme"])])(call)
    else:
        graph = answer([E("Ada"), E(ACME, "organization"), E("Berlin", "place")],
                       [F("Ada", "works_at", ACME, "Ada works at Acme", valid_at="2020-01-01"),
                        F(ACME, "located_in", "Berlin", "Acme is based in Berlin")])(call)
    return {**graph, "profile": [], "events": []}


def _seed(url: str, alpha: str, beta: str, human: str, model: LoopbackServer) -> Seeded:
    """Seed through the HTTP API, as a user of the server would."""
    ids: dict[str, str] = {}
    with httpx.Client(base_url=url, timeout=30) as client:
        for text in ALPHA_MEMORIES:
            added = _post(client, "/v1/memories", alpha,
                          {"messages": text, "user_id": USER, "infer": False, "split": "none"})
            ids[text] = added["changes"][0]["memory"]["id"]
        # corrections give memories a history (version 2): one to read, one to undo
        events = {}
        for text, correction in ((TEA, TEA_CORRECTED), (BIRD, BIRD_CORRECTED)):
            corrected = client.patch(f"/v1/memories/{ids[text]}", json={
                "content": correction, "reason": "she switched teas"},
                headers={"Authorization": f"Bearer {alpha}"})
            assert corrected.status_code == 200, corrected.text
            events[text] = corrected.json()["changes"][0]["event_id"]
        beta_added = _post(client, "/v1/memories", beta,
                           {"messages": BETA_SECRET, "user_id": "bob", "infer": False,
                            "split": "none"})
        _post(client, "/v1/threads", alpha, {
            "thread_id": "ada-chat", "metadata": {"user_id": USER},
            "messages": [{"role": "user", "content": "Remember that I drink jasmine tea."},
                         {"role": "assistant", "content": "Noted: jasmine tea."}]})
        _post(client, "/v1/threads", alpha, {
            "thread_id": "xss-thread", "metadata": {"user_id": USER},
            "messages": [{"role": "user", "content": XSS}]})
        # a core memory block, a file and a prompt, each changed once (a history to show)
        _post(client, "/v1/blocks", alpha, {"id": "persona", "label": "persona", "limit": 200,
                                             "value": "Ada's assistant: brief and warm."})
        changed = client.patch("/v1/blocks/persona", headers={"Authorization": f"Bearer {alpha}"},
                               json={"value": "Ada's assistant: brief, warm, tea-minded."})
        assert changed.status_code == 200, changed.text
        _post(client, "/v1/files/write", alpha, {"path": "/notes/tea.md",
                                                  "content": "# Tea\n\njasmine in the morning\n"})
        _post(client, "/v1/files/edit", alpha, {"path": "/notes/tea.md",
                                                 "old_string": "jasmine", "new_string": "oolong"})
        _post(client, "/v1/prompts", alpha, {"name": "greeting", "text": "Hello {name}."})
        _post(client, "/v1/prompts/greeting", alpha, {"text": "Hello {name}, welcome back."})
        # a write the file policy parks until a human approves it
        parked = client.post("/v1/files/write", headers={"Authorization": f"Bearer {alpha}"},
                             json={"path": PLAN, "content": "Ship on Friday.\n"})
        assert parked.status_code == 202, parked.text
        # a temporal graph of two episodes (the model's answers are scripted)
        model.chat.default = _extract_graph
        for text, day in (("Ada joined Acme in January 2020; Acme is in Berlin.", 1_580_515_200),
                          ("Ada moved to Globex in May 2024.", 1_715_126_400)):
            _post(client, "/v1/graph/episodes", alpha,
                  {"user_id": USER, "text": text, "event_at": day})
        # background extractions an hour away (no worker runs): one queued, one cancelled
        jobs = [_post(client, "/v1/memories/submit", alpha, {
            "thread_id": thread, "user_id": USER, "messages": "I moved to Lisbon",
            "delay": 3600})["job_id"] for thread in ("ada-chat", "ada-travel")]
        _post(client, f"/v1/jobs/{jobs[1]}/cancel", alpha, {})
    return Seeded(url=url, alpha_key=alpha, beta_key=beta, tea_id=ids[TEA], xss_id=ids[XSS],
                  beta_id=beta_added["changes"][0]["memory"]["id"], thread_id="ada-chat",
                  tea_event=events[TEA], queued_job=jobs[0], cancelled_job=jobs[1],
                  human_key=human, approval_id=parked.json()["approval_id"], ids=ids)


def _make_keys(db: str) -> tuple[str, str, str]:
    with open_store(db) as store:
        keys = KeyStore(store)
        return keys.create("alpha")[0], keys.create("beta")[0], keys.create("alpha")[0]


@pytest.fixture(scope="package")
def served() -> Iterator[Seeded]:
    """A real ``remem serve`` (SQLite file, fake embedder, the loopback model) with keys for
    tenants alpha and beta and seeded memories, one for the package."""
    directory = tempfile.mkdtemp(prefix="remem-browser-")
    db = os.path.join(directory, "inspected.db")
    try:
        # Playwright's sync API keeps an event loop running on this thread, where remem's
        # sync calls refuse to block: the keys are made on a thread of their own
        with ThreadPoolExecutor(1) as pool:
            alpha, beta, human = pool.submit(_make_keys, db).result()
        policy = os.path.join(directory, "file-policy.json")
        with open(policy, "w") as file:
            json.dump({"default": "allow", "rules": [
                {"effect": "ask", "paths": "/approve/**", "operations": ["write"]}]}, file)
        # the loopback model lets the server accept background extractions; none runs
        with LoopbackServer() as model, ServerProcess(
                ["--db", db, "--embedder", "fake", "--no-mcp"],
                env={"REMEM_LLM_BASE_URL": model.url, "REMEM_LLM_MODEL": "loopback",
                     "REMEM_LLM_API_KEY": "sk-test", "REMEM_LLM_PROVIDER": "openai",
                     "REMEM_FILE_POLICY": policy},
        ) as server:
            yield _seed(server.url, alpha, beta, human, model)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    """Headless Chromium from Debian's package (never a downloaded build), one for the package;
    Playwright gives it a fresh profile directory."""
    executable = ensure_chromium()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(executable), headless=True,
                                              args=LAUNCH_ARGS)
        yield launched
        launched.close()


@dataclass
class Tab:
    """One page of a fresh browser context, with what the page reported: console errors,
    uncaught exceptions and dialogs (``alert``/``confirm``: a probe fired if any appear
    unasked)."""

    page: Page
    base: str
    console_errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    accept_dialogs: bool = False
    #: pages whose ``Referrer-Policy: no-referrer`` the harness relaxed (see REFERRER_BUG)
    relaxed: list[str] = field(default_factory=list)
    #: every page the tab's main frame loaded (redirects land here once, at their target)
    visited: list[str] = field(default_factory=list)

    def open(self, path: str) -> int:
        """Go to ``path`` of the inspector; the HTTP status."""
        response = self.page.goto(self.base + path)
        assert response is not None, path
        return response.status

    def login(self, key: str) -> None:
        """Log in on the login page with ``key``."""
        self.open("/ui/login")
        self.page.fill("#login-key", key)
        self.page.click("#login-submit")
        self.page.wait_for_load_state()

    def search(self, query: str) -> None:
        """Search the memory list from its search box (see SEARCH_FORM_BUG)."""
        self.page.fill("#search-q", query)
        # an empty number field is not sent, as the inspector means it until the bug is fixed
        self.page.evaluate("""() => { const field = document.getElementById('search-recency');
                                      if (field && field.value === '') field.disabled = true; }""")
        self.page.click("#search-submit")
        self.page.wait_for_load_state()

    def post_form(self, action: str) -> int:
        """Submit a form this page did not offer (a forged state change): ``action`` with the
        session's own CSRF token, taken from the memory list's logout form. The answer's
        status."""
        self.open("/ui/memories")
        with self.page.expect_navigation() as navigation:
            self.page.evaluate("""action => {
                const form = document.createElement('form');
                form.method = 'post';
                form.action = action;
                const token = document.createElement('input');
                token.type = 'hidden';
                token.name = 'csrf_token';
                token.value = document.querySelector('input[name=csrf_token]').value;
                form.appendChild(token);
                document.body.appendChild(form);
                form.submit();
            }""", self.base + action)
        response = navigation.value
        assert response is not None, action
        return response.status

    def shot(self, name: str) -> None:
        """Write this page's viewport to docs/img/ui/<name>.png (small: never full-page)."""
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=False)

    def unlabelled_controls(self) -> list[str]:
        """Form controls a screen reader cannot name: neither a <label> nor aria-label(ledby).
        Hidden inputs (the CSRF token) and buttons (named by their text) are not controls
        to label."""
        found: list[str] = self.page.evaluate("""() =>
            Array.from(document.querySelectorAll('input, select, textarea'))
              .filter(e => !['hidden', 'submit', 'button', 'reset', 'image'].includes(e.type))
              .filter(e => !(e.labels && e.labels.length)
                           && !(e.getAttribute('aria-label') || '').trim()
                           && !e.getAttribute('aria-labelledby'))
              .map(e => e.outerHTML.slice(0, 200))""")
        return found

    def overflow_width(self) -> int:
        """How wide the document scrolls (above the viewport width: horizontal overflow)."""
        width: int = self.page.evaluate("() => document.scrollingElement.scrollWidth")
        return width

    def assert_basics(self) -> None:
        """No console error or uncaught exception so far, and every control labelled."""
        assert self.console_errors == [], self.console_errors
        assert self.unlabelled_controls() == [], self.page.url


#: Known inspector bug, worked around until it is fixed: its pages send
#: ``Referrer-Policy: no-referrer``, so Chromium sends ``Origin: null`` with every form POST
#: (the Fetch standard's rule for that policy), and the loopback server's DNS-rebinding guard
#: (remem.server.netguard) refuses it with 403: nobody can log in from a browser. The fix
#: is ``Referrer-Policy: same-origin`` (no referrer leaves the site, the Origin stays).
#: test_forms_post_as_chromium_sends_them shows the bug without the workaround.
REFERRER_BUG = ("the inspector's Referrer-Policy: no-referrer makes Chromium send Origin: "
                "null on form POSTs, which the loopback guard refuses (403); fix: "
                "Referrer-Policy: same-origin in remem.ui.web.SECURITY_HEADERS")


#: Known inspector bug, worked around by Tab.search until it is fixed: the search form's
#: empty "Recency half-life" field is sent as ``recency_days=`` and refused with 422, so the
#: search form only works with a half-life typed in.
SEARCH_FORM_BUG = ("the search form sends its empty recency_days field, which /ui/memories "
                   "refuses with 422 (it must read an empty field as no half-life)")


def open_tab(browser: Browser, base: str, viewport: ViewportSize = VIEWPORT, *,
             relax_referrer: bool = True, javascript: bool = True) -> Iterator[Tab]:
    """A :class:`Tab` on the server at ``base`` in a fresh browser context, closed after the
    test (a generator for fixtures to ``yield from``)."""
    context = browser.new_context(viewport=viewport, java_script_enabled=javascript)
    context.set_default_timeout(5_000)
    page = context.new_page()
    tab = Tab(page=page, base=base)

    if relax_referrer:  # response-stage interception also sees each redirect's response
        cdp = context.new_cdp_session(page)

        def relax(event: dict[str, Any]) -> None:
            headers = event.get("responseHeaders") or []
            policy = [h for h in headers if h["name"].lower() == "referrer-policy"]
            if any(h["value"] == "no-referrer" for h in policy):
                tab.relaxed.append(event["request"]["url"])
                headers = [h for h in headers if h not in policy]
                headers.append({"name": "Referrer-Policy", "value": "same-origin"})
            cdp.send("Fetch.continueResponse", {
                "requestId": event["requestId"], "responseHeaders": headers,
                "responseCode": event["responseStatusCode"]})

        cdp.on("Fetch.requestPaused", relax)
        cdp.send("Fetch.enable", {"patterns": [{"urlPattern": base + "/ui/*",
                                                "resourceType": "Document",
                                                "requestStage": "Response"}]})

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            tab.console_errors.append(f"{page.url}: {message.text}")

    def on_dialog(dialog: Dialog) -> None:
        tab.dialogs.append(f"{dialog.type}: {dialog.message}")
        if tab.accept_dialogs:
            dialog.accept()
        else:
            dialog.dismiss()

    page.on("console", on_console)
    page.on("pageerror", lambda error: tab.console_errors.append(f"{page.url}: {error}"))
    page.on("dialog", on_dialog)
    page.on("framenavigated",
            lambda frame: tab.visited.append(frame.url) if frame == page.main_frame else None)
    yield tab
    context.close()


@pytest.fixture
def tab(browser: Browser, served: Seeded) -> Iterator[Tab]:
    """A fresh browser context (no cookies) at desktop size."""
    yield from open_tab(browser, served.url)


@pytest.fixture
def bare_tab(browser: Browser, served: Seeded) -> Iterator[Tab]:
    """A fresh browser context at desktop size with no workaround of REFERRER_BUG."""
    yield from open_tab(browser, served.url, relax_referrer=False)


@pytest.fixture
def no_js_tab(browser: Browser, served: Seeded) -> Iterator[Tab]:
    """A fresh browser context at desktop size with JavaScript switched off."""
    yield from open_tab(browser, served.url, javascript=False)


@pytest.fixture
def phone(browser: Browser, served: Seeded) -> Iterator[Tab]:
    """A fresh browser context 375 px wide (a small phone)."""
    yield from open_tab(browser, served.url, {"width": 375, "height": 740})
