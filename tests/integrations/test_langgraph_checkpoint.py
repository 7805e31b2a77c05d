"""RememSaver (LangGraph's checkpointer over remem threads): the same calls as LangGraph's
InMemorySaver give the same answers, and a LangGraph graph runs, resumes, time-travels and
forks on it with RememStore beside it, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import itertools
import operator
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

pytest.importorskip("langgraph.checkpoint.memory")

from langchain_core.language_models.fake_chat_models import (
    GenericFakeChatModel,
)
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.store.base import BaseStore

from remem.errors import InvalidInputError
from remem.integrations.langgraph import RememSaver, RememStore
from remem.threads import ThreadStore

_names = itertools.count()


@pytest.fixture(params=["sqlite-memory", "sqlite-file", "postgres"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], str]]:
    def make() -> str:
        if request.param == "sqlite-memory":
            return ":memory:"
        if request.param == "sqlite-file":
            return str(tmp_path / f"graph{next(_names)}.db")
        return str(request.getfixturevalue("pg_database"))

    yield make


def _saver(location: str) -> RememSaver:
    if location.startswith("postgres"):
        return RememSaver(ThreadStore(location, schema=f"cp{next(_names)}"), owns_threads=True)
    return RememSaver.open(location)


def _checkpoint(step: int, values: dict[str, Any]) -> dict[str, Any]:
    checkpoint: dict[str, Any] = dict(empty_checkpoint())
    checkpoint["id"] = f"1ef{step:05d}-0000-6000-8000-000000000000"
    checkpoint["channel_values"] = values
    checkpoint["channel_versions"] = {name: step for name in values}
    return checkpoint


def _calls(saver: BaseCheckpointSaver[Any]) -> list[Any]:
    """One scripted sequence of every API call; what each returned."""
    out: list[Any] = []
    config: Any = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
    configs = []
    for step in range(4):
        checkpoint = _checkpoint(step, {"messages": [f"m{i}" for i in range(step + 1)],
                                        "count": step})
        versions = {"messages": step} if step % 2 else {"messages": step, "count": step}
        config = saver.put(config, checkpoint,  # type: ignore[arg-type]
                           {"source": "loop", "step": step, "parents": {}},
                           versions)  # type: ignore[arg-type]
        configs.append(config)
        out.append(config)
        saver.put_writes(config, [("messages", f"w{step}"), ("count", step)], task_id="a",
                         task_path="~0")
        saver.put_writes(config, [("messages", "again")], task_id="a")  # idx 0 exists: kept
        saver.put_writes(config, [("__error__", "boom")], task_id="b")
    other: Any = {"configurable": {"thread_id": "t2", "checkpoint_ns": "sub:1"}}
    saver.put(other, _checkpoint(9, {"x": 1}), {"source": "input", "step": -1},  # type: ignore[arg-type]
              {"x": 9})
    out.append(saver.get_tuple({"configurable": {"thread_id": "t1"}}))
    out.append(saver.get_tuple(configs[1]))
    out.append(saver.get_tuple({"configurable": {"thread_id": "nope"}}))
    out.append(list(saver.list({"configurable": {"thread_id": "t1"}})))
    out.append(list(saver.list({"configurable": {"thread_id": "t1"}}, limit=2)))
    out.append(list(saver.list({"configurable": {"thread_id": "t1"}}, before=configs[2])))
    out.append(list(saver.list({"configurable": {"thread_id": "t1"}}, filter={"step": 1})))
    out.append(list(saver.list(None, filter={"source": "input"})))
    out.append(list(saver.list({"configurable": {"thread_id": "t2", "checkpoint_ns": "sub:1"}})))
    saver.delete_thread("t1")
    out.append(saver.get_tuple({"configurable": {"thread_id": "t1"}}))
    out.append(len(list(saver.list(None))))
    return out


def _comparable(value: Any) -> Any:
    """Checkpoint tuples without what differs by design: the ``ts`` each saver stamps."""
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    if hasattr(value, "_asdict"):
        data = value._asdict()
        data["checkpoint"] = {k: v for k, v in data["checkpoint"].items() if k != "ts"}
        return data
    return value


def test_same_answers_as_in_memory_saver(location: Callable[[], str]) -> None:
    saver = _saver(location())
    try:
        assert _comparable(_calls(saver)) == _comparable(_calls(InMemorySaver()))
    finally:
        saver.close()


def test_async_twins_agree(location: Callable[[], str]) -> None:
    saver = _saver(location())
    config: Any = {"configurable": {"thread_id": "a", "checkpoint_ns": ""}}

    async def scenario() -> list[Any]:
        saved = await saver.aput(config, _checkpoint(1, {"v": 1}),  # type: ignore[arg-type]
                                 {"source": "loop", "step": 1}, {"v": 1})
        await saver.aput_writes(saved, [("v", 2)], task_id="t")
        found = await saver.aget_tuple({"configurable": {"thread_id": "a"}})
        listed = [item async for item in saver.alist(None)]
        await saver.adelete_thread("a")
        return [found, listed, await saver.aget_tuple(saved)]

    try:
        found, listed, gone = asyncio.run(scenario())
        assert found is not None and found.checkpoint["channel_values"] == {"v": 1}
        assert found.pending_writes == [("t", "v", 2)]
        assert _comparable(listed) == _comparable([found]) and gone is None
    finally:
        saver.close()


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    turns: Annotated[int, operator.add]


def _graph(saver: BaseCheckpointSaver[Any], store: BaseStore, replies: list[str]) -> Any:
    model = GenericFakeChatModel(messages=iter(AIMessage(text) for text in replies))

    def remember(state: Chat, *, store: BaseStore) -> dict[str, Any]:
        last = state["messages"][-1]
        if "remember" in str(last.content):
            store.put(("memories", "u1"), f"m{len(state['messages'])}",
                      {"text": str(last.content)})
        return {"turns": 1}

    def answer(state: Chat, *, store: BaseStore) -> dict[str, Any]:
        known = [item.value["text"] for item in store.search(("memories", "u1"))]
        reply = model.invoke(state["messages"])
        return {"messages": [AIMessage(f"{reply.content} (I know {len(known)} things)")]}

    graph = StateGraph(Chat)
    graph.add_node("remember", remember)
    graph.add_node("answer", answer)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "answer")
    return graph.compile(checkpointer=saver, store=store)


def _conversation(saver: BaseCheckpointSaver[Any], store: BaseStore) -> dict[str, Any]:
    app = _graph(saver, store, ["Hello!", "Noted.", "Tea it is.", "Coffee then."])
    config: Any = {"configurable": {"thread_id": "chat"}}
    app.invoke({"messages": [HumanMessage("hi")]}, config)
    app.invoke({"messages": [HumanMessage("remember: I like tea")]}, config)
    app.invoke({"messages": [HumanMessage("what do I drink?")]}, config)
    history = list(app.get_state_history(config))
    # time travel: back to the state after the first turn, and fork a new branch from it
    first_turn = next(s for s in history if s.values.get("turns") == 1 and not s.next)
    forked = app.invoke({"messages": [HumanMessage("actually, coffee")]}, first_turn.config)
    latest = app.get_state(config)
    ancestors = []  # the fork's checkpoints back to the start, through first_turn
    state = latest
    while state.parent_config is not None:
        state = app.get_state(state.parent_config)
        ancestors.append(state.config["configurable"]["checkpoint_id"])
    return {
        "final": [m.content for m in latest.values["messages"]],
        "turns": latest.values["turns"],
        "forked": [m.content for m in forked["messages"]],
        "history": [(s.values.get("turns"), s.next, s.metadata.get("step"))
                    for s in history],
        "forked_from_first_turn": first_turn.config["configurable"]["checkpoint_id"]
        in ancestors,
        "fork_length": len(ancestors) + 1,
        "all_checkpoints": len(list(saver.list(config))),
        "memories": [item.key for item in store.search(("memories",))],
    }


def test_a_graph_resumes_time_travels_and_forks(location: Callable[[], str]) -> None:
    place = location()
    saver = _saver(place)
    postgres = place.startswith("postgres")
    store = RememStore.open(place, **({"schema": f"st{next(_names)}"} if postgres else {}))
    from langgraph.store.memory import InMemoryStore

    try:
        got = _conversation(saver, store)
        want = _conversation(InMemorySaver(), InMemoryStore())
        assert got == want
        # the latest state is the fork: the first turn, then the new message (the model's
        # fourth scripted reply); the tea turns stay in the history, off the fork's branch
        assert got["final"] == ["hi", "Hello! (I know 0 things)", "actually, coffee",
                                "Coffee then. (I know 1 things)"]
        assert got["forked_from_first_turn"] and got["turns"] == 2
        assert got["fork_length"] == 8 and got["all_checkpoints"] == 3 * 4 + 4
        assert [turns for turns, _, _ in got["history"]][:3] == [3, 3, 2]
        assert got["memories"] == ["m3"]
    finally:
        saver.close()
        store.close()


def test_the_graph_async(tmp_path: Path) -> None:
    saver = RememSaver.open(str(tmp_path / "a.db"))
    store = RememStore.open(str(tmp_path / "a.db"))
    app = _graph(saver, store, ["One.", "Two."])
    config: Any = {"configurable": {"thread_id": "x"}}

    async def scenario() -> list[str]:
        await app.ainvoke({"messages": [HumanMessage("a")]}, config)
        result = await app.ainvoke({"messages": [HumanMessage("b")]}, config)
        return [str(m.content) for m in result["messages"]]

    try:
        assert asyncio.run(scenario()) == ["a", "One. (I know 0 things)", "b",
                                           "Two. (I know 0 things)"]
        assert len(list(saver.list(config))) == 8  # 4 per turn: input, start, 2 nodes
    finally:
        saver.close()
        store.close()


def test_bad_config_names_the_fix() -> None:
    saver = RememSaver.open()
    with pytest.raises(InvalidInputError, match="thread_id"):
        saver.get_tuple({"configurable": {}})
    with pytest.raises(InvalidInputError, match="ThreadStore"):
        RememSaver(object())  # type: ignore[arg-type]
    saver.close()


def _grouped(results: list[Any]) -> list[Any]:
    """Listings with their tuples in (thread, namespace) groups, each group's order kept."""
    def key(entry: Any) -> tuple[str, str]:
        configurable = entry["config"]["configurable"]
        return configurable["thread_id"], configurable["checkpoint_ns"]

    return [sorted(r, key=key) if isinstance(r, list) and r and isinstance(r[0], dict)
            and "config" in r[0] else r for r in results]


