"""Hostile text through keyword analysis: does the time grow linearly with the text?

    python benchmarks/hostile_text.py                       # 64 KiB, 256 KiB, 1 MiB
    python benchmarks/hostile_text.py --sizes 65536 1048576 --out hostile.json
    python benchmarks/hostile_text.py --stemmers            # a stemmer per thread or a lock
    python benchmarks/hostile_text.py --server              # another tenant's searches

Each input (one word of random letters, ``"y" * n``, digits, ``"((((..."``, Han characters
without punctuation, ordinary English) at each size (in characters) is timed through a fresh
``DefaultTokenizer`` and through a put and a keyword search of a SQLite file store; best of
``--repeat``. "µs/KiB" at the largest size against the smallest says whether the time is
linear (a ratio near 1; quadratic doubles it at every 4x). Target: a 1 MiB single word
analysed in under 0.5 s.

``--stemmers``: ``--threads`` threads stem ``--words`` new words each, with a Snowball stemmer
per thread (``threading.local``, what the tokenizer does) and with one stemmer behind a lock.

``--server``: ``remem serve`` (a child process, the default 2 store threads, SQLite); tenant
A puts ``"y" * 1_000_000`` twice at once, ``--rounds`` times, while tenant B searches its
own items over and over; B's latencies while A's writes are under way are reported (target:
p95 under 100 ms).
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from remem.retrieval.tokenize import DefaultTokenizer
from remem.store import KeywordConfig, open_store
from remem.testing.server import free_port

SIZES = (64 * 1024, 256 * 1024, 1024 * 1024)
SEED = 32
_WORDS = ["the", "quick", "brown", "fox", "jumped", "over", "a", "lazy", "dog", "while", "we",
          "were", "hiking", "near", "the", "river", "and", "talking", "about", "pottery",
          "classes", "yesterday", "afternoon"]


def _english(n: int, rng: random.Random) -> str:
    out: list[str] = []
    size = 0
    while size < n:
        word = rng.choice(_WORDS)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)[:n]


INPUTS: dict[str, Callable[[int, random.Random], str]] = {
    "one word": lambda n, rng: "".join(rng.choice("abcdefghijklmnopqrstuvwxyz")
                                       for _ in range(n)),
    "y * n": lambda n, rng: "y" * n,
    "digits": lambda n, rng: "".join(rng.choice("0123456789") for _ in range(n)),
    "((((": lambda n, rng: "(" * n,
    "Han": lambda n, rng: "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(n)),
    "English": _english,
}


def _best(repeat: int, run: Callable[[], Any]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def measure_inputs(sizes: list[int], repeat: int, directory: Path) -> list[dict[str, Any]]:
    """One row per input and size: tokenize, put and search seconds, terms made."""
    rows: list[dict[str, Any]] = []
    for name, make in INPUTS.items():
        for size in sizes:
            text = make(size, random.Random(SEED + size))
            terms = DefaultTokenizer().tokenize(text)
            tokenize = _best(repeat, lambda t=text: DefaultTokenizer().tokenize(t))  # type: ignore[misc]
            query = text if name not in ("Han", "English") else text[:40]
            path = directory / f"hostile-{len(rows)}.db"
            with open_store(str(path), keyword=KeywordConfig(fields=("text",))) as store:
                puts = []
                searches = []
                for round_ in range(repeat):
                    start = time.perf_counter()
                    store.put(("hostile",), f"k{round_}", {"text": text})
                    puts.append(time.perf_counter() - start)
                    start = time.perf_counter()
                    found = store.search(("hostile",), query=query, mode="keyword", limit=3)
                    searches.append(time.perf_counter() - start)
            rows.append({"input": name, "chars": size, "terms": len(terms),
                         "longest_term": max(map(len, terms), default=0),
                         "tokenize_s": tokenize, "put_s": min(puts), "search_s": min(searches),
                         "found": len(found)})
            print(f"  {name} {size}: tokenize {tokenize:.3f} s", file=sys.stderr, flush=True)
    return rows


def print_inputs(rows: list[dict[str, Any]]) -> None:
    print(f"{'input':10} {'chars':>9} {'terms':>7} {'longest':>7} {'tokenize s':>10} "
          f"{'put s':>7} {'search s':>8} {'tok µs/KiB':>10} {'put µs/KiB':>10}")
    for row in rows:
        kib = row["chars"] / 1024
        print(f"{row['input']:10} {row['chars']:>9} {row['terms']:>7} {row['longest_term']:>7} "
              f"{row['tokenize_s']:>10.4f} {row['put_s']:>7.3f} {row['search_s']:>8.3f} "
              f"{row['tokenize_s'] / kib * 1e6:>10.1f} {row['put_s'] / kib * 1e6:>10.1f}")
    print("\nlargest / smallest size, time per KiB (1.0: linear; quadratic: x the size ratio)")
    for name in INPUTS:
        mine = [r for r in rows if r["input"] == name]
        low, high = mine[0], mine[-1]
        scale = high["chars"] / low["chars"]
        ratios = {key: (high[key] / high["chars"]) / max(low[key] / low["chars"], 1e-12)
                  for key in ("tokenize_s", "put_s")}
        print(f"  {name:10} (x{scale:.0f} the text): tokenize {ratios['tokenize_s']:.2f}, "
              f"put {ratios['put_s']:.2f}")


# -- a stemmer per thread, or one behind a lock ---------------------------------------------------

def measure_stemmers(threads: int, words: int, repeat: int) -> list[dict[str, Any]]:
    """Seconds for ``threads`` threads to stem ``words`` new words each, both ways."""
    import snowballstemmer  # type: ignore[import-untyped]

    rng = random.Random(SEED)
    lists = [["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 14)))
              for _ in range(words)] for _ in range(threads)]

    def per_thread() -> Callable[[str], str]:
        local = threading.local()

        def stem(word: str) -> str:
            try:
                stemmer = local.stemmer
            except AttributeError:
                stemmer = local.stemmer = snowballstemmer.stemmer("english")
            return str(stemmer.stemWord(word))
        return stem

    def locked() -> Callable[[str], str]:
        lock = threading.Lock()
        stemmer = snowballstemmer.stemmer("english")

        def stem(word: str) -> str:
            with lock:
                return str(stemmer.stemWord(word))
        return stem

    rows = []
    for count in sorted({1, threads}):
        for name, make in (("per thread", per_thread), ("lock", locked)):
            def run(make: Callable[[], Callable[[str], str]] = make, count: int = count) -> None:
                stem = make()
                with ThreadPoolExecutor(count) as pool:
                    list(pool.map(lambda ws: [stem(w) for w in ws], lists[:count]))
            seconds = _best(repeat, run)
            rows.append({"threads": count, "stemmer": name, "seconds": seconds,
                         "us_per_word": seconds / (count * words) * 1e6})
    return rows


# -- another tenant's searches on a real server --------------------------------------------------

_SERVER = """
import sys, uvicorn
from remem.server import ServerConfig, create_app
app = create_app(ServerConfig(db=sys.argv[1], mcp=False), ui=False)
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning",
            access_log=False)
