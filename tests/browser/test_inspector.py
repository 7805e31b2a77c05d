"""The inspector's main paths in a real browser: log in with a key, find a memory by search
with its score bars, open it and read its history, undo a change after confirming it, read a
thread. Each test writes a screenshot of its page (see harness.SHOTS)."""

from __future__ import annotations

import math
from typing import Any

import httpx

from tests.browser.harness import Tab
from tests.browser.world import (
    BIRD,
    BIRD_CORRECTED,
    FORK,
    TEA,
    TEA_CORRECTED,
    USER,
    Seeded,
)


def test_login_with_a_key_shows_the_tenants_memories(tab: Tab, served: Seeded) -> None:
    assert tab.open("/ui/memories") == 200
    assert tab.page.url.startswith(served.url + "/ui/login")  # not logged in: sent to log in
    tab.shot("login")
    tab.assert_basics()

    tab.page.fill("#login-key", "rk_not_a_real_key")
    tab.page.click("#login-submit")
    assert "not valid" in tab.page.inner_text("#login-problem")
    tab.console_errors.clear()  # the refused login's 401 is logged by Chromium, rightly

    tab.page.fill("#login-key", served.alpha_key)
    tab.page.click("#login-submit")
    tab.page.wait_for_url("**/ui/memories")
    assert "alpha" in tab.page.inner_text("#tenant")
    # the session cookie as the browser keeps it: HttpOnly (no script reads it), Strict, /ui
    cookies = tab.page.context.cookies()
    assert [(c["httpOnly"], c["sameSite"], c["path"]) for c in cookies] == \
        [(True, "Strict", "/ui")]
    assert tab.page.evaluate("() => document.cookie") == ""
    assert served.alpha_key not in tab.page.content()  # the key is never in a page
    listed = tab.page.locator("li.hit a.hit-link").all_inner_texts()
    assert TEA_CORRECTED in listed and "Ada's dog is called Biscuit" in listed
    assert tab.page.locator("#memory-text").count() == 0
    tab.assert_basics()

    tab.page.click("#logout")
    tab.page.wait_for_url("**/ui/login")
    assert tab.open("/ui/memories") == 200
    assert "/ui/login" in tab.page.url  # the session ended


def _expected_widths(served: Seeded, query: str,
                     half_life_days: float | None = None) -> dict[str, dict[str, int]]:
    """Each hit's bar widths (percent) computed from the API's own search explanation, each
    on the fixed 0-1 scale: keyword and vector from ``relevance_by_signal``, recency from
    its factor, relevance as it is."""
    body: dict[str, Any] = {"query": query, "user_id": USER, "limit": 20}
    if half_life_days is not None:
        body["recency_half_life"] = half_life_days * 86_400
    response = httpx.post(served.url + "/v1/memories/search",
                          headers={"Authorization": f"Bearer {served.alpha_key}"}, json=body)
    assert response.status_code == 200, response.text
    hits = response.json()["hits"]
    scores: dict[str, dict[str, float]] = {}
    for hit in hits:
        row = dict(hit.get("relevance_by_signal") or {})
        if "recency" in (hit.get("details") or {}):
            row["recency"] = hit["details"]["recency"]["score"]
        row["relevance"] = hit["relevance"]
        scores[hit["memory"]["id"]] = row

    def width(score: float | None) -> int:
        return 0 if score is None else round(100 * min(1.0, max(0.0, score)))

    return {memory_id: {name: width(row.get(name)) for name in
                        ("keyword", "vector", "recency", "relevance")}
            for memory_id, row in scores.items()}


def test_search_finds_a_memory_and_its_score_bars_follow_the_scores(tab: Tab,
                                                                     served: Seeded) -> None:
    tab.login(served.alpha_key)
    tab.search("oolong tea morning")
    hits = tab.page.locator("li.hit")
    assert hits.count() >= 2
    first = hits.first
    assert first.get_attribute("data-id") == served.tea_id
    assert first.locator("a.hit-link").inner_text() == TEA_CORRECTED
    tab.shot("search")
    tab.assert_basics()

    drawn = _check_bars(tab, _expected_widths(served, "oolong tea morning"))
    assert {signal for _, bars in drawn for signal, _ in bars} == \
        {"keyword", "vector", "relevance"}
    # relevance is every hit's last bar, as long as the API's relevance says (not stretched
    # to the page's best, which left the last hit an empty bar)
    assert all(bars[-1][0] == "relevance" for _, bars in drawn)

    # with a recency half-life typed in, recency is a fourth signal with its own bars
    tab.page.fill("#search-recency", "30")
    tab.search("oolong tea morning")
    drawn = _check_bars(tab, _expected_widths(served, "oolong tea morning", 30))
    assert {signal for _, bars in drawn for signal, _ in bars} == \
        {"keyword", "vector", "recency", "relevance"}
    tab.assert_basics()


