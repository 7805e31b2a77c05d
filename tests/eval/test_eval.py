"""``remem eval locomo``: data parsing and gold repair, metrics, bootstrap, self-tests, the store
retriever, the report shape and the command end to end, all on a small synthetic file."""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from click.testing import CliRunner, Result

from remem.cli import cli
from remem.cli.eval import make_embedder
from remem.embed import FakeEmbedder
from remem.errors import InvalidInputError
from remem.eval import (
    HEADLINE,
    OracleRetriever,
    RandomRetriever,
    StoreRetriever,
    TurnMemory,
    bootstrap_ci,
    hit_at_k,
    load_locomo,
    ndcg_at_k,
    parse_gold,
    parse_locomo,
    question_metrics,
    recall_at_k,
    reciprocal_rank,
    run_locomo,
    scored_questions,
    self_test,
    summarize,
    summarize_sets,
)
from remem.eval import harness as harness_module
from remem.store import IndexConfig, InMemoryStore

DOCS = Path(__file__).resolve().parent.parent.parent / "docs" / "cli.md"
SET_KEYS = {"n", *HEADLINE}


# -- a small LoCoMo-format file -----------------------------------------------------------------


def _turn(dia_id: str, speaker: str, text: str, caption: str | None = None) -> dict[str, str]:
    turn = {"speaker": speaker, "dia_id": dia_id, "text": text}
    if caption is not None:
        turn["blip_caption"] = caption
    return turn


def synthetic() -> list[dict[str, Any]]:
    """Two conversations: 8 + 3 turns, 8 questions of which 7 have gold (6 main, 1 cat 5)."""
    conv_a = {
        "sample_id": "conv-a",
        "conversation": {
            "speaker_a": "Alice",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                _turn("D1:1", "Alice", "I adopted a golden retriever puppy named Biscuit"),
                _turn("D1:2", "Bob", "Congratulations, my cat Miso will be jealous"),
                _turn("D1:3", "Alice", "We hiked the volcano trail near Portland",
                      caption="a photo of a mountain lake"),
                _turn("D1:4", "Bob", "I started learning the cello last winter"),
            ],
            "session_2_date_time": "10:05 am on 21 June, 2023",
            "session_2": [
                _turn("D2:1", "Alice", "Biscuit chewed my running shoes"),
                _turn("D2:2", "Bob", "My cello teacher says my bowing improved"),
                _turn("D2:3", "Alice", "I signed up for a marathon in October"),
                _turn("D2:4", "Bob", "Miso knocked a plant off the shelf"),
            ],
            # a date without a session, as in the real data: ignored
            "session_3_date_time": "9:00 am on 1 January, 2024",
        },
        "qa": [
            {"question": "What is the name of the puppy Alice adopted?", "answer": "Biscuit",
             "evidence": ["D1:1"], "category": 4},
            {"question": "Which instrument is Bob learning and how is his bowing?",
             "answer": "cello", "evidence": ["D1:4; D2:2"], "category": 1},
            {"question": "When did Alice sign up for a marathon?", "answer": 2023,
             "evidence": ["D:2:3"], "category": 2},
            {"question": "What might Alice enjoy doing outdoors?", "answer": "hiking",
             "evidence": ["D1:03", "D9:9"], "category": 3},
            {"question": "Did Bob adopt a puppy named Biscuit?", "adversarial_answer": "Yes",
             "evidence": ["D1:1"], "category": 5},
            {"question": "What is Bob's favourite colour?", "answer": "unknown",
             "evidence": [], "category": 4},
        ],
    }
    conv_b = {
        "sample_id": "conv-b",
        "conversation": {
            "speaker_a": "Carol",
            "speaker_b": "Dan",
            "session_1_date_time": "7:31 pm on 21 January, 2022",
            "session_1": [
                _turn("D1:1", "Carol", "My sister moved to Lisbon for a design job"),
                _turn("D1:2", "Dan", "I repaired the old bicycle this weekend"),
                _turn("D1:3", "Carol", "Lisbon has amazing tiles and custard tarts"),
            ],
        },
        "qa": [
            {"question": "Where did Carol's sister move?", "answer": "Lisbon",
             "evidence": ["D1:1", "D1:1"], "category": 4},
            {"question": "When did Dan repair the bicycle?", "answer": "that weekend",
             "evidence": ["D1:2", "D"], "category": 2},
        ],
    }
    return [conv_a, conv_b]


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "locomo-mini.json"
    path.write_text(json.dumps(synthetic()), encoding="utf-8")
    return path


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def run_cli(data_file: Path, *args: str) -> Result:
    result = invoke("eval", "locomo", str(data_file), "--embedder", "fake", "--mode", "vector",
                    "--bootstrap", "200", *args)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


