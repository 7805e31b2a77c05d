"""``remem eval memdaily``: the MemDaily loader (pools, gold, ambiguity, fixes) and the command
on the synthetic English and Chinese files in tests/data/eval/."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from remem.cli import cli
from remem.errors import InvalidInputError
from remem.eval.memdaily import load_memdaily, parse_loose_time, parse_memdaily

DATA = Path(__file__).parent.parent / "data" / "eval"
EN = DATA / "memdaily_en.json"
ZH = DATA / "memdaily_zh.json"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, ["eval", "memdaily", *args], catch_exceptions=False)


def run_json(path: Path, *args: str) -> dict[str, Any]:
    result = invoke(str(path), "--embedder", "fake", "--bootstrap", "0", "--json", *args)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


# -- the loader ---------------------------------------------------------------------------------


def test_a_list_file_is_one_pool_with_one_memory_per_message() -> None:
    ds = load_memdaily(EN)
    assert [c.id for c in ds.data.conversations] == ["memdaily_en"]
    pool = ds.data.conversations[0]
    assert len(pool.turns) == 12
    first = pool.turns[0]
    assert first.dia_id == "0:0" and first.speaker == "user" and first.session == 1
    assert first.text == "My sister Priya just started a job as a marine biologist in Halifax."
    assert first.event_time == datetime(2024, 3, 4, 8, 10, tzinfo=UTC)
    # the unreadable time takes the one before it, and is logged
    assert pool.turns[-1].event_time == pool.turns[-2].event_time
    assert pool.now == datetime(2024, 3, 8, 20, 0, tzinfo=UTC)


def test_gold_from_list_scalar_and_string_targets() -> None:
    ds = load_memdaily(EN)
    gold = {q.question: q.gold for q in ds.data.conversations[0].questions}
    assert gold["Where does Priya work as a marine biologist?"] == ("0:0",)
    assert gold["When is the dentist appointment for my cracked molar?"] == ("0:1",)  # scalar
    assert gold["Which vaccine does the beagle Biscuit need?"] == ("1:0",)  # "0"
    assert gold["Which city is cousin Tomasz flying in from, and which class did I sign up "
                "for at the community centre?"] == ("1:2", "1:3")  # deduplicated
    assert gold["How much is the Aviva car insurance premium?"] == ("2:0",)  # 7 dropped


def test_a_question_asked_in_several_trajectories_is_excluded_and_counted() -> None:
    ds = load_memdaily(EN)
    texts = [q.question for q in ds.data.conversations[0].questions]
    assert "What should I remember about my family?" not in texts
    assert "What did I say about the weather?" not in texts  # no gold left
    assert len(texts) == 6
    kinds = [f.kind for f in ds.fixes]
    assert kinds.count("ambiguous") == 2
    assert sorted(set(kinds)) == ["ambiguous", "deduplicated", "dropped_absent", "no_gold",
                                  "scalar_target", "time_unparsed"]
    ambiguous = [f for f in ds.fixes if f.kind == "ambiguous"]
    assert [f.where for f in ambiguous] == ["memdaily_en tid 0 qid 2", "memdaily_en tid 1 qid 2"]


def test_pooling_by_trajectory_keeps_the_repeated_questions() -> None:
    ds = load_memdaily(EN, pool="trajectory")
    assert [c.id for c in ds.data.conversations] == ["memdaily_en#0", "memdaily_en#1",
                                                     "memdaily_en#2"]
    assert "ambiguous" not in [f.kind for f in ds.fixes]
    assert sum(len(c.questions) for c in ds.data.conversations) == 8


def test_an_object_file_has_one_pool_per_list_and_kinds_from_its_top_keys() -> None:
    ds = load_memdaily(ZH)
    assert [c.id for c in ds.data.conversations] == ["simple/roles", "conditional/roles"]
    assert ds.kind_order == ("simple", "conditional")
    assert ds.data.conversations[0].turns[0].event_time == datetime(2024, 4, 1, 8, 39,
                                                                    tzinfo=UTC)
    assert [f.kind for f in ds.fixes] == ["scalar_target", "ambiguous", "ambiguous"]


def test_a_question_type_field_overrides_the_file_key() -> None:
    data = [{"tid": 0, "message_list": [{"mid": 0, "message": "a"}, {"mid": 1, "message": "b"}],
             "question_list": [{"qid": 0, "question": "q?", "answer": "a",
                                "target_step_id": [0], "type": "paraphrase"},
                               {"qid": 1, "question": "r?", "answer": "b",
                                "target_step_id": [1]},
                               {"qid": 2, "question": "s?", "answer": "b",
                                "target_step_id": [1], "kind": "update"}]}]
    ds = parse_memdaily(data, name="f")
    assert list(ds.kinds.values()) == ["paraphrase", "all", "update"]


def test_the_merged_release_qa_field_is_read() -> None:
    data = {"noisy": {"events": [{"tid": 0, "message_list": [{"mid": 0, "message": "x"}],
                                  "QA": {"qid": 0, "question": "x?", "answer": "x",
                                         "target_step_id": [0]}}]}}
    ds = parse_memdaily(data)
    assert ds.data.conversations[0].questions[0].gold == ("0:0",)
    assert ds.kinds == {("noisy/events", 0): "noisy"}


@pytest.mark.parametrize(("data", "message"), [
    ("nope", "expected a JSON list of trajectories"),
    ([{"tid": 0, "question_list": []}], "'message_list' must be a list"),
    ([{"message_list": [{"mid": 0}], "question_list": []}], "missing 'message'"),
    ([{"message_list": [{"mid": 0, "message": "a"}, {"mid": 0, "message": "b"}],
       "question_list": []}], "mid '0' is used by more than one message"),
    ([{"message_list": [], "question_list": [{"question": "q"}]}],
     "missing 'target_step_id'"),
    ([{"tid": 1, "message_list": [], "question_list": []},
      {"tid": 1, "message_list": [], "question_list": []}], "tid '1' is used by more than one"),
    ({"a": 3}, "no trajectories found (expected a JSON list of trajectories, or an object "
               "whose values are such lists); found only a (a number)"),
    ({"a": {"message_list": []}}, "a: expected a list of trajectories, got one trajectory"),
])
def test_malformed_files_name_the_place_and_the_rule(data: Any, message: str) -> None:
    with pytest.raises(InvalidInputError, match=r"f\.json") as info:
        parse_memdaily(data, source="f.json")
    assert message in str(info.value)


@pytest.mark.parametrize(("text", "expected"), [
    ("2024年04月01日 周一 08:39", datetime(2024, 4, 1, 8, 39, tzinfo=UTC)),
    ("2024年4月1日", datetime(2024, 4, 1, tzinfo=UTC)),
    ("2024年04月01日\uff08周一\uff0908\uff1a39", datetime(2024, 4, 1, 8, 39, tzinfo=UTC)),
    ("2023/05/20 (Sat) 02:21", datetime(2023, 5, 20, 2, 21, tzinfo=UTC)),
    ("2024-03-04 08:10", datetime(2024, 3, 4, 8, 10, tzinfo=UTC)),
    ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
    ("2024年04月01日 周一 08:39:20", datetime(2024, 4, 1, 8, 39, tzinfo=UTC)),
    ("2024年04月01日 上午 08:39", datetime(2024, 4, 1, 8, 39, tzinfo=UTC)),
    ("2024年04月01日 下午 3点20分", datetime(2024, 4, 1, 15, 20, tzinfo=UTC)),
    ("2024年04月01日 晚上 9点", datetime(2024, 4, 1, 21, 0, tzinfo=UTC)),
    ("2024年04月01日 下午 13:05", datetime(2024, 4, 1, 13, 5, tzinfo=UTC)),
    ("2024年13月01日", None),
    ("yesterday", None),
])
def test_loose_times(text: str, expected: datetime | None) -> None:
    assert parse_loose_time(text) == expected


# -- the command --------------------------------------------------------------------------------


def test_keyword_mode_finds_every_gold_message_of_the_english_file() -> None:
    doc = run_json(EN, "--mode", "keyword")
    assert doc["main"]["n"] == 6
    assert doc["main"]["recall@5"] == 1.0
    assert doc["main"]["mrr"] >= 0.9
    assert list(doc["by_category"]) == ["all"]
    config = doc["config"]
    assert config["format"] == "memdaily" and config["pool"] == "file"
    assert config["namespaces"] == 1 and config["messages"] == 12
    assert config["questions"] == 6 and config["questions_scored"] == 6
    kinds = [f["kind"] for f in config["data_fixes"]]
    assert kinds.count("ambiguous") == 2
    # the floor is far below: 12 messages, so random R@1 is about 1/12
    assert config["self_test"]["random_floor"]["recall@1"] < 0.5


def test_chinese_file_by_question_type_in_keyword_mode() -> None:
    doc = run_json(ZH, "--mode", "keyword", "--backend", "memory")
    assert doc["main"]["n"] == 6
    assert doc["by_category"]["simple"]["n"] == 4
    assert doc["by_category"]["conditional"]["n"] == 2
    assert doc["main"]["recall@3"] == 1.0


def test_pool_by_trajectory_asks_the_repeated_question_in_each() -> None:
    doc = run_json(ZH, "--mode", "keyword", "--pool", "trajectory")
    assert doc["main"]["n"] == 8
    assert doc["config"]["namespaces"] == 4
    # "what are my plans" shares no word with its evidence: keyword search cannot find it
    assert doc["by_category"]["conditional"]["recall@10"] == 0.5


def test_table_fixes_and_out_files(tmp_path: Path) -> None:
    result = invoke(str(EN), "--embedder", "fake", "--mode", "vector", "--bootstrap", "100",
                    "--out", str(tmp_path / "run"))
    assert result.exit_code == 0, result.stderr
    assert "data fix: memdaily_en tid 0 qid 2: ambiguous:" in result.stderr
    assert "main " in result.stdout and "random (seed 0)" in result.stdout
    assert "for 12 messages" in result.stdout and "8 data fixes" in result.stdout
    records = [json.loads(line) for line in
               (tmp_path / "run" / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(records) == 6
    assert records[0]["tid"] == "0" and records[0]["qid"] == "0"
    assert records[0]["gold"] == ["0:0"] and records[0]["kind"] == "all"
    summary = json.loads((tmp_path / "run" / "summary.json").read_text(encoding="utf-8"))
    assert summary["main"]["n"] == 6


def test_a_byte_order_mark_is_read_past(tmp_path: Path) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(
        [{"message_list": [{"mid": 0, "message": "a"}], "question_list": []}]).encode())
    assert len(load_memdaily(path).data.conversations[0].turns) == 1


def test_a_byte_order_mark_is_read_past_in_locomo_files_too(tmp_path: Path) -> None:
    from remem.eval.locomo import load_locomo

    source = DATA / "locomo_facts_mini.json"
    path = tmp_path / "bom_locomo.json"
    path.write_bytes(b"\xef\xbb\xbf" + source.read_bytes())
    assert load_locomo(path).conversations == load_locomo(source).conversations


def test_limit_pools() -> None:
    doc = run_json(ZH, "--mode", "keyword", "--limit-pools", "1")
    assert doc["config"]["namespaces"] == 1 and doc["main"]["n"] == 4
    assert list(doc["by_category"]) == ["simple"]


def test_a_malformed_file_exits_2_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('[{"tid": 0}]', encoding="utf-8")
    result = CliRunner().invoke(cli, ["eval", "memdaily", str(path), "--embedder", "fake"])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "bad.json" in lines[0] and "message_list" in lines[0]


# -- files the real releases could hold -----------------------------------------------------------


def trajectory(tid: Any, targets: Any = (1,), *, question: str = "Who is my boss?",
               mids: tuple[Any, ...] = (0, 1, 2), qid: Any = 0) -> dict[str, Any]:
    """A three-message trajectory asking one question about ``targets``."""
    texts = ("I am thirty.", "My boss is Li Si.", "I fly to Shanghai tomorrow.")
    return {"tid": tid,
            "message_list": [{"mid": mid, "message": text, "time": f"2024-04-0{n + 1} 08:00"}
                             for n, (mid, text) in enumerate(zip(mids, texts, strict=True))],
            "question_list": [{"qid": qid, "question": question, "answer": "x",
                               "target_step_id": list(targets) if isinstance(targets, tuple)
                               else targets}]}


def test_a_value_beside_the_pools_is_skipped_and_logged() -> None:
    ds = parse_memdaily({"version": "1.0", "meta": {"n": 2}, "simple": {"roles": [
        trajectory(0)]}})
    assert [c.id for c in ds.data.conversations] == ["simple/roles"]
    assert [(f.where, f.kind, f.namespace) for f in ds.fixes] == [
        ("version", "skipped", None), ("meta/n", "skipped", None)]
    assert ds.data.conversations[0].questions[0].gold == ("0:1",)
    assert ds.kind_order == ("simple",)  # "version" and "meta" are no question types


def test_a_trajectory_without_questions_stays_as_distractors() -> None:
    bare = trajectory(1)
    del bare["question_list"]
    null_qa = {**trajectory(2), "QA": None}
    del null_qa["question_list"]
    ds = parse_memdaily([trajectory(0), bare, null_qa], name="p")
    pool = ds.data.conversations[0]
    assert len(pool.turns) == 9 and [q.gold for q in pool.questions] == [("0:1",)]
    assert [(f.where, f.kind) for f in ds.fixes] == [("p tid 1", "no_questions"),
                                                     ("p tid 2", "no_questions")]


@pytest.mark.parametrize(("targets", "gold"), [
    ([[1]], ("0:1",)), ([[0, 1]], ("0:0", "0:1")), ([[0], 2], ("0:0", "0:2"))])
def test_nested_targets_are_flattened_one_level(targets: Any, gold: tuple[str, ...]) -> None:
    ds = parse_memdaily([trajectory(0, targets)])
    assert ds.data.conversations[0].questions[0].gold == gold
    assert [f.kind for f in ds.fixes] == ["flattened"]


def test_integral_floats_are_read_as_ints_wherever_an_id_is() -> None:
    ds = parse_memdaily([trajectory(0.0, [1.0], mids=(0.0, 1.0, 2.0), qid=3.0),
                         trajectory(1, [2.0], question="Where do I fly?")], name="p")
    pool = ds.data.conversations[0]
    assert [t.dia_id for t in pool.turns[:3]] == ["0:0", "0:1", "0:2"]
    assert [q.gold for q in pool.questions] == [("0:1",), ("1:2",)]
    assert ds.extras[("p", 0)] == {"tid": "0", "qid": "3"}
    # a float target is logged; an int target matching an int mid is not (it is the format)
    assert [(f.kind, f.detail) for f in ds.fixes] == [
        ("rewritten", "target 1.0 read as mid 1"), ("rewritten", "target 2.0 read as mid 2")]
    assert parse_memdaily([trajectory(0, [1])]).fixes == ()


def test_head_keeps_only_the_fixes_of_the_pools_it_keeps() -> None:
    data = {"version": 1, "a": {"x": [trajectory(0, 1)]}, "b": {"x": [trajectory(0, [[1]])]}}
    ds = parse_memdaily(data)
    assert [f.kind for f in ds.fixes] == ["skipped", "scalar_target", "flattened"]
    assert [f.kind for f in ds.head(1).fixes] == ["skipped", "scalar_target"]


def test_limit_pools_reports_the_fixes_of_the_run(tmp_path: Path) -> None:
    path = tmp_path / "two.json"
    path.write_text(json.dumps({"a": {"x": [trajectory(0, 1)]},
                                "b": {"x": [trajectory(0, [[1]])]}}), encoding="utf-8")
    result = invoke(str(path), "--embedder", "fake", "--backend", "memory", "--bootstrap", "0",
                    "--mode", "keyword", "--limit-pools", "1")
    assert result.exit_code == 0, result.stderr
    assert "flattened" not in result.stderr and "1 data fixes" in result.stdout
    doc = run_json(path, "--backend", "memory", "--mode", "keyword", "--limit-pools", "1")
    assert [f["kind"] for f in doc["config"]["data_fixes"]] == ["scalar_target"]


@pytest.mark.parametrize("json_flag", [False, True])
def test_a_file_whose_questions_are_all_excluded_exits_2(tmp_path: Path,
                                                         json_flag: bool) -> None:
    path = tmp_path / "amb.json"
    path.write_text(json.dumps([trajectory(0), trajectory(1)]), encoding="utf-8")
    result = CliRunner().invoke(cli, ["eval", "memdaily", str(path), "--embedder", "fake",
                                      "--backend", "memory", "--bootstrap", "0",
                                      *(["--json"] if json_flag else [])])
    assert result.exit_code == 2 and result.stdout == ""
    errors = [line for line in result.stderr.splitlines() if not line.startswith("data fix:")]
    assert len(errors) == 1
    assert errors[0].startswith(f"error: {path}: no question can be scored: every question "
                                "was excluded (2 ambiguous;")
    assert "--pool trajectory keeps it" in errors[0]
