"""Web inspector benchmark: server time per page of ``/ui`` with ``--memories`` memories
(default 100,000) in one tenant on SQLite (target: every first page under 300 ms).

Run from the repository root::

    python benchmarks/ui.py --memories 100000 --out benchmarks/results/ui.json
    python benchmarks/ui.py --memories 10000 --calls 10       # a quick look

Setup (not timed): a server (``remem.server.create_app``) on a SQLite file with vectors from
the deterministic fake embedder; one tenant holds ``--memories`` memories spread over
``--users`` users (imported as ``remem export`` lines: each record and its ``add`` event),
one memory edited ``--edits`` times (its history timeline), and a thread of ``--messages``
messages with a fork. A logged-in session (the login form, as a browser) then asks each page
``--warmup`` times untimed and ``--calls`` times timed, in process through Starlette's
TestClient, so the time is the server's plus the in-process client's (no network). CPU time
is shown too: wall-clock swings on a shared, loaded machine. For the memory pages the same
search is also timed on the ``Memory`` facade alone, and for the namespace tree its store
calls (a page of namespaces and their counts): the rest is the page. It prints a table and
writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from remem.embed import FakeEmbedder
from remem.memory.records import current_filter
from remem.memory.requests import SearchRequest
from remem.server import ServerConfig, create_app
from remem.server.state import Principal
from remem.store import BaseStore, CountOp

TARGET_MS = 300.0
TOPICS = ("tea", "coffee", "Berlin", "Lisbon", "running", "piano", "Python", "cats", "sushi",
          "hiking", "jazz", "chess", "gardening", "photography", "Rust", "yoga", "cycling")
VERBS = ("likes", "dislikes", "started", "stopped", "talked about", "plans", "bought")


def _lines(count: int, users: int, rng: random.Random, now: float) -> list[str]:
    """Export lines of ``count`` memories (record + add event each) over ``users`` users."""
    lines: list[str] = []
    for number in range(count):
        user = f"user{number % users:04d}"
        memory_id = f"mem_bench{number:08d}"
        at = now - (count - number) * 30.0
        text = (f"{user} {rng.choice(VERBS)} {rng.choice(TOPICS)} and "
                f"{rng.choice(TOPICS)} (note {number})")
        namespace = ["memories", "user", user]
        record = {"type": "memory", "id": memory_id, "kind": "fact", "schema": "Fact",
                  "content": text, "text": text, "status": "current", "valid_at": at,
                  "valid_until": None, "recorded_at": at, "invalid_at": None,
                  "event_time": at, "source": {"thread_id": "t-bench", "message_ids": [],
                                               "input_hash": None},
                  "content_hash": "", "version": 1, "metadata": {}, "supersedes": None,
                  "superseded_by": None}
        lines.append(json.dumps({"memory": record, "namespace": namespace, "key": memory_id,
                                 "created_at": at, "updated_at": at}))
        lines.append(json.dumps({"event": {
            "type": "memory_event", "id": f"evt_bench{number:08d}", "memory_id": memory_id,
            "namespace": namespace, "op": "add", "before": None, "after": record, "at": at,
            "actor": "bench", "reason": "", "thread_id": "t-bench", "message_ids": [],
            "change_id": f"chg_bench{number:08d}", "undoes": None, "metadata": {}}}))
    return lines


def _tree(store: BaseStore) -> list[object]:
    """The store's part of the namespace tree page: 21 namespaces, then 20 exact counts."""
    found = store.list_namespaces(prefix=("memories",), limit=21)
    return store.batch([CountOp(ns, filter=current_filter()) for ns in found[:20]])


