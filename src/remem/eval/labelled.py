"""Datasets in other formats (MemDaily, LongMemEval) in the harness's shape, and their report.

A format's loader turns its file into a :class:`~remem.eval.locomo.LocomoDataset` (one
"conversation" per namespace, one :class:`~remem.eval.locomo.TurnMemory` per message, questions
with gold ids) plus what LoCoMo's fixed categories cannot say: each question's **kind** (the
format's own question type), which kind is reported **apart** from the main set (LongMemEval's
abstention questions, like LoCoMo's category 5), per-question extras for the records, the
format's data fixes, and optionally a second level of ids (LongMemEval's sessions) at which the
same rankings are scored again.

The report has the same schema as ``remem eval locomo``: ``main``, ``by_category`` (keyed by
kind), the apart set under its own name, ``timing`` and ``config``. Pure: nothing here prints.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rich.table import Table
from rich.text import Text

from remem.eval.harness import QuestionResult, RunResult, run_locomo
from remem.eval.locomo import LocomoDataset
from remem.eval.metrics import HEADLINE, SetSummary, question_metrics, summarize
from remem.eval.retrievers import RandomRetriever

__all__ = [
    "FormatFix",
    "LabelledDataset",
    "labelled_records",
    "labelled_summary",
    "labelled_table",
    "random_floor",
    "summarize_labelled",
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
    """

    where: str
    kind: str
    detail: str

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
        """The first ``n`` namespaces (pools, items) and their questions: for quick runs."""
        data = self.data.head(n)
        ids = {c.id for c in data.conversations}

        def keep(mapping: Mapping[QuestionKey, Any]) -> dict[QuestionKey, Any]:
            return {key: value for key, value in mapping.items() if key[0] in ids}

        return replace(self, data=data, kinds=keep(self.kinds), extras=keep(self.extras),
                       parent={c: p for c, p in self.parent.items() if c in ids},
                       parent_gold=keep(self.parent_gold))

    def kind_of(self, result: QuestionResult) -> str:
        """The kind of an asked question."""
        return self.kinds[(result.question.conversation_id, result.question.index)]

    def parent_ranking(self, result: QuestionResult) -> list[str]:
        """The question's ranking lifted to parent units: each id's parent, deduplicated."""
        parents = self.parent.get(result.question.conversation_id, {})
        return list(dict.fromkeys(parents[d] for d in result.ranking if d in parents))


def _sets(dataset: LabelledDataset, run: RunResult) -> dict[str, list[QuestionResult]]:
    sets: dict[str, list[QuestionResult]] = {"main": []}
    sets.update({kind: [] for kind in dataset.kind_order})
    if dataset.apart is not None:
        sets[dataset.apart] = []
    for result in run.results:
        kind = dataset.kind_of(result)
        if kind != dataset.apart:
            sets["main"].append(result)
        sets[kind].append(result)
    return sets


def summarize_labelled(dataset: LabelledDataset, run: RunResult, *, resamples: int = 1000,
                       seed: int = 0, level: str = "item") -> dict[str, SetSummary]:
    """A :class:`SetSummary` for ``main``, each kind and the apart set.

    ``level="item"`` scores the rankings as they are; ``level="parent"`` scores them lifted to
    parent units (:meth:`LabelledDataset.parent_ranking`) against the parent gold.
    """
    out: dict[str, SetSummary] = {}
    for name, results in _sets(dataset, run).items():
        if level == "item":
            rows = [r.metrics for r in results]
        else:
            rows = [question_metrics(dataset.parent_ranking(r), gold)
                    for r in results
                    if (gold := dataset.parent_gold.get(
                        (r.question.conversation_id, r.question.index)))]
        out[name] = summarize(rows, resamples=resamples, seed=seed)
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
            "metrics": {name: result.metrics[name] for name in HEADLINE},
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
                   unit: str = "messages") -> Table:
    """One row per set (main, each kind, the apart set) with n and every headline metric, the
    bootstrap interval under each figure when computed, then the random floor."""
    caption = f"R@k = recall@k (fractions of the gold {unit} found in the top k)"
    if resamples:
        caption += f"; second lines: 95% bootstrap CI ({resamples} resamples over questions)"
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
