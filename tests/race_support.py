"""Racing threads in tests: start them together so that they overlap."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any


def race(threads: int, work: Callable[[int], Any]) -> list[Any]:
    """``work(i)`` in ``threads`` threads started together on a barrier; their results in
    order of ``i`` (the first error raises)."""
    start = threading.Barrier(threads)

    def run(i: int) -> Any:
        start.wait()
        return work(i)

    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(run, range(threads)))