"""


def measure_server(directory: Path, rounds: int) -> dict[str, Any]:
    """Tenant B's search latencies while tenant A's two hostile puts run."""
    from remem.server.keys import KeyStore

    db = str(directory / "server.db")
    with open_store(db) as store:
        keys = KeyStore(store)
        writer, reader = keys.create("writer")[0], keys.create("reader")[0]
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", _SERVER, db, str(port)])
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(url + "/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        b = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {reader}"},
                         timeout=60)
        for i in range(50):
            b.put("/v1/store/items", json={"namespace": ["notes"], "key": f"n{i}",
                                           "value": {"text": f"{_english(200, random.Random(i))}"}})
        quiet = [_timed_search(b) for _ in range(50)]
        busy: list[float] = []
        write_seconds: list[float] = []

        def write(key: str) -> None:
            with httpx.Client(base_url=url, timeout=120,
                              headers={"Authorization": f"Bearer {writer}"}) as a:
                start = time.perf_counter()
                answer = a.put("/v1/store/items", json={
                    "namespace": ["hostile"], "key": key, "value": {"text": "y" * 1_000_000}})
                write_seconds.append(time.perf_counter() - start)
                if answer.status_code != 200:
                    raise RuntimeError(f"hostile put answered {answer.status_code}")

        for round_ in range(rounds):
            writers = [threading.Thread(target=write, args=(f"y{round_}-{n}",))
                       for n in range(2)]
            for thread in writers:
                thread.start()
            while any(thread.is_alive() for thread in writers):
                busy.append(_timed_search(b))
            for thread in writers:
                thread.join()
        b.close()
    finally:
        server.terminate()
        server.wait(30)
    return {"rounds": rounds, "quiet": _summary(quiet), "during_writes": _summary(busy),
            "hostile_put_s": _summary(write_seconds)}


def _timed_search(client: httpx.Client) -> float:
    start = time.perf_counter()
    answer = client.post("/v1/store/search", json={"query": "pottery river", "mode": "keyword"})
    if answer.status_code != 200:
        raise RuntimeError(f"search answered {answer.status_code}")
    return time.perf_counter() - start


def _summary(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    return {"n": len(ordered), "p50_ms": statistics.median(ordered) * 1000,
            "p95_ms": ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000,
            "max_ms": ordered[-1] * 1000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES),
                        help="text sizes in characters")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs")
    parser.add_argument("--stemmers", action="store_true",
                        help="also compare a stemmer per thread with a shared one and a lock")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--words", type=int, default=50_000, help="new words per thread")
    parser.add_argument("--server", action="store_true",
                        help="also measure another tenant's searches during hostile puts")
    parser.add_argument("--rounds", type=int, default=5, help="pairs of hostile puts")
    parser.add_argument("--out", type=Path, help="write the results as JSON")
    args = parser.parse_args()
    report: dict[str, Any] = {"python": platform.python_version(),
                              "machine": platform.machine(), "sizes": args.sizes}
    with tempfile.TemporaryDirectory(prefix="remem-hostile-") as directory:
        report["inputs"] = measure_inputs(sorted(args.sizes), args.repeat, Path(directory))
        print_inputs(report["inputs"])
        if args.stemmers:
            report["stemmers"] = measure_stemmers(args.threads, args.words, args.repeat)
            print(f"\n{'threads':>7} {'stemmer':12} {'seconds':>8} {'µs/word':>8}")
            for row in report["stemmers"]:
                print(f"{row['threads']:>7} {row['stemmer']:12} {row['seconds']:>8.3f} "
                      f"{row['us_per_word']:>8.2f}")
        if args.server:
            report["server"] = measure_server(Path(directory), args.rounds)
            server = report["server"]
            print("\nanother tenant's keyword searches (ms)")
            for name in ("quiet", "during_writes"):
                row = server[name]
                print(f"  {name:14} n={row['n']:<4} p50 {row['p50_ms']:7.1f}  "
                      f"p95 {row['p95_ms']:7.1f}  max {row['max_ms']:7.1f}")
            put = server["hostile_put_s"]
            print(f"  each hostile put: p50 {put['p50_ms']:.0f} ms, max {put['max_ms']:.0f} ms")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
