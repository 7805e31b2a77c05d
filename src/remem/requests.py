"""Requests as values: the base every operation's request is declared on, and the field
types they share.

Each operation of the facade (``Memory.search``, ``ThreadStore.append``...) has one frozen,
validated request model, declared once beside its layer (:mod:`remem.memory.requests`,
:mod:`remem.threads.requests`). Every surface is built from those declarations: the Python
methods build the request and run it, the HTTP routes take it as their body (so it is the
OpenAPI schema), ``remem.Client`` sends it, and the CLI options, MCP tools and agent tools
read their parameters, defaults and help from its fields. A parity test checks that every
surface takes the same parameters with the same defaults.

Validation is strict (JSON ``false`` is not ``0``, ``"1"`` is not ``1``) and bounded (every
string, list and number has a limit), the same from Python as over HTTP. No string of any
field, at any depth, may hold the NUL character (U+0000), which no backend stores alike (see
:mod:`remem.store.values`): it is refused here, before anything is written or a model is
called. A bad value raises :class:`~remem.errors.InvalidInputError` naming the field, the
rule and the fix.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Annotated, Any, ClassVar, Self

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
)

from remem.errors import InvalidInputError
from remem.messages.convert_openai import to_openai
from remem.messages.inputs import to_messages
from remem.messages.types import Message
from remem.store.types import (
    MAX_TIMESTAMP,
    MAX_VALUE_DEPTH,
    MIN_TIMESTAMP,
    NestingError,
    bounded_json,
    nesting_problem,
)
from remem.store.values import nul_problem

__all__ = [
    "MAX_JSON_CHARS",
    "MAX_JSON_DEPTH",
    "MAX_MESSAGES",
    "MAX_NAMESPACE_DEPTH",
    "MAX_TEXT",
    "ConversationMessages",
    "JsonObject",
    "Label",
    "Limit",
    "Messages",
    "NamespacePath",
    "NamespacePrefix",
    "Offset",
    "Request",
    "ScopeId",
    "Timestamp",
    "invalid_input",
]

#: fewer than the store's 64 labels, so a server's tenant prefix always fits in front
MAX_NAMESPACE_DEPTH = 60
#: deepest nesting of a JSON field (metadata, state, content, filters; the field itself is
#: level 1): fewer than the store's 64 levels per value, so what remem wraps around a field
#: (a memory record, a history event's before/after) always fits
MAX_JSON_DEPTH = MAX_VALUE_DEPTH - 4
#: longest JSON field, in characters of compact JSON
MAX_JSON_CHARS = 1_000_000
_PRINTABLE = r"^[^\x00-\x1f\x7f]+$"


def _as_list(value: Any) -> Any:
    # Python callers pass tuples (namespaces are tuples); JSON gives lists
    return list(value) if isinstance(value, tuple) else value


def _as_dict(value: Any) -> Any:
    # any Mapping from Python (MappingProxyType, a frozen dict...); JSON gives dicts
    return dict(value) if isinstance(value, Mapping) and not isinstance(value, dict) else value


def _json_object(value: Any, info: ValidationInfo) -> Any:
    """A JSON object within :data:`MAX_JSON_DEPTH` levels and :data:`MAX_JSON_CHARS`
    characters, holding only JSON values (checked before anything is written)."""
    value = _as_dict(value)
    if not isinstance(value, dict):
        return value  # pydantic says what it expected
    where = info.field_name or "value"
    try:
        text = bounded_json(value, where, MAX_JSON_DEPTH)
    except NestingError:
        raise  # a ValueError: its message names the path
    except (TypeError, ValueError, UnicodeEncodeError) as exc:
        raise ValueError(
            f"{where} is not JSON: {exc}; use only dict, list, str, int, float, bool and None "
            "(finite numbers, valid Unicode: no lone surrogates)") from None
    if len(text) > MAX_JSON_CHARS:
        raise ValueError(f"{where} is {len(text)} characters as JSON; the limit is "
                         f"{MAX_JSON_CHARS}")
    return value


def _as_timestamp(value: Any) -> Any:
    """Aware datetimes become epoch seconds; naive ones are refused (whose midnight?)."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError("a datetime must be timezone-aware, e.g. "
                             "datetime(2026, 1, 1, tzinfo=UTC), or pass epoch seconds")
        return value.timestamp()
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("must be a finite number of epoch seconds")
    return value


Label = Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=_PRINTABLE)]
"""One namespace label: 1-256 printable characters."""

