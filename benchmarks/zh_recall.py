"""Chinese recall by query kind: keyword, vector and hybrid search on remem's own Chinese sets.

Two sets, both in ``tests/data`` (see its README):

* ``zh_daily.json``: everyday facts told to an assistant (MemDaily layout), 10 people, about
  150 messages each. Each person's messages are one pool (one namespace), the setting of the
  held-out MemDaily-kind figures in issue 22; questions are broken down by ``kind`` (``kw``
  keyword, ``para`` paraphrase sharing no content word with the evidence, ``fact`` numbers,
  dates and names, ``multi`` two or more messages, ``update`` the latest of superseded facts);
* ``zh_memories.json``: chat between two people (LoCoMo layout), by ``query_type``.

Each set goes into a fresh SQLite file with the real local embedder (multilingual-e5-small),
embedded once, then ranked in the three modes. Prints a table and writes JSON::

    .venv/bin/python benchmarks/zh_recall.py                 # both sets, all modes
    .venv/bin/python benchmarks/zh_recall.py --sets daily --modes keyword
    .venv/bin/python benchmarks/zh_recall.py --vector-cache /tmp/zh-vectors.npz

``--vector-cache`` keeps the embeddings in a file between runs (an experiment aid: change the
tokenizer, rerun, and only the keyword side is recomputed).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from remem.embed.base import Embedder  # noqa: E402
from remem.eval.harness import run_locomo  # noqa: E402
from remem.eval.locomo import (  # noqa: E402
    Conversation,
    LocomoDataset,
    load_locomo,
)
from remem.eval.memdaily import load_memdaily  # noqa: E402
from remem.eval.store_retriever import EvalMode, StoreRetriever, temporary_store  # noqa: E402
from vector_cache import CachedEmbedder  # noqa: E402

MODES: tuple[EvalMode, ...] = ("keyword", "vector", "hybrid")
METRICS = ("recall@5", "recall@10", "mrr")


def load_daily(path: Path) -> tuple[LocomoDataset, dict[tuple[str, int], str]]:
    """``zh_daily.json`` read as ``remem eval memdaily --pool trajectory`` reads it: each
    person's messages one pool (namespace), each question's ``kind`` its category."""
    labelled = load_memdaily(path, pool="trajectory")
    return labelled.data, dict(labelled.kinds)


def load_memories(path: Path) -> tuple[LocomoDataset, dict[tuple[str, int], str]]:
    """``zh_memories.json`` (LoCoMo layout), main set only, with each question's type."""
    dataset = load_locomo(path)
    raw = {c["sample_id"]: c["qa"] for c in json.loads(path.read_text(encoding="utf-8"))}
    kinds = {(q.conversation_id, q.index): raw[q.conversation_id][q.index]["query_type"]
             for c in dataset.conversations for q in c.questions}
    main = tuple(Conversation(c.id, c.speakers, c.turns,
                              tuple(q for q in c.questions if q.category != 5), c.now)
                 for c in dataset.conversations)
    return LocomoDataset(dataset.source, dataset.sha256, main, ()), kinds




def measure(dataset: LocomoDataset, kinds: dict[tuple[str, int], str], modes: Sequence[EvalMode],
            embedder: Embedder) -> dict[str, dict[str, dict[str, float]]]:
    """``{mode: {kind or "all": {metric: mean, "n": count}}}``."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    ingested: set[str] = set()
    with temporary_store("sqlite", embedder) as store:
        for mode in modes:
            run = run_locomo(dataset, StoreRetriever(store, mode, ingested=ingested), k=50)
            groups: dict[str, list[dict[str, float]]] = defaultdict(list)
            for result in run.results:
                q = result.question
                groups["all"].append(dict(result.metrics))
                groups[kinds[(q.conversation_id, q.index)]].append(dict(result.metrics))
            out[mode] = {name: {"n": float(len(rows)),
                                **{m: float(np.mean([r[m] for r in rows])) for m in METRICS}}
                         for name, rows in sorted(groups.items())}
            out[mode]["all"]["query_p50_ms"] = run.timing.percentile_ms(50) or 0.0
    return out


def table(name: str, figures: dict[str, dict[str, dict[str, float]]]) -> str:
    kinds = sorted({k for by_kind in figures.values() for k in by_kind},
                   key=lambda k: (k != "all", k))
    lines = [f"## {name}", "", "| mode | kind | n | R@5 | R@10 | MRR |",
             "|---|---|---|---|---|---|"]
    for mode, by_kind in figures.items():
        for kind in kinds:
            row = by_kind.get(kind)
            if row is None:
                continue
            lines.append(f"| {mode} | {kind} | {int(row['n'])} | {row['recall@5']:.3f} | "
                         f"{row['recall@10']:.3f} | {row['mrr']:.3f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", nargs="+", choices=("daily", "memories"),
                        default=["daily", "memories"])
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--vector-cache", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/zh_recall.json"))
    args = parser.parse_args(argv)

    from remem.embed.local import LocalEmbedder

    embedder: Any = LocalEmbedder()
    if args.vector_cache is not None:
        embedder = CachedEmbedder(embedder, args.vector_cache)
    report: dict[str, Any] = {"modes": args.modes, "sets": {}}
    for name in args.sets:
        dataset, kinds = (load_daily(DATA / "zh_daily.json") if name == "daily"
                          else load_memories(DATA / "zh_memories.json"))
        started = time.perf_counter()
        figures = measure(dataset, kinds, args.modes, embedder)
        report["sets"][name] = {"pools": len(dataset.conversations), "messages": dataset.n_turns,
                                "questions": sum(len(c.questions) for c in dataset.conversations),
                                "seconds": round(time.perf_counter() - started, 1),
                                "figures": figures}
        print(table(f"{name} ({dataset.n_turns} messages, "
                    f"{report['sets'][name]['questions']} questions)", figures))
        print()
    if isinstance(embedder, CachedEmbedder):
        embedder.save()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
