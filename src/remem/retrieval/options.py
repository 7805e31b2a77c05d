"""Checks shared by the ranking stages' options: one wording for every stage's errors.

Each stage is a frozen dataclass whose ``__post_init__`` checks its fields with these, so a bad
option raises :class:`~remem.errors.InvalidInputError` naming the option (``Sessions.weight``),
the rule and the value it got, in the same words whichever stage it is.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from remem.errors import InvalidInputError

__all__ = ["check_count", "check_field", "check_number", "check_requires", "field_value"]


def field_value(value: object, field: str) -> object:
    """The value of ``field`` in a stored value: the key itself when the value has it, else a
    dotted path into nested objects (``"source.thread_id"``, as memories keep their
    session); ``None`` when missing."""
    if not isinstance(value, Mapping):
        return None
    if field in value:
        return value[field]
    node: object = value
    for part in field.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


def check_requires(owner: str, value: object) -> None:
    """``value`` (a stage's ``requires``) must be ``None`` or a non-empty field name."""
    if value is not None and (not isinstance(value, str) or not value):
        raise InvalidInputError(
            f"{owner}.requires must be None or name a value field an item must carry "
            f"(e.g. 'source.thread_id'), got {value!r}"
        )


def check_field(owner: str, name: str, value: object, *, holding: str, example: str) -> None:
    """``value`` must be a non-empty string: the name of the value field holding ``holding``
    (``example``: a typical name, shown in the error)."""
    if not isinstance(value, str) or not value:
        raise InvalidInputError(
            f"{owner}.{name} must name a value field holding {holding} (e.g. {example!r}), "
            f"got {value!r}"
        )


def check_number(owner: str, name: str, value: object, *, high: float | None = None) -> None:
    """``value`` must be a finite number >= 0 (and <= ``high`` when given); not a bool."""
    if (isinstance(value, bool) or not isinstance(value, int | float)
            or not math.isfinite(value) or value < 0 or (high is not None and value > high)):
        bound = f" within [0, {high:g}]" if high is not None else " >= 0"
        raise InvalidInputError(f"{owner}.{name} must be a finite number{bound}, got {value!r}")


def check_count(owner: str, name: str, value: object, *, low: int = 1, meaning: str = "",
                optional: bool = False) -> None:
    """``value`` must be an int >= ``low`` (``None`` too when ``optional``); not a bool.
    ``meaning``: what the number counts, added to the error in brackets."""
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        alternative = " or None" if optional else ""
        note = f" ({meaning})" if meaning else ""
        raise InvalidInputError(
            f"{owner}.{name} must be an int >= {low}{alternative}{note}, got {value!r}"
        )