NamespacePath = Annotated[list[Label], BeforeValidator(_as_list),
                          Field(min_length=1, max_length=MAX_NAMESPACE_DEPTH)]
"""A namespace: 1-60 labels."""

NamespacePrefix = Annotated[list[Label], BeforeValidator(_as_list),
                            Field(max_length=MAX_NAMESPACE_DEPTH)]
"""A namespace prefix: 0-60 labels (empty: everything)."""

ScopeId = Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=_PRINTABLE)]
"""A user, agent or thread id: 1-256 printable characters."""

Limit = Annotated[int, Field(ge=1, le=1000)]
"""A page size: 1-1000."""

Offset = Annotated[int, Field(ge=0, le=100_000)]
"""Results to skip: 0-100,000."""

# the bounds come before the validator so the JSON schema states them as minimum/maximum
Timestamp = Annotated[float, Field(ge=MIN_TIMESTAMP, le=MAX_TIMESTAMP),
                      BeforeValidator(_as_timestamp)]
"""Epoch seconds within years 1-9999 (an aware datetime is accepted from Python)."""

JsonObject = Annotated[dict[str, Any], BeforeValidator(_json_object)]
"""A JSON object: at most 60 levels deep, 1,000,000 characters as JSON."""


# -- messages as a field: every family that takes a conversation declares it with these ------

#: most messages one add takes
MAX_MESSAGES = 500
#: most characters of one text (a message's, a memory's content, a query is 10,000)
MAX_TEXT = 200_000
_SURROGATE = re.compile("[\ud800-\udfff]")


def _checked_messages(value: Any) -> tuple[Message, ...]:
    messages = _checked_conversation(value)
    if not any(message.text.strip() for message in messages):
        raise ValueError("nothing to remember: pass non-empty text or at least one message "
                         "with text")
    return messages


def _checked_conversation(value: Any) -> tuple[Message, ...]:
    """Messages as a conversation keeps them: at least one, each within the limits, text or
    not (a tool call, an empty answer, a framework's reasoning item)."""
    messages = to_messages(value)
    if not messages:
        raise ValueError("no messages: pass text or at least one message")
    if len(messages) > MAX_MESSAGES:
        raise ValueError(f"at most {MAX_MESSAGES} messages per add, got {len(messages)}; "
                         "split the conversation into several adds")
    for position, message in enumerate(messages):
        text = message.text
        if len(text) > MAX_TEXT:
            raise ValueError(f"message {position} has {len(text)} characters; at most "
                             f"{MAX_TEXT} per message")
        bad = _SURROGATE.search(text)
        if bad is not None:
            raise ValueError(f"message {position} contains a lone surrogate "
                             f"({bad.group()!r} at character {bad.start()}), which is not "
                             "valid Unicode; decode the text with errors='replace'")
        # the JSON a message carries is bounded like every JSON field (it is stored as is)
        parts = [(f"messages[{position}].metadata", message.metadata)] + [
            (f"messages[{position}].tool_calls[{i}].arguments", call.arguments)
            for i, call in enumerate(message.tool_calls)]
        for where, data in parts:
            problem = nesting_problem(data, where, MAX_JSON_DEPTH) if data else None
            if problem is not None:
                raise ValueError(problem)
    return messages


def _messages_json(messages: tuple[Message, ...]) -> Any:
    return to_openai(list(messages))


_CHAT_MESSAGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "an OpenAI-style chat message, optionally with remem's id, created_at, "
                   "metadata and is_error (as /v1/threads answers them); other fields are "
                   "refused",
    "properties": {
        "role": {"enum": ["system", "user", "assistant", "tool", "developer", "function"]},
        "content": {"anyOf": [{"type": "string", "maxLength": MAX_TEXT},
                              {"type": "array", "items": {"type": "object"}},
                              {"type": "null"}]},
        "name": {"type": ["string", "null"]},
        "tool_calls": {"type": ["array", "null"], "items": {"type": "object"}},
        "tool_call_id": {"type": ["string", "null"]},
        "function_call": {"type": ["object", "null"]},
        "refusal": {"type": ["string", "null"]},
        "id": {"type": ["string", "null"]},
        "created_at": {"type": ["number", "null"]},
        "metadata": {"type": ["object", "null"]},
        "is_error": {"type": ["boolean", "null"]},
    },
    "required": ["role"],
    "additionalProperties": False,
}

