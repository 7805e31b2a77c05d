"""The episode schema: situation, thought, action, result, and where it came from."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from remem.errors import InvalidInputError
from remem.messages.types import new_id
from remem.store.values import nul_problem

__all__ = ["Episode", "EpisodeDraft"]

_TEXT = 20_000


class EpisodeDraft(BaseModel):
    """An episode as the model writes it (the fields an extraction call fills in)."""

    model_config = ConfigDict(extra="ignore")

    situation: str = Field(min_length=1, max_length=_TEXT, description=(
        "The task or situation the agent faced, self-contained (no 'as above')."))
    thought: str = Field(default="", max_length=_TEXT, description=(
        "The reasoning that led to the action, briefly."))
    action: str = Field(min_length=1, max_length=_TEXT, description="What the agent did.")
    result: str = Field(default="", max_length=_TEXT, description=(
        "What came of it: the outcome and any feedback."))


class Episode(EpisodeDraft):
    """A stored episode: a draft plus its ``id``, the ``thread_id`` it came from, when it was
    recorded, and free ``metadata``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(default_factory=lambda: new_id("ep"))
    thread_id: str | None = None
    created_at: float = Field(default_factory=time.time)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("situation", "thought", "action", "result", "metadata", mode="after")
    @classmethod
    def _no_nul(cls, value: Any, info: ValidationInfo) -> Any:
        """No stored string holds NUL (the rule of every request and store value), so an
        episode is valid here exactly when its request is."""
        problem = nul_problem(value, info.field_name or "value")
        if problem is not None:
            raise ValueError(problem)
        return value

    @staticmethod
    def of(value: Any, *, where: str = "episode") -> Episode:
        """Read an :class:`Episode`, a draft, or a dict of its fields; errors name the field."""
        if isinstance(value, Episode):
            return value
        if isinstance(value, EpisodeDraft):
            value = value.model_dump()
        if not isinstance(value, Mapping):
            raise InvalidInputError(f"{where} must be an Episode or a dict with situation and "
                                    f"action, got {type(value).__name__}")
        try:
            return Episode.model_validate(dict(value))
        except ValidationError as exc:
            problems = "; ".join(
                f"{where}.{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}"
                for e in exc.errors(include_url=False))
            raise InvalidInputError(f"{problems} (an episode needs non-empty situation and "
                                    "action; thought and result are optional)") from None
