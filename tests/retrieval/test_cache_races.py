"""The per-process caches that threads share, raced (issue 32): the embedding memo, the
memoised text readings of the ranking stages, the access recorder and a graph's term and vector
caches. Each race is checked against what one thread alone gets."""

from __future__ import annotations

import random
import string
import threading
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from remem.background.access import AccessRecorder
from remem.background.queue import JobQueue
from remem.embed.cache import VectorMemo, text_hash
from remem.embed.fake import FakeEmbedder
from remem.graph import Graph
from remem.llm import ScriptedModel
from remem.memory.observers import Touched
from remem.retrieval.memo import SHORT_TEXT, memoise_short_texts
from remem.retrieval.mentions import mentioned_names
from remem.retrieval.timing import has_time_expression, is_question
from remem.store import open_store
from tests.graph.scripts import E, F, answer
from tests.race_support import race

THREADS = 8


_race = race


# -- the embedding memo ---------------------------------------------------------------------------

def test_the_vector_memo_hands_each_thread_the_vector_of_its_text() -> None:
    memo = VectorMemo(size=64)  # far fewer than the texts: evictions all along
    rng = np.random.default_rng(0)
    texts = [f"text {i}" for i in range(400)]
    hashes = [text_hash("document", t) for t in texts]
    vectors = {model: {h: rng.standard_normal(8).astype(np.float32) for h in hashes}
               for model in ("m1", "m2")}  # the same texts under two models

    def work(me: int) -> int:
        mine = random.Random(me)
        checked = 0
        for _ in range(3000):
            model = mine.choice(("m1", "m2"))
            chosen = mine.sample(hashes, 5)
            memo.put_many(model, {h: vectors[model][h] for h in chosen[:2]})
            for digest, vector in memo.get_many(model, chosen).items():
                assert np.array_equal(vector, vectors[model][digest])
                checked += 1
        return checked

    assert sum(_race(THREADS, work)) > 10_000
    assert len(memo.get_many("m1", hashes)) + len(memo.get_many("m2", hashes)) <= 64
    memo.put_many("m1", {hashes[0]: vectors["m1"][hashes[0]]})
    kept = memo.get_many("m1", hashes[:1])[hashes[0]]
    with pytest.raises(ValueError, match="read-only"):
        kept[0] = 1.0  # no caller can change what the other threads are handed


# -- memoised readings of candidates' text ---------------------------------------------------------

def _texts(n: int) -> list[str]:
    rng = random.Random(3)
    pieces = ["we met Anna", "yesterday", "in Paris", "on 3 May", "did you?", "张伟昨天去了北京",
              "[a photo]", "Ben said", "last week", "吗", "nothing"]
    out = {f"{i}: " + " ".join(rng.choice(pieces) for _ in range(rng.randint(1, 6)))
           for i in range(n)}
    out.add("Who is Anna? " + "x" * SHORT_TEXT)  # longer than what is remembered
    return sorted(out)


def test_memoised_readings_agree_with_unmemoised_ones_under_threads() -> None:
    texts = _texts(20_000)  # more than the memos hold (8,192 and 16,384 texts)
    # the functions under the memos (functools.wraps keeps them as __wrapped__)
    readings = (has_time_expression, is_question, mentioned_names)
    want = {t: tuple(f.__wrapped__(t) for f in readings)  # type: ignore[attr-defined]
            for t in texts}
    assert any(w[0] for w in want.values()) and any(w[1] for w in want.values())
    assert any(w[2] for w in want.values())

    def work(me: int) -> int:
        order = texts[:]
        random.Random(me).shuffle(order)
        for text in order[:6000]:
            assert tuple(f(text) for f in readings) == want[text]
        return len(order[:6000])

    assert sum(_race(THREADS, work)) == THREADS * 6000
    assert has_time_expression.cache_info().currsize <= 8192  # type: ignore[attr-defined]
    assert mentioned_names.cache_info().currsize <= 16_384  # type: ignore[attr-defined]


