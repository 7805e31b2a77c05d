"""The web inspector's pages through HTTP (no browser): login, the memory list with search
and score bars, a memory's history, as_of and undo, namespaces, threads, paging bounds and
the no-key local mode. Browser tests (tests/browser/) drive the same pages in Chromium."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest

from tests.ui_support import Server, csrf_of, login, server


@pytest.fixture(scope="module")
def srv() -> Iterator[Server]:
    with server() as running:
        memory = running.memory("acme")
        memory.add("Alice drinks green tea every morning", user_id="alice", infer=False)
        memory.add("Alice moved to Berlin in March", user_id="alice", infer=False)
        memory.add("Bob prefers coffee", user_id="bob", infer=False)
        memory.add("The bot answers in French", user_id="alice", agent_id="bot", infer=False)
        yield running


def _ids(html: str) -> list[str]:
    return re.findall(r'class="hit" data-test="hit" data-id="([^"]+)"', html)


def test_pages_need_a_login_and_the_form_has_labels(srv: Server) -> None:
    browser = srv.browser()
    response = browser.get("/ui/memories?q=tea", follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == "/ui/login?next=%2Fui%2Fmemories%3Fq%3Dtea"
    page = browser.get("/ui/login?next=/ui/memories")
    assert '<label for="login-key">' in page.text and 'id="login-key"' in page.text
    assert 'id="login-submit"' in page.text and 'id="logout"' not in page.text


def test_login_with_a_wrong_key_is_refused_and_a_right_one_lands_on_next(srv: Server) -> None:
    browser = srv.browser()
    refused = login(browser, "rk_000000000000_" + "A" * 43)
    assert refused.status_code == 401
    assert 'id="login-problem"' in refused.text and "api_key" in refused.text
    assert browser.get("/ui/memories", follow_redirects=False).status_code == 303
    empty = login(browser, "")
    assert empty.status_code == 401 and "remem keys create" in empty.text
    accepted = login(browser, srv.key("acme"), "/ui/namespaces")
    assert accepted.status_code == 303 and accepted.headers["location"] == "/ui/namespaces"
    page = browser.get("/ui/namespaces")
    assert page.status_code == 200 and 'id="tenant"' in page.text and "acme" in page.text


def test_the_memory_list_is_newest_first_with_validity_and_source(srv: Server) -> None:
    browser = srv.logged_in("acme")
    page = browser.get("/ui/memories")
    assert page.status_code == 200
    texts = re.findall(r'class="hit-link" href="[^"]+">([^<]+)</a>', page.text)
    assert texts[0] == "The bot answers in French" and len(texts) == 4
    assert "valid from" in page.text and "score-bar" not in page.text  # no query, no scores
    scoped = browser.get("/ui/memories", params=[("ns", "memories"), ("ns", "user"),
                                                  ("ns", "bob")])
    assert re.findall(r'class="hit-link" href="[^"]+">([^<]+)</a>', scoped.text) == \
        ["Bob prefers coffee"]


def test_search_draws_one_bar_per_signal_with_widths(srv: Server) -> None:
    browser = srv.logged_in("acme")
    page = browser.get("/ui/memories", params={"q": "green tea", "recency_days": "30"})
    assert page.status_code == 200
    first = page.text.split('class="hit"')[1]
    assert "Alice drinks green tea every morning" in first
    signals = re.findall(r'class="score-bar" data-signal="(\w+)" data-width="(\d+)"', first)
    assert [name for name, _ in signals] == ["keyword", "vector", "recency", "relevance"]
    widths = {name: int(width) for name, width in signals}
    assert widths["keyword"] == 100  # it holds every word of the query
    # relevance: the mean of keyword and vector (recency is not part of it), out of 1
    assert abs(widths["relevance"] - (widths["keyword"] + widths["vector"]) / 2) <= 1
    assert widths["relevance"] < 100 and all(0 <= w <= 100 for w in widths.values())
    keyword_only = browser.get("/ui/memories", params={"q": "coffee", "mode": "keyword"})
    names = set(re.findall(r'data-signal="(\w+)"', keyword_only.text))
    assert names == {"keyword", "relevance"}
    assert _ids(keyword_only.text) and "Bob prefers coffee" in keyword_only.text


def test_paging_is_bounded_and_links_the_next_page(srv: Server) -> None:
    browser = srv.logged_in("acme")
    first = browser.get("/ui/memories", params={"limit": 2})
    second = browser.get("/ui/memories", params={"limit": 2, "offset": 2})
    assert len(_ids(first.text)) == 2 and len(_ids(second.text)) == 2
    assert not set(_ids(first.text)) & set(_ids(second.text))
    assert 'id="page-next" rel="next" href="/ui/memories?offset=2&amp;limit=2"' in first.text
    too_many = browser.get("/ui/memories", params={"limit": 5000})
    assert too_many.status_code == 422 and "limit" in too_many.text
    assert "text/html" in too_many.headers["content-type"]
    bad_time = browser.get("/ui/memories", params={"as_of": "yesterday-ish"})
    assert bad_time.status_code == 422 and "as_of" in bad_time.text
    # the form as a browser sends it: every field, the blank ones empty
    blank = browser.get("/ui/memories", params={"q": "tea", "mode": "auto", "kind": "",
                                                "as_of": "", "recency_days": ""})
    assert blank.status_code == 200 and "Alice drinks green tea" in blank.text
    for bad in ("soon", "0", "-1", "nan", "1e9"):
        refused = browser.get("/ui/memories", params={"q": "tea", "recency_days": bad})
        assert refused.status_code == 422 and "recency_days" in refused.text, bad


def test_namespaces_tree_counts_current_memories(srv: Server) -> None:
    page = srv.logged_in("acme").get("/ui/namespaces")
    rows = re.findall(r'class="ns-link" href="[^"]+">([^<]+)</a>\s*'
                      r'<span class="count" data-count="(\d+)">', page.text)
    assert rows == [("memories / user / alice", "3"),
                    ("memories / user / alice / agent / bot", "1"),
                    ("memories / user / bob", "1")]


def test_memory_page_history_diff_as_of_and_undo(srv: Server) -> None:
    memory = srv.memory("acme")
    added = memory.add("Carol owns a red bicycle", user_id="carol", infer=False)
    memory_id = added.changes[0].memory.id
    before_update = time.time()
    time.sleep(0.01)  # the as_of below must fall strictly between the two versions
    memory.update(memory_id, "Carol owns a blue bicycle", reason="repainted")
    browser = srv.logged_in("acme")
    page = browser.get(f"/ui/memories/{memory_id}")
    assert page.status_code == 200
    assert '<blockquote id="memory-text" data-status="current">Carol owns a blue bicycle' \
        in page.text
    versions = re.findall(r'class="version" data-test="version" data-event="([^"]+)" '
                          r'data-op="(\w+)"', page.text)
    assert [op for _, op in versions] == ["update", "add"]
    assert "<del>red</del><ins>blue</ins>" in page.text
    old = browser.get(f"/ui/memories/{memory_id}", params={"as_of": f"{before_update:.3f}"})
    assert '<q id="as-of-text">Carol owns a red bicycle</q>' in old.text
    update_event = versions[0][0]
    confirm = browser.get(f"/ui/memories/{memory_id}/undo/{update_event}")
    assert confirm.status_code == 200 and 'id="undo-confirm"' in confirm.text
    assert memory.get(memory_id).text == "Carol owns a blue bicycle"  # GET changes nothing
    done = browser.post(f"/ui/memories/{memory_id}/undo/{update_event}",
                        data={"csrf_token": csrf_of(confirm.text)}, follow_redirects=False)
    assert done.status_code == 303
    assert memory.get(memory_id).text == "Carol owns a red bicycle"
    after = browser.get(done.headers["location"])
    assert '<blockquote id="memory-text" data-status="current">Carol owns a red bicycle' \
        in after.text
    assert 'data-op="restore"' in after.text and "by key:" in after.text


def test_a_read_only_key_reads_but_cannot_undo(srv: Server) -> None:
    memory = srv.memory("acme")
    memory_id = memory.add("Dan keeps bees", user_id="dan", infer=False).changes[0].memory.id
    event = memory.history(memory_id)[0].id
    browser = srv.logged_in("acme", read_only=True)
    page = browser.get(f"/ui/memories/{memory_id}")
    assert page.status_code == 200 and "(read-only)" in page.text
    assert "undo-link" not in page.text
    confirm = browser.get(f"/ui/memories/{memory_id}/undo/{event}")
    refused = browser.post(f"/ui/memories/{memory_id}/undo/{event}",
                           data={"csrf_token": csrf_of(confirm.text)})
    assert refused.status_code == 403 and "read-only" in refused.text
    assert memory.get(memory_id).status == "current"


def test_unknown_memory_and_event_are_404_pages(srv: Server) -> None:
    browser = srv.logged_in("acme")
    missing = browser.get("/ui/memories/mem_nope")
    assert missing.status_code == 404 and 'id="error-message"' in missing.text
    memory_id = srv.memory("acme").search("coffee").hits[0].memory.id
    assert browser.get(f"/ui/memories/{memory_id}/undo/evt_nope").status_code == 404


def test_threads_messages_summary_and_checkpoint_tree_with_forks(srv: Server) -> None:
    threads = srv.threads("acme")
    thread = threads.create("t-ui", messages=["hello", "how are you?"],
                            metadata={"user_id": "alice"})
    first = next(cp for cp in threads.checkpoints("t-ui") if cp.position == 2)
    threads.append("t-ui", {"role": "assistant", "content": "fine, thanks"})
    threads.rewind("t-ui", first.id)
    threads.append("t-ui", {"role": "assistant", "content": "a different answer"})
    threads.update_state("t-ui", {"summary": "They greeted each other.",
                                  "summary_through": 2})
    threads.fork("t-ui", first.id, new_thread_id="t-ui-fork")
    del thread
    browser = srv.logged_in("acme")
    listing = browser.get("/ui/threads")
    assert listing.status_code == 200
    assert {"t-ui", "t-ui-fork"} <= set(re.findall(r'class="thread-row" data-test="thread" '
                                                   r'data-id="([^"]+)"', listing.text))
    page = browser.get("/ui/threads/t-ui")
    assert page.status_code == 200
    assert re.findall(r'<p class="message-text">([^<]+)</p>', page.text) == \
        ["hello", "how are you?", "a different answer"]
    assert '<p id="thread-summary">They greeted each other.</p>' in page.text
    depths = re.findall(r'data-test="checkpoint" data-id="[^"]+" data-parent="[^"]*" '
                        r'data-depth="(\d+)"', page.text)
    assert "1" in depths  # the rewound branch sits beside the first answer
    fork = browser.get("/ui/threads/t-ui-fork")
    assert 'class="fork-note">forked from' in fork.text
    old = browser.get("/ui/threads/t-ui", params={"checkpoint": first.id})
    assert re.findall(r'<p class="message-text">([^<]+)</p>', old.text) == \
        ["hello", "how are you?"]
    assert browser.get("/ui/threads/nope").status_code == 404


def test_forms_post_with_the_browsers_origin_header(srv: Server) -> None:
    """Pages send Referrer-Policy: same-origin (under no-referrer, Chromium sends
    "Origin: null" with a form POST, which the loopback guard refuses), and a POST with the
    page's own origin passes the guard."""
    browser = srv.browser()
    page = browser.get("/ui/login")
    assert page.headers["referrer-policy"] == "same-origin"
    done = browser.post("/ui/login", data={"csrf_token": csrf_of(page.text),
                                           "api_key": srv.key("acme")},
                        headers={"Origin": "http://127.0.0.1"}, follow_redirects=False)
    assert done.status_code == 303
    refused = browser.post("/ui/logout", data={}, headers={"Origin": "null"})
    assert refused.status_code == 403  # what a no-referrer page's form would have met