def _random_calls(saver: BaseCheckpointSaver[Any], seed: int) -> list[Any]:
    """A seeded random sequence of every call over two threads and two namespaces (forks
    included: a put may name any earlier checkpoint as its parent)."""
    import random

    rng = random.Random(seed)
    out: list[Any] = []
    saved: dict[tuple[str, str], list[str]] = {}
    step = 0
    for _ in range(60):
        thread, ns = rng.choice(("a", "b")), rng.choice(("", "sub:1"))
        ids = saved.get((thread, ns), [])
        roll = rng.random()
        if roll < 0.35 or not ids:
            step += 1
            parent = rng.choice(ids) if ids and rng.random() < 0.3 else (ids[-1] if ids else None)
            config: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": ns,
                                            **({"checkpoint_id": parent} if parent else {})}}
            values = {"messages": [f"m{step}"], "count": step} if rng.random() < 0.7 else {
                "count": step}
            checkpoint = _checkpoint(step, values)
            out.append(saver.put(config, checkpoint,  # type: ignore[arg-type]
                                 {"source": rng.choice(("loop", "input")), "step": step % 3},
                                 {name: step for name in values}))  # type: ignore[misc]
            saved.setdefault((thread, ns), []).append(checkpoint["id"])
        elif roll < 0.55:
            target: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": ns,
                                            "checkpoint_id": rng.choice(ids)}}
            channel = rng.choice(("messages", "count", "__error__", "__interrupt__"))
            saver.put_writes(target, [(channel, rng.randint(0, 9))],
                             task_id=rng.choice(("t1", "t2")), task_path=rng.choice(("", "~1")))
        elif roll < 0.7:
            configurable = {"thread_id": thread, "checkpoint_ns": ns}
            if rng.random() < 0.5:
                configurable["checkpoint_id"] = rng.choice(ids)
            out.append(saver.get_tuple({"configurable": configurable}))
        elif roll < 0.95:
            config = None if rng.random() < 0.3 else {
                "configurable": {"thread_id": thread,
                                 **({"checkpoint_ns": ns} if rng.random() < 0.5 else {})}}
            before = {"configurable": {"checkpoint_id": rng.choice(ids)}} \
                if rng.random() < 0.3 else None
            filter_ = {"step": rng.randint(0, 2)} if rng.random() < 0.3 else None
            limit = rng.choice((None, 1, 3))
            out.append(list(saver.list(config, filter=filter_, before=before, limit=limit)))
        else:
            saver.delete_thread(thread)
            saved = {key: value for key, value in saved.items() if key[0] != thread}
            out.append(("deleted", thread))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_random_sequences_match_in_memory_saver(location: Callable[[], str], seed: int) -> None:
    saver = _saver(location())
    try:
        got, want = _random_calls(saver, seed), _random_calls(InMemorySaver(), seed)
        assert len(got) > 30
        # across threads and namespaces the order is each saver's own (InMemorySaver's dict
        # grows on reads too); within one, newest first on both
        assert _grouped(_comparable(got)) == _grouped(_comparable(want))
    finally:
        saver.close()


