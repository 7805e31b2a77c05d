"""Sync and async shells over one flow: memory operations are written once, as generators.

A flow yields *effects* (a store batch, a structured LLM call, a pause) and receives their
results; :func:`run_sync` and :func:`run_async` perform the effects with blocking or awaitable
calls. So ``Memory.add`` and ``Memory.aadd`` run the same code and cannot drift apart.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

from pydantic import BaseModel

from remem.errors import UsageError
from remem.llm.base import ChatModel
from remem.llm.config import missing_model_error
from remem.llm.structured import agenerate, generate
from remem.memory.observers import Touched, Wrote, notify
from remem.messages.types import Message
from remem.store.base import BaseStore
from remem.store.types import Op

__all__ = ["Effect", "Flow", "Pause", "StoreBatch", "StructuredCall", "driver", "run_async",
           "run_sync"]

#: the event loop whose task drives the flow being run (set by :func:`run_async` for its
#: task only; unset while :func:`run_sync` drives one, even on a loop's thread)
_DRIVING_LOOP: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "remem_driving_loop", default=None)


def driver() -> dict[str, int | None]:
    """Who drives the current flow: this process, and the event loop whose task does (``None``
    for a blocking :func:`run_sync`), so a write lock can tell a holder that a blocking call
    on the same loop's thread would starve."""
    return {"pid": os.getpid(), "loop": _DRIVING_LOOP.get()}


def blocked_loop() -> int | None:
    """The id of the event loop a blocking call made now would hold up: the loop running on
    this thread, when the current flow is driven by :func:`run_sync` (else ``None``)."""
    if _DRIVING_LOOP.get() is not None:
        return None
    try:
        return id(asyncio.get_running_loop())
    except RuntimeError:
        return None

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class StoreBatch:
    """Run ``ops`` as one store batch; the flow receives the list of results."""

    ops: Sequence[Op]


@dataclass(frozen=True, slots=True)
class StructuredCall:
    """One structured LLM call (validation retries included); the flow receives a
    ``remem.llm.structured.Structured`` value (``.value``, ``.raw``, ``.usage``, ``.attempts``)."""

    messages: tuple[Message, ...]
    schema: type[BaseModel]
    instructions: str | None = None
    operation: str = "extract"
    max_retries: int = 1


@dataclass(frozen=True, slots=True)
class Pause:
    """Wait ``seconds`` (back-off between write attempts)."""

    seconds: float


#: ``Touched`` / ``Wrote``: notices for the background (use counts, budgets); the runner
#: hands them on without waiting and sends ``None`` back (:mod:`remem.memory.observers`)
Effect: TypeAlias = StoreBatch | StructuredCall | Pause | Touched | Wrote
Flow: TypeAlias = Generator[Effect, Any, T]


def _need_model(model: ChatModel | None) -> ChatModel:
    if model is None:
        raise missing_model_error()
    return model


def _need_store(store: BaseStore | None) -> BaseStore:
    if store is None:
        raise UsageError("this memory operation needs a store; pass store=...")
    return store


def run_sync(flow: Flow[T], store: BaseStore | None = None,
             model: ChatModel | None = None) -> T:
    """Drive ``flow`` with blocking calls. An effect that fails is thrown into the flow, so
    its ``try``/``finally`` blocks run (a write lock is released, say)."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            effect = flow.throw(error) if error is not None else flow.send(value)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        error = None
        try:
            if isinstance(effect, StoreBatch):
                value = _need_store(store).batch(effect.ops)
            elif isinstance(effect, StructuredCall):
                value = generate(
                    _need_model(model), list(effect.messages), effect.schema,
                    instructions=effect.instructions, operation=effect.operation,
                    max_retries=effect.max_retries,
                )
            elif isinstance(effect, Touched | Wrote):
                notify(store, effect)
                value = None
            else:
                time.sleep(effect.seconds)
        except Exception as exc:
            error = exc


async def run_async(flow: Flow[T], store: BaseStore | None = None,
                    model: ChatModel | None = None) -> T:
    """Drive ``flow`` with awaitable calls (store batches run in a worker thread)."""
    _DRIVING_LOOP.set(id(asyncio.get_running_loop()))  # this task's context only
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            effect = flow.throw(error) if error is not None else flow.send(value)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        error = None
        try:
            if isinstance(effect, StoreBatch):
                value = await _need_store(store).abatch(effect.ops)
            elif isinstance(effect, StructuredCall):
                value = await agenerate(
                    _need_model(model), list(effect.messages), effect.schema,
                    instructions=effect.instructions, operation=effect.operation,
                    max_retries=effect.max_retries,
                )
            elif isinstance(effect, Touched | Wrote):
                notify(store, effect)
                value = None
            else:
                await asyncio.sleep(effect.seconds)
        except Exception as exc:
            error = exc