def _check_bars(tab: Tab, expected: dict[str, dict[str, int]]
                ) -> list[tuple[str, list[tuple[str, int]]]]:
    """Every bar on the page is as wide as ``expected`` says, measured in pixels (the fill
    against its track); the hits in the API's order. The bars, hit by hit."""
    drawn = tab.page.evaluate("""() => Array.from(document.querySelectorAll('li.hit')).map(
        hit => [hit.dataset.id, Array.from(hit.querySelectorAll('.score-bar')).map(bar => {
            const track = bar.querySelector('.track').getBoundingClientRect().width;
            const fill = bar.querySelector('.fill').getBoundingClientRect().width;
            return [bar.dataset.signal, Number(bar.dataset.width), 100 * fill / track];
        })])""")
    assert [memory_id for memory_id, _ in drawn] == list(expected)
    for memory_id, bars in drawn:
        for signal, declared, measured in bars:
            assert declared == expected[memory_id][signal], (memory_id, signal)
            assert math.isclose(measured, declared, abs_tol=1.0), (memory_id, signal)
    return [(memory_id, [(signal, declared) for signal, declared, _ in bars])
            for memory_id, bars in drawn]


def test_a_memory_page_shows_its_value_and_history(tab: Tab, served: Seeded) -> None:
    tab.login(served.alpha_key)
    tab.search("oolong")
    tab.page.click(f"li.hit[data-id='{served.tea_id}'] a.hit-link")
    tab.page.wait_for_url(f"**/ui/memories/{served.tea_id}")
    assert tab.page.inner_text("#memory-text") == TEA_CORRECTED
    assert tab.page.inner_text("#memory-version") == "2"
    versions = tab.page.locator("#history .version")
    assert [versions.nth(i).get_attribute("data-op") for i in range(versions.count())] == \
        ["update", "add"]  # newest first
    assert "jasmine" in versions.nth(0).inner_text()  # the diff shows what changed
    assert "she switched teas" in versions.nth(0).inner_text()
    assert tab.page.locator("#as-of-slider").count() == 1  # the page's script ran
    tab.shot("memory")
    tab.assert_basics()

    # the as_of view: before the correction the memory said jasmine
    added_at = tab.page.locator("#as-of-form").get_attribute("data-first")
    assert added_at is not None
    tab.page.fill("#as-of-input", added_at)
    tab.page.click("#as-of-submit")
    tab.page.wait_for_load_state()
    assert tab.page.inner_text("#as-of-text") == TEA
    tab.assert_basics()

    # the page's script: sliding to the slider's start shows the time before the memory
    slider = tab.page.locator("#as-of-slider")
    start = slider.get_attribute("min")
    assert start is not None
    with tab.page.expect_navigation():
        slider.fill(start)  # input then change: the script fills the time and submits
    assert tab.page.get_attribute("#as-of-result", "data-status") == "not yet recorded"
    tab.assert_basics()


def test_undo_asks_for_confirmation_then_reverts_the_change(tab: Tab, served: Seeded) -> None:
    bird = served.ids[BIRD]
    tab.login(served.alpha_key)
    tab.open(f"/ui/memories/{bird}")
    assert tab.page.inner_text("#memory-text") == BIRD_CORRECTED
    newest = tab.page.locator("#history .version").first
    assert newest.get_attribute("data-op") == "update"
    newest.locator("a.undo-link").click()

    # the confirmation page says what the undo does; nothing has changed yet
    tab.page.wait_for_selector("#undo-form")
    assert tab.page.inner_text("#undo-before") == BIRD
    assert tab.page.inner_text("#undo-after") == BIRD_CORRECTED
    tab.shot("undo")
    tab.assert_basics()
    api = httpx.get(f"{served.url}/v1/memories/{bird}",
                    headers={"Authorization": f"Bearer {served.alpha_key}"})
    assert api.json()["text"] == BIRD_CORRECTED

    tab.page.click("#undo-confirm")
    tab.page.wait_for_url(lambda url: f"/ui/memories/{bird}" in url)
    assert tab.page.inner_text("#memory-text") == BIRD
    api = httpx.get(f"{served.url}/v1/memories/{bird}",
                    headers={"Authorization": f"Bearer {served.alpha_key}"})
    assert api.json()["text"] == BIRD  # reverted in the store, not only on the page
    # the undo is itself in the history, newest first, as the API records it
    history = httpx.get(f"{served.url}/v1/memories/{bird}/history",
                        headers={"Authorization": f"Bearer {served.alpha_key}"}).json()
    recorded = [event["op"] for event in reversed(history["events"])]
    assert len(recorded) == 3 and recorded[1:] == ["update", "add"]
    shown = tab.page.locator("#history .version").evaluate_all(
        "els => els.map(e => e.dataset.op)")
    assert shown == recorded
    tab.assert_basics()


