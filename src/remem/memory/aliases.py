"""Small integer aliases for memory ids inside prompts.

Models copy ``3`` far more reliably than ``mem_0192f3a8c1d2e4b5a6``; the manager shows the
model aliases and maps its answer back. An alias the model invents is rejected, never guessed.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["IdAliases"]


class IdAliases:
    """A two-way map between real ids and the aliases ``0, 1, 2...`` (in the given order)."""

    def __init__(self, ids: Iterable[str]) -> None:
        self._ids: list[str] = list(dict.fromkeys(ids))
        self._alias = {real: index for index, real in enumerate(self._ids)}

    def __len__(self) -> int:
        return len(self._ids)

    def alias(self, real_id: str) -> int:
        """The alias of ``real_id`` (``KeyError`` if it was not registered)."""
        return self._alias[real_id]

    def resolve(self, alias: object) -> str | None:
        """The real id of an alias the model wrote (``3`` or ``"3"``), or ``None`` when the
        model invented it."""
        if isinstance(alias, bool):
            return None
        if isinstance(alias, str):
            text = alias.strip()
            if not text.isdigit():
                return None
            alias = int(text)
        if isinstance(alias, int) and 0 <= alias < len(self._ids):
            return self._ids[alias]
        return None

    def describe(self) -> str:
        """The valid aliases, for error messages sent back to the model."""
        if not self._ids:
            return "there are no existing memories, so updates and deletes are impossible"
        return f"valid ids are 0 to {len(self._ids) - 1}"
