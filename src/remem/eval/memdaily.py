"""Read a MemDaily-format file (``remem eval memdaily FILE``) into the harness's shape.

MemDaily (Zhang et al. 2024, "MemSim") holds **trajectories**: a ``message_list`` of things a
user told an assistant, ``{mid, message, time, place}``, and a ``question_list`` of
``{qid, question, answer, target_step_id, time}`` whose ``target_step_id`` lists the ``mid``\\ s
that hold the answer (the merged release carries one question per trajectory under ``QA``
instead; both are read).

The protocol:

1. **Pools.** A file that is a JSON list of trajectories is one pool. A file that is an object
   is read as named groups: each list of trajectories under a key path (``simple/roles`` in the
   merged release, whose top level is the question type) is one pool. All trajectories of a pool
   share one namespace, so a question searches every message of its pool, not only its own
   trajectory's (with ``pool="trajectory"`` each trajectory is its own namespace instead). A
   value that is neither (``"version": "1.0"``) is skipped and logged ``skipped``; a file with
   no pool at all is an error. A trajectory without ``question_list`` or ``QA`` (or with
   ``null`` there) has no questions (logged ``no_questions``); its messages stay in the pool.
2. **One memory per message**, its id ``"{tid}:{mid}"``; the indexed text is the message alone.
   ``time`` is the memory's event time (read from ``"2024年04月01日 周一 08:39"``, ISO 8601 and
   a few other spellings); ``place`` is metadata.
3. **Gold** = the messages of the question's own trajectory named by ``target_step_id``: a list
   or a single value (logged ``scalar_target``), a list of lists (flattened one level, logged
   ``flattened``), of ints or digit strings; a string spelled otherwise than the mid
   (``"05"`` for mid 5) or an integral float (``1.0``) is logged ``rewritten``. An id the
   trajectory lacks is dropped (``dropped_absent``), a repeated one too (``deduplicated``),
   a value that is no id at all too (``dropped_token``); a question left without gold is
   skipped (``no_gold``). Wherever an id is read (``tid``, ``mid``, ``qid``, targets), an
   integral float is read as its int (``1.0`` is ``1``).
4. **Ambiguous questions.** A question text asked in several trajectories of one pool has
   several right answers there; every such question is excluded and logged ``ambiguous``.
5. **Kinds** (the report's categories): a question's own ``type`` (or ``kind``) field, else
   the top-level key of the object file (the question type of the merged release), else
   ``all``.

Parsing is pure (:func:`parse_memdaily`); :func:`load_memdaily` adds the file. A malformed file
raises :class:`~remem.errors.InvalidInputError` naming the file, the place and what is wrong.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal

from remem.errors import InvalidInputError
from remem.eval.labelled import FormatFix, LabelledDataset, QuestionKey
from remem.eval.locomo import (
    DATE_FORMAT,
    Conversation,
    LocomoDataset,
    Question,
    TurnMemory,
    session_turns,
)
from remem.eval.locomo import json_kind as _kind

__all__ = ["POOLINGS", "Pooling", "load_json_file", "load_memdaily", "parse_loose_time",
           "parse_memdaily"]

Pooling = Literal["file", "trajectory"]
POOLINGS: Final[tuple[str, ...]] = ("file", "trajectory")
FORMAT: Final = "memdaily"
SPEAKER: Final = "user"
_EPOCH: Final = datetime(2000, 1, 1, tzinfo=UTC)

_ZH_TIME = re.compile(
    r"(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]"
    r"(?:\s*[\uff08(]?\s*(?:周|星期|礼拜)[一二三四五六日天]\s*[)\uff09]?)?"
    r"(?:\s*(上午|早上|凌晨|中午|下午|傍晚|晚上)?\s*(\d{1,2})\s*[:\uff1a点]\s*(\d{1,2})?\s*分?"
    r"(?:\s*[:\uff1a]\s*\d{1,2}\s*秒?)?)?\s*"
)
#: parts of the day after noon: their clock hours below 12 are afternoon hours
_AFTERNOON = frozenset({"下午", "傍晚", "晚上"})
_SLASH_TIME = re.compile(  # 2023/05/20 (Sat) 02:21 (LongMemEval) and 2023-05-20 02:21
    r"(\d{4})[/.-](\d{1,2})[/.-](\d{1,2})(?:\s*\(\w+\))?(?:[ T]+(\d{1,2}):(\d{2})(?::\d{2})?)?\s*"
)


def parse_loose_time(text: str) -> datetime | None:
    """A date-time from the spellings benchmark files use, as an aware UTC datetime.

    Read: ``"2024年04月01日 周一 08:39"`` (also with seconds, or a part of the day:
    ``下午 3点20分``), ``"2023/05/20 (Sat) 02:21"``, ISO 8601 and LoCoMo's ``"1:56 pm on 8 May,
    2023"``; the time of day may be missing. ``None`` when none fits.
    """
    text = text.strip().lstrip("\ufeff")
    for pattern in (_ZH_TIME, _SLASH_TIME):
        match = pattern.fullmatch(text)
        if match is not None:
            groups = match.groups()
            part = groups[3] if pattern is _ZH_TIME else None
            year, month, day, hour, minute = groups[:3] + groups[-2:]
            clock = int(hour or 0)
            if part in _AFTERNOON and clock < 12:
                clock += 12
            try:
                return datetime(int(year), int(month), int(day), clock, int(minute or 0),
                                tzinfo=UTC)
            except ValueError:
                return None
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        try:
            parsed = datetime.strptime(text, DATE_FORMAT)
        except ValueError:
            return None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def load_json_file(path: str | Path) -> tuple[Any, str]:
    """The decoded JSON at ``path`` and the SHA-256 of its bytes.

    Raises :class:`InvalidInputError` naming the file when it is not UTF-8 JSON (a leading
    byte-order mark is allowed).
    """
    raw = Path(path).read_bytes()
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise InvalidInputError(
            f"{path}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    return data, hashlib.sha256(raw).hexdigest()


def load_memdaily(path: str | Path, *, pool: Pooling = "file") -> LabelledDataset:
    """Read and parse the MemDaily-format JSON file at ``path`` (see the module docstring)."""
    data, sha256 = load_json_file(path)
    return parse_memdaily(data, source=str(path), sha256=sha256, name=Path(path).stem,
                          pool=pool)


def parse_memdaily(data: Any, *, source: str = "<data>", sha256: str = "",
                   name: str = "memdaily", pool: Pooling = "file") -> LabelledDataset:
    """Parse decoded MemDaily JSON; ``name`` names the pool of a list file.

    Raises :class:`InvalidInputError` naming ``source`` and the place for a malformed file.
    """
    if pool not in POOLINGS:
        raise InvalidInputError(f"pool must be one of {', '.join(POOLINGS)}; got {pool!r}")
    groups, skipped = _groups(data, source, name)
    if not groups:
        found = "; found only " + ", ".join(
            f"{path} ({_kind(value)})" for path, value in skipped) if skipped else ""
        raise InvalidInputError(f"{source}: no trajectories found (expected a JSON list of "
                                "trajectories, or an object whose values are such lists)"
                                + found)
    builder = _Builder(source)
    builder.fixes.extend(FormatFix(path, "skipped", (
        f"{_kind(value)} {_short(value)} is not a list of trajectories; ignored"))
        for path, value in skipped)
    for group_name, top_key, trajectories in groups:
        parsed = [_parse_trajectory(raw, f"{source}: {group_name} trajectory {position}",
                                    position)
                  for position, raw in enumerate(trajectories)]
        if pool == "file":
            builder.add_pool(group_name, top_key, parsed)
        else:
            for trajectory in parsed:
                builder.add_pool(f"{group_name}#{trajectory.tid}", top_key, [trajectory])
    return builder.build(sha256)


# -- reading the file -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Message:
    mid: str
    text: str
    time: datetime | None
    place: str | None


@dataclass(frozen=True, slots=True)
class _Question:
    position: int
    qid: str
    text: str
    answer: str | None
    targets: Any
    kind: str | None


@dataclass(frozen=True, slots=True)
class _Trajectory:
    tid: str
    messages: tuple[_Message, ...]
    questions: tuple[_Question, ...]
    time_fixes: int
    no_questions: bool = False


def _groups(data: Any, source: str, name: str
            ) -> tuple[list[tuple[str, str | None, list[Any]]], list[tuple[str, Any]]]:
    """Every list of trajectories in the file: (pool name, top-level key, trajectories); and
    (key path, value) for each value that is neither such a list nor an object of them."""
    if isinstance(data, list):
        return [(name, None, data)], []
    if not isinstance(data, dict):
        raise InvalidInputError(f"{source}: expected a JSON list of trajectories or an object "
                                f"of such lists, got {_kind(data)}")
    found: list[tuple[str, str | None, list[Any]]] = []
    skipped: list[tuple[str, Any]] = []

    def walk(value: Any, path: list[str]) -> None:
        if isinstance(value, list):
            found.append(("/".join(path), path[0], value))
        elif isinstance(value, dict) and "message_list" not in value:
            for key, child in value.items():
                walk(child, [*path, str(key)])
        elif isinstance(value, dict):  # a bare trajectory where a list of them belongs
            raise InvalidInputError(f"{source}: {'/'.join(path) or 'the top level'}: expected "
                                    "a list of trajectories, got one trajectory object; put "
                                    "it in a list")
        else:  # metadata beside the pools ("version": "1.0"): not ours to read
            skipped.append(("/".join(path), value))

    walk(data, [])
    return found, skipped


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def _integral(value: Any) -> Any:
    """``1.0`` as ``1`` (ids written by tools that store every number as a float); any other
    value unchanged."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _text(obj: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> str | None:
    value = obj.get(key)
    if value is None and not required:
        return None
    if key not in obj:
        raise InvalidInputError(f"{where}: missing {key!r}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)  # a few answers are numbers
    if not isinstance(value, str):
        raise InvalidInputError(f"{where}: {key!r} must be a string, got {_kind(value)}")
    return value


def _id(obj: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> str | None:
    """An id field (``tid``, ``mid``, ``qid``) as text: ints and integral floats alike."""
    value = obj.get(key)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return _text(obj, key, where, required=required)


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise InvalidInputError(f"{where}: expected a JSON object, got {_kind(value)}")
    return value


def _parse_trajectory(raw: Any, where: str, position: int) -> _Trajectory:
    obj = _object(raw, where)
    tid = _id(obj, "tid", where, required=False) or str(position)
    where = f"{where} (tid {tid})"
    raw_messages = obj.get("message_list")
    if not isinstance(raw_messages, list):
        raise InvalidInputError(f"{where}: 'message_list' must be a list of messages, got "
                                f"{_kind(raw_messages)}")
    messages: list[_Message] = []
    unparsed = 0
    for index, raw_message in enumerate(raw_messages):
        m_where = f"{where}: message_list[{index}]"
        message = _object(raw_message, m_where)
        time_text = _text(message, "time", m_where, required=False)
        when = parse_loose_time(time_text) if time_text else None
        unparsed += when is None
        messages.append(_Message(_id(message, "mid", m_where) or "",
                                 _text(message, "message", m_where) or "", when,
                                 _text(message, "place", m_where, required=False)))
    mids = [m.mid for m in messages]
    if len(set(mids)) != len(mids):
        dup = next(m for m in mids if mids.count(m) > 1)
        raise InvalidInputError(f"{where}: mid {dup!r} is used by more than one message")
    raw_questions: list[Any] = []
    if obj.get("question_list") is not None:
        raw_questions = obj["question_list"]
        if not isinstance(raw_questions, list):
            raise InvalidInputError(f"{where}: 'question_list' must be a list, got "
                                    f"{_kind(raw_questions)}")
    elif obj.get("QA") is not None:  # the merged release: one question per trajectory
        raw_questions = [obj["QA"]]
    no_questions = obj.get("question_list") is None and obj.get("QA") is None
    questions: list[_Question] = []
    for index, raw_question in enumerate(raw_questions):
        q_where = f"{where}: question_list[{index}]"
        qa = _object(raw_question, q_where)
        if "target_step_id" not in qa:
            raise InvalidInputError(f"{q_where}: missing 'target_step_id'")
        kind = qa.get("type", qa.get("kind"))
        questions.append(_Question(
            index, _id(qa, "qid", q_where, required=False) or str(index),
            _text(qa, "question", q_where) or "", _text(qa, "answer", q_where, required=False),
            qa["target_step_id"], kind if isinstance(kind, str) and kind else None))
    return _Trajectory(tid, tuple(messages), tuple(questions), unparsed, no_questions)


# -- building the dataset -------------------------------------------------------------------


def _targets(raw: Any) -> tuple[list[Any], bool, bool]:
    """The target ids as a list, whether they were given as one scalar value, and whether a
    list of lists was flattened (one level: ``[[0, 1]]`` is ``[0, 1]``)."""
    if not isinstance(raw, list):
        return [raw], True, False
    if not any(isinstance(target, list) for target in raw):
        return raw, False, False
    flat: list[Any] = []
    for target in raw:
        flat.extend(target if isinstance(target, list) else [target])
    return flat, False, True


class _Builder:
    """Turns parsed trajectories into pools (conversations), questions, kinds and fixes."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.conversations: list[Conversation] = []
        self.kinds: dict[QuestionKey, str] = {}
        self.extras: dict[QuestionKey, dict[str, Any]] = {}
        self.fixes: list[FormatFix] = []

    def add_pool(self, pool: str, top_key: str | None, trajectories: Sequence[_Trajectory]
                 ) -> None:
        if any(c.id == pool for c in self.conversations):
            raise InvalidInputError(f"{self.source}: pool {pool!r} appears twice")
        tids = [t.tid for t in trajectories]
        if len(set(tids)) != len(tids):
            dup = next(t for t in tids if tids.count(t) > 1)
            raise InvalidInputError(f"{self.source}: {pool}: tid {dup!r} is used by more than "
                                    "one trajectory (message ids are '{tid}:{mid}')")
        turns = self._turns(pool, trajectories)
        for trajectory in trajectories:
            if trajectory.no_questions:
                self.fixes.append(FormatFix(f"{pool} tid {trajectory.tid}", "no_questions", (
                    "'question_list' and 'QA' are missing or null: no questions; its messages "
                    "stay in the pool as distractors"), pool))
        asked = Counter(q.text.strip() for t in trajectories
                        for q in {q.text.strip(): q for q in t.questions}.values())
        questions: list[Question] = []
        for trajectory in trajectories:
            for q in trajectory.questions:
                where = f"{pool} tid {trajectory.tid} qid {q.qid}"
                if asked[q.text.strip()] > 1:
                    self.fixes.append(FormatFix(where, "ambiguous", (
                        f"{q.text!r} is asked in {asked[q.text.strip()]} trajectories of the "
                        "pool, with a gold in each; excluded"), pool))
                    continue
                gold = self._gold(pool, where, trajectory, q)
                if not gold:
                    self.fixes.append(FormatFix(where, "no_gold", (
                        f"no usable target in {q.targets!r}; question skipped"), pool))
                    continue
                index = len(questions)
                questions.append(Question(pool, index, q.text, 0, gold, q.answer))
                self.kinds[(pool, index)] = q.kind or top_key or "all"
                self.extras[(pool, index)] = {"tid": trajectory.tid, "qid": q.qid}
        now = max(t.event_time for t in turns) if turns else _EPOCH
        self.conversations.append(Conversation(pool, (SPEAKER, SPEAKER), tuple(turns),
                                               tuple(questions), now))

    def _turns(self, pool: str, trajectories: Sequence[_Trajectory]) -> list[TurnMemory]:
        turns: list[TurnMemory] = []
        for session, trajectory in enumerate(trajectories, start=1):
            if trajectory.time_fixes:
                self.fixes.append(FormatFix(f"{pool} tid {trajectory.tid}", "time_unparsed", (
                    f"{trajectory.time_fixes} message time(s) missing or unreadable; each "
                    "takes the time of the message before it"), pool))
            turns.extend(session_turns(pool, session, (
                (f"{trajectory.tid}:{message.mid}", SPEAKER, message.text, message.time)
                for message in trajectory.messages), last_time=_EPOCH))
        return turns

    def _gold(self, pool: str, where: str, trajectory: _Trajectory, q: _Question
              ) -> tuple[str, ...]:
        def fix(kind: str, detail: str) -> None:
            self.fixes.append(FormatFix(where, kind, detail, pool))

        targets, scalar, flattened = _targets(q.targets)
        if scalar:
            fix("scalar_target",
                f"target_step_id {q.targets!r} is a single value; read as [{q.targets!r}]")
        if flattened:
            fix("flattened", f"target_step_id {q.targets!r} is nested; read as {targets!r}")
        known = {m.mid for m in trajectory.messages}
        gold: list[str] = []
        for raw in targets:
            target = _integral(raw)
            if isinstance(target, bool) or not isinstance(target, int | str):
                fix("dropped_token", f"target {raw!r} is not a message id")
                continue
            mid = str(target).strip()
            if isinstance(target, str) and mid.lstrip("-").isdigit() and mid not in known:
                mid = str(int(mid))  # "05" -> "5"
            respelled = isinstance(raw, float) or (isinstance(target, str) and target != mid)
            if mid in known and respelled:
                fix("rewritten", f"target {raw!r} read as mid {mid}")
            if mid not in known:
                fix("dropped_absent", f"target {raw!r} is not a mid of trajectory "
                                      f"{trajectory.tid}")
                continue
            dia_id = f"{trajectory.tid}:{mid}"
            if dia_id in gold:
                fix("deduplicated", f"target {mid} listed twice")
                continue
            gold.append(dia_id)
        return tuple(gold)

    def build(self, sha256: str) -> LabelledDataset:
        data = LocomoDataset(self.source, sha256, tuple(self.conversations), ())
        return LabelledDataset(FORMAT, data, self.kinds, tuple(self.fixes),
                               extras=self.extras)

