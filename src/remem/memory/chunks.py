"""Long memories, embedded in pieces: sentence-boundary chunks of a record's text.

An embedding model reads a few hundred tokens and one vector cannot stand for 20,000
characters, so a memory whose text is longer than :data:`CHUNK_CHARS` keeps, beside its
``text``, the same text cut into chunks (``text_chunks``, an object ``{"0": ..., "1": ...}``
in the store value) and its put names each chunk as an index field
(:func:`chunk_index_fields`). The store then holds one vector per chunk, and a search scores
the record by its best chunk; the record stays one memory (one id, one history), and the
keyword index still reads the whole ``text``.

Chunks end at sentence boundaries (``.``, ``!``, ``?`` followed by a space, a line break, or
the CJK full stop, exclamation and question marks and semicolon) and hold whole sentences,
up to :data:`CHUNK_CHARS` characters; a sentence longer than that is cut at the last space
before the limit (anywhere, for text without spaces). Joined, the chunks are the text again.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["CHUNKS_FIELD", "CHUNK_CHARS", "chunk_index_fields", "chunk_text"]

#: a text longer than this is embedded in chunks of at most this many characters
CHUNK_CHARS: Final = 1000
#: the store value's field holding the chunks
CHUNKS_FIELD: Final = "text_chunks"

# a sentence ends after terminal punctuation (and any closing quotes or brackets) followed
# by white space, after CJK terminal punctuation, or at a line break
_SENTENCE_END = re.compile("(?<=[.!?])[\"')\\]]*\\s+"
                           "|(?<=[\u3002\uff01\uff1f\uff1b])[\u300d\u300f\uff09]*\\s*|\n+")


def _sentences(text: str) -> list[str]:
    pieces: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        if match.end() > start:
            pieces.append(text[start:match.end()])
            start = match.end()
    if start < len(text):
        pieces.append(text[start:])
    return pieces


def _cut(sentence: str, size: int) -> list[str]:
    """A sentence longer than ``size`` in pieces, at a space when one is in the last fifth."""
    out: list[str] = []
    while len(sentence) > size:
        cut = sentence.rfind(" ", size - size // 5, size)
        cut = cut + 1 if cut > 0 else size
        out.append(sentence[:cut])
        sentence = sentence[cut:]
    return [*out, sentence] if sentence else out


def chunk_text(text: str, size: int = CHUNK_CHARS) -> list[str]:
    """``text`` in chunks of whole sentences, at most ``size`` characters each (one chunk,
    the text itself, when it fits). ``"".join(chunk_text(t)) == t``."""
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")
    if len(text) <= size:
        return [text]
    chunks: list[str] = []
    current = ""
    for sentence in _sentences(text):
        for piece in _cut(sentence, size):
            if current and len(current) + len(piece) > size:
                chunks.append(current)
                current = ""
            current += piece
    if current:
        chunks.append(current)
    return chunks


def chunk_index_fields(value: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The index fields of a memory value with chunks (one per chunk), or ``None`` (the
    store's own fields) for one without."""
    chunks = value.get(CHUNKS_FIELD)
    if not isinstance(chunks, Mapping) or not chunks:
        return None
    return tuple(f"{CHUNKS_FIELD}.{key}" for key in chunks)