# -- metrics ------------------------------------------------------------------------------------


def test_metrics_on_a_hand_computed_ranking() -> None:
    ranking, gold = ["a", "b", "c", "d", "e"], ["b", "d"]
    assert recall_at_k(ranking, gold, 1) == 0.0
    assert recall_at_k(ranking, gold, 3) == 0.5
    assert recall_at_k(ranking, gold, 5) == 1.0
    assert hit_at_k(ranking, gold, 1) == 0.0
    assert hit_at_k(ranking, gold, 2) == 1.0
    assert reciprocal_rank(ranking, gold) == 0.5
    # DCG@3 = 1/log2(3); ideal = 1 + 1/log2(3)
    assert ndcg_at_k(ranking, gold, 3) == pytest.approx(0.63093 / 1.63093, abs=1e-5)
    # DCG@5 = 1/log2(3) + 1/log2(5)
    assert ndcg_at_k(ranking, gold, 5) == pytest.approx((0.63093 + 0.43068) / 1.63093,
                                                        abs=1e-5)
    # a single gold id at rank 1: the ideal ranking, whatever k
    assert ndcg_at_k(["x", "y"], ["x"], 10) == 1.0


def test_metrics_when_gold_is_missed_or_ranked_twice() -> None:
    assert question_metrics(["a", "b"], ["z"])["recall@50"] == 0.0
    assert question_metrics(["a", "b"], ["z"])["mrr"] == 0.0
    # a duplicate does not push the gold id down nor count twice
    assert reciprocal_rank(["a", "a", "b"], ["b"]) == 0.5
    assert ndcg_at_k(["b", "b"], ["b", "c"], 2) == pytest.approx(1 / (1 + 1 / math.log2(3)))
    with pytest.raises(ValueError, match="empty gold"):
        recall_at_k(["a"], [], 5)


def test_question_metrics_has_every_family_at_every_k() -> None:
    metrics = question_metrics(["a"], ["a"])
    assert set(HEADLINE) <= set(metrics)
    assert {f"hit@{k}" for k in (1, 3, 5, 10, 25, 50)} <= set(metrics)
    assert all(value == 1.0 for value in metrics.values())


# -- bootstrap ----------------------------------------------------------------------------------


def _coin(n: int, seed: int) -> npt.NDArray[np.float64]:
    return np.random.default_rng(seed).integers(0, 2, n).astype(np.float64)


def test_bootstrap_ci_contains_the_mean_and_has_the_right_width() -> None:
    values = np.array([0.0, 1.0] * 50)  # mean 0.5, standard error 0.05
    low, high = bootstrap_ci(values, resamples=2000, seed=1)[:, 0]
    assert low < 0.5 < high
    assert low == pytest.approx(0.40, abs=0.02)
    assert high == pytest.approx(0.60, abs=0.02)


