"""Store benchmark on PostgreSQL + pgvector: remem's PostgresStore beside LangGraph's.

Run from the repository root (``bench`` extra)::

    python benchmarks/store.py --backend postgres --sizes 10000 100000 \\
        --out benchmarks/results/store-postgres.json
    python benchmarks/store.py --backend postgres --sizes 1000000    # optional, long
    python benchmarks/store.py --backend postgres --dsn postgresql://... # your own server

Same workload as ``benchmarks/store.py`` (N clustered 384-d unit vectors over 100 namespaces,
precomputed; queries are perturbed item vectors), loaded into one embedded PostgreSQL 18 +
pgvector 0.8.6 (or ``--dsn``). Both stores are bulk-loaded without their vector index, which
is then built once and timed; the batched-put figure is measured afterwards, with the index
maintained on every insert. Recall@10 is against NumPy brute force over the same vectors.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from store import (
    DIMS,
    NAMESPACES,
    K,
    LookupEmbedder,
    Workload,
    langgraph_embed,
    make_workload,
    namespace,
    pct,
    recall,
)

LOAD_BATCH = 1000
PUT_BATCH = 500
FILTER = {"bucket": {"$lt": 2}}  # 40% of the items
EF_SWEEP = (40, 64, 100, 200, 400, 800)


def bucket(i: int) -> int:
    return (i * 7919) % 5  # independent of the namespace (i % 100)


def value(w: Workload, i: int) -> dict[str, Any]:
    return {"text": w.texts[i], "bucket": bucket(i), "n": i}


def timed_queries(search: Callable[[int], list[tuple[tuple[str, ...], str]]], n: int
                  ) -> tuple[list[float], list[list[tuple[tuple[str, ...], str]]]]:
    search(0)  # warm the connection and caches
    times, found = [], []
    for j in range(n):
        t0 = time.perf_counter_ns()
        found.append(search(j))
        times.append((time.perf_counter_ns() - t0) / 1e6)
    return times, found


def search_metrics(w: Workload, targets: np.ndarray, n_queries: int,
                   search: Callable[[tuple[str, ...], str, dict[str, Any] | None],
                                    list[tuple[tuple[str, ...], str]]]) -> dict[str, float]:
    """p50/p95 and recall@10 for: every item, one user's namespace (1%), a 40% filter."""
    queries = w.query_texts[:n_queries]
    out: dict[str, float] = {}
    everything = None
    ns_of = np.arange(w.n) % NAMESPACES
    filt_mask = np.array([bucket(i) < 2 for i in range(w.n)])
    cases: list[tuple[str, Callable[[int], tuple[str, ...]], dict[str, Any] | None]] = [
        ("all", lambda j: ("bench",), None),
        ("ns", lambda j: namespace(int(targets[j])), None),
        ("filter", lambda j: ("bench",), FILTER),
    ]
    for label, prefix, flt in cases:
        times, found = timed_queries(lambda j, p=prefix, f=flt: search(p(j), queries[j], f),
                                     n_queries)
        if label == "ns":
            hits = [recall(w, ns_of == int(targets[j]) % NAMESPACES, [queries[j]], [found[j]])
                    for j in range(n_queries)]
            r = float(np.mean(hits))
        else:
            r = recall(w, filt_mask if flt else everything, queries, found)
        p50, p95 = pct(times)
        full = float(np.mean([len(f) == K for f in found]))
        out |= {f"{label}_p50_ms": p50, f"{label}_p95_ms": p95, f"{label}_recall": r,
                f"{label}_full_k": full}
    return out


# -- remem --------------------------------------------------------------------------------------


