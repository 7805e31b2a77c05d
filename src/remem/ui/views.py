"""What the inspector's pages show, computed from remem's values without I/O: score bars,
word diffs between versions, a memory's state at a time, the checkpoint tree of a thread,
and the namespace tree. Templates only lay these values out."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from remem.errors import InvalidInputError
from remem.memory.history import HistoryEvent
from remem.memory.records import content_text
from remem.memory.results import MemoryHit
from remem.store.types import Namespace
from remem.threads.types import Checkpoint

__all__ = [
    "SIGNALS",
    "Bar",
    "CheckpointNode",
    "DiffPart",
    "NamespaceRow",
    "VersionView",
    "checkpoint_tree",
    "fmt_time",
    "hit_bars",
    "iso_time",
    "namespace_rows",
    "parse_time",
    "state_at",
    "version_views",
    "word_diff",
]

#: the bars of a search hit, in order (``relevance``: the weighted mean of keyword and vector)
SIGNALS = ("keyword", "vector", "recency", "relevance")


def fmt_time(ts: float | None) -> str:
    """Epoch seconds as ``2026-11-26 03:45:12 UTC`` (empty for ``None``)."""
    if ts is None:
        return ""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def iso_time(ts: float | None) -> str:
    """Epoch seconds as ISO 8601 in UTC, ``2026-11-26T03:45:12+00:00`` (empty for
    ``None``): what a ``<time datetime>`` attribute holds."""
    if ts is None:
        return ""
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


def parse_time(text: str | None) -> float | None:
    """A time typed in a form (``2026-11-26T03:45``, with or without seconds or a zone;
    naive times are UTC) or epoch seconds, as epoch seconds; ``None`` when empty. An
    :class:`~remem.errors.InvalidInputError` (a 422 page) names the accepted shapes."""
    if text is None or not text.strip():
        return None
    text = text.strip()
    try:
        value = float(text)
    except ValueError:
        pass
    else:
        if not math.isfinite(value):
            raise InvalidInputError(f"as_of must be a finite time, got {text!r}")
        return value
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInputError(f"as_of must be a date and time like 2026-11-26T03:45 (UTC) "
                                f"or epoch seconds, got {text[:40]!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


@dataclass(frozen=True, slots=True)
class Bar:
    """One signal's bar: ``value`` on the fixed 0-1 scale the bar draws (``width`` in
    percent), the signal's raw ``score`` and ``rank`` among its candidates (``None``: it did
    not rank this hit), and the ``label`` printed beside the bar."""

    signal: str
    width: int
    value: float | None
    score: float | None
    rank: int | None
    label: str


def hit_bars(hits: Sequence[MemoryHit]) -> list[list[Bar]]:
    """Bars for each hit of a page, each on a fixed scale from 0 to 1, so a bar reads the
    same on any page: keyword (the share of the query's term weight the memory holds; its
    BM25 score beside), vector (cosine, clamped to 0-1), recency (its factor) and relevance
    (their weighted mean, what ``min_score`` compares with; recency is not part of it). A
    bar per signal some hit of the page has. Empty lists without a query (no scores to
    explain)."""
    if not hits or all(hit.score is None for hit in hits):
        return [[] for _ in hits]
    present = [name for name in SIGNALS if any(_value(hit, name) is not None or
                                                name in hit.details for hit in hits)]
    rows: list[list[Bar]] = []
    for hit in hits:
        row: list[Bar] = []
        for name in present:
            value, signal = _value(hit, name), hit.details.get(name)
            score, rank = (signal.score, signal.rank) if signal else (None, None)
            row.append(Bar(name, _width(value), value, score, rank,
                           _label(name, value, score, rank)))
        rows.append(row)
    return rows


def _value(hit: MemoryHit, name: str) -> float | None:
    if name == "relevance":
        return hit.relevance
    if name == "recency":
        signal = hit.details.get(name)
        return signal.score if signal else None
    return hit.relevance_by_signal.get(name)


def _width(value: float | None) -> int:
    if value is None or not math.isfinite(value):
        return 0
    return round(100 * min(1.0, max(0.0, value)))


def _label(name: str, value: float | None, score: float | None, rank: int | None) -> str:
    """What the bar shows, then the raw score where it differs (BM25; a cosine below 0) and
    the rank: ``0.667 · BM25 2.310 · #1``."""
    parts = [] if value is None else [f"{value:.3f}"]
    if score is not None and name == "keyword":
        parts.append(f"BM25 {score:.3f}")
    elif score is not None and name == "vector" and score != value:
        parts.append(f"cosine {score:.3f}")
    if rank is not None:
        parts.append(f"#{rank}")
    return " · ".join(parts) or "—"


