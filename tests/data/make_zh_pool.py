"""Write ``zh_pool``: one large pool of 250 people's daily lives, in the MemDaily layout.

A development pool shaped like the large pooled MemDaily files (issue 36, "Chinese measured
natively"; see ``README.md`` next to this file): the whole file is one namespace of 250
trajectories and 4,350 messages, one person's daily life each (coffee, taxis, takeaway, the
gym, purchases, trips, doctors, children, appointments, meals out, hobbies, work), said in the
same shared phrasings with the same shops, dishes, cities and price ranges, so the pool is full
of near-alike messages of different people; people share surnames and given names, some only
by sound (徐伟, 徐炜; 胡炜, 胡玮). 600 questions, 100 of each MemDaily type:

* ``simple``: one fact of a named person (one message);
* ``conditional``: a fact picked by another, of a named person (the hotel of the trip to 成都)
  or of the one person a condition fits (在云帆网络当数据分析师的那位, 5月3号去面试的那位);
* ``comparative``: two facts of a person compared;
* ``aggregative``: every time a person did something (counts, sums, lists): mostly within one
  month (这个月, 上个月, 4月份) while the same person did it in other months too; 4-8 gold;
* ``post_processing``: arithmetic or the calendar over one or two facts;
* ``noisy``: a simple or conditional question wrapped in chatter, often with a typo.

Every fact message names its person, so a question that names a person, or a condition only
one person fits, has one right answer in the pooled namespace; its gold is every message whose
fact the answer needs (a condition's too), known by construction and checked here: each gold
message holds the values as said and its person's name (or their child's, whose introduction
is gold too); no name occurs in another person's trajectory; a condition fits one person of
the pool; no question text repeats; a month-scoped question's gold is all and only the month's.

The vocabulary everyone shares is in ``zh_pool_vocab.py``, a person's life and the questions
it can answer in ``zh_pool_lives.py``; this script picks the questions, checks and writes.
Standard library only, seeded and deterministic: ``python tests/data/make_zh_pool.py OUT``
writes the same bytes every time (``tests/eval/test_zh_pool.py`` pins their SHA-256), in a
third of a second; the file (0.9 MB) is generated where it is needed, not committed.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from collections import Counter
from datetime import datetime
from itertools import zip_longest
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling modules, run as a script
from zh_pool_lives import Draft, Names, Person, make_person
from zh_pool_vocab import NOISE_AFTER, NOISE_BEFORE, PLACES, TYPOS, WEEKDAYS

SEED = 36
PEOPLE = 250
KINDS = ("simple", "conditional", "comparative", "aggregative", "post_processing", "noisy")
QUOTA = 100  # questions of each kind
MAX_QUESTIONS = 3  # per person
VOICES = ("named", "first")


def _noisy(rng: random.Random, text: str) -> str:
    """The question as people type it in passing: chatter around it, often a typo in it."""
    core = text.removesuffix("？")
    typos = [(a, b) for a, b in TYPOS if a in core]
    if typos and rng.random() < 0.7:
        a, b = rng.choice(typos)
        core = core.replace(a, b, 1)
    return rng.choice(NOISE_BEFORE) + core + "？" + rng.choice(NOISE_AFTER)


def _choose(rng: random.Random, people: list[Person]) -> None:
    """100 questions of each kind: the scarcest kinds first, at most three a person, and no
    two questions of one person sharing a gold message."""
    order = sorted(KINDS, key=lambda k: sum(d.kind == k for p in people for d in p.drafts))
    for kind in order:
        # questions that name their person and questions that pick them by a condition, in
        # turn (there are many more of the second)
        named = [(p, d) for p in people for d in p.drafts if d.kind == kind and d.named]
        picked = [(p, d) for p in people for d in p.drafts if d.kind == kind and not d.named]
        rng.shuffle(named)
        rng.shuffle(picked)
        drafts = [pair for pairs in zip_longest(named, picked) for pair in pairs if pair]
        taken = 0
        for p, d in drafts:
            if taken == QUOTA:
                break
            used = {id(m) for q in p.questions for m in q.gold}
            if len(p.questions) >= MAX_QUESTIONS or used & {id(m) for m in d.gold}:
                continue
            p.questions.append(d)
            taken += 1
        assert taken == QUOTA, (kind, taken)


# -- the file -----------------------------------------------------------------------------------


def _stamp(when: datetime) -> str:
    return when.strftime("%Y年%m月%d日 ") + "周" + WEEKDAYS[when.weekday()] \
        + when.strftime(" %H:%M")


def _render(p: Person) -> dict[str, Any]:
    questions = [{"qid": i, "question": q.text, "answer": q.answer,
                  "target_step_id": sorted(m.mid for m in q.gold), "kind": q.kind,
                  "time": _stamp(p.asked)}
                 for i, q in enumerate(sorted(p.questions, key=lambda q: KINDS.index(q.kind)))]
    return {"tid": p.tid, "user": p.name,
            "message_list": [{"mid": m.mid, "message": m.text, "time": _stamp(m.when),
                              "place": f"{p.city}·{p.rng.choice(PLACES)}"}
                             for m in p.messages],
            "question_list": questions}


def build(seed: int = SEED, voice: str = "named") -> list[dict[str, Any]]:
    """The pool: a JSON list of 250 trajectories (one pool for ``remem eval memdaily``).

    ``voice``: ``"named"`` (every fact message names its person) or ``"first"`` (each person
    says their name once, introducing themself, and tells every fact as 我)."""
    if voice not in VOICES:
        raise ValueError(f"voice must be one of {VOICES}, got {voice!r}")
    rng = random.Random(seed)
    names = Names(rng)
    people = [make_person(rng, names, i, voice) for i in range(1, PEOPLE + 1)]
    _picked_by_condition(people)
    for p in people:
        for d in [d for d in p.drafts if d.kind in ("simple", "conditional")]:
            p.drafts.append(Draft("noisy", _noisy(p.rng, d.text), d.answer, d.gold, d.named,
                                  d.key))
    _choose(rng, people)
    _check(people, voice)
    return [_render(p) for p in people]


def _picked_by_condition(people: list[Person]) -> None:
    """Conditional questions that pick their person by something only they did (在云帆网络当
    数据分析师的那位, 5月3号去面试的那位), asking another fact: the condition's messages
    and the fact's are the gold."""
    fits = Counter(s.key for p in people for s in p.subjects)
    for p in people:
        for subject in p.subjects:
            if fits[subject.key] != 1:
                continue
            for target in p.targets:
                if set(map(id, target.gold)) & set(map(id, subject.said)):
                    continue  # the condition itself: 在星辰科技当设计师的那位是做什么的
                text = p.rng.choice(target.options).replace(
                    "{n}", p.rng.choice(subject.phrases))
                p.drafts.append(Draft("conditional", text, target.answer,
                                      [*subject.said, *target.gold], False, subject.key))


