"""The formation benchmark's multi-session scenario, as a correctness test (speed is
measured by benchmarks/formation.py itself)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from remem.embed import FakeEmbedder

ROOT = Path(__file__).resolve().parents[2]


def load_benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location("formation_benchmark",
                                                  ROOT / "benchmarks" / "formation.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_scenario_ends_in_the_expected_state(tmp_path: Path) -> None:
    bench = load_benchmark()
    run = bench.scripted_run("test", FakeEmbedder(), 2, 30, tmp_path)
    assert run.problems == []
    assert run.current == bench.EXPECTED_CURRENT
    summary = run.summary()
    assert summary["max_calls_per_add"] == 1
    assert summary["llm_calls"] == 2 * (len(bench.SCENARIO) - 1)  # the exact repeat is free
    repeat = [row for row in run.rows if row.text == "I have a dog called Biscuit."]
    assert [row.llm_calls for row in repeat] == [1, 0, 1, 0]


def test_the_scripted_model_fails_loudly_when_retrieval_misses(tmp_path: Path) -> None:
    bench = load_benchmark()
    step = bench.Step(1, "I moved to Porto", updates=(("Lives in Lisbon", "Lives in Porto"),))
    from remem.llm import ChatRequest
    from remem.messages import Message

    request = ChatRequest((Message.user(
        "Existing memories (refer to them by id):\n(none)\n\nConversation:\nuser: hi\n\n"
        "Answer with the changes (inserts, updates, deletes) as JSON."),))
    try:
        bench.scripted_answer(step)(request)
    except bench.ScenarioError as exc:
        assert "'Lives in Lisbon' was not among the memories shown" in str(exc)
    else:
        raise AssertionError("a missed memory must fail the step")
