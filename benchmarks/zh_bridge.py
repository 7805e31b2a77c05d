"""The Chinese entity bridge measured: the ``entities`` stage over remem's own Chinese sets.

The ``entities`` stage (:class:`remem.retrieval.Entities`) searches again with the names of a
first pass's top hits. In Chinese those are person names by jieba's part-of-speech tags
(:func:`remem.retrieval.expansion.han_names`); before them it read capitalised English words
only, which Chinese text has almost none of. This script ranks each set with plain hybrid
search and with the stage in a few settings, and prints recall@10 by kind, the change per
pool (namespace) against plain hybrid, and the query time:

* ``zh_roles.json`` (people the users know, MemDaily file layout: 12 pools of 7-9 users),
  ``--pool file`` (the held-out setting) and ``trajectory`` (one user per namespace);
* ``zh_daily.json`` (10 people's everyday facts), ``--pool trajectory`` and ``file``;
* ``zh_memories.json`` (chat between two people, LoCoMo layout, main questions).

Variants (``--variants``; :data:`VARIANTS`): ``hybrid`` (no stage), ``entities`` (the stage as
shipped, weight 0.2, top 3), ``en-only`` (the stage reading capitalised words only: the stage
before the Chinese bridge, patched in for this comparison), ``terms`` (every multi-character
Chinese word of the top hits instead of the names: the "rare terms" alternative, patched in),
``pieces`` (names plus their two-character pieces, patched in), weight/depth settings, the
same stacked on ``sessions`` (``remem eval memdaily``'s default), and pseudo-relevance
feedback terms for comparison. The default run leaves out ``pieces``, ``top1`` and the
feedback rows (name them with ``--variants``). Keyword and vector modes give the gap to
hybrid. One SQLite file per set with the local embedder (``--vector-cache`` keeps vectors
between runs)::

    .venv/bin/python benchmarks/zh_bridge.py --vector-cache /tmp/zh-vectors.npz
    .venv/bin/python benchmarks/zh_bridge.py --sets roles-file --variants hybrid entities
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import remem.store.candidates as candidates  # noqa: E402
from remem.eval.harness import run_locomo  # noqa: E402
from remem.eval.locomo import Conversation, LocomoDataset, load_locomo  # noqa: E402
from remem.eval.memdaily import load_memdaily  # noqa: E402
from remem.eval.store_retriever import EvalMode, StoreRetriever, temporary_store  # noqa: E402
from remem.retrieval import Ranking  # noqa: E402
from remem.retrieval.expansion import Entities, Feedback, proper_nouns  # noqa: E402
from remem.retrieval.sessions import Sessions  # noqa: E402
from vector_cache import local_embedder, save_cache  # noqa: E402

#: hybrid rankings by name, with the name extraction they run under (None: the shipped one)
VARIANTS: dict[str, tuple[Ranking, str | None]] = {
    "hybrid": (Ranking(), None),
    "entities": (Ranking(entities=Entities()), None),
    "en-only": (Ranking(entities=Entities()), "en-only"),
    "terms": (Ranking(entities=Entities()), "terms"),
    "w0.1": (Ranking(entities=Entities(weight=0.1)), None),
    "w0.3": (Ranking(entities=Entities(weight=0.3)), None),
    "w0.5": (Ranking(entities=Entities(weight=0.5)), None),
    "top5": (Ranking(entities=Entities(top=5)), None),
    "top1": (Ranking(entities=Entities(top=1)), None),
    # each trajectory (MemDaily) or session (LoCoMo) is a session: the sessions stage
    "sessions": (Ranking(sessions=Sessions(field="session")), None),
    "sessions+entities": (Ranking(sessions=Sessions(field="session"), entities=Entities()),
                          None),
    "sessions+w0.3": (Ranking(sessions=Sessions(field="session"),
                              entities=Entities(weight=0.3)), None),
    "sessions+w0.5": (Ranking(sessions=Sessions(field="session"),
                              entities=Entities(weight=0.5)), None),
    "sessions+top1": (Ranking(sessions=Sessions(field="session"), entities=Entities(top=1)),
                      None),
    "sessions+top1-w0.3": (Ranking(sessions=Sessions(field="session"),
                                   entities=Entities(top=1, weight=0.3)), None),
    # pseudo-relevance feedback terms: the top hit's most distinctive terms (its name among
    # them) as the second keyword query, the bridge's nearest alternative
    "sessions+fb-terms": (Ranking(sessions=Sessions(field="session"),
                                  feedback=Feedback(top=1, vector=0.0, terms=3)), None),
    "sessions+fb-terms3": (Ranking(sessions=Sessions(field="session"),
                                   feedback=Feedback(top=3, vector=0.0, terms=5)), None),
    "pieces": (Ranking(entities=Entities()), "pieces"),
    "sessions+pieces": (Ranking(sessions=Sessions(field="session"), entities=Entities()),
                        "pieces"),
    "sessions+pieces-w0.5": (Ranking(sessions=Sessions(field="session"),
                                     entities=Entities(weight=0.5)), "pieces"),
}
MODES: tuple[EvalMode, ...] = ("keyword", "vector")
SETS = ("roles-file", "roles-trajectory", "daily-trajectory", "daily-file", "memories")
_HAN_WORDS = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{2,}")


def _english_only(text: str) -> list[str]:
    """The extraction before the Chinese bridge: capitalised words not starting a sentence,
    a Latin word running on into Han characters ("去Boston出差" is one word, not capitalised)."""
    found: dict[str, None] = {}
    for match in _OLD_WORD.finditer(text):
        word = match.group()
        before = text[:match.start()]
        if len(word) >= 2 and word[0].isupper() and before.strip() \
                and not _OLD_SENTENCE_END.search(before):
            found.setdefault(word, None)
    return list(found)


_OLD_WORD = re.compile("[^\\W\\d_][\\w'\u2019-]*")
_OLD_SENTENCE_END = re.compile('[.!?:;\\n"\u201c]\\s*$')


def _han_terms(text: str) -> list[str]:
    import rjieba

    words = [w for run in _HAN_WORDS.findall(text) for w in rjieba.cut(run) if len(w) >= 2]
    latin = [w for w in proper_nouns(text) if not _HAN_WORDS.search(w)]
    return list(dict.fromkeys([*latin, *words]))


def _names_and_pieces(text: str) -> list[str]:
    """The shipped names, and each three-character name's two-character pieces (jieba cuts a
    name differently in different sentences: 闵承志 as 闵承 + 志 or 闵 + 承志)."""
    names = proper_nouns(text)
    pieces = [p for n in names if len(n) == 3 and _HAN_WORDS.fullmatch(n)
              for p in (n[:2], n[1:])]
    return list(dict.fromkeys([*names, *pieces]))


EXTRACTORS: dict[str, Callable[[str], list[str]]] = {"en-only": _english_only,
                                                     "terms": _han_terms,
                                                     "pieces": _names_and_pieces}


@contextmanager
def _extraction(name: str | None) -> Iterator[None]:
    """Run the stage with another name extraction (an experiment: the shipped code reads
    :func:`proper_nouns`)."""
    if name is None:
        yield
        return
    shipped = candidates.proper_nouns
    candidates.proper_nouns = EXTRACTORS[name]
    try:
        yield
    finally:
        candidates.proper_nouns = shipped


def load(name: str) -> tuple[LocomoDataset, dict[tuple[str, int], str]]:
    """A set as ``remem eval`` reads it, with each question's kind: MemDaily files by
    ``kind`` (``--pool file`` or ``trajectory``), ``zh_memories`` (main questions) by
    ``query_type``."""
    if name != "memories":
        set_name, pool = name.split("-")
        labelled = load_memdaily(DATA / f"zh_{set_name}.json", pool=pool)  # type: ignore[arg-type]
        return labelled.data, dict(labelled.kinds)
    path = DATA / "zh_memories.json"
    dataset = load_locomo(path)
    raw = {c["sample_id"]: c["qa"] for c in json.loads(path.read_text(encoding="utf-8"))}
    kinds = {(q.conversation_id, q.index): raw[q.conversation_id][q.index]["query_type"]
             for c in dataset.conversations for q in c.questions}
    main = tuple(Conversation(c.id, c.speakers, c.turns,
                              tuple(q for q in c.questions if q.category != 5), c.now)
                 for c in dataset.conversations)
    return LocomoDataset(dataset.source, dataset.sha256, main, ()), kinds


def measure(dataset: LocomoDataset, kinds: dict[tuple[str, int], str], embedder: Any,
            variants: Sequence[str]) -> dict[str, Any]:
    """``{label: {"kinds": {kind: R@10}, "pools": {pool: R@10}, "n": ..., "p50_ms": ...}}``."""
    out: dict[str, Any] = {}
    ingested: set[str] = set()
    with temporary_store("sqlite", embedder) as store:
        runs: list[tuple[str, EvalMode, Ranking | None, str | None]] = [
            (mode, mode, None, None) for mode in MODES]
        runs += [(name, "hybrid", *VARIANTS[name]) for name in variants]
        for label, mode, ranking, extraction in runs:
            retriever = StoreRetriever(store, mode, ranking, ingested=ingested)
            with _extraction(extraction):
                run = run_locomo(dataset, retriever, k=50)
            by_kind: dict[str, list[float]] = defaultdict(list)
            by_pool: dict[str, list[float]] = defaultdict(list)
            for result in run.results:
                q = result.question
                r10 = float(result.metrics["recall@10"])
                by_kind["all"].append(r10)
                by_kind[kinds[(q.conversation_id, q.index)]].append(r10)
                by_pool[q.conversation_id].append(r10)
            out[label] = {
                "kinds": {k: float(np.mean(v)) for k, v in sorted(by_kind.items())},
                "n": {k: len(v) for k, v in sorted(by_kind.items())},
                "pools": {k: float(np.mean(v)) for k, v in sorted(by_pool.items())},
                "p50_ms": run.timing.percentile_ms(50) or 0.0,
                "p95_ms": run.timing.percentile_ms(95) or 0.0,
            }
    return out


def table(name: str, figures: dict[str, Any]) -> str:
    kinds = list(figures["hybrid"]["kinds"]) if "hybrid" in figures else []
    n = figures[next(iter(figures))]["n"]
    lines = [f"## {name}", "",
             "| ranking | " + " | ".join(f"{k} ({n[k]})" for k in kinds)
             + " | pools up/down vs hybrid | p50 ms | p95 ms |",
             "|---" * (len(kinds) + 4) + "|"]
    base = figures.get("hybrid", {}).get("pools", {})
    for label, row in figures.items():
        ups = sum(row["pools"][p] > base[p] + 1e-9 for p in base)
        downs = sum(row["pools"][p] < base[p] - 1e-9 for p in base)
        lines.append(f"| {label} | " + " | ".join(f"{row['kinds'][k]:.3f}" for k in kinds)
                     + f" | {ups}/{downs} of {len(base)} | {row['p50_ms']:.1f} | "
                       f"{row['p95_ms']:.1f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", nargs="+", choices=SETS, default=list(SETS))
    parser.add_argument("--variants", nargs="+", choices=tuple(VARIANTS),
                        default=["hybrid", "entities", "en-only", "terms", "w0.1", "w0.3",
                                 "w0.5", "top5", "sessions", "sessions+entities",
                                 "sessions+w0.3"])
    parser.add_argument("--vector-cache", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/zh_bridge.json"))
    args = parser.parse_args(argv)

    embedder = local_embedder(args.vector_cache)
    report: dict[str, Any] = {}
    for name in args.sets:
        dataset, kinds = load(name)
        started = time.perf_counter()
        figures = measure(dataset, kinds, embedder, args.variants)
        report[name] = {"pools": len(dataset.conversations), "messages": dataset.n_turns,
                        "seconds": round(time.perf_counter() - started, 1), "figures": figures}
        print(table(f"{name} ({len(dataset.conversations)} pools, {dataset.n_turns} messages)"
                    ", recall@10", figures))
        print(flush=True)
        save_cache(embedder)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, ensure_ascii=False, indent=2) + "\n",
                        encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
