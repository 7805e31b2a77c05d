"""The inspector's safety and basics in a real browser: a memory that is markup renders as
text (no script runs, no element is injected, no dialog opens); another tenant's key sees
none of it; every page has no console error, labels every control and fits 375 px."""

from __future__ import annotations

import httpx
import pytest

from tests.browser.harness import Tab
from tests.browser.world import ALPHA_MEMORIES, BETA_SECRET, TEA_CORRECTED, XSS, Seeded

#: what tenant alpha wrote that no page may show tenant beta
ALPHA_SECRETS = [*ALPHA_MEMORIES, "tea-minded", "oolong in the morning", "welcome back"]

#: nothing the probe could have done: a script or handler ran, or an element got in
_PROBE_EFFECTS = """() => ({
    ran: typeof window.__xss !== 'undefined',
    injected: document.querySelectorAll('#xss-img, #memory-text *, a.hit-link *').length,
})"""


def _assert_inert(tab: Tab) -> None:
    assert tab.page.evaluate(_PROBE_EFFECTS) == {"ran": False, "injected": 0}
    assert tab.dialogs == []
    assert tab.console_errors == []  # a blocked inline script would be a CSP error here


def test_a_memory_holding_markup_renders_as_text(tab: Tab, served: Seeded) -> None:
    tab.login(served.alpha_key)
    tab.search("probe")
    link = tab.page.locator(f"li.hit[data-id='{served.xss_id}'] a.hit-link")
    assert link.inner_text() == XSS  # the markup is shown, character for character
    _assert_inert(tab)

    link.click()
    tab.page.wait_for_url(f"**/ui/memories/{served.xss_id}")
    assert tab.page.inner_text("#memory-text") == XSS
    assert tab.page.locator("#memory-text").evaluate("e => e.childElementCount") == 0
    _assert_inert(tab)
    tab.shot("xss")

    # in a conversation too: the message shows the markup as text
    tab.open("/ui/threads/xss-thread")
    assert tab.page.locator("li.message .message-text").all_inner_texts() == [XSS]
    assert tab.page.locator("li.message .message-text *").count() == 0
    _assert_inert(tab)


def test_another_tenants_key_sees_none_of_it(tab: Tab, served: Seeded) -> None:
    tab.login(served.beta_key)
    assert "beta" in tab.page.inner_text("#tenant")
    listed = tab.page.locator("li.hit a.hit-link").all_inner_texts()
    assert listed == [BETA_SECRET]  # the positive control: beta sees its own memory

    for query in ("tea", "Ada", "probe"):
        tab.search(query)
        ids = tab.page.locator("li.hit").evaluate_all("els => els.map(e => e.dataset.id)")
        assert set(ids) <= {served.beta_id}, query
    for page in ("/ui/namespaces", "/ui/threads", "/ui/jobs", "/ui/blocks", "/ui/files",
                 "/ui/files?path=/notes", "/ui/prompts", "/ui/dashboard", "/ui/approvals",
                 "/ui/graph?user=ada&q=Ada+works"):
        assert tab.open(page) == 200
        shown = tab.page.inner_text("#main")
        if "user=ada" in page:  # the page names the user it was asked about, nothing more
            shown = shown.replace("of user ada", "")
        leaked = [secret for secret in ("ada", served.thread_id, served.queued_job,
                                        served.cancelled_job, "persona", "tea.md", "greeting",
                                        "plan.md", "Globex", "Acme", *ALPHA_SECRETS)
                  if secret in shown]
        assert leaked == [], page
    tab.assert_basics()

    # alpha's pages opened directly answer exactly as pages of ids that exist nowhere do
    missing = {served.tea_id: "mem_0000000000000000000000000000",
               served.xss_id: "mem_1111111111111111111111111111",
               served.thread_id: "no-such-thread",
               served.queued_job: "job_0000000000000000000000000000",
               served.tea_event: "evt_0000000000000000000000000000",
               "persona": "no-such-block", "greeting": "no_such_prompt",
               "/notes/tea.md": "/notes/none.md", "Ada": "Nobody",
               served.approval_id: "apr_" + "0" * (len(served.approval_id) - 4)}

    def same_as_missing(path: str, *alpha_ids: str, post: bool = False,
                        status: int = 404) -> None:
        answers = []
        for ids in (alpha_ids, [missing[i] for i in alpha_ids]):
            url = path.format(*ids)
            got = tab.post_form(url) if post else tab.open(url)
            shown = tab.page.inner_text("#main")
            for some_id in ids:
                shown = shown.replace(some_id, "ID")
            answers.append((got, shown))
            body = tab.page.inner_text("body")
            assert not any(text in body for text in ALPHA_SECRETS), url
        assert answers[0] == answers[1], answers
        assert answers[0][0] == status, answers

    for path, alpha_id in [("/ui/memories/{}", served.tea_id),
                           ("/ui/memories/{}", served.xss_id),
                           ("/ui/memories/{}?as_of=2000000000", served.tea_id),
                           ("/ui/threads/{}", served.thread_id),
                           ("/ui/jobs/{}", served.queued_job),
                           ("/ui/blocks/{}", "persona"), ("/ui/prompts/{}", "greeting"),
                           ("/ui/approvals/{}", served.approval_id),
                           ("/ui/graph?user=ada&entity={}", "Ada")]:
        same_as_missing(path, alpha_id)
    same_as_missing("/ui/files?path={}", "/notes/tea.md", status=200)  # beta's empty tree
    same_as_missing("/ui/memories/{}/undo/{}", served.tea_id, served.tea_event)
    tab.shot("not-found")
    # forged state changes with beta's own session and CSRF token: refused, nothing changed
    same_as_missing("/ui/memories/{}/undo/{}", served.tea_id, served.tea_event, post=True)
    same_as_missing("/ui/jobs/{}/retry", served.queued_job, post=True)
    same_as_missing("/ui/approvals/{}/approve", served.approval_id, post=True)
    alpha = {"Authorization": f"Bearer {served.alpha_key}"}
    tea = httpx.get(f"{served.url}/v1/memories/{served.tea_id}", headers=alpha).json()
    assert (tea["text"], tea["version"]) == (TEA_CORRECTED, 2)
    job = httpx.get(f"{served.url}/v1/jobs/{served.queued_job}", headers=alpha).json()
    assert job["status"] == "queued" and job["attempts"] == 0
    # Chromium logs each 404 document load; nothing else may be there
    assert all("404" in error for error in tab.console_errors), tab.console_errors
    print(f"\nforeign-key browser probe: {len(tab.visited)} page loads as tenant beta, "
          "0 showed tenant alpha's data")


