"""Durable chat model usage (remem.usage): what a recording model writes, through the
scripted model and the real OpenAI client against the loopback server; concurrent writers
in threads and in two processes on one SQLite file, and on PostgreSQL; a failed write kept
and written later; the day window's rules; the plots' geometry; memory changes per day
from the history."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
import threading
from datetime import date
from pathlib import Path

import pytest

from remem.api import Memory
from remem.background.queue import JobQueue
from remem.background.storage import PostgresJobStorage
from remem.db import Database
from remem.errors import InvalidInputError
from remem.llm import ScriptedModel
from remem.llm.base import ChatRequest, Usage
from remem.llm.openai import OpenAIChatModel
from remem.messages import Message
from remem.store import open_store
from remem.testing import LoopbackServer
from remem.testing.chat_server import ChatReply
from remem.usage import (
    RecordingChatModel,
    Series,
    UsageRecorder,
    count_history,
    day_of,
    day_window,
    stacked_bars,
)
from remem.usage.storage import SQLUsageStorage

DAY = 1_780_000_000.0  # 2026-05-28 20:26:40 UTC
TODAY = day_of(DAY)


def ask(text: str, operation: str) -> ChatRequest:
    return ChatRequest((Message.user(text),), operation=operation)


def sqlite_recorder(path: Path, **options: float) -> UsageRecorder:
    return UsageRecorder(SQLUsageStorage(Database(path, **options)), owns_storage=True,
                         clock=lambda: DAY)


def test_day_window_defaults_and_rules() -> None:
    window = day_window(today=date(2026, 3, 2), days=3)
    assert window.days() == ["2026-02-28", "2026-03-01", "2026-03-02"]
    assert window.end() - window.start() == 3 * 86400
    assert day_window("2026-01-01", "2026-01-01").days() == ["2026-01-01"]
    with pytest.raises(InvalidInputError, match=r"since must be a UTC day written YYYY-MM-DD"):
        day_window("yesterday", "2026-01-01")
    with pytest.raises(InvalidInputError, match=r"until must be a UTC day.*'2026-02-30'"):
        day_window("2026-01-01", "2026-02-30")
    with pytest.raises(InvalidInputError, match=r"since \(2026-01-02\) is after until"):
        day_window("2026-01-02", "2026-01-01")
    with pytest.raises(InvalidInputError, match=r"covers 368 days, more than 367"):
        day_window("2025-01-01", "2026-01-03")
    assert day_window(until="0001-01-02").days() == ["0001-01-01", "0001-01-02"]
    assert day_window("9999-12-31", "9999-12-31").end() > day_window().start()


def test_recording_model_writes_each_call_per_tenant_day_operation_and_model(
        tmp_path: Path) -> None:
    recorder = sqlite_recorder(tmp_path / "usage.db")
    inner = ScriptedModel(default="fine", model="scripted-1")
    acme = RecordingChatModel(inner, recorder, tenant="acme")
    beta = RecordingChatModel(inner, recorder, tenant="beta")
    answers = [acme.complete(ask("one two three", "extract")),
               acme.complete(ask("four five", "extract")),
               acme.complete(ask("six", "summarize")),
               beta.complete(ask("seven eight", "extract"))]
    spent = [a.usage for a in answers]
    report = recorder.report(day_window(TODAY, TODAY), tenant="acme")
    assert {(r.operation, r.model): r.usage for r in report.rows} == {
        ("extract", "scripted-1"): spent[0] + spent[1], ("summarize", "scripted-1"): spent[2]}
    assert report.total() == Usage.total(spent[:3])
    assert report.by_day()[0].calls == 3
    assert recorder.report(day_window(TODAY, TODAY), tenant="beta").total() == spent[3]
    assert recorder.report(day_window(TODAY, TODAY), tenant=None).total() == Usage.total(spent)
    # the inner model's in-process ledger still counts every call
    assert inner.usage.snapshot() == Usage.total(spent)
    assert acme.usage is inner.usage and acme.requests is inner.requests
    # another day is another row; a window without it does not see it
    recorder.record("acme", "extract", "scripted-1", Usage(1, 5, 5), at=DAY + 86400)
    assert recorder.report(day_window(TODAY, TODAY), tenant="acme").total().calls == 3
    recorder.close()
    again = sqlite_recorder(tmp_path / "usage.db")  # durable: a new process's view
    assert again.report(day_window(TODAY, day_of(DAY + 86400)), tenant="acme").total() == \
        Usage.total(spent[:3]) + Usage(1, 5, 5)
    again.close()


def test_the_openai_client_records_the_token_fields_the_server_sent(tmp_path: Path) -> None:
    recorder = sqlite_recorder(tmp_path / "usage.db")
    with LoopbackServer() as server:
        server.chat.add(ChatReply("first", usage=(123, 45)), ChatReply("second", usage=(7, 3)))
        client = OpenAIChatModel("gpt-test", base_url=server.url, api_key="sk-test",
                                 max_retries=0)
        model = RecordingChatModel(client, recorder, tenant="acme")
        assert model.complete(ask("hello", "extract")).text == "first"
        assert asyncio.run(model.acomplete(ask("again", "reconcile"))).text == "second"
        client.close()
    report = recorder.report(day_window(TODAY, TODAY), tenant="acme")
    assert {r.operation: (r.model, r.usage) for r in report.rows} == {
        "extract": ("gpt-test", Usage(1, 123, 45)), "reconcile": ("gpt-test", Usage(1, 7, 3))}
    recorder.close()


_CHILD = """
import sys
from remem.db import Database
from remem.llm.base import Usage
from remem.usage import UsageRecorder
from remem.usage.storage import SQLUsageStorage
recorder = UsageRecorder(SQLUsageStorage(Database(sys.argv[1])), owns_storage=True,
                         clock=lambda: float(sys.argv[2]))
