"""The inspector pages issue 35 made readable, in Chromium: the threads list (user, title,
messages, last change, a fork's source as a link), Chinese text in a named CJK font, as-of
fields that are empty until set and then offer "clear", and the empty graph page's how-to.
Each page is checked for console errors and labelled controls, and leaves a screenshot."""

from __future__ import annotations

import re

from tests.browser.harness import Tab
from tests.browser.world import FORK, USER, ZH_QUESTION, Seeded

CJK_FONTS = ("Noto Sans CJK SC", "Source Han Sans SC", "PingFang SC", "Hiragino Sans GB",
             "Microsoft YaHei", "WenQuanYi Micro Hei")


def test_the_threads_list_names_user_title_time_and_links_a_fork(tab: Tab,
                                                                   served: Seeded) -> None:
    tab.login(served.alpha_key)
    tab.page.click("#nav-threads")
    tab.page.wait_for_selector("#threads")
    rows = tab.page.locator("tr.thread-row").evaluate_all(
        "rows => rows.map(r => [r.dataset.id, r.dataset.user, r.dataset.messages,"
        " r.querySelector('.thread-title').textContent.trim()])")
    by_id = {row[0]: row[1:] for row in rows}
    assert by_id["ada-chat"] == [USER, "2", "Remember that I drink jasmine tea."]
    assert by_id[FORK][:2] == [USER, "3"]
    assert by_id["zh-chat"] == [USER, "1", ZH_QUESTION]
    headers = tab.page.locator("#threads thead th").all_inner_texts()
    assert headers == ["thread", "user", "messages", "updated", "forked from"]
    stamp = tab.page.locator("tr.thread-row[data-id='ada-chat'] time.thread-updated")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00",
                        stamp.get_attribute("datetime") or "")
    assert re.fullmatch(r"just now|\d+ (min|h|days?) ago", stamp.inner_text())
    # the page's font stack names the CJK fonts, so Chinese finds glyphs (not boxes)
    family = tab.page.evaluate("() => getComputedStyle(document.body).fontFamily")
    assert all(name in family for name in CJK_FONTS), family
    tab.shot("threads")
    tab.assert_basics()

    # "forked from" opens the source thread at the checkpoint the fork started from
    link = tab.page.locator(f"tr.thread-row[data-id='{FORK}'] a.fork-link")
    assert link.inner_text() == "ada-chat"
    link.click()
    tab.page.wait_for_url("**/ui/threads/ada-chat?checkpoint=*")
    assert tab.page.locator("#at-checkpoint").count() in (0, 1)
    texts = tab.page.locator("li.message .message-text").all_inner_texts()
    assert texts == ["Remember that I drink jasmine tea.", "Noted: jasmine tea."]
    tab.open(f"/ui/threads/{FORK}")
    tab.page.click("#fork-source")
    tab.page.wait_for_url("**/ui/threads/ada-chat?checkpoint=*")
    tab.assert_basics()


def test_as_of_fields_are_empty_until_set_and_clear_goes_back_to_now(tab: Tab,
                                                                     served: Seeded) -> None:
    tab.login(served.alpha_key)
    tab.open("/ui/memories")
    field = tab.page.locator("#search-as-of")
    assert field.input_value() == ""
    assert field.get_attribute("placeholder") == "any time (now)"
    assert tab.page.locator("#as-of-clear").count() == 0
    shown = tab.page.locator("li.hit").count()
    field.fill("2000-01-01T00:00")
    tab.page.click("#search-submit")
    tab.page.wait_for_selector("#as-of-active")
    assert tab.page.locator("li.hit").count() == 0  # nothing was true in 2000
    tab.page.click("#as-of-clear")
    tab.page.wait_for_load_state()
    assert tab.page.locator("#search-as-of").input_value() == ""
    assert tab.page.locator("li.hit").count() == shown
    tab.assert_basics()

    tab.open(f"/ui/memories/{served.tea_id}")
    assert tab.page.locator("#as-of-input").input_value() == ""
    assert tab.page.get_attribute("#as-of-input", "placeholder") == "any time (now)"
    tab.page.fill("#as-of-input", "2000-01-01T00:00")
    tab.page.click("#as-of-submit")
    tab.page.wait_for_selector("#as-of-result")
    assert tab.page.locator("#as-of-clear").is_visible()
    tab.shot("memory-as-of")
    tab.page.click("#as-of-clear")
    tab.page.wait_for_load_state()
    assert tab.page.locator("#as-of-result").count() == 0
    assert tab.page.locator("#as-of-input").input_value() == ""
    tab.assert_basics()


def test_the_empty_graph_page_says_how_to_fill_it(tab: Tab, served: Seeded) -> None:
    tab.login(served.alpha_key)
    tab.page.click("#nav-graph")
    tab.page.wait_for_selector("#graph-hint")
    assert tab.page.inner_text("#hint-cli") == (
        'remem graph ingest "Sam started at Initech in May 2024." '
        '--graph graph.memories.user.sam')
    assert "/v1/graph/episodes" in tab.page.inner_text("#hint-http")
    assert '.graph(user_id="sam").ingest(' in tab.page.inner_text("#hint-python")
    assert tab.page.get_attribute("#graph-as-of", "placeholder") == "now"
    tab.shot("graph-empty")
    tab.assert_basics()
