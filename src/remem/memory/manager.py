"""MemoryManager: one structured LLM call turns messages (and existing memories) into changes.

The model sees the conversation and the related existing memories under small integer aliases
(:class:`~remem.memory.aliases.IdAliases`) and answers with what to insert, update (by id) and
delete, each memory shaped by one of the user's pydantic schemas (default :class:`Fact`).
Aliases are mapped back to real ids; an id the model invents is rejected: the answer goes back
to the model once with the errors, and if it is still wrong the call fails with
:class:`~remem.errors.StructuredOutputError`. Nothing is ever dropped silently.

The prompt is grounded (:mod:`remem.messages.grounding`): it starts with the reference time,
shows when each message was sent, and the instructions tell the model to keep each memory in
the language it was stated in and to resolve relative times to dates. An insert or update may
carry the validity the conversation states (``valid_from`` / ``valid_until``, ISO dates).
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Annotated, Any, Literal, Union, cast

from pydantic import BaseModel, ConfigDict, Field, create_model

from remem.errors import InvalidInputError, StructuredOutputError
from remem.llm.base import ChatModel, Usage
from remem.memory.aliases import IdAliases
from remem.memory.flow import Flow, StructuredCall, run_async, run_sync
from remem.memory.records import MemoryRecord, Source
from remem.messages.grounding import (
    LANGUAGE_RULE,
    TIME_RULE,
    date_to_timestamp,
    reference_line,
    timed_conversation,
)
from remem.messages.types import Message

__all__ = [
    "DEFAULT_INSTRUCTIONS",
    "Extraction",
    "Fact",
    "MemoryExtraction",
    "MemoryManager",
    "MemoryUpdate",
    "NewMemory",
    "format_conversation",
]

DEFAULT_INSTRUCTIONS = """\
You maintain a long-term memory of facts about the user and their world, extracted from \
conversations. Compare the conversation with the existing memories and answer with the \
changes to make, as JSON matching the response schema.

Rules:
- One fact per memory. Never combine unrelated facts into one memory, and never add a new, \
unrelated fact to an existing memory: insert it separately.
- Write each memory as a short, self-contained statement about the user (e.g. "Lives in \
Berlin", "Prefers green tea").
- If the conversation says again, in any words, what an existing memory already says, change \
nothing for it.
- If the conversation changes or corrects an existing memory (the user moved, changed jobs, \
or says an earlier statement was wrong), return an update for that memory's id with the new \
content. Do not insert a second memory about the same thing.
- Delete a memory only when the user asks to forget it or says it was never true.
- Refer to existing memories only by the ids shown. Never invent ids.
- Remember only what the user (or the assistant, about the user) states, not questions or \
small talk. If there is nothing worth remembering, answer with empty lists."""


class Fact(BaseModel):
    """The default memory schema: one fact in a short sentence, and its kind."""

    model_config = ConfigDict(extra="forbid")

    content: str = Field(min_length=1, description="The fact as one short, self-contained "
                         "sentence, e.g. 'Lives in Berlin'.")
    kind: str = Field(default="fact", description="What sort of fact: fact, preference, event, "
                      "plan, relationship, skill or another single word.")


@dataclass(frozen=True, slots=True)
class NewMemory:
    """A memory to insert: its content (text for :class:`Fact`, else the schema's JSON),
    its kind, the schema's name, and the validity the conversation stated (epoch seconds;
    ``None``: not stated). ``source`` and ``event_time``: where and when this memory was
    said, when it is one message (or turn) of the conversation stored as given (``None``:
    the add's own)."""

    content: str | dict[str, Any]
    kind: str = "fact"
    schema: str = "Fact"
    valid_from: float | None = None
    valid_until: float | None = None
    source: Source | None = None
    event_time: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"content": self.content, "kind": self.kind, "schema": self.schema,
                "valid_from": self.valid_from, "valid_until": self.valid_until}


@dataclass(frozen=True, slots=True)
class MemoryUpdate:
    """New content for the existing memory ``id`` (a real id, mapped back from the alias),
    with the validity the conversation stated, as for :class:`NewMemory`."""

    id: str
    content: str | dict[str, Any]
    kind: str = "fact"
    schema: str = "Fact"
    valid_from: float | None = None
    valid_until: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"id": self.id, "content": self.content, "kind": self.kind,
                "schema": self.schema, "valid_from": self.valid_from,
                "valid_until": self.valid_until}


