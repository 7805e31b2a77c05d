"""The web inspector in a real browser: Debian's Chromium driven by Playwright, against a
real ``remem serve`` on a free loopback port (harness.py: the browser side; world.py: what the
server holds).

One browser and one server for the package (seconds, not minutes); each test gets a fresh
browser context, so cookies never leak from one test to the next. Package scope, not session:
Playwright's sync API keeps an event loop running on the main thread while it is open, where
``asyncio.run`` (which many other tests call) refuses to start, so the browser must be gone
before the rest of the suite runs. Chromium missing is never a skip and never installed from
here: the session fails naming ``make system-deps`` (which ``.ci/run`` runs).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, sync_playwright

from tests.browser.harness import LAUNCH_ARGS, Tab, ensure_chromium, open_tab
from tests.browser.world import Seeded, serve_world


@pytest.fixture(scope="package")
def served() -> Iterator[Seeded]:
    """A real ``remem serve`` with two tenants' data (:func:`serve_world`), one for the
    package."""
    with serve_world() as world:
        yield world


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


@pytest.fixture
def tab(browser: Browser, served: Seeded) -> Iterator[Tab]:
    """A fresh browser context (no cookies) at desktop size."""
    yield from open_tab(browser, served.url)


@pytest.fixture
def no_js_tab(browser: Browser, served: Seeded) -> Iterator[Tab]:
    """A fresh browser context at desktop size with JavaScript switched off."""
    yield from open_tab(browser, served.url, javascript=False)


@pytest.fixture
def phone(browser: Browser, served: Seeded) -> Iterator[Tab]:
    """A fresh browser context 375 px wide (a small phone)."""
    yield from open_tab(browser, served.url, {"width": 375, "height": 740})

