"""One keyword tokenizer serves every thread of a store (and of a server's tenants): terms made
under a race are the terms one thread alone makes, hostile words cost time linear in their
length, and no term outgrows :data:`~remem.retrieval.tokenize.MAX_TERM` (issue 32).

Snowball's stemmer keeps the word it works on in the object; the tokenizer once shared one
between threads, which gave wrong stems (then memoised) and ``IndexError`` inside the stemmer.
"""

from __future__ import annotations

import itertools
import random
import string
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

import remem.retrieval.tokenize as tokenize_module
from remem.retrieval.tokenize import (
    HAN_PIECE,
    MAX_TERM,
    STEM_MAX_WORD,
    DefaultTokenizer,
    bounded_term,
    han_pieces,
)
from remem.server import ServerConfig, create_app
from remem.store import KeywordConfig, open_store
from remem.testing.server import ThreadedServer

_LETTERS = string.ascii_lowercase
_ENDINGS = ["", "ing", "ed", "s", "ies", "ly", "ness", "ational", "izing", "fulness", "y",
            "yy", "ously", "ement"]
_HAN_CHARS = "北京烤鸭中华人民共和国我们今天去看长城张伟王芳喜欢陶艺课程"


def _words(n: int, seed: int, *, han: bool = True) -> list[str]:
    """``n`` distinct words: ordinary ones with English endings, words of many ``y`` (some
    over :data:`STEM_MAX_WORD`), long repeats, possessives, digits and (``han``) Han."""
    rng = random.Random(seed)
    found: set[str] = set()
    while len(found) < n:
        stem = "".join(rng.choice(_LETTERS) for _ in range(rng.randint(2, 12)))
        kind = rng.random()
        if kind < 0.15:
            word = "y" * rng.randint(1, 300) + stem
        elif kind < 0.2:
            word = stem * rng.randint(6, 40)
        elif kind < 0.25:
            word = stem + "'s"
        elif kind < 0.3:
            word = f"{stem}{rng.randint(0, 10**9)}"
        elif kind < 0.33 and han:
            word = "".join(rng.choice(_HAN_CHARS) for _ in range(rng.randint(2, 8)))
        else:
            word = stem + rng.choice(_ENDINGS)
        found.add(word)
    words = sorted(found)
    rng.shuffle(words)
    return words


def _texts(words: list[str], per_text: int = 50) -> list[str]:
    return [" ".join(words[i:i + per_text]) for i in range(0, len(words), per_text)]


def _wrong(got: list[str], want: list[str]) -> int:
    return sum(a != b for a, b in itertools.zip_longest(got, want))


# -- (a) the library: 8 threads on one tokenizer ------------------------------------------------

def test_eight_threads_make_the_terms_of_one(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = _texts(_words(100_000, seed=32))
    reference = [DefaultTokenizer().tokenize(text) for text in texts]
    # a small memo bound: the memo starts over every few hundred words, in the middle of the
    # other threads' reads and writes
    monkeypatch.setattr(tokenize_module, "_MEMO_WORDS", 500)
    shared = DefaultTokenizer()
    threads = 8
    start = threading.Barrier(threads)

    def run(me: int) -> tuple[int, int, list[str]]:
        wrong = checked = 0
        errors: list[str] = []
        start.wait()
        # first this thread's share (every word new to the memo), then a neighbour's
        for share in (me, (me + 1) % threads):
            for i in range(share, len(texts), threads):
                try:
                    terms = shared.tokenize(texts[i])
                except Exception as exc:  # counted: the test says how many and which
                    errors.append(repr(exc))
                    continue
                wrong += _wrong(terms, reference[i])
                checked += len(reference[i])
        return wrong, checked, errors

    with ThreadPoolExecutor(threads) as pool:
        results = list(pool.map(run, range(threads)))
    assert [errors for _, _, errors in results] == [[]] * threads
    assert sum(wrong for wrong, _, _ in results) == 0
    assert sum(checked for _, checked, _ in results) > 150_000  # two passes over the terms
    assert max(len(t) for terms in reference for t in terms) == MAX_TERM
    assert len(shared._terms) <= 500


def test_terms_are_the_words_rules_below_the_limits_and_bounded_above() -> None:
    tokenizer = DefaultTokenizer()
    # at the limit a word is still stemmed; above it, it is kept as it is
    assert tokenizer.tokenize("y" * (STEM_MAX_WORD - 3) + "ing") == ["y" * (STEM_MAX_WORD - 3)]
    over = "y" * (STEM_MAX_WORD - 2) + "ing"
    assert tokenizer.tokenize(over) == [over]
    # a long word: its beginning and a hash of all of it, the same in a query
    word = "ab" * 500_000
    term = bounded_term(word)
    assert len(term) == MAX_TERM and term.startswith("abab") and "~" in term
    assert tokenizer.tokenize(f"Is {word.upper()} there?") == [term]
    assert bounded_term("ab" * 500_000 + "c") != term  # same beginning, another term
    assert tokenizer.tokenize("9" * 1_000_000) == [bounded_term("9" * 1_000_000)]
    assert tokenizer.tokenize("(" * 1_000_000 + "tea") == ["tea"]
    # long words are not kept by the memo (its size in bytes stays bounded)
    assert all(len(w) <= STEM_MAX_WORD for w in tokenizer._terms)


def test_a_long_han_run_is_cut_in_pieces_at_most_the_piece_size() -> None:
    rng = random.Random(7)
    run = "".join(rng.choice(_HAN_CHARS) for _ in range(3 * HAN_PIECE + 5))
    assert [len(p) for p in han_pieces(run)] == [HAN_PIECE] * 3 + [5]
    # text with punctuation is cut just after the last character that is not Han
    text = ("我们今天去看长城。" * 2000)[:3 * HAN_PIECE]
    pieces = list(han_pieces(text))
    assert "".join(pieces) == text
    assert all(len(p) <= HAN_PIECE and p.endswith("。") for p in pieces[:-1])
    terms = DefaultTokenizer().tokenize(run)
    assert terms and max(map(len, terms)) <= MAX_TERM
    # a Chinese sentence shorter than a piece segments as before
    assert DefaultTokenizer().tokenize("我们今天去看长城") == ["今天", "看", "长城"]


# -- (b) a real server: 4 clients writing new words at once -------------------------------------

def _key(app: object, tenant: str) -> dict[str, str]:
    token = app.state.remem.keys.create(tenant)[0]  # type: ignore[attr-defined]
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[ThreadedServer, object]]:
    """The HTTP app on loopback with the default settings (2 store threads), SQLite."""
    config = ServerConfig(db=str(tmp_path / "race.db"), mcp=False, max_body_bytes=4 << 20)
    assert config.store_threads == 2
    app = create_app(config, ui=False)
    with ThreadedServer(app) as server:
        yield server, app
    app.state.remem.close()


