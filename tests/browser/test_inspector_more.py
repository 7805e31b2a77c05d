"""The inspector's other pages in a real browser: core memory blocks, file trees, prompt
versions and the dashboard, each reached from the navigation, each with a screenshot."""

from __future__ import annotations

from tests.browser.conftest import Seeded, Tab


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
    tab.shot("dashboard")
    tab.assert_basics()
