"""Background extraction's methods, written once: :class:`ThreadJobMethods` (``submit``,
``flush``, ``cancel`` and their async twins), a base of :class:`remem.api.Memory` and of
:class:`remem.Client`.

Each method builds its request and hands it, with its row of the background table
(:data:`~remem.background.operation_table.SUBMIT`, ``FLUSH``, ``CANCEL``: flush and cancel take
the same request, so the row says which), to :meth:`ThreadJobMethods.run_thread_jobs`: the
embedded memory runs it on its job queue, the client sends the row's HTTP call.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from remem.memory.methods import method_args

if TYPE_CHECKING:  # and imported where used: `remem list` reads no background module
    from remem.background.requests import CancelResult, FlushResult, SubmitResult
    from remem.memory.requests import MessagesInput
    from remem.operations import Operation
    from remem.requests import Request

__all__ = ["ThreadJobMethods"]


class ThreadJobMethods(abc.ABC):
    """Submit a thread's messages for extraction in the background, flush or cancel it."""

    @abc.abstractmethod
    def run_thread_jobs(self, row: Operation, request: Request) -> Any:
        """Run ``request`` as ``row`` (:data:`SUBMIT`, :data:`FLUSH` or :data:`CANCEL`)."""

    @abc.abstractmethod
    async def arun_thread_jobs(self, row: Operation, request: Request) -> Any:
        """Async :meth:`run_thread_jobs`."""

    def submit(self, messages: MessagesInput, *, thread_id: str, user_id: str | None = None,
               agent_id: str | None = None, namespace: Sequence[str] | None = None,
               delay: float = 30.0,
               metadata: Mapping[str, Any] | None = None) -> SubmitResult:
        """Remember what ``messages`` say in the background, after ``delay`` seconds of
        quiet on the thread: a new submission meanwhile replaces the pending job and carries
        its messages, so one extraction (one LLM call) covers them all. Returns at once,
        with the job's id; the job survives restarts (it is in the store's database)."""
        arguments = method_args(locals())
        from remem.background.operation_table import SUBMIT

        request = SUBMIT.request.of(**arguments)
        return cast("SubmitResult", self.run_thread_jobs(SUBMIT, request))

    def flush(self, thread_id: str, *, user_id: str | None = None,
              agent_id: str | None = None,
              namespace: Sequence[str] | None = None) -> FlushResult:
        """Run the thread's pending extraction now (without a scope: every pending one of
        the thread) and return the jobs with their results."""
        arguments = method_args(locals())
        from remem.background.operation_table import FLUSH

        request = FLUSH.request.of(**arguments)
        return cast("FlushResult", self.run_thread_jobs(FLUSH, request))

    def cancel(self, thread_id: str, *, user_id: str | None = None,
               agent_id: str | None = None,
               namespace: Sequence[str] | None = None) -> CancelResult:
        """Drop the thread's pending extraction; return the ids of the jobs dropped."""
        arguments = method_args(locals())
        from remem.background.operation_table import CANCEL

        request = CANCEL.request.of(**arguments)
        return cast("CancelResult", self.run_thread_jobs(CANCEL, request))

    async def asubmit(self, messages: MessagesInput, *, thread_id: str,
                      user_id: str | None = None, agent_id: str | None = None,
                      namespace: Sequence[str] | None = None, delay: float = 30.0,
                      metadata: Mapping[str, Any] | None = None) -> SubmitResult:
        """Async :meth:`submit`."""
        arguments = method_args(locals())
        from remem.background.operation_table import SUBMIT

        request = SUBMIT.request.of(**arguments)
        return cast("SubmitResult", await self.arun_thread_jobs(SUBMIT, request))

    async def aflush(self, thread_id: str, *, user_id: str | None = None,
                     agent_id: str | None = None,
                     namespace: Sequence[str] | None = None) -> FlushResult:
        """Async :meth:`flush`."""
        arguments = method_args(locals())
        from remem.background.operation_table import FLUSH

        request = FLUSH.request.of(**arguments)
        return cast("FlushResult", await self.arun_thread_jobs(FLUSH, request))

    async def acancel(self, thread_id: str, *, user_id: str | None = None,
                      agent_id: str | None = None,
                      namespace: Sequence[str] | None = None) -> CancelResult:
        """Async :meth:`cancel`."""
        arguments = method_args(locals())
        from remem.background.operation_table import CANCEL

        request = CANCEL.request.of(**arguments)
        return cast("CancelResult", await self.arun_thread_jobs(CANCEL, request))
