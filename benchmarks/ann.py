"""Approximate search of large SQLite scopes (remem.store.ann): recall@10 against exact and
latency per shortlist, at a given file size, with the peak RSS of the serving process.

The workload is benchmarks/scale.py's: N items of 1,000 other tenants plus a 200-item small
tenant, texts of 20-60 words, 384-d vectors from its hash embedder, queries that are 8-word
windows of the small tenant's texts. Each item also carries ``pct`` (its number mod 100), so
``filter={"pct": 7}`` matches 1% of the items.

Per size, two subprocesses (``--worker``), so each peak RSS is its own:

* ``build``: loads the file (keyword index off: only vectors are measured) unless it is kept
  from an earlier run, and computes the exact top 10 of every query in NumPy from the table
  (all items, and under the 1% filter).
* ``search``: opens the file as a serving process would (``ann=AnnConfig(above=...)``); times
  the first all-items search (answered exactly while the index builds in the background) and
  the build; then, for each ``--shortlist`` value, runs the queries over all items (recall
  against the exact top 10, p50/p95), the 1% filter (searched exactly among the matching
  items), and the small tenant (exact, its partition); its peak RSS is read before the
  exact streamed baseline (``ann=False``), which runs last on a few queries.

Run: ``python benchmarks/ann.py --sizes 100000 300000 --out benchmarks/results/ann.json``.
A million items take about ten minutes to load on two cores (kept with ``--dir``); report
the machine's load average beside the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale  # benchmarks/scale.py: the workload and the hash embedder
import store as peer  # benchmarks/store.py: peak RSS, machine description

K = 10
MARK = "@@ANN@@"
FILTER = {"pct": 7}


def _open(path: Path, embedder: scale.HashEmbedder, **options: Any) -> Any:
    from remem.store import IndexConfig, SQLiteStore

    return SQLiteStore.open(path, index=IndexConfig(embedder=embedder, fields=("text",)),
                            keyword=False, **options)


def _value(text: str, i: int) -> dict[str, Any]:
    return {"text": text, "kind": f"k{i % 5}", "n": i, "pct": i % 100}


def _load(store: Any, n: int, embedder: scale.HashEmbedder) -> float:
    from remem.store import PutOp

    began = time.perf_counter()
    for at in range(0, n, scale.BULK):
        count = min(n, at + scale.BULK) - at
        batch = scale.texts(at, count)
        embedder.prime(batch)
        store.batch([PutOp(scale.other_ns(i), f"k{i}", _value(text, i))
                     for i, text in zip(range(at, at + count), batch, strict=True)])
    small = scale.texts(0, scale.SMALL, salt=1)
    embedder.prime(small)
    store.batch([PutOp(scale.SMALL_NS, f"s{i}", _value(text, 100 * i + 7))
                 for i, text in enumerate(small)])
    return (n + scale.SMALL) / (time.perf_counter() - began)


def _truth(path: Path, queries: np.ndarray) -> dict[str, list[list[str]]]:
    """Exact top ``K`` keys of every query, over all items and under the filter, read from
    the table in chunks (running top-k: memory stays small)."""
    import sqlite3

    conn = sqlite3.connect(path)
    best: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    cursor = conn.execute(
        "SELECT i.key, json_extract(i.value, '$.pct'), v.vec FROM vectors AS v "
        "JOIN items AS i ON i.id = v.item_id")
    while rows := cursor.fetchmany(16384):
        keys = np.array([r[0] for r in rows], dtype=object)
        pct = np.array([r[1] for r in rows])
        matrix = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(
            len(rows), -1)
        scores = queries @ matrix.T
        for name, mask in (("all", None), ("filter", pct == FILTER["pct"])):
            s = scores if mask is None else scores[:, mask]
            k = keys if mask is None else keys[mask]
            if s.shape[1] == 0:
                continue
            k = np.broadcast_to(k, (len(queries), len(k)))
            held = best.get(name)
            if held is not None:
                s = np.concatenate([held[0], s], axis=1)
                k = np.concatenate([held[1], k], axis=1)
            top = np.argsort(-s, axis=1, kind="stable")[:, :K]
            best[name] = (np.take_along_axis(s, top, 1), np.take_along_axis(k, top, 1))
    conn.close()
    return {name: [list(map(str, row)) for row in held[1]] for name, held in best.items()}


def build(n: int, opts: argparse.Namespace) -> dict[str, Any]:
    path = Path(opts.dir) / f"ann-{n}.db"
    embedder = scale.HashEmbedder()
    m: dict[str, Any] = {}
    if not path.exists():
        store = _open(path, embedder)
        m["load_per_s"] = _load(store, n, embedder)
        store.close()
    queries = embedder.embed_queries(scale.small_queries(opts.queries))
    saved = path.with_suffix(".truth.json")
    if "load_per_s" in m or not saved.exists() or len(json.loads(saved.read_text())["all"]) \
            != opts.queries:  # a kept file's truth is kept too
        t0 = time.perf_counter()
        saved.write_text(json.dumps(_truth(path, queries)))
        m["truth_s"] = time.perf_counter() - t0
    m["file_mb"] = path.stat().st_size / 2**20
    m["peak_rss_mb"] = peer.peak_rss_bytes() / 2**20
    return m


def _recall(got: list[list[str]], truth: list[list[str]]) -> float:
    return float(np.mean([len(set(g) & set(t)) / max(1, len(t))
                          for g, t in zip(got, truth, strict=True)]))


def _run(store: Any, texts: list[str], prefix: tuple[str, ...],
         flt: dict[str, Any] | None = None) -> tuple[list[list[str]], list[float]]:
    got, times = [], []
    for text in texts:
        t0 = time.perf_counter_ns()
        hits = store.search(prefix, query=text, filter=flt, limit=K, mode="vector")
        times.append((time.perf_counter_ns() - t0) / 1e6)
        got.append([h.key for h in hits])
    return got, times


def _pct(times: list[float], q: float) -> float:
    return float(np.percentile(times, q))


def _rss_mb() -> dict[str, float]:
    """Resident memory now, anonymous and file-backed (``/proc/self/status``), in MB."""
    out: dict[str, float] = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("VmRSS", "RssAnon", "RssFile"):
            out[name] = int(rest.split()[0]) / 1024
    return out


def search(n: int, opts: argparse.Namespace) -> dict[str, Any]:
    from remem.store.ann import AnnConfig

    path = Path(opts.dir) / f"ann-{n}.db"
    truth = json.loads(path.with_suffix(".truth.json").read_text())
    truth = {name: rows[:opts.queries] for name, rows in truth.items()}
    embedder = scale.HashEmbedder()
    texts = scale.small_queries(opts.queries)
    embedder.prime(texts)
    m: dict[str, Any] = {"curve": []}
    store = _open(path, embedder, ann=AnnConfig(above=opts.above))
    t0 = time.perf_counter()
    got = store.search((), query=texts[0], limit=K, mode="vector")  # starts the build
    m["first_search_ms"] = (time.perf_counter() - t0) * 1e3
    m["first_search_exact"] = [h.key for h in got] == truth["all"][0]
    builder = store._ann.builder
    if builder is not None:
        builder.join()
    m["build_s"] = time.perf_counter() - t0
    m["codes_mb"] = store._ann.codes.nbytes() / 2**20
    points = [(shortlist, 1) for shortlist in opts.shortlist] + [
        (AnnConfig().shortlist, threads) for threads in opts.scan_threads if threads != 1]
    for shortlist, threads in points:
        # the knobs are read per search: one build serves every point of the curve
        store._ann_config = AnnConfig(above=opts.above, shortlist=shortlist,
                                      scan_threads=threads)
        _run(store, texts[:3], ())
        got, times = _run(store, texts, ())
        m["curve"].append({"shortlist": shortlist, "scan_threads": threads,
                           "recall": _recall(got, truth["all"]),
                           "p50": _pct(times, 50), "p95": _pct(times, 95)})
        print(f"  {json.dumps(m['curve'][-1])}", file=sys.stderr, flush=True)
    store._ann_config = AnnConfig(above=opts.above)
    # the 1% filter: searched exactly among the matching items (shortlist-independent), so
    # once, on fewer queries (each reads the filter over the whole file)
    few = opts.filter_queries
    fgot, ftimes = _run(store, texts[:few], (), FILTER)
    m["filter"] = {"queries": few, "recall": _recall(fgot, truth["filter"][:few]),
                   "p50": _pct(ftimes, 50), "p95": _pct(ftimes, 95)}
    print(f"  filter: {json.dumps(m['filter'])}", file=sys.stderr, flush=True)
    _run(store, texts[:1], scale.SMALL_NS)
    m["small_p95"] = _pct(_run(store, texts, scale.SMALL_NS)[1], 95)
    m["rss_now_mb"] = _rss_mb()
    store.close()
    m["peak_rss_mb"] = peer.peak_rss_bytes() / 2**20
    exact = _open(path, embedder, ann=False)
    got, times = _run(exact, texts[:opts.exact_queries], ())
    m["exact_p95"] = _pct(times, 95)
    m["exact_recall"] = _recall(got, truth["all"][:opts.exact_queries])
    exact.close()
    return m


def spawn(part: str, n: int, opts: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--worker", part, str(n), "--dir", opts.dir,
           "--queries", str(opts.queries), "--exact-queries", str(opts.exact_queries),
           "--filter-queries", str(opts.filter_queries),
           "--shortlist", *map(str, opts.shortlist),
           "--scan-threads", *map(str, opts.scan_threads)]
    if opts.above is not None:
        cmd += ["--above", str(opts.above)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    sys.stderr.write(out.stderr)
    line = next((x for x in out.stdout.splitlines() if x.startswith(MARK)), None)
    if out.returncode or line is None:
        raise SystemExit(f"{part} worker at {n} failed ({out.returncode})")
    return dict(json.loads(line[len(MARK):]))


def report(results: dict[str, dict[str, Any]]) -> None:
    print("| N | shortlist | scan threads | recall@10, all items | p50 / p95 (ms) |")
    print("|---|---|---|---|---|")
    for n, r in results.items():
        for c in r["search"]["curve"]:
            print(f"| {int(n):,} | {c['shortlist']:,} | {c['scan_threads']} | "
                  f"{c['recall']:.3f} | {c['p50']:.1f} / {c['p95']:.1f} |")
    print()
    print("| N | 1% filter recall, p50 / p95 ms | exact p95 ms (ann=False) | small tenant p95 ms "
          "| first search ms (exact, while building) | build s | codes MB | peak RSS serving MB |")
    print("|---|---|---|---|---|---|---|---|")
    for n, r in results.items():
        s = r["search"]
        f = s["filter"]
        print(f"| {int(n):,} | {f['recall']:.3f}, {f['p50']:,.0f} / {f['p95']:,.0f} | "
              f"{s['exact_p95']:,.0f} | {s['small_p95']:.1f} | {s['first_search_ms']:,.0f} | "
              f"{s['build_s']:.1f} | {s['codes_mb']:.0f} | {s['peak_rss_mb']:.0f} |")
    print()
    for n, r in results.items():
        print(f"N={int(n):,}: 1-minute load average before / after the search worker "
              f"{r['search']['load_avg_1m_before_after']}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--shortlist", type=int, nargs="+", default=[2048, 4096, 8192, 16384])
    parser.add_argument("--scan-threads", type=int, nargs="+", default=[1, 2],
                        help="AnnConfig.scan_threads values also run at the default shortlist")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--exact-queries", type=int, default=3)
    parser.add_argument("--filter-queries", type=int, default=10)
    parser.add_argument("--above", type=int, default=50_000,
                        help="AnnConfig.above (default 50,000: a 100k file uses the index too)")
    parser.add_argument("--dir", default=None, help="where the files are kept (reused)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    if opts.worker:
        part, n = opts.worker
        result = (build if part == "build" else search)(int(n), opts)
        print(MARK + json.dumps(result), flush=True)
        return
    opts.dir = opts.dir or tempfile.mkdtemp(prefix="remem-ann-")
    results: dict[str, dict[str, Any]] = {}
    for n in opts.sizes:
        for part in ("build", "search"):
            print(f"{part} at N={n:,} (load {os.getloadavg()[0]:.1f}) ...", file=sys.stderr,
                  flush=True)
            before = os.getloadavg()
            results.setdefault(str(n), {})[part] = got = spawn(part, n, opts)
            got["load_avg_1m_before_after"] = [round(before[0], 2), round(os.getloadavg()[0], 2)]
            print(f"  {json.dumps(got)}", file=sys.stderr, flush=True)
            if opts.out:
                opts.out.parent.mkdir(parents=True, exist_ok=True)
                opts.out.write_text(json.dumps({"machine": peer.machine(), "k": K,
                                                "queries": opts.queries, "above": opts.above,
                                                "results": results}, indent=2) + "\n")
    report(results)


if __name__ == "__main__":
    main()
