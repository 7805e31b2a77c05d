"""The request values accept exactly what the layers under them accept: a prompt name, a
template variable name or an episode that one refuses the other refuses too, so every surface
fails the same way, early, with the field named (hypothesis over random strings)."""

from __future__ import annotations

import string

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from remem.episodic import Episode
from remem.episodic.requests import AddEpisodeRequest
from remem.errors import InvalidInputError
from remem.procedural.prompts import _check_declared, _check_name
from remem.procedural.requests import CreatePromptRequest, GetPromptRequest

NAME_CHARS = string.ascii_letters + string.digits + "_.:- !/\n\t{}é"
names = st.one_of(st.text(NAME_CHARS, max_size=140), st.text(max_size=10))


def _accepts(check: object, *args: object) -> bool:
    try:
        check(*args)  # type: ignore[operator]
    except InvalidInputError:
        return False
    return True


@settings(max_examples=400, deadline=None)
@given(names)
def test_a_prompt_name_is_valid_for_the_request_iff_for_the_registry(name: str) -> None:
    registry = _accepts(_check_name, name)
    request = _accepts(lambda n: GetPromptRequest.of(name=n), name)
    assert request == registry, name
    if not request:
        with pytest.raises(InvalidInputError, match="name"):
            GetPromptRequest.of(name=name)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(NAME_CHARS, max_size=12), max_size=4))
def test_declared_variables_are_valid_for_the_request_iff_for_the_registry(
        declared: list[str]) -> None:
    registry = _accepts(_check_declared, declared)
    request = _accepts(lambda v: CreatePromptRequest.of(name="p", text="t", variables=v),
                       declared)
    assert request == registry, declared


texts = st.one_of(st.sampled_from(["", " ", "a" * 20_000, "a" * 20_001]), st.text(max_size=30))


@settings(max_examples=150, deadline=None)
@given(texts, texts, texts)
@example(" ", "\x00", "")  # NUL: refused by the request and the stored form alike
def test_an_episode_is_valid_for_the_request_iff_for_the_store(situation: str, action: str,
                                                                thought: str) -> None:
    fields = {"situation": situation, "action": action, "thought": thought}
    store = _accepts(Episode.of, fields)
    request = _accepts(lambda f: AddEpisodeRequest.of(**f), fields)
    assert request == store, {k: v[:20] for k, v in fields.items()}
