"""Chinese recall by query kind: keyword, vector and hybrid search on remem's own Chinese sets.

The sets, all in ``tests/data`` (see its README):

* ``zh_daily.json``: everyday facts told to an assistant (MemDaily layout), 10 people, about
  150 messages each. Each person's messages are one pool (one namespace), the setting of the
  held-out MemDaily-kind figures in issue 22; questions are broken down by ``kind`` (``kw``
  keyword, ``para`` paraphrase sharing no content word with the evidence, ``fact`` numbers,
  dates and names, ``multi`` two or more messages, ``update`` the latest of superseded facts);
* ``zh_memories.json``: chat between two people (LoCoMo layout), by ``query_type``;
* ``zh_roles.json`` (``--sets roles``): the harder MemDaily-kind set, 12 pools of 7-9 users;
  with ``--pool file`` (its pools as ``remem eval memdaily`` reads them) figures are per pool.

Each set goes into a fresh SQLite file with the real local embedder (multilingual-e5-small),
embedded once, then ranked in the three modes. Prints a table and writes JSON::

    .venv/bin/python benchmarks/zh_recall.py                 # both sets, all modes
    .venv/bin/python benchmarks/zh_recall.py --sets daily --modes keyword
    .venv/bin/python benchmarks/zh_recall.py --vector-cache /tmp/zh-vectors.npz
    .venv/bin/python benchmarks/zh_recall.py --modes --variants equal factor coverage default
    .venv/bin/python benchmarks/zh_recall.py --modes keyword hybrid --tokenizer bigrams

``--vector-cache`` keeps the embeddings in a file between runs (an experiment aid: change the
tokenizer, rerun, and only the keyword side is recomputed). ``--variants`` adds hybrid rankings
by name (:data:`VARIANTS`: the fusion choices of ``docs/search.md`` and recency), each
reported like a mode, with recall@10 per pool (one person, or one conversation) so a change
that helps one pool and hurts another shows. ``--tokenizer`` indexes with another
segmentation of Chinese (:data:`TOKENIZERS`, experiments that are not part of remem).
``--pool file`` puts all ten people of ``zh_daily`` in one namespace (a harder setting); the
per-pool figures then still break ``zh_daily`` down by person (trajectory), so the two
poolings compare person by person.

``--stages`` adds hybrid rankings with multi-evidence stages (``remem eval ... --stages``
lists, ``none`` for plain ranking), each reported like a mode, and prints how many pools each
raises and lowers against the first one. ``--rules english`` judges time expressions and
question turns by the English rules alone (as before they were bilingual), ``--rules ma``
counts only 吗, not 呢, as a question particle: experiments, to measure what the Chinese rules
are worth::

    .venv/bin/python benchmarks/zh_recall.py --modes --stages none timing questions \\
        timing,questions --vector-cache /tmp/zh-vectors.npz
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import timedelta
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
from remem.eval.store_retriever import EvalMode, StoreRetriever, stage_ranking  # noqa: E402
from remem.retrieval import Ranking, Recency  # noqa: E402
from remem.retrieval.context import CONTEXT_FIELD  # noqa: E402
from remem.retrieval.tokenize import DefaultTokenizer, Tokenizer  # noqa: E402
from remem.store import (  # noqa: E402
    BaseStore,
    IndexConfig,
    KeywordConfig,
    SQLiteStore,
    candidates,
)
from vector_cache import local_embedder, save_cache  # noqa: E402

MODES: tuple[EvalMode, ...] = ("keyword", "vector", "hybrid")
#: the sets by name, in tests/data (``roles``: MemDaily layout like ``daily``)
SETS = {"daily": "zh_daily.json", "memories": "zh_memories.json", "roles": "zh_roles.json"}
METRICS = ("recall@5", "recall@10", "mrr")

#: hybrid rankings by name: how keyword scores enter fusion for Chinese queries, and recency
#: (aged from the pool's last message, the protocol's "now")
VARIANTS: dict[str, Ranking] = {
    "equal": Ranking(han_keyword_factor=1.0, keyword_coverage="never"),
    "factor": Ranking(han_keyword_factor=0.5, keyword_coverage="never"),
    "coverage": Ranking(han_keyword_factor=1.0, keyword_coverage="han"),
    "default": Ranking(),
    "recency30": Ranking(recency=Recency(half_life=timedelta(days=30))),
    "recency90": Ranking(recency=Recency(half_life=timedelta(days=90))),
    "recency365": Ranking(recency=Recency(half_life=timedelta(days=365))),
}


class _SegmentedTokenizer:
    """The default tokenizer with its Chinese words replaced or extended (experiments)."""

    def __init__(self, label: str, han_terms: Callable[[str], Iterable[str]],
                 search_mode: bool = True) -> None:
        self.inner = DefaultTokenizer(search_mode=search_mode)
        self.label, self.han_terms = label, han_terms

    @property
    def name(self) -> str:
        return f"{self.inner.name}+{self.label}"

    def tokenize(self, text: str) -> list[str]:
        import re

        terms = self.inner.tokenize(text)
        for run in re.findall(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+", text):
            terms.extend(self.han_terms(run))
        return terms


def _bigrams(run: str) -> list[str]:
    # "#" marks them apart from jieba's two-character words
    return [f"#{run[i:i + 2]}" for i in range(len(run) - 1)]


def _characters(run: str) -> list[str]:
    from remem.retrieval.tokenize import CHINESE_STOPWORDS

    return [f"#{c}" for c in run if c not in CHINESE_STOPWORDS]


TOKENIZERS: dict[str, Callable[[], Tokenizer]] = {
    "default": DefaultTokenizer,
    "whole": lambda: DefaultTokenizer(search_mode=False),
    "bigrams": lambda: _SegmentedTokenizer("bigrams", _bigrams),
    "characters": lambda: _SegmentedTokenizer("chars", _characters),
}


class _PoolNow(StoreRetriever):
    """Recency ranked from each pool's own "now" (its last message), not the machine's."""

    def __init__(self, store: BaseStore, ranking: Ranking, nows: dict[str, Any],
                 ingested: set[str]) -> None:
        super().__init__(store, "hybrid", ranking, ingested=ingested)
        self.nows = nows

    def rank(self, conversation_id: str, question: str, k: int) -> list[str]:
        ranking = self.ranking
        if ranking is not None and ranking.recency is not None:
            ranking = replace(ranking, recency=replace(ranking.recency,
                                                       now=self.nows[conversation_id]))
        hits = self.store.search(self.namespace(conversation_id), query=question, limit=k,
                                 mode="hybrid", ranking=ranking)
        return [hit.key for hit in hits]


Groups = dict[tuple[str, int], str]


def load_daily(path: Path, pool: str = "trajectory"
               ) -> tuple[LocomoDataset, dict[tuple[str, int], str], Groups]:
    """``zh_daily.json`` read as ``remem eval memdaily --pool trajectory`` reads it: each
    person's messages one pool (namespace), each question's ``kind`` its category (``pool=
    "file"``: all in one pool); and each question's person (``"{file}#{tid}"``) whatever the
    pooling."""
    labelled = load_memdaily(path, pool=pool)  # type: ignore[arg-type]
    groups = {key: f"{path.stem}#{extra['tid']}" for key, extra in labelled.extras.items()}
    return labelled.data, dict(labelled.kinds), groups


def load_memories(path: Path) -> tuple[LocomoDataset, dict[tuple[str, int], str], Groups]:
    """``zh_memories.json`` (LoCoMo layout), main set only, with each question's type."""
    dataset = load_locomo(path)
    raw = {c["sample_id"]: c["qa"] for c in json.loads(path.read_text(encoding="utf-8"))}
    kinds = {(q.conversation_id, q.index): raw[q.conversation_id][q.index]["query_type"]
             for c in dataset.conversations for q in c.questions}
    main = tuple(Conversation(c.id, c.speakers, c.turns,
                              tuple(q for q in c.questions if q.category != 5), c.now)
                 for c in dataset.conversations)
    groups = {(q.conversation_id, q.index): q.conversation_id
              for c in main for q in c.questions}
    return LocomoDataset(dataset.source, dataset.sha256, main, ()), kinds, groups