def test_bootstrap_ci_narrows_with_n_and_is_seeded() -> None:
    small, large = _coin(25, 0), _coin(2500, 0)
    width_small = np.diff(bootstrap_ci(small, seed=3), axis=0).item()
    width_large = np.diff(bootstrap_ci(large, seed=3), axis=0).item()
    assert width_small > 5 * width_large  # about 10x: the width shrinks like 1/sqrt(n)
    smooth = np.random.default_rng(0).random(40)  # continuous values: no ties in the means
    assert np.array_equal(bootstrap_ci(smooth, seed=3), bootstrap_ci(smooth, seed=3))
    assert not np.array_equal(bootstrap_ci(smooth, seed=3), bootstrap_ci(smooth, seed=4))


def test_bootstrap_in_blocks_matches_one_block(monkeypatch: pytest.MonkeyPatch) -> None:
    from remem.eval import metrics

    values = np.stack([_coin(300, 1), _coin(300, 2)], axis=1)
    whole = bootstrap_ci(values, resamples=500, seed=9)
    monkeypatch.setattr(metrics, "_BOOTSTRAP_CELLS", 300 * 7)  # blocks of 7 resamples
    blocked = bootstrap_ci(values, resamples=500, seed=9)
    assert whole.shape == (2, 2)
    assert np.allclose(whole, blocked, atol=0.02)


def test_summarize_sets_empty_and_no_bootstrap() -> None:
    empty = summarize([])
    assert empty.n == 0 and empty.to_dict()["recall@5"] is None and not empty.ci
    rows = [question_metrics(["a", "b"], ["b"]), question_metrics(["a", "b"], ["a"])]
    summary = summarize(rows, resamples=0)
    assert summary.n == 2
    assert summary.mean["mrr"] == 0.75
    assert summary.mean["recall@1"] == 0.5
    assert not summary.ci
    assert summarize(rows, resamples=50).ci["mrr"][0] >= 0.5


# -- gold and data parsing ----------------------------------------------------------------------


KNOWN = frozenset({"D8:6", "D9:17", "D11:26", "D30:5", "D1:1"})


@pytest.mark.parametrize(("evidence", "gold", "kinds"), [
    (["D8:6; D9:17"], ("D8:6", "D9:17"), ["split"]),
    (["D8:6,D9:17"], ("D8:6", "D9:17"), ["split"]),
    (["D:11:26"], ("D11:26",), ["rewritten"]),
    (["D30:05"], ("D30:5",), ["rewritten"]),
    (["D1:1", "D"], ("D1:1",), ["dropped_token"]),
    (["D1:1", "D2:2"], ("D1:1",), ["dropped_absent"]),
    (["D1:1", "D1:1"], ("D1:1",), ["deduplicated"]),
    (["D9:17", "D8:6"], ("D9:17", "D8:6"), []),
    ([], (), []),
])
def test_parse_gold(evidence: list[str], gold: tuple[str, ...], kinds: list[str]) -> None:
    parsed, fixes = parse_gold(evidence, KNOWN, conversation_id="c", question_index=4)
    assert parsed == gold
    assert [f.kind for f in fixes] == kinds
    assert all(f.conversation_id == "c" and f.question_index == 4 for f in fixes)


def test_parse_gold_logs_what_it_changed() -> None:
    _, fixes = parse_gold(["D:11:26 D30:05"], KNOWN, conversation_id="conv-9")
    assert [str(f) for f in fixes] == [
        "conv-9 qa[0]: split: evidence 'D:11:26 D30:05' split into D:11:26, D30:05",
        "conv-9 qa[0]: rewritten: evidence 'D:11:26' read as D11:26",
        "conv-9 qa[0]: rewritten: evidence 'D30:05' read as D30:5",
    ]


