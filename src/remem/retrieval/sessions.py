"""Session-level ranking stages: evidence that clusters by session, and spread across sessions.

Memories taken from a conversation come in sessions (a metadata field of the value, such as
``"session"``). A question's evidence often sits in one session (a topic is discussed over
several turns) or in several (a fact that came up more than once). Two stages use that, both
pure code over the fused candidates:

- :class:`Sessions` scores each session by its best candidates and adds that score to each of
  its turns, so a turn whose session holds several good matches climbs above a lone match;
- :class:`Spread` caps how many results one session may place before the other sessions have
  had their turn, so a question whose evidence is spread over sessions is not answered by one
  session's near-duplicates.

Items without the field form no session: they keep their score and are never capped. A
session is one namespace's: the ranking hands these functions each item's group as (namespace,
value), so two conversations under a searched prefix, each with a "session 1", stay apart.
Each stage groups by its own ``field``.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

from remem.retrieval.options import check_count, check_field, check_number

__all__ = ["Sessions", "Spread", "session_boosts", "spread_order"]


@dataclass(frozen=True, slots=True)
class Sessions:
    """Session-level evidence aggregation.

    A session's score is the mean of its ``depth`` best fused scores (missing ones count 0),
    divided by the best session's; each candidate's score then gains ``weight`` times its
    session's score, in units of the best fused score. ``field``: the value field naming the
    session.
    """

    field: str = "session"
    weight: float = 0.6
    depth: int = 3

    def __post_init__(self) -> None:
        check_field("Sessions", "field", self.field, holding="the session", example="session")
        check_count("Sessions", "depth", self.depth)
        check_number("Sessions", "weight", self.weight)


@dataclass(frozen=True, slots=True)
class Spread:
    """Diversity across sessions: at most ``per_session`` results of one session come before
    every other session's best remaining result; the rest follow in score order."""

    field: str = "session"
    per_session: int = 3

    def __post_init__(self) -> None:
        check_field("Spread", "field", self.field, holding="the session", example="session")
        check_count("Spread", "per_session", self.per_session)


def session_boosts(scores: Mapping[int, float], groups: Mapping[int, Hashable],
                   stage: Sessions) -> dict[int, float]:
    """Item id -> what :class:`Sessions` adds to its score (items without a session: 0)."""
    by_session: dict[Hashable, list[float]] = {}
    for item_id, score in scores.items():
        group = groups.get(item_id)
        if group is not None:
            by_session.setdefault(group, []).append(max(score, 0.0))
    session_score = {
        group: sum(sorted(values, reverse=True)[:stage.depth]) / stage.depth
        for group, values in by_session.items()
    }
    best = max(session_score.values(), default=0.0)
    if best <= 0.0:
        return dict.fromkeys(scores, 0.0)
    return {item_id: (stage.weight * session_score[groups[item_id]] / best
                      if groups.get(item_id) is not None else 0.0)
            for item_id in scores}


def spread_order(order: Sequence[int], groups: Mapping[int, Hashable],
                 stage: Spread) -> list[int]:
    """``order`` (best first) re-arranged in rounds: each round takes up to ``per_session``
    items of every session, in score order; items without a session are never held back."""
    taken: dict[Hashable, int] = {}
    rounds: dict[int, list[int]] = {}
    for item_id in order:
        group = groups.get(item_id)
        if group is None:
            rounds.setdefault(0, []).append(item_id)
            continue
        seen = taken.get(group, 0)
        taken[group] = seen + 1
        rounds.setdefault(seen // stage.per_session, []).append(item_id)
    position = {item_id: i for i, item_id in enumerate(order)}
    out: list[int] = []
    for number in sorted(rounds):
        out.extend(sorted(rounds[number], key=position.__getitem__))
    return out
