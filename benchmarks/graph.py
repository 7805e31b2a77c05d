"""The temporal graph at scale: fact search and two-hop expansion over 100k facts.

    python benchmarks/graph.py                                  # SQLite, 100k facts
    python benchmarks/graph.py --facts 20000 --entities 4000    # quicker
    python benchmarks/graph.py --postgres                       # also an embedded PostgreSQL
    python benchmarks/graph.py --out benchmarks/results/graph.json

Targets (issue 20): 100k facts and 20k entities on SQLite: fact search p95 <= 20 ms, 2-hop
expansion p95 <= 30 ms; the same on PostgreSQL.

The graph is written straight through the row layer (no model calls: ingest cost is the
model's), one fact per random pair of entities with one of 20 relations and a random topic
word, 10% of them later ended (``invalid_at``), embeddings from the deterministic fake
embedder; on PostgreSQL the tables are then vacuumed and analysed, as autovacuum does soon
after a bulk load (``--no-vacuum``: measure before that). Then, after one warm-up query
(which loads the vector cache):

* ``search``: :meth:`Graph.search` of a question naming one entity and a topic word
  (keyword + vector + graph signals, 2 hops), ``limit=10``; the vector signal goes through
  the inverted file (:mod:`remem.graph.vectors`: 100k rows are past ``ANN_MIN_ROWS``);
* ``search exact``: the same scanning every fact vector (``ann_min_rows`` above the size);
* ``search as_of``: the same as ``search`` with ``as_of`` (validity filtered in SQL);
* ``keyword+graph``: the same without an embedder;
* ``expand 2 hops``: :meth:`Graph.expand` of a random entity, ``hops=2``.

Each has wall-clock and CPU-time (this process's) percentiles: on a machine shared with other
work, waiting for a core inflates wall-clock time but not CPU time. Also measured: the first
search (it loads the vectors and scans them exactly), how long until the inverted file built
in the background is in place (the timed searches start after it), and the inverted file's
recall@10 against the exact scan over the benchmark's queries.

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

from remem.embed.fake import FakeEmbedder
from remem.graph import Graph, PostgresGraphStorage, SQLiteGraphStorage
from remem.graph.rows import Rows
from remem.graph.storage import GraphStorage

TARGETS_MS = {"search": 20.0, "expand 2 hops": 30.0}
RELATIONS = ["works with", "reports to", "mentors", "lives near", "studied with",
             "invested in", "founded", "advises", "married", "competes with", "visited",
             "wrote about", "hired", "sued", "partnered with", "funded", "met", "trained",
             "interviewed", "replaced"]
TOPICS = ["solar", "banking", "robots", "coffee", "music", "chess", "rockets", "wine",
          "genomics", "football", "cinema", "poetry", "shipping", "insurance", "mining",
          "fashion", "gaming", "climate", "law", "medicine"]
FIRST = ["ada", "bo", "cyd", "dee", "eli", "fay", "gus", "hal", "ivy", "jo", "kai", "lu",
         "max", "ned", "ola", "pia", "quin", "rex", "sam", "tia"]


def entity_name(i: int) -> str:
    return f"{FIRST[i % len(FIRST)].title()} Person{i}"


def load(storage: GraphStorage, facts: int, entities: int, dims: int, seed: int) -> float:
    rng = random.Random(seed)
    embedder = FakeEmbedder(dims)
    start = time.perf_counter()
    storage.setup()
    ns = "bench\x1f"
    names = [entity_name(i) for i in range(entities)]
    ids: list[int] = []
    from remem.retrieval.tokenize import DefaultTokenizer

    tokenizer = DefaultTokenizer()
    for lo in range(0, entities, 2000):
        chunk = names[lo:lo + 2000]
        vectors = embedder.embed_documents(chunk)
        with storage.transaction(True, ns) as tx:
            rows = Rows(tx, ns, tokenizer)
            ids += [rows.insert_entity(n, "person", [], 0.0, v).id
                    for n, v in zip(chunk, vectors, strict=True)]
    for lo in range(0, facts, 2000):
        batch = []
        for _ in range(min(2000, facts - lo)):
            s, o = rng.sample(range(entities), 2)
            text = (f"{names[s]} {rng.choice(RELATIONS)} {names[o]} on "
                    f"{rng.choice(TOPICS)}")
            valid = 1.0e9 + rng.random() * 5.0e8
            ended = valid + 1.0e7 if rng.random() < 0.1 else None
            batch.append((ids[s], ids[o], text, valid, ended))
        vectors = embedder.embed_documents([b[2] for b in batch])
        with storage.transaction(True, ns) as tx:
            rows = Rows(tx, ns, tokenizer)
            for (s, o, text, valid, ended), vector in zip(batch, vectors, strict=True):
                rows.insert_fact(s, "related_to", o, None, text, valid, ended, 1.6e9,
                                 1.6e9 if ended else None, 0, vector)
    return time.perf_counter() - start


def settle(storage: GraphStorage) -> None:
    """PostgreSQL: VACUUM ANALYZE the graph tables, as autovacuum does within a minute or two
    of a bulk load. Until then the visibility map is unset, so the keyword signal's
    index-only scans of the postings (``g004_covering_postings``) still visit the table."""
    if not isinstance(storage, PostgresGraphStorage):
        return
    import psycopg

    from remem.store.postgres.sql import quote_ident

    with psycopg.connect(storage.dsn, autocommit=True) as conn:
        for table in ("graph_entities", "graph_entity_keys", "graph_entity_terms",
                      "graph_facts", "graph_fact_terms", "graph_edges", "graph_stats"):
            conn.execute(f"VACUUM ANALYZE {quote_ident(storage.schema)}.{table}")


def timed(run: Callable[[int], Any], repeat: int) -> dict[str, float]:
    run(0)  # warm-up: connections, vector cache
    samples, cpu = [], []
    for i in range(1, repeat + 1):
        t0, c0 = time.perf_counter(), time.process_time()
        run(i)
        samples.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    arr, carr = np.array(samples), np.array(cpu)
    return {"p50_ms": float(np.percentile(arr, 50)), "p95_ms": float(np.percentile(arr, 95)),
            "mean_ms": float(arr.mean()), "cpu_p50_ms": float(np.percentile(carr, 50)),
            "cpu_p95_ms": float(np.percentile(carr, 95))}


def recall_at_10(graph: Graph, embedder: FakeEmbedder, queries: list[str]) -> float:
    """Share of the exact top 10 fact vectors the graph's vector search returns."""
    cache = graph._fact_vectors
    assert cache.matrix is not None
    found = []
    for query in queries:
        vector = embedder.embed_queries([query])[0]
        exact = set(cache.ids[np.argsort(-(cache.matrix @ vector))[:10]].tolist())
        found.append(len(exact & {i for i, _ in cache.top(vector, 10)}) / 10)
    return float(np.mean(found))


