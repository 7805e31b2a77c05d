"""The validating copy every put makes of its value (``remem.store.types``): one walk checks
the rules (a dict at the top, JSON types, signed 64-bit integers, finite floats, valid
Unicode, at most ``MAX_VALUE_DEPTH`` levels) and copies, then the text is encoded from the
copy. It must accept and produce exactly what the JSON round trip it replaced did, refuse
what that refused with an :class:`InvalidValueError` naming the path, and never share a
container with the caller."""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from enum import Enum, IntEnum
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remem.errors import InvalidValueError, NamespaceError
from remem.store import PutOp, SQLiteStore
from remem.store.types import MAX_VALUE_DEPTH, validate_value

INT64 = 2**63
HINT = "use only dict, list, str, int, float, bool and None"

# valid Unicode without NUL, which no stored string may hold (its refusal is tested below)
_text = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"),
                max_size=12)
_leaf = (st.none() | st.booleans() | st.integers(-INT64, INT64 - 1)
         | st.floats(allow_nan=False, allow_infinity=False) | _text)
_json = st.recursive(
    _leaf,
    lambda children: (st.lists(children, max_size=4)
                      | st.lists(children, max_size=3).map(tuple)
                      | st.dictionaries(_text, children, max_size=4)),
    max_leaves=30,
)
_values = st.dictionaries(_text, _json, max_size=5)


