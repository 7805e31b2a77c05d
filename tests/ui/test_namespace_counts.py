"""The inspector's namespace tree: exact counts of current memories (no cap), paged."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.ui_support import Server, server

_ROW = re.compile(r'class="ns-link" href="[^"]+">([^<]+)</a>\s*'
                  r'<span class="count" data-count="(\d+)">(\d+)(\+?)</span>')


@pytest.fixture(scope="module")
def srv() -> Iterator[Server]:
    with server() as running:
        memory = running.memory("acme")
        memory.add([f"note {i} about tea" for i in range(60)], user_id="big", infer=False)
        memory.add(["the bot speaks French"], user_id="big", agent_id="bot", infer=False)
        for user in range(24):
            memory.add([f"user {user} likes jazz", f"user {user} plays chess"],
                       user_id=f"u{user:02d}", infer=False)
        first = memory.get_all(user_id="u00").memories[0]
        memory.delete(first.id)  # no longer current: not counted
        running.memory("other").add(["another tenant's note"], user_id="big", infer=False)
        yield running


def test_counts_are_exact_past_the_old_cap_and_pages_cover_every_namespace(
        srv: Server) -> None:
    browser = srv.logged_in("acme")
    rows: list[tuple[str, str, str, str]] = []
    url: str | None = "/ui/namespaces"
    pages = 0
    while url is not None:
        page = browser.get(url)
        assert page.status_code == 200
        rows += _ROW.findall(page.text)
        found = re.search(r'id="page-next" rel="next" href="([^"]+)"', page.text)
        url = found.group(1).replace("&amp;", "&") if found else None
        pages += 1
    assert pages == 2  # 26 namespaces, 20 a page
    counts = {name: int(count) for name, count, _, _ in rows}
    assert len(rows) == len(counts) == 26
    assert counts["memories / user / big"] == 61  # its agent's memory is below it
    assert counts["memories / user / big / agent / bot"] == 1
    assert counts["memories / user / u00"] == 1
    assert all(counts[f"memories / user / u{user:02d}"] == 2 for user in range(1, 24))
    assert all(shown == count and not plus for _, count, shown, plus in rows)
    assert srv.logged_in("other").get("/ui/namespaces").text.count('class="ns-link"') == 1
