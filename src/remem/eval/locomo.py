"""Read a LoCoMo-format file into turns, questions and gold, following the bench protocol.

The protocol (``bench/README.md``): one memory per turn, text ``"{speaker}: {text}"`` plus
``" [shares {blip_caption}]"`` when an image was shared; the session's date-time is the turn's
event time; gold is parsed from each question's evidence strings, repairing the few malformed
ones and dropping ids the conversation does not have. Every repair is returned as a
:class:`DataFix`, so a run can show exactly what it changed in the data.

Parsing is pure (:func:`parse_locomo` takes the decoded JSON); :func:`load_locomo` adds the file.
A malformed file raises :class:`~remem.errors.InvalidInputError` naming the file, the place and
what is wrong.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from remem.errors import InvalidInputError

__all__ = [
    "CATEGORY_NAMES",
    "DATE_FORMAT",
    "Conversation",
    "DataFix",
    "LocomoDataset",
    "Question",
    "TurnMemory",
    "TurnRow",
    "checked_field",
    "json_kind",
    "load_locomo",
    "parse_gold",
    "parse_locomo",
    "session_turns",
]

DATE_FORMAT = "%I:%M %p on %d %B, %Y"
"""How LoCoMo writes a session's date-time, e.g. ``"1:56 pm on 8 May, 2023"``."""