@contextmanager
def _rules(name: str) -> Iterator[None]:
    """Judge time expressions and question turns by other rules for one run (an experiment:
    the store's candidate code reads the two functions from its module)."""
    from remem.retrieval import timing

    if name == "both":
        yield
        return
    saved = candidates.has_time_expression, candidates.is_question

    def english_question(text: str) -> bool:
        return timing._ASIDE.sub("", text).rstrip().endswith("?")

    def ma_question(text: str) -> bool:
        return english_question(text) or timing._ASIDE.sub("", text).rstrip().endswith(
            ("\uff1f", "吗"))

    if name == "english":
        candidates.has_time_expression = timing.has_english_time_expression
        candidates.is_question = english_question
    else:
        candidates.is_question = ma_question
    try:
        yield
    finally:
        candidates.has_time_expression, candidates.is_question = saved



def measure(dataset: LocomoDataset, kinds: dict[tuple[str, int], str], modes: Sequence[EvalMode],
            embedder: Embedder, variants: Sequence[str] = (),
            tokenizer: Tokenizer | None = None, stages: Sequence[str] = (),
            groups: Groups | None = None) -> dict[str, dict[str, dict[str, float]]]:
    """``{mode or variant: {kind, "all" or "pool:<id>": {metric: mean, "n": count}}}``."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    ingested: set[str] = set()
    nows = {c.id: c.now for c in dataset.conversations}
    runs: list[tuple[str, StoreRetriever]] = []
    with _store(embedder, tokenizer or DefaultTokenizer()) as store:
        runs = [(mode, StoreRetriever(store, mode, ingested=ingested)) for mode in modes]
        runs += [(name, _PoolNow(store, VARIANTS[name], nows, ingested)) for name in variants]
        runs += [(f"stages {names}", StoreRetriever(
            store, "hybrid", stage_ranking([] if names == "none" else names.split(",")),
            ingested=ingested)) for names in stages]
        for label, retriever in runs:
            run = run_locomo(dataset, retriever, k=50)
            by: dict[str, list[dict[str, float]]] = defaultdict(list)
            for result in run.results:
                q = result.question
                key = (q.conversation_id, q.index)
                by["all"].append(dict(result.metrics))
                by[kinds[key]].append(dict(result.metrics))
                by[f"pool:{(groups or {}).get(key, q.conversation_id)}"].append(
                    dict(result.metrics))
            out[label] = {name: {"n": float(len(rows)),
                                 **{m: float(np.mean([r[m] for r in rows])) for m in METRICS}}
                          for name, rows in sorted(by.items())}
            out[label]["all"]["query_p50_ms"] = run.timing.percentile_ms(50) or 0.0
    return out


class _store:
    """The store of ``remem eval`` (``temporary_store("sqlite", ...)``) with a chosen
    tokenizer, in a temporary directory."""

    def __init__(self, embedder: Embedder, tokenizer: Tokenizer) -> None:
        import tempfile

        self._dir = tempfile.TemporaryDirectory(prefix="remem-zh-")
        self.store = SQLiteStore(Path(self._dir.name) / "zh.db",
                                 index=IndexConfig(embedder=embedder, fields=("text",)),
                                 keyword=KeywordConfig(fields=("text", CONTEXT_FIELD),
                                                       tokenizer=tokenizer))

    def __enter__(self) -> SQLiteStore:
        return self.store.__enter__()

    def __exit__(self, *exc: object) -> None:
        self.store.__exit__(*exc)
        self._dir.cleanup()


def table(name: str, figures: dict[str, dict[str, dict[str, float]]]) -> str:
    kinds = sorted({k for by_kind in figures.values() for k in by_kind
                    if not k.startswith("pool:")}, key=lambda k: (k != "all", k))
    lines = [f"## {name}", "", "| mode | kind | n | R@5 | R@10 | MRR |",
             "|---|---|---|---|---|---|"]
    for mode, by_kind in figures.items():
        for kind in kinds:
            row = by_kind.get(kind)
            if row is None:
                continue
            lines.append(f"| {mode} | {kind} | {int(row['n'])} | {row['recall@5']:.3f} | "
                         f"{row['recall@10']:.3f} | {row['mrr']:.3f} |")
    pools = sorted({k for by_kind in figures.values() for k in by_kind if k.startswith("pool:")})
    lines += ["", "R@10 per pool: " + ", ".join(p.removeprefix("pool:") for p in pools)]
    first: dict[str, dict[str, float]] | None = None
    for mode, by_kind in figures.items():
        line = f"{mode}: " + " ".join(f"{by_kind[p]['recall@10']:.3f}" for p in pools)
        if first is None:
            first = by_kind
        else:  # pools this ranking raises and lowers against the first one, at R@10
            changes = [by_kind[p]["recall@10"] - first[p]["recall@10"] for p in pools]
            line += (f"  (vs first: {sum(c > 1e-9 for c in changes)} higher, "
                     f"{sum(c < -1e-9 for c in changes)} lower)")
        lines.append(line)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", nargs="+", choices=tuple(SETS),
                        default=["daily", "memories"])
    parser.add_argument("--modes", nargs="*", choices=MODES, default=list(MODES))
    parser.add_argument("--variants", nargs="*", choices=tuple(VARIANTS), default=[])
    parser.add_argument("--tokenizer", choices=tuple(TOKENIZERS), default="default")
    parser.add_argument("--pool", choices=("trajectory", "file"), default="trajectory",
                        help="zh_daily: one namespace per person, or all ten in one")
    parser.add_argument("--stages", nargs="*", default=[],
                        help="hybrid rankings with these --stages lists ('none': plain)")
    parser.add_argument("--rules", choices=("both", "english", "ma"), default="both",
                        help="time and question rules of the timing and questions stages")
    parser.add_argument("--vector-cache", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/zh_recall.json"))
    args = parser.parse_args(argv)

    embedder = local_embedder(args.vector_cache)
    report: dict[str, Any] = {"modes": args.modes, "variants": args.variants,
                              "stages": args.stages, "rules": args.rules, "pool": args.pool,
                              "tokenizer": args.tokenizer, "sets": {}}
    for name in args.sets:
        dataset, kinds, groups = (
            load_daily(DATA / SETS[name], args.pool) if name != "memories"
            else load_memories(DATA / SETS[name]))
        if name == "roles" and args.pool == "file":
            groups = {}  # its pools are files' groups of users: figures per pool
        started = time.perf_counter()
        with _rules(args.rules):
            figures = measure(dataset, kinds, args.modes, embedder, args.variants,
                              TOKENIZERS[args.tokenizer](), args.stages, groups)
        report["sets"][name] = {"pools": len(dataset.conversations), "messages": dataset.n_turns,
                                "questions": sum(len(c.questions) for c in dataset.conversations),
                                "seconds": round(time.perf_counter() - started, 1),
                                "figures": figures}
        print(table(f"{name} ({dataset.n_turns} messages, "
                    f"{report['sets'][name]['questions']} questions)", figures))
        print()
    save_cache(embedder)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
