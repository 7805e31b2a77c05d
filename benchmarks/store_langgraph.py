"""LangGraph's store API over remem beside LangGraph's own SqliteStore, on the same workload:
what a LangGraph user sees by swapping the store (target: vector search at 100,000 items at
least 10x faster through the adapter).

Run from the repository root (needs the ``bench`` and ``langgraph`` extras)::

    python benchmarks/store_langgraph.py --out benchmarks/results/store_langgraph.json
    python benchmarks/store_langgraph.py --sizes 10000 --queries 50      # a quick run

The workload is ``benchmarks/store.py``'s (the same texts, 384-d vectors precomputed and served
by an O(1) lookup, so embedding time is excluded, 100 namespaces, perturbed-item queries).
Both stores are SQLite files in WAL mode, loaded with ``batch`` in runs of 500 puts through
LangGraph's API: ``RememStore.open(path, index=...)`` (remem's defaults, keyword indexing on)
and ``SqliteStore`` with sqlite-vec. Each query is ``store.search(prefix, query=..., limit=10)``
over every namespace, then over one namespace; p50 / p95 in ms and the ratio are printed as a
table and written as JSON, with the recall@10 of each against exact search.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from langgraph.store.base import PutOp

import store as peer  # benchmarks/store.py: the shared workload
from remem.integrations.langgraph import RememStore


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[max(0, min(len(ordered) - 1, int(len(ordered) * q + 0.5) - 1))], 3)


def _load(store: Any, w: peer.Workload) -> float:
    began = time.perf_counter()
    for start in range(0, w.n, peer.BULK):
        store.batch([PutOp(peer.namespace(i), f"k{i}", w.value(i))
                     for i in range(start, min(w.n, start + peer.BULK))])
    return time.perf_counter() - began


def _exact(w: peer.Workload, query: int, prefix: tuple[str, ...]) -> set[str]:
    vectors = w.vectors[: w.n]
    scores = vectors @ w.vectors[w.rows[w.query_texts[query]]]
    if len(prefix) > 1:  # one namespace
        wanted = int(prefix[1].removeprefix("ns"))
        scores = np.where(np.arange(w.n) % peer.NAMESPACES == wanted, scores, -np.inf)
    return {f"k{i}" for i in np.argsort(-scores)[: peer.K]}


def _searches(store: Any, w: peer.Workload, prefix_of: Any) -> tuple[list[float], float]:
    timings, recalls = [], []
    for query, text in enumerate(w.query_texts):
        prefix = prefix_of(query)
        began = time.perf_counter()
        hits = store.search(prefix, query=text, limit=peer.K)
        timings.append((time.perf_counter() - began) * 1000)
        recalls.append(len({hit.key for hit in hits} & _exact(w, query, prefix)) / peer.K)
    return timings, statistics.fmean(recalls)


def open_langgraph_sqlite(path: Path, w: peer.Workload) -> Any:
    """LangGraph's SqliteStore with sqlite-vec, opened as benchmarks/store.py opens it."""
    found = peer.extension_sqlite()
    if found is None:
        raise SystemExit("LangGraph's SqliteStore needs sqlite-vec and an sqlite3 that loads "
                         "extensions: pip install -e '.[bench]'")
    return peer.langgraph_sqlite(path, found[0], peer.langgraph_index(w))


def run(size: int, queries: int) -> dict[str, Any]:
    """Load both stores with ``size`` items and time the searches."""
    w = peer.make_workload(size, queries, 0, 0)
    figures: dict[str, Any] = {"items": size, "queries": queries}
    with tempfile.TemporaryDirectory() as directory:
        index = {"dims": peer.DIMS, "embed": peer.langgraph_embed(w), "fields": ["text"]}
        stores = {
            "remem (RememStore over SQLite)": RememStore.open(
                str(Path(directory) / "remem.db"), index=index),  # type: ignore[arg-type]
            "langgraph SqliteStore": open_langgraph_sqlite(Path(directory) / "lg.db", w),
        }
        for name, store in stores.items():
            load = _load(store, w)
            everywhere, recall_all = _searches(store, w, lambda q: ("bench",))
            one, recall_one = _searches(store, w, lambda q: peer.namespace(q))
            figures[name] = {"load_s": round(load, 1), "all_p50_ms": _p(everywhere, 0.5),
                             "all_p95_ms": _p(everywhere, 0.95), "all_recall": recall_all,
                             "one_ns_p50_ms": _p(one, 0.5), "one_ns_p95_ms": _p(one, 0.95),
                             "one_ns_recall": recall_one}
            if isinstance(store, RememStore):
                store.close()
            else:
                store.conn.close()
    remem, lg = figures["remem (RememStore over SQLite)"], figures["langgraph SqliteStore"]
    figures["ratio_all_p50"] = round(lg["all_p50_ms"] / remem["all_p50_ms"], 1)
    figures["ratio_one_ns_p50"] = round(lg["one_ns_p50_ms"] / remem["one_ns_p50_ms"], 1)
    return figures


def main(argv: list[str] | None = None) -> int:
    """Parse the options, run each size, print the table, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if importlib.util.find_spec("langgraph.store.sqlite") is None:
        raise SystemExit("needs langgraph-checkpoint-sqlite: pip install -e '.[bench]'")
    results = [run(size, args.queries) for size in args.sizes]
    print("| items | store | load s | search all p50 ms | p95 ms | recall@10 "
          "| one namespace p50 ms | p95 ms | recall@10 |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for figures in results:
        for name in ("remem (RememStore over SQLite)", "langgraph SqliteStore"):
            f = figures[name]
            print(f"| {figures['items']:,} | {name} | {f['load_s']} | {f['all_p50_ms']} | "
                  f"{f['all_p95_ms']} | {f['all_recall']:.2f} | {f['one_ns_p50_ms']} | "
                  f"{f['one_ns_p95_ms']} | {f['one_ns_recall']:.2f} |")
        print(f"LangGraph SqliteStore / remem, vector search p50: {figures['ratio_all_p50']}x "
              f"(all namespaces), {figures['ratio_one_ns_p50']}x (one namespace); target "
              ">= 10x at 100,000")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"results": results, "python": platform.python_version(),
                                        "sqlite": sqlite3.sqlite_version}, indent=2) + "\n",
                            encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
