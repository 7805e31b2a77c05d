"""File tools for agents: ``ls``, ``read_file``, ``write_file``, ``edit_file``, ``glob`` and
``grep`` over any :class:`~remem.files.FileBackend`, exported for OpenAI and Anthropic.

Each tool's parameters are its request model's (:mod:`remem.files.requests`). Every result
fits a stated token budget: lists (entries, matches, lines) are cut to what fits and say how
many more there are and how to get them (``more``, ``next_offset``). A bad call never raises
into the agent loop: it comes back as a tool message with ``is_error=True`` whose text names
the field and the fix.

:class:`RequestTools` is the machinery shared with the block tools
(:mod:`remem.tools.blocks`) and the archival tools (:mod:`remem.tools.archival`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from remem.errors import InvalidInputError, RememError, ToolError
from remem.files.base import FileBackend
from remem.files.operation_table import FILE_OPERATIONS
from remem.files.permissions import GuardedFiles, Interrupt
from remem.files.requests import (
    EditFileRequest,
    FileRequest,
    GlobRequest,
    GrepRequest,
    LsRequest,
    ReadFileRequest,
    WriteFileRequest,
    run_file_request,
)
from remem.files.types import FileInfo, FileRead, GrepMatch
from remem.llm.base import ToolSpec
from remem.messages.types import Message, ToolCall
from remem.requests import Request
from remem.tokens import DEFAULT_COUNTER, TokenCounter
from remem.tools.export import to_anthropic_tool, to_openai_tool, to_responses_tool
from remem.tools.schema import request_schema

__all__ = ["FILE_TOOLS", "MIN_BUDGET", "FileTools", "RequestTools", "fit_list", "to_text"]

logger = logging.getLogger("remem.tools")
#: the smallest result budget a tool set accepts (an error or one short item must fit)
MIN_BUDGET = 64

FILE_TOOLS: dict[str, tuple[type[Request], str]] = {
    row.tool.name: (row.request, row.tool.description) for row in FILE_OPERATIONS
    if row.tool is not None}
"""The file tools: name -> (request, description), the rows of
:data:`~remem.files.operation_table.FILE_OPERATIONS` with a tool (as MCP serves them)."""


def to_text(payload: Mapping[str, Any]) -> str:
    """The compact JSON a tool answers with."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def fit_list(payload: Callable[[int], dict[str, Any]], count: int, budget: int,
             counter: TokenCounter) -> dict[str, Any]:
    """``payload(k)`` for the largest ``k <= count`` whose text fits ``budget`` tokens
    (``payload`` must grow with ``k``; ``payload(0)`` must fit)."""
    if counter.count(to_text(payload(count))) <= budget:
        return payload(count)
    low, high = 0, count - 1
    while low < high:  # the largest k that fits
        middle = (low + high + 1) // 2
        if counter.count(to_text(payload(middle))) <= budget:
            low = middle
        else:
            high = middle - 1
    return payload(low)


