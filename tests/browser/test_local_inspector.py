"""``remem ui --db FILE`` in a real browser: one local user, no login, the whole file
(memories as ``Memory.open`` writes them), undo included."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser

from remem.api import Memory
from remem.embed import FakeEmbedder
from remem.testing.server import free_port
from tests.browser.harness import Tab, open_tab

BEFORE = "Grace takes the night train to Vienna"
AFTER = "Grace takes the morning train to Vienna"


def _write(db: str) -> str:
    with Memory.open(db, embedder=FakeEmbedder()) as memory:
        memory.add("Grace collects fountain pens", user_id="grace", infer=False)
        added = memory.add(BEFORE, user_id="grace", infer=False)
        memory_id = added.changes[0].memory.id
        memory.update(memory_id, AFTER, reason="an earlier train")
    return memory_id


@pytest.fixture(scope="module")
def local_ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """``remem ui`` on a file written by the Python API: its URL and a memory's id."""
    db = str(tmp_path_factory.mktemp("local-ui") / "local.db")
    memory_id = _write(db)  # on Playwright's running event loop: remem's sync calls work
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    # a file, not a pipe: a full pipe would block the server
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen([sys.executable, "-m", "remem", "ui", "--db", db,
                                    "--embedder", "fake", "--port", str(port)],
                                   stdout=subprocess.DEVNULL, stderr=log)
        try:
            deadline = time.monotonic() + 60
            while True:
                if process.poll() is not None:
                    log.seek(0)
                    pytest.fail("remem ui exited: "
                                f"{log.read().decode(errors='replace')[-2000:]}")
                assert time.monotonic() < deadline, "remem ui did not answer within 60 s"
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(url + "/ui/memories", timeout=1).status_code == 200:
                        break
                time.sleep(0.1)
            yield url, memory_id
        finally:
            process.terminate()
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture
def local_tab(browser: Browser, local_ui: tuple[str, str]) -> Iterator[Tab]:
    yield from open_tab(browser, local_ui[0])


def test_remem_ui_shows_a_local_file_without_login_and_undoes(
        local_tab: Tab, local_ui: tuple[str, str]) -> None:
    _, memory_id = local_ui
    assert local_tab.open("/ui/") == 200
    assert local_tab.page.url.endswith("/ui/memories")  # no login page
    assert local_tab.page.locator("#login-key, #logout").count() == 0
    listed = local_tab.page.locator("li.hit a.hit-link").all_inner_texts()
    assert sorted(listed) == sorted([AFTER, "Grace collects fountain pens"])
    local_tab.assert_basics()

    local_tab.page.click(f"li.hit[data-id='{memory_id}'] a.hit-link")
    local_tab.page.locator("#history .version a.undo-link").first.click()
    local_tab.page.click("#undo-confirm")
    local_tab.page.wait_for_url(lambda url: f"/ui/memories/{memory_id}" in url)
    assert local_tab.page.inner_text("#memory-text") == BEFORE
    local_tab.shot("local")
    local_tab.assert_basics()
