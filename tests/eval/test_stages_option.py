"""``--stages`` of ``remem eval memdaily`` and ``remem eval longmemeval``: the option shared with
``eval locomo``, each command's default, the stages reaching the store, and usage errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from remem.cli import cli
from remem.cli.eval import LONGMEMEVAL_STAGES, MEMDAILY_STAGES
from remem.eval.store_retriever import STAGES

DATA = Path(__file__).parent.parent / "data" / "eval"
FILES = {"memdaily": DATA / "memdaily_zh.json", "longmemeval": DATA / "longmemeval_mini.json"}
DEFAULTS = {"memdaily": MEMDAILY_STAGES, "longmemeval": LONGMEMEVAL_STAGES}


def invoke(command: str, *args: str) -> Result:
    return CliRunner().invoke(cli, ["eval", command, str(FILES[command]), "--embedder", "fake",
                                    "--bootstrap", "0", "--backend", "memory", *args])


def run_json(command: str, *args: str) -> dict[str, Any]:
    result = invoke(command, "--json", *args)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


@pytest.mark.parametrize("command", ["memdaily", "longmemeval"])
def test_the_default_stages_are_reported_and_valid(command: str) -> None:
    assert set(DEFAULTS[command]) <= set(STAGES)
    doc = run_json(command)
    assert doc["config"]["stages"] == list(DEFAULTS[command])
    assert doc["main"]["n"] == 6 if command == "memdaily" else doc["main"]["n"] == 3


@pytest.mark.parametrize("command", ["memdaily", "longmemeval"])
def test_chosen_stages_are_reported_in_json_and_table(command: str) -> None:
    doc = run_json(command, "--stages", "sessions, timing,questions")
    assert doc["config"]["stages"] == ["sessions", "timing", "questions"]
    assert run_json(command, "--stages", "none")["config"]["stages"] == []
    result = invoke(command, "--stages", "timing,questions", "--mode", "keyword")
    assert result.exit_code == 0, result.stderr
    assert "stages timing,questions" in result.stdout


@pytest.mark.parametrize("command", ["memdaily", "longmemeval"])
def test_an_unknown_stage_is_a_usage_error_naming_the_option(command: str) -> None:
    result = invoke(command, "--stages", "sessions,bogus")
    assert result.exit_code == 2
    assert "--stages" in result.stderr and "'bogus'" in result.stderr
    assert "sessions, speakers, timing" in result.stderr  # the valid names


def test_the_questions_stage_reaches_the_store(tmp_path: Path) -> None:
    # a question turn that repeats the question's words outranks the answer without the stage
    data = [{
        "tid": 0,
        "message_list": [
            {"mid": 0, "message": "你养的那只猫叫什么名字吗", "time": "2024-03-01 09:00"},
            {"mid": 1, "message": "今天下雨了", "time": "2024-03-02 09:00"},
            {"mid": 2, "message": "我养的那只猫叫年糕", "time": "2024-03-03 09:00"},
        ],
        "question_list": [{"qid": 0, "question": "我养的那只猫叫什么名字", "answer": "年糕",
                           "target_step_id": [2]}],
    }]
    path = tmp_path / "cat.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")

    def rank(stages: str) -> list[str]:
        result = CliRunner().invoke(cli, [
            "eval", "memdaily", str(path), "--embedder", "fake", "--bootstrap", "0",
            "--mode", "keyword", "--json", "--stages", stages, "--out", str(tmp_path / stages)])
        assert result.exit_code == 0, result.stderr
        record = json.loads((tmp_path / stages / "questions.jsonl").read_text(
            encoding="utf-8").splitlines()[0])
        ranking: list[str] = record["ranking"]
        return ranking

    assert rank("none")[:2] == ["0:0", "0:2"]
    assert rank("questions")[0] == "0:2"  # the question turn (ending in 吗) loses its lead


def _roles(pools: int, *extra: str) -> dict[str, Any]:
    """The JSON report of ``remem eval memdaily`` on the first ``pools`` pools of zh_roles,
    keyword mode (the fake embedder is never asked), in memory."""
    roles = Path(__file__).parent.parent / "data" / "zh_roles.json"
    result = CliRunner().invoke(cli, [
        "eval", "memdaily", str(roles), "--mode", "keyword", "--embedder", "fake", "--backend",
        "memory", "--bootstrap", "0", "--limit-pools", str(pools), "--json", *extra])
    assert result.exit_code == 0, result.stderr
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def test_the_memdaily_default_lifts_the_trajectory_a_question_is_about() -> None:
    # two pools of zh_roles (7 users each): scoring trajectories as sessions puts the asking
    # user's messages first more often than plain ranking does
    plain, staged = _roles(2, "--stages", "none"), _roles(2, "--stages", "sessions")
    assert staged["config"]["stages"] == ["sessions"] and plain["main"]["n"] == 42
    assert staged["main"]["recall@10"] > plain["main"]["recall@10"]
    assert staged["main"]["mrr"] > plain["main"]["mrr"]


def test_the_memdaily_default_finds_facts_asked_for_by_condition() -> None:
    # the first four pools (simple and conditional questions): messages naming the same person
    # pool the question terms they match, so the fact about "the friend who works in
    # Hangzhou" climbs; simple questions keep their recall
    sessions, default = _roles(4, "--stages", "sessions"), _roles(4)
    assert default["config"]["stages"] == ["sessions", "mentions", "subjects"]
    kinds = default["by_category"]
    assert kinds["conditional"]["recall@10"] > sessions["by_category"]["conditional"]["recall@10"]
    assert kinds["simple"]["recall@10"] == sessions["by_category"]["simple"]["recall@10"]


def test_subjects_takes_how_many_lead_on_the_store_path() -> None:
    from remem.eval.store_retriever import stage_ranking
    from remem.retrieval.subjects import Subjects

    assert stage_ranking(["sessions", "subjects:4"]).subjects == Subjects(field="session", take=4)
    assert stage_ranking(["subjects"]).subjects == Subjects(field="session")
    doc = run_json("memdaily", "--stages", "sessions,mentions,subjects:3")
    assert doc["config"]["stages"] == ["sessions", "mentions", "subjects:3"]
    for bad in ("subjects:0", "subjects:x", "sessions:0.5"):
        result = invoke("memdaily", "--stages", bad)
        assert result.exit_code == 2 and bad in result.stderr, result.stderr
