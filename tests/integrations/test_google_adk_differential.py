"""RememSessionService against ADK's own InMemorySessionService on seeded random call
sequences: sessions created with and without ids (padded, empty, taken), state in every scope
(app:, user:, temp:, the session's) at creation and in event deltas, events of every shape
(text, function calls and responses, no content, partial chunks, equal re-deliveries, a
stale or deleted session's object, timestamps out of order), get_session with every kind of
num_recent_events and after_timestamp, list_sessions per user and per app, delete_session,
get_user_state. Every answer, every error and every change to the caller's session object
must be equal. ADK's clock and id generator are pinned per call so both services see the
same ones. Skipped without google-adk."""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("google.adk")

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.platform import time as platform_time
from google.adk.platform import uuid as platform_uuid
from google.adk.sessions import InMemorySessionService
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig
from google.adk.sessions.session import Session
from google.genai import types

from remem.integrations.google_adk import RememSessionService

SEEDS = range(4)
OPERATIONS = 150
APPS = ("shop", "bank")
USERS = ("ann", "bob", "chloé")
IDS = (None, "s1", "s2", " s1 ", "s3 ", "", "東京")
KEYS = ("colour", "count", "app:theme", "app:count", "user:name", "user:count", "temp:draft",
        "temp:count")
VALUES: tuple[Any, ...] = (None, True, 0, 7, -2.5, "", "tea", "déjà 🙂", [1, None, "x"],
                           {"a": {"b": [True]}}, [])
LIMITS = (None, 0, 1, 2, 3, 10)


def _state(rng: random.Random) -> dict[str, Any]:
    return {rng.choice(KEYS): copy.deepcopy(rng.choice(VALUES))
            for _ in range(rng.randint(0, 4))}


def _content(rng: random.Random, n: int) -> types.Content | None:
    kind = rng.randrange(5)
    if kind == 0:
        return None
    if kind == 1:
        return types.Content(role="model", parts=[types.Part(function_call=types.FunctionCall(
            id=f"call-{n}", name="lookup", args={"q": rng.choice(("tea", "", "Rome"))}))])
    if kind == 2:
        return types.Content(role="user", parts=[types.Part(
            function_response=types.FunctionResponse(id=f"call-{n}", name="lookup",
                                                     response={"result": [1, "two"]}))])
    words = " ".join(rng.choice(("tea", "Rome", "東京", "🙂", "  ")) for _ in range(3))
    return types.Content(role=rng.choice(("user", "model")), parts=[types.Part(text=words)])


class Pair:
    """The two services, the session objects each caller holds, and the events appended."""

    def __init__(self, remem: RememSessionService) -> None:
        self.services: tuple[BaseSessionService, BaseSessionService] = (
            InMemorySessionService(), remem)
        #: per (app, user, id): the latest session objects (ADK's, remem's), older ones kept
        self.held: dict[tuple[str, str, str], list[tuple[Session, Session]]] = {}
        self.appended: list[Event] = []


def _seen(value: Any) -> Any:
    """What a call returned, comparable across the services."""
    if isinstance(value, Session):
        return ("session", value.id, value.app_name, value.user_id, value.state,
                [_seen(e) for e in value.events], value.last_update_time)
    if isinstance(value, Event):
        return value.model_dump(mode="json")
    if hasattr(value, "sessions"):
        return [_seen(s) for s in value.sessions]
    return value


async def _call(service: BaseSessionService, name: str, *args: Any, **kwargs: Any) -> Any:
    try:
        return ("ok", _seen(await getattr(service, name)(*args, **kwargs)))
    except Exception as exc:  # the error's kind is part of the answer compared
        return ("error", type(exc).__name__)


