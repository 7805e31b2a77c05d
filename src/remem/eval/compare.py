"""Two runs of ``remem eval ... --out DIR`` compared question by question.

Records of two runs over the same file line up by (conversation, question index). For a
metric (``recall@10`` by default), :func:`paired_change` gives, overall and per category, the
mean change, its paired bootstrap interval (the bootstrap of the per-question differences),
and how many questions went up and down; :func:`pool_changes` gives the change per
conversation (pool). ``python -m remem.eval.compare BASE_DIR NEW_DIR [METRIC]`` prints both.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from remem.errors import InvalidInputError
from remem.eval.metrics import bootstrap_ci

__all__ = ["ScoreChange", "load_records", "main", "paired_change", "pool_changes"]

Key = tuple[str, int]


@dataclass(frozen=True, slots=True)
class ScoreChange:
    """One set's change from the base run to the new one."""

    name: str
    n: int
    base: float
    new: float
    low: float  # paired 95% interval of new - base
    high: float
    up: int
    down: int

    @property
    def delta(self) -> float:
        """The mean change."""
        return self.new - self.base


def load_records(directory: str | Path) -> dict[Key, Mapping[str, Any]]:
    """The main-set records of ``DIR/questions.jsonl``, keyed by (conversation, index)."""
    path = Path(directory) / "questions.jsonl"
    if not path.is_file():
        raise InvalidInputError(f"{path}: no such file (write it with --out {directory})")
    out: dict[Key, Mapping[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("main", True) and record.get("metrics") is not None:
            out[(str(record["conversation"]), int(record["question_index"]))] = record
    return out


def _category(record: Mapping[str, Any]) -> str:
    return str(record.get("kind") or record.get("category") or "all")


def paired_change(base: Mapping[Key, Mapping[str, Any]], new: Mapping[Key, Mapping[str, Any]],
                  metric: str = "recall@10", *, resamples: int = 1000, seed: int = 0
                  ) -> list[ScoreChange]:
    """The change overall (``main``) and per category, over the questions both runs scored.

    Raises :class:`InvalidInputError` when the runs share no question."""
    keys = sorted(set(base) & set(new))
    if not keys:
        raise InvalidInputError("the two runs share no question: compare runs of one file")
    groups: dict[str, list[Key]] = {"main": keys}
    for key in keys:
        groups.setdefault(_category(base[key]), []).append(key)
    out: list[ScoreChange] = []
    for name, members in groups.items():
        old = np.array([float(base[k]["metrics"][metric]) for k in members])
        now = np.array([float(new[k]["metrics"][metric]) for k in members])
        low, high = bootstrap_ci(now - old, resamples=resamples, seed=seed)[:, 0]
        out.append(ScoreChange(name, len(members), float(old.mean()), float(now.mean()),
                          float(low), float(high), int((now > old).sum()),
                          int((now < old).sum())))
    return out


def pool_changes(base: Mapping[Key, Mapping[str, Any]], new: Mapping[Key, Mapping[str, Any]],
                 metric: str = "recall@10") -> dict[str, float]:
    """Conversation (pool) -> the mean change of ``metric`` over its questions."""
    pools: dict[str, list[float]] = {}
    for key in sorted(set(base) & set(new)):
        pools.setdefault(key[0], []).append(float(new[key]["metrics"][metric])
                                            - float(base[key]["metrics"][metric]))
    return {pool: sum(values) / len(values) for pool, values in pools.items()}


def main(argv: Sequence[str]) -> int:
    """``BASE_DIR NEW_DIR [METRIC]``: print the paired change and the change per pool."""
    if len(argv) not in (2, 3):
        print("usage: python -m remem.eval.compare BASE_DIR NEW_DIR [METRIC]", file=sys.stderr)
        return 2
    metric = argv[2] if len(argv) == 3 else "recall@10"
    base, new = load_records(argv[0]), load_records(argv[1])
    print(f"| set | n | base {metric} | new | change [paired 95% CI] | up / down |")
    print("|---|---|---|---|---|---|")
    for c in paired_change(base, new, metric):
        print(f"| {c.name} | {c.n} | {c.base:.3f} | {c.new:.3f} | {c.delta:+.3f} "
              f"[{c.low:+.3f}, {c.high:+.3f}] | {c.up} / {c.down} |")
    pools = pool_changes(base, new, metric)
    print(f"pools up {sum(v > 0 for v in pools.values())}, down "
          f"{sum(v < 0 for v in pools.values())}, even {sum(v == 0 for v in pools.values())}"
          + ("; per pool: " + ", ".join(f"{p} {v:+.3f}" for p, v in pools.items())
             if len(pools) <= 20 else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