CATEGORY_NAMES: Mapping[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
"""LoCoMo's own category numbering (some papers shift the names: always print the number)."""

_SESSION_KEY = re.compile(r"session_(\d+)")
_EVIDENCE_SPLIT = re.compile(r"[;,\s]+")
_EVIDENCE_ID = re.compile(r"D:?(\d+):(\d+)")

FixKind = Literal["split", "rewritten", "dropped_token", "dropped_absent", "deduplicated",
                  "no_gold"]


@dataclass(frozen=True, slots=True)
class TurnMemory:
    """One conversation turn as the memory a retriever stores.

    ``text`` is what gets indexed; ``dia_id`` and ``speaker`` are metadata and never part of it.
    ``session`` is the session number N of ``session_N``, ``turn`` the 1-based position in it.
    ``event_time`` is the session's date-time (aware, UTC), not the ingestion time.
    """

    conversation_id: str
    dia_id: str
    speaker: str
    text: str
    session: int
    turn: int
    event_time: datetime


#: one turn as a loader reads it: (dia_id, speaker, text, time or None)
TurnRow = tuple[str, str, str, "datetime | None"]


def session_turns(conversation_id: str, session: int, rows: Iterable[TurnRow], *,
                  last_time: datetime) -> list[TurnMemory]:
    """One session's turns as memories, numbered from 1 in order; a turn without a time
    takes the time of the turn before it (``last_time`` for the first). Every loader
    (LoCoMo, MemDaily, LongMemEval) builds its turns here."""
    turns: list[TurnMemory] = []
    for position, (dia_id, speaker, text, when) in enumerate(rows, start=1):
        last_time = when or last_time
        turns.append(TurnMemory(conversation_id, dia_id, speaker, text, session, position,
                                last_time))
    return turns


@dataclass(frozen=True, slots=True)
class Question:
    """A question with its parsed gold ``dia_id``s (possibly empty) and expected answer.

    ``index`` is the position in the conversation's ``qa`` list. ``answer`` is the reference
    answer as text (LoCoMo has a few integers), ``adversarial_answer`` the false-premise answer
    of category 5 items; either may be ``None``.
    """

    conversation_id: str
    index: int
    question: str
    category: int
    gold: tuple[str, ...]
    answer: str | None
    adversarial_answer: str | None = None


@dataclass(frozen=True, slots=True)
class DataFix:
    """One repair made while reading the data, for the run's log.

    ``kind``: ``split`` (one evidence string held several ids), ``rewritten`` (an id spelled
    ``D:11:26`` or ``D30:05``), ``dropped_token`` (not an id at all), ``dropped_absent`` (an id
    the conversation lacks), ``deduplicated`` (an id listed twice), ``no_gold`` (nothing left:
    the question cannot be scored and is skipped).
    """

    conversation_id: str
    question_index: int
    kind: FixKind
    detail: str

    def __str__(self) -> str:
        return f"{self.conversation_id} qa[{self.question_index}]: {self.kind}: {self.detail}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"conversation": self.conversation_id, "question_index": self.question_index,
                "kind": self.kind, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation: its turns in session order, its questions and its "now".

    ``now`` is the last session's date-time: the reference point for any recency logic.
    """

    id: str
    speakers: tuple[str, str]
    turns: tuple[TurnMemory, ...]
    questions: tuple[Question, ...]
    now: datetime


@dataclass(frozen=True, slots=True)
class LocomoDataset:
    """A parsed LoCoMo file: its conversations, every data fix, and where it came from."""

    source: str
    sha256: str
    conversations: tuple[Conversation, ...]
    fixes: tuple[DataFix, ...]

    @property
    def n_turns(self) -> int:
        """Turns over all conversations."""
        return sum(len(c.turns) for c in self.conversations)

    @property
    def n_questions(self) -> int:
        """Questions over all conversations (with or without gold)."""
        return sum(len(c.questions) for c in self.conversations)

    def head(self, n: int) -> LocomoDataset:
        """The first ``n`` conversations (and their fixes): for quick runs."""
        kept = self.conversations[:n]
        ids = {c.id for c in kept}
        return LocomoDataset(self.source, self.sha256, kept,
                             tuple(f for f in self.fixes if f.conversation_id in ids))


def load_locomo(path: str | Path) -> LocomoDataset:
    """Read and parse the LoCoMo-format JSON file at ``path``.

    Raises :class:`InvalidInputError` naming the file if it is not UTF-8 JSON in the expected
    shape; :class:`OSError` if it cannot be read.
    """
    raw = Path(path).read_bytes()
    try:
        data = json.loads(raw.decode("utf-8-sig"))  # a leading byte-order mark is allowed
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from None
    except json.JSONDecodeError as exc:
        raise InvalidInputError(
            f"{path}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    return parse_locomo(data, source=str(path), sha256=hashlib.sha256(raw).hexdigest())


def parse_locomo(data: Any, *, source: str = "<data>", sha256: str = "") -> LocomoDataset:
    """Parse decoded LoCoMo JSON (a list of conversations); see the module docstring.

    ``source`` names the data in error messages. Raises :class:`InvalidInputError`.
    """
    if not isinstance(data, list):
        raise InvalidInputError(
            f"{source}: expected a JSON list of conversations, got {json_kind(data)}"
        )
    if not data:
        raise InvalidInputError(f"{source}: the list of conversations is empty")
    conversations: list[Conversation] = []
    fixes: list[DataFix] = []
    seen: set[str] = set()
    for position, raw in enumerate(data):
        conversation, conv_fixes = _parse_conversation(raw, f"{source}: conversation {position}")
        if conversation.id in seen:
            raise InvalidInputError(
                f"{source}: conversation {position}: sample_id {conversation.id!r} is used twice"
            )
        seen.add(conversation.id)
        conversations.append(conversation)
        fixes.extend(conv_fixes)
    return LocomoDataset(source, sha256, tuple(conversations), tuple(fixes))


def parse_gold(evidence: Sequence[str], known_ids: Collection[str], *, conversation_id: str = "",
               question_index: int = 0) -> tuple[tuple[str, ...], list[DataFix]]:
    """Gold ``dia_id``s from a question's evidence strings, and the fixes it took.

    Each string is split on ``[;,\\s]+``; tokens matching ``^D:?(\\d+):(\\d+)$`` are rewritten
    ``D{int}:{int}``; other tokens and ids absent from ``known_ids`` are dropped; duplicates are
    removed (first occurrence kept).
    """
    gold: list[str] = []
    fixes: list[DataFix] = []

    def fix(kind: FixKind, detail: str) -> None:
        fixes.append(DataFix(conversation_id, question_index, kind, detail))

    for entry in evidence:
        tokens = [t for t in _EVIDENCE_SPLIT.split(entry) if t]
        if len(tokens) > 1:
            fix("split", f"evidence {entry!r} split into {', '.join(tokens)}")
        if not tokens:
            fix("dropped_token", f"evidence {entry!r} is blank")
        for token in tokens:
            match = _EVIDENCE_ID.fullmatch(token)
            if match is None:
                fix("dropped_token", f"evidence token {token!r} is not a dia_id")
                continue
            dia_id = f"D{int(match[1])}:{int(match[2])}"
            if dia_id != token:
                fix("rewritten", f"evidence {token!r} read as {dia_id}")
            if dia_id not in known_ids:
                fix("dropped_absent", f"evidence {dia_id} is not a turn of the conversation")
            elif dia_id in gold:
                fix("deduplicated", f"evidence {dia_id} listed twice")
            else:
                gold.append(dia_id)
    return tuple(gold), fixes


# -- the pieces -----------------------------------------------------------------------------


def json_kind(value: object) -> str:
    """What a JSON value is, for error messages ("a string", "null"...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def checked_field(obj: Mapping[str, Any], name: str, kind: type | tuple[type, ...],
                  where: str) -> Any:
    """``obj[name]``, checked to be of ``kind`` (an error naming ``where`` otherwise)."""
    if name not in obj:
        raise InvalidInputError(f"{where}: missing {name!r}")
    value = obj[name]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        want = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise InvalidInputError(f"{where}: {name!r} must be {want}, got {json_kind(value)}")
    return value


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise InvalidInputError(f"{where}: expected a JSON object, got {json_kind(value)}")
    return value


def _parse_time(text: str, where: str) -> datetime:
    try:
        return datetime.strptime(text.strip(), DATE_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        raise InvalidInputError(
            f"{where}: date-time {text!r} does not match {DATE_FORMAT!r} "
            "(e.g. '1:56 pm on 8 May, 2023')"
        ) from None


def _parse_conversation(raw: Any, where: str) -> tuple[Conversation, list[DataFix]]:
    obj = _object(raw, where)
    cid = checked_field(obj, "sample_id", str, where)
    if not cid:
        raise InvalidInputError(f"{where}: 'sample_id' is empty")
    where = f"{where} ({cid})"
    conv = _object(checked_field(obj, "conversation", dict, where), f"{where}: conversation")
    speakers = (checked_field(conv, "speaker_a", str, f"{where}: conversation"),
                checked_field(conv, "speaker_b", str, f"{where}: conversation"))
    # only the session lists that exist: some files carry date keys without sessions
    sessions = sorted(
        (int(m[1]), key) for key in conv if (m := _SESSION_KEY.fullmatch(key))
    )
    if not sessions:
        raise InvalidInputError(f"{where}: conversation has no 'session_N' lists")
    turns: list[TurnMemory] = []
    last_time: datetime | None = None
    for number, key in sessions:
        session_where = f"{where}: {key}"
        session = checked_field(conv, key, list, f"{where}: conversation")
        when = _parse_time(checked_field(conv, f"{key}_date_time", str, f"{where}: conversation"),
                           f"{session_where}_date_time")
        last_time = when
        turns.extend(session_turns(cid, number, (
            _parse_turn(raw_turn, f"{session_where} turn {position}")
            for position, raw_turn in enumerate(session, start=1)), last_time=when))
    assert last_time is not None
    ids = [t.dia_id for t in turns]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise InvalidInputError(f"{where}: dia_id {dup!r} is used by more than one turn")
    known = frozenset(ids)
    questions: list[Question] = []
    fixes: list[DataFix] = []
    for index, raw_qa in enumerate(checked_field(obj, "qa", list, where)):
        question, q_fixes = _parse_question(raw_qa, cid, index, known, f"{where}: qa[{index}]")
        questions.append(question)
        fixes.extend(q_fixes)
    return Conversation(cid, speakers, tuple(turns), tuple(questions), last_time), fixes


def _parse_turn(raw: Any, where: str) -> TurnRow:
    turn = _object(raw, where)
    speaker = checked_field(turn, "speaker", str, where)
    dia_id = checked_field(turn, "dia_id", str, where)
    if not dia_id:
        raise InvalidInputError(f"{where}: 'dia_id' is empty")
    text = f"{speaker}: {checked_field(turn, 'text', str, where)}"
    caption = turn.get("blip_caption")
    if isinstance(caption, str) and caption:
        text += f" [shares {caption}]"
    return dia_id, speaker, text, None


def _parse_question(raw: Any, cid: str, index: int, known: frozenset[str],
                    where: str) -> tuple[Question, list[DataFix]]:
    qa = _object(raw, where)
    text = checked_field(qa, "question", str, where)
    category = checked_field(qa, "category", int, where)
    if category not in CATEGORY_NAMES:
        raise InvalidInputError(f"{where}: 'category' must be 1 to 5, got {category}")
    evidence = checked_field(qa, "evidence", list, where)
    if not all(isinstance(e, str) for e in evidence):
        raise InvalidInputError(f"{where}: 'evidence' must be a list of strings")
    gold, fixes = parse_gold(evidence, known, conversation_id=cid, question_index=index)
    if not gold:
        fixes.append(DataFix(cid, index, "no_gold",
                             f"no usable evidence in {evidence!r}; question skipped"))
    return Question(cid, index, text, category, gold, _answer(qa.get("answer")),
                    _answer(qa.get("adversarial_answer"))), fixes


def _answer(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value)
