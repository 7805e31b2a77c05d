"""Datasets in other formats (MemDaily, LongMemEval) in the harness's shape, and their report.

A format's loader turns its file into a :class:`~remem.eval.locomo.LocomoDataset` (one
"conversation" per namespace, one :class:`~remem.eval.locomo.TurnMemory` per message, questions
with gold ids) plus what LoCoMo's fixed categories cannot say: each question's **kind** (the
format's own question type), which kind is reported **apart** from the main set (LongMemEval's
abstention questions, like LoCoMo's category 5), per-question extras for the records, the
format's data fixes, and optionally a second level of ids (LongMemEval's sessions) at which the
same rankings are scored again.

A question may have gold only at that second level (a LongMemEval item naming its answer
sessions but marking no turn): :func:`run_labelled` asks it too, and it is scored at the parent
level only, never counted at the item level. At the parent level a cut-off ``c`` (recall@c,
hit@c, nDCG@c) is reported for a set only when every question of the set has at least ``c``
parents in its lifted ranking, or its ranking is complete (the retriever returned fewer than
``k`` ids, or ranked every parent of the namespace); else it is ``None``. MRR is always
reported: a gold parent beyond the ranked ids counts 0, so it is a lower bound.

The report has the same schema as ``remem eval locomo``: ``main``, ``by_category`` (keyed by
kind), the apart set under its own name, ``timing`` and ``config``. Pure: nothing here prints.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rich.table import Table
from rich.text import Text

from remem.eval.harness import Progress, QuestionResult, RunResult, RunTiming, run_locomo
from remem.eval.locomo import LocomoDataset, Question
from remem.eval.metrics import HEADLINE, SetSummary, question_metrics, summarize
from remem.eval.retrievers import RandomRetriever, Retriever

__all__ = [
    "FormatFix",
    "LabelledDataset",
    "labelled_records",
    "labelled_summary",
    "labelled_table",
    "parent_depths",
    "random_floor",
    "run_labelled",
    "summarize_labelled",
    "withheld_cutoffs",
]

_DASH = "\u2013"
_COLUMNS: Mapping[str, str] = {
    "recall@1": "R@1", "recall@3": "R@3", "recall@5": "R@5", "recall@10": "R@10",
    "recall@25": "R@25", "recall@50": "R@50", "hit@5": "hit@5", "hit@10": "hit@10",
    "mrr": "MRR", "ndcg@10": "nDCG@10",
}

QuestionKey = tuple[str, int]
"""A question's identity in a run: (conversation id, question index)."""


