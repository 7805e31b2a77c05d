"""Multi-evidence ranking stages on the LoCoMo dev split: a table per method, cheap to rerun.

Embedding is the slow part of an eval run (about 20 minutes on a loaded 2-core machine), and
every ranking stage reuses the same vectors, so the turns' and questions' vectors are cached on
disk (``--cache``, an ``.npz`` keyed by text hash and model) and the store is built once per
conversation; each method then re-asks every question with its own
:class:`~remem.retrieval.ranking.Ranking`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt

from remem.embed.base import Embedder
from vector_cache import CachedEmbedder

DEFAULT_DATA = "/work/shared/bench/locomo-dev/locomo-dev.json"


# -- the experiment ------------------------------------------------------------------------------

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field, replace  # noqa: E402

from remem.eval.facts import FactMemory, Units, UnitsRetriever, parse_facts  # noqa: E402
from remem.eval.harness import MAIN_CATEGORIES, scored_questions  # noqa: E402
from remem.eval.locomo import LocomoDataset, Question, load_locomo  # noqa: E402
from remem.eval.metrics import bootstrap_ci, recall_at_k  # noqa: E402
from remem.eval.store_retriever import StoreRetriever, temporary_store  # noqa: E402
from remem.retrieval.decompose import Decompose  # noqa: E402
from remem.retrieval.expansion import Entities, Feedback  # noqa: E402
from remem.retrieval.neighbours import Neighbours  # noqa: E402
from remem.retrieval.ranking import Ranking  # noqa: E402
from remem.retrieval.reports import SelfReports  # noqa: E402
from remem.retrieval.sessions import Sessions, Spread  # noqa: E402
from remem.retrieval.speakers import Speakers  # noqa: E402
from remem.retrieval.timing import QuestionTurns, Timing  # noqa: E402


@dataclass
class Scores:
    """Per-question recall@5/@10 of one method, and its query times."""

    r5: list[float] = field(default_factory=list)
    r10: list[float] = field(default_factory=list)
    ms: list[float] = field(default_factory=list)


def methods() -> dict[str, Ranking]:
    """Every method measured: the baseline and each stage over a small grid."""
    out: dict[str, Ranking] = {"baseline": Ranking()}
    for w in (0.1, 0.2, 0.4, 0.6, 0.8):
        for d in (1, 2, 3):
            out[f"sessions w={w} depth={d}"] = Ranking(sessions=Sessions(weight=w, depth=d))
    for p in (2, 3, 5):
        out[f"spread per_session={p}"] = Ranking(spread=Spread(per_session=p))
    for top in (1, 3, 5):
        for v in (0.3, 0.6, 1.0):
            out[f"feedback vector top={top} w={v}"] = Ranking(
                feedback=Feedback(top=top, vector=v))
    for top in (3, 5):
        for n, w in ((5, 0.1), (10, 0.1), (10, 0.2)):
            out[f"feedback terms top={top} n={n} w={w}"] = Ranking(
                feedback=Feedback(top=top, vector=0.0, terms=n, term_weight=w))
    for top in (1, 3, 5):
        for w in (0.05, 0.1, 0.2):
            out[f"entities top={top} w={w}"] = Ranking(entities=Entities(top=top, weight=w))
    for w in (0.05, 0.1, 0.2, 0.3):
        out[f"speakers w={w}"] = Ranking(speakers=Speakers(weight=w))
    best = Sessions(weight=0.6, depth=3)
    for w in (0.05, 0.1, 0.2):
        out[f"sessions+speakers w={w}"] = Ranking(sessions=best, speakers=Speakers(weight=w))
    for top, v in ((1, 0.3), (1, 0.6)):
        out[f"sessions+feedback top={top} w={v}"] = Ranking(
            sessions=best, feedback=Feedback(top=top, vector=v))
    for w in (0.1, 0.2):
        out[f"sessions+entities w={w}"] = Ranking(sessions=best, entities=Entities(weight=w))
    for w in (0.5, 0.6, 0.7):
        for d in (4, 5):
            out[f"sessions-deep w={w} depth={d}"] = Ranking(sessions=Sessions(weight=w, depth=d))
    for w in (0.4, 0.6, 0.8):
        for d in (2, 3):
            for sw in (0.1, 0.2, 0.3):
                out[f"joint sessions w={w} depth={d} speakers w={sw}"] = Ranking(
                    sessions=Sessions(weight=w, depth=d), speakers=Speakers(weight=sw))
    for c in (200,):
        out[f"candidates n={c}"] = Ranking(candidates=c)
    out.update(on_default())
    out.update(neighbour_methods())
    return out


DEFAULT = Ranking(sessions=Sessions(weight=0.6, depth=3), speakers=Speakers(weight=0.2))


def on_default() -> dict[str, Ranking]:
    """The stages of issue 22's second round, each on top of the default (sessions and
    speakers), compared with it (``--baseline default``)."""
    out: dict[str, Ranking] = {"default": DEFAULT}
    for w in (0.1, 0.2, 0.3, 0.5):
        out[f"+decompose w={w}"] = replace(DEFAULT, decompose=Decompose(weight=w))
    for w in (0.05, 0.1, 0.2, 0.3):
        out[f"+timing-when w={w}"] = replace(DEFAULT, timing=Timing(weight=w, only_when=True))
    for w in (0.02, 0.05, 0.1, 0.15, 0.2):
        out[f"+timing w={w}"] = replace(
            DEFAULT, timing=Timing(weight=w))
    for w in (0.05, 0.1, 0.2, 0.3):
        out[f"+questions w={w}"] = replace(DEFAULT, questions=QuestionTurns(weight=w))
    for q in (0.05, 0.1, 0.2):
        for t in (0.05, 0.1, 0.15):
            out[f"+questions+timing q={q} t={t}"] = replace(
                DEFAULT, questions=QuestionTurns(weight=q),
                timing=Timing(weight=t))
    kept = replace(DEFAULT, timing=Timing(weight=0.1), questions=QuestionTurns(weight=0.1))
    out["kept"] = kept
    for w in (0.05, 0.1, 0.2, 0.3):
        out[f"+reports w={w}"] = replace(kept, reports=SelfReports(weight=w))
    return out


KEPT = replace(DEFAULT, timing=Timing(weight=0.1), questions=QuestionTurns(weight=0.1))


def neighbour_methods() -> dict[str, Ranking]:
    """Issue 22's third round: neighbouring turns, each variant on top of the kept default
    stages (``--baseline kept``): a weight grid per side (previous turn, next turn, both),
    lenders limited to the top hits, without the questions stage, and with deeper candidate
    lists (what fetching neighbours that no signal found could add at most)."""
    out: dict[str, Ranking] = {"kept": KEPT}
    sides = {"both": (1, 1), "prev": (1, 0), "next": (0, 1), "both2": (2, 2)}
    for side, (before, after) in sides.items():
        finer = (0.25, 0.35, 0.4) if side == "next" else ()  # around the best point
        for w in sorted((0.05, 0.1, 0.2, 0.3, 0.5, *finer)):
            out[f"+neighbours-{side} w={w}"] = replace(
                KEPT, neighbours=Neighbours(weight=w, before=before, after=after))
    for top in (3, 5, 10):
        for w in (0.1, 0.2, 0.3, 0.5):
            out[f"+neighbours-top w={w} top={top}"] = replace(
                KEPT, neighbours=Neighbours(weight=w, before=1, after=1, top=top))
    no_questions = replace(KEPT, questions=None)
    out["-questions"] = no_questions
    for w in (0.05, 0.1, 0.2, 0.3):
        out[f"-questions+neighbours w={w}"] = replace(
            no_questions, neighbours=Neighbours(weight=w, before=1, after=1))
    for c in (200, 300):
        for w in (0.1, 0.2, 0.3):
            out[f"+neighbours-deep w={w} candidates={c}"] = replace(
                KEPT, candidates=c, neighbours=Neighbours(weight=w, before=1, after=1))
    return out


def family(name: str) -> str:
    """The method's family: the part of its name before the parameters."""
    return name.split(" ")[0]


