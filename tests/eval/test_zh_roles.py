"""The Chinese people-you-know set (tests/data/zh_roles.json): it loads as MemDaily pools, it
is what its generator writes, and every gold message names the person it is gold for.

Recall on it is measured by ``benchmarks/zh_bridge.py`` and ``remem eval memdaily``, not
here (it needs the local embedder over 1,700 messages).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from remem.eval.memdaily import load_memdaily

DATA = Path(__file__).parent.parent / "data"
KINDS = {"simple", "conditional", "comparative", "aggregative", "post_processing", "noisy"}


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("make_zh_roles", DATA / "make_zh_roles.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def test_the_file_is_what_the_generator_writes() -> None:
    built = _generator().build()
    assert json.loads((DATA / "zh_roles.json").read_text(encoding="utf-8")) == built


def test_it_loads_as_twelve_pools_with_no_data_fixes() -> None:
    labelled = load_memdaily(DATA / "zh_roles.json")
    pools = labelled.data.conversations
    assert len(pools) == 12
    assert all(100 <= len(pool.turns) <= 200 for pool in pools)
    assert labelled.data.n_turns >= 1200
    assert sum(len(pool.questions) for pool in pools) >= 200
    assert labelled.fixes == ()  # no question text repeats within a pool: none excluded
    assert set(Counter(labelled.kinds.values())) == KINDS


def _trigrams(text: str) -> set[str]:
    return {text[i:i + 3] for i in range(len(text) - 2)
            if all("\u4e00" <= c <= "\u9fff" for c in text[i:i + 3])}


def test_every_gold_message_is_linked_to_the_question() -> None:
    """Every name in the set is three characters: each gold message shares one with the
    question, the answer or another gold message (the generator checks the facts themselves
    when it builds, which the first test runs)."""
    data = json.loads((DATA / "zh_roles.json").read_text(encoding="utf-8"))
    questions = 0
    for pools in data.values():
        for trajectories in pools.values():
            for trajectory in trajectories:
                texts = [m["message"] for m in trajectory["message_list"]]
                for q in trajectory["question_list"]:
                    gold = [texts[mid] for mid in q["target_step_id"]]
                    assert gold and len(set(q["target_step_id"])) == len(gold), q
                    for i, text in enumerate(gold):
                        linked = _trigrams(q["question"]) | _trigrams(q["answer"]) | {
                            t for j, other in enumerate(gold) if j != i
                            for t in _trigrams(other)}
                        assert _trigrams(text) & linked, (q["question"], text)
                    questions += 1
    assert questions >= 200
