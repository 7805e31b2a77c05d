"""Ids that sort by creation: ``prefix_`` + 12 hex digits of milliseconds + 14 hex digits.

Within one process the ids strictly increase, even for many ids made in one millisecond: the
tail after the first id of a millisecond counts up from a random start instead of being
drawn afresh. Readers that break ties by key (search, history, listings) then see records in
the order they were made, not in a random order that changes from run to run. Across
processes the random start keeps ids unique; a forked child starts a fresh sequence so it
never repeats its parent's next ids.
"""

from __future__ import annotations

import os
import threading
import time

__all__ = ["new_id"]

_TAIL_BITS = 56
#: a fresh tail leaves half its range as headroom for the ids that follow in one millisecond
_FRESH_TAIL_BITS = _TAIL_BITS - 1


class _Sequence:
    """The last (milliseconds, tail) handed out; shared by every thread, under a lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._millis = 0
        self._tail = 0

    def reset(self) -> None:
        self._lock = threading.Lock()  # a child forked while a parent thread held it
        self._millis = 0
        self._tail = 0

    def next(self) -> tuple[int, int]:
        now = int(time.time() * 1000)
        with self._lock:
            if now > self._millis:
                self._millis = now
                self._tail = _fresh_tail()
            else:
                # the same millisecond, or the wall clock stepped back: keep counting up
                self._tail += 1
                if self._tail >= 1 << _TAIL_BITS:
                    self._millis += 1
                    self._tail = _fresh_tail()
            return self._millis, self._tail


def _fresh_tail() -> int:
    return int.from_bytes(os.urandom(7), "big") >> (_TAIL_BITS - _FRESH_TAIL_BITS)


_SEQUENCE = _Sequence()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_SEQUENCE.reset)


def new_id(prefix: str = "msg") -> str:
    """A new unique id such as ``msg_3f2a...``: 26 hex characters after the prefix, time
    ordered, and strictly increasing within this process."""
    # os.urandom, not uuid4: a caller that patches uuid.uuid4 with a counter, as LangGraph's
    # tests do, must not make two ids equal
    millis, tail = _SEQUENCE.next()
    return f"{prefix}_{millis:012x}{tail:014x}"