@dataclass(frozen=True, slots=True)
class DiffPart:
    """A run of words that is the same in both versions, or only in the old (``del``) or
    the new one (``ins``)."""

    op: Literal["same", "del", "ins"]
    text: str


_WORDS = re.compile(r"\s+|[^\s]+")


def word_diff(old: str, new: str) -> list[DiffPart]:
    """``old`` to ``new`` as runs of words kept, removed and added (whitespace kept)."""
    a, b = _WORDS.findall(old), _WORDS.findall(new)
    parts: list[DiffPart] = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            parts.append(DiffPart("same", "".join(a[i1:i2])))
            continue
        if i2 > i1:
            parts.append(DiffPart("del", "".join(a[i1:i2])))
        if j2 > j1:
            parts.append(DiffPart("ins", "".join(b[j1:j2])))
    return parts


def _text(value: Mapping[str, Any] | None) -> str | None:
    if value is None:
        return None
    content = value.get("content")
    if isinstance(content, str | Mapping):
        return content_text(content)
    return str(value.get("text", ""))


@dataclass(frozen=True, slots=True)
class VersionView:
    """One history event as the timeline shows it: what changed, and the diff from the
    text before to the text after."""

    event: HistoryEvent
    before: str | None
    after: str | None
    diff: list[DiffPart] = field(default_factory=list)
    status_before: str | None = None
    status_after: str | None = None


def version_views(events: Iterable[HistoryEvent]) -> list[VersionView]:
    """The timeline of a memory, oldest first."""
    views = []
    for event in events:
        before, after = _text(event.before), _text(event.after)
        diff = word_diff(before or "", after or "") if before != after else []
        views.append(VersionView(
            event, before, after, diff,
            None if event.before is None else str(event.before.get("status", "")),
            None if event.after is None else str(event.after.get("status", ""))))
    return views


def state_at(events: Sequence[HistoryEvent], ts: float) -> tuple[str | None, str]:
    """The memory's text at epoch time ``ts`` from its history, and its status then
    (``"not yet recorded"``, ``"current"``, ``"invalid"`` or ``"deleted"``)."""
    latest: HistoryEvent | None = None
    for event in events:
        if event.at <= ts and (latest is None or event.at >= latest.at):
            latest = event
    if latest is None:
        return None, "not yet recorded"
    if latest.after is None:
        return _text(latest.before), "deleted"
    return _text(latest.after), str(latest.after.get("status", "current"))


@dataclass
class CheckpointNode:
    """A checkpoint and the checkpoints made from it (``depth`` for indentation); ``fork``:
    its parent is not in this listing (another thread's checkpoint, or an older page)."""

    checkpoint: Checkpoint
    depth: int = 0
    children: list[CheckpointNode] = field(default_factory=list)
    fork: bool = False


def checkpoint_tree(checkpoints: Sequence[Checkpoint]) -> list[CheckpointNode]:
    """The checkpoints as a forest, flattened depth first (oldest first at each level), so
    a template can draw it as an indented list where a branch shows as a sibling."""
    nodes = {cp.id: CheckpointNode(cp) for cp in checkpoints}
    roots: list[CheckpointNode] = []
    for cp in sorted(checkpoints, key=lambda c: (c.created_at, c.id)):
        node = nodes[cp.id]
        parent = nodes.get(cp.parent_id) if cp.parent_id else None
        if parent is None:
            node.fork = cp.parent_id is not None
            roots.append(node)
        else:
            parent.children.append(node)
    flat: list[CheckpointNode] = []
    stack = [(node, 0) for node in reversed(roots)]
    while stack:
        node, depth = stack.pop()
        node.depth = depth
        flat.append(node)
        # a linear run of checkpoints stays at one depth; only a second child indents
        for position, child in reversed(list(enumerate(node.children))):
            stack.append((child, depth + (1 if position > 0 else 0)))
    return flat


@dataclass(frozen=True, slots=True)
class NamespaceRow:
    """A namespace in the tree: its labels, its depth below the listed prefix, and how
    many current memories it holds (exact, those below it included)."""

    namespace: Namespace
    depth: int
    count: int


def namespace_rows(namespaces: Sequence[Namespace],
                   counts: Mapping[Namespace, int]) -> list[NamespaceRow]:
    """Rows of the namespace tree, sorted so children follow their parents."""
    return [NamespaceRow(ns, max(0, len(ns) - 2), counts.get(ns, 0))
            for ns in sorted(namespaces)]
