"""Profiles: one document per namespace and schema, kept up to date with JSON patches.

The model sees the current profile and the conversation and answers with RFC 6902
operations. They are applied to a copy and the result is validated against the schema; a
patch that does not apply or breaks the schema goes back to the model once with the errors,
and a second failure raises :class:`~remem.errors.StructuredOutputError`. The profile is a
memory record (kind ``"profile"``) with a stable id, so history and undo work as for facts.

The prompt is grounded like extraction (:mod:`remem.messages.grounding`): the reference time,
when each message was sent, and the rules to keep values in the language they were stated in
and to write relative times as dates.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from remem.errors import (
    ConflictError,
    InvalidInputError,
    InvalidValueError,
    StructuredOutputError,
)
from remem.llm.base import ChatModel, Usage
from remem.memory.flow import Flow, StoreBatch, StructuredCall, run_async, run_sync
from remem.memory.jsonpatch import PatchError, apply_patch
from remem.memory.locking import LockSettings
from remem.memory.manager import FixedSchemaModel
from remem.memory.namespaces import NamespaceTemplate
from remem.memory.reconcile import Change, ChangeContext, Plan, plan_edit, write_change
from remem.memory.records import MemoryRecord, Source
from remem.memory.store_manager import as_message_list
from remem.memory.writer import commit
from remem.messages.grounding import LANGUAGE_RULE, reference_line, timed_conversation
from remem.messages.types import Message
from remem.store.bad_records import parse_or_raise
from remem.store.base import BaseStore
from remem.store.types import GetOp, Item, Namespace
from remem.store.values import validated_value

__all__ = ["PatchOperation", "ProfileManager", "ProfileResult", "profile_id"]

PROFILE_INSTRUCTIONS = """\
You keep a profile of the user up to date from conversations. Answer with JSON Patch \
(RFC 6902) operations that change the current profile to reflect what the conversation \
states; answer with an empty list when nothing changes. Only record what is stated. Paths \
are JSON pointers into the profile, e.g. /city or /languages/- to append."""

#: always added to the instructions (the user's or the default)
PROFILE_GROUNDING = (
    LANGUAGE_RULE.replace("each memory", "each value") + " Write relative times (\"next "
    "Friday\", \"since March\") as absolute dates, resolved against the time the message was "
    "sent (shown in the conversation) or the reference time."
)


class PatchOperation(BaseModel):
    """One RFC 6902 operation."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    op: Literal["add", "remove", "replace", "move", "copy", "test"]
    path: str = Field(description="JSON pointer, e.g. /city")
    value: Any = None
    from_: str | None = Field(default=None, alias="from")


class ProfilePatch(FixedSchemaModel):
    """The model's answer: patch operations (empty: no change)."""

    model_config = ConfigDict(extra="forbid")

    patches: list[PatchOperation] = Field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ProfileResult:
    """The profile after an update (``None`` before the first), the change made, and cost."""

    profile: dict[str, Any] | None
    record: MemoryRecord | None = None
    changes: tuple[Change, ...] = ()
    patches: tuple[dict[str, Any], ...] = ()
    usage: Usage = field(default_factory=Usage)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"profile": self.profile,
                "record": self.record.to_dict() if self.record else None,
                "changes": [c.to_dict() for c in self.changes],
                "patches": list(self.patches),
                "usage": {"llm_calls": self.usage.calls,
                          "input_tokens": self.usage.input_tokens,
                          "output_tokens": self.usage.output_tokens}}


def profile_id(namespace: Namespace, schema: str) -> str:
    """The stable id of the profile of ``schema`` in ``namespace``."""
    digest = hashlib.sha256(json.dumps([list(namespace), schema]).encode()).hexdigest()
    return f"prof_{digest[:24]}"