def run_remem(dsn: str, w: Workload, targets: np.ndarray, opts: argparse.Namespace
              ) -> dict[str, Any]:
    from remem.store import IndexConfig, PutOp
    from remem.store.postgres import PostgresStore, VectorSearch

    index = IndexConfig(LookupEmbedder(w), fields=("text",))
    schema = f"bench_{w.n}"

    def store(vector: VectorSearch) -> PostgresStore:
        # keyword=False: LangGraph's store has no keyword index; compare like with like
        return PostgresStore(dsn, schema=schema, index=index, keyword=False, vector=vector,
                             statement_timeout=None, pool_max_size=4)

    m: dict[str, Any] = {}
    loader = store(VectorSearch(method="exact"))  # no HNSW index while loading
    t0 = time.perf_counter()
    for start in range(0, w.n, LOAD_BATCH):
        ids = range(start, min(start + LOAD_BATCH, w.n))
        loader.batch([PutOp(namespace(i), f"k{i}", value(w, i)) for i in ids])
    m["load_items_s"] = w.n / (time.perf_counter() - t0)
    loader.close()
    vacuum(dsn, schema)
    hnsw = store(VectorSearch(m=opts.m, ef_construction=opts.ef_construction,
                              ef_search=opts.ef_search))
    t0 = time.perf_counter()
    hnsw.setup()  # builds the HNSW index over the loaded rows
    m["hnsw_build_s"] = time.perf_counter() - t0

    def search(prefix: tuple[str, ...], query: str, flt: dict[str, Any] | None
               ) -> list[tuple[tuple[str, ...], str]]:
        return [(h.namespace, h.key) for h in hnsw.search(prefix, query=query, filter=flt,
                                                          limit=K, mode="vector")]

    m |= search_metrics(w, targets, opts.queries, search)
    m["ef_sweep"] = {}
    for ef in EF_SWEEP:
        swept = store(VectorSearch(m=opts.m, ef_construction=opts.ef_construction,
                                   ef_search=ef))
        times, found = timed_queries(
            lambda j, s=swept: [(h.namespace, h.key) for h in s.search(
                ("bench",), query=w.query_texts[j], limit=K, mode="vector")], opts.queries)
        p50, p95 = pct(times)
        m["ef_sweep"][ef] = {"p50_ms": p50, "p95_ms": p95,
                             "recall": recall(w, None, w.query_texts[:opts.queries], found)}
        swept.close()
    # batched puts of new items, the HNSW index maintained on every insert
    extra = list(range(w.n, w.n + opts.puts))
    t0 = time.perf_counter()
    for start in range(0, len(extra), PUT_BATCH):
        hnsw.batch([PutOp(namespace(i), f"k{i}", value(w, i))
                    for i in extra[start:start + PUT_BATCH]])
    m["put_batched_items_s"] = len(extra) / (time.perf_counter() - t0)
    hnsw.close()
    return m