def run(dataset: LocomoDataset, embedder: Embedder, rankings: dict[str, Ranking],
        questions: list[Question], units: Units = "turns",
        facts: dict[str, tuple[FactMemory, ...]] | None = None) -> dict[str, Scores]:
    """Each question under each ranking. ``units``: what is indexed (``"facts"``: LoCoMo's
    observations, scored through their source turns, as ``remem eval locomo --units``)."""
    results = {name: Scores() for name in rankings}
    with temporary_store("memory", embedder) as store:
        store_retriever = StoreRetriever(store, "hybrid")
        retriever: StoreRetriever | UnitsRetriever = (
            store_retriever if units == "turns"
            else UnitsRetriever(store_retriever, units, facts))
        for conversation in dataset.conversations:
            retriever.ingest(conversation.id, conversation.turns)
        for name, ranking in rankings.items():
            store_retriever.ranking = ranking
            scores = results[name]
            for q in questions:
                started = time.perf_counter()
                ranked = retriever.rank(q.conversation_id, q.question, 10)
                scores.ms.append((time.perf_counter() - started) * 1000)
                scores.r5.append(recall_at_k(ranked, q.gold, 5))
                scores.r10.append(recall_at_k(ranked, q.gold, 10))
            print(f"{name:<40} R@10 {np.mean(scores.r10):.4f}", file=sys.stderr, flush=True)
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", default=DEFAULT_DATA)
    parser.add_argument("--cache", default="/tmp/recall/vectors.npz")
    parser.add_argument("--only", default="", help="comma-separated families to run")
    parser.add_argument("--out", default="")
    parser.add_argument("--baseline", default="baseline",
                        help="the method the changes are measured against ('default': "
                             "sessions and speakers)")
    parser.add_argument("--units", choices=("facts", "both"),
                        help="index LoCoMo's generated observations (or turns and them) "
                             "and run the stage sets of the memory-level table")
    parser.add_argument("--through", choices=("store", "memory"), default="store",
                        help="memory: ingest with Memory.add(infer=False) and rank as "
                             "Memory.search does (the methods of memory_methods())")
    parser.add_argument("--latency", action="store_true",
                        help="time the default stages on a SQLite file with live query "
                             "embedding instead of the recall table")
    args = parser.parse_args(argv)
    from remem.embed.local import LocalEmbedder

    dataset = load_locomo(args.data)
    embedder = CachedEmbedder(LocalEmbedder(), args.cache)
    questions = [q for q in scored_questions(dataset) if q.category in MAIN_CATEGORIES]
    if args.latency and args.through == "memory":
        from memory_methods import memory_latency

        rows = memory_latency(dataset, embedder, LocalEmbedder(), questions, {
            "none": "none", "default (sessions,speakers,timing,questions)": None,
            "default + neighbours": "sessions,speakers,timing,questions,neighbours"})
        if args.out:
            Path(args.out).write_text(json.dumps(rows, indent=1))
        return
    if args.latency:
        latency(dataset, embedder, LocalEmbedder(), questions, args.out)
        return
    if args.through == "memory":
        from memory_methods import memory_methods, run_memory

        grid = memory_methods()
        if args.only:
            keep = {"product", *args.only.split(",")}
            grid = {n: m for n, m in grid.items() if family(n) in keep}
        results = run_memory(dataset, embedder, grid, questions,
                             f"{args.out}.partial.jsonl" if args.out else None)
        embedder.save()
        report(results, questions, [c.id for c in dataset.conversations], args.out, "product")
        return
    rankings = methods()
    if args.only:
        keep = {"baseline", args.baseline, *args.only.split(",")}
        rankings = {n: r for n, r in rankings.items() if family(n) in keep}
    facts = None
    if args.units:
        from remem.eval.store_retriever import stage_ranking

        facts, _ = parse_facts(json.loads(Path(args.data).read_text()), dataset,
                               source=args.data)
        rankings = {"baseline": Ranking(), **{
            name: stage_ranking(name.split(",")) for name in (
                "sessions", "speakers", "sessions,speakers",
                "sessions,speakers,timing,questions")}}
        args.baseline = "baseline"
    results = run(dataset, embedder, rankings, questions, args.units or "turns", facts)
    embedder.save()
    report(results, questions, [c.id for c in dataset.conversations], args.out, args.baseline)


