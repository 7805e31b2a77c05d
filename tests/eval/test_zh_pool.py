"""The large Chinese development pool (``tests/data/make_zh_pool.py``): the generator writes the
same bytes every time, the file loads as one MemDaily pool with no data fixes, its six question
types have 100 questions each, aggregative gold is 4-8 messages (a month's, for a question about
one month), and every gold message exists and names the person its question is about.

The file is generated into a temporary directory (0.9 MB: not committed). Recall on it is
measured with the local model by ``remem eval memdaily`` (docs/eval.md, "A large pool"), not
here; the one run here uses the fake embedder in keyword mode, to check the report's types.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from remem.cli import cli
from remem.eval.memdaily import load_memdaily

GENERATOR = Path(__file__).parent.parent / "data" / "make_zh_pool.py"
KINDS = ("simple", "conditional", "comparative", "aggregative", "post_processing", "noisy")
#: the bytes docs/eval.md's tables were measured on: a change to the generator that moves it
#: must re-measure those tables (and README.md's counts) and update this
SHA256 = "59ac64409b62bb8c1b93ac8981c1bf11d8838bf450205548d3731903dcd8b4e0"


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("make_zh_pool", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The file as the documented command writes it."""
    path = tmp_path_factory.mktemp("zh_pool") / "zh_pool.json"
    assert _generator().main([str(path)]) == 0
    return path


@pytest.fixture(scope="module")
def raw(written: Path) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(written.read_text(encoding="utf-8"))
    return data


def test_the_generator_is_deterministic(written: Path) -> None:
    again = _generator()
    assert again.encode(again.build()) == written.read_bytes()
    assert hashlib.sha256(written.read_bytes()).hexdigest() == SHA256


def test_it_has_the_documented_shape(raw: list[dict[str, Any]]) -> None:
    messages = [m for t in raw for m in t["message_list"]]
    questions = [q for t in raw for q in t["question_list"]]
    assert len(raw) == 250 and len({t["user"] for t in raw}) == 250
    assert len(messages) == 4350
    assert Counter(q["kind"] for q in questions) == dict.fromkeys(KINDS, 100)
    gold = Counter((q["kind"], len(q["target_step_id"])) for q in questions)
    assert {n for kind, n in gold if kind == "aggregative"} == {4, 5, 6, 7, 8}
    assert {n for kind, n in gold if kind == "simple"} == {1}
    assert {n for kind, n in gold if kind == "comparative"} == {2}
    assert {n for kind, n in gold if kind == "conditional"} == {2, 3, 4}
    assert {n for kind, n in gold if kind in ("post_processing", "noisy")} <= {1, 2, 3, 4}
    assert len({q["question"] for q in questions}) == len(questions)


def test_it_loads_as_one_pool_with_every_question_scored(written: Path,
                                                          raw: list[dict[str, Any]]) -> None:
    labelled = load_memdaily(written)
    (pool,) = labelled.data.conversations  # the whole file is one namespace
    assert labelled.fixes == ()  # no gold dropped, no question ambiguous
    assert len(pool.turns) == 4350 and len(pool.questions) == 600
    assert Counter(labelled.kinds.values()) == dict.fromkeys(KINDS, 100)
    ids = {turn.dia_id for turn in pool.turns}
    asked = {(t["tid"], q["question"]): q for t in raw for q in t["question_list"]}
    for question in pool.questions:
        tid = labelled.extras[(pool.id, question.index)]["tid"]
        q = asked[(tid, question.question)]
        assert set(question.gold) <= ids
        assert question.gold == tuple(f"{tid}:{mid}" for mid in q["target_step_id"])


def _trigrams(text: str) -> set[str]:
    return {text[i:i + 3] for i in range(len(text) - 2)}