def measure(make: Callable[[], GraphStorage], opts: argparse.Namespace) -> dict[str, Any]:
    storage = make()
    seconds = load(storage, opts.facts, opts.entities, opts.dims, opts.seed)
    if not opts.no_vacuum:
        settle(storage)
    storage.close()
    rng = random.Random(opts.seed + 1)
    picks = [rng.randrange(opts.entities) for _ in range(opts.repeat + 1)]
    topics = [rng.choice(TOPICS) for _ in range(opts.repeat + 1)]
    out: dict[str, Any] = {"load_s": seconds}
    def question(i: int) -> str:
        return f"What did {entity_name(picks[i])} do about {topics[i]}?"

    embedder = FakeEmbedder(opts.dims)
    with Graph(make(), ("bench",), embedder=embedder) as graph:
        t0 = time.perf_counter()
        graph.search(question(0), limit=10)
        out["first search s"] = time.perf_counter() - t0
        graph._fact_vectors.wait()  # the inverted file is built in the background
        out["index built s"] = time.perf_counter() - t0
        out["recall@10"] = recall_at_10(graph, embedder,
                                        [question(i) for i in range(min(opts.repeat, 50))])
        out["search"] = timed(lambda i: graph.search(question(i), limit=10), opts.repeat)
        out["search as_of"] = timed(lambda i: graph.search(question(i), limit=10,
                                                           as_of=1.3e9), opts.repeat)
        first = graph.entities()[0].id
        out["expand 2 hops"] = timed(lambda i: graph.expand(first + picks[i], hops=2),
                                     opts.repeat)
        sizes = [len(graph.expand(first + p, hops=2)) for p in picks[:20]]
        out["expand facts (mean)"] = float(np.mean(sizes))
    with Graph(make(), ("bench",), embedder=embedder, ann_min_rows=10**9) as graph:
        out["search exact"] = timed(lambda i: graph.search(question(i), limit=10),
                                    opts.repeat)
    with Graph(make(), ("bench",)) as graph:
        out["keyword+graph"] = timed(lambda i: graph.search(question(i), limit=10),
                                     opts.repeat)
    return out


