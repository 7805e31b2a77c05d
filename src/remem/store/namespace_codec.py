"""How a namespace tuple is stored as one text column, shared by every SQL dialect.

Each label is followed by the unit separator (``\\x1f``), so the stored text of a namespace
starts with the stored text of each of its prefixes, and the namespaces under a prefix are one
contiguous range of the column's sort order: a prefix search is an index range scan.

>>> encode_ns(("users", "u1"))
'users\\x1fu1\\x1f'
>>> decode_ns(encode_ns(("users", "u1")))
('users', 'u1')
>>> prefix_range(("users",))
('users\\x1f', 'users ')
"""

from __future__ import annotations

from remem.store.types import Namespace

__all__ = ["decode_ns", "encode_ns", "prefix_range"]

_SEP = "\x1f"


def encode_ns(namespace: Namespace) -> str:
    """Namespace tuple to its stored form: each label followed by the unit separator."""
    return "".join(label + _SEP for label in namespace)


def decode_ns(stored: str) -> Namespace:
    """Inverse of :func:`encode_ns`."""
    return tuple(stored.split(_SEP)[:-1])


def prefix_range(prefix: Namespace) -> tuple[str, str] | None:
    """``(low, high)`` such that namespaces under ``prefix`` are exactly ``low <= ns < high``;
    ``None`` for the empty prefix (everything)."""
    if not prefix:
        return None
    low = encode_ns(prefix)
    return low, low[:-1] + chr(ord(_SEP) + 1)
