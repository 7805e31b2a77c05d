"""Trajectories: a conversation an agent had under a prompt, with optional feedback on it.

Feedback comes as a score (a number), a dict (``{"score": 0.2, "comment": "too long"}`` or any
other keys) or text; :class:`Feedback` keeps all three shapes and :meth:`Feedback.of` reads
any of them. :func:`format_trajectories` shows trajectories to the optimizing model, numbered
from 1, and :meth:`Trajectory.reference` is what a prompt version records about its sources.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from remem.errors import InvalidInputError
from remem.messages.types import Message

__all__ = ["Feedback", "Trajectory", "as_trajectories", "format_trajectories"]


_EXCERPT_CHARS = 300
#: a conversation longer than this is shown to the optimizing model with its middle elided
MAX_CONVERSATION_CHARS = 6_000


@dataclass(frozen=True, slots=True)
class Feedback:
    """What someone thought of a trajectory: a ``score``, a ``comment``, and any other
    ``details`` (kept as given)."""

    score: float | None = None
    comment: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    @staticmethod
    def of(value: Any, *, where: str = "feedback") -> Feedback | None:
        """Read feedback given as a number, text, a dict or a :class:`Feedback`."""
        if value is None or isinstance(value, Feedback):
            return value
        if isinstance(value, bool):
            raise InvalidInputError(
                f"{where} is a bool; give a score (number), a comment (text) or a dict")
        if isinstance(value, int | float):
            return Feedback(score=_score(value, where))
        if isinstance(value, str):
            if not value.strip():
                return None
            return Feedback(comment=value.strip())
        if isinstance(value, Mapping):
            details = {str(k): v for k, v in value.items()}
            score = details.pop("score", None)
            comment = details.pop("comment", None)
            if comment is not None and not isinstance(comment, str):
                raise InvalidInputError(f"{where}['comment'] must be text, got "
                                        f"{type(comment).__name__}")
            try:
                json.dumps(details)
            except (TypeError, ValueError) as exc:
                raise InvalidInputError(
                    f"{where} must hold JSON values only ({exc}); convert them first") from None
            return Feedback(score=None if score is None else _score(score, f"{where}['score']"),
                            comment=comment, details=details)
        raise InvalidInputError(
            f"{where} is a {type(value).__name__}; give a score (number), a comment (text), a "
            "dict such as {'score': 0.5, 'comment': '...'} or a Feedback")

    @property
    def empty(self) -> bool:
        """Whether it says nothing."""
        return self.score is None and not self.comment and not self.details

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (only the parts present)."""
        out: dict[str, Any] = dict(self.details)
        if self.score is not None:
            out["score"] = self.score
        if self.comment:
            out["comment"] = self.comment
        return out


