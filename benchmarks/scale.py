"""Scale benchmark: a small tenant beside a growing database, and the write path, remem's
SQLiteStore beside LangGraph's SqliteStore (sqlite-vec), default configuration against
default configuration (remem issue 37).

Run from the repository root (needs the ``bench`` extra for the LangGraph peer)::

    python benchmarks/scale.py --sizes 100000 300000 --out benchmarks/results/scale.json
    python benchmarks/scale.py --sizes 1000000 --part growth       # long: run in background
    python benchmarks/scale.py --part writes --write-sizes 10000 100000
    python benchmarks/scale.py --quick                               # 5,000 items, smoke run

**Growth**: a 200-item tenant ``("small", "memories")`` in one SQLite file beside N items of
1,000 other tenants ``("t<j>", "memories")``, loaded in batches of 500. Reported: load rate
(items/s, text generation and embedding included: both stores embed through the same hash
embedder), the small
tenant's vector search and default search p95 (remem's default is keyword + vector; LangGraph
has vector search only), all-items vector search p95, and the process's peak RSS.

**Writes** (texts made and embedded outside the timed puts): bulk load of N items in batches
of 500 into an empty file, batched put (100 a batch, 2,000 items) into the loaded store,
single puts (one transaction each), the file after a checkpoint, then the first default search
after the puts (remem: hybrid; LangGraph: vector; a cold cache for both), the next searches'
p95, and the file after them.

Workload: texts of 20-60 words drawn (Zipf-like) from a 3,000-word vocabulary, generated per
batch from a seed (the harness holds no corpus, so peak RSS is the store's); 384-d vectors
from a hash embedder (each word a fixed random unit vector, a text the normalised mean of its
words). Each (part, backend, size) runs in its own subprocess (``--worker``), so peak RSS is
attributable. JSON as benchmarks/store.py writes it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))
import store as peer  # benchmarks/store.py: LangGraph's stores opened as peers, helpers

DIMS = 384
TENANTS = 1000
SMALL = 200  # items of the small tenant
SMALL_NS = ("small", "memories")
VOCAB = 3000
SEED = 20261207
BULK = 500
BATCH = 100
K = 10
MARK = "@@SCALE@@"
BACKENDS = ("remem", "langgraph")


# -- workload ---------------------------------------------------------------------------------


def _vocabulary() -> list[str]:
    rng = np.random.default_rng(SEED)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    return [f"{''.join(rng.choice(letters, size=int(rng.integers(3, 9))))}{i}"
            for i in range(VOCAB)]


WORDS = _vocabulary()
_WEIGHTS = 1.0 / np.arange(1, VOCAB + 1) ** 0.9
_WEIGHTS /= _WEIGHTS.sum()


def texts(start: int, count: int, salt: int = 0) -> list[str]:
    """``count`` texts of 20-60 words, reproducible from (``start``, ``salt``)."""
    rng = np.random.default_rng([SEED, salt, start])
    lengths = rng.integers(20, 61, size=count)
    words = rng.choice(VOCAB, size=int(lengths.sum()), p=_WEIGHTS)
    out, at = [], 0
    for length in lengths.tolist():
        out.append(" ".join(WORDS[w] for w in words[at:at + length]))
        at += length
    return out


class HashEmbedder:
    """Each word a fixed pseudo-random unit vector (from its CRC32), a text the normalised
    sum of its words' vectors: deterministic and shared by both stores. :meth:`prime` embeds
    texts ahead and serves them from a small cache, so the write table times the store, not
    the embedder (as benchmarks/store.py's lookup embedder does)."""

    model = f"hash-{DIMS}"
    dims = DIMS

    def __init__(self) -> None:
        self._index = {w: i for i, w in enumerate(WORDS)}
        self._table = np.stack([self._fresh(w) for w in WORDS])
        self._primed: dict[str, npt.NDArray[np.float32]] = {}

    @staticmethod
    def _fresh(word: str) -> npt.NDArray[np.float32]:
        vec = np.random.default_rng(zlib.crc32(word.encode())).standard_normal(DIMS)
        return (vec / np.linalg.norm(vec)).astype(np.float32)

    def _embed(self, batch: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.empty((len(batch), DIMS), dtype=np.float32)
        for row, text in enumerate(batch):
            ids = [self._index.get(w, -1) for w in text.split()]
            vec = self._table[[i for i in ids if i >= 0]].sum(axis=0)
            for word in (w for w, i in zip(text.split(), ids, strict=True) if i < 0):
                vec += self._fresh(word)
            out[row] = vec / max(float(np.linalg.norm(vec)), 1e-9)
        return out

    def prime(self, batch: Sequence[str]) -> None:
        """Embed ``batch`` now; the next embedding of these texts is a lookup."""
        self._primed = dict(zip(batch, self._embed(batch), strict=True))

    def embed_documents(self, batch: Sequence[str]) -> npt.NDArray[np.float32]:
        if all(t in self._primed for t in batch):
            return np.stack([self._primed[t] for t in batch])
        return self._embed(batch)

    def embed_queries(self, batch: Sequence[str]) -> npt.NDArray[np.float32]:
        return self.embed_documents(batch)


def value(text: str, i: int) -> dict[str, Any]:
    return {"text": text, "kind": f"k{i % 5}", "n": i}


def other_ns(i: int) -> tuple[str, str]:
    return (f"t{i % TENANTS}", "memories")


def small_queries(n: int) -> list[str]:
    """Queries near the small tenant's items: 8-word windows of their texts."""
    items = texts(0, SMALL, salt=1)
    rng = np.random.default_rng(SEED + 2)
    out = []
    for j in range(n):
        words = items[j % SMALL].split()
        at = int(rng.integers(0, len(words) - 8))
        out.append(" ".join(words[at:at + 8]))
    return out


# -- stores -----------------------------------------------------------------------------------


class Store:
    """Uniform calls: ``put(items)`` with ``(namespace, key, value)`` triples, one
    transaction; ``vector``/``hybrid`` searches returning keys."""

    def __init__(self, name: str, path: Path, embedder: HashEmbedder,
                 vector_cache_mb: int | None = None) -> None:
        self.name, self.path = name, path
        if name == "remem":
            from remem.store import IndexConfig, PutOp, SQLiteStore

            self._op = PutOp
            options = ({} if vector_cache_mb is None
                       else {"vector_cache_bytes": vector_cache_mb * 2**20})
            self.store: Any = SQLiteStore(path, index=IndexConfig(embedder=embedder,
                                                                  fields=("text",)), **options)
            self.store.setup()
        else:
            from langgraph.store.base import PutOp as LGPutOp

            found = peer.extension_sqlite()
            if found is None:
                raise SystemExit("LangGraph's SqliteStore needs sqlite-vec: pip install -e "
                                 "'.[bench]'")

            def embed(batch: Sequence[str]) -> list[list[float]]:
                return embedder.embed_documents(batch).tolist()  # type: ignore[no-any-return]

            self._op = LGPutOp
            self.store = peer.langgraph_sqlite(path, found[0], {
                "dims": DIMS, "embed": embed, "fields": ["text"], "text_fields": ["text"]})

    def put(self, items: list[tuple[tuple[str, ...], str, dict[str, Any]]]) -> None:
        self.store.batch([self._op(ns, key, val) for ns, key, val in items])

    def put_one(self, ns: tuple[str, ...], key: str, val: dict[str, Any]) -> None:
        self.store.put(ns, key, val)

    def vector(self, prefix: tuple[str, ...], query: str) -> list[str]:
        if self.name == "remem":
            return [r.key for r in self.store.search(prefix, query=query, limit=K,
                                                     mode="vector")]
        return [r.key for r in self.store.search(prefix, query=query, limit=K)]

    def hybrid(self, prefix: tuple[str, ...], query: str) -> list[str]:
        return [r.key for r in self.store.search(prefix, query=query, limit=K)]

    def close(self) -> None:
        if self.name == "remem":
            self.store.close()
        else:
            self.store.conn.close()

    @property
    def files(self) -> list[Path]:
        return [self.path, Path(f"{self.path}-wal")]


def load_others(store: Store, start: int, stop: int, size: int = BULK,
                primed: HashEmbedder | None = None) -> float:
    """Put items ``start..stop`` of the other tenants in batches of ``size``; items/s. With
    ``primed``, each batch's texts are made and embedded outside the timed put."""
    spent = 0.0
    for at in range(start, stop, size):
        count = min(stop, at + size) - at
        batch = texts(at, count)
        if primed is not None:
            primed.prime(batch)
        began = time.perf_counter()
        store.put([(other_ns(i), f"k{i}", value(text, i))
                   for i, text in zip(range(at, at + count), batch, strict=True)])
        spent += time.perf_counter() - began
    return (stop - start) / spent


def p95(times: list[float]) -> float:
    return float(np.percentile(times, 95)) if times else float("nan")


def run_times(fn: Callable[[str], Any], queries: list[str], budget: float,
              least: int) -> list[float]:
    calls = [lambda q=q: fn(q) for q in queries]
    times, _ = peer.timed(calls, budget, least)
    return times


# -- workers ----------------------------------------------------------------------------------


def growth(name: str, n: int, opts: argparse.Namespace) -> dict[str, Any]:
    embedder = HashEmbedder()
    tmp = Path(tempfile.mkdtemp(prefix="remem-scale-", dir=opts.tmpdir))
    m: dict[str, Any] = {}
    try:
        store = Store(name, tmp / f"{name}.db", embedder, opts.vector_cache_mb)
        m["load_per_s"] = load_others(store, 0, n)
        store.put([(SMALL_NS, f"s{i}", value(text, i))
                   for i, text in enumerate(texts(0, SMALL, salt=1))])
        queries = small_queries(opts.queries)
        store.vector(SMALL_NS, queries[0])  # warm: the first search of a scope
        least = min(opts.min_queries, len(queries))
        m["small_vector_p95"] = p95(run_times(lambda q: store.vector(SMALL_NS, q), queries,
                                              opts.budget, least))
        if name == "remem":
            m["small_hybrid_p95"] = p95(run_times(lambda q: store.hybrid(SMALL_NS, q), queries,
                                                  opts.budget, least))
        t0 = time.perf_counter()
        store.vector((), queries[0])
        m["all_first_ms"] = (time.perf_counter() - t0) * 1e3
        m["all_vector_p95"] = p95(run_times(lambda q: store.vector((), q), queries[1:],
                                            opts.budget, min(5, least)))
        m["peak_rss_mb"] = peer.peak_rss_bytes() / 2**20
        store.close()
        m["file_mb"] = peer.file_bytes(store.files) / 2**20
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return m


def writes(name: str, n: int, opts: argparse.Namespace) -> dict[str, Any]:
    embedder = HashEmbedder()
    tmp = Path(tempfile.mkdtemp(prefix="remem-scale-", dir=opts.tmpdir))
    m: dict[str, Any] = {}
    try:
        store = Store(name, tmp / f"{name}.db", embedder)
        m["bulk_per_s"] = load_others(store, 0, n, BULK, embedder)
        m["batched_per_s"] = load_others(store, n, n + opts.batched, BATCH, embedder)
        start = n + opts.batched
        single = texts(start, opts.single)
        embedder.prime(single)
        began = time.perf_counter()
        for i, text in zip(range(start, start + opts.single), single, strict=True):
            store.put_one(other_ns(i), f"k{i}", value(text, i))
        m["single_per_s"] = opts.single / (time.perf_counter() - began)
        m["file_before_search_mb"] = peer.file_bytes(store.files) / 2**20
        # the first search after a load reads a cold file (a store that left work of the
        # puts to a later search would pay it here)
        query = " ".join(single[0].split()[:8])
        began = time.perf_counter()
        store.hybrid((), query)
        m["first_search_ms"] = (time.perf_counter() - began) * 1e3
        m["next_search_ms"] = p95(run_times(lambda q: store.hybrid((), q),
                                            [" ".join(t.split()[3:11]) for t in single[1:21]],
                                            opts.budget, 5))
        m["peak_rss_mb"] = peer.peak_rss_bytes() / 2**20
        store.close()
        m["file_mb"] = peer.file_bytes(store.files) / 2**20
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return m


# -- orchestration ----------------------------------------------------------------------------


def spawn(part: str, name: str, n: int, opts: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--worker", part, name, str(n),
           "--queries", str(opts.queries), "--budget", str(opts.budget),
           "--min-queries", str(opts.min_queries), "--batched", str(opts.batched),
           "--single", str(opts.single)] + (["--tmpdir", opts.tmpdir] if opts.tmpdir else []) + (
        ["--vector-cache-mb", str(opts.vector_cache_mb)] if opts.vector_cache_mb else [])
    began = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=opts.timeout)
    except subprocess.TimeoutExpired:
        return {"skipped": f"timed out after {opts.timeout:.0f} s"}
    for line in proc.stdout.splitlines():
        if line.startswith(MARK):
            out: dict[str, Any] = json.loads(line[len(MARK):])
            out["seconds"] = round(time.perf_counter() - began, 1)
            out["load_average"] = os.getloadavg()[0]
            return out
    return {"skipped": "worker failed: " + " | ".join(proc.stderr.strip().splitlines()[-3:])}


GROWTH = [("load_per_s", "load (items/s)", "{:,.0f}"),
          ("small_vector_p95", "small tenant vector p95 (ms)", "{:.2f}"),
          ("small_hybrid_p95", "small tenant default hybrid p95 (ms)", "{:.2f}"),
          ("all_vector_p95", "all items vector p95 (ms)", "{:.1f}"),
          ("all_first_ms", "all items, first search (ms)", "{:.1f}"),
          ("peak_rss_mb", "peak RSS (MB)", "{:,.0f}"),
          ("file_mb", "file (MB)", "{:,.1f}")]
WRITES = [("bulk_per_s", f"bulk load ({BULK}/batch, items/s)", "{:,.0f}"),
          ("batched_per_s", f"batched put ({BATCH}/batch, items/s)", "{:,.0f}"),
          ("single_per_s", "single put (items/s)", "{:,.0f}"),
          ("first_search_ms", "first search after the puts (ms)", "{:,.0f}"),
          ("next_search_ms", "next searches p95 (ms)", "{:,.1f}"),
          ("file_before_search_mb", "file before that search (MB)", "{:,.1f}"),
          ("file_mb", "file after it (MB)", "{:,.1f}"),
          ("peak_rss_mb", "peak RSS (MB)", "{:,.0f}")]


def report(results: dict[str, dict[str, dict[str, dict[str, Any]]]]) -> None:
    for part, metrics in (("growth", GROWTH), ("writes", WRITES)):
        for n, by_backend in results.get(part, {}).items():
            print(f"\n{part}, N = {int(n):,}")
            print(f"  {'metric':44} " + " ".join(f"{b:>12}" for b in by_backend) + "  remem/LG")
            for key, label, spec in metrics:
                cells, values = [], []
                for b in by_backend:
                    v = by_backend[b].get(key)
                    values.append(v)
                    cells.append(f"{spec.format(v):>12}" if isinstance(v, int | float)
                                 else f"{by_backend[b].get('skipped', 'n/a')[:12]:>12}")
                r = ""
                if len(values) == 2 and all(isinstance(v, int | float) and v for v in values):
                    r = f"{values[0] / values[1]:.2f}x"
                print(f"  {label:44} " + " ".join(cells) + f"  {r}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["growth", "writes", "both"], default="both")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 300_000])
    parser.add_argument("--write-sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--budget", type=float, default=30.0,
                        help="seconds per metric before a slow backend runs fewer queries")
    parser.add_argument("--min-queries", type=int, default=20)
    parser.add_argument("--batched", type=int, default=2000, help="items put 100 a batch")
    parser.add_argument("--single", type=int, default=300, help="single puts")
    parser.add_argument("--timeout", type=float, default=7200.0)
    parser.add_argument("--tmpdir", default=None)
    parser.add_argument("--vector-cache-mb", type=int, default=None,
                        help="remem's vector_cache_bytes in MiB (default: the store's, 256)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    if opts.worker:
        part, name, n = opts.worker
        result = (growth if part == "growth" else writes)(name, int(n), opts)
        print(MARK + json.dumps(result), flush=True)
        return
    if opts.quick:
        opts.sizes, opts.write_sizes, opts.queries, opts.budget = [5000], [5000], 30, 5.0
        opts.batched, opts.single = 500, 50
    backends = [b.strip() for b in opts.backends.split(",") if b.strip()]
    parts = ["growth", "writes"] if opts.part == "both" else [opts.part]
    results: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    for part in parts:
        for n in opts.sizes if part == "growth" else opts.write_sizes:
            for name in backends:
                print(f"{part}: {name} at N={n:,} ...", file=sys.stderr, flush=True)
                got = spawn(part, name, n, opts)
                print(f"  {json.dumps(got)}", file=sys.stderr, flush=True)
                results.setdefault(part, {}).setdefault(str(n), {})[name] = got
                if opts.out:  # written as it goes: a long run keeps what it measured
                    opts.out.parent.mkdir(parents=True, exist_ok=True)
                    opts.out.write_text(json.dumps(
                        {"machine": peer.machine(),
                         "config": {"dims": DIMS, "tenants": TENANTS, "small": SMALL,
                                    "bulk_batch": BULK, "batch": BATCH, "k": K,
                                    "queries": opts.queries, "batched": opts.batched,
                                    "single": opts.single},
                         "results": results}, indent=2) + "\n")
    report(results)


if __name__ == "__main__":
    main()
