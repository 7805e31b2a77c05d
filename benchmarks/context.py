"""Context assembly benchmark: how long ``Memory.context`` takes to build a 2,000-token
context over a 10,000-memory namespace on SQLite (target: p95 <= 30 ms).

Run from the repository root::

    python benchmarks/context.py --out benchmarks/results/context.json
    python benchmarks/context.py --embedder local     # the offline model (slower setup)

Setup (not timed): a SQLite file with ``--memories`` memories for one user (stored as is,
embedded by ``--embedder``; ``--corpus`` says how they are worded, see ``_memory_texts``), a
profile document, and a thread of ``--messages`` messages with a running summary. Each timed
call is ``mem.context(query, user_id=..., thread_id=..., threads=...,
budget_tokens=--budget)`` with a query drawn from a fixed list (hybrid search:
keywords and vectors), after ``--warmup`` untimed calls. The same calls are timed for the
memory search alone and for the packing alone (over sections gathered once), so the table
shows where the time goes. It prints a table and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from remem.api import Memory
from remem.context import ContextScope, SectionOffer, pack
from remem.context.assemble import ContextRequest, resolve_sections
from remem.embed.base import Embedder
from remem.memory.records import MemoryRecord
from remem.threads import ThreadStore
from remem.tokens import DEFAULT_COUNTER

TOPICS = ("tea", "coffee", "Berlin", "Lisbon", "running", "piano", "Python", "cats", "sushi",
          "hiking", "jazz", "chess", "gardening", "photography", "Rust", "yoga", "cycling",
          "Japanese", "football", "baking")
VERBS = ("likes", "dislikes", "started", "stopped", "talked about", "plans", "bought",
         "learned", "visited", "recommended")
QUERIES = ("what do they drink in the morning: tea or coffee", "trips to Lisbon",
           "hobbies on weekends like hiking or chess", "programming in Python or Rust",
           "jazz and piano music", "sushi and baking", "football yoga and cycling",
           "what was bought recently")


def _words(rng: random.Random, count: int) -> list[str]:
    """Made-up words (consonant-vowel syllables): a vocabulary no query word dominates."""
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    return sorted({"".join(rng.choice(syllables) for _ in range(rng.randint(2, 4)))
                   for _ in range(count)})


def _memory_texts(count: int, rng: random.Random, corpus: str) -> list[str]:
    """``varied``: facts of mixed wording over a large vocabulary (names, places, things);
    ``repetitive``: every memory starts "The user" and draws from 20 topics (every query
    word matches thousands of memories: the keyword index's worst case)."""
    if corpus == "repetitive":
        return [f"The user {rng.choice(VERBS)} {rng.choice(TOPICS)} with "
                f"{rng.choice(TOPICS)} friends, note {index} from session {index // 50}"
                for index in range(count)]
    vocabulary = _words(rng, 4000)
    names = [word.capitalize() for word in vocabulary[:300]]
    return [f"{rng.choice(names)} {rng.choice(VERBS)} {rng.choice(TOPICS)} and "
            f"{' '.join(rng.sample(vocabulary, 5))} in {rng.choice(names)} "
            f"({index // 50 + 2000})" for index in range(count)]


def _embedder(name: str) -> Embedder:
    if name == "local":
        from remem.embed.local import LocalEmbedder

        return LocalEmbedder()
    from remem.embed.fake import FakeEmbedder

    return FakeEmbedder()


def _p95(timings: list[float]) -> float:
    ordered = sorted(timings)
    return round(ordered[max(0, int(len(ordered) * 0.95) - 1)], 2)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Build the store, time the calls, return the figures."""
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "context.db"
        mem = Memory.open(path, embedder=_embedder(args.embedder))
        threads = ThreadStore(path)
        started = time.perf_counter()
        texts = _memory_texts(args.memories, rng, args.corpus)
        for start in range(0, len(texts), 500):
            mem.add([{"role": "user", "content": text} for text in texts[start:start + 500]],
                    user_id="u1", infer=False)
        profile = MemoryRecord(id="prof_u1", namespace=("profiles", "u1"), kind="profile",
                               schema="Profile", content={"name": "Sam", "city": "Berlin",
                                                          "languages": ["en", "de"]})
        mem.store.put(("profiles", "u1"), profile.id, profile.to_value())
        chat = [{"role": "user" if i % 2 == 0 else "assistant",
                 "content": f"message {i} about {rng.choice(TOPICS)} and {rng.choice(TOPICS)}"}
                for i in range(args.messages)]
        threads.create("t1", messages=chat)
        threads.update_state("t1", {"summary": "The user talked about trips and hobbies. " * 8,
                                    "summary_through": args.messages // 2})
        setup = time.perf_counter() - started
        timings: list[float] = []
        result = None
        for call in range(args.warmup + args.calls):
            query = QUERIES[call % len(QUERIES)]
            begin = time.perf_counter()
            result = mem.context(query, user_id="u1", thread_id="t1", threads=threads,
                                 budget_tokens=args.budget)
            if call >= args.warmup:
                timings.append((time.perf_counter() - begin) * 1000)
        assert result is not None and result.tokens <= args.budget
        search_ms, search_cpu_ms, pack_ms = [], [], []
        request = ContextRequest(query=QUERIES[0], user_id="u1", thread_id="t1",
                                 budget_tokens=args.budget)
        sections = resolve_sections(request)
        scope = ContextScope(memory=mem, query=QUERIES[0], user_id="u1", thread_id="t1",
                             threads=threads)
        offers = [SectionOffer(section.name, section.title, section.order, section.contiguous,
                               tuple(section.gather(scope))) for section in sections]
        for call in range(args.calls):
            begin, cpu = time.perf_counter(), time.process_time()
            mem.search(QUERIES[call % len(QUERIES)], user_id="u1", limit=20)
            middle = time.perf_counter()
            # CPU time too: wall-clock figures swing on a shared, loaded machine
            search_cpu_ms.append((time.process_time() - cpu) * 1000)
            pack(offers, args.budget, DEFAULT_COUNTER)
            search_ms.append((middle - begin) * 1000)
            pack_ms.append((time.perf_counter() - middle) * 1000)
        threads.close()
        mem.close()
    return {
        "memories": args.memories, "messages": args.messages, "budget": args.budget,
        "embedder": args.embedder, "corpus": args.corpus, "calls": args.calls,
        "setup_s": round(setup, 2), "search_p95_ms": _p95(search_ms),
        "search_cpu_p95_ms": _p95(search_cpu_ms), "pack_p95_ms": _p95(pack_ms),
        "p50_ms": round(statistics.median(timings), 2),
        "p95_ms": _p95(timings),
        "max_ms": round(max(timings), 2), "tokens": result.tokens,
        "sections": result.section_tokens(), "dropped": len(result.dropped),
        "target_p95_ms": 30.0, "python": platform.python_version(),
        "machine": platform.machine(),
    }


def main(argv: list[str] | None = None) -> int:
    """Parse the options, run, print the table, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--budget", type=int, default=2_000)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--embedder", choices=("fake", "local"), default="fake")
    parser.add_argument("--corpus", choices=("varied", "repetitive"), default="varied")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    figures = run(args)
    print("| memories | corpus | budget | embedder | context p50 ms | context p95 ms "
          "| search p95 ms | packing p95 ms | tokens | target p95 |")
    print("|---:|---|---:|---|---:|---:|---:|---:|---:|---:|")
    print(f"| {figures['memories']:,} | {figures['corpus']} | {figures['budget']:,} | "
          f"{figures['embedder']} | {figures['p50_ms']} | {figures['p95_ms']} | "
          f"{figures['search_p95_ms']} | {figures['pack_p95_ms']} | {figures['tokens']} "
          "| <= 30 |")
    print(f"tokens per section: {figures['sections']}; items dropped: {figures['dropped']}; "
          f"search CPU p95 {figures['search_cpu_p95_ms']} ms; setup {figures['setup_s']} s")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
