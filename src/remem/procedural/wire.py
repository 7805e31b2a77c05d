"""The JSON shape of every prompt result (pydantic models): each ``/v1/prompts`` route's
response model and each prompt MCP tool's answer, made from the Python result with ``of`` and
giving it back with ``value`` (what ``client.prompts`` returns). An optimization's
:class:`OptimizeResult` is both."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from remem.procedural.optimizer import Optimization
from remem.procedural.prompts import PromptVersion
from remem.wire_models import Dumped, Envelope

__all__ = ["DiffOut", "OptimizeResult", "PromptVersionOut", "PromptsOut", "VersionsOut"]


class PromptVersionOut(Dumped[PromptVersion]):
    """One version of a prompt (``created_at``: epoch seconds)."""

    name: str
    version: int
    text: str
    variables: list[str]
    author: str
    reason: str
    created_at: float
    kind: str
    trajectories: list[dict[str, Any]]
    rolled_back_to: int | None
    change_id: str | None

    def value(self) -> PromptVersion:
        """The version."""
        return PromptVersion.from_dict(self.model_dump())


class PromptsOut(Envelope[list[PromptVersion]]):
    """The latest version of every prompt, by name."""

    prompts: list[PromptVersionOut]


class VersionsOut(Envelope[list[PromptVersion]]):
    """Every version of a prompt, oldest first."""

    versions: list[PromptVersionOut]


class DiffOut(Envelope[str]):
    """A unified diff (empty when the texts are equal)."""

    diff: str


class OptimizeResult(BaseModel):
    """An optimization's outcome as every surface reports it (:class:`Optimization` without
    the trajectories): the candidate ``text`` and its ``diff``, the model's ``reasoning``,
    the calls and tokens, why it was ``skipped`` (too little feedback), and the
    ``committed_version`` when it was stored."""

    model_config = ConfigDict(frozen=True)

    name: str | None
    strategy: str
    base_version: int | None
    changed: bool
    text: str
    diff: str
    reasoning: str
    calls: int
    input_tokens: int
    output_tokens: int
    steps: int
    skipped: str | None
    committed_version: int | None

    @classmethod
    def of(cls, result: Optimization | OptimizeResult) -> OptimizeResult:
        """The result of an optimization (the Python result is its own wire model)."""
        return result if isinstance(result, OptimizeResult) else cls.from_dict(result.to_dict())

    def value(self) -> OptimizeResult:
        """The result itself."""
        return self

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return self.model_dump(mode="json")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OptimizeResult:
        """Read what :meth:`to_dict` wrote."""
        return cls(**{name: data[name] for name in cls.model_fields})
