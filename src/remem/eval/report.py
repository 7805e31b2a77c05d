"""What a run reports: the summary object (``--json``, ``summary.json``), the per-question
records (``questions.jsonl``) and the table for humans. Pure: nothing here prints or writes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from rich.table import Table
from rich.text import Text

from remem.eval.harness import SET_NAMES, RunResult, RunTiming
from remem.eval.locomo import CATEGORY_NAMES
from remem.eval.metrics import HEADLINE, SetSummary

_DASH = "\u2013"  # en dash, for ranges

__all__ = ["SET_LABELS", "question_records", "results_table", "summary_object", "timing_line"]

SET_LABELS: Mapping[str, str] = {
    "main": f"main (cat 1{_DASH}4)",
    **{str(c): f"cat {c} {CATEGORY_NAMES[c]}" for c in (1, 2, 3, 4)},
    "cat5": f"cat 5 {CATEGORY_NAMES[5]}",
}
"""How the table names each set: always with LoCoMo's category number."""

_COLUMNS: Mapping[str, str] = {
    "recall@1": "R@1", "recall@3": "R@3", "recall@5": "R@5", "recall@10": "R@10",
    "recall@25": "R@25", "recall@50": "R@50", "hit@5": "hit@5", "hit@10": "hit@10",
    "mrr": "MRR", "ndcg@10": "nDCG@10",
}


def summary_object(sets: Mapping[str, SetSummary], timing: RunTiming,
                   config: Mapping[str, Any]) -> dict[str, Any]:
    """The ``--json`` document: ``main``, ``by_category`` (``"1"`` to ``"4"``), ``cat5`` (each
    ``{"n", metric...}``, fractions in 0..1, ``null`` for an empty set), ``timing`` and
    ``config``."""
    return {
        "main": sets["main"].to_dict(),
        "by_category": {c: sets[c].to_dict() for c in ("1", "2", "3", "4")},
        "cat5": sets["cat5"].to_dict(),
        "timing": timing.to_dict(),
        "config": dict(config),
    }


def question_records(run: RunResult) -> Iterator[dict[str, Any]]:
    """One JSON-ready record per asked question, in dataset order (``questions.jsonl``)."""
    for result in run.results:
        q = result.question
        yield {
            "conversation": q.conversation_id,
            "question_index": q.index,
            "question": q.question,
            "category": q.category,
            "main": q.category != 5,
            "answer": q.answer,
            "gold": list(q.gold),
            "ranking": list(result.ranking),
            "metrics": {name: result.metrics[name] for name in HEADLINE},
            "latency_ms": result.latency_ms,
        }


def _cell(summary: SetSummary, metric: str, *, with_ci: bool) -> Text:
    value = summary.mean.get(metric)
    if value is None:
        return Text(_DASH, style="dim")
    text = Text(f"{value:.3f}")
    if with_ci and metric in summary.ci:
        low, high = summary.ci[metric]
        text.append(f"\n{low:.2f}{_DASH}{high:.2f}", style="dim")
    return text


def results_table(sets: Mapping[str, SetSummary], *, random_floor: SetSummary | None = None,
                  random_seed: int = 0, resamples: int = 0) -> Table:
    """One row per set (main, categories 1-4, category 5) with n and every headline metric;
    under each figure its bootstrap 95% interval when one was computed; then the random floor
    of the main set."""
    caption = "R@k = recall@k (fractions of the gold turns found in the top k)"
    if resamples:
        caption += f"; second lines: 95% bootstrap CI ({resamples} resamples over questions)"
    table = Table(caption=caption, caption_justify="left", show_edge=False, pad_edge=False)
    table.add_column("set", no_wrap=True)
    table.add_column("n", justify="right", no_wrap=True)
    for metric in HEADLINE:
        table.add_column(_COLUMNS[metric], justify="right", no_wrap=True)
    for name in SET_NAMES:
        summary = sets[name]
        table.add_row(Text(SET_LABELS[name], style="bold" if name == "main" else ""),
                      str(summary.n),
                      *(_cell(summary, m, with_ci=True) for m in HEADLINE),
                      end_section=name in ("main", "4"))
    if random_floor is not None:
        table.add_row(Text(f"random (seed {random_seed})", style="dim italic"),
                      Text(str(random_floor.n), style="dim"),
                      *(Text(_cell(random_floor, m, with_ci=False).plain, style="dim")
                        for m in HEADLINE))
    return table


def timing_line(timing: RunTiming, n_turns: int) -> str:
    """``ingest 12.3 s for 2080 turns · query p50 4.1 ms, p95 6.0 ms (582 queries)``."""
    p50, p95 = timing.percentile_ms(50), timing.percentile_ms(95)
    line = f"ingest {timing.ingest_s:.2f} s for {n_turns} turns"
    if p50 is not None and p95 is not None:
        line += f" · query p50 {p50:.1f} ms, p95 {p95:.1f} ms ({len(timing.query_ms)} queries)"
    return line
