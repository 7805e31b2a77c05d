"""Embedders: turn text into vectors. One protocol, several implementations."""

from remem.embed.base import Embedder, normalize_rows
from remem.embed.fake import FakeEmbedder

__all__ = ["Embedder", "FakeEmbedder", "normalize_rows"]