@dataclass(frozen=True, slots=True)
class MemoryExtraction:
    """What the model decided, with real ids, and what it cost.

    ``rejected`` lists problems found in a first answer that the model then fixed (invented
    ids, say): reported, never hidden. ``attempts`` counts model calls.
    """

    inserts: tuple[NewMemory, ...] = ()
    updates: tuple[MemoryUpdate, ...] = ()
    deletes: tuple[str, ...] = ()
    rejected: tuple[str, ...] = ()
    usage: Usage = field(default_factory=Usage)
    attempts: int = 0
    raw: str = ""

    @property
    def empty(self) -> bool:
        """Whether the model asked for no change."""
        return not (self.inserts or self.updates or self.deletes)


#: the old name (issue 34: one name per concept), kept so user code keeps working
Extraction = MemoryExtraction


class FixedSchemaModel(BaseModel):
    """Base of the manager's response models: their JSON schema never changes, so it is
    built once (pydantic takes ~10 ms per build, on every structured call)."""

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        key = (cls, args, tuple(sorted(kwargs.items(), key=lambda kv: kv[0])))
        cached = _SCHEMAS.get(key)
        if cached is None:
            cached = _SCHEMAS[key] = super().model_json_schema(*args, **kwargs)
        return copy.deepcopy(cached)


_SCHEMAS: dict[tuple[Any, ...], dict[str, Any]] = {}


def format_conversation(messages: Sequence[Message]) -> str:
    """The conversation as ``role: text`` lines (tool calls and images left out)."""
    lines = []
    for message in messages:
        text = message.text.strip()
        if text and message.role != "system":
            lines.append(f"{message.role}: {text}")
    return "\n".join(lines)


def _is_fact(schema: type[BaseModel]) -> bool:
    return issubclass(schema, Fact)


def memory_from_model(value: BaseModel) -> tuple[str | dict[str, Any], str]:
    """``(content, kind)`` of a schema instance: a :class:`Fact` keeps its text and kind; any
    other schema is stored as its JSON with the schema name as kind."""
    if isinstance(value, Fact):
        return value.content.strip(), value.kind.strip() or "fact"
    return value.model_dump(mode="json"), type(value).__name__


def memory_for_prompt(record: MemoryRecord) -> dict[str, Any]:
    """How an existing record is shown to the model (shaped like its schema)."""
    if isinstance(record.content, str):
        return {"content": record.content, "kind": record.kind}
    return record.content


