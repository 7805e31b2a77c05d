"""Async twins of sync methods, made in one place instead of copied per method."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

__all__ = ["in_thread"]

P = ParamSpec("P")
R = TypeVar("R")


def in_thread(fn: Callable[P, R]) -> Callable[P, Coroutine[Any, Any, R]]:
    """An async method that runs ``fn`` (same arguments, same result) in a worker thread.

    SQLite calls block, so the event loop hands them to a thread; behaviour is identical to the
    sync method by construction (the async-parity test checks the pairs stay complete).
    """

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(fn, *args, **kwargs)

    wrapper.__doc__ = f"Async :meth:`{fn.__name__}` (same arguments and result)."
    wrapper.__name__ = wrapper.__qualname__ = f"a{fn.__name__}"
    return wrapper