def _check(people: list[Person], voice: str) -> None:
    """Gold holds the facts (said by name in the named voice); names are never said outside
    their own trajectory; a condition that picks a person fits no one else."""
    texts = [q.text for p in people for q in p.questions]
    assert len(set(texts)) == len(texts), "a question text repeats: it would be ambiguous"
    fits = Counter(s.key for p in people for s in p.subjects)
    for p in people:
        for q in p.questions:
            assert q.gold and len({id(m) for m in q.gold}) == len(q.gold), q
            assert p.name in q.text if q.named else fits[q.key] == 1, q.text
            assert "{" not in q.text, q.text
            for m in q.gold:
                assert all(c in m.text for c in m.checks), (m.text, m.checks)
                assert any(m is own for own in p.messages), m.text
                if voice == "named":
                    assert p.name in m.text or any(c in m.text for c in p.children), m.text
            if q.kind == "aggregative":
                assert 4 <= len(q.gold) <= 8, q
        times = [m.when for m in p.messages]
        assert times == sorted(times)
    owner = {n: p for p in people for n in (p.name, *p.children)}
    for p in people:
        for text in [m.text for m in p.messages] + [q.text for q in p.questions]:
            for name, other in owner.items():
                assert other is p or name not in text, (name, text)


def encode(data: list[dict[str, Any]]) -> bytes:
    return (json.dumps(data, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def main(argv: list[str]) -> int:
    """``OUT.json [--voice named|first] [--seed N]``: write the pool, print its counts."""
    args = list(argv)
    options = {"--voice": "named", "--seed": str(SEED)}
    for option in options:
        if option in args:
            at = args.index(option)
            options[option] = args[at + 1] if at + 1 < len(args) else ""
            del args[at:at + 2]
    if len(args) != 1 or options["--voice"] not in VOICES \
            or not options["--seed"].isdigit():
        print("usage: python tests/data/make_zh_pool.py OUT.json [--voice named|first] "
              "[--seed N]", file=sys.stderr)
        return 2
    data = build(int(options["--seed"]), options["--voice"])
    raw = encode(data)
    Path(args[0]).write_bytes(raw)
    questions = [q for t in data for q in t["question_list"]]
    kinds = Counter(q["kind"] for q in questions)
    print(f"{args[0]}: {len(data)} trajectories, "
          f"{sum(len(t['message_list']) for t in data)} messages, {len(questions)} questions "
          f"({', '.join(f'{k} {kinds[k]}' for k in KINDS)}), sha256 "
          f"{hashlib.sha256(raw).hexdigest()}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
