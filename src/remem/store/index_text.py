"""The texts an item is indexed by: what gets embedded (:func:`index_texts`) and what the
keyword index holds (:func:`keyword_text`), from a value and a list of dotted field paths.
Pure functions, shared by every backend (and re-exported by :mod:`remem.store.base`)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from remem.store.filters import MISSING, resolve_path

__all__ = ["WHOLE_VALUE", "index_texts", "keyword_text"]

#: the field path that stands for the whole value
WHOLE_VALUE = "$"


def keyword_text(value: Mapping[str, Any], fields: Sequence[str]) -> str:
    """The text a keyword index holds for ``value``: the fields' texts, one per line; for
    ``"$"`` every string in the value."""
    parts: list[str] = []
    for path in fields:
        if path == WHOLE_VALUE:
            parts.extend(_strings(value))
        else:
            parts.extend(text for _, text in index_texts(value, (path,)))
    return "\n".join(parts)


def _strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, Mapping):
        for child in node.values():
            yield from _strings(child)
    elif isinstance(node, list):
        for child in node:
            yield from _strings(child)


def index_texts(value: Mapping[str, Any], fields: Sequence[str]) -> list[tuple[str, str]]:
    """The ``(field, text)`` pairs to embed for ``value``; absent fields are skipped."""
    pairs: list[tuple[str, str]] = []
    for path in fields:
        if path == WHOLE_VALUE:
            pairs.append((path, json.dumps(value, ensure_ascii=False, sort_keys=True)))
            continue
        found = resolve_path(value, tuple(path.split(".")))
        if found is MISSING or found is None:
            continue
        if isinstance(found, str):
            text = found
        elif isinstance(found, list) and all(isinstance(x, str) for x in found):
            text = "\n".join(found)
        else:
            text = json.dumps(found, ensure_ascii=False, sort_keys=True)
        if text:
            pairs.append((path, text))
    return pairs