def report(results: dict[str, Scores], questions: list[Question], conversations: list[str],
           out: str, baseline: str = "baseline") -> None:
    base = results[baseline]
    conv = np.array([q.conversation_id for q in questions])
    cat = np.array([q.category for q in questions])
    rows = []
    print("| method | R@5 | R@10 [95% CI] | dR@10 [paired 95% CI] | dR@10 per conversation "
          "| multi-hop | open-domain | p50 ms |")
    print("|---|---|---|---|---|---|---|---|")
    for name, s in results.items():
        r10, b10 = np.array(s.r10), np.array(base.r10)
        low, high = bootstrap_ci(r10, resamples=2000)[:, 0]
        per = [float(r10[conv == c].mean() - b10[conv == c].mean()) for c in conversations]
        # paired: the bootstrap of the per-question differences from the baseline
        d_low, d_high = bootstrap_ci(r10 - b10, resamples=2000)[:, 0]
        row = {"method": name, "r5": float(np.mean(s.r5)), "r10": float(r10.mean()),
               "ci": [float(low), float(high)], "delta_by_conversation": per,
               "delta": float((r10 - b10).mean()), "delta_ci": [float(d_low), float(d_high)],
               "multi_hop": float(r10[cat == 1].mean()), "open_domain": float(r10[cat == 3].mean()),
               "p50_ms": float(np.median(s.ms))}
        rows.append(row)
        print(f"| {name} | {row['r5']:.3f} | {row['r10']:.3f} [{low:.3f}, {high:.3f}] | "
              f"{row['delta']:+.3f} [{d_low:+.3f}, {d_high:+.3f}] | "
              + " ".join(f"{d:+.3f}" for d in per)
              + f" | {row['multi_hop']:.3f} | {row['open_domain']:.3f} | {row['p50_ms']:.1f} |")
    print()
    print(cross_validate(results, conv, conversations, baseline))
    if out:
        Path(out).write_text(json.dumps(rows, indent=1))