def test_a_thread_page_shows_messages_and_checkpoints(tab: Tab, served: Seeded) -> None:
    tab.login(served.alpha_key)
    tab.page.click("#nav-threads")
    tab.page.click(f"tr.thread-row[data-id='{served.thread_id}'] a.thread-link")
    tab.page.wait_for_url(f"**/ui/threads/{served.thread_id}")
    roles = tab.page.locator("li.message").evaluate_all("els => els.map(e => e.dataset.role)")
    assert roles == ["user", "assistant"]
    assert "jasmine tea" in tab.page.locator("li.message .message-text").first.inner_text()
    assert tab.page.locator("#checkpoint-tree li.checkpoint").count() >= 1
    assert tab.page.locator("#checkpoint-tree li.checkpoint.fork").count() == 0
    tab.assert_basics()

    # the fork shares the conversation up to where it left, then goes on its own way
    tab.open(f"/ui/threads/{FORK}")
    texts = tab.page.locator("li.message .message-text").all_inner_texts()
    assert len(texts) == 3 and texts[-1] == "Actually, make it oolong."
    fork = tab.page.locator("#checkpoint-tree li.checkpoint.fork")
    assert fork.count() == 1  # its first checkpoint's parent is in the other thread
    parent = fork.get_attribute("data-parent")
    assert parent and parent in tab.page.inner_text("#checkpoint-tree")
    tab.shot("thread")
    tab.assert_basics()


def test_the_namespace_tree_counts_the_users_memories(tab: Tab, served: Seeded) -> None:
    tab.login(served.alpha_key)
    tab.page.click("#nav-namespaces")
    tab.page.wait_for_url("**/ui/namespaces")
    rows = tab.page.locator("#namespace-tree li.ns")
    texts = rows.all_inner_texts()
    ada = [i for i, text in enumerate(texts) if USER in text]
    assert ada, texts
    count = rows.nth(ada[-1]).locator(".count").get_attribute("data-count")
    assert count == str(len(served.ids))
    tab.shot("namespaces")
    tab.assert_basics()


def test_the_jobs_page_shows_the_queue_and_retries_a_cancelled_job(tab: Tab,
                                                                    served: Seeded) -> None:
    tab.login(served.alpha_key)
    tab.page.click("#nav-jobs")
    tab.page.wait_for_url("**/ui/jobs")
    rows = dict(tab.page.locator("tr.job-row").evaluate_all(
        "els => els.map(e => [e.querySelector('a.job-link').textContent.trim(),"
        " e.dataset.status])"))
    assert rows == {served.queued_job: "queued", served.cancelled_job: "cancelled"}
    assert tab.page.get_attribute("#jobs-depth", "data-count") == "1"
    tab.shot("jobs")
    tab.assert_basics()

    tab.page.click(f"a.job-link:text-is('{served.cancelled_job}')")
    tab.page.wait_for_selector("#retry-form")
    assert tab.page.inner_text("#job-status") == "cancelled"
    assert "Lisbon" in tab.page.inner_text("#job-payload")
    tab.page.click("#retry-submit")
    tab.page.wait_for_load_state()
    api = httpx.get(f"{served.url}/v1/jobs/{served.cancelled_job}",
                    headers={"Authorization": f"Bearer {served.alpha_key}"})
    assert api.json()["status"] == "queued"  # queued again in the store
    tab.open(f"/ui/jobs/{served.cancelled_job}")
    assert tab.page.inner_text("#job-status") == "queued"
    assert tab.page.locator("#retry-form").count() == 0  # nothing left to retry
    tab.assert_basics()


def test_reading_needs_no_javascript(no_js_tab: Tab, served: Seeded) -> None:
    tab = no_js_tab
    tab.login(served.alpha_key)
    tab.page.fill("#search-recency", "30")  # four signals to draw
    tab.search("oolong")
    assert tab.page.locator("li.hit").first.get_attribute("data-id") == served.tea_id
    assert tab.page.locator("li.hit").first.locator(".score-bar").count() == 4
    tab.page.click(f"li.hit[data-id='{served.tea_id}'] a.hit-link")
    tab.page.wait_for_selector("#memory-text")
    assert tab.page.inner_text("#memory-text") == TEA_CORRECTED
    assert tab.page.locator("#history .version").count() == 2
    assert tab.page.locator("#as-of-slider").count() == 0  # the script did not run
    tab.open(f"/ui/threads/{served.thread_id}")
    assert tab.page.locator("li.message").count() == 2
    tab.assert_basics()
