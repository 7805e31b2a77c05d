"""Neighbouring turns: a candidate next to a strong match in its session shares that match's score.

In a chat the evidence is often the turn right after one that shares the question's words
("What got you into running?" -> "My dad took me when I was ten"), or the turn before or after
the best match of a topic. Memories taken from a conversation carry their session (a value
field such as ``"session"``) and their order within it (``"turn"``: 1, 2, 3...).
:class:`Neighbours` gives each candidate ``weight`` times the best fused score of the turns
next to it in the same session, so an answer with none of the question's words climbs when
the turn it answers matched.

The scoring here is pure; the store's candidate code (:mod:`remem.store.candidates`) reads the
candidates' session and order and hands the shares to the ranking as an extra signal
(``"neighbours"`` in ``hit.details``). Only candidates of the search (found by a signal, under
its prefix, filter and time range) lend and receive a share. Items without a session or a
whole-number order take no part. A session is one namespace's: a search over a prefix holding
two conversations, each with a "session 1", keeps them apart.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass

from remem.errors import InvalidInputError
from remem.retrieval.options import check_count, check_field, check_number, field_value

__all__ = ["Neighbours", "Position", "Shares", "neighbour_shares", "position_of"]

#: where a turn sits: (session, order within the session)
Position = tuple[Hashable, int]

#: an item's (namespace, key), the tie-break every backend agrees on
SortKey = tuple[tuple[str, ...], str]


@dataclass(frozen=True, slots=True)
class Neighbours:
    """Neighbouring turns share their score.

    ``field``: the value field naming the session; ``order``: the value field holding the
    turn's whole-number position in it. A candidate gains ``weight`` times the best fused score
    among the ``before`` turns before it and the ``after`` turns after it in the same session
    (``before=1, after=0``: an answer gains from the turn it answers). ``top``: only the ``top``
    best candidates of the fusion lend their score (``None``: every candidate).

    The defaults are the best point measured on LoCoMo dev (``docs/search.md``): a turn gains
    from the one after it, which is often a reaction repeating its words ("A pottery class?
    What did you make?") that the questions stage demotes.
    """

    field: str = "session"
    order: str = "turn"
    weight: float = 0.3
    before: int = 0
    after: int = 1
    top: int | None = None

    def __post_init__(self) -> None:
        check_field("Neighbours", "field", self.field, holding="the session",
                    example="session")
        check_field("Neighbours", "order", self.order, holding="the turn's position",
                    example="turn")
        check_number("Neighbours", "weight", self.weight)
        for name in ("before", "after"):
            check_count("Neighbours", name, getattr(self, name), low=0,
                        meaning="turns on that side that lend their score")
        if self.before == 0 and self.after == 0:
            raise InvalidInputError(
                "Neighbours.before and Neighbours.after are both 0, so no turn would lend: "
                "set at least one to 1 or more"
            )
        check_count("Neighbours", "top", self.top, optional=True,
                    meaning="None: every candidate")


def position_of(value: object, stage: Neighbours) -> Position | None:
    """The (session, order) of a stored value, or ``None`` when either field is missing, the
    session is not a scalar or the order not a whole number."""
    if not isinstance(value, Mapping):
        return None
    session, order = field_value(value, stage.field), field_value(value, stage.order)
    if not isinstance(session, str | int | float) or isinstance(session, bool):
        return None
    if isinstance(order, float) and order.is_integer():
        order = int(order)  # JSON round trips may hand back 3.0
    if not isinstance(order, int) or isinstance(order, bool):
        return None
    return session, order


def neighbour_shares(scores: Mapping[int, float], positions: Mapping[int, Position],
                     stage: Neighbours, *,
                     tie_keys: Mapping[int, SortKey] | None = None) -> dict[int, float]:
    """Item id -> the best score (negative ones count 0) among the lenders next to it: the
    turns up to ``stage.before`` before it or ``stage.after`` after it in its session. Lenders
    are the ``stage.top`` best of ``scores`` (ties by ``tie_keys``, the items' (namespace,
    key), else by id), or all of them; where two lenders hold one position the better lends.
    Only items of ``scores`` with a share above 0 are returned. The caller multiplies by
    ``stage.weight``.

    A session value names a session only within its namespace: a caller ranking several
    namespaces scopes the session of each position by it (the store's candidate code passes
    ``((namespace, session), order)``)."""
    lenders = list(scores)
    if stage.top is not None:
        # ties by (namespace, key), which every backend agrees on; ids differ between them
        # (an updated item gets a new id in memory, keeps its row id in SQLite)
        if tie_keys is not None:
            lenders = sorted(lenders, key=lambda i: (-scores[i], tie_keys[i]))[:stage.top]
        else:
            lenders = sorted(lenders, key=lambda i: (-scores[i], i))[:stage.top]
    by_position: dict[Position, float] = {}
    for item_id in lenders:
        where = positions.get(item_id)
        if where is not None:
            by_position[where] = max(by_position.get(where, 0.0), scores[item_id], 0.0)
    shares: dict[int, float] = {}
    for item_id in scores:
        where = positions.get(item_id)
        if where is None:
            continue
        session, order = where
        best = max((by_position.get((session, order - step), 0.0)
                    for step in range(1, stage.before + 1)), default=0.0)
        best = max(best, max((by_position.get((session, order + step), 0.0)
                              for step in range(1, stage.after + 1)), default=0.0))
        if best > 0.0:
            shares[item_id] = best
    return shares


class Shares(list[tuple[int, tuple[tuple[str, ...], str], float]]):
    """An extra signal whose scores are already in units of the best fused score: the ranking
    adds each times the stage's weight and that score, without min-max normalising them (a
    neighbour's share must stay proportional to the neighbour's own score)."""