def cross_validate(results: dict[str, Scores], conv: npt.NDArray[np.str_],
                   conversations: list[str], baseline: str = "baseline") -> str:
    """Leave one conversation out: per family, the parameter chosen on the other three and
    its recall@10 on the one left out, against the baseline's."""
    base = np.array(results[baseline].r10)
    lines = ["| family | chosen per held-out conversation | CV R@10 | baseline | wins |",
             "|---|---|---|---|---|"]
    families: dict[str, list[str]] = {}
    for name in results:
        if name not in ("baseline", baseline):
            families.setdefault(family(name), []).append(name)
    for fam, names in families.items():
        held, chosen, wins = [], [], 0
        for c in conversations:
            train = conv != c
            best = max(names, key=lambda n: np.array(results[n].r10)[train].mean())
            chosen.append(best.removeprefix(fam).strip())
            test = np.array(results[best].r10)[~train]
            held.append(test)
            wins += int(test.mean() > base[~train].mean())
        cv = float(np.concatenate(held).mean())
        lines.append(f"| {fam} | {'; '.join(chosen)} | {cv:.3f} | {base.mean():.3f} | "
                     f"{wins}/{len(conversations)} |")
    return "\n".join(lines)


def latency(dataset: LocomoDataset, embedder: CachedEmbedder, live: Embedder,
            questions: list[Question], out: str) -> None:
    """Per question: the live query embedding (the local model, timed once per question)
    plus the search on a SQLite file (vectors from the cache), per stage set; p50/p95 in ms,
    wall clock and the search's CPU time, and each stage set's added search time."""
    from remem.eval.store_retriever import stage_ranking

    sets = {"none": [], "sessions": ["sessions"], "speakers": ["speakers"],
            "sessions,speakers": ["sessions", "speakers"], "spread": ["spread"],
            "feedback": ["feedback"], "entities": ["entities"], "timing": ["timing"],
            "questions": ["questions"], "decompose": ["decompose"],
            "sessions,speakers,timing,questions (default)": ["sessions", "speakers",
                                                             "timing", "questions"],
            "neighbours": ["neighbours"],
            "default + neighbours": ["sessions", "speakers", "timing", "questions",
                                     "neighbours"]}
    embed_ms = []
    for q in questions:
        started = time.perf_counter()
        live.embed_queries([q.question])
        embed_ms.append((time.perf_counter() - started) * 1000)
    wall: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    with temporary_store("sqlite", embedder) as store:
        retriever = StoreRetriever(store, "hybrid")
        for conversation in dataset.conversations:
            retriever.ingest(conversation.id, conversation.turns)
        for q in questions[:20]:  # warm the page cache and the query-vector memo
            retriever.rank(q.conversation_id, q.question, 10)
        for name, stages in sets.items():
            retriever.ranking = stage_ranking(stages)
            wall[name], cpu[name] = [], []
            for q in questions:
                w0, c0 = time.perf_counter(), time.process_time()
                retriever.rank(q.conversation_id, q.question, 10)
                cpu[name].append((time.process_time() - c0) * 1000)
                wall[name].append((time.perf_counter() - w0) * 1000)
    embed = np.array(embed_ms)
    print(f"query embedding (local model): p50 {np.median(embed):.1f} ms, "
          f"p95 {np.percentile(embed, 95):.1f} ms")
    print("| stages | search p50 / p95 ms | search CPU p50 ms | added search ms (median) "
          "| with embedding p50 / p95 ms |")
    print("|---|---|---|---|---|")
    rows = []
    for name in sets:
        search, total = np.array(wall[name]), np.array(wall[name]) + embed
        added = float(np.median(np.array(cpu[name]) - np.array(cpu["none"])))
        row = {"stages": name, "search_p50": float(np.median(search)),
               "search_p95": float(np.percentile(search, 95)),
               "cpu_p50": float(np.median(cpu[name])), "added_cpu_ms": added,
               "total_p50": float(np.median(total)), "total_p95": float(np.percentile(total, 95))}
        rows.append(row)
        print(f"| {name} | {row['search_p50']:.1f} / {row['search_p95']:.1f} | "
              f"{row['cpu_p50']:.1f} | {added:+.2f} | "
              f"{row['total_p50']:.1f} / {row['total_p95']:.1f} |")
    if out:
        Path(out).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