def vacuum(dsn: str, schema: str) -> None:
    """Set the visibility map and statistics after a bulk load, as autovacuum soon would."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        for table in ("items", "vectors"):
            conn.execute(f'VACUUM ANALYZE "{schema}".{table}')  # type: ignore[arg-type]


# -- LangGraph ----------------------------------------------------------------------------------


def run_langgraph(dsn: str, w: Workload, targets: np.ndarray, opts: argparse.Namespace
                  ) -> dict[str, Any]:
    import psycopg
    from langgraph.store.base import PutOp as LGPut
    from langgraph.store.postgres import PostgresStore as LGStore

    m: dict[str, Any] = {}
    index = {"dims": DIMS, "embed": langgraph_embed(w), "fields": ["text"]}
    with LGStore.from_conn_string(dsn, index=index) as store:  # type: ignore[arg-type]
        store.setup()
        with psycopg.connect(dsn, autocommit=True) as conn:
            (definition,) = conn.execute(
                "SELECT indexdef FROM pg_indexes WHERE indexname = "
                "'store_vectors_embedding_idx'").fetchone()
            conn.execute("DROP INDEX store_vectors_embedding_idx")  # load first, as remem
        t0 = time.perf_counter()
        for start in range(0, w.n, LOAD_BATCH):
            store.batch([LGPut(namespace(i), f"k{i}", value(w, i))
                         for i in range(start, min(start + LOAD_BATCH, w.n))])
        m["load_items_s"] = w.n / (time.perf_counter() - t0)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE store")
            conn.execute("VACUUM ANALYZE store_vectors")
            t0 = time.perf_counter()
            conn.execute("SET maintenance_work_mem = '512MB'")
            conn.execute(definition)
            m["hnsw_build_s"] = time.perf_counter() - t0

        def search(prefix: tuple[str, ...], query: str, flt: dict[str, Any] | None
                   ) -> list[tuple[tuple[str, ...], str]]:
            return [(tuple(h.namespace), h.key)
                    for h in store.search(prefix, query=query, filter=flt, limit=K)]

        m |= search_metrics(w, targets, opts.queries, search)
        extra = list(range(w.n, w.n + opts.puts))
        t0 = time.perf_counter()
        for start in range(0, len(extra), PUT_BATCH):
            store.batch([LGPut(namespace(i), f"k{i}", value(w, i))
                         for i in extra[start:start + PUT_BATCH]])
        m["put_batched_items_s"] = len(extra) / (time.perf_counter() - t0)
    return m


# -- driver -------------------------------------------------------------------------------------

ROWS = [  # key, label, better, format
    ("load_items_s", "bulk load, items/s (no index)", "high", "{:,.0f}"),
    ("hnsw_build_s", "HNSW build, s", "low", "{:.1f}"),
    ("put_batched_items_s", "batched put, items/s (index maintained)", "high", "{:,.0f}"),
    ("all_p50_ms", "search all items p50, ms", "low", "{:.1f}"),
    ("all_p95_ms", "search all items p95, ms", "low", "{:.1f}"),
    ("all_recall", "search all items recall@10", "high", "{:.3f}"),
    ("ns_p50_ms", "search one namespace (1%) p50, ms", "low", "{:.1f}"),
    ("ns_p95_ms", "search one namespace (1%) p95, ms", "low", "{:.1f}"),
    ("ns_recall", "search one namespace recall@10", "high", "{:.3f}"),
    ("ns_full_k", "one namespace: share of queries with 10 results", "high", "{:.2f}"),
    ("filter_p50_ms", "filtered search (40%) p50, ms", "low", "{:.1f}"),
    ("filter_p95_ms", "filtered search (40%) p95, ms", "low", "{:.1f}"),
    ("filter_recall", "filtered search recall@10", "high", "{:.3f}"),
    ("filter_full_k", "filtered: share of queries with 10 results", "high", "{:.2f}"),
]
TARGETS = [("all_p95_ms", 15.0, "max"), ("all_recall", 0.95, "min"), ("ns_p95_ms", 10.0, "max"),
           ("ns_recall", 0.95, "min"), ("filter_p95_ms", 20.0, "max"),
           ("filter_recall", 0.95, "min"), ("put_batched_items_s", 2000.0, "min")]


def report(results: dict[str, dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=160)
    for size, by in results.items():
        table = Table(title=f"PostgreSQL store benchmark, N = {int(size):,}", title_justify="left")
        for col in ("metric", "remem", "langgraph", "remem vs langgraph"):
            table.add_column(col, justify="left" if col == "metric" else "right")
        for key, label, better, spec in ROWS:
            a, b = by.get("remem", {}).get(key), by.get("langgraph", {}).get(key)
            r = "-"
            if a is not None and b is not None and a > 0 and b > 0:
                r = f"{(a / b if better == 'high' else b / a):.1f}x"
            table.add_row(label, "n/a" if a is None else spec.format(a),
                          "n/a" if b is None else spec.format(b), r)
        console.print(table)
        sweep = by.get("remem", {}).get("ef_sweep", {})
        if sweep:
            t = Table(title="remem, search over all items by hnsw.ef_search", title_justify="left")
            for col in ("ef_search", "p50 ms", "p95 ms", "recall@10"):
                t.add_column(col, justify="right")
            for ef, r in sweep.items():
                t.add_row(str(ef), f"{r['p50_ms']:.1f}", f"{r['p95_ms']:.1f}",
                          f"{r['recall']:.3f}")
            console.print(t)
        m = by.get("remem", {})
        verdicts = []
        for key, limit, kind in TARGETS:
            v = m.get(key)
            ok = v is not None and (v <= limit if kind == "max" else v >= limit)
            verdicts.append(f"{key} {'<=' if kind == 'max' else '>='} {limit:g}: "
                            f"{'n/a' if v is None else f'{v:.3g}'} {'PASS' if ok else 'MISS'}")
        console.print("targets: " + "; ".join(verdicts))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="postgres", help=argparse.SUPPRESS)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--puts", type=int, default=2000, help="items put with the index")
    parser.add_argument("--dsn", default=None, help="your PostgreSQL (pgvector installed)")
    parser.add_argument("--m", type=int, default=16)
    parser.add_argument("--ef-construction", type=int, default=64)
    parser.add_argument("--ef-search", type=int, default=64)
    parser.add_argument("--no-langgraph", action="store_true")
    parser.add_argument("--quick", action="store_true", help="2000 items, 50 queries")
    parser.add_argument("--out", type=Path, default=None)
    opts, _ = parser.parse_known_args(argv)
    if opts.quick:
        opts.sizes, opts.queries, opts.puts = [2000], 50, 500
    server = None
    dsn = opts.dsn
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so `finally` stops the server
    if dsn is None:
        from remem.store.postgres.local import LocalPostgres

        server = LocalPostgres(Path(tempfile.mkdtemp(prefix="remem-bench-pg-")),
                               settings={"shared_buffers": "1GB", "max_wal_size": "4GB",
                                         "max_parallel_maintenance_workers": "2"})
        dsn = server.start()
    results: dict[str, dict[str, Any]] = {}
    try:
        for n in opts.sizes:
            w = make_workload(n, opts.queries, opts.puts, 0)
            targets = np.random.default_rng(7).integers(0, n, size=opts.queries)
            by: dict[str, Any] = {}
            for name, run in (("remem", run_remem), ("langgraph", run_langgraph)):
                if name == "langgraph" and (opts.no_langgraph or not _has_langgraph()):
                    continue
                db = f"{name}_{n}"
                print(f"running {name} at N={n:,} ...", file=sys.stderr, flush=True)
                t0 = time.perf_counter()
                by[name] = run(_database(dsn, db), w, targets, opts)
                print(f"  done in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
            results[str(n)] = by
            report({str(n): by})
    finally:
        if server is not None:
            server.stop()
            shutil.rmtree(server.directory, ignore_errors=True)
    if opts.out:
        opts.out.parent.mkdir(parents=True, exist_ok=True)
        doc = {"config": {"dims": DIMS, "namespaces": NAMESPACES, "k": K, "m": opts.m,
                          "ef_construction": opts.ef_construction, "ef_search": opts.ef_search,
                          "queries": opts.queries, "puts": opts.puts,
                          "filter": FILTER}, "results": results}
        opts.out.write_text(json.dumps(doc, indent=2) + "\n")
        print(f"wrote {opts.out}", file=sys.stderr)


def _has_langgraph() -> bool:
    try:
        import langgraph.store.postgres  # noqa: F401
    except ImportError:
        return False
    return True


def _database(dsn: str, name: str) -> str:
    """A fresh database ``name`` (with pgvector) on the server; its DSN."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[arg-type]
        conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
    params = conninfo_to_dict(dsn)
    params["dbname"] = name
    out = make_conninfo("", **params)
    with psycopg.connect(out, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    uri = f"postgresql://{params.get('user', 'postgres')}@{params.get('host', '127.0.0.1')}:" \
          f"{params.get('port', 5432)}/{name}"
    return uri if "password" not in params else out


if __name__ == "__main__":
    main()
