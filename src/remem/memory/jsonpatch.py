"""RFC 6902 JSON Patch, applied to a copy (the original is never changed).

Operations: ``add``, ``remove``, ``replace``, ``move``, ``copy``, ``test``; paths are RFC 6901
JSON pointers (``/a/b/0``, ``~1`` for ``/`` and ``~0`` for ``~``, ``-`` appends to an array).
A patch that cannot apply raises :class:`PatchError` naming the operation and path.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from remem.errors import InvalidInputError

__all__ = ["PatchError", "apply_patch"]

_MISSING = object()


class PatchError(InvalidInputError):
    """A JSON Patch operation cannot be applied to the document."""


def _tokens(pointer: str, where: str) -> list[str]:
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PatchError(f"{where}: path {pointer!r} must start with '/' (a JSON pointer)")
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def _index(container: list[Any], token: str, where: str, *, insert: bool) -> int:
    if insert and token == "-":
        return len(container)
    if not token.isdigit() or (token != "0" and token.startswith("0")):
        raise PatchError(f"{where}: {token!r} is not an array index")
    index = int(token)
    limit = len(container) if insert else len(container) - 1
    if index > limit:
        raise PatchError(f"{where}: index {index} is out of range (array length "
                         f"{len(container)})")
    return index


def _parent(doc: Any, tokens: list[str], where: str) -> Any:
    node = doc
    for token in tokens[:-1]:
        if isinstance(node, dict):
            if token not in node:
                raise PatchError(f"{where}: {token!r} does not exist")
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, where, insert=False)]
        else:
            raise PatchError(f"{where}: cannot descend into a {type(node).__name__}")
    return node


def _get(doc: Any, tokens: list[str], where: str) -> Any:
    if not tokens:
        return doc
    parent = _parent(doc, tokens, where)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"{where}: {last!r} does not exist")
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, where, insert=False)]
    raise PatchError(f"{where}: cannot read inside a {type(parent).__name__}")


def _remove(doc: Any, tokens: list[str], where: str) -> Any:
    if not tokens:
        raise PatchError(f"{where}: cannot remove the whole document")
    parent = _parent(doc, tokens, where)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"{where}: {last!r} does not exist")
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_index(parent, last, where, insert=False))
    raise PatchError(f"{where}: cannot remove inside a {type(parent).__name__}")


def _add(doc: Any, tokens: list[str], value: Any, where: str, *, replace: bool = False) -> Any:
    if not tokens:
        return value
    parent = _parent(doc, tokens, where)
    last = tokens[-1]
    if isinstance(parent, dict):
        if replace and last not in parent:
            raise PatchError(f"{where}: {last!r} does not exist (use add to create it)")
        parent[last] = value
    elif isinstance(parent, list):
        index = _index(parent, last, where, insert=not replace)
        if replace:
            parent[index] = value
        else:
            parent.insert(index, value)
    else:
        raise PatchError(f"{where}: cannot write inside a {type(parent).__name__}")
    return doc


def apply_patch(document: Any, patch: Sequence[Mapping[str, Any]]) -> Any:
    """``document`` with ``patch`` applied (a new object)."""
    doc = copy.deepcopy(document)
    for position, operation in enumerate(patch):
        op = operation.get("op")
        path = operation.get("path")
        where = f"patch[{position}] ({op} {path})"
        if not isinstance(path, str):
            raise PatchError(f"{where}: path must be a string JSON pointer")
        tokens = _tokens(path, where)
        value = operation.get("value", _MISSING)
        if op in ("add", "replace", "test") and value is _MISSING:
            raise PatchError(f"{where}: {op} needs a value")
        if op == "add":
            doc = _add(doc, tokens, copy.deepcopy(value), where)
        elif op == "replace":
            doc = _add(doc, tokens, copy.deepcopy(value), where, replace=True)
        elif op == "remove":
            _remove(doc, tokens, where)
        elif op in ("move", "copy"):
            source = operation.get("from")
            if not isinstance(source, str):
                raise PatchError(f"{where}: {op} needs 'from' (a JSON pointer)")
            from_tokens = _tokens(source, where)
            if op == "move":
                if tokens[:len(from_tokens)] == from_tokens and tokens != from_tokens:
                    raise PatchError(f"{where}: cannot move a value into itself")
                moved = _remove(doc, from_tokens, where)
            else:
                moved = copy.deepcopy(_get(doc, from_tokens, where))
            doc = _add(doc, tokens, moved, where)
        elif op == "test":
            if _get(doc, tokens, where) != value:
                raise PatchError(f"{where}: test failed, the value differs")
        else:
            raise PatchError(f"{where}: unknown op {op!r}; use add, remove, replace, move, "
                             "copy or test")
    return doc
