"""Subjects: a question about a named person searched again inside that person's sessions.

A long personal history pooled with many others' is full of near-alike facts: hundreds of
people buy coffee at the same shops, take the same trains and see the same doctors, and most
of what one of them says never names them ("我早上在瑞幸买了杯生椰拿铁"). A question
about one of them ("陈美玲这个月买了几次咖啡") matches every coffee message of the pool as
well as hers; only the session (thread) where she introduced herself ("我叫陈美玲") tells hers
apart. The near-alike facts of *other* people are the distractors.

:class:`Subjects` makes the person a question names a constraint, in three steps around the
ordinary search (run by :func:`remem.memory.operations.search_flow`):

1. **Probe.** The names the question mentions (:func:`~remem.retrieval.mentions.mentioned_names`)
   are searched for by keyword alone (``probe`` hits). The sessions of the probe hits that
   hold a name as written are the subject's sessions (:func:`subject_sessions`), unless
   they are more than ``max_sessions``: a name said everywhere (a chat's speakers) picks no
   one, and the stage does nothing.
2. **Within.** The question is searched again, restricted to those sessions.
3. **Merge.** The best ``take`` memories of that second search lead the page, then the
   ordinary results follow (:func:`merge_subject`), each memory once.

A question that names no one, or names someone no session names, ranks as without the
stage. The pure parts are here; the store searches run in the memory search's flow.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from remem.retrieval.options import check_count, check_field

__all__ = ["Subjects", "merge_subject", "subject_sessions"]

H = TypeVar("H", bound=Hashable)


@dataclass(frozen=True, slots=True)
class Subjects:
    """Search a named subject's own sessions first (see the module docstring).

    ``take``: how many of the subject's best memories lead the page. ``probe``: how many
    keyword hits of the names are read for their sessions. ``max_sessions``: the most
    sessions a name may be found in and still pick a subject. ``field``: the value field
    naming the session.
    """

    field: str = "source.thread_id"
    take: int = 10
    probe: int = 5
    max_sessions: int = 2

    def __post_init__(self) -> None:
        check_field("Subjects", "field", self.field, holding="the session",
                    example="source.thread_id")
        check_count("Subjects", "take", self.take)
        check_count("Subjects", "probe", self.probe)
        check_count("Subjects", "max_sessions", self.max_sessions)


def subject_sessions(names: Sequence[str], hits: Sequence[tuple[str, Hashable | None]],
                     stage: Subjects) -> list[Hashable]:
    """The sessions, in hit order, of the probe ``hits`` ((text, session) pairs) whose text
    holds one of ``names`` as written; none when they are more than ``stage.max_sessions``
    (the name picks no one) or no hit holds a name."""
    wanted = [name for name in names if name.strip()]
    found: list[Hashable] = []
    for text, session in hits[:stage.probe]:
        if session is not None and session not in found and any(n in text for n in wanted):
            found.append(session)
    return found if len(found) <= stage.max_sessions else []


def merge_subject(subject: Sequence[H], ordinary: Sequence[H], stage: Subjects) -> list[H]:
    """The first ``stage.take`` of ``subject`` (the subject's sessions searched), then
    ``ordinary`` (the ordinary search's results, best first), each item (an id) once."""
    head = list(dict.fromkeys(subject[:stage.take]))
    taken = set(head)
    return head + [item for item in ordinary if item not in taken]