Messages = Annotated[
    tuple[Message, ...],
    BeforeValidator(_checked_messages),
    PlainSerializer(_messages_json, when_used="json"),
    WithJsonSchema({"anyOf": [
        {"type": "string", "minLength": 1, "maxLength": MAX_TEXT},
        # a string in the list is a user message (remem.messages.to_messages reads it so)
        {"type": "array", "items": {"anyOf": [{"type": "string", "maxLength": MAX_TEXT},
                                              _CHAT_MESSAGE_SCHEMA]},
         "minItems": 1, "maxItems": MAX_MESSAGES},
    ]}),
]
"""Text or chat messages (OpenAI-style dicts or plain strings, each a user message; or remem
``Message`` values from Python)."""

ConversationMessages = Annotated[
    tuple[Message, ...],
    BeforeValidator(_checked_conversation),
    PlainSerializer(_messages_json, when_used="json"),
    WithJsonSchema({"anyOf": [
        {"type": "string", "maxLength": MAX_TEXT},
        {"type": "array", "items": {"anyOf": [{"type": "string", "maxLength": MAX_TEXT},
                                              _CHAT_MESSAGE_SCHEMA]},
         "minItems": 1, "maxItems": MAX_MESSAGES},
    ]}),
]
"""As :data:`Messages`, for a conversation's record (threads): a message needs no text, since
a turn of only tool calls, or an empty answer, is still part of the conversation."""


#: how pydantic names the branch of a union in an error's location
_UNION_TAG = re.compile(r"^(constrained-\w+|[\w-]+\[.*\])$")


def invalid_input(exc: ValidationError, what: str) -> InvalidInputError:
    """One :class:`InvalidInputError` for a pydantic validation failure: every problem with
    its field path and rule (``limit: must be >= 1 (got 0)``)."""
    errors = exc.errors(include_url=False)
    # a union field (text or a JSON object) fails once per branch: keep the branch whose
    # type matched (its error says what is wrong) over "should be a valid string"
    specific = {e["loc"][:1] for e in errors if not e["type"].endswith("_type")}
    problems = []
    for error in errors:
        if error["type"].endswith("_type") and error["loc"][:1] in specific and len(
                error["loc"]) > 1:
            continue
        error["loc"] = tuple(part for part in error["loc"]
                             if not (isinstance(part, str) and _UNION_TAG.match(part)))
        # a validator's own message already says what is wrong: no "Value error, " before it
        message = error["msg"].removeprefix("Value error, ")
        if not error["loc"]:  # a rule over several fields (a scope is required...)
            problems.append(message)
            continue
        where = ".".join(str(part) for part in error["loc"])
        got = error.get("input")
        shown = repr(got) if not isinstance(got, dict | list) else type(got).__name__
        if message.startswith(where):  # the message names the path inside the field itself
            problems.append(message)
            continue
        problems.append(f"{where}: {message} (got {shown[:80]})")
    return InvalidInputError(f"invalid {what}: " + "; ".join(problems))


class Request(BaseModel):
    """An operation's parameters, validated once, frozen.

    Build one with keyword arguments (``SearchRequest(query="tea", user_id="alice")``) or
    :meth:`of`, which raises :class:`~remem.errors.InvalidInputError` instead of pydantic's
    ``ValidationError``. ``model_dump(mode="json")`` is its JSON body over HTTP.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    #: the operation's name: the facade method that runs it (``"search"``: ``Memory.search``)
    operation: ClassVar[str] = ""

    @field_validator("*", mode="after")
    @classmethod
    def _no_nul(cls, value: Any, info: ValidationInfo) -> Any:
        """Refuse the NUL character in any string of a field (messages, metadata keys and
        values, texts, queries), naming where it is."""
        if value is None or isinstance(value, bool | int | float):
            return value
        problem = nul_problem(value, info.field_name or "value")
        if problem is not None:
            raise ValueError(problem)
        return value

    @classmethod
    def of(cls, **fields: Any) -> Self:
        """Validate ``fields`` into a request; errors name each bad field and its rule."""
        try:
            return cls(**fields)
        except ValidationError as exc:
            raise invalid_input(exc, cls.__name__) from None

    @classmethod
    def parameters(cls) -> Sequence[str]:
        """The parameter names, in declaration order (what every surface accepts)."""
        return list(cls.model_fields)

    def arguments(self) -> dict[str, Any]:
        """The parameters as a dict of Python values (not JSON-encoded)."""
        return {name: getattr(self, name) for name in self.parameters()}
