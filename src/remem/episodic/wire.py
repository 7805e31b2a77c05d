"""The JSON shape of every episode result (pydantic models): each ``/v1/episodes`` route's
response model and each episode MCP tool's answer, made from the Python result with ``of`` and
giving it back with ``value`` (what ``client.episodes`` returns)."""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict

from remem.episodic.episodes import Extracted
from remem.episodic.examples import Selection
from remem.episodic.schema import Episode
from remem.llm.base import Usage
from remem.wire_models import Envelope, Wire

__all__ = ["ChatMessageOut", "EpisodeOut", "EpisodesOut", "ExtractedOut", "SelectionOut"]


class EpisodeOut(Wire[Episode]):
    """One episode (``created_at``: epoch seconds)."""

    id: str
    situation: str
    thought: str
    action: str
    result: str
    thread_id: str | None
    created_at: float
    metadata: dict[str, Any]

    @classmethod
    def of(cls, result: Episode) -> Self:
        """The model of ``result``."""
        return cls(**result.model_dump(mode="json"))

    def value(self) -> Episode:
        """The episode."""
        return Episode.model_validate(self.model_dump())


class EpisodesOut(Envelope[list[Episode]]):
    """Episodes, newest first."""

    episodes: list[EpisodeOut]


class ChatMessageOut(BaseModel):
    """A few-shot message."""

    model_config = ConfigDict(extra="allow")

    role: str


class SelectionOut(BaseModel):
    """The examples chosen, the tokens their messages take, what was passed over, and the
    examples as few-shot messages."""

    examples: list[EpisodeOut]
    tokens: int
    duplicates: int
    over_budget: int
    messages: list[ChatMessageOut]

    @classmethod
    def of(cls, result: Selection) -> SelectionOut:
        """The model of ``result`` (its messages rendered here: the wire carries them)."""
        return cls(examples=[EpisodeOut.of(e) for e in result.examples], tokens=result.tokens,
                   duplicates=result.duplicates, over_budget=result.over_budget,
                   messages=[ChatMessageOut(**m.to_dict()) for m in result.messages()])

    def value(self) -> Selection:
        """The selection (its messages are rendered again from the examples)."""
        return Selection(tuple(e.value() for e in self.examples), self.tokens,
                         self.duplicates, self.over_budget)


class ExtractedOut(BaseModel):
    """The episodes an extraction stored and what its call cost."""

    episodes: list[EpisodeOut]
    calls: int
    input_tokens: int
    output_tokens: int

    @classmethod
    def of(cls, result: Extracted) -> ExtractedOut:
        """The model of ``result``."""
        return cls(episodes=[EpisodeOut.of(e) for e in result.episodes],
                   calls=result.usage.calls, input_tokens=result.usage.input_tokens,
                   output_tokens=result.usage.output_tokens)

    def value(self) -> Extracted:
        """The extraction."""
        return Extracted(episodes=tuple(e.value() for e in self.episodes),
                         usage=Usage(self.calls, self.input_tokens, self.output_tokens))
