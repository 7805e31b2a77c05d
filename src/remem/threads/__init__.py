"""Short-term memory: threads, their checkpoints, trimming, running summaries and search.

A thread is one conversation: its messages, stored once, and a checkpoint after every change,
so it can be resumed, rewound, forked or copied from any earlier point. Long histories are
trimmed (:func:`trim_messages`) or folded into a running summary (:func:`compact`) for the
prompt; :class:`ThreadIndex` makes past threads searchable.

Every operation is a request value (:mod:`remem.threads.requests`); :class:`ThreadAPI` holds
the methods that build and run them, shared by :class:`ThreadStore` (embedded),
:class:`ScopedThreads` (one tenant's view of a store) and :class:`RemoteThreads` (a server's
threads, ``remem.Client(...).threads``).
"""

from remem.threads.api import ThreadAPI
from remem.threads.remote import RemoteThreads
from remem.threads.scoped import ScopedThreads
from remem.threads.search import MessageMatch, ThreadHit, ThreadIndex
from remem.threads.store import ThreadStore
from remem.threads.summary import (
    Compaction,
    SummaryPolicy,
    acompact,
    compact,
    needs_compaction,
    with_summary,
)
from remem.threads.thread import Thread
from remem.threads.trim import (
    check_anthropic_sequence,
    check_openai_sequence,
    safe_cut,
    trim_messages,
)
from remem.threads.types import Checkpoint, ThreadInfo

__all__ = [
    "Checkpoint",
    "Compaction",
    "MessageMatch",
    "RemoteThreads",
    "ScopedThreads",
    "SummaryPolicy",
    "Thread",
    "ThreadAPI",
    "ThreadHit",
    "ThreadIndex",
    "ThreadInfo",
    "ThreadStore",
    "acompact",
    "check_anthropic_sequence",
    "check_openai_sequence",
    "compact",
    "needs_compaction",
    "safe_cut",
    "trim_messages",
    "with_summary",
]
