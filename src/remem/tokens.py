"""Token counting that works offline, pluggable.

:class:`TokenCounter` is the seam: trimming, summaries, context assembly and usage estimates
all count through one. The default, :class:`EstimateCounter`, needs no tokenizer files (tiktoken
downloads its tables at run time, so it cannot be the default): it estimates from characters,
counting CJK characters one token each and other text by a chars-per-token ratio.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from remem.messages.types import ImagePart, Message

__all__ = ["DEFAULT_COUNTER", "EstimateCounter", "TokenCounter", "count_messages"]

#: tokens a chat format adds around every message (role markers, separators)
MESSAGE_OVERHEAD = 4
#: what one image costs in the prompt, roughly (providers bill images by size)
IMAGE_TOKENS = 256


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens of a text for some model's tokenizer."""

    @property
    def name(self) -> str:
        """Which tokenizer or estimate this is (shown in docs and usage records)."""
        ...

    def count(self, text: str) -> int:
        """Tokens in ``text``."""
        ...


def _is_cjk(char: str) -> bool:
    code = ord(char)
    return (0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF or 0x3040 <= code <= 0x30FF
            or 0xAC00 <= code <= 0xD7AF or 0xF900 <= code <= 0xFAFF or 0x20000 <= code <= 0x2FA1F)


class EstimateCounter:
    """Offline estimate: one token per CJK character, ``chars_per_token`` for the rest."""

    def __init__(self, chars_per_token: float = 4.0) -> None:
        if not chars_per_token > 0:
            raise ValueError(f"chars_per_token must be positive, got {chars_per_token!r}")
        self.chars_per_token = chars_per_token

    @property
    def name(self) -> str:
        """``estimate-<ratio>``."""
        return f"estimate-{self.chars_per_token:g}"

    def count(self, text: str) -> int:
        """Estimated tokens in ``text`` (0 for the empty string)."""
        if not text:
            return 0
        cjk = sum(1 for char in text if _is_cjk(char))
        other = len(text) - cjk
        return cjk + math.ceil(other / self.chars_per_token)


DEFAULT_COUNTER: TokenCounter = EstimateCounter()


def count_messages(messages: Iterable[Message], counter: TokenCounter = DEFAULT_COUNTER) -> int:
    """Tokens a list of messages takes in a prompt: content, tool calls and per-message overhead."""
    total = 0
    for message in messages:
        total += MESSAGE_OVERHEAD
        for part in message.content:
            total += IMAGE_TOKENS if isinstance(part, ImagePart) else counter.count(part.text)
        for call in message.tool_calls:
            total += counter.count(call.name) + counter.count(
                json.dumps(call.arguments, ensure_ascii=False))
    return total
