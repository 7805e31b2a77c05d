"""Store benchmark: remem's SQLite and in-memory stores side by side with LangGraph's.

Run from the repository root (needs the ``bench`` extra for the LangGraph peers)::

    python benchmarks/store.py --quick                      # 2000 items, smoke run (< 1 min)
    python benchmarks/store.py --sizes 10000 100000 --out benchmarks/results/store.json
    python benchmarks/store.py --sizes 10000 --backends remem-sqlite,langgraph-sqlite
    python benchmarks/store.py --backend postgres --sizes 10000 100000   # PostgreSQL

Every backend gets the same workload: N items over 100 namespaces, 384-d vectors precomputed
once and served by an O(1) lookup embedder (so embedding time is excluded), the same queries
and the same keys. Each (backend, size) runs in its own subprocess (``--worker``) so peak RSS
is attributable. remem runs in its default configuration (keyword indexing on) against
LangGraph's default, and vector-only (``keyword=False``, labelled ``-vector``) beside it.
See benchmarks/README.md for what each figure means.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import platform
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

DIMS = 384
NAMESPACES = 100
BULK = 500  # batch size of the bulk load from empty
BATCH = 100  # batch size of the steady-state batched puts into a loaded store
K = 10
SEED = 20240601
EXTRA_PUTS = 50  # put-then-search rounds after the single puts
# "-vector": remem with keyword indexing off, LangGraph's only kind of index; the plain names
# are both libraries' defaults
BACKENDS = ("remem-sqlite", "remem-sqlite-vector", "langgraph-sqlite", "remem-memory",
            "remem-memory-vector", "langgraph-memory")
PAIRS = (("remem-sqlite", "langgraph-sqlite"), ("remem-sqlite-vector", "langgraph-sqlite"),
         ("remem-memory", "langgraph-memory"), ("remem-memory-vector", "langgraph-memory"))
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
         "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo",
         "memory", "agent", "user", "prefers", "dark", "theme", "meeting", "notes", "travel",
         "budget", "project", "deadline", "tea", "coffee"]
MARK = "@@BENCH@@"

# -- workload ---------------------------------------------------------------------------------


@dataclass
class Workload:
    """Texts and unit vectors for ``n`` items, the extra single-put items and the queries."""

    n: int
    extra: int  # items put after the load: batched, then single, then put-then-search
    texts: list[str]  # n + extra item texts, then the query texts
    vectors: npt.NDArray[np.float32]  # one unit row per text
    rows: dict[str, int]  # text -> row (the lookup embedders' dict)
    get_keys: list[int]

    @property
    def query_texts(self) -> list[str]:
        return self.texts[self.n + self.extra :]

    def value(self, i: int) -> dict[str, Any]:
        return {"text": self.texts[i], "category": f"c{i % 10}", "status": f"s{(i // 100) % 4}",
                "n": i, "tags": [f"t{i % 7}", f"t{i % 13}"]}


def namespace(i: int) -> tuple[str, str]:
    return ("bench", f"ns{i % NAMESPACES}")


def batched_count(n: int) -> int:
    """Items put in batches of ``BATCH`` after a load of ``n``: 10 % of it, 1,000 to 10,000."""
    return min(10_000, max(1_000, n // 10))


def make_workload(n: int, n_queries: int, n_single: int, n_gets: int,
                  n_batched: int = 0) -> Workload:
    """Deterministic workload: clustered vectors; each query is a perturbed item vector."""
    rng = np.random.default_rng(SEED)
    extra = n_batched + n_single + EXTRA_PUTS
    total = n + extra + n_queries
    word_ids = rng.integers(0, len(WORDS), size=(total, 4)).tolist()
    texts = [" ".join(WORDS[w] for w in ws) + f" #{i}" for i, ws in enumerate(word_ids)]
    for j in range(n_queries):
        texts[n + extra + j] = "query " + texts[n + extra + j]
    centers = rng.standard_normal((64, DIMS), dtype=np.float32)
    topics = rng.integers(0, len(centers), size=total)
    vectors = rng.standard_normal((total, DIMS), dtype=np.float32)
    for start in range(0, total, 8192):  # in place and chunked: no full-size temporaries
        vectors[start : start + 8192] += 1.5 * centers[topics[start : start + 8192]]
    targets = rng.integers(0, n, size=n_queries)
    q = vectors[n + extra :]
    q *= 0.6
    q += vectors[targets]
    for start in range(0, total, 8192):
        block = vectors[start : start + 8192]
        block /= np.linalg.norm(block, axis=1, keepdims=True)
    rows = {t: i for i, t in enumerate(texts)}
    gets = np.random.default_rng(SEED + 1).integers(0, n, size=n_gets).tolist()
    return Workload(n, extra, texts, vectors, rows, gets)


class LookupEmbedder:
    """remem ``Embedder`` serving precomputed vectors by text (O(1) per text)."""

    def __init__(self, workload: Workload) -> None:
        self._w = workload

    @property
    def model(self) -> str:
        return f"bench-lookup-{DIMS}"

    @property
    def dims(self) -> int:
        return DIMS

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self._w.vectors[[self._w.rows[t] for t in texts]]

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self.embed_documents(texts)


def langgraph_embed(workload: Workload) -> Callable[[Sequence[str]], list[list[float]]]:
    """LangGraph ``EmbeddingsFunc``: lists of floats, as LangChain embeddings return."""

    def embed(texts: Sequence[str]) -> list[list[float]]:
        return [workload.vectors[workload.rows[t]].tolist() for t in texts]

    return embed


# -- backends ---------------------------------------------------------------------------------

Key = tuple[tuple[str, ...], str]


@dataclass
class Backend:
    """Uniform calls over one store; ``search`` returns (namespace, key) pairs in rank order
    (``hybrid`` for remem with keyword indexing on: its default search, keyword + vector)."""

    put_many: Callable[[list[int]], None]
    put_one: Callable[[int], None]
    get: Callable[[int], object]
    search: Callable[[tuple[str, ...], str | None, dict[str, Any] | None], list[Key]]
    close: Callable[[], None]
    files: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    vector_search: bool = True
    hybrid: Callable[[tuple[str, ...], str], list[Key]] | None = None


def open_remem(name: str, w: Workload, tmp: Path) -> Backend:
    from remem.store import IndexConfig, InMemoryStore, PutOp, SQLiteStore

    index = IndexConfig(embedder=LookupEmbedder(w), fields=("text",))
    path = tmp / "remem.db"
    # "-vector": keyword indexing off, as LangGraph's stores (which have none); otherwise
    # remem's defaults, keyword indexing on
    options: dict[str, Any] = {"keyword": False} if name.endswith("-vector") else {}
    sqlite = name.startswith("remem-sqlite")
    store = (SQLiteStore(path, index=index, **options) if sqlite
             else InMemoryStore(index=index, **options))
    store.setup()

    def search(prefix: tuple[str, ...], query: str | None,
               filt: dict[str, Any] | None) -> list[Key]:
        return [(r.namespace, r.key)
                for r in store.search(prefix, query=query, filter=filt, limit=K,
                                      mode="vector")]

    def hybrid(prefix: tuple[str, ...], query: str) -> list[Key]:
        return [(r.namespace, r.key) for r in store.search(prefix, query=query, limit=K)]

    return Backend(
        put_many=lambda ids: store.batch([PutOp(namespace(i), f"k{i}", w.value(i))
                                          for i in ids]),
        put_one=lambda i: store.put(namespace(i), f"k{i}", w.value(i)),
        get=lambda i: store.get(namespace(i), f"k{i}"),
        search=search, close=store.close,
        files=[path, Path(f"{path}-wal")] if sqlite else [],
        hybrid=None if options else hybrid,
    )


def extension_sqlite() -> tuple[Any, str] | None:
    """A DB-API sqlite module that can load sqlite-vec (stock first, then pysqlite3), with a
    label naming it and its SQLite version; ``None`` when there is none."""
    if importlib.util.find_spec("sqlite_vec") is None:
        return None
    candidates: list[tuple[Any, str]] = [(sqlite3, "stdlib sqlite3")]
    if importlib.util.find_spec("pysqlite3") is not None:
        from pysqlite3 import dbapi2  # type: ignore[import-not-found]

        candidates.append((dbapi2, "pysqlite3"))
    for module, label in candidates:
        conn = module.connect(":memory:")
        ok = hasattr(conn, "enable_load_extension")
        conn.close()
        if ok:
            return module, f"{label} {module.sqlite_version}"
    return None


def langgraph_index(w: Workload) -> dict[str, Any]:
    """LangGraph's index config embedding only ``text``. SqliteStore reads "text_fields",
    InMemoryStore "fields": both are given (with "fields" alone SqliteStore silently embeds
    the whole value)."""
    return {"dims": DIMS, "embed": langgraph_embed(w), "fields": ["text"],
            "text_fields": ["text"]}


def langgraph_sqlite(path: Path, module: Any, index: dict[str, Any] | None) -> Any:
    """LangGraph's SqliteStore on a file through the DB-API ``module`` (one from
    :func:`extension_sqlite` for vector search), in WAL mode with ``synchronous=NORMAL``: the
    durability of remem's default. Set up; close it with ``store.conn.close()``."""
    from langgraph.store.sqlite import SqliteStore

    conn = module.connect(str(path), check_same_thread=False, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    store = SqliteStore(conn, index=index)  # type: ignore[arg-type]
    store.setup()
    return store


def open_langgraph(name: str, w: Workload, tmp: Path) -> Backend:
    from langgraph.store.base import PutOp

    index = langgraph_index(w)
    notes: list[str] = []
    files: list[Path] = []
    vector_search = True
    store: Any
    if name == "langgraph-memory":
        from langgraph.store.memory import InMemoryStore

        store = InMemoryStore(index=index)  # type: ignore[arg-type]
    else:
        found = extension_sqlite()
        module: Any = found[0] if found else sqlite3
        if found:
            notes.append(f"langgraph-sqlite on {found[1]} + sqlite-vec")
        else:
            vector_search = False
            notes.append("langgraph-sqlite: no vector search (sqlite3 cannot load sqlite-vec; "
                         "install pysqlite3-binary)")
        path = tmp / "langgraph.db"
        files = [path, Path(f"{path}-wal")]
        store = langgraph_sqlite(path, module, index if vector_search else None)

    def search(prefix: tuple[str, ...], query: str | None,
               filt: dict[str, Any] | None) -> list[Key]:
        return [(tuple(r.namespace), r.key)
                for r in store.search(prefix, query=query, filter=filt, limit=K)]

    def close() -> None:
        if name == "langgraph-sqlite":
            store.conn.close()

    return Backend(
        put_many=lambda ids: store.batch([PutOp(namespace(i), f"k{i}", w.value(i))
                                          for i in ids]),
        put_one=lambda i: store.put(namespace(i), f"k{i}", w.value(i)),
        get=lambda i: store.get(namespace(i), f"k{i}"),
        search=search, close=close, files=files, notes=notes, vector_search=vector_search,
    )


# -- measurement ------------------------------------------------------------------------------


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kB on Linux


def timed(calls: Sequence[Callable[[], Any]], budget: float,
          min_calls: int) -> tuple[list[float], list[Any]]:
    """Run calls in order, each timed (ms); stop early once past ``budget`` seconds."""
    times: list[float] = []
    results: list[Any] = []
    start = time.perf_counter()
    for call in calls:
        t0 = time.perf_counter_ns()
        results.append(call())
        times.append((time.perf_counter_ns() - t0) / 1e6)
        if len(times) >= min_calls and time.perf_counter() - start > budget:
            break
    return times, results


def recall(w: Workload, mask: npt.NDArray[np.bool_] | None,
           queries: list[str], found: list[list[Key]]) -> float:
    """Mean recall@K against NumPy brute force. A returned item counts if it is in the exact
    top K or ties the K-th score within 1e-5 (float rounding differs between engines)."""
    matrix = w.vectors[: w.n]
    allowed = np.ones(w.n, dtype=bool) if mask is None else mask
    size = int(allowed.sum())
    hits = total = 0
    for query, keys in zip(queries, found, strict=False):
        scores = matrix @ w.vectors[w.rows[query]]
        eligible = scores[allowed]
        kth = np.partition(eligible, -K)[-K] if size >= K else -np.inf
        ids = [int(key[1:]) for _, key in keys]
        hits += sum(1 for i in ids if i < w.n and allowed[i] and scores[i] >= kth - 1e-5)
        total += min(K, size)
    return hits / total if total else float("nan")


def pct(times: list[float]) -> tuple[float, float]:
    return float(np.percentile(times, 50)), float(np.percentile(times, 95))


def preload(name: str, w: Workload) -> None:
    """Import the backend and start BLAS before the RSS baseline, so neither counts as store
    memory."""
    modules = ["remem.store"] if name.startswith("remem") else [
        "langgraph.store.base", "langgraph.store.memory", "langgraph.store.sqlite"]
    for module in modules:
        __import__(module)
    extension_sqlite()
    w.vectors[:4096] @ w.vectors[0]


def file_bytes(files: list[Path]) -> int:
    """Database plus WAL after a ``wal_checkpoint(TRUNCATE)`` (the WAL then holds nothing, so
    this is the database's own size), read once the store has closed its connections."""
    if files[0].exists():
        with closing(sqlite3.connect(files[0])) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(p.stat().st_size for p in files if p.exists())


def put_rate(b: Backend, ids: range, size: int) -> tuple[float, float]:
    """Items per second putting ``ids`` in batches of ``size``: wall-clock, and per second of
    this process's CPU time (SQLite works in-process, so this is the work a put costs; on a
    shared machine it moves less than wall-clock time, which also counts waiting for a core)."""
    t0, c0 = time.perf_counter(), time.process_time()
    for start in range(ids.start, ids.stop, size):
        b.put_many(list(range(start, min(ids.stop, start + size))))
    return (len(ids) / (time.perf_counter() - t0),
            len(ids) / max(time.process_time() - c0, 1e-9))


def run_worker(name: str, n: int, opts: argparse.Namespace) -> dict[str, Any]:
    """Measure one backend at one size in this process; returns the metrics as a dict."""
    n_batched = batched_count(n)
    w = make_workload(n, opts.queries, opts.single, opts.gets, n_batched)
    preload(name, w)
    gc.collect()
    base_rss = rss_bytes()
    tmp = Path(tempfile.mkdtemp(prefix="remem-bench-", dir=opts.tmpdir))
    out: dict[str, Any] = {"backend": name, "n": n, "counts": {"batched": n_batched},
                           # other processes' load skews every wall-clock figure: record it
                           "load_average": [os.getloadavg()[0]]}
    m: dict[str, float | None] = {}
    try:
        b = open_remem(name, w, tmp) if name.startswith("remem") else open_langgraph(name, w, tmp)
        notes = list(b.notes)
        m["bulk_put"], m["bulk_put_cpu"] = put_rate(b, range(n), BULK)
        m["rss_load_mb"] = (rss_bytes() - base_rss) / 2**20
        queries = w.query_texts
        cat = np.arange(n) % 10 == 3
        ns7 = np.arange(n) % NAMESPACES == 7
        budget, least = opts.budget, min(opts.min_queries, len(queries))
        if b.vector_search:
            t0 = time.perf_counter()
            b.search(("bench",), queries[0], None)
            m["first_search_ms"] = (time.perf_counter() - t0) * 1e3
        times, _ = timed([lambda i=i: b.get(i) for i in w.get_keys], budget, least)
        m["get_p50"], m["get_p95"] = pct(times)
        out["counts"]["get"] = len(times)
        plans: list[tuple[str, tuple[str, ...], dict[str, Any] | None, bool,
                          npt.NDArray[np.bool_] | None]] = [
            ("vec", ("bench",), None, True, None),
            ("vec_filter", ("bench",), {"category": "c3"}, True, cat),
            ("ns_vec", ("bench", "ns7"), None, True, ns7),
            ("ns_filter", ("bench", "ns7"), None, False, None),
            ("filter", ("bench",), {"category": "c3"}, False, None),
        ]
        for metric, prefix, filt, vector, mask in plans:
            if vector and not b.vector_search:
                m[f"{metric}_p50"] = m[f"{metric}_p95"] = None
                continue
            calls = [
                (lambda q=q, p=prefix, f=filt: b.search(p, q, f)) if vector
                else (lambda j=j, p=prefix, f=filt: b.search(
                    p, None, f if f is not None else {"status": f"s{j % 4}"}))
                for j, q in enumerate(queries)
            ]
            times, found = timed(calls, budget, least)
            m[f"{metric}_p50"], m[f"{metric}_p95"] = pct(times)
            out["counts"][metric] = len(times)
            if vector:
                m[f"recall_{metric}"] = recall(w, mask, queries, found)
        if b.hybrid is not None:  # remem's default search: keyword + vector, fused
            hybrid = b.hybrid
            for metric, prefix in (("hybrid", ("bench",)), ("ns_hybrid", ("bench", "ns7"))):
                times, _ = timed([lambda q=q, p=prefix: hybrid(p, q) for q in queries],
                                 budget, least)
                m[f"{metric}_p50"], m[f"{metric}_p95"] = pct(times)
                out["counts"][metric] = len(times)
        m["batch_put"], m["batch_put_cpu"] = put_rate(b, range(n, n + n_batched), BATCH)
        start = n + n_batched
        single = list(range(start, start + opts.single))
        times, _ = timed([lambda i=i: b.put_one(i) for i in single], budget, least)
        m["single_put"] = len(times) / (sum(times) / 1e3)
        out["counts"]["single_put"] = len(times)
        stored = start + len(times)
        if b.vector_search:  # a vector search right after each put (cache catch-up cost)
            after: list[float] = []
            t_start = time.perf_counter()
            for j, i in enumerate(range(start + opts.single, n + w.extra)):
                if j >= least and time.perf_counter() - t_start > budget:
                    break
                b.put_one(i)
                query = queries[j % len(queries)]
                t0 = time.perf_counter()
                b.search(("bench",), query, None)
                after.append((time.perf_counter() - t0) * 1e3)
            m["after_put_p50"], m["after_put_p95"] = pct(after)
            out["counts"]["after_put"] = len(after)
            stored += len(after)
        m["peak_rss_mb"] = (peak_rss_bytes() - base_rss) / 2**20
        m["rss_per_item"] = (peak_rss_bytes() - base_rss - stored * DIMS * 4) / stored
        if b.files:  # the WAL as the store leaves it between checkpoints (disk in use)
            m["wal_mb"] = (b.files[1].stat().st_size if b.files[1].exists() else 0) / 2**20
        b.close()
        if b.files:
            size = file_bytes(b.files)
            m["file_mb"], m["file_per_item"] = size / 2**20, size / stored
        out["counts"]["stored"] = stored
        out["load_average"].append(os.getloadavg()[0])
        notes.append("1-minute load average {:.1f} at the start, {:.1f} at the end ({} cores)"
                     .format(*out["load_average"], os.cpu_count()))
        out["notes"] = notes
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out["metrics"] = m
    return out


# -- orchestration and report -----------------------------------------------------------------

#: (key, label, "high"/"low" = which is better, None = no ratio, format)
METRICS: list[tuple[str, str, str | None, str]] = [
    ("bulk_put", f"bulk load from empty (items/s, batches of {BULK})", "high", "{:,.0f}"),
    ("bulk_put_cpu", "  bulk load, items per CPU-second", "high", "{:,.0f}"),
    ("batch_put", f"batched put into the loaded store (items/s, batches of {BATCH})", "high",
     "{:,.0f}"),
    ("batch_put_cpu", "  batched put, items per CPU-second", "high", "{:,.0f}"),
    ("single_put", "single put (items/s, 1 txn each)", "high", "{:,.0f}"),
    ("get_p50", "get p50 (ms)", "low", "{:.3f}"), ("get_p95", "get p95 (ms)", "low", "{:.3f}"),
    ("first_search_ms", "first vector search, cold (ms)", "low", "{:.1f}"),
    ("vec_p50", "vector search ('bench',) p50 (ms)", "low", "{:.2f}"),
    ("vec_p95", "vector search ('bench',) p95 (ms)", "low", "{:.2f}"),
    ("vec_filter_p50", "vector + filter c3 p50 (ms)", "low", "{:.2f}"),
    ("vec_filter_p95", "vector + filter c3 p95 (ms)", "low", "{:.2f}"),
    ("ns_vec_p50", "vector in ns7 p50 (ms)", "low", "{:.2f}"),
    ("ns_vec_p95", "vector in ns7 p95 (ms)", "low", "{:.2f}"),
    ("ns_filter_p50", "filter-only in ns7 p50 (ms)", "low", "{:.2f}"),
    ("ns_filter_p95", "filter-only in ns7 p95 (ms)", "low", "{:.2f}"),
    ("filter_p50", "filter-only ('bench',) p50 (ms)", "low", "{:.2f}"),
    ("filter_p95", "filter-only ('bench',) p95 (ms)", "low", "{:.2f}"),
    ("hybrid_p50", "default search, keyword + vector ('bench',) p50 (ms)", None, "{:.2f}"),
    ("hybrid_p95", "default search, keyword + vector ('bench',) p95 (ms)", None, "{:.2f}"),
    ("ns_hybrid_p50", "default search, keyword + vector in ns7 p50 (ms)", None, "{:.2f}"),
    ("ns_hybrid_p95", "default search, keyword + vector in ns7 p95 (ms)", None, "{:.2f}"),
    ("after_put_p50", "vector search after a put p50 (ms)", "low", "{:.2f}"),
    ("after_put_p95", "vector search after a put p95 (ms)", "low", "{:.2f}"),
    ("recall_vec", "recall@10 vector", None, "{:.3f}"),
    ("recall_vec_filter", "recall@10 vector + filter", None, "{:.3f}"),
    ("recall_ns_vec", "recall@10 vector in ns7", None, "{:.3f}"),
    ("rss_load_mb", "RSS after load (MB)", "low", "{:,.1f}"),
    ("peak_rss_mb", "peak RSS (MB)", "low", "{:,.1f}"),
    ("rss_per_item", "peak RSS/item above vectors (B)", None, "{:,.0f}"),
    ("wal_mb", "SQLite WAL before close (MB)", "low", "{:,.1f}"),
    ("file_mb", "SQLite file after checkpoint (MB)", "low", "{:,.1f}"),
    ("file_per_item", "SQLite file/item (B)", "low", "{:,.0f}"),
]
COUNTED = {"get_p50": "get", "single_put": "single_put", "after_put_p50": "after_put"} | {
    f"{k}_p50": k for k in ("vec", "vec_filter", "ns_vec", "ns_filter", "filter", "hybrid",
                            "ns_hybrid")}


@dataclass(frozen=True)
class Target:
    """``metric`` of remem-sqlite (default configuration) against ``limit``, or against
    ``factor`` times ``versus``'s figure in the same run."""

    label: str
    metric: str
    kind: str  # "max" or "min"
    limit: float | None = None
    versus: str | None = None
    factor: float = 1.0


TARGETS: list[Target] = [
    Target("vector search p95 <= 10 ms", "vec_p95", "max", 10.0),
    Target("  with recall@10 = 1.0", "recall_vec", "min", 1.0),
    Target("filtered vector search p95 <= 20 ms", "vec_filter_p95", "max", 20.0),
    Target("filter-only in one namespace p95 <= 3 ms", "ns_filter_p95", "max", 3.0),
    Target("vector search in one namespace p95 <= 3 ms", "ns_vec_p95", "max", 3.0),
    Target(f"batched put (batches of {BATCH}) >= 12,000 items/s", "batch_put", "min", 12_000.0),
    Target("  and >= langgraph-sqlite's", "batch_put", "min", versus="langgraph-sqlite"),
    Target(f"bulk load (batches of {BULK}) >= 10,000 items/s", "bulk_put", "min", 10_000.0),
    Target("single put >= 1,000 items/s", "single_put", "min", 1_000.0),
    Target("file <= 1.2x langgraph-sqlite's", "file_mb", "max", versus="langgraph-sqlite",
           factor=1.2),
    Target("peak RSS <= 2 KB/item above vectors", "rss_per_item", "max", 2048.0),
]


def spawn(name: str, n: int, opts: argparse.Namespace) -> dict[str, Any]:
    if name.startswith("langgraph") and (
            importlib.util.find_spec("langgraph") is None
            or importlib.util.find_spec("langgraph.store.sqlite") is None):
        # remem's test extra brings langgraph without its SQLite store: the bench extra has it
        return {"backend": name, "n": n,
                "skipped": "LangGraph's stores are not installed (the bench extra has them)"}
    cmd = [sys.executable, __file__, "--worker", name, str(n), "--queries", str(opts.queries),
           "--gets", str(opts.gets), "--single", str(opts.single), "--budget", str(opts.budget),
           "--min-queries", str(opts.min_queries)] + (
        ["--tmpdir", opts.tmpdir] if opts.tmpdir else [])
    env = dict(os.environ)
    if opts.blas_threads:
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env[var] = str(opts.blas_threads)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=opts.timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"backend": name, "n": n, "skipped": f"timed out after {opts.timeout:.0f} s"}
    for line in proc.stdout.splitlines():
        if line.startswith(MARK):
            result: dict[str, Any] = json.loads(line[len(MARK):])
            return result
    tail = proc.stderr.strip().splitlines()[-3:]
    return {"backend": name, "n": n, "skipped": f"worker failed: {' | '.join(tail)}"}