def _stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50": round(statistics.median(ordered), 1), "p95": round(p95, 1),
            "max": round(ordered[-1], 1)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Build the server and its data, time every page, return the figures."""
    rng = random.Random(11)
    with tempfile.TemporaryDirectory(dir=args.tmpdir) as directory:
        app = create_app(ServerConfig(db=os.path.join(directory, "ui.db"),
                                      embedder=FakeEmbedder(), mcp=False))
        state = app.state.remem
        try:
            started = time.perf_counter()
            token = state.keys.create("bench")[0]
            memory = state.memory_for(Principal("bench"))
            lines = _lines(args.memories, args.users, rng, time.time())
            for start in range(0, len(lines), 20_000):
                memory.import_(lines[start:start + 20_000])
                print(f"imported {min(start + 20_000, len(lines)) // 2:,} memories",
                      file=sys.stderr)
            edited = memory.add("The bench user drinks green tea", user_id="user0000",
                                infer=False).changes[0].memory.id
            for edit in range(args.edits):
                memory.update(edited, f"The bench user drinks {TOPICS[edit % len(TOPICS)]} "
                                      f"(edit {edit})")
            undo_event = memory.history(edited)[-1].id
            threads = state.threads_for(Principal("bench"))
            threads.create("t-bench", messages=[f"message {i} about {rng.choice(TOPICS)}"
                                                for i in range(args.messages)])
            threads.fork("t-bench", new_thread_id="t-bench-fork")
            setup_s = time.perf_counter() - started

            client = TestClient(app, base_url="http://127.0.0.1")
            login = client.get("/ui/login")
            csrf = re.search(r'name="csrf_token" value="([^"]+)"', login.text)
            assert csrf is not None
            response = client.post("/ui/login", data={"csrf_token": csrf.group(1),
                                                      "api_key": token},
                                   follow_redirects=False)
            assert response.status_code == 303, response.text
            user_ns = "ns=memories&ns=user&ns=user0007"
            pages = {
                "memories (newest first)": "/ui/memories",
                "memories of one user": f"/ui/memories?{user_ns}",
                "search keyword": "/ui/memories?q=green+tea&mode=keyword",
                "search hybrid": "/ui/memories?q=likes+jazz+and+chess",
                "search hybrid + recency": "/ui/memories?q=Lisbon+trips&recency_days=30",
                "search, page 3": "/ui/memories?q=piano&offset=40",
                "namespaces (with counts)": "/ui/namespaces",
                "memory + history": f"/ui/memories/{edited}",
                "memory as_of": f"/ui/memories/{edited}?as_of=2000-01-01T00:00",
                "undo confirmation": f"/ui/memories/{edited}/undo/{undo_event}",
                "threads": "/ui/threads",
                "thread": "/ui/threads/t-bench",
                "thread fork": "/ui/threads/t-bench-fork",
                "jobs": "/ui/jobs",
                "blocks": "/ui/blocks",
                "files": "/ui/files",
                "prompts": "/ui/prompts",
                "approvals": "/ui/approvals",
                "graph search (empty graph)": "/ui/graph?user=user0007&q=tea",
                "dashboard": "/ui/dashboard",
            }
            # the same searches on the facade alone: what the store costs, the rest is the page
            facade = {
                "memories (newest first)": {},
                "memories of one user": {"user_id": "user0007"},
                "search keyword": {"query": "green tea", "mode": "keyword"},
                "search hybrid": {"query": "likes jazz and chess"},
                "search hybrid + recency": {"query": "Lisbon trips",
                                            "recency_half_life": 30 * 86_400.0},
                "search, page 3": {"query": "piano", "offset": 40},
            }
            anonymous = TestClient(app, base_url="http://127.0.0.1")
            rows: dict[str, Any] = {}
            for name, url in [("login form", "/ui/login?next=/ui/memories"),
                              *pages.items()]:
                browser = anonymous if name == "login form" else client
                wall: list[float] = []
                cpu: list[float] = []
                for call in range(args.warmup + args.calls):
                    begin, begin_cpu = time.perf_counter(), time.process_time()
                    page = browser.get(url, follow_redirects=False)
                    if call >= args.warmup:
                        wall.append((time.perf_counter() - begin) * 1000)
                        cpu.append((time.process_time() - begin_cpu) * 1000)
                    assert page.status_code == 200, (name, page.status_code, page.text[:300])
                rows[name] = {"url": url, "bytes": len(page.content), "wall_ms": _stats(wall),
                              "cpu_ms": _stats(cpu)}
                if name in facade or name == "namespaces (with counts)":
                    request = SearchRequest.of(limit=20, **facade.get(name, {}))
                    search_cpu: list[float] = []
                    for _ in range(args.calls):
                        begin_cpu = time.process_time()
                        if name in facade:
                            memory.run(request)
                        else:  # what the tree asks the store: a page and its counts
                            _tree(memory.store)
                        search_cpu.append((time.process_time() - begin_cpu) * 1000)
                    rows[name]["search_cpu_ms"] = _stats(search_cpu)
                print(f"timed {name}", file=sys.stderr)
        finally:
            state.close()
    return {"memories": args.memories, "users": args.users, "edits": args.edits,
            "messages": args.messages, "calls": args.calls, "setup_s": round(setup_s, 1),
            "target_ms": TARGET_MS, "pages": rows, "python": platform.python_version(),
            "machine": platform.machine(), "cpus": os.cpu_count(),
            "load_average": list(os.getloadavg())}


def main(argv: list[str] | None = None) -> int:
    """Parse the options, run, print the table, write the JSON."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--messages", type=int, default=500)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--tmpdir", default=None, help="where the SQLite file goes")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    figures = run(args)
    print(f"\n{figures['memories']:,} memories over {figures['users']} users, SQLite; "
          f"{figures['calls']} calls per page; load average {figures['load_average'][0]:.1f} "
          f"on {figures['cpus']} CPUs")
    print("| page | p50 ms | p95 ms | max ms | CPU p50 ms "
          "| of which the search or counts, CPU p50 ms | KB | under 300 ms (p95) |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for name, row in figures["pages"].items():
        wall, cpu = row["wall_ms"], row["cpu_ms"]
        search = row.get("search_cpu_ms", {}).get("p50", "")
        print(f"| {name} | {wall['p50']} | {wall['p95']} | {wall['max']} | {cpu['p50']} | "
              f"{search} | {row['bytes'] / 1024:.1f} | "
              f"{'yes' if wall['p95'] < TARGET_MS else 'NO'} |")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
