"""JSON values of the long-term store: checked (nesting depth, keys, finite numbers, no lone
surrogates, no NUL characters) and copied in one walk, then encoded once, so a backend stores
exactly what was validated and a caller's later mutation of its dict cannot reach the store.

The NUL character (U+0000) is refused in every string remem stores, keys included, on every
backend: PostgreSQL's ``text`` and ``jsonb`` cannot hold it, SQLite's JSON functions stop at
it, so a value holding one would be stored on one backend and refused (or cut) on another.
:func:`nul_problem` finds one anywhere in a value (requests, the graph and the threads check
their strings with it); :func:`validated_value` refuses one in an item's value.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeAlias

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError, to_json

from remem.errors import InvalidValueError

__all__ = ["MAX_VALUE_DEPTH", "NUL", "NestingError", "bounded_json", "nesting_problem",
           "nul_problem", "validate_value", "validated_value"]

#: deepest nesting of objects and arrays in a value (the value itself is level 1): deeper
#: values are refused when the op is built, so nothing is stored that cannot be read back
MAX_VALUE_DEPTH: Final = 64


#: the one character no stored string may hold (see the module docstring)
NUL: Final = "\x00"
#: what a message about a NUL character tells the caller to do
_NUL_FIX: Final = ("remem stores no NUL characters (U+0000), on any backend: remove it, or "
                   "replace it (with a space, or an escape of your own)")

#: a path while walking a value: (parent path, key or index), ``None`` at the root
_Path: TypeAlias = "tuple[_Path, str | int] | None"


def _render_path(root: str, path: _Path) -> str:
    """``root.a.b[0]``, the middle cut out past eight steps so messages stay readable."""
    steps: list[str | int] = []
    while path is not None:
        path, step = path
        steps.append(step)
    steps.reverse()
    shown = [f"[{s}]" if isinstance(s, int) else f".{str(s)[:40]}" for s in steps]
    if len(shown) > 8:
        shown = [*shown[:4], f"(...{len(shown) - 6} more...)", *shown[-2:]]
    return root + "".join(shown)


def nesting_problem(value: Any, root: str, limit: int = MAX_VALUE_DEPTH) -> str | None:
    """Why ``value`` nests objects and arrays deeper than ``limit`` levels (``value`` itself
    is level 1), naming the path to the first container past the limit; ``None`` if it fits.

    The walk is iterative, so a value nested thousands of levels (or one that contains
    itself) is refused instead of overflowing Python's recursion limit.
    """
    stack: list[tuple[Any, int, _Path]] = [(value, 1, None)]
    while stack:
        node, depth, path = stack.pop()
        children: Any
        if isinstance(node, Mapping):
            children = node.items()
        elif isinstance(node, list | tuple):
            children = enumerate(node)
        else:
            continue
        if depth > limit:
            return (f"{_render_path(root, path)}: nested deeper than {limit} levels of "
                    "objects and arrays; flatten it, or store the deep part as a JSON string")
        for step, child in children:
            if isinstance(child, Mapping | list | tuple):
                stack.append((child, depth + 1, (path, step if isinstance(step, int)
                                                  else str(step))))
    return None


def nul_problem(value: Any, root: str) -> str | None:
    """Why ``value`` cannot be stored because it holds the NUL character, naming where (the
    string or key under ``root``, ``root.a[2]``) and the fix; ``None`` if it holds none.

    ``value`` is a string, or containers of them at any depth: mappings (keys and values),
    lists, tuples, and pydantic models (their fields). Anything else holds no text. The walk
    is iterative and stops at 10,000 levels, so a value that contains itself ends. It runs
    on every request's fields: a container is first encoded by pydantic's serializer (in
    Rust, a few times faster than the walk), which writes NUL as ``\\u0000``; only when that
    text holds the escape (or cannot be made) does the walk look for where.
    """
    if type(value) is not str:
        try:
            if b"\\u0000" not in to_json(value, serialize_unknown=True):
                return None
        except (PydanticSerializationError, ValueError, TypeError, RecursionError):
            pass  # the walk decides
    stack: list[tuple[Any, _Path, int]] = [(value, None, 0)]
    while stack:
        node, path, depth = stack.pop()
        kind = type(node)
        if kind is str or isinstance(node, str):
            at = node.find(NUL)
            if at >= 0:
                return (f"{_render_path(root, path)} contains the NUL character at position "
                        f"{at}; {_NUL_FIX}")
            continue
        if kind in _NO_TEXT or depth > 10_000:
            continue
        children: Any
        if kind is dict or isinstance(node, Mapping):
            for key in node:
                if type(key) is str and NUL in key:
                    return (f"{_render_path(root, path)} has the key {key!r}, which contains "
                            f"the NUL character; {_NUL_FIX}")
            children = [(k if type(k) is str else str(k), child) for k, child in node.items()]
        elif kind is list or kind is tuple or isinstance(node, list | tuple):
            children = list(enumerate(node))
        elif isinstance(node, BaseModel):
            children = list(node.__dict__.items())  # a model keeps its fields' values here
        else:
            continue
        # pushed last to first, so the first NUL in reading order is the one reported
        stack.extend((child, (path, step), depth + 1) for step, child in reversed(children)
                     if type(child) not in _NO_TEXT)
    return None


#: types holding no text (what most leaves of a request are): never walked
_NO_TEXT: Final = frozenset({int, float, bool, type(None), bytes})


def validate_value(value: Any) -> dict[str, Any]:
    """Return a JSON-clean deep copy of ``value`` or raise :class:`InvalidValueError`.

    See :func:`validated_value` for the rules.
    """
    return validated_value(value)[0]


class NestingError(ValueError):
    """A JSON value nests deeper than its limit (raised by :func:`bounded_json`)."""


def bounded_json(value: Any, root: str, limit: int) -> str:
    """``value`` as compact JSON text, valid UTF-8, nesting at most ``limit`` levels.

    Raises :class:`NestingError` naming the path past the limit (see :func:`nesting_problem`),
    else what ``json.dumps`` or UTF-8 encoding raise (``TypeError``, ``ValueError``,
    ``UnicodeEncodeError``).
    """
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (RecursionError, ValueError) as exc:
        # past ~1,000 levels the encoder overflows the stack, and a value that contains itself
        # is a ValueError: the iterative walk names where either passes the limit
        problem = nesting_problem(value, root, limit)
        if problem is not None:
            raise NestingError(problem) from None
        if isinstance(exc, RecursionError):
            raise NestingError(f"{root} is nested too deeply to encode") from None
        raise
    # each level opens a bracket: with no more brackets than levels allowed (the usual case,
    # checked in C) the value cannot be too deep, and the walk is skipped
    if text.count("{") + text.count("[") > limit:
        problem = nesting_problem(value, root, limit)
        if problem is not None:
            raise NestingError(problem)
    text.encode("utf-8")
    return text


def validated_value(value: Any) -> tuple[dict[str, Any], str]:
    """A JSON-clean deep copy of ``value`` and its compact JSON text.

    A value is a JSON object: a dict with string keys whose leaves are ``None``, ``bool``,
    ``int`` (signed 64-bit), finite ``float`` or ``str`` (no lone surrogates, no NUL
    character, in keys too), nesting at most
    :data:`MAX_VALUE_DEPTH` levels; ``int``, ``float`` and ``bool`` keys become strings as in
    JSON. The copy decouples the stored value from the caller's object, so mutating it later
    changes nothing in the store. One walk checks and copies (see :func:`_copy_dict`); the
    text is then encoded from the copy, which needs no further checks.
    """
    if not isinstance(value, Mapping):
        raise InvalidValueError(
            f"value must be a JSON object (a dict), got {type(value).__name__}; "
            'wrap it, e.g. {"content": value}'
        )
    try:
        copy = _copy_dict(value, 1)
        text = _encode(copy)
        if _SURROGATE.search(text) is not None:
            _find_surrogate(copy)
        # the encoder writes NUL as the escape \u0000 (a string holding a backslash then
        # "u0000" matches too; the walk then finds nothing and the value is fine)
        if "\\u0000" in text:
            _find_nul(copy)
    except _BadNode as exc:
        raise InvalidValueError(exc.render()) from None
    return copy, text


#: compact JSON text of a copied value. No circular check: it only ever encodes the fresh tree
#: made by :func:`_copy_dict`. ``json.dumps`` builds an encoder per call (about 1 µs, a sixth
#: of a put's validation), so the C encoder is built once when the interpreter has it
_ENCODER: Final = json.JSONEncoder(ensure_ascii=False, check_circular=False,
                                   separators=(",", ":"))
_C_ENCODER: Final[Any] = getattr(json.encoder, "c_make_encoder", None)


def _make_encode() -> Callable[[dict[str, Any]], str]:
    def encode(value: dict[str, Any]) -> str:
        return "".join(chunks(value, 0))

    sample = {"a": [1, -0.5, "é\n", None, True, {}]}
    try:  # the C encoder is internal to json: use it only if it still answers as expected
        chunks = _C_ENCODER(None, _ENCODER.default, json.encoder.encode_basestring, None, ":",
                            ",", False, False, True)
        if encode(sample) == _ENCODER.encode(sample):
            return encode
    except TypeError:
        pass
    return _ENCODER.encode


_encode: Final = _make_encode()
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1
_NOT_JSON_HINT: Final = ("use only dict, list, str, int, float, bool and None (finite numbers, "
                         "valid Unicode)")


class _BadNode(Exception):
    """A node that breaks a value rule. Raised where it is found without a path; each
    enclosing container adds its step while the exception passes through it, so the path is
    only built when a value is refused."""

    def __init__(self, kind: str, detail: str = "") -> None:
        # "deep", "int", "json", "nul", or "key" (a bad key, until its object is known)
        self.kind = kind
        self.detail = detail
        self.steps: list[str | int] = []  # innermost first

    def render(self) -> str:
        steps = self.steps[::-1]
        if self.kind == "deep":
            path = _render_path("value", _as_path(steps))
            return (f"{path}: nested deeper than {MAX_VALUE_DEPTH} levels of objects and "
                    "arrays; flatten it, or store the deep part as a JSON string")
        full = "value" + "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in steps)
        if self.kind == "int":
            return (f"{full} = {self.detail} does not fit in a signed 64-bit integer; store it "
                    "as a string")
        if self.kind == "nul":
            return f"{full} {self.detail}; {_NUL_FIX}"
        return f"value is not JSON-serialisable: {full} {self.detail}; {_NOT_JSON_HINT}"


def _as_path(steps: list[str | int]) -> _Path:
    path: _Path = None
    for step in steps:
        path = (path, step)
    return path


def _copy_dict(node: Mapping[Any, Any], depth: int) -> dict[str, Any]:
    """A checked copy of a JSON object at nesting level ``depth``.

    The common types are tested by exact type first (one ``is`` per leaf); subclasses, other
    types and bad keys take :func:`_copy_other` / :func:`_json_key`. Recursion is bounded by
    the depth check, which also stops a value that contains itself. The per-leaf ladder is
    written out here and in :func:`_copy_list` rather than shared: it runs for every leaf of
    every value written, and a function call per leaf made copying a typical memory value
    about 20% slower (1.72 -> 2.09 us, timeit).
    """
    if depth > MAX_VALUE_DEPTH:
        raise _BadNode("deep")
    if type(node) is not dict and not isinstance(node, dict):
        # json accepts dict and its subclasses only; other mappings at the top level too
        raise _BadNode("json", f"is a {type(node).__name__}, not a dict")
    out: dict[str, Any] = {}
    key: Any = None
    try:
        for key, child in node.items():
            if type(key) is not str:
                key = _json_key(key)
            kind = type(child)
            if kind is str:
                pass
            elif kind is int:
                if not _INT64_MIN <= child <= _INT64_MAX:
                    raise _BadNode("int", str(child))
            elif kind is dict:
                child = _copy_dict(child, depth + 1)
            elif kind is list:
                child = _copy_list(child, depth + 1)
            elif kind is float:
                if child - child != 0.0:  # inf - inf and nan - nan are nan
                    raise _BadNode("json", f"= {child!r} is not a finite number")
            elif child is not None and kind is not bool:
                child = _copy_other(child, depth + 1)
            out[key] = child
    except _BadNode as exc:
        if exc.kind == "key":  # a bad key is reported at the object that holds it
            exc.kind = "json"
        else:
            exc.steps.append(key)
        raise
    return out


def _copy_list(node: Sequence[Any], depth: int) -> list[Any]:
    """A checked copy of a JSON array (a list or tuple) at nesting level ``depth``."""
    if depth > MAX_VALUE_DEPTH:
        raise _BadNode("deep")
    out: list[Any] = []
    try:
        for child in node:
            kind = type(child)
            if kind is str:
                pass
            elif kind is int:
                if not _INT64_MIN <= child <= _INT64_MAX:
                    raise _BadNode("int", str(child))
            elif kind is dict:
                child = _copy_dict(child, depth + 1)
            elif kind is list:
                child = _copy_list(child, depth + 1)
            elif kind is float:
                if child - child != 0.0:
                    raise _BadNode("json", f"= {child!r} is not a finite number")
            elif child is not None and kind is not bool:
                child = _copy_other(child, depth + 1)
            out.append(child)
    except _BadNode as exc:
        exc.steps.append(len(out))  # the index of the child being copied
        raise
    return out


def _copy_other(node: Any, depth: int) -> Any:
    """Subclasses of the JSON types, copied as ``json`` encodes them (a ``str`` enum as its
    text, an ``IntEnum`` as its number, a tuple as an array); anything else is refused."""
    if isinstance(node, str):
        return str.__str__(node)
    if isinstance(node, int):  # bool has no subclasses: this is an int subclass
        number = int(int.__repr__(node))
        if not _INT64_MIN <= number <= _INT64_MAX:
            raise _BadNode("int", str(number))
        return number
    if isinstance(node, float):
        real = float(float.__repr__(node))
        if not math.isfinite(real):
            raise _BadNode("json", f"= {real!r} is not a finite number")
        return real
    if isinstance(node, dict):
        return _copy_dict(node, depth)
    if isinstance(node, list | tuple):
        return _copy_list(node, depth)
    raise _BadNode("json", f"is a {type(node).__name__}")


def _json_key(key: Any) -> str:
    """A non-string object key as JSON writes it (``True`` -> ``"true"``, ``1`` -> ``"1"``)."""
    if isinstance(key, str):
        return str.__str__(key)
    if key is None or isinstance(key, bool):
        return "null" if key is None else "true" if key else "false"
    if isinstance(key, int):
        return int.__repr__(key)
    if isinstance(key, float):
        if not math.isfinite(key):
            raise _BadNode("key", f"has the key {key!r}, which is not a finite number")
        return float.__repr__(key)
    raise _BadNode("key", f"has a key of type {type(key).__name__}; keys must be strings")


def _find_nul(node: Any) -> None:
    """Raise naming where a NUL character sits in a copied value (after a fast scan of its
    text found the escape; a string holding a literal backslash and "u0000" gets here too,
    and then nothing is raised)."""
    if isinstance(node, str):
        at = node.find(NUL)
        if at >= 0:
            raise _BadNode("nul", f"contains the NUL character at position {at}")
        return
    if isinstance(node, dict):
        for key in node:
            if NUL in key:
                raise _BadNode("nul", f"has the key {key!r}, which contains the NUL character")
    children = node.items() if isinstance(node, dict) else enumerate(node)
    for step, child in children:
        if isinstance(child, str | dict | list):
            try:
                _find_nul(child)
            except _BadNode as exc:
                exc.steps.append(step)
                raise


def _find_surrogate(node: Any) -> None:
    """Raise naming where a lone surrogate sits in a copied value (rare: after a fast scan of
    the text found one)."""
    if isinstance(node, str):
        found = _SURROGATE.search(node)
        if found is not None:
            raise _BadNode("json", f"contains the lone surrogate {found.group()!r}, which is "
                                   "not valid Unicode")
        return
    if isinstance(node, dict):
        for key in node:
            if _SURROGATE.search(key) is not None:
                raise _BadNode("json", f"has the key {key!r}, which contains a lone surrogate "
                                       "(not valid Unicode)")
    children = node.items() if isinstance(node, dict) else enumerate(node)
    for step, child in children:
        try:
            _find_surrogate(child)
        except _BadNode as exc:
            exc.steps.append(step)
            raise