def test_concurrent_writers_through_the_server_are_all_findable(
        served: tuple[ThreadedServer, object]) -> None:
    server, app = served
    clients, items, words_per_item = 4, 10, 3000
    # no Han: random Han strings share their words with other items
    words = _words(clients * items * words_per_item, seed=5, han=False)
    keys = [_key(app, f"tenant{c}") for c in range(clients)]

    def write(client: int) -> list[tuple[int, list[str]]]:
        acknowledged = []
        with httpx.Client(base_url=server.url, headers=keys[client], timeout=120) as http:
            for item in range(items):
                first = (client * items + item) * words_per_item
                mine = words[first:first + words_per_item]
                answer = http.put("/v1/store/items", json={
                    "namespace": ["race"], "key": f"item{item}",
                    "value": {"text": " ".join(mine)}})
                assert answer.status_code == 200, answer.text
                acknowledged.append((item, mine))
        return acknowledged

    with ThreadPoolExecutor(clients) as pool:
        written = list(pool.map(write, range(clients)))
    assert [len(w) for w in written] == [items] * clients
    rng = random.Random(1)
    missed = []
    for client, acknowledged in enumerate(written):
        with httpx.Client(base_url=server.url, headers=keys[client], timeout=60) as http:
            for item, mine in acknowledged:
                for word in rng.sample(mine, 12):
                    found = http.post("/v1/store/search", json={
                        "query": word, "mode": "keyword", "limit": 10}).json()["items"]
                    if f"item{item}" not in [hit["key"] for hit in found]:
                        missed.append((client, item, word))
    assert missed == []


# -- (c) a 1 MiB word, and words past PostgreSQL's index row limit ------------------------------

@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "long.db")
    return str(request.getfixturevalue("pg_database"))


def _incompressible(n: int, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n))


def test_a_one_mebibyte_word_is_stored_and_found(database: str) -> None:
    word = _incompressible(1 << 20, seed=1)
    near = word[:-1] + ("a" if word[-1] != "a" else "b")  # the same beginning
    with open_store(database, keyword=KeywordConfig(fields=("text",))) as store:
        ns = ("long", "mib")
        store.put(ns, "word", {"text": f"{word} kingfisher"})
        store.put(ns, "near", {"text": near})
        store.put(ns, "other", {"text": "a kingfisher by the river"})
        hits = store.search(ns, query=word, mode="keyword")
        assert [h.key for h in hits] == ["word"]
        assert [h.key for h in store.search(ns, query=near, mode="keyword")] == ["near"]
        assert {h.key for h in store.search(ns, query="kingfisher", mode="keyword")} == {
            "word", "other"}


def test_long_words_through_the_server_are_never_a_5xx(database: str) -> None:
    app = create_app(ServerConfig(db=database, mcp=False, max_body_bytes=4 << 20), ui=False)
    try:
        with ThreadedServer(app) as server, httpx.Client(
                base_url=server.url, headers=_key(app, "longwords"), timeout=120) as http:
            word = _incompressible(1 << 20, seed=2)
            answer = http.put("/v1/store/items", json={
                "namespace": ["long"], "key": "mib", "value": {"text": f"{word} heron"}})
            assert answer.status_code == 200, answer.text
            # past PostgreSQL's ~2,700-byte index row, and short enough for a query
            medium = _incompressible(9_000, seed=3)
            answer = http.put("/v1/store/items", json={
                "namespace": ["long"], "key": "medium", "value": {"text": medium}})
            assert answer.status_code == 200, answer.text
            for query, key in (("heron", "mib"), (medium, "medium")):
                found = http.post("/v1/store/search", json={
                    "query": query, "mode": "keyword"})
                assert found.status_code == 200, found.text
                assert [hit["key"] for hit in found.json()["items"]] == [key]
            # an episode whose situation is one long word
            situation = _incompressible(9_500, seed=4)
            answer = http.post("/v1/episodes", json={"situation": situation,
                                                     "action": "filed it"})
            assert answer.status_code == 200, answer.text
            chosen = http.post("/v1/episodes/select", json={"query": situation, "k": 1})
            assert chosen.status_code == 200, chosen.text
            assert [e["situation"] for e in chosen.json()["examples"]] == [situation]
    finally:
        app.state.remem.close()