class ProfileManager:
    """Keep one ``schema`` document per namespace, patched by the model.

    ``namespace``: a template such as ``("profiles", "{user_id}")``. ``max_retries``: how
    often an invalid answer or patch goes back to the model.
    """

    def __init__(self, store: BaseStore, model: ChatModel | None, schema: type[BaseModel], *,
                 namespace: NamespaceTemplate | Sequence[str] = ("profiles", "{user_id}"),
                 instructions: str | None = None, max_retries: int = 1,
                 max_attempts: int = 3, lock: LockSettings | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
            raise InvalidInputError(f"schema must be a pydantic BaseModel class, got {schema!r}")
        self.store = store
        self.model = model
        self.schema = schema
        self.template = NamespaceTemplate.of(namespace)
        self.instructions = f"{instructions or PROFILE_INSTRUCTIONS}\n\n{PROFILE_GROUNDING}"
        self.max_retries = max_retries
        self.max_attempts = max_attempts
        self.lock = lock or LockSettings()
        self.clock = clock

    def _empty(self) -> dict[str, Any]:
        try:
            return self.schema().model_dump(mode="json")
        except ValidationError:  # required fields: start from nothing
            return {}

    def _prompt(self, profile: dict[str, Any] | None, messages: Sequence[Message],
                now: float) -> tuple[Message, ...]:
        shown = profile if profile is not None else self._empty()
        schema = json.dumps(self.schema.model_json_schema(), ensure_ascii=False)
        return (Message.user(
            f"{reference_line(messages, now)}\n\n"
            f"Profile schema ({self.schema.__name__}):\n{schema}\n\n"
            f"Current profile:\n{json.dumps(shown, ensure_ascii=False)}\n\n"
            f"Conversation:\n{timed_conversation(messages) or '(empty)'}\n\n"
            "Answer with the patches as JSON."),)

    def _validated(self, profile: dict[str, Any], patches: list[PatchOperation]
                   ) -> tuple[dict[str, Any] | None, str]:
        operations = [p.model_dump(by_alias=True, exclude_none=False) for p in patches]
        for operation in operations:
            if operation.get("from") is None:
                operation.pop("from", None)
        try:
            patched = apply_patch(profile, operations)
        except PatchError as exc:
            return None, str(exc)
        if not isinstance(patched, dict):
            return None, "the patched profile must stay a JSON object"
        try:  # NaN, infinities, NUL: the schema's dump would turn NaN into null unasked
            validated_value(patched)
        except InvalidValueError as exc:
            return None, f"the patched profile cannot be stored: {exc}"
        try:
            return self.schema.model_validate(patched).model_dump(mode="json"), ""
        except ValidationError as exc:
            details = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}"
                                for e in exc.errors())
            return None, f"the patched profile is not a valid {self.schema.__name__}: {details}"

    def update_flow(self, messages: Sequence[Message] | Message | str,
                    config: Mapping[str, Any] | None = None, *,
                    namespace: Namespace | None = None, actor: str = "user",
                    thread_id: str | None = None) -> Flow[ProfileResult]:
        """The update as a flow."""
        ns = namespace if namespace is not None else self.template.fill(config or {})
        now = self.clock()
        msgs = as_message_list(messages, now)
        key = profile_id(ns, self.schema.__name__)
        usage = Usage()
        for _ in range(self.max_attempts):
            found = yield StoreBatch([GetOp(ns, key)])
            item = found[0]
            old = _profile_record(item)
            base = dict(old.content) if old is not None and isinstance(old.content, dict) \
                else self._empty()
            convo = self._prompt(base, msgs, now)
            attempts = 0
            while True:
                answer = yield StructuredCall(convo, ProfilePatch, self.instructions,
                                              "profile", self.max_retries)
                usage = usage + answer.usage
                attempts += answer.attempts
                new, error = self._validated(base, answer.value.patches)
                if not error:
                    break
                if attempts > self.max_retries:
                    raise StructuredOutputError(
                        f"the model's profile patch is invalid after {attempts} attempt(s): "
                        f"{error}", raw=answer.raw, errors=error)
                convo = (*convo, Message.assistant(answer.raw), Message.user(
                    f"Your patch cannot be applied: {error}. Answer again with corrected "
                    "patches."))
            patches = tuple(p.model_dump(by_alias=True, exclude_none=True)
                            for p in answer.value.patches)
            assert new is not None
            if (old is not None and new == old.content) or not patches:
                return ProfileResult(dict(old.content) if old and isinstance(old.content, dict)
                                     else None, old, (), patches, usage)
            ctx = ChangeContext(now=self.clock(), actor=actor, reason="profile patch",
                                source=Source(thread_id, tuple(m.id for m in msgs)))
            seen = old.version if old is not None else None

            plan_for = partial(self._plan, key=key, namespace=ns, content=new, seen=seen,
                               ctx=ctx)
            try:
                plan = yield from commit(ns, [GetOp(ns, key)], plan_for, self.lock)
            except ConflictError:
                continue
            record = plan.changes[-1].memory if plan.changes else old
            return ProfileResult(new, record, tuple(plan.changes), patches, usage)
        raise ConflictError(f"the profile in {ns!r} kept changing; retry the update")

    def _plan(self, results: list[Any], head: int, *, key: str, namespace: Namespace,
              content: dict[str, Any], seen: int | None, ctx: ChangeContext) -> Plan:
        current = results[0]
        record = _profile_record(current)
        if (record.version if record else None) != seen:
            raise ConflictError("the profile changed meanwhile")
        if record is not None:
            return plan_edit(record, ctx, content=content)
        plan = Plan()
        fresh = MemoryRecord(id=key, namespace=namespace, content=content, kind="profile",
                             schema=self.schema.__name__, valid_at=ctx.now, source=ctx.source,
                             created_at=ctx.now, updated_at=ctx.now)
        write_change(plan, ctx, "add", None, fresh)
        return plan

    def update(self, messages: Sequence[Message] | Message | str,
               config: Mapping[str, Any] | None = None, **options: Any) -> ProfileResult:
        """Patch the profile from ``messages`` (one LLM call, plus one retry if invalid)."""
        return run_sync(self.update_flow(messages, config, **options), self.store, self.model)

    async def aupdate(self, messages: Sequence[Message] | Message | str,
                      config: Mapping[str, Any] | None = None,
                      **options: Any) -> ProfileResult:
        """Async :meth:`update`."""
        return await run_async(self.update_flow(messages, config, **options), self.store,
                               self.model)

    def get(self, config: Mapping[str, Any] | None = None, *,
            namespace: Namespace | None = None) -> dict[str, Any] | None:
        """The current profile (``None`` before the first update)."""
        ns = namespace if namespace is not None else self.template.fill(config or {})
        item = self.store.get(ns, profile_id(ns, self.schema.__name__))
        if item is None:
            return None
        content = item.value.get("content")
        return dict(content) if isinstance(content, dict) else None


def _profile_record(item: Any) -> MemoryRecord | None:
    """The stored profile, ``None`` when there is none; one that does not parse is a
    :class:`~remem.errors.BadRecordError` naming it and ``remem doctor`` (an update must not
    write over what it cannot read)."""
    if not isinstance(item, Item):
        return None
    return parse_or_raise(MemoryRecord.from_item, item, family="memories",
                          namespace=item.namespace, key=item.key,
                          what=f"profile {item.key!r}")
