"""Structured output: ask any :class:`~remem.llm.ChatModel` for JSON, validate it, retry once.

:func:`generate` sends a :class:`~remem.llm.ResponseFormat` built from a pydantic model (clients
that support it turn it into a JSON-schema response format or a forced tool call) and also
describes the schema in a system instruction, so a model or server that ignores response
formats still knows what to answer. The answer is parsed tolerantly (:func:`parse_json_answer`
drops ``<think>`` blocks, code fences and prose around the JSON), validated with pydantic, and
on failure the bad answer goes back to the model with the validation errors. When every attempt
fails, :class:`~remem.errors.StructuredOutputError` carries the last raw answer and the errors.

>>> from pydantic import BaseModel
>>> from remem.llm import ScriptedModel
>>> class City(BaseModel):
...     name: str
>>> model = ScriptedModel(['Sure! ```json\\n{"name": "Berlin"}\\n```'])
>>> generate(model, "Where do I live?", City).value
City(name='Berlin')

The flow is written once, as a generator that yields requests and receives responses
(:func:`_flow`); :func:`generate` and :func:`agenerate` only drive it.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import pydantic

from remem.errors import InvalidInputError, StructuredOutputError
from remem.llm.base import ChatModel, ChatRequest, ChatResponse, ResponseFormat, Usage, as_messages
from remem.messages.types import Message, TextPart

__all__ = [
    "Structured",
    "agenerate",
    "generate",
    "parse_json_answer",
    "schema_instruction",
]

T = TypeVar("T", bound=pydantic.BaseModel)

# a reasoning block; an unclosed one at the start is dropped up to its closing tag below
_THINK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</(?:think|thinking|reasoning)>", re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*(?:json|JSON|json5)?[ \t]*\n?(.*?)```", re.DOTALL)
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class Structured(Generic[T]):
    """A validated structured answer."""

    #: the validated object
    value: T
    #: the model's final answer text (the JSON, possibly with whatever surrounded it)
    raw: str
    #: usage summed over every attempt
    usage: Usage
    #: 1, or more after validation retries
    attempts: int


def parse_json_answer(text: str) -> Any:
    """The JSON value in a model's answer, tolerating what models wrap around it.

    Drops ``<think>…</think>`` (also ``<thinking>``/``<reasoning>``) blocks, then tries, in
    order: the whole text, the contents of each Markdown code fence, and the first JSON object
    or array that decodes from inside the text (prose before or after it is ignored). Last, it
    forgives trailing commas and Python-style literals (``{'a': True}``), which small local
    models emit; the caller validates whatever comes out.

    Raises :class:`~remem.errors.StructuredOutputError` (with ``raw=text``) when no JSON is found.

    >>> parse_json_answer('<think>hmm</think>Here you go: {"a": 1} Hope that helps!')
    {'a': 1}
    """
    cleaned = _THINK.sub("", text)
    closing = list(_THINK_CLOSE.finditer(cleaned))
    if closing:  # an unclosed reasoning block (some servers strip the opening tag)
        cleaned = cleaned[closing[-1].end():]
    cleaned = cleaned.strip()
    candidates = [cleaned, *(m.group(1).strip() for m in _FENCE.finditer(cleaned))]
    for candidate in candidates:
        if not candidate:
            continue
        try:
            return json.loads(candidate)
        except ValueError:
            pass
    found = _first_embedded_json(cleaned)
    if found is not None:
        return found
    start, end = cleaned.find("{"), cleaned.rfind("}")
    if start != -1 and end > start:
        candidates.append(cleaned[start:end + 1])
    for candidate in candidates:
        repaired = _lenient(candidate)
        if repaired is not None:
            return repaired
    if not cleaned:
        raise StructuredOutputError(
            "the model's answer is empty" + (" once its reasoning block is removed" if
                                             text.strip() else "")
            + "; raise max_tokens (reasoning models spend tokens thinking) or check the server",
            raw=text, errors="no JSON value found: the answer is empty")
    snippet = cleaned[:200] + ("…" if len(cleaned) > 200 else "")
    raise StructuredOutputError(
        f"the model's answer contains no JSON object (answer starts: {snippet!r}); ask for JSON "
        "only, or use a model/server that supports JSON output",
        raw=text, errors="no JSON value found in the answer")


_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def _lenient(candidate: str) -> Any | None:
    """``candidate`` read with trailing commas dropped, or as Python literals; else ``None``."""
    if not candidate or candidate[0] not in "{[" or len(candidate) > 200_000:
        return None
    try:
        return json.loads(_TRAILING_COMMA.sub(r"\1", candidate))
    except ValueError:
        pass
    try:  # literal_eval evaluates literals only: no names, calls or attribute access
        value = ast.literal_eval(candidate)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, dict | list) else None


def _first_embedded_json(text: str) -> Any | None:
    """The first ``{...}`` (preferred) or ``[...]`` that decodes, scanning left to right."""
    for opener in "{[":
        start = text.find(opener)
        while start != -1:
            try:
                value, _ = _DECODER.raw_decode(text, start)
            except ValueError:
                start = text.find(opener, start + 1)
                continue
            return value
    return None


def schema_instruction(response_format: ResponseFormat) -> str:
    """The system instruction describing ``response_format`` for models that cannot enforce it."""
    schema = json.dumps(response_format.schema, ensure_ascii=False, separators=(",", ":"))
    # "fill in the values" because small models in JSON mode tend to echo the schema back
    return ("Answer with a single JSON object that conforms to the JSON schema below: fill in "
            "the values, do not repeat the schema, and write nothing else (no prose, no code "
            f"fences).\n{schema}")


def _reshaped(value: Any, schema: type[pydantic.BaseModel]) -> list[Any]:
    """Shapes models often wrap the right answer in, each worth one more validation:
    ``{"Person": {...}}`` or ``{"properties": {...}}``, and a bare list for a one-field model."""
    out: list[Any] = []
    if isinstance(value, dict):
        if len(value) == 1:
            inner = next(iter(value.values()))
            if isinstance(inner, dict):
                out.append(inner)
        if isinstance(value.get("properties"), dict):
            out.append(value["properties"])
    elif isinstance(value, list):
        required = [name for name, f in schema.model_fields.items() if f.is_required()]
        names = required or list(schema.model_fields)
        if len(names) == 1:
            out.append({names[0]: value})
    return out


def _validate(value: Any, schema: type[T]) -> T:
    try:
        return schema.model_validate(value)
    except pydantic.ValidationError as first:
        for candidate in _reshaped(value, schema):
            try:
                return schema.model_validate(candidate)
            except pydantic.ValidationError:
                continue
        raise first


def _echoes_schema(value: Any) -> bool:
    return isinstance(value, dict) and ("$defs" in value or (
        value.get("type") == "object" and isinstance(value.get("properties"), dict)))


def _format_errors(error: pydantic.ValidationError) -> str:
    lines = []
    for item in error.errors(include_url=False):
        where = ".".join(str(part) for part in item["loc"]) or "(root)"
        lines.append(f"- {where}: {item['msg']}")
    return "\n".join(lines)


def _answer_text(response: ChatResponse) -> str:
    """The answer's JSON text; a model that answered with a tool call gives its arguments."""
    text = response.text
    if not text.strip() and response.message.tool_calls:
        return json.dumps(response.message.tool_calls[0].arguments, ensure_ascii=False)
    return text


