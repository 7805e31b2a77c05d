"""Embedders: turn text into vectors. One protocol, several implementations.

:class:`OpenAIEmbedder` is imported on first use (PEP 562): it needs ``httpx``, which costs
a command that never calls an embedding API its start-up time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from remem.embed.base import Embedder, normalize_rows
from remem.embed.fake import FakeEmbedder

if TYPE_CHECKING:
    from remem.embed.openai import OpenAIEmbedder

__all__ = ["Embedder", "FakeEmbedder", "OpenAIEmbedder", "normalize_rows"]


def __getattr__(name: str) -> Any:
    """``OpenAIEmbedder``, imported when first read."""
    if name == "OpenAIEmbedder":
        from remem.embed.openai import OpenAIEmbedder

        return OpenAIEmbedder
    raise AttributeError(f"module 'remem.embed' has no attribute {name!r}")