def machine() -> dict[str, Any]:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text()
                .splitlines() if line.startswith("model name")), platform.processor())
    versions: dict[str, str] = {}
    for dist in ("remem", "numpy", "langgraph", "langgraph-checkpoint-sqlite", "sqlite-vec",
                 "pysqlite3-binary"):
        try:
            versions[dist] = version(dist)
        except Exception:
            versions[dist] = "not installed"
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
            "platform": platform.platform(), "sqlite3": sqlite3.sqlite_version,
            "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30,
                               1), "versions": versions}


def fmt(value: float | None, spec: str) -> str:
    return "n/a" if value is None else spec.format(value)


def ratio(a: float | None, b: float | None, better: str | None) -> str:
    if better is None or a is None or b is None or a <= 0 or b <= 0:
        return "-"
    return f"{(a / b if better == 'high' else b / a):.1f}x"


_KIND = {"sqlite": "SQLite", "memory": "In-memory"}


def _size_table(title: str, by_backend: dict[str, dict[str, Any]], backends: list[str]) -> Any:
    from rich.table import Table

    pairs = [p for p in PAIRS if p[0] in backends and p[1] in backends]
    table = Table(title=title, title_justify="left")
    table.add_column("metric")
    for name in backends:
        table.add_column(name, justify="right")
    for a, _ in pairs:
        table.add_column(f"{a.removeprefix('remem-')}/lg", justify="right")
    table.add_column("note")
    for key, label, better, spec in METRICS:
        vals = {name: by_backend[name].get("metrics", {}).get(key) for name in backends}
        if all(v is None for v in vals.values()):
            continue  # e.g. file size in the memory table
        notes = []
        for name in backends:
            r = by_backend[name]
            counted = COUNTED.get(key)
            if counted and "counts" in r and counted in r["counts"]:
                planned = {"get": "gets", "single_put": "single",
                           "after_put": "after_put"}.get(counted, "queries")
                if r["counts"][counted] < r["plan"][planned]:
                    notes.append(f"{name}: {r['counts'][counted]} calls (time cap)")
            if vals[name] is None and "metrics" in r and key.startswith(("vec", "ns_vec")):
                notes.append(f"{name}: n/a (no vector search)")
        table.add_row(label, *(fmt(vals[n], spec) for n in backends),
                      *(ratio(vals[a], vals[b], better) for a, b in pairs), "; ".join(notes))
    return table