class MemoryManager:
    """Extract memories from messages with one structured LLM call.

    ``schemas``: pydantic models a memory may take (default ``[Fact]``); names must differ.
    ``instructions`` replace :data:`DEFAULT_INSTRUCTIONS` (the id and JSON rules are always
    added). ``enable_inserts`` / ``enable_updates`` / ``enable_deletes`` remove that kind of
    change from the response schema, so the model cannot ask for it. ``max_retries``: how many
    times an invalid answer (bad JSON, schema violation, invented id) goes back to the model.
    """

    def __init__(self, model: ChatModel | None = None, *,
                 schemas: Sequence[type[BaseModel]] = (Fact,),
                 instructions: str | None = None, enable_inserts: bool = True,
                 enable_updates: bool = True, enable_deletes: bool = True,
                 max_retries: int = 1) -> None:
        schemas = tuple(schemas)
        if not schemas:
            raise InvalidInputError("schemas is empty; pass at least one pydantic model")
        for schema in schemas:
            if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
                raise InvalidInputError(
                    f"schemas must be pydantic BaseModel classes, got {schema!r}"
                )
        names = [schema.__name__ for schema in schemas]
        if len(set(names)) != len(names):
            raise InvalidInputError(f"schema names must differ, got {names}; rename one class")
        if not (enable_inserts or enable_updates or enable_deletes):
            raise InvalidInputError(
                "enable_inserts, enable_updates and enable_deletes are all False; the manager "
                "could change nothing: enable at least one"
            )
        if max_retries < 0:
            raise InvalidInputError(f"max_retries must be >= 0, got {max_retries}")
        self.model = model
        self.schemas = schemas
        self.instructions = instructions
        self.enable_inserts = enable_inserts
        self.enable_updates = enable_updates
        self.enable_deletes = enable_deletes
        self.max_retries = max_retries
        self._by_name = dict(zip(names, schemas, strict=True))
        self.response_model = self._build_response_model()

    # -- the response schema --------------------------------------------------------------------

    def _build_response_model(self) -> type[BaseModel]:
        single = len(self.schemas) == 1
        inserts: list[type[BaseModel]] = []
        updates: list[type[BaseModel]] = []
        validity: dict[str, Any] = {
            "valid_from": (date | None, Field(default=None, description=(
                "Since when the memory holds, if the conversation says (ISO date)."))),
            "valid_until": (date | None, Field(default=None, description=(
                "Until when the memory holds, if the conversation says (ISO date)."))),
        }
        for schema in self.schemas:
            name = schema.__name__
            tag: Any = Literal.__getitem__(name)  # a Literal of a name known only at run time
            type_field: Any = (tag, name) if single else (tag, ...)
            inserts.append(create_model(
                f"Insert{name}", __config__=ConfigDict(extra="forbid"), type=type_field,
                memory=(schema, ...), **validity))
            updates.append(create_model(
                f"Update{name}", __config__=ConfigDict(extra="forbid"),
                id=(int | str, Field(description="The id of the existing memory, as shown.")),
                type=type_field, memory=(schema, ...), **validity))
        fields: dict[str, Any] = {}
        if self.enable_inserts:
            fields["inserts"] = (_list_of(_union(inserts)), Field(
                default_factory=list, description="New memories."))
        if self.enable_updates:
            fields["updates"] = (_list_of(_union(updates)), Field(
                default_factory=list, description="Existing memories whose content changes."))
        if self.enable_deletes:
            delete = create_model("DeleteMemory", __config__=ConfigDict(extra="forbid"),
                                  id=(int | str, Field(description="The id to delete.")))
            fields["deletes"] = (_list_of(delete), Field(
                default_factory=list, description="Existing memories to delete."))
        model: type[BaseModel] = create_model(
            "MemoryChanges", __base__=FixedSchemaModel, **fields)
        model.model_config["extra"] = "forbid"
        model.model_rebuild(force=True)
        return model

    # -- the prompt -----------------------------------------------------------------------------

    def prompt(self, messages: Sequence[Message], existing: Sequence[MemoryRecord],
               aliases: IdAliases, now: float | None = None) -> tuple[Message, ...]:
        """The messages sent to the model (the instructions travel separately): the
        reference time (the latest message's time; ``now`` without messages), the existing
        memories, and the conversation with the time each message was sent."""
        shown = [
            {"id": aliases.alias(record.id), "type": record.schema,
             "memory": memory_for_prompt(record)}
            for record in existing
        ]
        allowed = [name for name, on in (("inserts", self.enable_inserts),
                                         ("updates", self.enable_updates),
                                         ("deletes", self.enable_deletes)) if on]
        body = (
            reference_line(messages, time.time() if now is None else now) + "\n\n"
            "Existing memories (refer to them by id):\n"
            + ("\n".join(json.dumps(entry, ensure_ascii=False) for entry in shown)
               if shown else "(none)")
            + "\n\nConversation:\n" + (timed_conversation(messages) or "(empty)")
            + f"\n\nAnswer with the changes ({', '.join(allowed)}) as JSON."
        )
        return (Message.user(body),)

    def full_instructions(self) -> str:
        """The system instructions: the user's (or the default) plus the schema rules and the
        grounding rules (language and time, :mod:`remem.messages.grounding`)."""
        base = self.instructions if self.instructions is not None else DEFAULT_INSTRUCTIONS
        kinds = ", ".join(self._by_name)
        return (f"{base}\n\nEach memory has a type ({kinds}) and a 'memory' object of that "
                "type. Ids are the small integers shown next to existing memories.\n\n"
                f"{LANGUAGE_RULE}\n{TIME_RULE}")

    # -- extraction -----------------------------------------------------------------------------

    def extract_flow(self, messages: Sequence[Message],
                     existing: Sequence[MemoryRecord] = (),
                     now: float | None = None) -> Flow[MemoryExtraction]:
        """The extraction as a flow (see :mod:`remem.memory.flow`); ``now``: the reference
        time when there are no messages (default: the wall clock)."""
        aliases = IdAliases(record.id for record in existing)
        convo = self.prompt(messages, existing, aliases, now)
        usage = Usage()
        attempts = 0
        rejected: list[str] = []
        while True:
            answer = yield StructuredCall(convo, self.response_model,
                                          self.full_instructions(), "extract",
                                          self.max_retries)
            usage = usage + answer.usage
            attempts += answer.attempts
            extraction, errors = self._resolve(answer.value, aliases)
            if not errors:
                return MemoryExtraction(extraction.inserts, extraction.updates, extraction.deletes,
                                  tuple(rejected), usage, attempts, answer.raw)
            rejected.extend(errors)
            if attempts > self.max_retries:
                raise StructuredOutputError(
                    "the model's memory changes are invalid after "
                    f"{attempts} attempt(s): " + "; ".join(errors),
                    raw=answer.raw, errors="; ".join(errors),
                )
            convo = (
                *convo,
                Message.assistant(answer.raw),
                Message.user("Your answer cannot be applied: " + "; ".join(errors)
                             + ". Answer again with the corrected JSON."),
            )

    def _resolve(self, value: BaseModel, aliases: IdAliases) -> tuple[MemoryExtraction, list[str]]:
        errors: list[str] = []
        inserts: list[NewMemory] = []
        updates: list[MemoryUpdate] = []
        deletes: list[str] = []
        targeted: dict[str, str] = {}
        for position, entry in enumerate(getattr(value, "inserts", ())):
            content, kind = memory_from_model(entry.memory)
            if isinstance(content, str) and not content:
                errors.append(f"inserts[{position}].memory.content is empty; write the fact "
                              "or leave the insert out")
                continue
            start, end, problem = _validity(entry, f"inserts[{position}]")
            if problem:
                errors.append(problem)
                continue
            inserts.append(NewMemory(content, kind, entry.type, start, end))
        for what, entries in (("updates", getattr(value, "updates", ())),
                              ("deletes", getattr(value, "deletes", ()))):
            for position, entry in enumerate(entries):
                real = aliases.resolve(entry.id)
                where = f"{what}[{position}].id"
                if real is None:
                    errors.append(f"{where} = {entry.id!r} is not an existing memory "
                                  f"({aliases.describe()})")
                    continue
                if real in targeted:
                    errors.append(f"{where} = {entry.id!r} is already in {targeted[real]}; "
                                  "change each memory at most once")
                    continue
                targeted[real] = what
                if what == "deletes":
                    deletes.append(real)
                else:
                    content, kind = memory_from_model(entry.memory)
                    start, end, problem = _validity(entry, f"updates[{position}]")
                    if problem:
                        errors.append(problem)
                        continue
                    updates.append(MemoryUpdate(real, content, kind, entry.type, start, end))
        return MemoryExtraction(tuple(inserts), tuple(updates), tuple(deletes)), errors

    def extract(self, messages: Sequence[Message] | str,
                existing: Sequence[MemoryRecord] = (),
                now: float | None = None) -> MemoryExtraction:
        """Decide the changes for ``messages`` against ``existing`` memories (one call, plus
        one retry when the answer is invalid)."""
        return run_sync(self.extract_flow(_messages(messages), existing, now),
                        model=self.model)

    async def aextract(self, messages: Sequence[Message] | str,
                       existing: Sequence[MemoryRecord] = (),
                       now: float | None = None) -> MemoryExtraction:
        """Async :meth:`extract`."""
        return await run_async(self.extract_flow(_messages(messages), existing, now),
                               model=self.model)


def _validity(entry: Any, where: str) -> tuple[float | None, float | None, str]:
    """The stated validity of an insert or update as epoch seconds, or the problem."""
    start: date | None = entry.valid_from
    end: date | None = entry.valid_until
    if start is not None and end is not None and end <= start:
        return None, None, (f"{where}.valid_until = {end.isoformat()} is not after valid_from "
                            f"= {start.isoformat()}; give an end after the start, or leave "
                            "one out")
    return (date_to_timestamp(start) if start is not None else None,
            date_to_timestamp(end) if end is not None else None, "")


def _list_of(item: Any) -> Any:
    return cast(Any, list)[item]


def _union(models: list[type[BaseModel]]) -> Any:
    if len(models) == 1:
        return models[0]
    return Annotated[Union[tuple(models)], Field(discriminator="type")]  # noqa: UP007


def _messages(messages: Sequence[Message] | str) -> tuple[Message, ...]:
    if isinstance(messages, str):
        return (Message.user(messages),)
    return tuple(messages)
