"""Thread storage at 10,000 messages: append, tail reads and forks on a SQLite file.

    python benchmarks/threads.py                      # 10,000 messages, about a minute
    python benchmarks/threads.py --messages 2000 --quick
    python benchmarks/threads.py --out benchmarks/results/threads.json --durability full
    python benchmarks/threads.py --backend postgres    # a local embedded PostgreSQL
    python benchmarks/threads.py --backend postgres --dsn postgresql://user@host/db

Targets (issue 7): with a 10,000-message thread, append p95 <= 5 ms, loading the last 50
messages p95 <= 10 ms, forking at any checkpoint p95 <= 50 ms.

The thread is built turn by turn (one user + one assistant message per append, so one
checkpoint per turn, as a chat loop would save it). Then, each timed call by itself:

* ``append``: one message appended to the long thread (it keeps growing while measured).
* ``last 50``: the last 50 messages at the head.
* ``last 50 @ old``: the last 50 messages as of a random earlier checkpoint (time travel).
* ``fork``: a fork at a random checkpoint (a new thread sharing the history).
* ``fork + last 50``: reading the last 50 messages of such a fork, across two branches.
* ``context 4k``: the prompt view trimmed to 4,000 tokens (reads only the tail it needs).
* ``load all``: every message of the thread, parsed.
* ``copy``: a copy at a random checkpoint (duplicates the messages; for comparison).

The table goes to stdout; ``--out`` writes the figures, the machine and the settings as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from remem.messages import Message
from remem.threads import ThreadStore

TARGETS_MS = {"append": 5.0, "last 50": 10.0, "fork": 50.0}
WORDS = ["plan", "the", "trip", "to", "Lisbon", "next", "spring", "with", "a", "stop", "in",
         "Porto", "for", "wine", "我们下个月去北京看长城", "then", "back", "home", "by", "train"]


def text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def timed(fn: Callable[[], object], repeat: int) -> tuple[list[float], list[float]]:
    """Wall-clock and CPU milliseconds per call (this thread's CPU time: what the call costs
    by itself, whatever else the machine is running), ``repeat`` calls."""
    wall, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.thread_time()
        fn()
        cpu.append((time.thread_time() - start_cpu) * 1000)
        wall.append((time.perf_counter() - start) * 1000)
    return wall, cpu


def stats(times: tuple[list[float], list[float]]) -> dict[str, float]:
    wall, cpu = times
    return {"n": len(wall), "p50_ms": float(np.percentile(wall, 50)),
            "p95_ms": float(np.percentile(wall, 95)), "max_ms": max(wall),
            "cpu_p50_ms": float(np.percentile(cpu, 50)),
            "cpu_p95_ms": float(np.percentile(cpu, 95))}


def run(opts: argparse.Namespace, path: str, schema: str) -> dict[str, Any]:
    rng = random.Random(7)
    results: dict[str, Any] = {}
    with ThreadStore(path, durability=opts.durability, schema=schema) as threads:
        chat = threads.create(metadata={"user_id": "bench"},
                              messages=[Message.system("You are a helpful assistant.")])
        start = time.perf_counter()
        turns = (opts.messages - 1) // 2
        for n in range(turns):
            chat.append([Message.user(f"#{n} " + text(rng, 25)),
                         Message.assistant(text(rng, 45))])
        if chat.info().length < opts.messages:
            chat.append(Message.user(text(rng, 25)))
        build = time.perf_counter() - start
        results["build"] = {"messages": chat.info().length, "seconds": build,
                            "messages_per_s": chat.info().length / build}
        checkpoints = chat.checkpoints(limit=opts.messages)
        ids = [cp.id for cp in checkpoints]
        repeat = opts.repeat

        results["last 50"] = stats(timed(lambda: chat.messages(last=50), repeat))
        results["last 50 @ old"] = stats(timed(
            lambda: chat.messages(checkpoint_id=rng.choice(ids), last=50), repeat))
        forks: list[str] = []
        results["fork"] = stats(timed(
            lambda: forks.append(chat.fork(rng.choice(ids)).id), max(20, repeat // 2)))
        for fork_id in forks[:50]:
            threads.append(fork_id, Message.user("a fork's own message"))
        results["fork + last 50"] = stats(timed(
            lambda: threads.messages(rng.choice(forks[:50]), last=50), repeat))
        results["context 4k"] = stats(timed(lambda: chat.context(max_tokens=4000), repeat // 2))
        results["load all"] = stats(timed(chat.messages, 5))
        results["copy"] = stats(timed(lambda: chat.copy(rng.choice(ids)), 5))
        # appends last: they grow the thread past the size the reads were measured at
        results["append"] = stats(timed(
            lambda: chat.append(Message.user(text(rng, 25))), repeat))
    results["file_mb"] = Path(path).stat().st_size / 1e6 if Path(path).exists() else 0.0
    return results


def table(results: dict[str, Any]) -> str:
    lines = [f"{'metric':<16} {'n':>5} {'p50 ms':>9} {'p95 ms':>9} {'max ms':>9} "
             f"{'cpu p95':>9} {'target (p95)':>14}", "-" * 77]
    for name, value in results.items():
        if not isinstance(value, dict) or "p95_ms" not in value:
            continue
        target = TARGETS_MS.get(name)
        mark = "" if target is None else (
            f"<= {target:g} {'ok' if value['p95_ms'] <= target else 'MISS'}")
        lines.append(f"{name:<16} {value['n']:>5} {value['p50_ms']:>9.3f} "
                     f"{value['p95_ms']:>9.3f} {value['max_ms']:>9.3f} "
                     f"{value['cpu_p95_ms']:>9.3f} {mark:>14}")
    build = results["build"]
    lines.append(f"built {build['messages']} messages in {build['seconds']:.1f} s "
                 f"({build['messages_per_s']:.0f} messages/s, one append per turn); "
                 + (f"file {results['file_mb']:.1f} MB" if results["file_mb"] else "PostgreSQL"))
    lines.append(f"load average (1 min) before/after: {results['load_before']:.2f} / "
                 f"{results['load_after']:.2f} on {os.cpu_count()} CPUs (wall-clock "
                 "percentiles include time spent waiting for a CPU; 'cpu' does not)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=500, help="calls per metric")
    parser.add_argument("--quick", action="store_true", help="--repeat 100")
    parser.add_argument("--durability", choices=("normal", "full"), default="normal",
                        help="SQLite only")
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--dsn", default=None,
                        help="PostgreSQL to use (default: start an embedded one)")
    parser.add_argument("--tmpdir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None, help="write JSON here")
    opts = parser.parse_args(argv)
    if opts.quick:
        opts.repeat = 100
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(dir=opts.tmpdir) as tmp:
        if opts.backend == "sqlite":
            results = run(opts, str(Path(tmp) / "threads.db"), "remem")
        elif opts.dsn:
            results = run(opts, opts.dsn, f"bench_threads_{os.getpid()}")
        else:
            from remem.store.postgres.local import LocalPostgres

            server = LocalPostgres(Path(tmp) / "pg")
            try:
                results = run(opts, server.start(), "remem")
            finally:
                server.stop()
    results["load_before"], results["load_after"] = load_before, os.getloadavg()[0]
    print(table(results))
    if opts.out is not None:
        doc = {"benchmark": "threads", "settings": {"messages": opts.messages,
                                                    "repeat": opts.repeat,
                                                    "backend": opts.backend,
                                                    "durability": opts.durability},
               "machine": {"python": sys.version.split()[0], "platform": platform.platform(),
                           "cpus": os.cpu_count(), "sqlite": sqlite3.sqlite_version},
               "targets_ms": TARGETS_MS, "results": results}
        opts.out.parent.mkdir(parents=True, exist_ok=True)
        opts.out.write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()