def test_every_gold_message_names_its_person_and_times_increase(
        raw: list[dict[str, Any]]) -> None:
    for t in raw:
        texts = [m["message"] for m in t["message_list"]]
        assert [m["mid"] for m in t["message_list"]] == list(range(len(texts)))
        times = [m["time"] for m in t["message_list"]]
        assert times == sorted(times)
        assert all(q["time"] > times[-1] for q in t["question_list"])
        for q in t["question_list"]:
            # a question names its person, or picks them by a condition ("...的那位")
            assert t["user"] in q["question"] or "的那位" in q["question"], q["question"]
            gold = [texts[mid] for mid in q["target_step_id"]]
            for text in gold:
                # a child's class names the child (three characters), whose introduction,
                # also gold, names the parent
                assert t["user"] in text or any(
                    t["user"] in other and _trigrams(text) & _trigrams(other)
                    for other in gold), (q["question"], text)
        # a person's name is said in no other trajectory
        others = (m["message"] for o in raw if o is not t for m in o["message_list"])
        assert not any(t["user"] in text for text in others), t["user"]


def test_a_question_about_one_month_has_that_months_messages_as_gold(
        raw: list[dict[str, Any]]) -> None:
    scoped = 0
    for t in raw:
        for q in t["question_list"]:
            months = {int(t["message_list"][mid]["time"][5:7]) for mid in q["target_step_id"]}
            asked = int(q["time"][5:7])
            said = re.search(r"这个月|上个月|(\d+)月份", q["question"])
            if q["kind"] != "aggregative" or said is None:
                continue
            scoped += 1
            want = {"这个月": asked, "上个月": asked - 1}.get(said[0]) or int(said[1])
            assert months == {want}, q["question"]
    assert scoped >= 60


def test_eval_reports_the_six_types(written: Path) -> None:
    result = CliRunner().invoke(cli, [
        "eval", "memdaily", str(written), "--embedder", "fake", "--mode", "keyword",
        "--stages", "none", "--bootstrap", "0", "--json"], catch_exceptions=False)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    report = json.loads(result.stdout)
    assert report["main"]["n"] == 600
    assert {kind: row["n"] for kind, row in report["by_category"].items()} == dict.fromkeys(
        KINDS, 100)
    assert report["config"]["namespaces"] == 1 and report["config"]["messages"] == 4350


#: the first-person pool (``--voice first``, the default seed) docs/eval.md measures
FIRST_SHA256 = "4dcdbc6a563e0f153e66e3823e5df016a03d3fa698cd3f98c6e89aadb6f911a1"


@pytest.fixture(scope="module")
def first(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("zh_pool_first") / "zh_pool_first.json"
    assert _generator().main([str(path), "--voice", "first"]) == 0
    return path


def test_the_first_person_pool_names_each_person_once_in_their_own_trajectory(
        first: Path, raw: list[dict[str, Any]]) -> None:
    assert hashlib.sha256(first.read_bytes()).hexdigest() == FIRST_SHA256
    data = json.loads(first.read_text(encoding="utf-8"))
    assert [t["user"] for t in data] == [t["user"] for t in raw]  # the same people
    said = Counter(m["message"] for t in data for m in t["message_list"])
    for t in data:
        texts = [m["message"] for m in t["message_list"]]
        # the name is said once, in an introduction, and nowhere else in the pool
        assert sum(t["user"] in text for text in texts) == 1, t["user"]
        for q in t["question_list"]:
            assert t["user"] in q["question"] or "的那位" in q["question"], q["question"]
            assert all(0 <= mid < len(texts) for mid in q["target_step_id"])
    # near-alike to the letter: many messages are said word for word by several people
    assert sum(n for n in said.values() if n > 1) > 1000
    labelled = load_memdaily(first)
    assert labelled.fixes == () and len(labelled.data.conversations[0].questions) == 600


def test_the_generator_refuses_an_unknown_voice_or_seed(tmp_path: Path) -> None:
    generator = _generator()
    assert generator.main([str(tmp_path / "x.json"), "--voice", "third"]) == 2
    assert generator.main([str(tmp_path / "x.json"), "--seed", "x"]) == 2
    assert not (tmp_path / "x.json").exists()
    with pytest.raises(ValueError, match="voice"):
        generator.build(voice="third")
