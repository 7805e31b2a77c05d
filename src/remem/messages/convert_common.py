"""Helpers shared by the provider message converters: typed field access with errors that name
the field (``messages[2].tool_calls[0].function.arguments``), the refusal of fields a
converter does not read (:func:`refuse_unknown`), and image URL handling."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence, Set
from typing import Any, Literal

import pydantic

from remem.errors import MessageFormatError
from remem.messages.types import ImagePart, Message, TextPart

__all__ = [
    "Extra",
    "build",
    "data_url",
    "field",
    "image_part",
    "image_url_part",
    "optional_str",
    "parse_arguments",
    "refuse_unknown",
    "remem_fields",
    "require_dict",
    "require_list",
    "require_str",
    "split_data_url",
    "text_of",
]

_DATA_URL = re.compile(r"^data:(?P<media>[\w.+-]+/[\w.+-]+)?(?:;[\w=-]+)*;base64,(?P<data>.*)$",
                       re.DOTALL)


Extra = Literal["forbid", "ignore"]
"""What a converter does with a key it does not read: ``"forbid"`` refuses it (what remem's
surfaces use: a field silently dropped is a field the caller believes was kept), ``"ignore"``
drops it (what remem's model clients use on a provider's answers, which gain fields over
time)."""


def refuse_unknown(data: Mapping[Any, Any], known: Set[str], where: str, what: str,
                   extra: Extra) -> None:
    """With ``extra="forbid"``, a :class:`MessageFormatError` naming the first key of
    ``data`` not in ``known`` (and the keys that are); nothing with ``"ignore"``."""
    if extra == "ignore":
        return
    for key in data:
        if key not in known:
            name = key if isinstance(key, str) else repr(key)
            raise MessageFormatError(
                f"{where} has the unknown field {name!r}: {what} takes "
                f"{', '.join(sorted(known))}; unknown fields are refused, not dropped: "
                "remove it (a message keeps free JSON in its metadata)")


def remem_fields(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The fields of remem's own message JSON a provider dict may carry beside its own
    (``id``, ``created_at``, ``metadata``, ``is_error``: what ``/v1/threads`` answers with),
    checked, as :class:`Message` keyword arguments."""
    out: dict[str, Any] = {}
    if data.get("id") is not None:
        out["id"] = require_str(data["id"], field(where, "id"), allow_empty=False)
    created = data.get("created_at")
    if created is not None:
        if isinstance(created, bool) or not isinstance(created, int | float) or \
                not math.isfinite(created):
            raise MessageFormatError(f"{field(where, 'created_at')} must be a finite number "
                                     f"of epoch seconds, got {_kind(created)}")
        out["created_at"] = float(created)
    if data.get("metadata") is not None:
        out["metadata"] = dict(require_dict(data["metadata"], field(where, "metadata")))
    is_error = data.get("is_error")
    if is_error is not None:
        if not isinstance(is_error, bool):
            raise MessageFormatError(f"{field(where, 'is_error')} must be true or false, got "
                                     f"{_kind(is_error)}")
        out["is_error"] = is_error
    return out


def field(where: str, name: str | int) -> str:
    """The path of a child field: ``field("m[0]", "content")`` is ``"m[0].content"``."""
    return f"{where}[{name}]" if isinstance(name, int) else f"{where}.{name}"


def require_dict(value: Any, where: str, expected: str = "an object") -> Mapping[str, Any]:
    """``value`` if it is a mapping, else a :class:`MessageFormatError` naming ``where``."""
    if not isinstance(value, Mapping):
        raise MessageFormatError(f"{where} must be {expected}, got {_kind(value)}")
    return value


def require_list(value: Any, where: str) -> Sequence[Any]:
    """``value`` if it is a list or tuple, else a :class:`MessageFormatError` naming ``where``."""
    if not isinstance(value, list | tuple):
        raise MessageFormatError(f"{where} must be a list, got {_kind(value)}")
    return value


def require_str(value: Any, where: str, *, allow_empty: bool = True) -> str:
    """``value`` if it is a string (non-empty unless ``allow_empty``), else a typed error."""
    if not isinstance(value, str):
        raise MessageFormatError(f"{where} must be a string, got {_kind(value)}")
    if not allow_empty and not value:
        raise MessageFormatError(f"{where} must be a non-empty string")
    return value


def optional_str(value: Any, where: str) -> str | None:
    """``None`` or a string, else a typed error."""
    return None if value is None else require_str(value, where)


def parse_arguments(value: Any, where: str) -> dict[str, Any]:
    """Tool call arguments: a JSON object, or a string holding one (``""`` means ``{}``)."""
    if isinstance(value, str):
        if not value.strip():
            return {}
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise MessageFormatError(
                f"{where} is not valid JSON ({exc.msg} at character {exc.pos}): "
                f"{value[:120]!r}") from exc
    if not isinstance(value, Mapping):
        raise MessageFormatError(f"{where} must be a JSON object, got {_kind(value)}")
    return dict(value)


def split_data_url(url: str) -> tuple[str | None, str] | None:
    """``(media_type, base64 data)`` of a ``data:`` URL, or ``None`` for any other URL."""
    match = _DATA_URL.match(url)
    if match is None:
        return None
    return match.group("media"), match.group("data")


def data_url(media_type: str, data: str) -> str:
    """A ``data:`` URL for base64 ``data``."""
    return f"data:{media_type};base64,{data}"


def image_part(url: str, media_type: str | None, where: str) -> ImagePart:
    """An :class:`ImagePart`, with the media type taken from a data URL when not given."""
    if media_type is None and (parsed := split_data_url(url)) is not None:
        media_type = parsed[0]
    try:
        return ImagePart(url=url, media_type=media_type)
    except pydantic.ValidationError as exc:  # pragma: no cover - both fields are strings here
        raise MessageFormatError(f"{where} is not a valid image: {exc}") from exc


def image_url_part(part: Mapping[str, Any], where: str, extra: Extra = "ignore") -> ImagePart:
    """An OpenAI-style ``{"type": "image_url", "image_url": {"url": ...}}`` block (the URL may
    also stand directly under ``image_url``, as LangChain writes it; ``detail`` is read and
    dropped: remem keeps the image, not how a provider should look at it)."""
    refuse_unknown(part, {"type", "image_url"}, where, "an image_url part", extra)
    image = part.get("image_url")
    if not isinstance(image, str):
        image = require_dict(image, field(where, "image_url"))
        refuse_unknown(image, {"url", "detail"}, field(where, "image_url"), "image_url",
                       extra)
    url = image if isinstance(image, str) else image.get("url")
    return image_part(require_str(url, field(where, "image_url.url"), allow_empty=False), None,
                      where)


def text_of(parts: Sequence[TextPart | ImagePart]) -> str:
    """The text parts joined by newlines."""
    return "\n".join(part.text for part in parts if isinstance(part, TextPart))


def build(where: str, **fields: Any) -> Message:
    """A :class:`Message`, its validation errors turned into a :class:`MessageFormatError`."""
    try:
        return Message(**fields)
    except pydantic.ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'message'}: {e['msg']}"
            for e in exc.errors(include_url=False))
        raise MessageFormatError(f"{where} is not a valid message: {problems}") from exc


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return f"{type(value).__name__} {value!r}"[:120]
