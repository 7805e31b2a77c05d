"""LangGraph's own test suites, pinned, run on remem: their tests are the referee.

The ``langgraph`` sdist's graph tests run on the checkpointer and store fixtures of its
conftest with remem as their parameter; the ``langgraph-checkpoint`` and
``langgraph-checkpoint-sqlite`` sdists' saver and store tests run with remem's classes in
place of the ones they construct (tests/integrations/langgraph_suite_plugin.py). Each suite
also runs unchanged (its reference: ``InMemorySaver``, or ``SqliteSaver`` for the SQLite
sdist). remem may fail only what the reference fails, or a difference listed below with its
reason; docs/integrations.md lists the same, with the counts.

The suite tests are marked ``langgraph_suite`` (``pytest -m langgraph_suite``) and ``slow``:
about 2 x 2 minutes of CPU, subprocesses; the sdists are downloaded from PyPI once per version
(tests/integrations/langgraph_suites.py). A remem failure the reference does not have is run
again on its own before it counts: their suite has timing-sensitive tests.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph.checkpoint.memory")

from tests.integrations.langgraph_suites import (
    EVENT_LOOP_REFUSAL,
    SUITES,
    Outcome,
    confirmed,
    installed_mismatches,
    is_store_test,
    new_failures,
    run,
    run_all,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"

INTERNALS = "reads or writes InMemorySaver's internal dicts (storage, writes, blobs)"
LIST_ORDER = ("list(None, before=...) across namespaces: SqliteSaver orders every checkpoint "
              "by id; RememSaver, like InMemorySaver, lists each thread and namespace in turn")
FILTER_KEYS = ("expects ValueError for filter keys SqliteSaver cannot put in SQL; RememSaver, "
               "like InMemorySaver, compares metadata in Python: any key is safe")
ASYNC_ERRORS = ("SqliteSaver's sync class refuses async calls; RememSaver, like InMemorySaver, "
                "has both")
DOTTED_KEYS = ("SqliteSaver reads a dotted filter key as a nested path; RememSaver, like "
               "InMemorySaver, matches top-level keys")

#: remem's failures in their suites that the reference does not have: the reason, and
#: whether InMemorySaver fails the test too ("memory", checked here on the SQLite saver tests)
DIFFERENCES: dict[str, tuple[str, str]] = {
    **{f"checkpoint tests/test_memory.py::{test}": (INTERNALS, "") for test in (
        "TestBaseFallbackGetChannelWrites::"
        "test_async_fallback_concurrent_tasks_do_not_interfere",
        "TestBaseFallbackGetChannelWrites::"
        "test_async_fallback_returns_ancestor_writes_oldest_first",
        "TestBaseFallbackGetChannelWrites::test_fallback_returns_ancestor_writes_oldest_first",
        "TestInMemorySaverDeltaChannel::test_get_channel_writes_at_root_returns_empty",
        "TestInMemorySaverDeltaChannel::test_get_channel_writes_collects_ancestor_writes_only",
        "TestInMemorySaverDeltaChannel::test_load_blobs_omits_delta_channel",
        "TestPreDeltaBlobTerminator::test_seed_bounds_walk_without_dropping_its_own_writes",
        "TestPreDeltaBlobTerminator::test_seed_from_pre_delta_ancestor_blob")},
    "sqlite tests/test_sqlite.py::TestSqliteSaver::test_search": (LIST_ORDER, "memory"),
    "sqlite tests/test_aiosqlite.py::TestAsyncSqliteSaver::test_asearch": (LIST_ORDER, "memory"),
    "sqlite tests/test_sqlite.py::TestSqliteSaver::"
    "test_checkpoint_search_sql_injection_prevention": (FILTER_KEYS, "memory"),
    "sqlite tests/test_sqlite.py::TestSqliteSaver::test_informative_async_errors": (
        ASYNC_ERRORS, "memory"),
    "sqlite tests/test_sqlite.py::TestSqliteSaver::"
    "test_metadata_filter_keys_with_hyphens_and_digits": (DOTTED_KEYS, "memory"),
}

#: RememStore's differences (its adapter is changed elsewhere: a fix that makes one of these
#: pass is welcome; a failure not listed here fails the test)
STORE_DIFFERENCES: dict[str, str] = {
    "checkpoint tests/test_store.py::test_embed_with_path":
        "unscored fill: InMemoryStore pads a vector-search page with an unindexed item",
    "sqlite tests/test_async_store.py::test_no_running_loop[store='file']":
        "AsyncSqliteStore's sync methods refuse the event loop's thread; RememStore's run",
    "sqlite tests/test_async_store.py::test_no_running_loop[store='memory']":
        "AsyncSqliteStore's sync methods refuse the event loop's thread; RememStore's run",
    "sqlite tests/test_store.py::test_search_items":
        "a whole list as a filter value is refused (UnsupportedError naming $contains)",
    "sqlite tests/test_async_store.py::test_search_items":
        "a whole list as a filter value is refused (UnsupportedError naming $contains)",
    "sqlite tests/test_store.py::test_nonnull_migrations": "reads SqliteStore.MIGRATIONS",
    "sqlite tests/test_store.py::test_vector_store_initialization":
        "reads SqliteStore's connection (store.conn)",
}

SAVER_FILES = ("tests/test_sqlite.py", "tests/test_aiosqlite.py")

#: the classes the plugin must have replaced with remem's in each sdist's test modules
REBOUND = {
    "checkpoint": {"savers": {"tests.test_memory.InMemorySaver"},
                   "stores": {"tests.test_store.InMemoryStore"}},
    "sqlite": {"savers": {"tests.test_sqlite.SqliteSaver", "tests.test_aiosqlite.AsyncSqliteSaver"},
               "stores": {"tests.test_store.SqliteStore", "tests.test_async_store.AsyncSqliteStore",
                          "tests.test_ttl.SqliteStore", "tests.test_ttl.AsyncSqliteStore"}},
}


def _rebound(log: str) -> set[str]:
    """The names the plugin's summary line says it rebound."""
    for line in log.splitlines():
        if line.startswith("langgraph_suite_plugin:") and " rebound=" in line:
            return set(line.split(" rebound=", 1)[1].strip().split(","))
    return set()