def _score(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInputError(f"{where} must be a finite number, got {value!r}")
    return float(value)


@dataclass(frozen=True, slots=True)
class Trajectory:
    """A conversation (``messages``) with optional ``feedback`` and an ``id`` to cite it by
    (a thread id, say)."""

    messages: tuple[Message, ...]
    feedback: Feedback | None = None
    id: str | None = None

    def __post_init__(self) -> None:
        # built directly, it still takes any feedback shape and a list of messages
        object.__setattr__(self, "messages", _messages(self.messages, "Trajectory.messages"))
        object.__setattr__(self, "feedback", Feedback.of(self.feedback,
                                                         where="Trajectory.feedback"))
        if self.id is not None and not isinstance(self.id, str):
            raise InvalidInputError(f"Trajectory.id must be text, got {self.id!r}")

    @staticmethod
    def of(value: Any, *, where: str = "trajectory") -> Trajectory:
        """Read a :class:`Trajectory`, a ``(messages, feedback)`` pair, or a dict with
        ``messages`` (and ``feedback``, ``id``)."""
        if isinstance(value, Trajectory):
            return value
        if isinstance(value, tuple) and len(value) == 2:
            messages, feedback = value
            return Trajectory(_messages(messages, f"{where}[0]"),
                              Feedback.of(feedback, where=f"{where}[1]"))
        if isinstance(value, Mapping):
            unknown = set(value) - {"messages", "feedback", "id"}
            if unknown:
                raise InvalidInputError(
                    f"{where} has unknown keys {sorted(unknown)}; a trajectory takes "
                    "messages, feedback and id")
            ident = value.get("id")
            if ident is not None and not isinstance(ident, str):
                raise InvalidInputError(f"{where}['id'] must be text, got {ident!r}")
            return Trajectory(_messages(value.get("messages"), f"{where}['messages']"),
                              Feedback.of(value.get("feedback"), where=f"{where}['feedback']"),
                              ident)
        raise InvalidInputError(
            f"{where} is a {type(value).__name__}; give a Trajectory, a (messages, feedback) "
            "pair or a dict with 'messages'")

    @property
    def has_feedback(self) -> bool:
        """Whether it carries feedback that says something."""
        return self.feedback is not None and not self.feedback.empty

    def conversation(self) -> str:
        """The messages as ``role: text`` lines (system messages included: they show the
        prompt the agent ran under)."""
        return "\n".join(f"{m.role}: {m.text.strip()}" for m in self.messages if m.text.strip())

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict that :meth:`of` reads back (a background job's payload)."""
        return {"messages": [m.to_dict() for m in self.messages],
                "feedback": self.feedback.to_dict() if self.feedback else None, "id": self.id}

    def reference(self) -> dict[str, Any]:
        """What a prompt version records about this source: id, feedback, a short excerpt."""
        text = self.conversation()
        excerpt = text[:_EXCERPT_CHARS] + ("…" if len(text) > _EXCERPT_CHARS else "")
        return {"id": self.id, "feedback": self.feedback.to_dict() if self.feedback else None,
                "messages": len(self.messages), "excerpt": excerpt}


def _messages(value: Any, where: str) -> tuple[Message, ...]:
    if isinstance(value, str):
        return (Message.user(value),)
    if not isinstance(value, Sequence) or not value:
        raise InvalidInputError(f"{where} must be a non-empty list of messages")
    out = []
    for position, message in enumerate(value):
        if isinstance(message, Message):
            out.append(message)
        elif isinstance(message, Mapping):
            try:
                out.append(Message.model_validate(dict(message)))
            except ValueError as exc:
                raise InvalidInputError(f"{where}[{position}] is not a message: {exc}") from None
        else:
            raise InvalidInputError(
                f"{where}[{position}] is a {type(message).__name__}; give remem Message values "
                "or dicts with role and content")
    return tuple(out)


def as_trajectories(values: Sequence[Any]) -> tuple[Trajectory, ...]:
    """Read each of ``values`` with :meth:`Trajectory.of`."""
    if isinstance(values, str | bytes) or not isinstance(values, Sequence):
        raise InvalidInputError("trajectories must be a list of trajectories")
    return tuple(Trajectory.of(value, where=f"trajectories[{i}]")
                 for i, value in enumerate(values))


def format_trajectories(trajectories: Sequence[Trajectory]) -> str:
    """The trajectories as the optimizing model reads them, numbered from 1."""
    blocks = []
    for number, trajectory in enumerate(trajectories, 1):
        feedback = (json.dumps(trajectory.feedback.to_dict(), ensure_ascii=False)
                    if trajectory.has_feedback and trajectory.feedback else "(none)")
        text = trajectory.conversation() or "(empty)"
        if len(text) > MAX_CONVERSATION_CHARS:
            # the start says what was asked, the end how it went; the model needs both
            half = MAX_CONVERSATION_CHARS // 2
            text = (f"{text[:half]}\n[... {len(text) - 2 * half} characters left out ...]\n"
                    f"{text[-half:]}")
        blocks.append(f"<trajectory {number}>\n{text}\n"
                      f"Feedback: {feedback}\n</trajectory {number}>")
    return "\n\n".join(blocks) or "(no trajectories)"
