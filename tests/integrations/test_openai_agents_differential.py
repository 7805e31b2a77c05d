"""RememSession against the SDK's SQLiteSession on seeded random call sequences: every kind of
item the SDK produces (messages in both shapes, empty content, images, function calls and
their outputs, reasoning, item references, hosted tool calls, compaction), get_items with
every kind of limit and with session_settings, pop_item, clear_session, two sessions sharing
one store. Every answer must be equal. Skipped without openai-agents."""

from __future__ import annotations

import asyncio
import itertools
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents.memory")

from agents import SQLiteSession
from agents.memory import SessionSettings

from remem.integrations.openai_agents import RememSession
from remem.threads import ThreadStore

SEEDS = range(8)
OPERATIONS = 360
WORDS = ("tea", "Rome", "weather", "東京", "déjà vu", "🙂", "", "  ", "a\nb", "NULL", "'; --")
#: the limits get_items is called with (None reads session_settings)
LIMITS = (None, None, -1, -7, 0, 1, 2, 3, 5, 50, 100_001)
#: the session_settings of the views each sequence reads through
SETTINGS: tuple[Any, ...] = (None, SessionSettings(limit=3), {"limit": 0},
                             SessionSettings(limit=-1), {"limit": 1})


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 4)))


def random_item(rng: random.Random, n: int) -> dict[str, Any]:
    """One SDK input item of a random kind (the shapes the SDK's run loop saves)."""
    kind = rng.randrange(14)
    if kind == 0:
        return {"role": "user", "content": _text(rng)}
    if kind == 1:
        return {"role": "user", "content": [
            {"type": "input_text", "text": _text(rng)},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=",
             "detail": "auto"}][: rng.randint(0, 2)]}
    if kind == 2:
        return {"id": f"msg_{n}", "type": "message", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": _text(rng), "annotations": [],
                             "logprobs": [{"token": "a", "logprob": -0.25, "bytes": [97]}]}]}
    if kind == 3:
        return {"role": rng.choice(("system", "developer")), "content": _text(rng)}
    if kind == 4:
        arguments = rng.choice(('{"city": "Rome"}', "", "{not json", '["a"]', "{}"))
        return {"type": "function_call", "call_id": f"call_{n}", "name": "get_weather",
                "arguments": arguments, "id": f"fc_{n}", "status": "completed"}
    if kind == 5:
        output: Any = rng.choice((_text(rng), "", [{"type": "input_text", "text": _text(rng)}]))
        return {"type": "function_call_output", "call_id": f"call_{n}", "output": output}
    if kind == 6:
        summary = [{"type": "summary_text", "text": _text(rng)}] if rng.random() < 0.5 else []
        return {"type": "reasoning", "id": f"rs_{n}", "summary": summary,
                "encrypted_content": "gAAAA" * rng.randint(0, 3)}
    if kind == 7:
        return {"type": "item_reference", "id": f"msg_{rng.randint(0, n)}"}
    if kind == 8:
        return {"type": "web_search_call", "id": f"ws_{n}", "status": "completed",
                "action": {"type": "search", "query": _text(rng), "sources": None}}
    if kind == 9:
        return {"type": "file_search_call", "id": f"fs_{n}", "queries": [_text(rng)],
                "status": "completed", "results": None}
    if kind == 10:
        return {"type": "mcp_call", "id": f"mcp_{n}", "server_label": "docs", "name": "lookup",
                "arguments": "{}", "output": None, "error": None}
    if kind == 11:
        return {"type": "compaction", "id": f"cmp_{n}", "encrypted_content": "x" * 40}
    if kind == 12:
        return {"role": "assistant", "content": [], "type": "message"}
    return {"type": "function_call", "call_id": f"call_{n}", "name": "",
            "arguments": json.dumps({"n": n, "big": 2**70, "x": 0.1, "nested": {"k": [1, None]}})}


class Pair:
    """The same session id read and written through a SQLiteSession and a RememSession, with
    one view per session_settings for each."""

    def __init__(self, session_id: str, sdk_path: Path, threads: ThreadStore) -> None:
        self.sdk = [SQLiteSession(session_id, sdk_path, session_settings=settings)
                    for settings in SETTINGS]
        self.remem = [RememSession(session_id, threads, session_settings=settings)
                      for settings in SETTINGS]

    def close(self) -> None:
        for session in self.sdk:
            session.close()


async def _answer(session: Any, op: tuple[Any, ...]) -> Any:
    name, argument = op
    try:
        if name == "add":
            return await session.add_items(json.loads(json.dumps(argument)))
        if name == "get":
            return await session.get_items(argument) if argument is not None else \
                await session.get_items()
        if name == "pop":
            return await session.pop_item()
        return await session.clear_session()
    except Exception as error:  # compared by kind between the two sessions
        return ("error", type(error).__name__)


def random_ops(rng: random.Random) -> Iterator[tuple[int, int, tuple[Any, ...]]]:
    """(session, view, operation) triples."""
    counter = itertools.count()
    for _ in range(OPERATIONS):
        session, view = rng.randrange(2), rng.randrange(len(SETTINGS))
        roll = rng.random()
        if roll < 0.4:
            items = [random_item(rng, next(counter)) for _ in range(rng.choice((0, 1, 1, 2, 4)))]
            yield session, view, ("add", items)
        elif roll < 0.75:
            yield session, view, ("get", rng.choice(LIMITS))
        elif roll < 0.95:
            yield session, view, ("pop", None)
        else:
            yield session, view, ("clear", None)


def run_differential(seed: int, tmp_path: Path, threads: ThreadStore) -> tuple[int, list[str]]:
    """Operations run and the mismatches (a description of each) for one seed."""
    rng = random.Random(seed)
    pairs = [Pair(f"chat-{seed}-{i}", tmp_path / f"sdk{seed}.db", threads) for i in range(2)]
    mismatches: list[str] = []
    count = 0

    async def scenario() -> None:
        nonlocal count
        for session, view, op in random_ops(rng):
            pair = pairs[session]
            want = await _answer(pair.sdk[view], op)
            got = await _answer(pair.remem[view], op)
            count += 1
            if got != want:
                mismatches.append(f"seed {seed} op {count} {op!r} view {SETTINGS[view]!r}: "
                                  f"remem {got!r} != sdk {want!r}")
        for pair in pairs:  # and the whole histories at the end
            if await pair.remem[0].get_items() != await pair.sdk[0].get_items():
                mismatches.append(f"seed {seed}: final histories differ")

    asyncio.run(scenario())
    for pair in pairs:
        pair.close()
    return count, mismatches


def test_random_sequences_match_sqlite_session(tmp_path: Path) -> None:
    threads = ThreadStore(tmp_path / "remem.db")
    total, mismatches = 0, []
    for seed in SEEDS:
        count, found = run_differential(seed, tmp_path, threads)
        total += count
        mismatches += found
    threads.close()
    print(f"\n{len(SEEDS)} seeds, {total} operations, {len(mismatches)} mismatches")
    assert total == len(SEEDS) * OPERATIONS
    assert mismatches == [], "\n".join(mismatches[:5])


@pytest.mark.parametrize("backend", ["sqlite-memory", "postgres"])
def test_one_sequence_on_other_thread_stores(backend: str, tmp_path: Path,
                                            request: pytest.FixtureRequest) -> None:
    threads = ThreadStore(":memory:") if backend == "sqlite-memory" else \
        ThreadStore(request.getfixturevalue("pg_database"), schema="sessions")
    count, mismatches = run_differential(100, tmp_path, threads)
    threads.close()
    assert count == OPERATIONS and mismatches == []
