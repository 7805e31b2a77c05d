"""Ranking stages as ``remem eval longmemeval`` runs them, on LoCoMo-layout data rewritten in the
LongMemEval format (a stand-in: no LongMemEval data is in the repository).

Each main question (categories 1-4) of a LoCoMo-layout file becomes one LongMemEval item whose
haystack is its whole conversation: every session a haystack session dated by the session's
date, the first speaker's turns ``user`` and the second's ``assistant``, the evidence turns
``has_answer``; the speaker's name that starts each LoCoMo turn is dropped. The file is then
read by :func:`remem.eval.longmemeval.parse_longmemeval`, so the turns are indexed as the
command indexes them (``"{role}: {content}"``, role as speaker, one namespace per item), and
ranked with each ``--stages`` list on one SQLite store, the vectors cached on disk. What
differs from LongMemEval: LoCoMo is two people talking, not a user and an assistant; every
session of a haystack is about the same two people, where a LongMemEval haystack is mostly
unrelated chats; and its questions name the speakers, which the turns no longer do.
Figures per source conversation (the pools)::

    .venv/bin/python benchmarks/longmemeval_proxy.py --per-conversation 25 \\
        --vector-cache /tmp/lme-vectors.npz --stages none sessions timing,questions
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from remem.eval.locomo import Conversation, load_locomo  # noqa: E402
from remem.eval.longmemeval import parse_longmemeval  # noqa: E402
from vector_cache import local_embedder, save_cache  # noqa: E402
from zh_recall import Groups, measure, table  # noqa: E402

DEFAULT_DATA = "/work/shared/bench/locomo-dev/locomo-dev.json"
MAIN = (1, 2, 3, 4)


def items(conversation: Conversation, per_conversation: int | None) -> list[dict[str, Any]]:
    """One LongMemEval item per main question of ``conversation`` (every n-th question when
    ``per_conversation`` caps them), its haystack the whole conversation."""
    first = conversation.speakers[0]
    sessions: dict[int, list[Any]] = {}
    for turn in conversation.turns:
        sessions.setdefault(turn.session, []).append(turn)
    questions = [q for q in conversation.questions if q.category in MAIN and q.gold]
    if per_conversation is not None and len(questions) > per_conversation:
        step = len(questions) / per_conversation
        questions = [questions[int(i * step)] for i in range(per_conversation)]
    out = []
    for q in questions:
        gold = set(q.gold)
        ids = [f"{conversation.id}-s{n}" for n in sessions]
        out.append({
            "question_id": f"{conversation.id}-q{q.index}",
            "question_type": f"category-{q.category}",
            "question": q.question,
            "answer": q.answer,
            "haystack_session_ids": ids,
            "haystack_dates": [turns[0].event_time.strftime("%Y/%m/%d (%a) %H:%M")
                               for turns in sessions.values()],
            "haystack_sessions": [[{"role": "user" if t.speaker == first else "assistant",
                                    "content": t.text.removeprefix(f"{t.speaker}: "),
                                    "has_answer": t.dia_id in gold}
                                   for t in turns] for turns in sessions.values()],
            "answer_session_ids": [sid for sid, turns in zip(ids, sessions.values(),
                                                              strict=True)
                                   if any(t.dia_id in gold for t in turns)],
        })
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", nargs="?", default=DEFAULT_DATA,
                        help="a LoCoMo-layout file (default: the LoCoMo dev split)")
    parser.add_argument("--per-conversation", type=int, default=25,
                        help="main questions per conversation (each one item)")
    parser.add_argument("--stages", nargs="+", default=["none"])
    parser.add_argument("--vector-cache", type=Path, default=None)
    parser.add_argument("--out", type=Path,
                        default=Path("benchmarks/results/longmemeval_proxy.json"))
    args = parser.parse_args(argv)

    embedder = local_embedder(args.vector_cache)
    source = load_locomo(args.data)
    raw = [item for c in source.conversations for item in items(c, args.per_conversation)]
    labelled = parse_longmemeval(raw, source=f"{args.data} as LongMemEval")
    groups: Groups = {key: key[0].rsplit("-q", 1)[0] for key in labelled.kinds}
    started = time.perf_counter()
    figures = measure(labelled.data, dict(labelled.kinds), [], embedder, stages=args.stages,
                      groups=groups)
    seconds = round(time.perf_counter() - started, 1)
    print(table(f"{Path(args.data).name} as LongMemEval ({len(raw)} items, "
                f"{labelled.data.n_turns} turns)", figures))
    save_cache(embedder)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"data": args.data, "items": len(raw),
                                    "per_conversation": args.per_conversation,
                                    "seconds": seconds, "figures": figures},
                                   ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
