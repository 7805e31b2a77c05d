"""The memory operations, one row each (:class:`remem.operations.Operation`): the table the
``/v1/memories`` routes, the MCP memory tools and the parity tests read.

Rows are in the order the MCP server lists its tools (the facade's order); the router builder
registers literal paths before templated ones, which gives the HTTP API's order. Context
assembly, also served under ``/v1/memories``, has its row in :mod:`remem.context.operation_table`
(it reads threads as well as memories).
"""

from __future__ import annotations

from remem.memory.requests import (
    AddRequest,
    DeleteAllRequest,
    DeleteRequest,
    ExportRequest,
    GetAllRequest,
    GetRequest,
    HistoryRequest,
    ImportRequest,
    SearchRequest,
    UndoRequest,
    UpdateRequest,
)
from remem.memory.wire import (
    AddResultOut,
    ChangeResultOut,
    ExportOut,
    HistoryOut,
    ImportOut,
    MemoryOut,
    MemoryPageOut,
    SearchResultOut,
)
from remem.operations import McpToolRow, Operation, Route

__all__ = ["MEMORY_OPERATIONS"]

MEMORY_OPERATIONS: tuple[Operation, ...] = (
    Operation(
        AddRequest, AddResultOut, writes=True, command="add", python="add", calls_model=True,
        route=Route(
            "POST", "/v1/memories", "add_memories", "Add memories",
            "Remember what ``messages`` say: extracted by the server's LLM (``infer: true``, "
            "or\n``infer`` left out on a server with one), or stored as is (``infer: false``, "
            "or left out\non a server without one; the answer's ``inferred`` says which). "
            "``infer: true`` on a\nserver without an LLM is a 400."),
        tool=McpToolRow(
            "add_memory",
            "Remember something: a fact, or a conversation turn to extract facts from "
            "(infer). Scope it with user_id and/or agent_id (or a namespace).")),
    Operation(
        SearchRequest, SearchResultOut, writes=False, command="search", python="search",
        route=Route(
            "POST", "/v1/memories/search", "search_memories", "Search memories",
            "Current memories of the scope, best first for ``query`` (newest first without), "
            "a\npage at a time (``limit``, ``offset``); ``min_score`` (0-1) drops hits whose\n"
            "``relevance`` is below it; recency and ``mmr`` tune the ranking."),
        tool=McpToolRow(
            "search_memories",
            "Find memories relevant to query in a scope, best first; each hit has the "
            "memory's id (for update/delete), its text and a score.")),
    Operation(
        GetRequest, MemoryOut, writes=False, command="get", python="get",
        route=Route("GET", "/v1/memories/{memory_id}", "get_memory", "Read a memory",
                    "The memory with this id (404 if none)."),
        tool=McpToolRow("get_memory", "The memory with this id.")),
    Operation(
        GetAllRequest, MemoryPageOut, writes=False, command="list", python="get_all",
        route=Route(
            "POST", "/v1/memories/list", "list_memories", "List memories",
            "Every memory of a scope (required), newest first, a page at a time; send\n"
            "``next_offset`` as ``offset`` for the next page."),
        tool=McpToolRow(
            "list_memories",
            "Every memory of a scope, newest first, a page at a time (pass next_offset "
            "as offset for the next page).")),
    Operation(
        UpdateRequest, ChangeResultOut, writes=True, command="update", python="update",
        route=Route(
            "PATCH", "/v1/memories/{memory_id}", "update_memory", "Correct a memory",
            "Correct a memory in place (same id, version + 1); ``version`` guards against "
            "a\nconcurrent change (409)."),
        tool=McpToolRow(
            "update_memory",
            "Correct a memory in place: new content, kind or metadata (same id, version + 1; "
            "history keeps the old content).")),
    Operation(
        DeleteRequest, ChangeResultOut, writes=True, command="delete", python="delete",
        route=Route(
            "DELETE", "/v1/memories/{memory_id}", "delete_memory", "Delete a memory",
            "Invalidate a memory (kept for history and ``as_of``); ``hard=true`` removes it.",
            not_sent=("actor",)),
        tool=McpToolRow(
            "delete_memory",
            "Forget a memory (kept in history, and undoable, unless hard is true).")),
    Operation(
        HistoryRequest, HistoryOut, writes=False, command="history", python="history",
        route=Route("GET", "/v1/memories/{memory_id}/history", "memory_history",
                    "History of a memory", "Every change of the memory, oldest first."),
        tool=McpToolRow(
            "memory_history",
            "Every change of a memory, oldest first, each with the event id undo takes.")),
    Operation(
        UndoRequest, ChangeResultOut, writes=True, command="undo", python="undo",
        route=Route(
            "POST", "/v1/events/{event_id}/undo", "undo_event", "Undo a change",
            "Revert the change a history event recorded (every memory of a delete_all).",
            not_sent=("actor",)),
        tool=McpToolRow(
            "undo_memory_change",
            "Revert the change a history event recorded (see memory_history).")),
    Operation(
        DeleteAllRequest, ChangeResultOut, writes=True, command="forget", python="delete_all",
        route=Route(
            "POST", "/v1/memories/delete", "delete_all_memories",
            "Delete every memory of a scope",
            "Forget a scope (required) in one call: invalidate each current memory "
            "(``hard``:\nremove every memory). Undoing any event of the answer undoes the "
            "whole call."),
        # one call wipes a user's memories: too much for a tool a prompt injection could reach
        tool=McpToolRow(
            "forget_memories",
            "Forget every current memory of a scope in one change (undo_memory_change with "
            "any of its events brings them all back, unless hard). Only when the user asks "
            "to forget everything.", on_request=True)),
    Operation(
        ExportRequest, ExportOut, writes=False, command="export", python="export",
        route=Route(
            "POST", "/v1/memories/export", "export_memories", "Export memories",
            "Memories and history of a scope (every scope of the tenant when none is given) "
            "as\nJSONL lines, in one JSON answer.")),
    Operation(
        # `remem import` is not built from the request: it streams a file of any size
        ImportRequest, ImportOut, writes=True, python="import_",
        route=Route(
            "POST", "/v1/memories/import", "import_memories", "Import memories",
            "Write lines made by export (ids, versions and history kept; idempotent). Send "
            "large\nexports in several requests under the body limit "
            "(``remem.Client.import_`` does).")),
)
"""Every memory operation (each request type of :mod:`remem.memory.requests`)."""
