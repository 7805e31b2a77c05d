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

MINI = Path(__file__).parent / "data" / "eval" / "longmemeval_mini.json"


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
