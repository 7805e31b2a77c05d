"""``client.threads``: the thread API over HTTP, against ``remem serve``'s ``/v1/threads``.

:class:`RemoteThreads` inherits every method of :class:`~remem.threads.api.ThreadAPI`, the
same as :class:`~remem.threads.store.ThreadStore`, so code moves from embedded threads to a
server's by changing the line that makes them::

    threads = ThreadStore("memory.db")                                  # embedded
    threads = Client("http://127.0.0.1:8000", api_key="rk_...").threads  # served

Each request becomes one HTTP call in a pure core (:func:`call_of`: the route table of
:mod:`remem.threads.http`, the answer read with :mod:`remem.threads.wire`); the client's sync
and async shells send it. The server keeps the tenancy: its threads are the key's tenant's.

What cannot travel is refused up front with :class:`~remem.errors.UsageError`: a chat model
for :meth:`compact` (the server's LLM summarises), a token counter for :meth:`context`, or a
:class:`~remem.threads.summary.SummaryPolicy` with a custom counter. Messages travel as
OpenAI-style dicts, so the server gives them new ids and times; what you read back carries
the stored ones.
"""

from __future__ import annotations

from functools import partial
from typing import Any, TypeVar

from remem.errors import UsageError
from remem.threads.api import ThreadAPI
from remem.threads.http import http_call
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
from remem.threads.wire import load
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


def _parse(request: type[ThreadRequest[Any]], data: Any) -> Any:
    return load(request, data)


def call_of(request: ThreadRequest[R], threads: RemoteThreads) -> Call[R]:
    """The HTTP call that runs ``request`` (a new thread's answer becomes a :class:`Thread`
    handle on ``threads``)."""
    _check_sendable(request)
    http = http_call(request)
    kind = type(request)
    parse: Any = partial(_parse, kind)
    if isinstance(request, _NEW_THREAD):
        parse = partial(_new_thread, threads, kind)
    return Call(http.method, http.path, parse, http.json, http.params)


def _new_thread(threads: RemoteThreads, request: type[ThreadRequest[Any]],
                data: Any) -> Thread:
    return Thread(threads, load(request, data).thread_id)


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
