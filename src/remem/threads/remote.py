"""``client.threads``: the thread API over HTTP, against ``remem serve``'s ``/v1/threads``.

:class:`RemoteThreads` inherits every method of :class:`~remem.threads.api.ThreadAPI`, the
same as :class:`~remem.threads.store.ThreadStore`, so code moves from embedded threads to a
server's by changing the line that makes them::

    threads = ThreadStore("memory.db")                                  # embedded
    threads = Client("http://127.0.0.1:8000", api_key="rk_...").threads  # served

Each request becomes one HTTP call in a pure core (:func:`call_of`: its row of
:data:`~remem.threads.operation_table.THREAD_OPERATIONS` builds it, ``Operation.call``, and
reads the answer, ``Operation.read``); the client's sync and async shells send it. The
server keeps the tenancy: its threads are the key's tenant's.

What cannot travel is refused up front with :class:`~remem.errors.UsageError`: a chat model
for :meth:`compact` (the server's LLM summarises), a token counter for :meth:`context`, or a
:class:`~remem.threads.summary.SummaryPolicy` with a custom counter. Messages travel as
OpenAI-style dicts, so the server gives them new ids and times; what you read back carries
the stored ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from remem.errors import UsageError
from remem.operations import Operation
from remem.threads.api import ThreadAPI
from remem.threads.operation_table import THREAD_OPERATIONS
from remem.threads.requests import (
    CompactRequest,
    CopyRequest,
    CreateThreadRequest,
    ForkRequest,
    ThreadRequest,
    custom_counter,
    local_fields,
)
from remem.threads.thread import Thread
from remem.transport import Call, Sender

__all__ = ["RemoteThreads", "call_of"]

R = TypeVar("R")

#: requests whose result is a new thread: the answer is its record, the result a handle
_NEW_THREAD = (CreateThreadRequest, ForkRequest, CopyRequest)


def _check_sendable(request: ThreadRequest[Any]) -> None:
    for name in sorted(local_fields(type(request))):
        if getattr(request, name) is not None:
            raise UsageError(
                f"{request.operation}({name}=...) cannot be sent to a server: it is a Python "
                f"object of this process (the server uses its own); leave {name} out")
    if isinstance(request, CompactRequest) and custom_counter(request.policy):
        raise UsageError("compact(policy=...) with a custom token counter cannot be sent to a "
                         "server (it counts with the default estimate); leave counter out")


_ROWS: Mapping[type[Any], Operation] = {row.request: row for row in THREAD_OPERATIONS}


def call_of(request: ThreadRequest[R], threads: RemoteThreads) -> Call[R]:
    """The HTTP call that runs ``request``: its row's (a new thread's answer, its record,
    becomes a :class:`Thread` handle on ``threads``)."""
    _check_sendable(request)
    row = _ROWS[type(request)]
    call: Call[Any] = row.call(request)
    if isinstance(request, _NEW_THREAD):
        def new_thread(data: Any) -> Thread:
            return Thread(threads, row.read(data).thread_id)
        call = Call(call.method, call.path, new_thread, call.json, call.params)
    return call


class RemoteThreads(ThreadAPI):
    """The threads of a ``remem serve`` server, through ``client`` (a
    :class:`remem.Client`); usually reached as ``client.threads``.

    Same methods, arguments and results as :class:`~remem.threads.store.ThreadStore`
    (sync and async); see the module docstring for what cannot be sent.
    """

    def __init__(self, client: Sender) -> None:
        self.client = client

    def __repr__(self) -> str:
        return f"RemoteThreads({self.client.url!r})"

    def run(self, request: ThreadRequest[R]) -> R:
        """Run one thread request on the server and return its result."""
        return self.client._send(call_of(request, self))

    async def arun(self, request: ThreadRequest[R]) -> R:
        """Async :meth:`run`."""
        return await self.client._asend(call_of(request, self))