for _ in range(int(sys.argv[3])):
    recorder.record("acme", "extract", "m", Usage(1, 10, 1))
recorder.close()
"""


def test_concurrent_threads_and_a_second_process_lose_no_count(tmp_path: Path) -> None:
    path = tmp_path / "usage.db"
    first, second = sqlite_recorder(path), sqlite_recorder(path)
    first.storage.setup()
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(path), str(DAY), "150"])

    def calls(recorder: UsageRecorder) -> None:
        for _ in range(50):
            recorder.record("acme", "extract", "m", Usage(1, 10, 1))

    threads = [threading.Thread(target=calls, args=(r,)) for r in (first, second) * 3]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert child.wait(timeout=120) == 0
    total = first.report(day_window(TODAY, TODAY), tenant="acme").total()
    assert total == Usage(450, 4500, 450)
    assert first.errors == second.errors == 0
    first.close()
    second.close()


def test_a_failed_write_is_kept_and_written_with_the_next_call(tmp_path: Path) -> None:
    path = tmp_path / "usage.db"
    recorder = sqlite_recorder(path, busy_timeout=0.05)
    recorder.storage.setup()
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    recorder.record("acme", "extract", "m", Usage(1, 100, 10))  # does not raise
    assert recorder.errors == 1 and recorder.unwritten() == Usage(1, 100, 10)
    blocker.execute("ROLLBACK")
    blocker.close()
    recorder.record("acme", "extract", "m", Usage(1, 1, 1))
    assert recorder.unwritten() == Usage()
    assert recorder.report(day_window(TODAY, TODAY), tenant="acme").total() == \
        Usage(2, 101, 11)
    recorder.close()


def test_postgres_upserts_add_across_threads(pg_database: str) -> None:
    queue = JobQueue(PostgresJobStorage(pg_database, schema="usage_pg", pool_max_size=4))
    recorder = UsageRecorder(queue, owns_storage=True, clock=lambda: DAY)

    def calls(tenant: str) -> None:
        for n in range(40):
            recorder.record(tenant, ("extract", "summarize")[n % 2], "m", Usage(1, 3, 2))

    threads = [threading.Thread(target=calls, args=(t,)) for t in ("acme", "acme", "beta")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    window = day_window(TODAY, TODAY)
    acme = recorder.report(window, tenant="acme")
    assert acme.by_operation() == {"extract": Usage(40, 120, 80),
                                   "summarize": Usage(40, 120, 80)}
    assert recorder.report(window, tenant="beta").total() == Usage(40, 120, 80)
    assert recorder.errors == 0

    def changes() -> None:  # memory changes as the stores' observers add them
        for _ in range(30):
            queue.counters.add_activity([("acme", TODAY, "add", 2),
                                         ("acme", TODAY, "delete", 1)])

    threads = [threading.Thread(target=changes) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    day = recorder.activity(window, tenant="acme").days[-1]
    assert (day.written, day.changed, day.removed) == (180, 0, 90)
    assert recorder.activity(window, tenant="beta").events == 0
    recorder.close()


def test_memory_changes_per_day_are_counted_as_written_and_match_the_history(
        tmp_path: Path) -> None:
    from remem.background.access import recorder_of

    store = open_store(str(tmp_path / "m.db"))
    memory = Memory(store)
    added = memory.add("tea at five", user_id="u", infer=False).added[0]
    memory.add("coffee at nine", user_id="u", infer=False)
    memory.update(added.id, "tea at six")
    memory.delete(added.id)
    observer = recorder_of(store)
    assert observer is not None
    observer.flush()
    today = day_window()
    recorder = UsageRecorder.beside(store)
    counted = recorder.activity(today, tenant="")
    day = counted.days[-1]
    assert (day.written, day.changed, day.removed) == (2, 1, 1)
    assert counted.events == 4 and sum(d.total for d in counted.days[:-1]) == 0
    assert recorder.activity(today, tenant="acme").events == 0
    history = count_history(store, today)
    assert history.days == counted.days and history.complete
    capped = count_history(store, today, max_events=3)
    assert not capped.complete and capped.events == 3
    recorder.close()
    memory.close()


def test_stacked_bars_scale_to_whole_round_ticks() -> None:
    chart = stacked_bars(["2026-01-01", "2026-01-02", "2026-01-03"],
                         [Series("a", (1, 0, 6)), Series("b", (0, 0, 3), "#000")],
                         title="Calls", y_label="calls", height=200)
    # 9 at most: four steps of 5 (steps are 1, 2 or 5 times a power of ten)
    assert [t.text for t in chart.y_ticks] == ["0", "5", "10", "15", "20"]
    bottom = chart.plot_bottom
    tall = [b for b in chart.bars if b.label.startswith("2026-01-03")]
    assert [b.label for b in tall] == ["2026-01-03: 6 a", "2026-01-03: 3 b"]
    assert tall[0].y + tall[0].height == pytest.approx(bottom)  # first series at the bottom
    assert tall[0].height == pytest.approx(2 * tall[1].height)
    assert tall[1].y == pytest.approx(bottom - 150 * 9 / 20)  # plot area 150 high
    many = stacked_bars(["d"], [Series("a", (12_345,))], title="t", y_label="y")
    assert [t.text for t in many.y_ticks] == ["0", "5k", "10k", "15k", "20k"]
    assert len(chart.bars) == 3  # no bar for a zero
    assert chart.summary == "Calls, 2026-01-01 to 2026-01-03: 10 in total, most (9) on " \
                            "2026-01-03."
    assert chart.rows()[0] == ("2026-01-01", [1, 0])
    with pytest.raises(InvalidInputError, match="series 'a' has 1 values for 3 days"):
        stacked_bars(["x", "y", "z"], [Series("a", (1,))], title="t", y_label="y")


def test_remem_usage_prints_the_days_and_refuses_bad_dates(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from remem.cli import cli

    path = tmp_path / "usage.db"
    recorder = sqlite_recorder(path)
    recorder.record("acme", "extract", "m", Usage(2, 30, 4))
    recorder.record("beta", "summarize", "m", Usage(1, 5, 1))
    recorder.close()
    runner = CliRunner()
    args = ["usage", "--db", str(path), "--since", TODAY, "--until", TODAY]
    shown = runner.invoke(cli, [*args, "--tenant", "acme", "--json"])
    assert shown.exit_code == 0, shown.output
    body = json.loads(shown.output)
    assert body["total"] == {"calls": 2, "input_tokens": 30, "output_tokens": 4}
    assert list(body["by_operation"]) == ["extract"] and body["memories"]["events"] == 0
    text = runner.invoke(cli, args)
    assert text.exit_code == 0, text.output
    assert "total: 3 calls, 35 input and 5 output tokens" in text.output
    assert "operation summarize: 1 calls" in text.output
    bad = runner.invoke(cli, ["usage", "--db", str(path), "--until", "2026-13-01"])
    assert bad.exit_code == 2 and "until must be a UTC day" in bad.output