# -- branches: a fork never changes what another branch holds ------------------------------

class Steps(TypedDict):
    value: Annotated[list[str], operator.add]


def _steps(saver: BaseCheckpointSaver[Any]) -> Any:
    """a -> b -> c, each appending its letter (b appends "b1")."""
    graph = StateGraph(Steps)
    graph.add_node("a", lambda state: {"value": ["a"]})
    graph.add_node("b", lambda state: {"value": ["b1"]})
    graph.add_node("c", lambda state: {"value": ["c"]})
    graph.add_edge(START, "a")
    graph.add_edge("a", "b")
    graph.add_edge("b", "c")
    return graph.compile(checkpointer=saver)


def _fork(app: Any, thread: str) -> dict[str, Any]:
    """Run a thread, fork it after "a" with b's write edited, run the fork, and read both
    branches back (and replay the original from after "a")."""
    config: Any = {"configurable": {"thread_id": thread}}
    first = app.invoke({"value": []}, config)["value"]
    original = app.get_state(config)
    after_a = next(s for s in app.get_state_history(config) if s.next == ("b",))
    fork = app.update_state(after_a.config, {"value": ["edited"]}, as_node="b")
    forked = app.invoke(None, fork)["value"]
    original_again = app.get_state(original.config).values["value"]
    fork_again = app.get_state(fork).values["value"]
    replayed = app.invoke(None, after_a.config)["value"]
    return {"first": first, "forked": forked, "replayed": replayed,
            "original_again": original_again, "fork_again": fork_again,
            "original_after_replay": app.get_state(original.config).values["value"],
            "after_a_again": app.get_state(after_a.config).values["value"],
            "latest": app.get_state(config).values["value"],
            "checkpoints": len(list(app.get_state_history(config)))}