@dataclass(frozen=True, slots=True)
class FormatFix:
    """One repair or exclusion made while reading a file, for the run's log.

    ``where`` names the place in the file (pool, trajectory, question ids); ``kind`` is a short
    word the format's loader documents (e.g. ``ambiguous``, ``scalar_target``, ``no_gold``).
    ``namespace`` is the namespace (pool, item) the fix belongs to, ``None`` for the file as a
    whole: :meth:`LabelledDataset.head` keeps only the fixes of the namespaces it keeps.
    """

    where: str
    kind: str
    detail: str
    namespace: str | None = None

    def __str__(self) -> str:
        return f"{self.where}: {self.kind}: {self.detail}"

    def to_dict(self) -> dict[str, str]:
        """A JSON-ready dict."""
        return {"where": self.where, "kind": self.kind, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class LabelledDataset:
    """A non-LoCoMo file in the harness's shape, with what its report needs.

    ``kinds`` maps every question to its kind; questions whose kind is ``apart`` are kept out of
    ``main`` and reported under that name. ``extras`` adds fields to a question's record.
    ``parent`` maps every memory id to a coarser unit (a session) and ``parent_gold`` gives each
    question's gold units, when the format scores a second level; both empty otherwise.
    """

    format: str
    data: LocomoDataset
    kinds: Mapping[QuestionKey, str]
    fixes: tuple[FormatFix, ...]
    apart: str | None = None
    extras: Mapping[QuestionKey, Mapping[str, Any]] = field(default_factory=dict)
    parent: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    parent_gold: Mapping[QuestionKey, tuple[str, ...]] = field(default_factory=dict)
    parent_name: str = "session"

    @property
    def kind_order(self) -> tuple[str, ...]:
        """The kinds of the main set in order of first appearance, then the apart one."""
        seen = dict.fromkeys(k for k in self.kinds.values() if k != self.apart)
        return tuple(seen)

    def head(self, n: int) -> LabelledDataset:
        """The first ``n`` namespaces (pools, items), their questions and their data fixes (and
        the file-wide fixes): for quick runs."""
        data = self.data.head(n)
        ids = {c.id for c in data.conversations}

        def keep(mapping: Mapping[QuestionKey, Any]) -> dict[QuestionKey, Any]:
            return {key: value for key, value in mapping.items() if key[0] in ids}

        return replace(self, data=data, kinds=keep(self.kinds), extras=keep(self.extras),
                       fixes=tuple(f for f in self.fixes
                                   if f.namespace is None or f.namespace in ids),
                       parent={c: p for c, p in self.parent.items() if c in ids},
                       parent_gold=keep(self.parent_gold))

    @property
    def n_scorable(self) -> int:
        """Questions that can be scored at some level: with gold ids or gold parent units."""
        return sum(1 for c in self.data.conversations for q in c.questions
                   if q.gold or self.parent_gold.get((q.conversation_id, q.index)))

    def parent_only(self) -> list[Question]:
        """The questions with gold parent units but no gold ids: scored at the parent level
        only, in dataset order."""
        return [q for c in self.data.conversations for q in c.questions
                if not q.gold and self.parent_gold.get((q.conversation_id, q.index))]

    def kind_of(self, result: QuestionResult) -> str:
        """The kind of an asked question."""
        return self.kinds[(result.question.conversation_id, result.question.index)]

    def parent_ranking(self, result: QuestionResult) -> list[str]:
        """The question's ranking lifted to parent units: each id's parent, deduplicated."""
        parents = self.parent.get(result.question.conversation_id, {})
        return list(dict.fromkeys(parents[d] for d in result.ranking if d in parents))

    def parent_depth(self, result: QuestionResult, k: int) -> int | None:
        """How many parent units the lifted ranking scores exactly: the ranked ones, or
        ``None`` (every cut-off) when the ranking is complete: shorter than ``k`` (the
        retriever had no more to give) or reaching every parent of the namespace."""
        ranked = len(self.parent_ranking(result))
        parents = self.parent.get(result.question.conversation_id, {})
        if len(result.ranking) < k or ranked >= len(set(parents.values())):
            return None
        return ranked


def run_labelled(dataset: LabelledDataset, retriever: Retriever, *, k: int = 50,
                 progress: Progress | None = None,
                 clock: Callable[[], float] = time.perf_counter) -> RunResult:
    """:func:`~remem.eval.harness.run_locomo`, then the questions with parent gold only
    (:meth:`LabelledDataset.parent_only`), asked the same way; their results carry no
    item-level metrics. Results come in dataset order; the timing covers every query."""
    run = run_locomo(dataset.data, retriever, k=k, progress=progress, clock=clock)
    extra: list[QuestionResult] = []
    for question in dataset.parent_only():
        started = clock()
        ranking = list(retriever.rank(question.conversation_id, question.question, k))[:k]
        extra.append(QuestionResult(question, tuple(ranking), {},
                                    (clock() - started) * 1000.0))
    if not extra:
        return run
    order = {(q.conversation_id, q.index): i for i, q in enumerate(
        q for c in dataset.data.conversations for q in c.questions)}
    results = sorted((*run.results, *extra),
                     key=lambda r: order[(r.question.conversation_id, r.question.index)])
    timing = RunTiming(run.timing.ingest_s, tuple(r.latency_ms for r in results))
    return RunResult(tuple(results), timing, run.k)


def _sets(dataset: LabelledDataset, run: RunResult, level: str = "item"
          ) -> dict[str, list[QuestionResult]]:
    """The results of each set; at the item level only those with gold ids, at the parent
    level only those with gold parent units."""
    sets: dict[str, list[QuestionResult]] = {"main": []}
    sets.update({kind: [] for kind in dataset.kind_order})
    if dataset.apart is not None:
        sets[dataset.apart] = []
    for result in run.results:
        key = (result.question.conversation_id, result.question.index)
        if not (result.question.gold if level == "item" else dataset.parent_gold.get(key)):
            continue
        kind = dataset.kind_of(result)
        if kind != dataset.apart:
            sets["main"].append(result)
        sets[kind].append(result)
    return sets


def summarize_labelled(dataset: LabelledDataset, run: RunResult, *, resamples: int = 1000,
                       seed: int = 0, level: str = "item") -> dict[str, SetSummary]:
    """A :class:`SetSummary` for ``main``, each kind and the apart set.

    ``level="item"`` scores the rankings as they are, over the questions with gold ids;
    ``level="parent"`` scores them lifted to parent units
    (:meth:`LabelledDataset.parent_ranking`) against the parent gold, and gives ``None`` for a
    cut-off deeper than some question's exact depth (:func:`parent_depths`).
    """
    out: dict[str, SetSummary] = {}
    depths = parent_depths(dataset, run) if level == "parent" else {}
    for name, results in _sets(dataset, run, level).items():
        if level == "item":
            out[name] = summarize([r.metrics for r in results], resamples=resamples, seed=seed)
            continue
        rows = [question_metrics(dataset.parent_ranking(r), dataset.parent_gold[
            (r.question.conversation_id, r.question.index)]) for r in results]
        depth = depths[name]
        exact = [m for m in HEADLINE if depth is None or _cutoff(m) <= depth]
        summary = summarize(rows, exact, resamples=resamples, seed=seed)
        out[name] = SetSummary(summary.n, {m: summary.mean.get(m) for m in HEADLINE},
                               summary.ci)
    return out


def _cutoff(metric: str) -> int:
    """The cut-off of ``recall@10``-like metric names; 0 for those without one (MRR)."""
    _, at, depth = metric.partition("@")
    return int(depth) if at else 0


def parent_depths(dataset: LabelledDataset, run: RunResult) -> dict[str, int | None]:
    """Per set, the fewest parent units any of its questions' lifted rankings scores exactly
    (:meth:`LabelledDataset.parent_depth`); ``None`` when every ranking is complete."""
    out: dict[str, int | None] = {}
    for name, results in _sets(dataset, run, "parent").items():
        depths = [d for r in results if (d := dataset.parent_depth(r, run.k)) is not None]
        out[name] = min(depths, default=None)
    return out


def withheld_cutoffs(depths: Mapping[str, int | None]) -> dict[str, tuple[str, ...]]:
    """The headline metrics not reported for each set of ``depths`` (empty ones left out)."""
    out: dict[str, tuple[str, ...]] = {}
    for name, depth in depths.items():
        withheld = tuple(m for m in HEADLINE if depth is not None and _cutoff(m) > depth)
        if withheld:
            out[name] = withheld
    return out


def random_floor(dataset: LabelledDataset, *, k: int, seed: int) -> SetSummary:
    """The main set's metrics under a seeded random ranking: the floor to beat."""
    run = run_locomo(dataset.data, RandomRetriever(seed), k=k)
    return summarize_labelled(dataset, run, resamples=0)["main"]


def labelled_summary(dataset: LabelledDataset, sets: Mapping[str, SetSummary],
                     run: RunResult, config: Mapping[str, Any],
                     parent_sets: Mapping[str, SetSummary] | None = None) -> dict[str, Any]:
    """The ``--json`` document, in ``eval locomo``'s schema: ``main``, ``by_category`` (by
    kind), the apart set under its name, ``timing`` and ``config``; plus ``<parent>_level`` with
    the same sets scored on parent units when the format has them."""
    doc: dict[str, Any] = {
        "main": sets["main"].to_dict(),
        "by_category": {kind: sets[kind].to_dict() for kind in dataset.kind_order},
    }
    if dataset.apart is not None:
        doc[dataset.apart] = sets[dataset.apart].to_dict()
    if parent_sets is not None:
        doc[f"{dataset.parent_name}_level"] = {
            name: summary.to_dict() for name, summary in parent_sets.items()}
    doc["timing"] = run.timing.to_dict()
    doc["config"] = dict(config)
    return doc


def labelled_records(dataset: LabelledDataset, run: RunResult) -> Iterator[dict[str, Any]]:
    """One JSON-ready record per asked question (``questions.jsonl``), in dataset order."""
    for result in run.results:
        q = result.question
        key = (q.conversation_id, q.index)
        record: dict[str, Any] = {
            "conversation": q.conversation_id,
            "question_index": q.index,
            **dict(dataset.extras.get(key, {})),
            "question": q.question,
            "kind": dataset.kinds[key],
            "main": dataset.kinds[key] != dataset.apart,
            "answer": q.answer,
            "gold": list(q.gold),
            "ranking": list(result.ranking),
            # None at the item level for a question with parent gold only
            "metrics": {name: result.metrics.get(name) for name in HEADLINE},
            "latency_ms": result.latency_ms,
        }
        if key in dataset.parent_gold:
            record[f"{dataset.parent_name}_gold"] = list(dataset.parent_gold[key])
            record[f"{dataset.parent_name}_ranking"] = dataset.parent_ranking(result)
        yield record


def _cell(summary: SetSummary, metric: str, *, with_ci: bool) -> Text:
    value = summary.mean.get(metric)
    if value is None:
        return Text(_DASH, style="dim")
    text = Text(f"{value:.3f}")
    if with_ci and metric in summary.ci:
        low, high = summary.ci[metric]
        text.append(f"\n{low:.2f}{_DASH}{high:.2f}", style="dim")
    return text


def labelled_table(dataset: LabelledDataset, sets: Mapping[str, SetSummary], *,
                   title: str | None = None, floor: SetSummary | None = None,
                   seed: int = 0, resamples: int = 0,
                   unit: str = "messages", note: str | None = None) -> Table:
    """One row per set (main, each kind, the apart set) with n and every headline metric, the
    bootstrap interval under each figure when computed, then the random floor; ``note`` ends
    the caption."""
    caption = f"R@k = recall@k (fractions of the gold {unit} found in the top k)"
    if resamples:
        caption += f"; second lines: 95% bootstrap CI ({resamples} resamples over questions)"
    if note:
        caption += f"; {note}"
    table = Table(title=title, title_justify="left", caption=caption, caption_justify="left",
                  show_edge=False, pad_edge=False)
    table.add_column("set", no_wrap=True)
    table.add_column("n", justify="right", no_wrap=True)
    for metric in HEADLINE:
        table.add_column(_COLUMNS[metric], justify="right", no_wrap=True)
    names: Sequence[str] = ["main", *dataset.kind_order]
    if dataset.apart is not None:
        names = [*names, dataset.apart]
    last_main = dataset.kind_order[-1] if dataset.kind_order else "main"
    for name in names:
        summary = sets[name]
        label = "main" if name == "main" else name
        if name == "main" and dataset.apart is not None:
            label = f"main (without {dataset.apart})"
        table.add_row(Text(label, style="bold" if name == "main" else ""), str(summary.n),
                      *(_cell(summary, m, with_ci=True) for m in HEADLINE),
                      end_section=name in ("main", last_main))
    if floor is not None:
        table.add_row(Text(f"random (seed {seed})", style="dim italic"),
                      Text(str(floor.n), style="dim"),
                      *(Text(_cell(floor, m, with_ci=False).plain, style="dim")
                        for m in HEADLINE))
    return table
