"""Hot-path memory tools: the agent manages its memories itself, during the conversation.

``manage_memory`` creates, updates or deletes one memory (one store write, no LLM call);
``search_memory`` finds memories by meaning and keywords. Both are scoped to one namespace
fixed when the tools are built, so a model can never reach another user's memories. A bad
call never raises into the agent loop: it comes back as a tool message with
``is_error=True`` whose text names the field and the fix, for the model to read and retry.

``search_memory`` is built from :class:`~remem.memory.requests.SearchRequest`: its
parameters are the request's :data:`SEARCH_PARAMETERS` (their JSON schema, defaults and
descriptions), a call becomes a ``SearchRequest`` in the tools' scope, and ranking options the
model does not choose (``mode``, ``min_score``, ``recency_*``, ``mmr``) are fixed with
``search_options=``. ``manage_memory``'s update and delete run an
:class:`~remem.memory.requests.UpdateRequest` / :class:`~remem.memory.requests.DeleteRequest`
guarded by the version the tool checked.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from remem.errors import NotFoundError, RememError, ToolError
from remem.llm.base import ToolSpec
from remem.memory.flow import Flow, run_async, run_sync
from remem.memory.manager import Fact, NewMemory, memory_from_model
from remem.memory.operations import get_flow
from remem.memory.records import MemoryRecord, Source
from remem.memory.requests import DeleteRequest, MemoryRequest, SearchRequest, UpdateRequest
from remem.memory.results import ChangeResult, SearchResult
from remem.messages.types import Message, ToolCall
from remem.store.types import Namespace
from remem.tools.export import to_anthropic_tool, to_openai_tool, to_responses_tool
from remem.tools.schema import request_schema

if TYPE_CHECKING:
    from remem.api import Memory

__all__ = ["ACTIONS", "SEARCH_PARAMETERS", "MemoryTools", "tool_runner"]

ACTIONS = ("create", "update", "delete")

SEARCH_PARAMETERS = ("query", "filters", "limit", "offset", "as_of", "include_invalid")
"""The :class:`SearchRequest` fields ``search_memory`` offers the model. Not offered: the
scope (``user_id``, ``agent_id``, ``thread_id``, ``namespace``: fixed by the tools, so the
model cannot reach another scope) and the ranking (``mode``, ``min_score``,
``recency_half_life``, ``recency_weight``, ``mmr``: the application's choice, through
``search_options=``)."""

_SCOPE = ("user_id", "agent_id", "thread_id", "namespace")
logger = logging.getLogger("remem.tools")


@dataclass(frozen=True, slots=True)
class _Run:
    """What a tool call comes down to: a request for :meth:`Memory.run`, and how its result
    is answered to the model."""

    request: MemoryRequest[Any]
    answer: Callable[[Any], dict[str, Any]]


class MemoryTools:
    """``manage_memory`` and ``search_memory`` over a :class:`~remem.api.Memory`, in one scope.

    Scope: ``user_id`` / ``agent_id`` / ``thread_id`` or ``namespace``, as in
    :meth:`Memory.add`. ``schema``: a pydantic model the agent's memories must follow
    (default: free text, stored as a fact). ``actions``: which of create / update / delete
    the agent may do. ``actor`` is recorded in history. ``prefix`` is put before the tool
    names (``"work_"`` gives ``work_manage_memory``) when an agent has several scopes.
    ``search_limit``: how many memories ``search_memory`` returns when the model does not
    say. ``search_options``: fixed values of the other :class:`SearchRequest` fields, e.g.
    ``{"recency_half_life": 30 * 86400, "mmr": 0.7}``.
    """

    def __init__(self, memory: Memory, *, user_id: str | None = None,
                 agent_id: str | None = None, thread_id: str | None = None,
                 namespace: Sequence[str] | None = None,
                 schema: type[BaseModel] | None = None,
                 actions: Sequence[str] = ACTIONS, actor: str = "agent",
                 prefix: str = "", search_limit: int = 5,
                 search_options: Mapping[str, Any] | None = None) -> None:
        unknown = [a for a in actions if a not in ACTIONS]
        if unknown or not actions:
            raise ToolError(f"actions must be a non-empty subset of {ACTIONS}, got "
                            f"{list(actions)!r}")
        self.memory = memory
        self.namespace: Namespace = memory.namespace_of(user_id, agent_id, thread_id, namespace)
        self.thread_id = thread_id
        self.schema = schema
        self.actions = tuple(actions)
        self.actor = actor
        self.search_limit = search_limit
        self.search_options = dict(search_options or {})
        clash = sorted(set(self.search_options) & {*SEARCH_PARAMETERS, *_SCOPE})
        if clash:
            raise ToolError(f"search_options cannot set {', '.join(clash)}: the scope is the "
                            "tools' and the rest are the model's parameters")
        # the defaults and options are checked now, not at the model's first search
        SearchRequest.of(namespace=list(self.namespace), limit=search_limit,
                         **self.search_options)
        self.manage_name = f"{prefix}manage_memory"
        self.search_name = f"{prefix}search_memory"

    # -- definitions ------------------------------------------------------------------------------

    def manage_spec(self) -> ToolSpec:
        """The ``manage_memory`` tool definition."""
        if self.schema is None:
            content: dict[str, Any] = {
                "type": "string",
                "description": "The memory as one short, self-contained statement, e.g. "
                               "'Prefers window seats'. Required for create and update.",
            }
        else:
            content = dict(self.schema.model_json_schema())
            content["description"] = (f"The memory as a {self.schema.__name__} object. "
                                      "Required for create and update.")
        actions = " / ".join(self.actions)
        return ToolSpec(
            name=self.manage_name,
            description=(
                f"Save, correct or remove a long-term memory ({actions}). Use create for a "
                "new fact worth remembering across conversations, update (with the id from "
                "search_memory) when a remembered fact changed, delete (with the id) when "
                "it is wrong or the user asks to forget it."),
            parameters={
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": list(self.actions)},
                    "content": content,
                    "id": {"type": "string",
                           "description": "The memory id (for update and delete), as "
                                          "returned by search_memory or create."},
                },
                "required": ["action"],
                "additionalProperties": False,
            },
        )

    def search_spec(self) -> ToolSpec:
        """The ``search_memory`` tool definition: :data:`SEARCH_PARAMETERS` of
        :class:`SearchRequest` (``limit`` defaults to ``search_limit``)."""
        return ToolSpec(
            name=self.search_name,
            description="Search long-term memories by meaning and keywords; returns the "
                        "best matches with their ids (without a query: the newest).",
            parameters=request_schema(SearchRequest, SEARCH_PARAMETERS,
                                      defaults={"limit": self.search_limit}),
        )

    def specs(self) -> list[ToolSpec]:
        """Both tool definitions."""
        return [self.manage_spec(), self.search_spec()]

    def openai_tools(self) -> list[dict[str, Any]]:
        """Both tools in OpenAI's chat-completions format."""
        return [to_openai_tool(spec) for spec in self.specs()]

    def responses_tools(self, *, strict: bool = False) -> list[dict[str, Any]]:
        """Both tools in OpenAI's Responses API format (``strict``: parameters in the form
        strict mode takes, see :func:`~remem.tools.export.strict_parameters`)."""
        return [to_responses_tool(spec, strict=strict) for spec in self.specs()]

    def anthropic_tools(self) -> list[dict[str, Any]]:
        """Both tools in Anthropic's Messages API format."""
        return [to_anthropic_tool(spec) for spec in self.specs()]

    # -- execution --------------------------------------------------------------------------------

    def handles(self, call: ToolCall) -> bool:
        """Whether ``call`` is for one of these tools."""
        return call.name in (self.manage_name, self.search_name)

    def execute(self, call: ToolCall) -> Message:
        """Run a tool call; the result (or the error, for the model) as a tool message."""
        try:
            outcome = run_sync(self._flow(call), self.memory.store)
            if isinstance(outcome, _Run):
                outcome = outcome.answer(self.memory.run(outcome.request))
            return Message.tool(call.id, outcome)
        except Exception as exc:
            return self._error(call, exc)

    async def aexecute(self, call: ToolCall) -> Message:
        """Async :meth:`execute`."""
        try:
            outcome = await run_async(self._flow(call), self.memory.store)
            if isinstance(outcome, _Run):
                outcome = outcome.answer(await self.memory.arun(outcome.request))
            return Message.tool(call.id, outcome)
        except Exception as exc:
            return self._error(call, exc)

    def _error(self, call: ToolCall, exc: Exception) -> Message:
        if isinstance(exc, RememError):
            text = str(exc)
        else:  # a bug or an outage: the model gets a short note, the log the details
            logger.exception("memory tool %s failed", call.name)
            text = f"the memory service failed ({type(exc).__name__}); try again later"
        return Message.tool(call.id, f"Error in {call.name}: {text}", is_error=True)

    def _flow(self, call: ToolCall) -> Flow[dict[str, Any] | _Run]:
        """The call's store work up to its answer, or up to the request it runs."""
        args = call.arguments
        if call.name == self.search_name:
            return self._search(args)
        if call.name != self.manage_name:
            raise ToolError(f"unknown tool {call.name!r}; the memory tools are "
                            f"{self.manage_name} and {self.search_name}")
        allowed = {"action", "content", "id"}
        extra = sorted(set(args) - allowed)
        if extra:
            raise ToolError(f"unexpected argument(s) {', '.join(extra)}; {self.manage_name} "
                            "takes action, content and id")
        action = args.get("action")
        if action not in self.actions:
            raise ToolError(f"'action' must be one of {', '.join(self.actions)}, got "
                            f"{action!r}")
        if action == "create":
            return self._create(args)
        return self._change(action, args)

    def _content(self, args: dict[str, Any], action: str) -> tuple[str | dict[str, Any], str]:
        content = args.get("content")
        if content is None:
            raise ToolError(f"'content' is required for action {action!r}; pass the memory "
                            + ("as a string" if self.schema is None
                               else f"as a {self.schema.__name__} object"))
        if self.schema is None:
            if not isinstance(content, str) or not content.strip():
                raise ToolError("'content' must be a non-empty string stating the memory")
            return memory_from_model(Fact(content=content.strip()))
        if isinstance(content, str):  # some models send the object as JSON text
            with contextlib.suppress(json.JSONDecodeError):
                content = json.loads(content)
        try:
            value = self.schema.model_validate(content)
        except ValidationError as exc:
            problems = "; ".join(
                f"content.{'.'.join(map(str, e['loc']))}: {e['msg']}" if e["loc"]
                else f"content: {e['msg']}" for e in exc.errors())
            raise ToolError(f"'content' is not a valid {self.schema.__name__}: {problems}; "
                            "fix those fields and call again") from None
        return memory_from_model(value)

    def _schema_name(self) -> str:
        return "Fact" if self.schema is None else self.schema.__name__

    def _create(self, args: dict[str, Any]) -> Flow[dict[str, Any]]:
        if args.get("id") is not None:
            raise ToolError("'id' is not used by create (ids are assigned); leave it out, or "
                            "use action 'update' to change an existing memory")
        content, kind = self._content(args, "create")
        new = NewMemory(content, kind, self._schema_name())
        result = yield from self.memory.formation.store_flow(
            self.namespace, [new], source=Source(thread_id=self.thread_id), actor=self.actor)
        if result.skipped:
            return {"status": "exists", "id": result.skipped[0].existing_id,
                    "content": content}
        return {"status": "created", "id": result.changes[0].memory.id, "content": content}

    def _target(self, args: dict[str, Any], action: str) -> Flow[MemoryRecord]:
        memory_id = args.get("id")
        if not isinstance(memory_id, str) or not memory_id.strip():
            raise ToolError(f"'id' is required for action {action!r}; call "
                            f"{self.search_name} to find the memory's id")
        try:
            record = yield from get_flow(memory_id)
        except NotFoundError:
            record = None
        if record is None or record.namespace[:len(self.namespace)] != self.namespace:
            raise ToolError(f"no memory with id {memory_id!r} here; call {self.search_name} "
                            "to find the right id")
        if record.invalid_at is not None:
            raise ToolError(f"memory {memory_id!r} is no longer current (it was replaced or "
                            f"deleted); call {self.search_name} for the current one")
        return record

    def _change(self, action: str, args: dict[str, Any]) -> Flow[dict[str, Any] | _Run]:
        content: str | dict[str, Any] | None = None
        if action == "update":
            content, _ = self._content(args, "update")
        record = yield from self._target(args, action)
        # the version checked here: a change made since fails instead of being overwritten
        common = {"memory_id": record.id, "version": record.version, "actor": self.actor,
                  "reason": f"{self.manage_name} {action}"}
        if action == "update":
            def updated(result: ChangeResult) -> dict[str, Any]:
                return {"status": "updated" if result.changes else "unchanged",
                        "id": record.id, "content": content}
            return _Run(UpdateRequest.of(content=content, **common), updated)
        return _Run(DeleteRequest.of(**common),
                    lambda result: {"status": "deleted", "id": record.id})

    def _search(self, args: dict[str, Any]) -> Flow[dict[str, Any] | _Run]:
        extra = sorted(set(args) - set(SEARCH_PARAMETERS))
        if extra:
            raise ToolError(f"unexpected argument(s) {', '.join(extra)}; {self.search_name} "
                            f"takes {', '.join(SEARCH_PARAMETERS)}")
        request = SearchRequest.of(**{"limit": self.search_limit, **args},
                                   namespace=list(self.namespace), **self.search_options)
        yield from ()  # no store work of its own: the request does it
        return _Run(request, self._hits)

    @staticmethod
    def _hits(result: SearchResult) -> dict[str, Any]:
        # relevance beside score: the fused score ranks within one page only (a hit one
        # signal missed reads 0.5), relevance is the match on a fixed 0-1 scale
        return {"memories": [
            {"id": hit.memory.id, "content": hit.memory.content, "kind": hit.memory.kind,
             "score": round(hit.score, 4) if hit.score is not None else None,
             "relevance": round(hit.relevance, 4) if hit.relevance is not None else None}
            for hit in result]}


def tool_runner(tools: Sequence[MemoryTools]) -> Callable[[ToolCall], Message | None]:
    """A function running a call with whichever of ``tools`` handles it (``None``: none)."""

    def run(call: ToolCall) -> Message | None:
        for tool in tools:
            if tool.handles(call):
                return tool.execute(call)
        return None

    return run