def _round_trip(value: dict[str, Any]) -> tuple[Any, str]:
    """What puts did before the single walk: dump, check, load."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return json.loads(text), text


def _containers(node: Any) -> list[int]:
    if isinstance(node, dict):
        return [id(node), *(i for child in node.values() for i in _containers(child))]
    if isinstance(node, list | tuple):
        return [id(node), *(i for child in node for i in _containers(child))]
    return []


@settings(max_examples=150, deadline=None)
@given(value=_values)
def test_the_copy_and_text_equal_the_json_round_trip(value: dict[str, Any]) -> None:
    op = PutOp(("ns",), "k", value)
    expected, text = _round_trip(value)
    assert op.value == expected
    assert op.value_json == text
    assert json.loads(op.value_json) == op.value
    assert not set(_containers(op.value)) & set(_containers(value))


@settings(max_examples=60, deadline=None)
@given(value=_values, where=st.sampled_from(["nan", "inf", "-inf", "big", "small", "set",
                                             "nul"]))
def test_one_bad_leaf_anywhere_is_refused_by_name(value: dict[str, Any], where: str) -> None:
    bad: Any = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "big": INT64,
                "small": -INT64 - 1, "set": {1}, "nul": "a\x00b"}[where]
    value = {"outer": [value, {"bad": bad}]}
    with pytest.raises(InvalidValueError) as caught:
        PutOp(("ns",), "k", value)
    message = str(caught.value)
    assert "value.outer[1].bad" in message
    if where in ("big", "small"):
        assert message == (f"value.outer[1].bad = {bad} does not fit in a signed 64-bit "
                           "integer; store it as a string")
    elif where == "nul":
        assert message.startswith("value.outer[1].bad contains the NUL character at "
                                  "position 1; remem stores no NUL characters")
    else:
        assert message.startswith("value is not JSON-serialisable: value.outer[1].bad ")
        assert message.endswith(f"{HINT} (finite numbers, valid Unicode)")


def test_the_64_bit_bounds_are_exact() -> None:
    assert validate_value({"a": [INT64 - 1, -INT64]}) == {"a": [INT64 - 1, -INT64]}
    for number in (INT64, -INT64 - 1, 10**30):
        with pytest.raises(InvalidValueError, match=r"^value\.a\[0\] = .* signed 64-bit"):
            validate_value({"a": [number]})


def test_subclasses_are_copied_as_json_writes_them() -> None:
    class Colour(str, Enum):  # noqa: UP042 - str() of this one is "Colour.RED", not its text
        RED = "red"

    class Level(IntEnum):
        HIGH = 3

    class Real(float):
        pass

    value = {"c": Colour.RED, "l": Level.HIGH, "r": Real(1.5), "t": (1, ("x",)),
             "o": OrderedDict(b=1), Colour.RED: "key"}
    copy = validate_value(value)
    assert copy == {"c": "red", "l": 3, "r": 1.5, "t": [1, ["x"]], "o": {"b": 1}, "red": "key"}
    assert [type(v) for v in copy.values()] == [str, int, float, list, dict, str]
    assert all(type(k) is str for k in copy)
    assert copy == _round_trip(value)[0]


def test_keys_that_json_converts_are_converted_and_others_refused() -> None:
    value = {1: "a", 2.5: "b", False: "c", None: "d"}
    assert validate_value(value) == {"1": "a", "2.5": "b", "false": "c", "null": "d"}
    assert validate_value(value) == _round_trip(value)[0]  # type: ignore[arg-type]
    with pytest.raises(InvalidValueError, match=r"^value is not JSON-serialisable: value\.x "
                                                r"has a key of type tuple"):
        validate_value({"x": {(1, 2): "pair"}})
    with pytest.raises(InvalidValueError, match=r"value\.x has the key nan"):
        validate_value({"x": {math.nan: 1}})


def test_only_dicts_are_objects() -> None:
    for top in ([1], "text", 5, None):
        with pytest.raises(InvalidValueError, match="must be a JSON object"):
            validate_value(top)
    with pytest.raises(InvalidValueError, match=r"^value is not JSON-serialisable: value is a "
                                                r"mappingproxy"):
        validate_value(MappingProxyType({"a": 1}))
    for leaf, name in ((b"x", "bytes"), (object(), "object"), (frozenset(), "frozenset")):
        with pytest.raises(InvalidValueError, match=rf"value\.a\[1\] is a {name};"):
            validate_value({"a": [0, leaf]})


def test_nul_in_strings_and_keys_is_refused_by_path() -> None:
    with pytest.raises(InvalidValueError, match=r"^value\.a\[0\]\.b contains the NUL "
                                                r"character at position 3; remem stores no "
                                                r"NUL characters \(U\+0000\), on any backend"):
        validate_value({"a": [{"b": "ok \x00"}]})
    with pytest.raises(InvalidValueError, match=r"^value\.a has the key 'k\\x00', which "
                                                r"contains the NUL character"):
        validate_value({"a": {"k\x00": 1}})
    # a backslash and "u0000" is six ordinary characters, not a NUL
    assert validate_value({"a": "\\u0000", "\\u0000": 1}) == {"a": "\\u0000", "\\u0000": 1}


def test_lone_surrogates_in_strings_and_keys_are_refused_by_path() -> None:
    with pytest.raises(InvalidValueError, match=r"value\.a\[0\]\.b contains the lone "
                                                r"surrogate '\\ud800'"):
        validate_value({"a": [{"b": "ok \ud800"}]})
    with pytest.raises(InvalidValueError, match=r"value\.a has the key 'k\\udfff'"):
        validate_value({"a": {"k\udfff": 1}})
    # a surrogate pair written as one character is valid Unicode
    assert validate_value({"a": "\U0001f600"}) == {"a": "\U0001f600"}


def _nested(levels: int, container: str) -> Any:
    node: Any = 1
    for _ in range(levels):
        node = {"a": node} if container == "dict" else [node]
    return node


@pytest.mark.parametrize("container", ["dict", "list"])
def test_nesting_is_refused_one_level_past_the_limit(container: str) -> None:
    at_limit = {"x": _nested(MAX_VALUE_DEPTH - 1, container)}
    assert validate_value(at_limit) == at_limit
    step = r"\.a" if container == "dict" else r"\[0\]"
    for levels in (MAX_VALUE_DEPTH, 100_000):
        with pytest.raises(InvalidValueError, match=rf"^value\.x{step}.*: nested deeper than "
                                                    rf"{MAX_VALUE_DEPTH} levels"):
            validate_value({"x": _nested(levels, container)})


def test_values_that_contain_themselves_are_nesting_errors() -> None:
    looped: dict[str, Any] = {"a": []}
    looped["a"].append(looped)
    listed: list[Any] = []
    listed.append(listed)
    for value in (looped, {"l": listed}):
        with pytest.raises(InvalidValueError, match="nested deeper than"):
            validate_value(value)


def test_a_refused_value_in_a_batch_writes_nothing(tmp_path: Any) -> None:
    with SQLiteStore(tmp_path / "s.db") as store:
        with pytest.raises(InvalidValueError, match=r"value\.n\[2\]"):
            store.batch([PutOp(("ns",), "a", {"n": 1}),
                         PutOp(("ns",), "b", {"n": [1, 2, math.inf]})])
        assert store.search(("ns",)) == []


def test_namespaces_checked_once_are_still_checked_every_time() -> None:
    PutOp(("ns", "a"), "k", {})
    assert PutOp(("ns", "a"), "k", {}).namespace == ("ns", "a")
    assert PutOp(["ns", "a"], "k", {}).namespace == ("ns", "a")  # type: ignore[arg-type]
    for bad, fragment in (((["ns"],), "label 0 must be a string"), (("ns", ""), "empty"),
                          (("*",), "wildcard"), ((), "at least one label")):
        for _ in range(2):
            with pytest.raises(NamespaceError, match=fragment):
                PutOp(bad, "k", {})  # type: ignore[arg-type]

    class Label(str):
        pass

    labels = PutOp((Label("sub"),), "k", {}).namespace
    assert labels == ("sub",)
    assert type(PutOp(("sub",), "k", {}).namespace[0]) is str