def test_turns_questions_and_times() -> None:
    data = parse_locomo(synthetic(), source="mini")
    conv_a, conv_b = data.conversations
    assert [t.dia_id for t in conv_a.turns] == [
        "D1:1", "D1:2", "D1:3", "D1:4", "D2:1", "D2:2", "D2:3", "D2:4"]
    hike = conv_a.turns[2]
    assert hike == TurnMemory(
        "conv-a", "D1:3", "Alice",
        "Alice: We hiked the volcano trail near Portland [shares a photo of a mountain lake]",
        1, 3, datetime(2023, 5, 8, 13, 56, tzinfo=UTC),
    )
    assert conv_a.turns[4].event_time == datetime(2023, 6, 21, 10, 5, tzinfo=UTC)
    assert conv_a.turns[4].session == 2 and conv_a.turns[4].turn == 1
    # "now" is the last session that exists, not the dangling session_3 date
    assert conv_a.now == datetime(2023, 6, 21, 10, 5, tzinfo=UTC)
    assert conv_a.speakers == ("Alice", "Bob")
    questions = conv_a.questions
    assert [q.gold for q in questions] == [
        ("D1:1",), ("D1:4", "D2:2"), ("D2:3",), ("D1:3",), ("D1:1",), ()]
    assert questions[2].answer == "2023"  # an int answer, as text
    assert questions[4].answer is None and questions[4].adversarial_answer == "Yes"
    assert conv_b.questions[0].gold == ("D1:1",)
    assert data.n_turns == 11 and data.n_questions == 8
    assert len(scored_questions(data)) == 7
    assert sorted({f.kind for f in data.fixes}) == [
        "deduplicated", "dropped_absent", "dropped_token", "no_gold", "rewritten", "split"]


def test_head_keeps_the_first_conversations_and_their_fixes() -> None:
    data = parse_locomo(synthetic()).head(1)
    assert [c.id for c in data.conversations] == ["conv-a"]
    assert {f.conversation_id for f in data.fixes} == {"conv-a"}


def _broken(change: str) -> Any:
    data = synthetic()
    conv = data[0]["conversation"]
    if change == "not a list":
        return {"conversations": data}
    if change == "empty":
        return []
    if change == "bad date":
        conv["session_2_date_time"] = "yesterday"
    elif change == "no speaker":
        del conv["session_1"][1]["speaker"]
    elif change == "text not a string":
        conv["session_1"][0]["text"] = 5
    elif change == "category":
        data[0]["qa"][0]["category"] = 7
    elif change == "evidence":
        data[0]["qa"][0]["evidence"] = "D1:1"
    elif change == "duplicate dia_id":
        conv["session_2"][0]["dia_id"] = "D1:1"
    elif change == "duplicate sample_id":
        data[1]["sample_id"] = "conv-a"
    elif change == "no sessions":
        for key in [k for k in conv if re.fullmatch(r"session_\d+", k)]:
            del conv[key]
    elif change == "session without date":
        del conv["session_1_date_time"]
    return data