def _with_instruction(messages: tuple[Message, ...], instruction: str) -> tuple[Message, ...]:
    # merged into a leading system message: several chat templates of local models reject a
    # second system message or one that is not first
    if messages and messages[0].role == "system":
        first = messages[0]
        text = f"{first.text}\n\n{instruction}" if first.text else instruction
        merged = first.model_copy(update={"content": (TextPart(text=text),)})
        return (merged, *messages[1:])
    return (Message.system(instruction), *messages)


@functools.lru_cache(maxsize=256)
def _response_format(schema: type[pydantic.BaseModel]) -> ResponseFormat:
    # building a model's JSON schema costs milliseconds; extraction asks for the same few
    # schemas on every call (clients copy the dict before changing anything)
    return ResponseFormat(name=schema.__name__, schema=schema.model_json_schema())


def _flow(messages: Sequence[Message] | str, schema: type[T], *, instructions: str | None,
          operation: str, max_retries: int, max_tokens: int | None,
          ) -> Generator[ChatRequest, ChatResponse, Structured[T]]:
    """The flow: yields each request, receives its response, returns the result."""
    if not (isinstance(schema, type) and issubclass(schema, pydantic.BaseModel)):
        raise InvalidInputError(
            f"schema must be a pydantic BaseModel subclass, got {schema!r}; define "
            "class Answer(pydantic.BaseModel): ... and pass Answer")
    if max_retries < 0:
        raise InvalidInputError(f"max_retries must be >= 0, got {max_retries}")
    response_format = _response_format(schema)
    instruction = schema_instruction(response_format)
    if instructions:
        instruction = f"{instructions}\n\n{instruction}"
    conversation = _with_instruction(as_messages(messages), instruction)
    usage = Usage()
    raw = ""
    errors = ""
    for attempt in range(1, max_retries + 2):
        response = yield ChatRequest(conversation, response_format=response_format,
                                     max_tokens=max_tokens, operation=operation)
        usage = usage + response.usage
        raw = _answer_text(response)
        try:
            parsed = parse_json_answer(raw)
            value = _validate(parsed, schema)
        except StructuredOutputError as exc:
            errors = exc.errors
        except pydantic.ValidationError as exc:
            errors = _format_errors(exc)
            if _echoes_schema(parsed):
                errors += ("\n(the answer repeats the JSON schema itself: answer with an object "
                           "holding the actual values instead)")
        else:
            return Structured(value=value, raw=raw, usage=usage, attempts=attempt)
        if response.finish_reason == "length":
            errors += "\n(the answer was cut off at max_tokens; raise max_tokens)"
        conversation = (*conversation, Message.assistant(raw or "(empty answer)"), Message.user(
            f"Your answer is not valid for the {schema.__name__} schema:\n{errors}\n"
            "Answer again with only the corrected JSON object."))
    raise StructuredOutputError(
        f"the model's answer is not a valid {schema.__name__} after {max_retries + 1} "
        f"attempt(s): {errors}", raw=raw, errors=errors)


