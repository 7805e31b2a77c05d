"""Profiles patched by the model, and the JSON Patch implementation under them."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from remem.errors import StructuredOutputError
from remem.llm import ScriptedModel
from remem.memory import ProfileManager
from remem.memory.flow import run_sync
from remem.memory.jsonpatch import PatchError, apply_patch
from remem.memory.operations import history_flow
from tests.conftest import FakeClock
from tests.memory_support import make_store

ALICE = {"user_id": "alice"}


class UserProfile(BaseModel):
    """What we know about the user."""

    name: str | None = None
    city: str | None = None
    languages: list[str] = Field(default_factory=list)
    age: int | None = Field(default=None, ge=0)


def manager(model: ScriptedModel, clock: FakeClock) -> ProfileManager:
    return ProfileManager(make_store("sqlite"), model, UserProfile, clock=clock)


def test_patches_build_and_update_one_document(clock: FakeClock) -> None:
    model = ScriptedModel([
        {"patches": [{"op": "replace", "path": "/name", "value": "Alice"},
                     {"op": "replace", "path": "/city", "value": "Berlin"},
                     {"op": "add", "path": "/languages/-", "value": "German"}]},
        {"patches": [{"op": "replace", "path": "/city", "value": "Munich"},
                     {"op": "add", "path": "/languages/-", "value": "Chinese"}]},
    ])
    profiles = manager(model, clock)
    first = profiles.update("I'm Alice from Berlin, I speak German", ALICE)
    assert first.profile == {"name": "Alice", "city": "Berlin", "languages": ["German"],
                             "age": None}
    assert [c.op for c in first.changes] == ["add"] and first.usage.calls == 1
    clock.advance(5)
    second = profiles.update("I moved to Munich and I'm learning Chinese", ALICE)
    assert second.profile is not None and second.profile["city"] == "Munich"
    assert second.profile["languages"] == ["German", "Chinese"]
    assert profiles.get(ALICE) == second.profile
    # the model saw the current profile
    assert '"city": "Berlin"' in model.requests[1].messages[-1].text
    record = second.record
    assert record is not None and record.version == 2 and record.kind == "profile"
    events = run_sync(history_flow(record.id), profiles.store)
    assert [e.op for e in events] == ["add", "update"]
    assert events[1].before is not None and events[1].before["content"]["city"] == "Berlin"


def test_an_empty_patch_changes_nothing(clock: FakeClock) -> None:
    profiles = manager(ScriptedModel([{"patches": []}]), clock)
    result = profiles.update("hello", ALICE)
    assert result.profile is None and result.changes == () and profiles.get(ALICE) is None


def test_an_invalid_patch_goes_back_once_with_the_errors(clock: FakeClock) -> None:
    model = ScriptedModel([
        {"patches": [{"op": "replace", "path": "/age", "value": -3}]},
        {"patches": [{"op": "replace", "path": "/age", "value": 33}]},
    ])
    result = manager(model, clock).update("I'm 33", ALICE)
    assert result.profile is not None and result.profile["age"] == 33
    assert result.usage.calls == 2
    retry = model.requests[1].messages[-1].text
    assert "not a valid UserProfile" in retry and "age" in retry


def test_a_patch_that_does_not_apply_twice_is_a_typed_error(clock: FakeClock) -> None:
    bad = {"patches": [{"op": "remove", "path": "/pets/0"}]}
    profiles = manager(ScriptedModel([bad, bad]), clock)
    with pytest.raises(StructuredOutputError, match="pets") as info:
        profiles.update("I have no pets", ALICE)
    assert "remove" in info.value.raw
    assert profiles.get(ALICE) is None


def test_the_namespace_template_must_be_filled(clock: FakeClock) -> None:
    with pytest.raises(ValueError, match="needs user_id"):
        manager(ScriptedModel(), clock).update("hi", {"agent_id": "a1"})


def test_json_patch_operations() -> None:
    doc = {"a": {"b": [1, 2]}, "c": 1, "x/y": {"~t": 0}}
    out = apply_patch(doc, [
        {"op": "add", "path": "/a/b/-", "value": 3},
        {"op": "add", "path": "/a/b/0", "value": 0},
        {"op": "replace", "path": "/c", "value": 2},
        {"op": "move", "from": "/c", "path": "/d"},
        {"op": "copy", "from": "/d", "path": "/e"},
        {"op": "remove", "path": "/a/b/1"},
        {"op": "test", "path": "/x~1y/~0t", "value": 0},
    ])
    assert out == {"a": {"b": [0, 2, 3]}, "d": 2, "e": 2, "x/y": {"~t": 0}}
    assert doc == {"a": {"b": [1, 2]}, "c": 1, "x/y": {"~t": 0}}  # untouched


@pytest.mark.parametrize(("patch", "message"), [
    ([{"op": "replace", "path": "/missing", "value": 1}], "does not exist"),
    ([{"op": "remove", "path": "/a/5"}], "out of range"),
    ([{"op": "add", "path": "a", "value": 1}], "must start with '/'"),
    ([{"op": "test", "path": "/c", "value": 2}], "test failed"),
    ([{"op": "move", "from": "/a", "path": "/a/b"}], "into itself"),
    ([{"op": "frobnicate", "path": "/c"}], "unknown op"),
    ([{"op": "add", "path": "/c"}], "needs a value"),
])
def test_json_patch_errors_name_the_operation(patch: list[dict[str, Any]],
                                              message: str) -> None:
    with pytest.raises(PatchError, match=message):
        apply_patch({"a": [1], "c": 1}, patch)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                 max_size=3),
    max_leaves=10,
)


@given(st.dictionaries(st.text(max_size=4), json_values, max_size=5), st.text(max_size=4),
       json_values)
def test_add_then_remove_restores_any_document(doc: dict[str, Any], key: str,
                                               value: Any) -> None:
    pointer = "/" + key.replace("~", "~0").replace("/", "~1")
    before = copy.deepcopy(doc)
    added = apply_patch(doc, [{"op": "add", "path": pointer, "value": value}])
    assert added[key] == value and doc == before
    if key not in before:
        assert apply_patch(added, [{"op": "remove", "path": pointer}]) == before
    assert apply_patch(added, [{"op": "test", "path": pointer, "value": value}]) == added


def test_an_update_over_a_profile_that_does_not_parse_names_it_and_writes_nothing(
        clock: FakeClock) -> None:
    from remem.errors import BadRecordError
    from remem.memory.profiles import profile_id

    model = ScriptedModel([{"patches": [{"op": "replace", "path": "/name", "value": "Al"}]}])
    profiles = manager(model, clock)
    profiles.update("I'm Alice", ALICE)
    ns = profiles.template.fill(ALICE)
    key = profile_id(ns, "UserProfile")
    broken = {**profiles.store.get(ns, key).value, "valid_at": "yesterday"}
    profiles.store.put(ns, key, broken)  # a record gone bad under the family's API
    with pytest.raises(BadRecordError, match=r"profile .*remem doctor"):
        profiles.update("I moved to Rome", ALICE)
    assert profiles.store.get(ns, key).value == broken  # not written over
