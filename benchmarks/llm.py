"""What remem's chat clients cost on top of the model: calls against the loopback server.

    python benchmarks/llm.py                       # 300 calls per row, ~10 s
    python benchmarks/llm.py --calls 50 --out benchmarks/results/llm.json

The loopback server answers at once, so the figures are the client's own overhead (building
the request, JSON, HTTP over 127.0.0.1, parsing, usage accounting) plus the server's; a real
model adds its own latency on top. Rows:

* ``sync complete``: one call at a time through ``model.complete``.
* ``async complete``: one call at a time through ``await model.acomplete`` inside
  ``async with model`` (a kept pool).
* ``async x8 (calls/s)``: 8 concurrent tasks with ``max_concurrency=8``, throughput.
* ``generate (1 retry)``: structured output whose first answer fails validation (two calls).
* ``parse_json_answer``: the tolerant parser on an answer with a think block, prose and a fence.

The table goes to stdout; ``--out`` writes the figures and the machine as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from remem.llm import (
    AnthropicChatModel,
    ChatRequest,
    HTTPChatModel,
    OpenAIChatModel,
    generate,
    parse_json_answer,
)
from remem.messages import Message
from remem.testing import LoopbackServer

REQUEST = ChatRequest((Message.system("Be brief."), Message.user("What is the capital of France?")))


class Capital(BaseModel):
    country: str
    city: str


def _percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50_ms": 1000 * statistics.median(ordered),
            "p95_ms": 1000 * ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]}


def _timed(calls: int, step: Callable[[], object]) -> dict[str, float]:
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        step()
        samples.append(time.perf_counter() - start)
    return _percentiles(samples)


def _model(provider: str, url: str, **options: Any) -> HTTPChatModel:
    if provider == "openai":
        return OpenAIChatModel("bench", base_url=url, api_key="", **options)
    return AnthropicChatModel("bench", base_url=url, api_key="", **options)


def bench_provider(provider: str, calls: int) -> dict[str, dict[str, float]]:
    rows: dict[str, dict[str, float]] = {}
    with LoopbackServer() as server:
        server.chat.default = "Paris."
        with _model(provider, server.url) as model:
            model.complete(REQUEST)  # warm the pool
            rows["sync complete"] = _timed(calls, lambda: model.complete(REQUEST))

        async def one_at_a_time() -> dict[str, float]:
            model = _model(provider, server.url)
            samples = []
            async with model:
                await model.acomplete(REQUEST)
                for _ in range(calls):
                    start = time.perf_counter()
                    await model.acomplete(REQUEST)
                    samples.append(time.perf_counter() - start)
            model.close()
            return _percentiles(samples)

        rows["async complete"] = asyncio.run(one_at_a_time())

        async def concurrent() -> dict[str, float]:
            model = _model(provider, server.url, max_concurrency=8)
            async with model:
                await model.acomplete(REQUEST)
                start = time.perf_counter()
                await asyncio.gather(*(model.acomplete(REQUEST) for _ in range(calls)))
                elapsed = time.perf_counter() - start
            model.close()
            return {"calls_per_s": calls / elapsed}

        rows["async x8 (calls/s)"] = asyncio.run(concurrent())

        with _model(provider, server.url) as model:
            def structured() -> object:
                server.chat.add({"country": "France", "city": 7},
                                {"country": "France", "city": "Paris"})
                return generate(model, "Capital of France?", Capital)
            rows["generate (1 retry)"] = _timed(max(1, calls // 2), structured)
    return rows


def bench_parse(calls: int) -> dict[str, float]:
    answer = ("<think>The user wants the capital of France, as JSON.</think>\nSure! Here it "
              "is:\n```json\n{\"country\": \"France\", \"city\": \"Paris\"}\n```\nAnything else?")
    loops = calls * 20
    start = time.perf_counter()
    for _ in range(loops):
        parse_json_answer(answer)
    return {"us_per_answer": 1e6 * (time.perf_counter() - start) / loops}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    results: dict[str, Any] = {
        provider: bench_provider(provider, args.calls) for provider in ("openai", "anthropic")}
    results["parse_json_answer"] = bench_parse(args.calls)
    print(f"{'provider':<10} {'row':<22} {'figure':>24}")
    for provider in ("openai", "anthropic"):
        for row, figures in results[provider].items():
            shown = ", ".join(f"{k} {v:.2f}" for k, v in figures.items())
            print(f"{provider:<10} {row:<22} {shown:>24}")
    print(f"{'-':<10} {'parse_json_answer':<22} "
          f"{results['parse_json_answer']['us_per_answer']:>17.1f} us/answer")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({
            "settings": {"calls": args.calls},
            "machine": {"python": sys.version.split()[0], "platform": platform.platform()},
            "results": results}, indent=2))


if __name__ == "__main__":
    main()