@pytest.mark.parametrize(("change", "message"), [
    ("not a list", "expected a JSON list of conversations, got an object"),
    ("empty", "the list of conversations is empty"),
    ("bad date", "session_2_date_time: date-time 'yesterday' does not match"),
    ("no speaker", "conversation 0 (conv-a): session_1 turn 2: missing 'speaker'"),
    ("text not a string", "session_1 turn 1: 'text' must be str, got a number"),
    ("category", "qa[0]: 'category' must be 1 to 5, got 7"),
    ("evidence", "qa[0]: 'evidence' must be list, got a string"),
    ("duplicate dia_id", "dia_id 'D1:1' is used by more than one turn"),
    ("duplicate sample_id", "sample_id 'conv-a' is used twice"),
    ("no sessions", "conversation has no 'session_N' lists"),
    ("session without date", "missing 'session_1_date_time'"),
])
def test_malformed_data_names_the_file_and_the_problem(change: str, message: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_locomo(_broken(change), source="bad.json")
    assert str(caught.value).startswith("bad.json: ")
    assert message in str(caught.value)


def test_load_locomo_rejects_invalid_json(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('[{"sample_id": ', encoding="utf-8")
    with pytest.raises(InvalidInputError, match=r"broken\.json: not valid JSON: .* line 1"):
        load_locomo(path)
    path.write_bytes(b"\xff\xfe[]")
    with pytest.raises(InvalidInputError, match="not UTF-8"):
        load_locomo(path)


def test_load_locomo_records_the_file_hash(data_file: Path) -> None:
    import hashlib

    data = load_locomo(data_file)
    assert data.sha256 == hashlib.sha256(data_file.read_bytes()).hexdigest()
    assert data.source == str(data_file)


# -- self-tests: oracle and random --------------------------------------------------------------


def test_oracle_scores_one_and_random_is_the_floor() -> None:
    data = parse_locomo(synthetic())
    check = self_test(data, k=50, seed=0)
    assert check.passed, check.failures
    assert check.oracle.n == 6
    assert all(check.oracle.mean[m] == 1.0 for m in HEADLINE if m != "recall@1")
    # one question has two gold turns: only half of them fit in the top 1
    assert check.oracle.mean["recall@1"] == pytest.approx((5 + 0.5) / 6)
    assert check.random.n == 6
    assert check.random.mean["recall@1"] is not None
    assert check.random.mean["recall@1"] < 1.0
    assert check.random.mean["recall@50"] == 1.0  # every turn fits in 50


def test_oracle_recall_is_only_required_where_the_depth_allows() -> None:
    data = parse_locomo(synthetic())
    check = self_test(data, k=1, seed=0)  # the two-turn gold cannot fit in a depth of 1
    assert check.passed, check.failures
    assert check.oracle.mean["recall@50"] is not None
    assert check.oracle.mean["recall@50"] < 1.0


def test_self_test_catches_a_broken_harness(monkeypatch: pytest.MonkeyPatch) -> None:
    class Backwards(OracleRetriever):
        def rank(self, conversation_id: str, question: str, k: int) -> list[str]:
            return list(reversed(super().rank(conversation_id, question, 1000)))[:k]

    monkeypatch.setattr(harness_module, "OracleRetriever", Backwards)
    check = self_test(parse_locomo(synthetic()), k=3)
    assert not check.passed
    assert "oracle scored below 1.0 on hit@1" in check.failures[0]


def test_random_is_deterministic_per_seed_and_question() -> None:
    data = parse_locomo(synthetic())
    conv = data.conversations[0]
    first, second, other = RandomRetriever(7), RandomRetriever(7), RandomRetriever(8)
    for retriever in (first, second, other):
        retriever.ingest(conv.id, conv.turns)
    rankings = [first.rank(conv.id, q.question, 8) for q in conv.questions]
    assert rankings == [second.rank(conv.id, q.question, 8) for q in reversed(
        conv.questions)][::-1]
    assert rankings != [other.rank(conv.id, q.question, 8) for q in conv.questions]
    assert all(sorted(r) == sorted(t.dia_id for t in conv.turns) for r in rankings)
    assert len(first.rank(conv.id, "anything", 3)) == 3


def test_run_cuts_long_rankings_and_times_every_query() -> None:
    class Everything:
        def ingest(self, conversation_id: str, memories: Sequence[TurnMemory]) -> None:
            self.ids = [m.dia_id for m in memories]

        def rank(self, conversation_id: str, question: str, k: int) -> list[str]:
            return self.ids * 10

    data = parse_locomo(synthetic()).head(1)
    ticks = iter(range(1000))
    run = run_locomo(data, Everything(), k=4, clock=lambda: float(next(ticks)))
    assert all(len(r.ranking) == 4 for r in run.results)
    assert len(run.timing.query_ms) == 5
    assert run.timing.query_ms == (1000.0,) * 5  # one tick per query, in ms
    assert run.timing.ingest_s == 1.0
    assert run.timing.to_dict() == {"ingest_s": 1.0, "query_p50_ms": 1000.0,
                                    "query_p95_ms": 1000.0}


# -- the store retriever ------------------------------------------------------------------------


class RecordingEmbedder(FakeEmbedder):
    """A fake embedder that remembers the document texts it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.documents: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.documents.extend(texts)
        return super().embed_documents(texts)


def test_store_retriever_ingests_one_batch_and_indexes_only_the_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = parse_locomo(synthetic())
    embedder = RecordingEmbedder()
    store = InMemoryStore(index=IndexConfig(embedder=embedder, fields=("text",)))
    batches: list[int] = []
    real_batch = store.batch

    def counting_batch(ops: Any) -> Any:
        ops = list(ops)
        batches.append(len(ops))
        return real_batch(ops)

    monkeypatch.setattr(store, "batch", counting_batch)
    retriever = StoreRetriever(store, "vector")
    for conv in data.conversations:
        retriever.ingest(conv.id, conv.turns)
    assert batches == [8, 3]
    # the embedded texts are exactly the turn texts: no dia_id, no metadata
    assert embedder.documents == [t.text for c in data.conversations for t in c.turns]
    turn = data.conversations[0].turns[2]
    item = store.get(("locomo", "conv-a"), "D1:3")
    assert item is not None
    previous = data.conversations[0].turns[1]
    assert item.value == {"text": turn.text, "dia_id": "D1:3", "speaker": "Alice", "session": 1,
                          "turn": 3,
                          "event_time": "2023-05-08T13:56:00+00:00",
                          "context": f"{previous.text}\n8 May 2023"}
    assert getattr(item, "event_at", turn.event_time) == turn.event_time


def test_store_retriever_ranks_within_the_conversation() -> None:
    data = parse_locomo(synthetic())
    with InMemoryStore(index=IndexConfig(embedder=FakeEmbedder(), fields=("text",))) as store:
        retriever = StoreRetriever(store, "vector")
        for conv in data.conversations:
            retriever.ingest(conv.id, conv.turns)
        ranking = retriever.rank("conv-b", "Where did Carol's sister move?", 50)
        assert sorted(ranking) == ["D1:1", "D1:2", "D1:3"]  # conv-a's 8 turns stay out
        assert ranking[0] == "D1:1"
        assert len(retriever.rank("conv-a", "puppy named Biscuit", 2)) == 2


# -- the command --------------------------------------------------------------------------------


def test_json_output_has_exactly_the_specified_shape(data_file: Path) -> None:
    result = run_cli(data_file, "--json", "--backend", "memory")
    summary = json.loads(result.stdout)
    assert set(summary) == {"main", "by_category", "cat5", "timing", "config"}
    assert set(summary["main"]) == SET_KEYS
    assert set(summary["by_category"]) == {"1", "2", "3", "4"}
    assert all(set(s) == SET_KEYS for s in summary["by_category"].values())
    assert set(summary["cat5"]) == SET_KEYS
    assert set(summary["timing"]) == {"ingest_s", "query_p50_ms", "query_p95_ms"}
    assert summary["main"]["n"] == 6
    assert [summary["by_category"][c]["n"] for c in "1234"] == [1, 2, 1, 2]
    assert summary["cat5"]["n"] == 1
    # every turn of these tiny conversations fits in the top 50
    assert summary["main"]["recall@50"] == 1.0
    assert all(0.0 <= summary["main"][m] <= 1.0 for m in HEADLINE)
    config = summary["config"]
    assert config["mode"] == "vector" and config["k"] == 50 and config["backend"] == "memory"
    assert config["embedder"] == "fake" and config["embedder_model"] == "fake-384"
    assert config["dataset"]["path"] == str(data_file)
    assert len(config["dataset"]["sha256"]) == 64
    assert (config["conversations"], config["turns"], config["questions"]) == (2, 11, 8)
    assert config["questions_scored"] == 7
    assert config["self_test"]["oracle_passed"] is True
    assert set(config["self_test"]["random_floor"]) == SET_KEYS
    assert {"kind": "split", "conversation": "conv-a", "question_index": 1,
            "detail": "evidence 'D1:4; D2:2' split into D1:4, D2:2"} in config["data_fixes"]
    assert result.stderr == ""  # no progress bar, no fix log: all of it is in the JSON


def test_out_writes_question_records_and_the_summary(data_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "run" / "one"
    result = run_cli(data_file, "--json", "--out", str(out))
    records = [json.loads(line) for line in
               (out / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(records) == 7
    first = records[0]
    assert first["conversation"] == "conv-a"
    assert first["question"] == "What is the name of the puppy Alice adopted?"
    assert first["category"] == 4 and first["gold"] == ["D1:1"]
    assert sorted(first["ranking"]) == sorted(
        ["D1:1", "D1:2", "D1:3", "D1:4", "D2:1", "D2:2", "D2:3", "D2:4"])
    assert set(first["metrics"]) == set(HEADLINE)
    assert first["metrics"]["mrr"] == 1 / (first["ranking"].index("D1:1") + 1)
    assert [r["category"] for r in records].count(5) == 1
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary == json.loads(result.stdout)


def test_table_output(data_file: Path) -> None:
    result = run_cli(data_file, "--backend", "sqlite")
    text = result.stdout
    for label in ("main (cat 1\u20134)", "cat 1 multi-hop", "cat 2 temporal",
                  "cat 3 open-domain", "cat 4 single-hop", "cat 5 adversarial",
                  "random (seed 0)"):
        assert label in text, label
    main_row = next(line for line in text.splitlines() if line.startswith("main"))
    assert re.search(r"│\s+6\s+│", main_row)  # n next to the figures
    assert re.search(r"\d\.\d\d\u2013\d\.\d\d", text)  # bootstrap intervals
    assert re.search(r"ingest \d+\.\d\d s for 11 turns · query p50 [\d.]+ ms, p95 [\d.]+ ms "
                     r"\(7 queries\)", text)
    assert "self-test passed" in text
    assert "data fix: conv-a qa[1]: split: evidence 'D1:4; D2:2' split into D1:4, D2:2" in (
        result.stderr)
    assert "data fix: conv-b qa[1]: dropped_token: evidence token 'D' is not a dia_id" in (
        result.stderr)


def test_limit_conversations_and_shallow_k_warning(data_file: Path) -> None:
    result = run_cli(data_file, "--json", "--limit-conversations", "1", "--k", "3")
    summary = json.loads(result.stdout)
    assert summary["config"]["conversations"] == 1
    assert summary["main"]["n"] == 4
    assert "warning: --k 3 is below 50" in result.stderr
    assert summary["main"]["recall@50"] < 1.0  # only 3 of 8 turns were retrieved


def _error_line(result: Result, code: int) -> str:
    assert result.exit_code == code, (result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


def test_malformed_file_exits_2_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_broken("bad date")), encoding="utf-8")
    line = _error_line(invoke("eval", "locomo", str(path), "--embedder", "fake"), 2)
    assert str(path) in line and "does not match" in line
    line = _error_line(invoke("eval", "locomo", str(tmp_path / "missing.json")), 2)
    assert "does not exist" in line


def test_missing_local_embedder_is_a_clear_error(monkeypatch: pytest.MonkeyPatch,
                                                 data_file: Path) -> None:
    monkeypatch.setitem(sys.modules, "remem.embed.local", None)  # import fails
    line = _error_line(invoke("eval", "locomo", str(data_file), "--mode", "vector"), 1)
    assert "--embedder local needs remem.embed.local" in line
    assert "--embedder fake" in line
    assert make_embedder("fake").model == "fake-384"


# -- docs ---------------------------------------------------------------------------------------


def test_sets_partition_the_scored_questions() -> None:
    data = parse_locomo(synthetic())
    run = run_locomo(data, RandomRetriever(0), k=50)
    sets = summarize_sets(run, resamples=0)
    assert sets["main"].n == sum(sets[c].n for c in "1234")
    assert sets["main"].n + sets["cat5"].n == len(run.results) == 7
