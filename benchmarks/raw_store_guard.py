"""What the raw store's guard (remem.store.guarded.GuardedStore) costs.

    python benchmarks/raw_store_guard.py --hidden 0 1000 10000 --repeat 200

A fresh SQLite file per size: 200 raw items under ``notes``, then ``--hidden`` file records
(under ``files``, which a key that is not an admin key may not read), written after them so
they are the newest. On a tenant's scoped view, plain and guarded (admin and not), it times:

* a put of a raw item (the guard checks the op and passes the batch on);
* a newest-first search over everything (``limit=10``): the non-admin view reads past every
  file record first, up to ``HIDDEN_WINDOW``;
* a count over everything (the non-admin view adds one count per governed label to the
  batch);
* a listing of every namespace (the non-admin view pages past the governed ones).

Prints a table of the medians in milliseconds and writes the rows as JSON to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from remem.store import BaseStore, PutOp, open_store
from remem.store.guarded import GuardedStore
from remem.store.scoped import ScopedStore


def _median_ms(work: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def _fill(store: BaseStore, hidden: int) -> None:
    store.batch([PutOp(("tenants", "acme", "notes", f"n{n % 20}"), f"k{n}", {"text": "x"},
                       index=False) for n in range(200)])
    for start in range(0, hidden, 500):
        store.batch([PutOp(("tenants", "acme", "files", "default", "files", f"/d{n % 50}"),
                           f"f{n}.md", {"content": "y", "live": True}, index=False)
                     for n in range(start, min(hidden, start + 500))])


def run(hidden: int, repeat: int) -> list[dict[str, Any]]:
    """The rows of one size."""
    with tempfile.TemporaryDirectory() as tmp:
        base = open_store(str(Path(tmp) / "guard.db"))
        _fill(base, hidden)
        scoped = ScopedStore(base, ("tenants", "acme"))
        views: dict[str, BaseStore] = {"scoped (no guard)": scoped,
                                       "guarded, admin": GuardedStore(scoped, admin=True),
                                       "guarded, not admin": GuardedStore(scoped)}
        rows = []
        for name, view in views.items():
            rows.append({
                "hidden": hidden, "view": name,
                "search_ms": _median_ms(lambda v=view: v.search(limit=10), repeat),
                "count_ms": _median_ms(lambda v=view: v.count(), repeat),
                "list_ms": _median_ms(lambda v=view: v.list_namespaces(limit=100), repeat),
            })
        for row, view in zip(rows, views.values(), strict=True):
            # last: the items put are the newest, and would end the searches' reading early
            counter = iter(range(10**9))
            row["put_ms"] = _median_ms(lambda v=view, c=counter: v.put(
                ("notes", "bench"), f"p{next(c)}", {"text": "z"}, index=False), repeat)
        base.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hidden", type=int, nargs="+", default=[0, 1000, 10000])
    parser.add_argument("--repeat", type=int, default=100)
    parser.add_argument("--out", default="raw_store_guard.json")
    args = parser.parse_args()
    rows = [row for hidden in args.hidden for row in run(hidden, args.repeat)]
    print(f"{'hidden':>7} {'view':<20} {'put ms':>8} {'search ms':>10} {'count ms':>9} "
          f"{'list ms':>8}")
    for row in rows:
        print(f"{row['hidden']:>7} {row['view']:<20} {row['put_ms']:>8.3f} "
              f"{row['search_ms']:>10.3f} {row['count_ms']:>9.3f} {row['list_ms']:>8.3f}")
    Path(args.out).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
