"""Context assembly as an operation row (:class:`remem.operations.Operation`), served beside
the memory operations under ``/v1/memories`` (:mod:`remem.memory.operation_table`), with its
own handler: it reads the caller's threads as well as their memories."""

from __future__ import annotations

from remem.context.assemble import ContextRequest
from remem.context.wire import ContextOut
from remem.operations import McpToolRow, Operation, Route

__all__ = ["CONTEXT_OPERATIONS"]

CONTEXT_OPERATIONS: tuple[Operation, ...] = (
    Operation(
        ContextRequest, ContextOut, writes=False, command="context", python="context",
        route=Route(
            "POST", "/v1/memories/context", "memory_context", "Assemble context",
            "The context for a model call within ``budget_tokens``: the profile, memories "
            "relevant\nto ``query`` and the running summary and recent messages of the "
            "tenant's thread\n``thread_id`` (see ``docs/context.md``)."),
        tool=McpToolRow(
            "get_context",
            "The context to answer with, within budget_tokens: the user's profile, memories "
            "relevant to query and, with thread_id, that conversation's summary and recent "
            "messages. Whole items only; the answer says the tokens per section and what was "
            "left out.", on_request=True)),
)
"""The context operations (one: assembling the context of a model call)."""
