"""The thread operations, one row each (:class:`remem.operations.Operation`): the table the
``/v1/threads`` routes (:mod:`remem.server.routes_threads`, by the router builder),
``client.threads`` (:mod:`remem.threads.remote`) and the threads' parity tests read.

Each row's answer is the request's result model (:data:`remem.threads.wire.RESULT_MODELS`,
where ``dump`` and ``load`` find it too). The rows are ``sparse``: a field left out is not a
field at its default (a ``ttl`` left out is the server's default, unlike ``null``), and the
answers leave out the fields at their defaults, as ``to_dict()`` does. ``part`` keeps the
names the body models had before the rows (``AppendBody``, not ``AppendMessagesBody``), and
the route names are the endpoints' (so are the OpenAPI operation ids).

The rows declare no MCP tool (threads are not served over MCP); ``search``, ``rewind`` and
``fork`` (``--copy``: the copy row) name their ``remem threads`` command (the others' commands
do more than one request: see docs/architecture.md).
"""

from __future__ import annotations

from typing import Any

from remem.operations import HttpMethod, Operation, Route
from remem.threads.requests import (
    AppendRequest,
    CheckpointRequest,
    CheckpointsRequest,
    CompactRequest,
    CopyRequest,
    CreateThreadRequest,
    DeleteThreadRequest,
    ForkRequest,
    GetThreadRequest,
    ListThreadsRequest,
    MessagesRequest,
    RewindRequest,
    SearchThreadsRequest,
    SetMetadataRequest,
    ThreadContextRequest,
    ThreadRequest,
    UpdateStateRequest,
)
from remem.threads.wire import RESULT_MODELS

__all__ = ["THREAD_OPERATIONS"]

_PREFIX = "/v1/threads"


def _row(request: type[ThreadRequest[Any]], method: HttpMethod, path: str, name: str,
         summary: str, description: str, *, writes: bool, part: str | None = None,
         calls_model: bool = False, command: str | None = None) -> Operation:
    return Operation(request, RESULT_MODELS[request], writes=writes, command=command,
                     route=Route(method, _PREFIX + path, name, summary, description,
                                 part=part),
                     python=request.operation, calls_model=calls_model, sparse=True)


THREAD_OPERATIONS: tuple[Operation, ...] = (
    _row(CreateThreadRequest, "POST", "", "create_thread", "Create a thread",
         "A new thread (409 if the id is taken in your tenant).", writes=True),
    _row(ListThreadsRequest, "POST", "/list", "list_threads", "List threads",
         "Your tenant's threads matching ``filter`` (over metadata), newest change first.",
         writes=False),
    _row(SearchThreadsRequest, "POST", "/search", "search_threads", "Search threads",
         "Your tenant's threads whose messages match ``query`` (keywords, and meaning when "
         "the\nserver has an embedder), best first; ``owner`` is a thread's metadata "
         "``user_id``.", writes=False, command="threads search"),
    _row(GetThreadRequest, "GET", "/{thread_id}", "get_thread", "Read a thread",
         "The thread's metadata and head checkpoint (404 if none).", writes=False),
    _row(SetMetadataRequest, "PATCH", "/{thread_id}", "set_metadata",
         "Change a thread's metadata",
         "Merge ``metadata`` into the thread's (or replace it: ``merge: false``).",
         writes=True),
    _row(DeleteThreadRequest, "DELETE", "/{thread_id}", "delete_thread", "Delete a thread",
         "Delete the thread and its checkpoints; ``deleted`` says whether it existed.",
         writes=True),
    _row(AppendRequest, "POST", "/{thread_id}/messages", "append_messages", "Append messages",
         "Append messages as one checkpoint; ``expected_head`` guards against a concurrent"
         "\nappend (409).", writes=True, part="Append"),
    _row(MessagesRequest, "GET", "/{thread_id}/messages", "read_messages", "Read messages",
         "The messages at the head (or at ``checkpoint_id``): OpenAI-style, with their ids.",
         writes=False, part="Messages"),
    _row(CheckpointsRequest, "GET", "/{thread_id}/checkpoints", "list_checkpoints",
         "List checkpoints", "The thread's checkpoints, newest first.", writes=False,
         part="Checkpoints"),
    _row(CheckpointRequest, "GET", "/{thread_id}/checkpoint", "read_checkpoint",
         "Read a checkpoint", "One checkpoint (the head when ``checkpoint_id`` is left out).",
         writes=False, part="Checkpoint"),
    _row(UpdateStateRequest, "POST", "/{thread_id}/state", "update_state", "Save a new state",
         "A new head checkpoint with the same messages and a new ``state``.", writes=True),
    _row(RewindRequest, "POST", "/{thread_id}/rewind", "rewind_thread", "Rewind a thread",
         "Time travel in place: a new head with the messages of ``checkpoint_id``.",
         writes=True, part="Rewind", command="threads rewind"),
    _row(ForkRequest, "POST", "/{thread_id}/fork", "fork_thread", "Fork a thread",
         "A new thread sharing the messages up to ``checkpoint_id`` (default: the head).",
         writes=True, part="Fork", command="threads fork"),
    _row(CopyRequest, "POST", "/{thread_id}/copy", "copy_thread", "Copy a thread",
         "A new thread with its own copy of the messages up to ``checkpoint_id``.",
         writes=True, part="Copy"),
    _row(CompactRequest, "POST", "/{thread_id}/compact", "compact_thread", "Compact a thread",
         "Fold older messages into the running summary with the server's LLM; the head after"
         "\n(its ``state`` holds the summary). 400 when the server has no LLM configured.",
         writes=True, part="Compact", calls_model=True),
    _row(ThreadContextRequest, "GET", "/{thread_id}/context", "thread_context",
         "The prompt of a thread",
         "The messages to send to a model: system prompt, running summary, the messages it "
         "does\nnot cover, trimmed to ``max_tokens`` / ``max_messages``.", writes=False,
         part="Context"),
)
"""Every thread request's row, in the order the routes were declared."""
