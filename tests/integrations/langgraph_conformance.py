"""Random LangGraph store call sequences, run on LangGraph's InMemoryStore and on RememStore,
and a comparison that sorts every difference into a documented kind or "undocumented".

The documented kinds are the ones docs/integrations.md lists:

* ``order_without_query``: without a query LangGraph's InMemoryStore returns items in
  insertion order, remem (like LangGraph's SQL stores) newest update first; the same items
  when the page holds them all.
* ``unscored_fill``: with a query, InMemoryStore pads a short page with items that have no
  vector (``index=False``); remem's vector search returns scored items only.
* ``empty_namespace``: InMemoryStore lists namespaces that hold no item (every item deleted,
  or only ever read: its dict of namespaces grows on reads); remem lists namespaces that hold
  items, as LangGraph's SQL stores do.
* ``stale_vector``: InMemoryStore keeps an item's vectors when a put replaces it with
  ``index=False``, so it scores the new value by the old text; remem drops them.
* ``tie_order``: items with equal scores in another order.
* ``reference_error``: InMemoryStore raised (``$gt``... on a missing field is a TypeError in
  it); the batch is skipped on both stores.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import _does_match

WORDS = ("tea", "coffee", "Berlin", "piano", "rain", "garden", "chess", "river", "night",
         "bread", "music", "train", "winter", "cat", "book", "sun")
NAMESPACES = (("users", "a"), ("users", "b"), ("users", "a", "notes"), ("docs",),
              ("docs", "v1"), ("team", "x", "v1"))
PREFIXES = ((), ("users",), ("users", "a"), ("docs",), ("team",), ("nothing",))
KEYS = tuple(f"k{i}" for i in range(8))


def random_value(rng: random.Random) -> dict[str, Any]:
    value: dict[str, Any] = {"text": " ".join(rng.sample(WORDS, rng.randint(2, 6)))}
    # always there: InMemoryStore raises TypeError for $gt... on a missing field
    value["n"] = rng.randint(0, 5)
    if rng.random() < 0.6:
        value["tag"] = rng.choice(("red", "blue", "green"))
    if rng.random() < 0.4:
        value["meta"] = {"x": rng.randint(0, 2), "y": rng.choice(("p", "q"))}
    if rng.random() < 0.2:
        value["list"] = rng.sample(["a", "b", "c"], rng.randint(0, 2))
    return value


def random_filter(rng: random.Random) -> dict[str, Any] | None:
    choice = rng.randint(0, 8)
    if choice == 0:
        return {"n": rng.randint(0, 5)}
    if choice == 1:
        return {"n": {rng.choice(("$gt", "$gte", "$lt", "$lte")): rng.randint(0, 5)}}
    if choice == 2:
        return {"tag": rng.choice(("red", "blue"))}
    if choice == 3:
        return {"tag": {"$ne": "red"}}
    if choice == 4:
        return {"meta": {"x": rng.randint(0, 2)}}
    if choice == 5:
        return {"n": {"$gte": 1, "$lte": 3}, "tag": {"$eq": "green"}}
    if choice == 6:
        return {"meta": {"x": 1, "y": rng.choice(("p", "q"))}}
    return None


def random_op(rng: random.Random, *, indexed: bool) -> Op:
    roll = rng.random()
    if roll < 0.45:
        index: Any = None
        if indexed and rng.random() < 0.1:
            index = False
        return PutOp(rng.choice(NAMESPACES), rng.choice(KEYS), random_value(rng), index=index)
    if roll < 0.52:
        return PutOp(rng.choice(NAMESPACES), rng.choice(KEYS), None)
    if roll < 0.65:
        return GetOp(rng.choice(NAMESPACES), rng.choice(KEYS))
    if roll < 0.9:
        query = " ".join(rng.sample(WORDS, 2)) if rng.random() < 0.6 else None
        return SearchOp(rng.choice(PREFIXES), random_filter(rng), rng.randint(1, 12),
                        rng.choice((0, 0, 0, 1, 3)), query)
    conditions: list[MatchCondition] = []
    if rng.random() < 0.6:
        conditions.append(MatchCondition("prefix", rng.choice(
            (("users",), ("users", "*"), ("docs",), ("*", "a")))))
    if rng.random() < 0.4:
        conditions.append(MatchCondition("suffix", rng.choice((("v1",), ("a",), ("*",)))))
    if rng.random() < 0.1:
        conditions.append(MatchCondition("suffix", ("notes",)))
    return ListNamespacesOp(tuple(conditions) or None, rng.choice((None, 1, 2)),
                            rng.choice((100, 2)), rng.choice((0, 0, 1)))


def random_batches(seed: int, *, indexed: bool, length: int = 40) -> list[list[Op]]:
    rng = random.Random(seed)
    return [[random_op(rng, indexed=indexed) for _ in range(rng.choice((1, 1, 1, 2, 4)))]
            for _ in range(length)]


def _shape(item: Any) -> tuple[Any, ...]:
    return (tuple(item.namespace), item.key, item.value)


def _score(item: Any) -> float | None:
    score = getattr(item, "score", None)
    return None if score is None else round(float(score), 4)


def _namespaces_with_items(op: ListNamespacesOp, namespaces: Sequence[tuple[str, ...]]
                           ) -> list[tuple[str, ...]]:
    """What ``op`` lists over ``namespaces`` (LangGraph's own rules)."""
    found = [ns for ns in namespaces
             if all(_does_match(condition, ns) for condition in op.match_conditions or ())]
    found = sorted({ns[:op.max_depth] for ns in found}) if op.max_depth is not None \
        else sorted(found)
    return found[op.offset:op.offset + op.limit]


def compare(op: Op, expected: Any, got: Any,
            non_empty: Sequence[tuple[str, ...]] = (),
            stale: set[tuple[tuple[str, ...], str]] | None = None) -> str | None:
    """``None`` when the results agree, else the kind of difference. ``non_empty``: the
    reference's namespaces that held items before the batch; ``stale``: its items scored by
    the vectors of an earlier value."""
    if isinstance(op, SearchOp):
        want = [(_shape(i), _score(i)) for i in expected]
        have = [(_shape(i), _score(i)) for i in got]
        if want == have:
            return None
        if op.query and stale and any((tuple(i.namespace), i.key) in stale
                                      and i.score is not None for i in expected):
            return "stale_vector"
        if op.query and any(score is None for _, score in want):
            scored = [entry for entry in want if entry[1] is not None]
            if (scored == have[:len(scored)] and len(have) == len(scored)) or (
                    scored == have):
                return "unscored_fill"
        if not op.query or all(score is None for _, score in want):
            if sorted(map(repr, want)) == sorted(map(repr, have)):
                return "order_without_query"
            if len(want) == len(have) and (op.offset or len(want) == op.limit):
                return "order_without_query"  # another page of the same items
            return "undocumented"
        scored = [entry for entry in want if entry[1] is not None]
        if len(scored) < len(want) and scored == have[:len(scored)]:
            return "unscored_fill"
        # equal scores may come in another order (and cut a page elsewhere)
        if [s for _, s in want] == [s for _, s in have]:
            return "tie_order" if _ties(want) else "undocumented"
        return "undocumented"
    if isinstance(op, GetOp):
        same = (expected is None and got is None) or (
            expected is not None and got is not None and _shape(expected) == _shape(got))
        return None if same else "undocumented"
    if isinstance(op, ListNamespacesOp):
        if list(expected) == list(got):
            return None
        if list(got) == _namespaces_with_items(op, non_empty):
            return "empty_namespace"
        return "undocumented"
    return None if expected == got else "undocumented"


def _ties(entries: Sequence[tuple[Any, float | None]]) -> bool:
    scores = [score for _, score in entries]
    return len(set(scores)) < len(scores)


def run_sequences(reference: BaseStore, candidate: BaseStore,
                  batches: Sequence[Sequence[Op]],
                  examples: list[str] | None = None) -> Counter[str]:
    """Run every batch on both stores; count the differences by kind (and ``ops``).
    ``examples`` collects a description of each undocumented difference."""
    counts: Counter[str] = Counter()
    stale: set[tuple[tuple[str, ...], str]] = set()
    vectors: set[tuple[tuple[str, ...], str]] = set()  # items the reference holds vectors of
    for batch in batches:
        data = getattr(reference, "_data", {})  # InMemoryStore's namespaces (test only)
        non_empty = [ns for ns, items in list(data.items()) if items]
        try:
            expected = reference.batch(list(batch))
        except (TypeError, ValueError):  # a LangGraph bug: skip the batch on both stores
            counts["reference_error"] += 1
            continue
        got = candidate.batch(list(batch))
        for op, want, have in zip(batch, expected, got, strict=True):
            counts["ops"] += 1
            kind = compare(op, want, have, non_empty, set(stale))
            if kind is not None:
                counts[kind] += 1
                if kind == "undocumented" and examples is not None:
                    examples.append(f"{op}\n  langgraph: {_described(want)}\n"
                                    f"  remem:     {_described(have)}")
        for op in batch:  # how the batch's puts left the reference's vectors
            if isinstance(op, PutOp):
                where = (tuple(op.namespace), op.key)
                if op.value is None:
                    vectors.discard(where)
                    stale.discard(where)
                elif op.index is False:
                    if where in vectors:
                        stale.add(where)
                else:
                    vectors.add(where)
                    stale.discard(where)
    return counts


def _described(result: Any) -> str:
    if isinstance(result, list):
        return repr([(_shape(i), _score(i)) if hasattr(i, "key") else i for i in result])
    return repr(_shape(result) if hasattr(result, "key") else result)