FORKED = {"first": ["a", "b1", "c"], "forked": ["a", "edited", "c"],
          "replayed": ["a", "b1", "c"], "original_again": ["a", "b1", "c"],
          "original_after_replay": ["a", "b1", "c"],
          "fork_again": ["a", "edited"], "after_a_again": ["a"], "latest": ["a", "b1", "c"],
          "checkpoints": 10}


def test_a_fork_leaves_every_other_branch_intact(location: Callable[[], str]) -> None:
    saver = _saver(location())
    try:
        got = _fork(_steps(saver), "t")
        assert got == _fork(_steps(InMemorySaver()), "t")
        # with versions shared across branches the original read back the fork's values
        assert got == FORKED
    finally:
        saver.close()


def test_versions_are_unique_ordered_strings() -> None:
    saver = RememSaver.open()
    first = saver.get_next_version(None)
    assert isinstance(first, str) and first.startswith("0" * 31 + "1.")
    second, sibling = saver.get_next_version(first), saver.get_next_version(first)
    assert first < second and first < sibling and second != sibling  # two branches
    assert second.startswith("0" * 31 + "2.")
    # LangGraph's own savers' strings continue from their counter
    assert saver.get_next_version("00000000000000000000000000000041.0.6697367414225304"
                                  ).startswith("0" * 30 + "42.")
    assert saver.get_next_version(7) == 8  # threads saved with integer versions stay so
    with pytest.raises(InvalidInputError, match="counter"):
        saver.get_next_version("v2")
    saver.close()


