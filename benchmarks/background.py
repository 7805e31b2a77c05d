"""The background job queue: workers draining no-op jobs, and the overhead of one job.

    python benchmarks/background.py                        # SQLite and an embedded PostgreSQL
    python benchmarks/background.py --backend sqlite --jobs 2000
    python benchmarks/background.py --out benchmarks/results/background.json
    python benchmarks/background.py --dsn postgresql://user@host/db

Targets (issue 17): 4 worker processes on PostgreSQL and 2 on SQLite drain 5,000 no-op jobs,
each run exactly once, at >= 1,000 jobs/s (PostgreSQL) and >= 500 jobs/s (SQLite);
enqueue + claim + complete of one job p95 <= 5 ms on SQLite.

* ``drain``: the jobs are enqueued first (not timed); then N worker processes, started and
  connected before the clock starts, claim up to ``--batch`` jobs at a time, run the no-op
  handler on each and record the batch's results in one transaction
  (:meth:`remem.background.worker.Worker.run_batch`) until the queue is empty. Commits are
  durable (the embedded PostgreSQL runs with fsync on; SQLite in WAL, synchronous=NORMAL).
  Exactly once: every job is ``done`` with one attempt, and the workers' own counts of
  handler runs add up to the number of jobs.
* ``overhead``: one process, one job at a time: enqueue, claim, complete (three
  transactions), timed together.
* ``reads`` (SQLite): what counting reads as uses costs a ``Memory.search`` over 1,000
  memories: the same searches with the access recorder on and off, alternating blocks;
  wall-clock and this thread's CPU per search, and whether every hit was counted.

The table goes to stdout; ``--out`` writes the figures, the machine and the settings as JSON.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from remem.background import JobQueue, NewJob
from remem.background.extraction import NOOP, noop_handler
from remem.background.worker import Worker

TARGETS = {"sqlite": 500.0, "postgres": 1000.0}
OVERHEAD_P95_MS = 5.0


def _worker(location: str, schema: str, batch: int, ready: Any, go: Any, out: Any) -> None:
    queue = JobQueue.open(location, schema=schema)
    queue.setup()
    worker = Worker(queue, {NOOP: noop_handler}, lease=60)
    queue.stats()  # connect before the clock starts
    ready.release()
    go.wait()
    while jobs := queue.claim(worker.name, limit=batch, lease=60, kinds=[NOOP]):
        worker.run_batch(jobs)  # one commit records the batch's results
    out.put((worker.name, worker.done, worker.failed))
    queue.close()


def drain(location: str, schema: str, jobs: int, workers: int, batch: int) -> dict[str, Any]:
    with JobQueue.open(location, schema=schema) as queue:
        for n in range(jobs):
            queue.enqueue(NewJob(NOOP, {"n": n}))
    ctx = mp.get_context("spawn")
    ready, go, out = ctx.Semaphore(0), ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(location, schema, batch, ready, go, out))
             for _ in range(workers)]
    for proc in procs:
        proc.start()
    for _ in procs:
        ready.acquire()
    start = time.perf_counter()
    go.set()
    counts = [out.get() for _ in procs]
    seconds = time.perf_counter() - start
    for proc in procs:
        proc.join()
    with JobQueue.open(location, schema=schema) as queue:
        done = queue.list_jobs(status="done", limit=1000)  # a sample, for attempts
        stats = queue.stats().counts
        attempts = _attempts(queue)
    ran = sum(c[1] for c in counts)
    return {"jobs": jobs, "workers": workers, "batch": batch, "seconds": seconds,
            "jobs_per_s": jobs / seconds, "handler_runs": ran,
            "failed_attempts": sum(c[2] for c in counts), "status_counts": stats,
            "max_attempts_seen": attempts, "exactly_once": ran == jobs
            and stats == {"done": jobs} and attempts == 1 and len(done) > 0}


def _attempts(queue: JobQueue) -> int:
    with queue.storage.transaction(False) as tx:
        found = tx.find(tenant=None, status="done", kind=None, thread_id=None, limit=10**7)
    return max((job.attempts for job in found), default=0)


def overhead(location: str, schema: str, repeat: int) -> dict[str, Any]:
    """Wall-clock and CPU milliseconds of enqueue + claim + complete (this thread's CPU time:
    what the three transactions cost by themselves, whatever else the machine runs)."""
    wall, cpu = [], []
    with JobQueue.open(location, schema=f"{schema}_overhead") as queue:
        for n in range(repeat + 20):
            start, start_cpu = time.perf_counter(), time.thread_time()
            job = queue.enqueue(NewJob(NOOP, {"n": n}))
            [claimed] = queue.claim("bench", kinds=[NOOP])
            assert claimed.id == job.id and queue.complete(job.id, "bench", {"n": n})
            if n >= 20:  # warm-up left out
                wall.append((time.perf_counter() - start) * 1000)
                cpu.append((time.thread_time() - start_cpu) * 1000)
    ms, cpu_ms = np.array(wall), np.array(cpu)
    return {"repeat": repeat, **{f"p{q}_ms": float(np.percentile(ms, q)) for q in (50, 95, 99)},
            **{f"cpu_p{q}_ms": float(np.percentile(cpu_ms, q)) for q in (50, 95, 99)}}


def reads(path: str, repeat: int) -> dict[str, Any]:
    """Milliseconds per ``Memory.search`` (10 hits) with read counting on and off."""
    from remem import FakeEmbedder, Memory
    from remem.background.access import AccessRecorder
    from remem.memory import observers

    timings: dict[str, dict[str, list[float]]] = {m: {"wall": [], "cpu": []}
                                                  for m in ("on", "off")}
    with Memory.open(path, embedder=FakeEmbedder()) as mem:
        ids = [mem.add(f"note {n} about topic {n % 50} and item {n * 7 % 101}", user_id="u",
                       infer=False).changes[0].memory.id for n in range(1000)]
        hits = 0
        for block in range(2 * 10):
            mode = "on" if block % 2 == 0 else "off"
            observers.set_observer_factory(
                (lambda store: AccessRecorder(store)) if mode == "on" else None)
            for n in range(repeat // 10):
                start, start_cpu = time.perf_counter(), time.thread_time()
                found = mem.search(f"topic {n % 50}", user_id="u", limit=10)
                timings[mode]["wall"].append((time.perf_counter() - start) * 1000)
                timings[mode]["cpu"].append((time.thread_time() - start_cpu) * 1000)
                hits += len(found) if mode == "on" else 0
            mem.background.settle()
        counted = sum(uses for uses, _ in mem.background.usage(ids).values())
        observers.set_observer_factory(lambda store: AccessRecorder(store))
    out: dict[str, Any] = {"repeat": repeat, "hits": hits, "counted": counted}
    for mode, found in timings.items():
        for kind, values in found.items():
            for q in (50, 95):
                out[f"{mode}_{kind}_p{q}_ms"] = float(np.percentile(np.array(values), q))
    return out


def table(results: dict[str, Any]) -> str:
    lines = [f"{'backend':<10} {'workers':>7} {'jobs':>6} {'seconds':>8} {'jobs/s':>8} "
             f"{'target':>7} {'once':>5}   overhead p50 / p95 / p99 ms (target p95); cpu p95"]
    for backend, row in results["backends"].items():
        d, o = row["drain"], row["overhead"]
        target = TARGETS[backend]
        lines.append(
            f"{backend:<10} {d['workers']:>7} {d['jobs']:>6} {d['seconds']:>8.2f} "
            f"{d['jobs_per_s']:>8.0f} {target:>7.0f} {'yes' if d['exactly_once'] else 'NO':>5}"
            f"   {o['p50_ms']:.2f} / {o['p95_ms']:.2f} / {o['p99_ms']:.2f}"
            + (f" ({OVERHEAD_P95_MS:g})" if backend == "sqlite" else "")
            + f"; {o['cpu_p95_ms']:.2f}")
    r = results.get("reads")
    if r:
        lines.append(
            f"Memory.search, 1,000 memories, read counting on / off: wall p50 "
            f"{r['on_wall_p50_ms']:.2f} / {r['off_wall_p50_ms']:.2f} ms, p95 "
            f"{r['on_wall_p95_ms']:.2f} / {r['off_wall_p95_ms']:.2f} ms; cpu p50 "
            f"{r['on_cpu_p50_ms']:.2f} / {r['off_cpu_p50_ms']:.2f} ms; hits counted "
            f"{r['counted']} of {r['hits']}")
    lines.append(f"load average (1 min) before/after: {results['load_before']:.2f} / "
                 f"{results['load_after']:.2f} on {os.cpu_count()} CPUs")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--sqlite-workers", type=int, default=2)
    parser.add_argument("--postgres-workers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=16, help="jobs per claim")
    parser.add_argument("--repeat", type=int, default=1000, help="overhead samples")
    parser.add_argument("--reads", type=int, default=1000,
                        help="searches per mode in the read-counting cost (0: skip)")
    parser.add_argument("--dsn", default=None, help="PostgreSQL (default: an embedded one)")
    parser.add_argument("--tmpdir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None, help="write JSON here")
    opts = parser.parse_args(argv)
    results: dict[str, Any] = {"backends": {}, "load_before": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory(dir=opts.tmpdir) as tmp:
        if opts.backend in ("sqlite", "both"):
            path = str(Path(tmp) / "jobs.db")
            results["backends"]["sqlite"] = {
                "drain": drain(path, "remem", opts.jobs, opts.sqlite_workers, opts.batch),
                "overhead": overhead(str(Path(tmp) / "overhead.db"), "remem", opts.repeat)}
            if opts.reads:
                results["reads"] = reads(str(Path(tmp) / "reads.db"), opts.reads)
        if opts.backend in ("postgres", "both"):
            server = None
            dsn = opts.dsn
            if dsn is None:
                from remem.store.postgres.local import LocalPostgres

                server = LocalPostgres(Path(tmp) / "pg", settings={"max_connections": "100"})
                dsn = server.start()
            schema = f"bench_jobs_{os.getpid()}"
            try:
                results["backends"]["postgres"] = {
                    "drain": drain(dsn, schema, opts.jobs, opts.postgres_workers, opts.batch),
                    "overhead": overhead(dsn, schema, opts.repeat)}
            finally:
                if server is not None:
                    server.stop()
    results["load_after"] = os.getloadavg()[0]
    print(table(results))
    if opts.out is not None:
        doc = {"benchmark": "background",
               "settings": {"jobs": opts.jobs, "batch": opts.batch, "repeat": opts.repeat,
                            "reads": opts.reads,
                            "sqlite_workers": opts.sqlite_workers,
                            "postgres_workers": opts.postgres_workers},
               "machine": {"python": sys.version.split()[0], "platform": platform.platform(),
                           "cpus": os.cpu_count(), "sqlite": sqlite3.sqlite_version},
               "targets": {"jobs_per_s": TARGETS, "overhead_p95_ms_sqlite": OVERHEAD_P95_MS},
               "results": results}
        opts.out.parent.mkdir(parents=True, exist_ok=True)
        opts.out.write_text(json.dumps(doc, indent=2))


if __name__ == "__main__":
    main()
