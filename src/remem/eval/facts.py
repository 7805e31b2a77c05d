"""Memory-level evaluation on LoCoMo: retrieve extracted facts and score the turns they came from.

LoCoMo ships, per session, generated **observations**: short third-person facts ("Caroline
attended an LGBTQ support group recently ...") each linked to the turn(s) it was drawn from
(``conversation.observation.session_N_observation.{speaker}: [[text, "D1:3"], ...]``).
``remem eval locomo --units facts`` indexes those facts instead of the turns (``both``: beside
them) and scores the same gold turns, reached through the facts: following the bench protocol
(step 5), a retrieved item's ranking contribution is its source ``dia_id``\\ s, in item order,
deduplicated. Because a fact and a turn differ in length, the run also reports how many items
and tokens were returned, in all and up to the tenth ranked turn.

:func:`parse_facts` reads the observations (pure); :class:`UnitsRetriever` wraps any
:class:`~remem.eval.retrievers.Retriever` so it stores turns, facts or both and ranks turn ids.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal, TypeAlias, get_args

from remem.errors import InvalidInputError
from remem.eval.labelled import FormatFix
from remem.eval.locomo import LocomoDataset, TurnMemory
from remem.eval.retrievers import Retriever
from remem.tokens import DEFAULT_COUNTER, TokenCounter

__all__ = ["UNITS", "FactMemory", "Returned", "Units", "UnitsRetriever", "parse_facts",
           "returned_summary"]

Units: TypeAlias = Literal["turns", "facts", "both"]
UNITS: Final[tuple[str, ...]] = get_args(Units)
TOP: Final = 10
"""The ranking depth at which the items and tokens it took are also reported."""

_OBSERVATION_KEY = re.compile(r"session_(\d+)_observation")
_EVIDENCE_SPLIT = re.compile(r"[;,\s]+")
_EVIDENCE_ID = re.compile(r"D:?(\d+):(\d+)")


@dataclass(frozen=True, slots=True)
class FactMemory:
    """One generated observation as a memory: its text, its session and its source turns.

    ``fact_id`` is ``"O{session}:{n}"`` (``n`` counts the session's observations from 1, over
    both speakers); ``event_time`` is the event time of its first source turn.
    """

    conversation_id: str
    fact_id: str
    speaker: str
    text: str
    session: int
    sources: tuple[str, ...]
    event_time: datetime

    def as_turn(self) -> TurnMemory:
        """The fact in the shape a retriever ingests (its id in place of a ``dia_id``)."""
        number = int(self.fact_id.rsplit(":", 1)[1])
        return TurnMemory(self.conversation_id, self.fact_id, self.speaker, self.text,
                          self.session, number, self.event_time)


def parse_facts(data: Any, dataset: LocomoDataset, *, source: str = "<data>"
                ) -> tuple[dict[str, tuple[FactMemory, ...]], list[FormatFix]]:
    """Each conversation's observations as facts, and the repairs made to their evidence.

    ``data`` is the decoded LoCoMo JSON that ``dataset`` was parsed from. Evidence strings are
    read like question evidence (split on ``[;,\\s]+``, ``D:11:26`` read as ``D11:26``); ids the
    conversation lacks are dropped, and a fact left without a source turn is dropped (it could
    never reach a gold turn). Raises :class:`InvalidInputError` when a conversation has no
    ``observation`` object at all.
    """
    facts: dict[str, tuple[FactMemory, ...]] = {}
    fixes: list[FormatFix] = []
    raw_by_id = {c.get("sample_id"): c for c in data if isinstance(c, dict)}
    for conversation in dataset.conversations:
        raw = raw_by_id.get(conversation.id, {})
        observations = raw.get("observation")
        if not isinstance(observations, dict):
            raise InvalidInputError(
                f"{source}: conversation {conversation.id}: no 'observation' object; "
                "--units facts needs LoCoMo's generated per-session observations")
        times = {t.dia_id: t.event_time for t in conversation.turns}
        found: list[FactMemory] = []
        for key, per_speaker in sorted(observations.items(), key=_session_order):
            match = _OBSERVATION_KEY.fullmatch(key)
            if match is None or not isinstance(per_speaker, dict):
                fixes.append(FormatFix(f"{conversation.id} {key}", "dropped_entry",
                                       "not a session_N_observation object"))
                continue
            session = int(match[1])
            number = 0
            for speaker, entries in per_speaker.items():
                for position, entry in enumerate(entries if isinstance(entries, list) else []):
                    where = f"{conversation.id} {key} {speaker}[{position}]"
                    if not (isinstance(entry, list) and len(entry) == 2
                            and isinstance(entry[0], str)):
                        fixes.append(FormatFix(where, "dropped_entry",
                                               "not a [text, evidence] pair"))
                        continue
                    sources = _sources(entry[1], times, where, fixes)
                    if not sources:
                        fixes.append(FormatFix(where, "no_source", (
                            f"no turn of the conversation in {entry[1]!r}; fact dropped")))
                        continue
                    number += 1
                    found.append(FactMemory(conversation.id, f"O{session}:{number}",
                                            str(speaker), entry[0], session, sources,
                                            times[sources[0]]))
        facts[conversation.id] = tuple(found)
    return facts, fixes


def _session_order(item: tuple[str, Any]) -> tuple[int, str]:
    match = _OBSERVATION_KEY.fullmatch(item[0])
    return (int(match[1]) if match else 1 << 30, item[0])


def _sources(evidence: Any, known: Mapping[str, datetime], where: str,
             fixes: list[FormatFix]) -> tuple[str, ...]:
    entries = evidence if isinstance(evidence, list) else [evidence]
    out: list[str] = []
    for entry in entries:
        if not isinstance(entry, str):
            fixes.append(FormatFix(where, "dropped_token", f"evidence {entry!r} is not a string"))
            continue
        for token in (t for t in _EVIDENCE_SPLIT.split(entry) if t):
            match = _EVIDENCE_ID.fullmatch(token)
            if match is None:
                fixes.append(FormatFix(where, "dropped_token",
                                       f"evidence token {token!r} is not a dia_id"))
                continue
            dia_id = f"D{int(match[1])}:{int(match[2])}"
            if dia_id != token:
                fixes.append(FormatFix(where, "rewritten", f"evidence {token!r} read as {dia_id}"))
            if dia_id not in known:
                fixes.append(FormatFix(where, "dropped_absent",
                                       f"evidence {dia_id} is not a turn of the conversation"))
            elif dia_id not in out:
                out.append(dia_id)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Returned:
    """What one question's ranking cost: items and tokens returned, in all and up to the
    item that brought the :data:`TOP`-th distinct turn (all of them when fewer)."""

    items: int
    tokens: int
    items_top: int
    tokens_top: int


class UnitsRetriever:
    """A :class:`~remem.eval.retrievers.Retriever` over turns, facts or both, ranking turns.

    It stores, through ``inner``, the conversation's turns (``units`` ``turns`` or ``both``)
    and its facts (``facts`` or ``both``), each in their own ingest call. ``rank`` asks
    ``inner`` for ``k`` items and returns their turns in item order, deduplicated: a turn
    stands for itself, a fact for its source turns. What every ranking cost is kept in
    :attr:`returned`, by (conversation, question).
    """

    def __init__(self, inner: Retriever, units: Units,
                 facts: Mapping[str, Sequence[FactMemory]] | None = None, *,
                 counter: TokenCounter = DEFAULT_COUNTER) -> None:
        if units not in UNITS:
            raise InvalidInputError(f"units must be one of {', '.join(UNITS)}; got {units!r}")
        if units != "turns" and facts is None:
            raise InvalidInputError(f"units {units!r} needs the conversations' facts")
        self.inner = inner
        self.units: Units = units
        self.facts = facts or {}
        self.counter = counter
        self._sources: dict[str, dict[str, tuple[str, ...]]] = {}
        self._tokens: dict[str, dict[str, int]] = {}
        self.returned: dict[tuple[str, str], Returned] = {}

    def ingest(self, conversation_id: str, memories: Sequence[TurnMemory]) -> None:
        """Store the turns, the facts, or both, of one conversation."""
        sources: dict[str, tuple[str, ...]] = {}
        tokens: dict[str, int] = {}
        if self.units != "facts":
            self.inner.ingest(conversation_id, memories)
            for turn in memories:
                sources[turn.dia_id] = (turn.dia_id,)
                tokens[turn.dia_id] = self.counter.count(turn.text)
        if self.units != "turns":
            facts = list(self.facts.get(conversation_id, ()))
            self.inner.ingest(conversation_id, [f.as_turn() for f in facts])
            for fact in facts:
                sources[fact.fact_id] = fact.sources
                tokens[fact.fact_id] = self.counter.count(fact.text)
        self._sources[conversation_id] = sources
        self._tokens[conversation_id] = tokens

    def rank(self, conversation_id: str, question: str, k: int) -> list[str]:
        """The turns of the best ``k`` items, in item order, deduplicated."""
        keys = self.inner.rank(conversation_id, question, k)
        sources = self._sources[conversation_id]
        tokens = self._tokens[conversation_id]
        ranking: list[str] = []
        items_top = tokens_top = 0
        for key in keys:
            if len(ranking) < TOP:
                items_top += 1
                tokens_top += tokens.get(key, 0)
            for dia_id in sources.get(key, (key,)):
                if dia_id not in ranking:
                    ranking.append(dia_id)
        self.returned[(conversation_id, question)] = Returned(
            len(keys), sum(tokens.get(key, 0) for key in keys), items_top, tokens_top)
        return ranking


def returned_summary(returned: Sequence[Returned]) -> dict[str, float | int | None]:
    """Means over questions: ``items``, ``tokens``, ``items_top10``, ``tokens_top10``, and n."""
    n = len(returned)

    def mean(values: Sequence[int]) -> float | None:
        return sum(values) / n if n else None

    return {"n": n,
            "items": mean([r.items for r in returned]),
            "tokens": mean([r.tokens for r in returned]),
            f"items_top{TOP}": mean([r.items_top for r in returned]),
            f"tokens_top{TOP}": mean([r.tokens_top for r in returned])}
