"""The inspector's other pages in a real browser: core memory blocks, file trees, prompt
versions, the dashboard and the temporal graph, each reached from the navigation, each with
a screenshot."""

from __future__ import annotations

import httpx

from tests.browser.harness import Tab
from tests.browser.world import PLAN, USER, Seeded


def test_blocks_show_how_full_they_are_and_their_history(tab: Tab, served: Seeded) -> None:
    tab.login(served.alpha_key)
    tab.page.click("#nav-blocks")
    row = tab.page.locator("li.block-row[data-id='persona']")
    value = "Ada's assistant: brief, warm, tea-minded."
    assert value in row.inner_text()
    # the fill bar is the share of the limit used, drawn to scale
    width = row.locator(".fill-bar").get_attribute("data-width")
    assert width == str(round(len(value) * 100 / 200))
    drawn = row.locator(".fill-bar").evaluate(
        "bar => 100 * bar.querySelector('.fill').getBoundingClientRect().width"
        " / bar.querySelector('.track').getBoundingClientRect().width")
    assert abs(drawn - int(width)) <= 1
    tab.shot("blocks")
    tab.assert_basics()

    row.locator("a.block-link").click()
    tab.page.wait_for_selector("#block-value")
    assert tab.page.inner_text("#block-value") == value
    ops = tab.page.locator("#block-history .version").evaluate_all(
        "els => els.map(e => e.dataset.op)")
    assert len(ops) == 2 and "brief and warm" in tab.page.inner_text("#block-history")
    tab.assert_basics()


def test_files_browse_a_tree_and_show_a_files_history(tab: Tab, served: Seeded) -> None:
    tab.login(served.alpha_key)
    tab.page.click("#nav-files")
    tab.page.click("a.file-link:text-is('/notes/')")
    tab.page.click("a.file-link:text-is('/notes/tea.md')")
    tab.page.wait_for_selector("#file-content")
    assert tab.page.inner_text("#file-path") == "/notes/tea.md"
    assert tab.page.inner_text("#file-content") == "# Tea\n\noolong in the morning\n"
    versions = tab.page.locator("#file-history .version")
    assert versions.count() == 2 and "jasmine" in versions.first.inner_text()
    tab.shot("files")
    tab.assert_basics()


def test_prompts_show_their_versions_with_diffs(tab: Tab, served: Seeded) -> None:
    tab.login(served.alpha_key)
    tab.page.click("#nav-prompts")
    tab.page.click("tr.prompt-row[data-name='greeting'] a.prompt-link")
    tab.page.wait_for_selector("#prompt-text")
    assert tab.page.inner_text("#prompt-text") == "Hello {name}, welcome back."
    versions = tab.page.locator("#prompt-history .version").evaluate_all(
        "els => els.map(e => e.dataset.version)")
    assert versions == ["2", "1"]
    tab.shot("prompts")
    tab.assert_basics()


def test_the_dashboard_counts_and_plots_latency(tab: Tab, served: Seeded) -> None:
    tab.login(served.alpha_key)
    tab.page.click("#nav-dashboard")
    tab.page.wait_for_selector("#dashboard-counts")
    assert int(tab.page.get_attribute("#dash-threads", "data-count") or -1) >= 2
    # the seeding's API requests are in the latency table, each with its plot
    routes = tab.page.locator("tr.latency-row").evaluate_all(
        "els => els.map(e => e.dataset.method + ' ' + e.dataset.route)")
    assert "POST /v1/memories" in routes, routes
    assert tab.page.locator("tr.latency-row svg.latency-plot").count() == len(routes)
    # the plots: memories added (from the records), calls, tokens and memory changes
    assert tab.page.locator("figure.usage-plot svg[role=img]").count() == 4
    assert int(tab.page.get_attribute("#usage-memory-events", "data-count") or -1) >= 1
    added = int(tab.page.get_attribute("#added-total", "data-count") or -1)
    assert added >= 3  # alpha's memories, all added today
    today = tab.page.locator("#table-added tbody tr").last
    assert int(today.locator("td").text_content() or -1) == added  # (in a closed <details>)
    assert tab.page.locator("#plot-added rect.bar").count() >= 1
    tab.shot("dashboard")
    tab.assert_basics()