class _IntegerSaver(RememSaver):
    """RememSaver as earlier releases saved: LangGraph's default integer versions."""

    get_next_version = BaseCheckpointSaver.get_next_version  # type: ignore[assignment]


def test_threads_saved_with_integer_versions_still_read_and_run(tmp_path: Path) -> None:
    path = str(tmp_path / "old.db")
    old = _IntegerSaver.open(path)
    _fork(_steps(old), "old")  # the stored fork reuses the original branch's versions
    old.close()
    saver = RememSaver.open(path)
    app = _steps(saver)
    config: Any = {"configurable": {"thread_id": "old"}}
    try:
        history = list(app.get_state_history(config))
        finals = sorted(s.values["value"] for s in history if not s.next)
        # each branch reads its own values: the blob on the checkpoint's own ancestry
        assert finals == [["a", "b1", "c"], ["a", "b1", "c"], ["a", "edited", "c"]]
        before = saver.get_tuple(config)
        assert before is not None and before.checkpoint["channel_versions"]
        assert all(isinstance(v, int) for v in before.checkpoint["channel_versions"].values())
        # the old thread runs on (integer versions kept: LangGraph compares them) and forks
        assert app.invoke({"value": ["more"]}, config)["value"] == [
            "a", "b1", "c", "more", "a", "b1", "c"]
        latest = saver.get_tuple(config)
        assert latest is not None
        assert all(isinstance(v, int) for v in latest.checkpoint["channel_versions"].values())
        after_a = next(s for s in app.get_state_history(config) if s.next == ("b",))
        app.invoke(None, app.update_state(after_a.config, {"value": ["again"]}, as_node="b"))
        assert app.get_state(latest.config).values["value"] == [
            "a", "b1", "c", "more", "a", "b1", "c"]
    finally:
        saver.close()


def test_langgraph_checkpoint_conformance_suite(location: Callable[[], str]) -> None:
    """LangGraph's checkpointer conformance suite (langgraph-checkpoint-conformance): every
    capability and check InMemorySaver passes, RememSaver passes."""
    conformance = pytest.importorskip("langgraph.checkpoint.conformance")
    place = location()

    @conformance.checkpointer_test(name="RememSaver")
    async def remem_saver() -> Any:
        saver = _saver(place)
        yield saver
        saver.close()

    @conformance.checkpointer_test(name="InMemorySaver")
    async def memory_saver() -> Any:
        yield InMemorySaver()

    def summary(registered: Any) -> dict[str, tuple[Any, int, int, list[str]]]:
        report = asyncio.run(conformance.validate(registered))
        return {name: (result.passed, result.tests_passed, result.tests_failed,
                       result.failures) for name, result in report.results.items()}

    ours, theirs = summary(remem_saver), summary(memory_saver)
    assert ours == theirs
    base = ("put", "put_writes", "get_tuple", "list", "delete_thread")
    assert all(ours[name][0] is True for name in base)
    assert sum(ours[name][1] for name in base) >= 40  # the checks ran
    # the optional capabilities neither saver implements: reported, not run
    assert {name for name, (passed, *_) in ours.items() if passed is None} == {
        "copy_thread", "delete_for_runs", "prune"}