def _jobs() -> int:
    return int(os.environ.get("REMEM_LANGGRAPH_SUITE_JOBS", "3"))


@pytest.fixture(scope="module")
def suites(tmp_path_factory: pytest.TempPathFactory,
           pytestconfig: pytest.Config) -> dict[str, Any]:
    """Every suite on remem and on its reference (3 runs at a time: the SQLite suite's TTL
    tests mostly sleep), InMemorySaver on the SQLite saver tests, and remem's failures the
    reference does not have, each run again on its own."""
    mismatched = installed_mismatches()
    if mismatched:
        pytest.fail("the installed LangGraph is not the one whose tests are pinned "
                    f"({'; '.join(mismatched)}): pip install -e '.[test]', or move "
                    "PINS in tests/integrations/langgraph_suites.py and the test extra")
    workdir = tmp_path_factory.mktemp("langgraph-suites")
    runs = [(SUITES[name], variant) for name in ("langgraph", "sqlite", "checkpoint")
            for variant in ("remem", SUITES[name].reference)]
    results: dict[str, Any] = run_all(runs, workdir, jobs=_jobs())
    results["sqlite"]["memory"] = run(SUITES["sqlite"], ["memory"], workdir / "memory",
                                      select=SAVER_FILES)["memory"]
    extra: dict[str, dict[str, str]] = {}
    for name, outcomes in results.items():
        suite = SUITES[name]
        found = new_failures(outcomes["remem"], outcomes[suite.reference])
        unlisted = [test for test in found if f"{name} {test}" not in DIFFERENCES
                    and f"{name} {test}" not in STORE_DIFFERENCES]
        again = confirmed(suite, outcomes["remem"], unlisted, workdir / name)
        extra[name] = {test: message for test, message in found.items()
                       if test not in unlisted or test in again}
    capture = pytestconfig.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        print("\n" + _summary(results, extra))  # the counts, in CI's log
    return {"results": results, "extra": extra}