@pytest.mark.parametrize("width", [375])
def test_every_page_fits_a_phone_labels_its_controls_and_logs_no_error(
        phone: Tab, served: Seeded, width: int) -> None:
    assert phone.page.viewport_size is not None
    assert phone.page.viewport_size["width"] == width
    phone.open("/ui/login")
    pages = {"/ui/login": (phone.overflow_width(), phone.unlabelled_controls())}
    phone.login(served.alpha_key)
    tea_page = f"/ui/memories/{served.tea_id}"
    for path in ["/ui/memories", "/ui/memories?q=oolong+tea", "/ui/namespaces", "/ui/threads",
                 f"/ui/threads/{served.thread_id}", tea_page, "/ui/jobs",
                 f"/ui/jobs/{served.queued_job}", "/ui/blocks", "/ui/blocks/persona",
                 "/ui/files", "/ui/files?path=/notes/tea.md", "/ui/prompts",
                 "/ui/prompts/greeting", "/ui/dashboard", "/ui/approvals",
                 f"/ui/approvals/{served.approval_id}", "/ui/graph?user=ada&q=Ada+works",
                 "/ui/graph?user=ada&entity=Ada&as_of=2025-01-01T00:00"]:
        assert phone.open(path) == 200, path
        pages[path] = (phone.overflow_width(), phone.unlabelled_controls())
        if path == "/ui/memories?q=oolong+tea":
            phone.shot("search-phone")
    # the undo confirmation too (opened, never confirmed)
    phone.open(tea_page)
    undo = phone.page.locator("#history .version a.undo-link").first.get_attribute("href")
    assert undo is not None
    assert phone.open(undo) == 200
    pages[undo] = (phone.overflow_width(), phone.unlabelled_controls())

    too_wide = {path: w for path, (w, _) in pages.items() if w > width}
    unlabelled = {path: found for path, (_, found) in pages.items() if found}
    assert too_wide == {}
    assert unlabelled == {}
    assert phone.console_errors == []
    assert len(pages) == 21


def test_form_posts_carry_the_pages_own_origin(tab: Tab, served: Seeded) -> None:
    """Chromium sends Origin: null with a form POST from a page whose Referrer-Policy is
    no-referrer, which the loopback server's DNS-rebinding guard refuses: the inspector's
    pages must let the browser name their origin (a bug these tests found)."""
    origins: list[str | None] = []
    tab.page.on("request", lambda request: origins.append(request.headers.get("origin"))
                if request.method == "POST" else None)
    tab.login(served.alpha_key)
    assert tab.page.url.endswith("/ui/memories")
    assert "alpha" in tab.page.inner_text("#tenant")
    tab.page.click("#logout")
    tab.page.wait_for_url("**/ui/login")
    assert origins == [served.url, served.url]
    tab.assert_basics()


def test_the_search_form_submits_as_chromium_fills_it(tab: Tab, served: Seeded) -> None:
    """Only a query typed: the browser also sends the empty fields (recency_days= and the
    rest), which mean "not given" (an empty half-life was a 422, a bug these tests found)."""
    tab.login(served.alpha_key)
    tab.search("oolong")
    assert "recency_days=&" in tab.page.url or tab.page.url.endswith("recency_days=")
    assert tab.page.locator("li.hit").first.get_attribute("data-id") == served.tea_id
    tab.assert_basics()
