"""Pure pieces of memory formation: aliases, templates, hashing, query derivation."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from remem.errors import InvalidInputError, NamespaceError
from remem.memory import IdAliases, NamespaceTemplate
from remem.memory.chunks import chunk_text
from remem.memory.records import content_hash, normalize_text
from remem.memory.store_manager import derive_queries, input_hash
from remem.messages import Message


@given(st.lists(st.text(min_size=1), unique=True, max_size=20))
def test_aliases_round_trip_and_reject_everything_else(ids: list[str]) -> None:
    aliases = IdAliases(ids)
    for real in ids:
        alias = aliases.alias(real)
        assert aliases.resolve(alias) == real == aliases.resolve(str(alias))
        assert aliases.resolve(f" {alias} ") == real
    for invented in (len(ids), -1, "x", "1.0", True, None, 2.0, "mem_0"):
        assert aliases.resolve(invented) is None


@given(st.text())
def test_normalisation_is_idempotent_and_ignores_case_space_and_edge_punctuation(
        text: str) -> None:
    once = normalize_text(text)
    assert normalize_text(once) == once
    variant = f"  {text.upper()} ...!"
    assert content_hash("Fact", normalize_text(variant)) == content_hash("Fact", variant)


def test_hash_depends_on_schema_and_content_not_on_kind_or_formatting() -> None:
    assert content_hash("Fact", "Lives in Berlin.") == content_hash("Fact", "lives  in berlin")
    assert content_hash("Fact", "Lives in Berlin") != content_hash("Note", "Lives in Berlin")
    assert content_hash("P", {"a": "X ", "b": [1]}) == content_hash("P", {"b": [1], "a": "x"})


def test_queries_are_distinct_recent_user_and_assistant_texts() -> None:
    messages = [Message.system("be brief"), Message.user("I live in Berlin"),
                Message.assistant("Nice!"), Message.user("i live in berlin."),
                Message.user("  "), Message.user("I have a cat")]
    assert derive_queries(messages, 10) == ["Nice!", "i live in berlin.", "I have a cat"]
    assert derive_queries(messages, 2) == ["i live in berlin.", "I have a cat"]
    assert input_hash(messages[:2]) == input_hash([Message.user("I LIVE IN BERLIN")])


def test_namespace_templates() -> None:
    template = NamespaceTemplate(("org", "{org}", "user", "{user_id}"))
    assert template.placeholders == ("org", "user_id")
    assert template.fill({"org": "acme", "user_id": 7}) == ("org", "acme", "user", "7")
    with pytest.raises(InvalidInputError, match="needs org, user_id, which were not given"):
        template.fill({})
    with pytest.raises(InvalidInputError, match="needs user_id"):
        template.fill({"org": "acme", "user_id": ""})
    with pytest.raises(NamespaceError, match="plain name"):
        NamespaceTemplate(("{user_id!r}",))
    with pytest.raises(NamespaceError, match="malformed"):
        NamespaceTemplate(("{user_id",))
    with pytest.raises(NamespaceError, match="tuple of labels"):
        NamespaceTemplate("memories")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="reserves"):
        NamespaceTemplate(("_remem", "{user_id}")).fill({"user_id": "u"})


@given(st.text(max_size=3000), st.integers(1, 400))
def test_chunks_join_back_to_the_text_and_fit(text: str, size: int) -> None:
    chunks = chunk_text(text, size)
    assert "".join(chunks) == text
    assert all(0 < len(chunk) <= size for chunk in chunks) or chunks == [""]


@given(st.lists(st.sampled_from(["Short one.", "A somewhat longer sentence here!",
                                 "Is it a question?", "\u6211\u5f88\u597d\u3002",
                                 "Line without a stop\n"]), min_size=1, max_size=200))
def test_chunks_end_at_sentence_boundaries(sentences: list[str]) -> None:
    text = " ".join(sentences)
    chunks = chunk_text(text, 100)
    for chunk in chunks[:-1]:  # no sentence is longer than a chunk: none is cut
        assert chunk.rstrip(" ").endswith((".", "!", "?", "\u3002", "\n")), chunk