def _summary(results: dict[str, dict[str, Outcome]], extra: dict[str, dict[str, str]]) -> str:
    lines = ["LangGraph's own suites (passed/failed; remem's failures the reference passes):"]
    for name, outcomes in results.items():
        suite = SUITES[name]
        for part in ("stores", "savers") if suite.store_files else ("graphs",):
            counts = []
            for variant, outcome in outcomes.items():
                tests = [t for t in outcome.outcomes if is_store_test(suite, t) == (
                    part == "stores")]
                if not tests:
                    continue
                failed = [t for t in tests if outcome.outcomes[t] == "failed"]
                loop = sum(EVENT_LOOP_REFUSAL in outcome.messages.get(t, "") for t in failed)
                counts.append(f"{variant} {len(tests) - len(failed)}/{len(failed)}"
                              + (f" ({loop} event-loop refusals)" if loop else ""))
            new = sum(is_store_test(suite, t) == (part == "stores") for t in extra[name])
            lines.append(f"  {name} {part}: {', '.join(counts)}; remem only: {new}")
    return "\n".join(lines)


def _same_tests(ours: Outcome, reference: Outcome, floor: int) -> None:
    assert len(ours.outcomes) >= floor, ours.log[-3000:]
    assert set(ours.outcomes) == set(reference.outcomes)


@pytest.mark.langgraph_suite
@pytest.mark.slow
def test_their_graph_tests_pass_on_remem(suites: dict[str, Any]) -> None:
    outcomes = suites["results"]["langgraph"]
    ours = outcomes["remem"]
    _same_tests(ours, outcomes["memory"], floor=600)
    assert "fixtures=async_checkpointer,async_store,sync_checkpointer,sync_store" in ours.log
    assert any("[remem" in nodeid for nodeid in ours.nodeids.values())
    unexpected = {test: message for test, message in suites["extra"]["langgraph"].items()
                  if f"langgraph {test}" not in DIFFERENCES}
    assert unexpected == {}


@pytest.mark.langgraph_suite
@pytest.mark.slow
@pytest.mark.parametrize("name", ["checkpoint", "sqlite"])
def test_their_saver_tests_pass_on_remem(suites: dict[str, Any], name: str) -> None:
    suite, outcomes = SUITES[name], suites["results"][name]
    ours = outcomes["remem"]
    _same_tests(ours, outcomes[suite.reference], floor=100)
    assert REBOUND[name]["savers"] <= _rebound(ours.log)
    unexpected = {test: message for test, message in suites["extra"][name].items()
                  if not is_store_test(suite, test) and f"{name} {test}" not in DIFFERENCES}
    assert unexpected == {}
    # the differences whose reason is "as InMemorySaver": InMemorySaver fails them too
    memory = outcomes.get("memory")
    for key, (_reason, also) in DIFFERENCES.items():
        if key.startswith(f"{name} ") and also == "memory":
            assert memory is not None and memory.outcomes.get(key.split(" ", 1)[1]) == "failed"


@pytest.mark.langgraph_suite
@pytest.mark.slow
@pytest.mark.parametrize("name", ["checkpoint", "sqlite"])
def test_their_store_tests_on_remem(suites: dict[str, Any], name: str) -> None:
    suite = SUITES[name]
    ours = suites["results"][name]["remem"]
    stores = [t for t in ours.outcomes if is_store_test(suite, t)]
    assert len(stores) >= 100
    assert REBOUND[name]["stores"] <= _rebound(ours.log)
    unexpected = {test: message for test, message in suites["extra"][name].items()
                  if is_store_test(suite, test) and f"{name} {test}" not in STORE_DIFFERENCES}
    assert unexpected == {}


def test_every_difference_is_in_the_docs() -> None:
    docs = DOCS.read_text()
    for key in [*DIFFERENCES, *STORE_DIFFERENCES]:
        test = key.split("::")[-1].split("[")[0]
        assert test in docs, f"docs/integrations.md does not list {key}"