def test_logout_ends_the_session_and_revoking_the_key_does_too(srv: Server) -> None:
    browser = srv.browser()
    token = srv.key("acme")
    login(browser, token)
    page = browser.get("/ui/memories")
    copy = srv.browser()  # a copy of the cookie (stolen, or another tab)
    copy.cookies.set("remem_ui", browser.cookies["remem_ui"], path="/ui")
    assert copy.get("/ui/memories").status_code == 200
    out = browser.post("/ui/logout", data={"csrf_token": csrf_of(page.text)},
                       follow_redirects=False)
    assert out.status_code == 303 and out.headers["location"] == "/ui/login"
    assert browser.get("/ui/memories", follow_redirects=False).status_code == 303
    assert copy.get("/ui/memories", follow_redirects=False).status_code == 303
    login(browser, token)
    assert browser.get("/ui/memories").status_code == 200
    key_id = token.split("_")[1]
    srv.state.keys.revoke(key_id)
    assert browser.get("/ui/memories", follow_redirects=False).status_code == 303


def test_static_files_and_home(srv: Server) -> None:
    browser = srv.logged_in("acme")
    for name, kind in (("ui.css", "text/css"), ("ui.js", "javascript"),
                       ("favicon.svg", "image/svg")):
        response = browser.get(f"/ui/static/{name}")
        assert response.status_code == 200 and kind in response.headers["content-type"]
    home = browser.get("/ui/", follow_redirects=False)
    assert home.status_code == 303 and home.headers["location"] == "/ui/memories"


def test_without_auth_one_local_user_needs_no_login() -> None:
    with server(auth=False) as local:
        # the database's own data: what Memory.open and remem add write
        local.memory("").add("a local note about tea", user_id="me", infer=False)
        browser = local.browser()
        page = browser.get("/ui/memories?q=tea")
        assert page.status_code == 200 and "a local note about tea" in page.text
        # the header names what it shows: no tenant
        assert 'data-tenant=""' in page.text and "the database's own data" in page.text
        assert 'id="logout"' not in page.text
        assert browser.get("/ui/login", follow_redirects=False).status_code == 303
