"""Namespace policy: which namespace a scope selects, which ones are reserved, and templates.

* :func:`scope_namespace`: ``user_id`` and ``agent_id`` select ``("memories", "user",
  <user_id>, "agent", <agent_id>)`` (each part only when given); ``thread_id`` is the scope
  only when neither of the others is given.
* :func:`check_user_namespace`: namespaces under ``"_remem"`` hold remem's bookkeeping and
  are refused as memory namespaces.
* :class:`NamespaceTemplate`: ``("memories", "{user_id}")`` filled from a call's config. A
  label is either literal text or contains ``{name}`` placeholders; every placeholder must be
  given a value when the template is filled, else :class:`~remem.errors.InvalidInputError`
  names the missing placeholder and what was given.
* :func:`resolve_scope`: all of the above for one call (what ``Memory`` writes to, searches
  under, lists and deletes).
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from remem.errors import InvalidInputError, NamespaceError
from remem.memory.records import RESERVED_LABEL
from remem.store.reserved import MEMORIES
from remem.store.types import Namespace, validate_namespace

__all__ = ["NamespaceTemplate", "check_user_namespace", "resolve_scope", "scope_namespace"]

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


def check_user_namespace(namespace: Namespace) -> Namespace:
    """Refuse namespaces under the reserved label (they hold remem's bookkeeping)."""
    if namespace and namespace[0] == RESERVED_LABEL:
        raise InvalidInputError(
            f"namespace {namespace!r} starts with {RESERVED_LABEL!r}, which remem reserves for "
            "its ids, history and locks; use another first label"
        )
    return namespace


def scope_namespace(user_id: str | None = None, agent_id: str | None = None,
                    thread_id: str | None = None) -> Namespace:
    """The default namespace of a scope (see the module docstring)."""
    labels: list[str] = [MEMORIES]
    for name, value in (("user", user_id), ("agent", agent_id)):
        if value is not None:
            labels += [name, _label(name, value)]
    if len(labels) == 1 and thread_id is not None:
        labels += ["thread", _label("thread", thread_id)]
    if len(labels) == 1:
        raise InvalidInputError(
            "no scope given: pass user_id=, agent_id=, thread_id= or namespace= so the "
            "memory knows whose it is"
        )
    return tuple(labels)


def _label(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidInputError(f"{name}_id must be a non-empty string, got {value!r}")
    return value


def resolve_scope(template: NamespaceTemplate | None, *, user_id: str | None = None,
                  agent_id: str | None = None, thread_id: str | None = None,
                  namespace: Sequence[str] | None = None,
                  unscoped: Namespace | None = None) -> Namespace:
    """The namespace a call's scope selects: ``namespace`` as given (checked), else the
    ``template`` filled from the ids, else :func:`scope_namespace`.

    ``unscoped``: what a call without any scope gets (a search: every memory); ``None``
    makes a missing scope an error.
    """
    if namespace is not None:
        return check_user_namespace(validate_namespace(namespace))
    if unscoped is not None and user_id is None and agent_id is None and thread_id is None:
        return unscoped
    if template is not None:
        return template.fill({"user_id": user_id, "agent_id": agent_id,
                              "thread_id": thread_id})
    return scope_namespace(user_id, agent_id, thread_id)
