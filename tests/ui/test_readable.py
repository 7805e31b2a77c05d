"""The inspector shows what any writer left, readably (issue 35, item 6): the threads list
with user, title, messages, last change and a link to a fork's source; as-of fields that are
empty until set, with a clear link; the graph page's how-to; memories added per day from the
records themselves."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest

from remem.ui.added import added_per_day
from remem.ui.thread_rows import relative_time, thread_title
from remem.usage import day_window
from remem.usage.records import day_of
from tests.ui_support import Server, server


@pytest.fixture(scope="module")
def srv() -> Iterator[Server]:
    with server() as running:
        memory = running.memory("acme")
        memory.add("Alice drinks green tea every morning", user_id="alice", infer=False)
        memory.add("老张今年三月加入了腾讯", user_id="alice", infer=False)
        memory.add("Bob prefers coffee", user_id="bob", infer=False)
        threads = running.threads("acme")
        long_question = ("Could you help me plan a three day trip to Lisbon in the spring, "
                         "with museums and food?")
        threads.create("t-trip", messages=[long_question, {"role": "assistant",
                                                           "content": "Sure."}],
                       metadata={"user_id": "alice"})
        threads.create("t-named", messages=["hi"],
                       metadata={"user_id": "bob", "title": "Weekly check-in"})
        threads.fork("t-trip", new_thread_id="t-trip-fork")
        yield running


def _rows(html: str) -> dict[str, str]:
    rows = re.findall(r'(<tr class="thread-row".*?</tr>)', html, re.S)
    return {re.search(r'data-id="([^"]+)"', row).group(1): row  # type: ignore[union-attr]
            for row in rows}


def test_thread_title_prefers_metadata_then_cuts_the_first_user_message() -> None:
    assert thread_title({"title": "  Trip  "}, "ignored") == ("Trip", "metadata")
    text = "word " * 30
    title, source = thread_title({}, text)
    assert source == "message" and len(title) <= 60 and title.endswith("…")
    assert not title[:-1].endswith(" ")
    chinese, _ = thread_title({}, "中" * 100)
    assert chinese == "中" * 59 + "…"
    assert thread_title({"title": 3}, None) == ("", "")


def test_relative_time_in_the_largest_whole_unit() -> None:
    now = 1_000_000.0
    assert relative_time(now - 5, now) == "just now"
    assert relative_time(now - 125, now) == "2 min ago"
    assert relative_time(now - 3 * 3600 - 10, now) == "3 h ago"
    assert relative_time(now - 86_400, now) == "1 day ago"
    assert relative_time(now - 3 * 86_400, now) == "3 days ago"
    assert relative_time(now + 600, now) == "in the future"


def test_threads_list_shows_user_title_messages_time_and_fork_link(srv: Server) -> None:
    page = srv.logged_in("acme").get("/ui/threads")
    assert page.status_code == 200
    rows = _rows(page.text)
    assert set(rows) == {"t-trip", "t-named", "t-trip-fork"}
    trip = rows["t-trip"]
    assert 'data-user="alice"' in trip and 'data-messages="2"' in trip
    assert '<td class="thread-user">alice</td>' in trip
    title = re.search(r'<span class="thread-title" data-from="message">([^<]+)</span>', trip)
    assert title is not None and title.group(1).startswith("Could you help me plan")
    assert len(title.group(1)) <= 60 and title.group(1).endswith("…")
    assert 'href="/ui/threads/t-trip"' in trip
    named = rows["t-named"]
    assert '<span class="thread-title" data-from="metadata">Weekly check-in</span>' in named
    assert '<td class="thread-user">bob</td>' in named
    stamp = re.search(r'<time class="thread-updated" datetime="([^"]+)"[^>]*>([^<]+)</time>',
                      named)
    assert stamp is not None and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00",
                                              stamp.group(1))
    assert stamp.group(2) in ("just now", "1 min ago", "2 min ago")
    source = srv.threads("acme").get("t-trip-fork").source
    assert source is not None
    fork = rows["t-trip-fork"]
    assert (f'<a class="fork-link" href="/ui/threads/t-trip?checkpoint={source}">t-trip</a>'
            in fork)
    assert "fork-link" not in trip
    # the fork's link opens the source thread at that checkpoint
    at = srv.logged_in("acme").get(f"/ui/threads/t-trip?checkpoint={source}")
    assert at.status_code == 200 and "Could you help me plan" in at.text


def test_thread_page_links_a_fork_to_its_source_checkpoint(srv: Server) -> None:
    source = srv.threads("acme").get("t-trip-fork").source
    page = srv.logged_in("acme").get("/ui/threads/t-trip-fork")
    assert (f'<a id="fork-source" href="/ui/threads/t-trip?checkpoint={source}">t-trip at '
            f'checkpoint {source}</a>') in page.text


def test_as_of_fields_are_empty_until_set_and_then_offer_clear(srv: Server) -> None:
    browser = srv.logged_in("acme")
    listing = browser.get("/ui/memories")
    field = re.search(r'<input type="text" id="search-as-of"[^>]*>', listing.text)
    assert field is not None
    assert 'value=""' in field.group(0) and 'placeholder="any time (now)"' in field.group(0)
    assert not re.search(r"placeholder=\"\d{4}-", listing.text)  # no date that looks set
    assert 'id="as-of-clear"' not in listing.text
    past = browser.get("/ui/memories", params={"as_of": "2020-01-01T00:00", "q": "tea"})
    assert 'id="as-of-active"' in past.text
    clear = re.search(r'<a id="as-of-clear" class="clear" href="([^"]+)">', past.text)
    assert clear is not None
    href = clear.group(1).replace("&amp;", "&")
    assert "as_of" not in href and "q=tea" in href
    memory_id = srv.memory("acme").search("coffee").hits[0].memory.id
    page = browser.get(f"/ui/memories/{memory_id}")
    field = re.search(r'<input type="text" id="as-of-input"[^>]*>', page.text)
    assert field is not None and 'value=""' in field.group(0)
    assert 'placeholder="any time (now)"' in field.group(0)
    assert 'id="as-of-clear"' not in page.text and 'id="as-of-result"' not in page.text
    then = browser.get(f"/ui/memories/{memory_id}", params={"as_of": "2020-01-01"})
    assert f'<a id="as-of-clear" class="clear" href="/ui/memories/{memory_id}">' in then.text
    assert '<b id="as-of-active">2020-01-01</b>' in then.text


def test_empty_graph_page_says_how_to_fill_it(srv: Server) -> None:
    browser = srv.logged_in("acme")
    page = browser.get("/ui/graph")
    assert 'id="graph-hint"' in page.text
    cli = re.search(r'<code id="hint-cli">([^<]+)</code>', page.text)
    assert cli is not None
    assert cli.group(1).replace("&#34;", '"') == (
        'remem graph ingest "Sam started at Initech in May 2024." '
        '--graph graph.memories.user.sam')
    assert "/v1/graph/episodes" in page.text and ".graph(user_id=" in page.text
    named = browser.get("/ui/graph", params={"user": "alice", "q": "tea"})
    # a search that finds nothing keeps the how-to (never echoing the user asked about)
    assert 'id="empty"' in named.text and 'id="graph-hint"' in named.text
    assert "user.alice" not in named.text
    assert 'id="graph-as-of-clear"' not in named.text
    dated = browser.get("/ui/graph", params={"user": "alice", "q": "tea", "as_of": "2020-01-01"})
    clear = re.search(r'id="graph-as-of-clear" class="clear" href="([^"]+)"', dated.text)
    assert clear is not None and "as_of" not in clear.group(1) and "user=alice" in clear.group(1)


def test_dashboard_counts_memories_added_per_day_from_the_records(srv: Server) -> None:
    page = srv.logged_in("acme").get("/ui/dashboard")
    assert page.status_code == 200
    assert re.search(r'id="added-total" data-count="3" data-complete="true"', page.text)
    today = day_of(time.time())
    table = re.search(r'<table class="table plot-table" id="table-added">(.*?)</table>',
                      page.text, re.S)
    assert table is not None
    cells = dict(re.findall(r'<tr data-day="([^"]+)"><th scope="row">[^<]+</th><td>(\d+)</td>',
                            table.group(1)))
    assert len(cells) == 30 and cells[today] == "3"
    assert sum(int(n) for n in cells.values()) == 3
    # the model's usage per day sits beside it (no calls in this server: zeros)
    assert 'id="usage-calls" data-count="0"' in page.text and 'id="plot-tokens"' in page.text


def test_added_per_day_reads_at_most_max_read_and_says_so(srv: Server) -> None:
    store = srv.memory("acme").store
    window = day_window(days=7)
    full = added_per_day(store, window)
    assert full.total == 3 and full.complete and dict(full.days)[day_of(time.time())] == 3
    capped = added_per_day(store, window, max_read=2)
    assert capped.total == 2 and not capped.complete and capped.read == 2
    old = added_per_day(store, day_window(since="2020-01-01", until="2020-01-31"))
    assert old.total == 0 and old.complete and len(old.days) == 31