def report(results: dict[str, dict[str, dict[str, Any]]], backends: list[str]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=160)
    for size, by_backend in results.items():
        for kind in ("sqlite", "memory"):  # one table per kind: three stores and two ratios
            names = [b for b in backends if b.split("-")[1] == kind]
            if names:
                console.print(_size_table(f"{_KIND[kind]} stores, N = {int(size):,} items",
                                          by_backend, names))
        for name in backends:
            r = by_backend[name]
            for note in r.get("notes", []) + ([r["skipped"]] if "skipped" in r else []):
                console.print(f"  [dim]{name}: {note}[/dim]")
    if "remem-sqlite" in backends and results:
        size = "100000" if "100000" in results else max(results, key=int)
        table = Table(title=f"Targets, remem-sqlite (default: keyword indexing on) at "
                            f"N = {int(size):,}", title_justify="left")
        for col in ("target", "measured", "limit", "result"):
            table.add_column(col)
        for target, value, limit, ok in check_targets(results[size]):
            spec = next(s for k, _, _, s in METRICS if k == target.metric)
            table.add_row(target.label, fmt(value, spec), fmt(limit, spec),
                          "[green]PASS[/green]" if ok else "[red]MISS[/red]")
        console.print(table)


def check_targets(by_backend: dict[str, dict[str, Any]]
                  ) -> list[tuple[Target, float | None, float | None, bool]]:
    """(target, measured, limit, met) for remem-sqlite; a limit relative to a backend that
    did not run is ``None`` (and the target is not met)."""
    mine = by_backend["remem-sqlite"].get("metrics", {})
    out = []
    for target in TARGETS:
        value = mine.get(target.metric)
        limit = target.limit
        if target.versus is not None:
            other = by_backend.get(target.versus, {}).get("metrics", {}).get(target.metric)
            limit = None if other is None else other * target.factor
        ok = value is not None and limit is not None and (
            value <= limit if target.kind == "max" else value >= limit)
        out.append((target, value, limit, ok))
    return out


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if "postgres" in args and args[args.index("postgres") - 1] == "--backend":
        from store_postgres import main as postgres_main  # benchmarks/store_postgres.py

        postgres_main(args)
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite",
                        help="postgres: remem's and LangGraph's PostgresStore "
                             "(benchmarks/store_postgres.py)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON")
    parser.add_argument("--quick", action="store_true", help="2000 items, few queries")
    parser.add_argument("--queries", type=int, default=200, help="queries per search metric")
    parser.add_argument("--gets", type=int, default=1000)
    parser.add_argument("--single", type=int, default=500, help="individual puts")
    parser.add_argument("--budget", type=float, default=60.0,
                        help="seconds per metric before a slow backend runs fewer calls")
    parser.add_argument("--min-queries", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=3600.0, help="per worker, seconds")
    parser.add_argument("--tmpdir", default=None, help="where the SQLite files go")
    parser.add_argument("--blas-threads", type=int, default=None,
                        help="set OPENBLAS/OMP/MKL_NUM_THREADS in the workers (default: unset)")
    parser.add_argument("--worker", nargs=2, metavar=("BACKEND", "SIZE"), help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    if opts.worker:
        result = run_worker(opts.worker[0], int(opts.worker[1]), opts)
        print(MARK + json.dumps(result), flush=True)
        return
    if opts.quick:
        opts.sizes, opts.queries, opts.gets, opts.single, opts.budget = [2000], 50, 200, 100, 5.0
    backends = [b.strip() for b in opts.backends.split(",") if b.strip()]
    unknown = sorted(set(backends) - set(BACKENDS))
    if unknown:
        parser.error(f"unknown backends {unknown}; choose from {', '.join(BACKENDS)}")
    plan = {"queries": opts.queries, "gets": opts.gets, "single": opts.single,
            "after_put": EXTRA_PUTS}
    results: dict[str, dict[str, dict[str, Any]]] = {}
    for n in opts.sizes:
        for name in backends:
            print(f"running {name} at N={n:,} ...", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            results.setdefault(str(n), {})[name] = spawn(name, n, opts) | {"plan": plan}
            print(f"  done in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    report(results, backends)
    if opts.out:
        opts.out.parent.mkdir(parents=True, exist_ok=True)
        doc = {"machine": machine(), "config": {"dims": DIMS, "namespaces": NAMESPACES,
                                                "bulk_batch": BULK, "batch": BATCH, "k": K,
                                                "budget_s": opts.budget,
                                                "blas_threads": opts.blas_threads,
                                                **plan},
               "targets": {size: [{"target": t.label, "metric": t.metric, "kind": t.kind,
                                   "measured": v, "limit": lim, "met": ok}
                                  for t, v, lim, ok in check_targets(by_backend)]
                           for size, by_backend in results.items()
                           if "remem-sqlite" in by_backend},
               "results": results}
        opts.out.write_text(json.dumps(doc, indent=2) + "\n")
        print(f"wrote {opts.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
