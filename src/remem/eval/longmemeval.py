"""Read a LongMemEval-format file (``remem eval longmemeval FILE``) into the harness's shape.

LongMemEval (Wu et al. 2024) gives each question its own **haystack**: chat sessions between a
user and an assistant, a few of which hold the answer. An item is ``{question_id,
question_type, question, answer, question_date, haystack_session_ids, haystack_dates,
haystack_sessions, answer_session_ids}``; a session is a list of turns ``{role, content}``,
and the turns that hold the answer carry ``has_answer: true``.

The protocol:

1. **One namespace per item** (its ``question_id``): a question searches only its own haystack.
2. **One memory per turn**, keyed ``"{session_id}:{i}"`` (``i`` the 0-based position in the
   session); the indexed text is ``"{role}: {content}"``; the session's date is the event time.
3. **Gold** = the turns marked ``has_answer: true`` (the strings ``"true"``/``"false"`` are
   read as booleans). The same rankings are also scored at the **session level**: each ranked
   turn's session, deduplicated, against ``answer_session_ids`` (or, when the item has none,
   the sessions holding a gold turn). An item with answer sessions but no marked turn is
   scored at the session level only.
4. **Abstention questions** (``question_id`` ending in ``_abs``: the haystack does not hold the
   answer) are reported apart, like LoCoMo's category 5; the others are grouped by
   ``question_type``.

Data fixes (:class:`~remem.eval.labelled.FormatFix`, each naming its item as namespace):
``no_gold`` (no turn is marked and no answer session is known: the question is skipped),
``session_gold_only`` (no turn is marked, but ``answer_session_ids`` names sessions: scored at
the session level only), ``not_boolean`` (``has_answer`` values that are not booleans: the
strings ``"true"``/``"false"`` are read as such, any other value as false),
``dropped_absent`` (an answer session id the haystack lacks), ``time_unparsed`` (a session date
that cannot be read: the one before it is used).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from remem.errors import InvalidInputError
from remem.eval.labelled import FormatFix, LabelledDataset, QuestionKey
from remem.eval.locomo import (
    Conversation,
    LocomoDataset,
    Question,
    TurnMemory,
    TurnRow,
    session_turns,
)
from remem.eval.locomo import checked_field as _field
from remem.eval.locomo import json_kind as _kind
from remem.eval.memdaily import load_json_file, parse_loose_time

__all__ = ["ABSTENTION", "load_longmemeval", "parse_longmemeval"]

FORMAT: Final = "longmemeval"
ABSTENTION: Final = "abstention"
"""The name of the set of abstention questions, reported apart from ``main``."""
_ABSTENTION_SUFFIX: Final = "_abs"
_EPOCH_TEXT: Final = "2000-01-01T00:00:00+00:00"


def load_longmemeval(path: str | Path) -> LabelledDataset:
    """Read and parse the LongMemEval-format JSON file at ``path`` (see the module docstring).
    """
    data, sha256 = load_json_file(path)
    return parse_longmemeval(data, source=str(path), sha256=sha256)


def parse_longmemeval(data: Any, *, source: str = "<data>", sha256: str = "") -> LabelledDataset:
    """Parse decoded LongMemEval JSON (a list of items).

    Raises :class:`InvalidInputError` naming ``source``, the item and what is wrong.
    """
    if not isinstance(data, list):
        raise InvalidInputError(f"{source}: expected a JSON list of items, got {_kind(data)}")
    if not data:
        raise InvalidInputError(f"{source}: the list of items is empty")
    conversations: list[Conversation] = []
    kinds: dict[QuestionKey, str] = {}
    extras: dict[QuestionKey, Mapping[str, Any]] = {}
    parent: dict[str, Mapping[str, str]] = {}
    parent_gold: dict[QuestionKey, tuple[str, ...]] = {}
    fixes: list[FormatFix] = []
    for position, raw in enumerate(data):
        item = _Item(raw, f"{source}: item {position}")
        if any(c.id == item.qid for c in conversations):
            raise InvalidInputError(
                f"{source}: item {position}: question_id {item.qid!r} is used twice")
        fixes.extend(item.fixes)
        questions: tuple[Question, ...] = ()
        if item.gold or item.gold_sessions:
            questions = (Question(item.qid, 0, item.question, 0, item.gold, item.answer),)
            key = (item.qid, 0)
            kinds[key] = ABSTENTION if item.qid.endswith(_ABSTENTION_SUFFIX) else item.type
            extras[key] = {"question_type": item.type, "question_date": item.question_date}
            parent_gold[key] = item.gold_sessions
        if not item.gold and item.gold_sessions:
            fixes.append(FormatFix(item.qid, "session_gold_only", (
                "no turn is marked has_answer; scored at the session level only, against "
                f"answer_session_ids {list(item.gold_sessions)!r}"), item.qid))
        elif not item.gold:
            fixes.append(FormatFix(item.qid, "no_gold", (
                "no turn is marked has_answer and no answer session is in the haystack; "
                "question skipped"), item.qid))
        parent[item.qid] = {t.dia_id: sid for t, sid in zip(item.turns, item.turn_sessions,
                                                               strict=True)}
        now = max((t.event_time for t in item.turns),
                  default=datetime.fromisoformat(_EPOCH_TEXT))
        conversations.append(Conversation(item.qid, ("user", "assistant"), tuple(item.turns),
                                          questions, now))
    dataset = LocomoDataset(source, sha256, tuple(conversations), ())
    return LabelledDataset(FORMAT, dataset, kinds, tuple(fixes), apart=ABSTENTION,
                           extras=extras, parent=parent, parent_gold=parent_gold)


class _Item:
    """One item read and checked: its turns, gold turns, gold sessions and fixes."""

    def __init__(self, raw: Any, where: str) -> None:
        if not isinstance(raw, dict):
            raise InvalidInputError(f"{where}: expected a JSON object, got {_kind(raw)}")
        self.qid: str = _field(raw, "question_id", str, where)
        if not self.qid:
            raise InvalidInputError(f"{where}: 'question_id' is empty")
        where = f"{where} ({self.qid})"
        self.type: str = raw.get("question_type") or "unknown"
        if not isinstance(self.type, str):
            raise InvalidInputError(f"{where}: 'question_type' must be str")
        self.question: str = _field(raw, "question", str, where)
        answer = raw.get("answer")
        self.answer = None if answer is None else str(answer)
        date = raw.get("question_date")
        self.question_date = date if isinstance(date, str) else None
        ids: list[Any] = _field(raw, "haystack_session_ids", list, where)
        dates: list[Any] = _field(raw, "haystack_dates", list, where)
        sessions: list[Any] = _field(raw, "haystack_sessions", list, where)
        if not len(ids) == len(dates) == len(sessions):
            raise InvalidInputError(
                f"{where}: haystack_session_ids, haystack_dates and haystack_sessions must be "
                f"as long as each other; got {len(ids)}, {len(dates)} and {len(sessions)}")
        if not all(isinstance(s, str) and s for s in ids):
            raise InvalidInputError(f"{where}: 'haystack_session_ids' must be non-empty strings")
        if len(set(ids)) != len(ids):
            dup = next(s for s in ids if ids.count(s) > 1)
            raise InvalidInputError(f"{where}: session id {dup!r} appears twice in the haystack")
        self.fixes: list[FormatFix] = []
        self.turns: list[TurnMemory] = []
        self.turn_sessions: list[str] = []
        gold: list[str] = []
        gold_sessions: list[str] = []
        odd_marks: list[str] = []  # has_answer values that are not booleans
        last = datetime.fromisoformat(_EPOCH_TEXT)
        for number, (sid, date_text, session) in enumerate(zip(ids, dates, sessions,
                                                               strict=True), start=1):
            s_where = f"{where}: session {sid}"
            when = parse_loose_time(date_text) if isinstance(date_text, str) else None
            if when is None:
                self.fixes.append(FormatFix(f"{self.qid} session {sid}", "time_unparsed", (
                    f"date {date_text!r} cannot be read; the session before it gives the "
                    "time"), self.qid))
                when = last
            last = when
            if not isinstance(session, list):
                raise InvalidInputError(f"{s_where}: a session must be a list of turns, got "
                                        f"{_kind(session)}")
            rows: list[TurnRow] = []
            for index, raw_turn in enumerate(session):
                t_where = f"{s_where} turn {index}"
                if not isinstance(raw_turn, dict):
                    raise InvalidInputError(f"{t_where}: expected a JSON object, got "
                                            f"{_kind(raw_turn)}")
                role: str = _field(raw_turn, "role", str, t_where)
                content: str = _field(raw_turn, "content", str, t_where)
                dia_id = f"{sid}:{index}"
                rows.append((dia_id, role, f"{role}: {content}", when))
                if _has_answer(raw_turn.get("has_answer"), odd_marks, dia_id):
                    gold.append(dia_id)
                    if sid not in gold_sessions:
                        gold_sessions.append(sid)
            self.turns.extend(session_turns(self.qid, number, rows, last_time=when))
            self.turn_sessions.extend([sid] * len(rows))
        if odd_marks:
            self.fixes.append(FormatFix(self.qid, "not_boolean", (
                f"{len(odd_marks)} has_answer value(s) are not booleans ({odd_marks[0]}"
                f"{', ...' if len(odd_marks) > 1 else ''}); 'true'/'false' read as booleans, "
                "anything else as false"), self.qid))
        self.gold = tuple(gold)
        answer_sessions = raw.get("answer_session_ids")
        if isinstance(answer_sessions, list) and answer_sessions:
            known = set(ids)
            kept = []
            for sid in answer_sessions:
                if sid in known and sid not in kept:
                    kept.append(sid)
                elif sid not in known:
                    self.fixes.append(FormatFix(self.qid, "dropped_absent", (
                        f"answer session {sid!r} is not in the haystack"), self.qid))
            gold_sessions = kept or gold_sessions
        self.gold_sessions = tuple(gold_sessions)


def _has_answer(value: Any, odd: list[str], dia_id: str) -> bool:
    """Whether a turn's ``has_answer`` marks it: ``true``, or the string ``"true"``; a value
    that is not a boolean (nor absent) is noted in ``odd`` for the item's fix."""
    if value is None or isinstance(value, bool):
        return value is True
    odd.append(f"{dia_id}: {value!r}")
    return isinstance(value, str) and value.strip().lower() == "true"