def test_a_small_memo_evicting_under_threads_gives_each_text_its_reading() -> None:
    calls = Counter[str]()

    @memoise_short_texts(16)
    def reading(text: str) -> tuple[int, str]:
        calls[text] += 1
        return len(text), text[::-1][:6]

    texts = [f"{i}-" + "ab" * (i % 7) for i in range(300)] + ["z" * (SHORT_TEXT + 1)]

    def work(me: int) -> int:
        mine = random.Random(me)
        for _ in range(5000):
            text = mine.choice(texts)
            assert reading(text) == (len(text), text[::-1][:6])
        return 5000

    assert sum(_race(THREADS, work)) == THREADS * 5000
    assert reading.cache_info().currsize <= 16  # type: ignore[attr-defined]
    assert calls["z" * (SHORT_TEXT + 1)] > 1  # long texts are read every time


# -- the access recorder --------------------------------------------------------------------------

def test_reads_counted_from_many_threads_are_all_counted_once(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "reads.db")) as store:
        recorder = AccessRecorder(store)
        ids = [f"m{i}" for i in range(30)]
        flushing = threading.Event()

        def flush_all_along() -> None:
            while not flushing.is_set():
                recorder.flush()

        flusher = threading.Thread(target=flush_all_along)
        flusher.start()

        def work(me: int) -> Counter[str]:
            mine = random.Random(me)
            read: Counter[str] = Counter()
            for _ in range(400):
                hit = tuple(mine.sample(ids, 3))
                recorder.observe(Touched(hit))
                read.update(hit)
            return read

        try:
            counts = sum(_race(THREADS, work), Counter[str]())
        finally:
            flushing.set()
            flusher.join()
        recorder.close()
        assert recorder.errors == 0
        assert recorder.recorded == THREADS * 400 * 3
        queue = JobQueue.beside(store)
        try:
            assert {i: uses for i, (uses, _) in queue.access(ids).items()} == dict(counts)
        finally:
            queue.close()


# -- a graph's term statistics and vectors ---------------------------------------------------------

def test_graph_searches_in_threads_rank_as_one_thread_does(tmp_path: Path) -> None:
    rng = random.Random(11)
    people = [f"Person{chr(65 + i // 26)}{chr(65 + i % 26)}" for i in range(40)]
    topics = ["pottery", "sailing", "chess", "baking", "climbing", "violin", "gardening"]
    script = []
    for i, person in enumerate(people):
        org, topic = f"Org{i % 9}", topics[i % len(topics)]
        script.append(answer([E(person), E(org, "organization")],
                             [F(person, "works_at", org, f"{person} teaches {topic} at {org}")]))
    path = tmp_path / "graph.db"
    with Graph.open(path, ("g",), model=ScriptedModel(script),
                    embedder=FakeEmbedder()) as graph:
        for i, person in enumerate(people):
            graph.ingest(f"{person} teaches {topics[i % len(topics)]} at Org{i % 9}.")

    def noise(n: int) -> str:
        return " ".join("".join(rng.choice(string.ascii_lowercase) for _ in range(9))
                        for _ in range(n))

    # unknown words too: the document-frequency cache fills past its bound and starts over
    queries = [f"{rng.choice(topics)} Org{rng.randrange(9)} {noise(60)}" for _ in range(120)]

    def ranked(graph: Graph, query: str) -> list[tuple[int, float]]:
        return [(hit.fact.id, round(hit.score, 9)) for hit in graph.search(query, limit=5)]

    with Graph.open(path, ("g",), embedder=FakeEmbedder()) as alone:
        want = {q: ranked(alone, q) for q in queries}
    assert all(want.values())
    with Graph.open(path, ("g",), embedder=FakeEmbedder()) as shared:
        def work(me: int) -> int:
            order = queries[:]
            random.Random(me).shuffle(order)
            return sum(ranked(shared, q) != want[q] for q in order)

        assert _race(THREADS, work) == [0] * THREADS
