"""Procedural memory benchmark: can a prompt learn a rule from feedback?

The task: a shop assistant answers price questions. The hidden rule, which the starting prompt
does not state, is that prices are written in euros with the sign and two decimals (``€12.50``).
For each strategy the script

1. answers the training questions with the starting prompt and scores each answer against the
   rule (the score and a comment are the feedback),
2. optimizes the prompt from those trajectories (``PromptOptimizer``, committed to a registry),
3. answers held-out questions with the starting and with the optimized prompt,

and reports the held-out score before and after, the optimizer's calls and tokens, and the
time. It needs a real OpenAI-compatible (or Anthropic) model configured by ``REMEM_LLM_*`` (see
docs/llm.md); without one it prints that it was skipped and why, and exits 0.

    python benchmarks/procedural.py
    python benchmarks/procedural.py --strategies metaprompt,prompt_memory --out benchmarks/results/procedural.json
"""  # noqa: E501

from __future__ import annotations

import argparse
import json
import platform
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from remem.errors import ConfigError, RememError
from remem.llm import ChatModel, ChatRequest
from remem.llm.config import model_from_env
from remem.messages import Message
from remem.procedural import (
    STRATEGIES,
    Feedback,
    PromptOptimizer,
    PromptRegistry,
    Trajectory,
)
from remem.store import InMemoryStore

START = "You are the shop assistant of {shop}. Answer the customer's question in one sentence."

TRAIN = [
    ("blue mug", 1250), ("linen apron", 2999), ("tea towel", 800), ("oak board", 4500),
    ("steel kettle", 3475), ("glass jar", 399),
]
TEST = [
    ("wool blanket", 8900), ("paper notebook", 650), ("clay teapot", 2725),
    ("cotton bag", 1500), ("brass spoon", 1190), ("cork mat", 575),
]
_PRICE = re.compile(r"€\s?(\d+)\.(\d{2})\b")
FEEDBACK = "Prices must be written in euros with the € sign and two decimals, e.g. €12.50."


def question(item: str, cents: int) -> str:
    """A customer's question, with the price in cents as the shop's system shows it."""
    return f"How much is the {item}? (catalogue: {cents} cents)"


def score(answer: str, cents: int) -> float:
    """1.0 if the answer gives the price as €E.CC, else 0.0."""
    match = _PRICE.search(answer)
    return 1.0 if match and int(match.group(1)) * 100 + int(match.group(2)) == cents else 0.0


def answer(model: ChatModel, prompt: str, text: str) -> str:
    """The assistant's answer to ``text`` under ``prompt``."""
    request = ChatRequest((Message.system(prompt), Message.user(text)), max_tokens=200,
                          temperature=0.0, operation="task")
    return model.complete(request).text


def task_score(model: ChatModel, prompt: str, items: Sequence[tuple[str, int]]) -> float:
    """Mean score over ``items``."""
    return sum(score(answer(model, prompt, question(i, c)), c) for i, c in items) / len(items)


def run_strategy(model: ChatModel, strategy: str) -> dict[str, Any]:
    """Optimize the starting prompt with ``strategy`` and measure it before and after."""
    registry = PromptRegistry(InMemoryStore())
    registry.create("shop", START)
    start = registry.get("shop").format(shop="Ada's Kitchen")
    trajectories = []
    for item, cents in TRAIN:
        text = question(item, cents)
        reply = answer(model, start, text)
        ok = score(reply, cents)
        trajectories.append(Trajectory(
            (Message.system(start), Message.user(text), Message.assistant(reply)),
            Feedback(score=ok, comment=None if ok else FEEDBACK)))
    optimizer = PromptOptimizer(model, registry=registry, strategy=strategy,  # type: ignore[arg-type]
                                max_steps=2)
    began = time.perf_counter()
    result = optimizer.optimize("shop", trajectories, auto_commit=True)
    seconds = time.perf_counter() - began
    after = registry.get("shop").format(shop="Ada's Kitchen")
    return {
        "strategy": strategy,
        "train_score": sum(t.feedback.score or 0.0 for t in trajectories
                           if t.feedback is not None) / len(TRAIN),
        "before": task_score(model, start, TEST),
        "after": task_score(model, after, TEST),
        "calls": result.usage.calls, "input_tokens": result.usage.input_tokens,
        "output_tokens": result.usage.output_tokens, "seconds": round(seconds, 2),
        "changed": result.changed, "skipped": result.skipped, "prompt": result.new_text,
    }


def configured_model() -> tuple[ChatModel | None, str]:
    """The model of ``REMEM_LLM_*``, or ``None`` and why not."""
    try:
        model = model_from_env()
    except (ConfigError, RememError) as exc:
        return None, f"skipped: the LLM settings are invalid ({exc})"
    if model is None:
        return None, ("skipped: no real endpoint configured (set REMEM_LLM_MODEL, and "
                      "REMEM_LLM_BASE_URL / REMEM_LLM_API_KEY as needed; see docs/llm.md); "
                      "this benchmark needs a model that answers the task")
    return model, ""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--strategies", default=",".join(STRATEGIES),
                        help="comma-separated strategies (default: all)")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    args = parser.parse_args(argv)
    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    unknown = sorted(set(strategies) - set(STRATEGIES))
    if unknown:
        parser.error(f"unknown strategies {unknown}; choose from {', '.join(STRATEGIES)}")
    model, why = configured_model()
    report: dict[str, Any] = {"machine": platform.platform(), "python": platform.python_version(),
                              "task": "prices as €E.CC", "train": len(TRAIN), "test": len(TEST)}
    if model is None:
        print(why)
        report["skipped"] = why
    else:
        report["model"] = model.model
        rows = [run_strategy(model, strategy) for strategy in strategies]
        report["results"] = rows
        print(f"model: {model.model}; held-out score (of {len(TEST)} questions) before and "
              "after optimization")
        print(f"{'strategy':14} {'before':>6} {'after':>6} {'calls':>5} {'in tok':>7} "
              f"{'out tok':>7} {'seconds':>7}")
        for row in rows:
            print(f"{row['strategy']:14} {row['before']:6.2f} {row['after']:6.2f} "
                  f"{row['calls']:5d} {row['input_tokens']:7d} {row['output_tokens']:7d} "
                  f"{row['seconds']:7.1f}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
