"""Usage recording benchmark: what recording a chat model call adds to it, and how long the
dashboard and ``GET /v1/usage`` take over a year of usage rows.

Run from the repository root::

    python benchmarks/usage.py --out benchmarks/results/usage.json
    python benchmarks/usage.py --postgres postgresql://localhost/remem   # also PostgreSQL

Timed: ``UsageRecorder.record`` (one adding upsert, its own transaction) ``--calls`` times
from one thread, then from ``--threads`` threads at once (each call is what a
``RecordingChatModel`` adds to a model call), on a SQLite file and, with ``--postgres``, on
PostgreSQL; the final count is checked exact. Then a server on a SQLite file with
``--days`` days of rows for one tenant (six operations, two models, memory changes each day)
answers ``/ui/dashboard`` (30 days and 367 days) and ``/v1/usage`` (30 days) ``--requests``
times, in process through Starlette's TestClient (wall and CPU time). Prints a table and
writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from remem.background.queue import JobQueue
from remem.background.storage import PostgresJobStorage, SQLiteJobStorage
from remem.embed import FakeEmbedder
from remem.llm.base import Usage
from remem.server import ServerConfig, create_app
from remem.usage import UsageRecorder, day_of

OPERATIONS = ("extract", "reconcile", "summarize", "consolidate", "graph", "rerank")
MODELS = ("gpt-4.1-mini", "llama3.1")


def _ms(values: list[float]) -> dict[str, float]:
    values = sorted(values)
    return {"p50": round(statistics.median(values) * 1000, 2),
            "p95": round(values[int(0.95 * (len(values) - 1))] * 1000, 2),
            "max": round(values[-1] * 1000, 2)}


def time_records(recorder: UsageRecorder, calls: int, threads: int) -> dict[str, Any]:
    """Per-call latency from one thread, then throughput from ``threads`` threads."""
    one: list[float] = []
    for _ in range(calls):
        start = time.perf_counter()
        recorder.record("bench", "extract", "m", Usage(1, 100, 10))
        one.append(time.perf_counter() - start)

    def work() -> None:
        for _ in range(calls // threads):
            recorder.record("bench", "reconcile", "m", Usage(1, 100, 10))

    started = time.perf_counter()
    pool = [threading.Thread(target=work) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    elapsed = time.perf_counter() - started
    from remem.usage import day_window

    total = recorder.report(day_window(days=1), tenant="bench").total()
    expected = calls + (calls // threads) * threads
    return {"one_thread_ms": _ms(one),
            "threads": threads, "threaded_calls_per_s": round(expected / 2 / elapsed),
            "count_exact": total.calls == expected, "errors": recorder.errors}


def seed_year(recorder: UsageRecorder, days: int) -> None:
    """``days`` days of rows for tenant acme: every operation and model, and memory
    changes."""
    now = time.time()
    rows, activity = [], []
    for n in range(days):
        day = day_of(now - n * 86400)
        for i, operation in enumerate(OPERATIONS):
            for model in MODELS:
                rows.append(("acme", day, operation, model, 10 + i, 1000 * (i + 1), 100 + n))
        activity += [("acme", day, "add", 50 + n % 7), ("acme", day, "update", 5),
                     ("acme", day, "invalidate", 3)]
    recorder.storage.add_usage(rows)
    recorder.storage.add_activity(activity)


def time_pages(directory: str, days: int, requests: int) -> dict[str, Any]:
    app = create_app(ServerConfig(db=os.path.join(directory, "pages.db"),
                                  embedder=FakeEmbedder(), mcp=False))
    state = app.state.remem
    seed_year(state.usage(), days)
    token = state.keys.create("acme")[0]
    client = TestClient(app, base_url="http://127.0.0.1")
    page = client.get("/ui/login")
    csrf = page.text.split('name="csrf_token" value="')[1].split('"')[0]
    client.post("/ui/login", data={"csrf_token": csrf, "api_key": token, "next": "/ui/memories"},
                follow_redirects=False)
    headers = {"Authorization": f"Bearer {token}"}
    figures: dict[str, Any] = {}
    for name, path, extra in (("dashboard, 30 days", "/ui/dashboard", {}),
                              ("dashboard, 367 days", "/ui/dashboard?days=367", {}),
                              ("GET /v1/usage, 30 days", "/v1/usage", headers)):
        for _ in range(2):
            assert client.get(path, headers=extra).status_code == 200
        wall, cpu = [], []
        for _ in range(requests):
            start, start_cpu = time.perf_counter(), time.process_time()
            response = client.get(path, headers=extra)
            wall.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
            assert response.status_code == 200
        figures[name] = {"wall_ms": _ms(wall), "cpu_ms": _ms(cpu),
                         "bytes": len(response.content)}
    client.close()
    state.close()
    return figures


def run(args: argparse.Namespace) -> dict[str, Any]:
    directory = tempfile.mkdtemp(prefix="remem-usage-bench-")
    backends: dict[str, Any] = {}
    sqlite = UsageRecorder(JobQueue(SQLiteJobStorage(os.path.join(directory, "u.db"))),
                           owns_storage=True)
    backends["SQLite file"] = time_records(sqlite, args.calls, args.threads)
    sqlite.close()
    if args.postgres:
        storage = PostgresJobStorage(args.postgres, schema=f"usage_bench_{os.getpid()}",
                                     pool_max_size=args.threads)
        pg = UsageRecorder(JobQueue(storage), owns_storage=True)
        backends["PostgreSQL"] = time_records(pg, args.calls, args.threads)
        pg.close()
    return {"calls": args.calls, "days": args.days, "requests": args.requests,
            "record": backends, "pages": time_pages(directory, args.days, args.requests),
            "python": platform.python_version(), "cpus": os.cpu_count(),
            "load_average": list(os.getloadavg())}


def main(argv: list[str] | None = None) -> int:
    """Parse the options, run, print the tables, write the JSON."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--postgres", default=None, help="a postgresql:// DSN to time too")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    figures = run(args)
    print(f"\nload average {figures['load_average'][0]:.1f} on {figures['cpus']} CPUs")
    print("| backend | record p50 ms | p95 ms | max ms | calls/s from "
          f"{args.threads} threads | count exact |")
    print("|---|---:|---:|---:|---:|---|")
    for name, row in figures["record"].items():
        one = row["one_thread_ms"]
        print(f"| {name} | {one['p50']} | {one['p95']} | {one['max']} | "
              f"{row['threaded_calls_per_s']} | {'yes' if row['count_exact'] else 'NO'} |")
    print(f"\n| page ({args.days} days of rows) | p50 ms | p95 ms | CPU p50 ms | KB |")
    print("|---|---:|---:|---:|---:|")
    for name, row in figures["pages"].items():
        print(f"| {name} | {row['wall_ms']['p50']} | {row['wall_ms']['p95']} | "
              f"{row['cpu_ms']['p50']} | {row['bytes'] / 1024:.1f} |")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