def generate(model: ChatModel, messages: Sequence[Message] | str, schema: type[T], *,
             instructions: str | None = None, operation: str = "structured",
             max_retries: int = 1, max_tokens: int | None = None) -> Structured[T]:
    """Ask ``model`` for an answer valid against the pydantic model ``schema``.

    ``messages`` is the conversation (a string is one user message); ``instructions`` are put
    in the system message together with the schema. Invalid answers are sent back with the
    validation errors up to ``max_retries`` times. Usage is recorded under ``operation`` in
    ``model.usage`` and summed in the result. Raises
    :class:`~remem.errors.StructuredOutputError` (``raw``, ``errors``) when every attempt fails;
    errors of the call itself (:class:`~remem.errors.LLMError` and friends) pass through.
    """
    flow = _flow(messages, schema, instructions=instructions, operation=operation,
                 max_retries=max_retries, max_tokens=max_tokens)
    request = next(flow)
    while True:
        response = model.complete(request)
        try:
            request = flow.send(response)
        except StopIteration as done:
            result: Structured[T] = done.value
            return result


async def agenerate(model: ChatModel, messages: Sequence[Message] | str, schema: type[T], *,
                    instructions: str | None = None, operation: str = "structured",
                    max_retries: int = 1, max_tokens: int | None = None) -> Structured[T]:
    """Async :func:`generate`."""
    flow = _flow(messages, schema, instructions=instructions, operation=operation,
                 max_retries=max_retries, max_tokens=max_tokens)
    request = next(flow)
    while True:
        response = await model.acomplete(request)
        try:
            request = flow.send(response)
        except StopIteration as done:
            result: Structured[T] = done.value
            return result
