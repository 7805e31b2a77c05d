"""Embedders: turn text into vectors. One protocol, several implementations."""

from remem.embed.base import Embedder, normalize_rows
from remem.embed.fake import FakeEmbedder
from remem.embed.openai import OpenAIEmbedder

__all__ = ["Embedder", "FakeEmbedder", "OpenAIEmbedder", "normalize_rows"]
