"""``remem eval longmemeval``: the LongMemEval loader (haystacks, has_answer gold, sessions,
abstention) and the command on the synthetic file in tests/data/eval/."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from remem.cli import cli
from remem.errors import InvalidInputError
from remem.eval.longmemeval import load_longmemeval, parse_longmemeval

MINI = Path(__file__).parent.parent / "data" / "eval" / "longmemeval_mini.json"


def raw() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(MINI.read_text(encoding="utf-8"))
    return data


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, ["eval", "longmemeval", *args], catch_exceptions=False)


def run_json(*args: str) -> dict[str, Any]:
    result = invoke(str(MINI), "--embedder", "fake", "--bootstrap", "0", "--json", *args)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def test_each_item_is_its_own_namespace_with_one_memory_per_turn() -> None:
    ds = load_longmemeval(MINI)
    assert [c.id for c in ds.data.conversations] == ["e1_single", "e2_multi", "e3_abs",
                                                     "z1_pref", "e4_nogold"]
    first = ds.data.conversations[0]
    assert len(first.turns) == 7
    turn = first.turns[2]
    assert turn.dia_id == "answer_e1:0" and turn.speaker == "user" and turn.session == 2
    assert turn.text.startswith("user: I adopted a border collie puppy")
    assert turn.event_time == datetime(2023, 5, 25, 18, 40, tzinfo=UTC)
    assert first.now == datetime(2023, 5, 28, 9, 15, tzinfo=UTC)


def test_gold_turns_sessions_and_kinds() -> None:
    ds = load_longmemeval(MINI)
    questions = {c.id: c.questions for c in ds.data.conversations}
    assert questions["e2_multi"][0].gold == ("answer_e2a:0", "answer_e2b:0")
    assert ds.parent_gold[("e2_multi", 0)] == ("answer_e2a", "answer_e2b")  # missing dropped
    assert questions["e4_nogold"] == ()
    assert ds.kinds == {("e1_single", 0): "single-session-user",
                        ("e2_multi", 0): "multi-session",
                        ("e3_abs", 0): "abstention",
                        ("z1_pref", 0): "single-session-preference"}
    assert ds.apart == "abstention"
    assert ds.kind_order == ("single-session-user", "multi-session",
                             "single-session-preference")
    assert [(f.where, f.kind) for f in ds.fixes] == [
        ("e2_multi session ghost", "time_unparsed"), ("e2_multi", "dropped_absent"),
        ("e4_nogold", "no_gold")]
    # the unreadable date takes the session before it
    ghost = ds.data.conversations[1].turns[-1]
    assert ghost.dia_id == "ghost:0" and ghost.event_time == datetime(2023, 8, 20, 19, 5,
                                                                      tzinfo=UTC)


def test_gold_sessions_default_to_those_holding_gold_turns() -> None:
    data = raw()[:1]
    del data[0]["answer_session_ids"]
    ds = parse_longmemeval(data)
    assert ds.parent_gold[("e1_single", 0)] == ("answer_e1",)


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d[0].pop("question_id"), "missing 'question_id'"),
    (lambda d: d[0]["haystack_dates"].pop(), "must be as long as each other; got 3, 2 and 3"),
    (lambda d: d[0]["haystack_sessions"].__setitem__(0, "x"), "a session must be a list"),
    (lambda d: d[0]["haystack_session_ids"].__setitem__(2, "answer_e1"), "appears twice"),
    (lambda d: d[0]["haystack_sessions"][0][0].pop("content"),
     "session filler_a1 turn 0: missing 'content'"),
    (lambda d: d[1].__setitem__("question_id", "e1_single"), "is used twice"),
])
def test_malformed_items_name_the_place_and_the_rule(change: Any, message: str) -> None:
    data = copy.deepcopy(raw())
    change(data)
    with pytest.raises(InvalidInputError, match=r"lme\.json") as info:
        parse_longmemeval(data, source="lme.json")
    assert message in str(info.value)


def test_keyword_mode_finds_the_gold_turns_and_sessions() -> None:
    doc = run_json("--mode", "keyword")
    assert doc["main"]["n"] == 3 and doc["abstention"]["n"] == 1
    assert doc["main"]["recall@3"] == 1.0 and doc["main"]["mrr"] == 1.0
    assert doc["by_category"]["multi-session"]["recall@1"] == 0.5  # two gold turns
    sessions = doc["session_level"]
    assert sessions["main"]["n"] == 3 and sessions["main"]["recall@3"] == 1.0
    assert sessions["abstention"]["n"] == 1
    config = doc["config"]
    assert config["format"] == "longmemeval" and config["namespaces"] == 5
    assert config["turns"] == 24 and config["questions"] == 4
    assert [f["kind"] for f in config["data_fixes"]] == ["time_unparsed", "dropped_absent",
                                                         "no_gold"]


def test_the_random_floor_is_below_keyword_search() -> None:
    doc = run_json("--mode", "keyword")
    floor = doc["config"]["self_test"]["random_floor"]
    assert floor["n"] == 3
    assert floor["mrr"] < doc["main"]["mrr"]


def test_table_shows_both_levels_and_records_carry_sessions(tmp_path: Path) -> None:
    result = invoke(str(MINI), "--embedder", "fake", "--mode", "keyword", "--bootstrap", "50",
                    "--out", str(tmp_path))
    assert result.exit_code == 0, result.stderr
    assert "main (without abstention)" in result.stdout
    assert "sessions (each ranking lifted to its sessions" in result.stdout
    assert "for 24 turns" in result.stdout
    assert "data fix: e4_nogold: no_gold" in result.stderr
    records = [json.loads(line) for line in
               (tmp_path / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["kind"] for r in records] == ["single-session-user", "multi-session",
                                            "abstention", "single-session-preference"]
    assert records[1]["session_gold"] == ["answer_e2a", "answer_e2b"]
    # each ranked turn's session, deduplicated: both answer sessions come first
    ranked = records[1]["session_ranking"]
    assert set(ranked[:2]) == {"answer_e2a", "answer_e2b"} and len(set(ranked)) == len(ranked)
    assert records[2]["main"] is False and records[0]["question_type"] == "single-session-user"


def test_limit_items() -> None:
    doc = run_json("--mode", "keyword", "--limit-items", "2")
    assert doc["config"]["namespaces"] == 2 and doc["main"]["n"] == 2
    assert doc["abstention"]["n"] == 0 and doc["abstention"]["recall@10"] is None


# -- items the real release could hold ---------------------------------------------------------


def item(qid: str, sessions: int = 3, *, answer: int | None = 1, mark: Any = True,
         question: str = "Which camera did I buy?") -> dict[str, Any]:
    """An item of ``sessions`` two-turn sessions; session ``answer`` holds the camera."""
    ids = [f"{qid}_s{n}" for n in range(sessions)]
    talk = [[{"role": "user", "content": f"topic {n} hiking lakes number {n}"},
             {"role": "assistant", "content": f"reply {n} about trails"}]
            for n in range(sessions)]
    if answer is not None:
        talk[answer][0] = {"role": "user", "content": "I bought a Sony camera yesterday."}
        if mark is not None:
            talk[answer][0]["has_answer"] = mark
    return {"question_id": qid, "question_type": "single-session-user", "question": question,
            "answer": "a Sony", "question_date": "2023/06/01 (Thu) 10:00",
            "haystack_session_ids": ids,
            "haystack_dates": [f"2023/05/{10 + n} (Sat) 02:21" for n in range(sessions)],
            "haystack_sessions": talk,
            "answer_session_ids": [ids[answer]] if answer is not None else []}


def test_answer_sessions_without_marked_turns_are_scored_by_session_only() -> None:
    ds = parse_longmemeval([item("a"), item("b_abs", mark=None)])
    unmarked = ds.data.conversations[1].questions[0]
    assert unmarked.gold == () and ds.parent_gold[("b_abs", 0)] == ("b_abs_s1",)
    assert ds.kinds[("b_abs", 0)] == "abstention"
    assert ds.n_scorable == 2
    assert [q.conversation_id for q in ds.parent_only()] == ["b_abs"]
    assert [(f.where, f.kind) for f in ds.fixes] == [("b_abs", "session_gold_only")]


def test_has_answer_strings_are_read_as_booleans_and_logged() -> None:
    ds = parse_longmemeval([item("a", mark="true"), item("b", mark="yes"),
                            item("c", mark="false")])
    gold = {c.id: c.questions[0].gold for c in ds.data.conversations}
    assert gold == {"a": ("a_s1:0",), "b": (), "c": ()}
    assert [(f.where, f.kind) for f in ds.fixes] == [
        ("a", "not_boolean"), ("b", "not_boolean"), ("b", "session_gold_only"),
        ("c", "not_boolean"), ("c", "session_gold_only")]
    assert "'true'/'false' read as booleans" in ds.fixes[0].detail


def test_head_keeps_only_the_fixes_of_the_items_it_keeps() -> None:
    ds = parse_longmemeval([item("a"), item("b", mark=None), item("c", answer=None)])
    assert [f.kind for f in ds.fixes] == ["session_gold_only", "no_gold"]
    assert ds.head(1).fixes == () and [f.where for f in ds.head(2).fixes] == ["b"]


def _run(dataset: Any, rankings: dict[str, list[str]], k: int) -> Any:
    from remem.eval.harness import QuestionResult, RunResult, RunTiming
    from remem.eval.metrics import question_metrics

    results = tuple(
        QuestionResult(q, tuple(rankings[c.id]),
                       question_metrics(rankings[c.id], q.gold) if q.gold else {}, 1.0)
        for c in dataset.data.conversations for q in c.questions)
    return RunResult(results, RunTiming(0.0, (1.0,) * len(results)), k)


def test_session_cut_offs_beyond_the_ranked_sessions_are_not_reported() -> None:
    from remem.eval.labelled import parent_depths, summarize_labelled, withheld_cutoffs

    ds = parse_longmemeval([item("a", sessions=12), item("b", sessions=4, mark=None)])
    # a: 4 turns from 3 of its 12 sessions at k 4; b: all 4 of its sessions (complete)
    run = _run(ds, {"a": ["a_s1:0", "a_s1:1", "a_s0:0", "a_s2:0"],
                    "b": ["b_s1:0", "b_s0:0", "b_s2:0", "b_s3:1"]}, k=4)
    assert parent_depths(ds, run) == {"main": 3, "single-session-user": 3, "abstention": None}
    sessions = summarize_labelled(ds, run, resamples=0, level="parent")["main"]
    assert sessions.n == 2 and sessions.mean["recall@1"] == 1.0
    assert sessions.mean["recall@3"] == 1.0 and sessions.mean["mrr"] == 1.0
    for metric in ("recall@5", "recall@10", "recall@25", "recall@50", "hit@5", "hit@10",
                   "ndcg@10"):
        assert sessions.mean[metric] is None, metric
    assert withheld_cutoffs(parent_depths(ds, run))["main"][0] == "recall@5"
    turns = summarize_labelled(ds, run, resamples=0)["main"]
    assert turns.n == 1 and turns.mean["recall@50"] == 1.0  # b has no turn gold
    # a ranking shorter than k is all the retriever had: every cut-off is exact
    short = _run(ds, {"a": ["a_s1:0"], "b": ["b_s1:0"]}, k=4)
    assert summarize_labelled(ds, short, resamples=0, level="parent")["main"].mean[
        "recall@50"] == 1.0


def test_the_command_scores_session_only_items_and_blanks_shallow_cut_offs(
        tmp_path: Path) -> None:
    path = tmp_path / "lme.json"
    path.write_text(json.dumps([item("a", sessions=8), item("b", sessions=8, mark=None)]),
                    encoding="utf-8")
    args = [str(path), "--embedder", "fake", "--backend", "memory", "--bootstrap", "0",
            "--mode", "vector", "--k", "4"]
    result = invoke(*args, "--out", str(tmp_path / "run"))
    assert result.exit_code == 0, result.stderr
    assert "data fix: b: session_gold_only" in result.stderr
    assert "at the session level, a cut-off is reported only where" in result.stderr
    assert "warning: session level: " in result.stderr and "a deeper --k" in result.stderr
    sessions_table = result.stdout.split("sessions (each ranking")[1]
    assert "\u2013" in sessions_table.splitlines()[3]  # the main row
    assert "\u2013: deeper than the sessions the top 4 turns of some question reach" in " ".join(
        sessions_table.split())
    doc = json.loads((tmp_path / "run" / "summary.json").read_text(encoding="utf-8"))
    assert doc["main"]["n"] == 1 and doc["session_level"]["main"]["n"] == 2
    assert doc["session_level"]["main"]["recall@50"] is None
    assert doc["session_level"]["main"]["mrr"] is not None
    assert doc["main"]["recall@50"] is not None
    assert doc["config"]["questions_session_only"] == 1
    records = [json.loads(line) for line in
               (tmp_path / "run" / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["conversation"] for r in records] == ["a", "b"]
    assert records[1]["metrics"]["recall@10"] is None and records[1]["gold"] == []
    assert records[1]["session_gold"] == ["b_s1"] and len(records[1]["ranking"]) == 4


def test_a_file_without_any_gold_exits_2_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "lme.json"
    path.write_text(json.dumps([item("a", answer=None)]), encoding="utf-8")
    result = CliRunner().invoke(cli, ["eval", "longmemeval", str(path), "--embedder", "fake",
                                      "--json"])
    assert result.exit_code == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"error: {path}: no question can be scored: every question was excluded (1 no_gold;")
    assert "has_answer: true" in lines[0]