class RequestTools(ABC):
    """Tools built from request models, answering within ``budget`` tokens (by ``counter``).

    Subclasses list their tools (name -> request model and description) and answer a
    validated request with a JSON-ready dict that fits the budget.
    """

    def __init__(self, tools: Mapping[str, tuple[type[Request], str]], *, budget: int,
                 counter: TokenCounter = DEFAULT_COUNTER, prefix: str = "") -> None:
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < MIN_BUDGET:
            raise InvalidInputError(f"budget must be an integer of at least {MIN_BUDGET} "
                                    f"tokens, got {budget!r}")
        self.budget = budget
        self.counter = counter
        self.prefix = prefix
        self.tools = {f"{prefix}{name}": spec for name, spec in tools.items()}

    def specs(self) -> list[ToolSpec]:
        """The tool definitions."""
        return [ToolSpec(name, f"{description} Results fit in {self.budget} tokens.",
                         request_schema(model))
                for name, (model, description) in self.tools.items()]

    def openai_tools(self) -> list[dict[str, Any]]:
        """The tools in OpenAI's chat-completions format."""
        return [to_openai_tool(spec) for spec in self.specs()]

    def responses_tools(self, *, strict: bool = False) -> list[dict[str, Any]]:
        """The tools in OpenAI's Responses API format (``strict``: parameters in the form
        strict mode takes, see :func:`~remem.tools.export.strict_parameters`)."""
        return [to_responses_tool(spec, strict=strict) for spec in self.specs()]

    def anthropic_tools(self) -> list[dict[str, Any]]:
        """The tools in Anthropic's Messages API format."""
        return [to_anthropic_tool(spec) for spec in self.specs()]

    def handles(self, call: ToolCall) -> bool:
        """Whether ``call`` is for one of these tools."""
        return call.name in self.tools

    def execute(self, call: ToolCall) -> Message:
        """Run a tool call; the result (or the error, for the model) as a tool message."""
        try:
            if call.name not in self.tools:
                raise ToolError(f"unknown tool {call.name!r}; the tools are "
                                f"{', '.join(self.tools)}")
            model, _ = self.tools[call.name]
            allowed = set(model.model_fields)
            extra = sorted(set(call.arguments) - allowed)
            if extra:
                raise ToolError(f"unknown argument(s) {', '.join(extra)}; {call.name} takes "
                                f"{', '.join(model.model_fields)}")
            request = model.of(**call.arguments)
            payload = self._answer(call.name.removeprefix(self.prefix), request)
            return Message.tool(call.id, to_text(payload))
        except Exception as exc:
            return self._error(call, exc)

    async def aexecute(self, call: ToolCall) -> Message:
        """Async :meth:`execute` (runs in a worker thread)."""
        return await asyncio.to_thread(self.execute, call)

    def _error(self, call: ToolCall, exc: Exception) -> Message:
        if isinstance(exc, RememError):
            text = str(exc)
        else:  # a bug or an outage: the model gets a short note, the log the details
            logger.exception("tool %s failed", call.name)
            text = f"the tool failed ({type(exc).__name__}); try again later"
        message = f"Error in {call.name}: {text}"
        while self.counter.count(message) > self.budget:
            message = message[: len(message) * 3 // 4] + "..."
        return Message.tool(call.id, message, is_error=True)

    @abstractmethod
    def _answer(self, name: str, request: Request) -> dict[str, Any]:
        """The result of the validated ``request`` of tool ``name`` (without prefix), within
        the budget."""


class FileTools(RequestTools):
    """The file tools over ``files``. ``tools``: which of :data:`FILE_TOOLS` to offer
    (e.g. without ``write_file`` and ``edit_file`` for a read-only agent); ``actor`` is
    recorded in file history."""

    def __init__(self, files: FileBackend, *, budget: int = 2000,
                 counter: TokenCounter = DEFAULT_COUNTER, tools: Sequence[str] | None = None,
                 actor: str = "agent", prefix: str = "",
                 permissions: GuardedFiles | None = None) -> None:
        names = list(FILE_TOOLS) if tools is None else list(tools)
        unknown = [n for n in names if n not in FILE_TOOLS]
        if unknown or not names:
            raise InvalidInputError(f"tools must be a non-empty subset of "
                                    f"{', '.join(FILE_TOOLS)}, got {names!r}")
        super().__init__({n: FILE_TOOLS[n] for n in names}, budget=budget, counter=counter,
                         prefix=prefix)
        self.files = files
        self.actor = actor
        #: when set, reads, writes and edits go through its rules: ``deny`` is a tool error,
        #: ``ask`` answers with the pending approval instead of making the change
        self.permissions = permissions

    def _answer(self, name: str, request: Request) -> dict[str, Any]:
        assert isinstance(request, LsRequest | ReadFileRequest | WriteFileRequest
                          | EditFileRequest | GlobRequest | GrepRequest)
        result = self._guarded(request) if self.permissions is not None else run_file_request(
            self.files, _as_file_request(request), actor=self.actor)
        if isinstance(result, Interrupt):
            return result.to_dict()
        if isinstance(result, FileRead):
            return self._lines(result)
        if isinstance(result, FileInfo):
            return {"status": "written", "path": result.path, "etag": result.etag,
                    "size": result.size}
        entries: list[FileInfo] | list[GrepMatch] = result
        key = "matches" if name == "grep" else "entries"
        items = [_short(e) for e in entries]

        def payload(k: int) -> dict[str, Any]:
            out: dict[str, Any] = {key: items[:k], "more": len(items) - k}
            if k < len(items):
                out["hint"] = "narrow the path or pattern to see the rest"
            return out

        return fit_list(payload, len(items), self.budget, self.counter)

    def _guarded(self, request: Request) -> Any:
        guard = self.permissions
        assert guard is not None
        # listings, globs and greps leave out what the policy does not let the agent read
        return guard.run(_as_file_request(request))

    def _lines(self, read: FileRead) -> dict[str, Any]:
        lines = read.content.splitlines(keepends=True)

        def payload(k: int) -> dict[str, Any]:
            out: dict[str, Any] = {"path": read.path, "etag": read.etag, "offset": read.offset,
                                   "total_lines": read.total_lines,
                                   "content": "".join(lines[:k]),
                                   "remaining": read.total_lines - read.offset - k}
            if out["remaining"]:
                out["next_offset"] = read.offset + k
            return out

        answer = fit_list(payload, len(lines), self.budget, self.counter)
        if lines and not answer["content"]:
            answer["note"] = (f"line {read.offset} alone is longer than this tool's "
                              f"{self.budget}-token budget; grep for a part of it instead")
            if self.counter.count(to_text(answer)) > self.budget:
                del answer["note"]
        return answer


def _as_file_request(request: Request) -> FileRequest:
    assert isinstance(request, LsRequest | ReadFileRequest | WriteFileRequest
                      | EditFileRequest | GlobRequest | GrepRequest)
    return request


def _short(entry: FileInfo | GrepMatch) -> dict[str, Any]:
    if isinstance(entry, GrepMatch):
        return {"path": entry.path, "line": entry.line, "text": entry.text[:500]}
    if entry.is_dir:
        return {"path": entry.path + "/", "dir": True}
    return {"path": entry.path, "size": entry.size, "etag": entry.etag}
