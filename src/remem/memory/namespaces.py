"""Namespace templates: ``("memories", "{user_id}")`` filled from a call's config.

A label is either literal text or contains ``{name}`` placeholders; every placeholder must be
given a value when the template is filled, else :class:`~remem.errors.InvalidInputError`
names the missing placeholder and what was given.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from remem.errors import InvalidInputError, NamespaceError
from remem.memory.records import check_user_namespace
from remem.store.types import Namespace, validate_namespace

__all__ = ["NamespaceTemplate"]

_FORMATTER = string.Formatter()


@dataclass(frozen=True, slots=True)
class NamespaceTemplate:
    """A namespace whose labels may hold ``{placeholders}``."""

    labels: tuple[str, ...]

    def __post_init__(self) -> None:
        if isinstance(self.labels, str):
            raise NamespaceError(
                f"a namespace template must be a tuple of labels, got the string "
                f"{self.labels!r}; write ({self.labels!r},)"
            )
        labels = tuple(self.labels)
        for position, label in enumerate(labels):
            if not isinstance(label, str) or not label:
                raise NamespaceError(
                    f"namespace template label {position} must be a non-empty string, "
                    f"got {label!r}"
                )
            try:
                for _, name, spec, conversion in _FORMATTER.parse(label):
                    if name is not None and (not name.isidentifier() or spec or conversion):
                        raise NamespaceError(
                            f"namespace template label {label!r}: placeholder {{{name}}} must "
                            "be a plain name such as {user_id}"
                        )
            except ValueError as exc:
                raise NamespaceError(
                    f"namespace template label {label!r} is malformed ({exc}); write "
                    "placeholders as {name} and literal braces as {{ and }}"
                ) from None
        object.__setattr__(self, "labels", labels)

    @classmethod
    def of(cls, template: NamespaceTemplate | Sequence[str]) -> NamespaceTemplate:
        """``template`` as a :class:`NamespaceTemplate`."""
        if isinstance(template, NamespaceTemplate):
            return template
        return cls(tuple(template))

    @property
    def placeholders(self) -> tuple[str, ...]:
        """The placeholder names, in order of first appearance."""
        names: list[str] = []
        for label in self.labels:
            for _, name, _, _ in _FORMATTER.parse(label):
                if name and name not in names:
                    names.append(name)
        return tuple(names)

    def fill(self, config: Mapping[str, Any]) -> Namespace:
        """The namespace with every placeholder replaced by ``config[name]`` (as text)."""
        missing = [name for name in self.placeholders
                   if name not in config or config[name] is None or config[name] == ""]
        if missing:
            given = ", ".join(sorted(k for k, v in config.items() if v not in (None, "")))
            raise InvalidInputError(
                f"namespace template {self.labels!r} needs {', '.join(missing)}, which "
                f"{'was' if len(missing) == 1 else 'were'} not given (given: "
                f"{given or 'nothing'}); pass "
                + ", ".join(f"{name}=..." for name in missing)
            )
        values = {name: str(config[name]) for name in self.placeholders}
        namespace = tuple(label.format(**values) for label in self.labels)
        return check_user_namespace(validate_namespace(namespace))
