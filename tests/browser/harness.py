"""The browser side of the tests: Debian's Chromium (which must be installed), and a
:class:`Tab` (one page of a fresh browser context) that logs in, searches, takes
screenshots and checks the basics every page owes: no console error, labelled controls."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Dialog, Page, ViewportSize

CHROMIUM = Path("/usr/bin/chromium")
#: flags that keep headless Chromium quiet and offline on a shared CI machine
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update",
               "--disable-sync"]
#: where each run writes its screenshots (git-ignored, so a test run leaves the tree clean);
#: ``REMEM_UI_SCREENSHOTS=docs/img/ui pytest tests/browser`` refreshes the ones docs/ui.md shows
SHOTS = Path(os.environ.get("REMEM_UI_SCREENSHOTS")
             or Path(__file__).resolve().parents[2] / "build" / "ui-screenshots")
VIEWPORT: ViewportSize = {"width": 1100, "height": 760}


def ensure_chromium(executable: Path = CHROMIUM) -> Path:
    """``executable`` when it exists; otherwise the session fails naming the command that
    installs it (never a skip: the browser tests are part of the suite; and never an install
    from inside the test run: a test run does not change the machine, ``make system-deps``
    and ``.ci/run`` do)."""
    if executable.exists():
        return executable
    pytest.fail(f"{executable} is missing: install Debian's Chromium first with `make "
                "system-deps` (as root: apt-get update && apt-get install -y chromium); the "
                f"browser tests in tests/browser drive {executable}", pytrace=False)


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
        """Search the memory list from its search box (the other fields as they are)."""
        self.page.fill("#search-q", query)
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
        """Write this page's viewport to ``SHOTS/<name>.png`` (small: never full-page)."""
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


def open_tab(browser: Browser, base: str, viewport: ViewportSize = VIEWPORT, *,
             javascript: bool = True) -> Iterator[Tab]:
    """A :class:`Tab` on the server at ``base`` in a fresh browser context, closed after the
    test (a generator for fixtures to ``yield from``)."""
    context = browser.new_context(viewport=viewport, java_script_enabled=javascript)
    context.set_default_timeout(5_000)
    page = context.new_page()
    tab = Tab(page=page, base=base)

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

