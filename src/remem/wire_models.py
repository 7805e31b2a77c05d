"""The bases of the families' result models, so each model states only what differs.

An operation row's result model (:attr:`remem.operations.Operation.result`) reads the Python
result with ``of(result)`` and gives it back with ``value()``. Most pairs have one of a few
shapes, each a base here:

- :class:`Wire`: the root; a model that subclasses it directly writes both methods itself.
- :class:`Dumped`: the value's own dict (``to_dict()``) is the JSON. ``of`` validates that
  dict; ``value()`` calls the value's class (the base's type argument, a dataclass) with the
  fields its constructor takes, a nested result model (or a list of them) giving its value
  back. A model whose value is built otherwise overrides ``value()`` only.
- :class:`Envelope`: the answer is one named field (``{"hits": [...]}``, ``{"count": 3}``).
  When the field is a list of result models, ``of`` reads each item with the item model's
  ``of`` and ``value()`` gives each item's value; otherwise the field is the result itself.
- :class:`Rows`: the answer is a bare JSON array of one result model.
- :class:`Answer` (:func:`answer_model`): the Python result is a type pydantic reads and
  writes itself (a pydantic dataclass), carried as is.

The bases add no field, and a model keeps its own name and fields, so its OpenAPI component
is what it would be without the base. This module imports nothing of remem: every family may
use it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any, Generic, Protocol, Self, TypeVar, cast, get_args, get_origin

from pydantic import BaseModel, ConfigDict, RootModel

__all__ = ["Answer", "Dumped", "Envelope", "Rows", "Wire", "answer_model"]

T = TypeVar("T")


class Wire(BaseModel, Generic[T]):
    """A result's JSON shape: :meth:`of` from the Python result ``T``, :meth:`value` back."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    @classmethod
    def of(cls, result: T) -> Self:
        """The model of ``result``."""
        raise NotImplementedError

    def value(self) -> T:
        """The Python result this JSON describes."""
        raise NotImplementedError


def _items_model(annotation: Any) -> type[Wire[Any]] | None:
    """The result model of ``list[Model]`` (``None``: not a list of result models)."""
    (item, *_) = get_args(annotation) or (None,)
    if get_origin(annotation) is list and isinstance(item, type) and issubclass(item, Wire):
        return item
    return None


def _back(field: Any) -> Any:
    """A field as the Python value holds it: a result model's value, a list of them as theirs."""
    if isinstance(field, Wire):
        return field.value()
    if isinstance(field, list) and field and isinstance(field[0], Wire):
        return [item.value() for item in field]
    return field


class _HasDict(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


D = TypeVar("D", bound=_HasDict)


class Dumped(Wire[D]):
    """The JSON of a dataclass ``D`` is its ``to_dict()``; ``value()`` is ``D(**fields)``."""

    @classmethod
    def of(cls, result: D) -> Self:
        """The model of ``result``: its ``to_dict()``."""
        return cls.model_validate(result.to_dict())

    def value(self) -> D:
        """The value, built from the fields its constructor takes."""
        target = next(base.__pydantic_generic_metadata__["args"][0]
                      for base in type(self).__mro__
                      if issubclass(base, BaseModel)
                      and base.__pydantic_generic_metadata__.get("origin") is Dumped)
        taken = (f.name for f in dataclasses.fields(target) if f.init)
        return cast(D, target(**{name: _back(getattr(self, name)) for name in taken}))


class Envelope(Wire[T]):
    """An answer under the one field that names it; ``T`` is the Python result."""

    @classmethod
    def _slot(cls) -> tuple[str, type[Wire[Any]] | None]:
        ((name, info),) = cls.model_fields.items()
        return name, _items_model(info.annotation)

    @classmethod
    def of(cls, result: T) -> Self:
        """The envelope of ``result`` (each item read with its model, if the field's are)."""
        name, item = cls._slot()
        held = result if item is None else [item.of(x) for x in cast(Iterable[Any], result)]
        return cls(**{name: held})

    def value(self) -> T:
        """What the field holds (each item's value, if the items are result models)."""
        name, item = self._slot()
        held = getattr(self, name)
        return cast(T, held if item is None else [x.value() for x in held])


W = TypeVar("W", bound=Wire[Any])


class Rows(RootModel[list[W]], Generic[W]):
    """A bare JSON array of result models ``W``."""

    @classmethod
    def of(cls, result: Iterable[Any]) -> Self:
        """The array of ``result``, each item read with ``W``'s ``of``."""
        item = _items_model(cls.model_fields["root"].annotation)
        assert item is not None, f"{cls.__name__} is not an array of result models"
        return cls([cast(W, item.of(x)) for x in result])

    def value(self) -> list[Any]:
        """Each item's value, in order."""
        return [x.value() for x in self.root]


class Answer(RootModel[T], Generic[T]):
    """An answer that is a Python value itself: :meth:`of` carries it, :meth:`value` gives it
    back, and its JSON schema is the value's (no wrapper layer in the OpenAPI schema)."""

    @classmethod
    def of(cls, result: T) -> Self:
        """The answer carrying ``result``."""
        return cls(result)

    def value(self) -> T:
        """The value carried."""
        return self.root

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> Any:
        return handler(core_schema["schema"])  # the root's schema, not a $ref to it


def answer_model(kind: type[T], module: str) -> type[Answer[T]]:
    """The :class:`Answer` of ``kind``, named as ``kind`` is (so is its OpenAPI component),
    declared in ``module``."""
    return cast(type[Answer[T]], type(kind.__name__, (Answer[kind],),  # type: ignore[valid-type]
                                      {"__doc__": kind.__doc__, "__module__": module}))