def table(results: dict[str, Any], opts: argparse.Namespace) -> str:
    lines = [f"graph: {opts.facts:,} facts, {opts.entities:,} entities, fake embedder "
             f"{opts.dims} dims, {opts.repeat} queries",
             f"{'backend':<10} {'operation':<16} {'p50 ms':>8} {'p95 ms':>8} {'cpu p50':>8} "
             f"{'cpu p95':>8} {'target':>8}"]
    for backend, res in results["backends"].items():
        for op in ("search", "search exact", "search as_of", "keyword+graph",
                   "expand 2 hops"):
            target = TARGETS_MS.get(op)
            lines.append(f"{backend:<10} {op:<16} {res[op]['p50_ms']:>8.2f} "
                         f"{res[op]['p95_ms']:>8.2f} {res[op]['cpu_p50_ms']:>8.2f} "
                         f"{res[op]['cpu_p95_ms']:>8.2f} "
                         f"{'<= ' + format(target, 'g') if target else '':>8}")
        lines.append(f"{backend:<10} load {res['load_s']:.1f} s; first search (vectors "
                     f"loaded, exact scan) {res['first search s']:.1f} s; inverted file "
                     f"built in the background after {res['index built s']:.1f} s; "
                     f"inverted-file recall@10 {res['recall@10']:.3f}; a 2-hop expansion "
                     f"returns {res['expand facts (mean)']:.0f} facts on average")
    return "\n".join(lines)


BLAS_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def main(argv: list[str] | None = None) -> None:
    if argv is None and any(v not in os.environ for v in BLAS_VARS):
        # one BLAS thread (set before numpy loads, hence the re-exec): the vector scan is
        # bandwidth-bound, and threads only contend with each other on a busy machine
        os.execve(sys.executable, [sys.executable, *sys.argv],
                  {**os.environ, **{v: os.environ.get(v, "1") for v in BLAS_VARS}})
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--entities", type=int, default=20_000)
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--postgres", action="store_true", help="also an embedded PostgreSQL")
    parser.add_argument("--dsn", default=None, help="PostgreSQL to use instead")
    parser.add_argument("--no-vacuum", action="store_true",
                        help="PostgreSQL: measure right after the load, before any vacuum")
    parser.add_argument("--tmpdir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None, help="write JSON here")
    opts = parser.parse_args(argv)
    results: dict[str, Any] = {"backends": {}, "load_before": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory(dir=opts.tmpdir) as tmp:
        path = Path(tmp) / "graph.db"
        results["backends"]["sqlite"] = measure(lambda: SQLiteGraphStorage(path), opts)
        if opts.postgres or opts.dsn:
            server = None
            dsn = opts.dsn
            if dsn is None:
                from remem.store.postgres.local import LocalPostgres

                server = LocalPostgres(Path(tmp) / "pg")
                dsn = server.start()
            schema = f"bench_graph_{os.getpid()}"
            try:
                results["backends"]["postgres"] = measure(
                    lambda: PostgresGraphStorage(dsn, schema=schema), opts)
            finally:
                if server is not None:
                    server.stop()
    results["load_after"] = os.getloadavg()[0]
    print(table(results, opts))
    if opts.out is not None:
        doc = {"benchmark": "graph",
               "settings": {k: v for k, v in vars(opts).items() if k not in ("out", "tmpdir")},
               "machine": {"python": sys.version.split()[0], "platform": platform.platform(),
                           "cpus": os.cpu_count(), "sqlite": sqlite3.sqlite_version,
                           "blas_threads": {v: os.environ.get(v) for v in BLAS_VARS}},
               "targets_p95_ms": TARGETS_MS, "results": results}
        opts.out.parent.mkdir(parents=True, exist_ok=True)
        opts.out.write_text(json.dumps(doc, indent=2))


if __name__ == "__main__":
    main()