async def _step(pair: Pair, rng: random.Random, n: int) -> list[tuple[str, Any, Any]]:
    """One random operation on both services: what each answered (equal when they agree)."""
    now = 1_750_000_000.0 + n // 4  # a tick of four calls: equal times are common
    platform_time.set_time_provider(lambda: now)
    platform_uuid.set_id_provider(lambda: f"generated-{n}")
    app, user = rng.choice(APPS), rng.choice(USERS)
    op = rng.choices(("create", "get", "list", "delete", "user_state", "append"),
                     weights=(4, 4, 2, 1, 1, 10))[0]
    results: list[tuple[str, Any, Any]] = []
    if op == "create":
        state, wanted = _state(rng), rng.choice(IDS)
        answers = [await _call(s, "create_session", app_name=app, user_id=user,
                               state=copy.deepcopy(state), session_id=wanted)
                   for s in pair.services]
        results.append((f"create {app} {user} {wanted!r} {state}", *answers))
        if answers[0][0] == "ok":
            made = [await s.get_session(app_name=app, user_id=user, session_id=answers[0][1][1])
                    for s in pair.services]
            assert made[0] is not None and made[1] is not None
            pair.held.setdefault((app, user, made[0].id), []).append((made[0], made[1]))
    elif op == "get":
        known = [key for key in pair.held if key[:2] == (app, user)]
        wanted = rng.choice(known)[2] if known and rng.random() < 0.8 else rng.choice(IDS)
        wanted = f" {wanted}" if wanted and rng.random() < 0.2 else wanted
        recent = rng.choice(LIMITS)
        after = rng.choice((None, None, 0.0, now - rng.randint(0, 60)))
        config = None if recent is None and after is None else GetSessionConfig(
            num_recent_events=recent, after_timestamp=after)
        answers = [await _call(s, "get_session", app_name=app, user_id=user,
                               session_id=wanted or "", config=config)
                   for s in pair.services]
        results.append((f"get {app} {user} {wanted!r} {config}", *answers))
        if answers[0][0] == "ok" and answers[0][1] is not None and rng.random() < 0.5:
            fresh = [await s.get_session(app_name=app, user_id=user, session_id=wanted or "")
                     for s in pair.services]
            assert fresh[0] is not None and fresh[1] is not None
            pair.held.setdefault((app, user, fresh[0].id), []).append((fresh[0], fresh[1]))
    elif op == "list":
        who = rng.choice((None, user))
        results.append((f"list {app} {who}", *[await _call(s, "list_sessions", app_name=app,
                                                           user_id=who)
                                               for s in pair.services]))
    elif op == "delete":
        known = [key for key in pair.held if key[:2] == (app, user)]
        wanted = rng.choice(known)[2] if known else rng.choice(IDS) or "x"
        results.append((f"delete {app} {user} {wanted!r}", *[
            await _call(s, "delete_session", app_name=app, user_id=user, session_id=wanted)
            for s in pair.services]))
    elif op == "user_state":
        results.append((f"user_state {app} {user}", *[
            await _call(s, "get_user_state", app_name=app, user_id=user)
            for s in pair.services]))
    elif pair.held:
        key = rng.choice(sorted(pair.held))
        held = pair.held[key]
        objects = held[-1] if rng.random() < 0.85 else rng.choice(held)  # sometimes stale
        if pair.appended and rng.random() < 0.15:
            event = copy.deepcopy(rng.choice(pair.appended[-5:]))  # a re-delivery
        else:
            event = Event(id=f"event-{n}" if rng.random() < 0.95 else "event-fixed",
                          invocation_id=f"inv-{n // 7}", author=rng.choice(("user", "agent")),
                          content=_content(rng, n), actions=EventActions(state_delta=_state(rng)),
                          timestamp=now - rng.choice((0, 0, 0, 30)),
                          partial=True if rng.random() < 0.05 else None)
        answers = []
        for side, service in enumerate(pair.services):
            answers.append(await _call(service, "append_event", objects[side],
                                       copy.deepcopy(event)))
        results.append((f"append {key} {event.id}", *answers))
        results.append((f"caller's session after append {key}",
                        *[_seen(objects[side]) for side in (0, 1)]))
        if answers[0][0] == "ok":
            pair.appended.append(Event.model_validate(answers[0][1]))
    return results


@pytest.fixture(params=["memory", "file"])
def remem(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RememSessionService]:
    where = ":memory:" if request.param == "memory" else str(tmp_path / "adk.db")
    service = RememSessionService.open(where)
    yield service
    service.close()


@pytest.mark.parametrize("seed", SEEDS)
async def test_remem_answers_as_adks_in_memory_session_service(
        remem: RememSessionService, seed: int) -> None:
    rng = random.Random(seed)
    pair = Pair(remem)
    mismatches: list[str] = []
    kinds: set[str] = set()
    try:
        for n in range(OPERATIONS):
            for what, adk, ours in await _step(pair, rng, n):
                failed = isinstance(adk, tuple) and adk[0] == "error"
                kinds.add(what.split()[0] + (" error" if failed else ""))
                if adk != ours:
                    mismatches.append(f"#{n} {what}:\n  ADK   {adk}\n  remem {ours}")
    finally:
        platform_time.reset_time_provider()
        platform_uuid.reset_id_provider()
    assert not mismatches, f"{len(mismatches)} mismatches:\n" + "\n".join(mismatches[:5])
    # the sequence reached what it is meant to compare
    assert {"create", "create error", "get", "list", "append", "caller's"} <= kinds, kinds
