"""What reading records through their parsers costs, and how fast ``remem doctor`` scans.

    python benchmarks/bad_records.py                       # 5,000 memories in a SQLite file
    python benchmarks/bad_records.py --memories 20000 --out benchmarks/results/bad_records.json

* ``listing``: one ``Memory.get_all`` page of 100 memories (the store's search plus every
  record through :func:`remem.memory.records.memory_records`), and the parse alone on the
  same 100 items, best of several rounds: the share of a listing the strict parse takes;
* ``parse``: records per second through ``memory_records`` (the skip path included), over
  all the memories;
* ``doctor``: :func:`remem.cli.doctor.scan` over the whole database (every item, every
  family's parser), items per second.

The table goes to stdout; ``--out`` writes the figures and the machine as JSON.
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from remem.api import Memory
from remem.cli.doctor import scan
from remem.memory.records import memory_records
from remem.store import open_store
from remem.store.types import PutOp

NAMESPACE = ("memories", "user", "u1")


def _best(work: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def run(memories: int, rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "bench.db")
        store = open_store(db)
        now = 1_750_000_000.0
        store.batch([PutOp(NAMESPACE, f"mem_{i:06d}", {
            "type": "memory", "id": f"mem_{i:06d}", "kind": "fact", "schema": "Fact",
            "content": f"fact number {i} about Alice", "text": f"fact number {i} about Alice",
            "status": "current", "valid_at": now + i, "invalid_at": None, "version": 1,
            "source": {"thread_id": "t1", "message_ids": ["m1"], "input_hash": None},
            "content_hash": f"{i:032x}", "metadata": {}}, index=False)
            for i in range(memories)])
        memory = Memory(store)
        page = store.search(NAMESPACE, filter={"type": "memory", "status": "current"},
                            limit=100)
        listing = _best(lambda: memory.get_all(namespace=NAMESPACE, limit=100), rounds)
        parse_page = _best(lambda: memory_records(page), rounds)
        everything = list(store.iter_items(NAMESPACE))
        parse_all = _best(lambda: memory_records(everything), max(1, rounds // 3))
        store.close()
        store = open_store(db)
        start = time.perf_counter()
        found, checked = scan(store)
        doctor = time.perf_counter() - start
        store.close()
    return {
        "memories": memories,
        "listing_100_ms": listing * 1000,
        "parse_100_ms": parse_page * 1000,
        "parse_share_of_listing": parse_page / listing,
        "parse_records_per_s": len(everything) / parse_all,
        "doctor_items": sum(checked.values()),
        "doctor_bad": len(found),
        "doctor_s": doctor,
        "doctor_items_per_s": sum(checked.values()) / doctor,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    result = run(args.memories, args.rounds)
    print("| measure | value |\n|---|---|")
    print(f"| Memory.get_all, 100 of {result['memories']:,} | "
          f"{result['listing_100_ms']:.2f} ms |")
    print(f"| of which the 100 parses | {result['parse_100_ms']:.2f} ms "
          f"({result['parse_share_of_listing']:.0%}) |")
    print(f"| memory_records throughput | {result['parse_records_per_s']:,.0f} records/s |")
    print(f"| remem doctor scan | {result['doctor_items']:,} records in "
          f"{result['doctor_s']:.2f} s ({result['doctor_items_per_s']:,.0f}/s, "
          f"{result['doctor_bad']} bad) |")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"result": result, "machine": {
            "python": platform.python_version(), "platform": platform.platform()}},
            indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