def _graph_search(tab: Tab, as_of: str) -> dict[str, str]:
    """Search alpha's graph for Ada's jobs from the graph form: fact -> data-holds."""
    tab.open("/ui/graph")
    tab.page.fill("#graph-user", USER)
    tab.page.fill("#graph-q", "Ada works")
    tab.page.fill("#graph-as-of", as_of)
    tab.page.click("#graph-submit")
    tab.page.wait_for_selector("#fact-hits")
    facts: dict[str, str] = dict(tab.page.locator("tr.fact-row").evaluate_all(
        "rows => rows.map(r => [r.cells[0].textContent.trim(), r.dataset.holds])"))
    return facts


def _edges(tab: Tab) -> dict[str, str]:
    """The drawn facts around the entity on the page: fact -> its line's dash pattern."""
    dashes: dict[str, str] = dict(tab.page.locator("#graph-svg g.edge").evaluate_all(
        "edges => edges.map(e => [e.querySelector('title').textContent,"
        " getComputedStyle(e.querySelector('line')).strokeDasharray])"))
    return dashes


def test_the_graph_page_searches_facts_and_draws_an_entity(tab: Tab, served: Seeded) -> None:
    tab.login(served.alpha_key)
    tab.page.click("#nav-graph")
    tab.page.wait_for_selector("#graph-form")
    # a search as of a time finds the facts true then: Acme in 2021, Globex since May 2024
    in_2021 = _graph_search(tab, "2021-01-01T00:00")
    assert in_2021["Ada works at Acme"] == "true" and "Ada works at Globex" not in in_2021
    in_2025 = _graph_search(tab, "2025-01-01T00:00")
    assert in_2025["Ada works at Globex"] == "true" and "Ada works at Acme" not in in_2025

    tab.page.locator("a.entity-link:text-is('Ada')").first.click()
    tab.page.wait_for_selector("#graph-svg")
    assert tab.page.inner_text("#entity-name").startswith("Ada")
    names = tab.page.locator("#graph-svg a.node text").all_text_contents()
    assert "Globex" in names and any(name.startswith("Acme <img") for name in names)
    # the ended fact is drawn dashed, the holding one solid
    edges = _edges(tab)
    assert edges["Ada works at Globex"] == "none"
    assert edges["Ada works at Acme"] != "none"
    # the entity named with markup is text, in the drawing and everywhere else
    assert tab.page.locator("#xss-node").count() == 0
    assert tab.page.evaluate("() => typeof window.__xss") == "undefined"
    assert tab.dialogs == []
    tab.shot("graph")
    tab.assert_basics()


def test_the_graph_page_shows_ended_facts_as_ended_now(tab: Tab, served: Seeded) -> None:
    """With no time typed the page shows what holds now: the fact that ended is listed as
    ended, and drawn dashed (it showed as holding, asked "at any time": a bug these tests
    found)."""
    tab.login(served.alpha_key)
    facts = _graph_search(tab, "")
    assert (facts["Ada works at Acme"], facts["Ada works at Globex"]) == ("false", "true")
    tab.page.locator("a.entity-link:text-is('Ada')").first.click()
    tab.page.wait_for_selector("#graph-svg")
    edges = _edges(tab)
    assert edges["Ada works at Globex"] == "none" and edges["Ada works at Acme"] != "none"


def test_a_human_approves_a_parked_file_write(tab: Tab, served: Seeded) -> None:
    alpha = {"Authorization": f"Bearer {served.alpha_key}"}
    read = httpx.post(f"{served.url}/v1/files/read", headers=alpha, json={"path": PLAN})
    assert read.status_code == 404  # parked: nothing written yet

    tab.login(served.human_key)  # another key of the tenant: the asking key may not approve
    tab.page.click("#nav-approvals")
    row = tab.page.locator(f"tr.approval-row:has(a.approval-link:text-is('{served.approval_id}'))")
    assert row.get_attribute("data-status") == "pending"
    row.locator("a.approval-link").click()
    tab.page.wait_for_selector("#approve-form")
    assert (tab.page.inner_text("#approval-operation"),
            tab.page.inner_text("#approval-path")) == ("write", PLAN)
    assert "Ship on Friday." in tab.page.inner_text("#approval-arguments")
    tab.shot("approval")
    tab.assert_basics()

    tab.page.click("#approve-submit")
    tab.page.wait_for_load_state()
    assert tab.page.inner_text("#approval-status") != "pending"
    assert tab.page.locator("#approve-form").count() == 0  # decided once
    read = httpx.post(f"{served.url}/v1/files/read", headers=alpha, json={"path": PLAN})
    assert read.status_code == 200 and "Ship on Friday." in read.text  # it ran
    tab.assert_basics()
