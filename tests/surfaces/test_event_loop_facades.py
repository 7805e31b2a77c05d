"""Every sync entry point works on a thread whose event loop is running: inside
``asyncio.run(main())`` (what a Jupyter cell is) and inside an ``async def`` LangGraph node.

Each scenario runs both ways (a coroutine, an async node) and must answer the literal values
it answers with no loop. remem's sync paths are all truly blocking (sqlite3, psycopg's sync
pool, httpx's sync client), so they simply run there, holding the loop for the call; the last
test shows the loop's other tasks carry on. Every run is bounded by a timeout, so a deadlock
fails the test instead of hanging it. The store's own methods on every backend are in
tests/conformance/test_event_loop.py; the chat clients' in tests/llm/test_clients.py."""

from __future__ import annotations

import asyncio
import itertools
import operator
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict, TypeVar

import pytest

from remem import FakeEmbedder, Memory, Message
from remem.blocks import Blocks
from remem.client import Client
from remem.episodic import EpisodeStore
from remem.files import ABSENT, StoreFileBackend
from remem.llm import ChatRequest, OpenAIChatModel, ScriptedModel
from remem.procedural import PromptRegistry
from remem.store import IndexConfig, open_store
from remem.testing import ChatReply, LoopbackServer
from remem.threads import ThreadStore
from tests.memory_support import rule_model

T = TypeVar("T")
_ids = itertools.count()
#: seconds any one scenario may take before the test calls it a deadlock
BOUND = 120.0


# -- the three ways to call ---------------------------------------------------------------------


def bounded(work: Callable[[], T], timeout: float = BOUND) -> T:
    """``work()`` on a thread of its own, failing the test if it is not done in ``timeout``
    (a deadlocked daemon thread is left behind instead of hanging the run)."""
    box: list[Any] = []

    def target() -> None:
        try:
            box.append(("ok", work()))
        except BaseException as exc:  # handed to the test thread
            box.append(("error", exc))

    thread = threading.Thread(target=target, name="loop-scenario", daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), f"deadlock: not done after {timeout:g} s"
    kind, value = box[0]
    if kind == "error":
        raise value
    return value  # type: ignore[no-any-return]


def off_loop(fn: Callable[[], T]) -> T:
    """A plain call: no event loop on the thread."""
    return bounded(fn)


def in_coroutine(fn: Callable[[], T]) -> T:
    """``fn()`` called inside ``asyncio.run(main())``, as a notebook cell runs code."""
    async def main() -> T:
        asyncio.get_running_loop()  # the condition under test
        return fn()

    return bounded(lambda: asyncio.run(main()))


def in_async_node(fn: Callable[[], T]) -> T:
    """``fn()`` called inside an ``async def`` node of a LangGraph graph run by ``ainvoke``."""
    from langgraph.graph import START, StateGraph

    class State(TypedDict):
        out: Any

    async def node(state: State) -> dict[str, Any]:
        asyncio.get_running_loop()
        return {"out": fn()}

    graph = StateGraph(State)
    graph.add_node("node", node)
    graph.add_edge(START, "node")
    app = graph.compile()
    return bounded(lambda: asyncio.run(app.ainvoke({"out": None}))["out"])  # type: ignore[no-any-return]


RUNNERS = {"off-loop": off_loop, "coroutine": in_coroutine, "async-node": in_async_node}


@pytest.fixture(params=["coroutine", "async-node"])
def on_loop(request: pytest.FixtureRequest) -> Callable[[Callable[[], Any]], Any]:
    pytest.importorskip("langgraph.graph")
    return RUNNERS[str(request.param)]


@pytest.fixture(params=["sqlite-memory", "sqlite-file", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], str]:
    """A fresh location per call (PostgreSQL: the module's database)."""
    def make() -> str:
        if request.param == "sqlite-memory":
            return ":memory:"
        if request.param == "sqlite-file":
            return str(tmp_path / f"db{next(_ids)}.db")
        return str(request.getfixturevalue("pg_database"))

    return make


def _schema(location: str) -> dict[str, str]:
    return {"schema": f"loop{next(_ids)}"} if location.startswith("postgres") else {}


# -- Memory and the store --------------------------------------------------------------------


def memory_calls(location: str) -> list[object]:
    user = f"alice{next(_ids)}"  # PostgreSQL: one database for the module
    with Memory.open(location, embedder=FakeEmbedder(), llm=rule_model()) as mem:
        added = mem.add("I live in Paris", user_id=user)  # the flow's LLM call and lock
        moved = mem.add("I moved to Berlin", user_id=user)
        mem.add("Green tea every morning", user_id=user, infer=False)
        hit = mem.search("Berlin", user_id=user, limit=1)[0].memory
        mem.update(hit.id, "Lives in Berlin-Mitte")
        return [
            [c.memory.text for c in added.changes],
            sorted(c.op for c in moved.changes),
            hit.text,
            sorted(m.text for m in mem.get_all(user_id=user)),
            [e.op for e in mem.history(hit.id)],
            "Green tea every morning" in mem.context("tea", user_id=user).text,
        ]


MEMORY_WANT = [
    ["Lives in Paris"],
    ["add", "invalidate"],
    "Lives in Berlin",
    ["Green tea every morning", "Lives in Berlin-Mitte"],
    ["add", "update"],
    True,
]


def test_memory_on_a_loop_answers_as_off_it(where: Callable[[], str],
                                            on_loop: Callable[..., Any]) -> None:
    assert off_loop(lambda: memory_calls(where())) == MEMORY_WANT
    assert on_loop(lambda: memory_calls(where())) == MEMORY_WANT


def store_calls(location: str) -> list[object]:
    with open_store(location, **_schema(location)) as store:
        store.put(("notes",), "a", {"text": "green tea"})
        store.put(("notes",), "b", {"text": "black coffee"})
        return [store.get(("notes",), "a").value,  # type: ignore[union-attr]
                [i.key for i in store.search(("notes",), query="coffee", limit=1)],
                store.count(("notes",))]


def test_open_store_on_a_loop(where: Callable[[], str], on_loop: Callable[..., Any]) -> None:
    want = [{"text": "green tea"}, ["b"], 2]
    assert on_loop(lambda: store_calls(where())) == want
    assert on_loop(lambda: store_calls("memory://")) == want  # docs/store.md's notebook store


def thread_calls(location: str) -> list[object]:
    with ThreadStore(location, **_schema(location)) as threads:
        chat = threads.create(metadata={"user_id": "alice"})
        first = chat.append([Message.user("Plan a trip to Lisbon"), Message.assistant("When?")])
        chat.append([Message.user("In April"), Message.assistant("April is mild there.")])
        before = chat.fork(first.id)
        return [len(chat.messages()), len(before.messages()),
                [m.text for m in threads.messages(chat.id, last=1)],
                len(threads.list_threads()), threads.exists(chat.id)]


def test_thread_store_on_a_loop(where: Callable[[], str], on_loop: Callable[..., Any]) -> None:
    assert on_loop(lambda: thread_calls(where())) == [4, 2, ["April is mild there."], 2, True]


# -- files, blocks, prompts, episodes, the graph ----------------------------------------------


def facade_calls(location: str) -> list[object]:
    with open_store(location, index=IndexConfig(embedder=FakeEmbedder())) as store:
        files = StoreFileBackend(store, ("agents", "travel"))
        info = files.write("/notes/trip.md", "Train to Lyon.\nHotel: TBD\n", etag=ABSENT)
        files.edit("/notes/trip.md", "Hotel: TBD", "Hotel: Le Royal", etag=info.etag)

        blocks = Blocks(StoreFileBackend(store, ("blocks",)))
        blocks.create("human-alice", label="human", value="Name: Alice", limit=80)
        blocks.attach("planner", "human-alice")
        blocks.append("planner", "human", "Vegetarian.")

        prompts = PromptRegistry(store)
        prompts.create("support", "You help {user} with orders.")
        prompts.update("support", "You help {user} with orders. Be brief.")

        episodes = EpisodeStore(store)
        episodes.add({"situation": "A parcel arrived damaged", "action": "Refunded"})
        episodes.add({"situation": "The user forgot their password", "action": "Sent a link"})

        with Memory(store, llm=ScriptedModel([{
            "entities": [{"ref": 1, "name": "Ada", "type": "person"},
                         {"ref": 2, "name": "Acme", "type": "organization"}],
            "facts": [{"subject": 1, "predicate": "works_at", "object": 2,
                       "fact": "Ada works at Acme"}]}])) as mem:
            graph = mem.graph(user_id="ada")
            ingested = graph.ingest("Ada joined Acme.")
            found = [h.fact.fact for h in graph.search("Where does Ada work?")]
        return [
            files.read("/notes/trip.md").content.splitlines(),
            [e.op for e in files.history("/notes/trip.md")],
            blocks.get("human-alice").value,
            (prompts.get("support").version, prompts.get("support").variables),
            [e.action for e in episodes.search("damaged parcel", limit=1)],
            (ingested.llm_calls, found),
        ]


FACADES_WANT = [
    ["Train to Lyon.", "Hotel: Le Royal"],
    ["write", "edit"],
    "Name: Alice\nVegetarian.",
    (2, ("user",)),
    ["Refunded"],
    (1, ["Ada works at Acme"]),
]


@pytest.mark.parametrize("location", ["sqlite-memory", "sqlite-file"])
def test_files_blocks_prompts_episodes_and_graph_on_a_loop(
        location: str, tmp_path: Path, on_loop: Callable[..., Any]) -> None:
    place = ":memory:" if location == "sqlite-memory" else str(tmp_path / "facades.db")
    assert on_loop(lambda: facade_calls(place)) == FACADES_WANT


# -- LangGraph's store and checkpointer, the OpenAI Agents session ---------------------------


class Notes(TypedDict):
    said: Annotated[list[str], operator.add]


def langgraph_calls(location: str) -> list[object]:
    """A graph with RememStore and RememSaver run by the sync ``invoke`` (a notebook cell's
    call), its sync nodes reading and writing the store."""
    from langgraph.graph import START, StateGraph
    from langgraph.store.base import BaseStore

    from remem.integrations.langgraph import RememSaver, RememStore

    schema = _schema(location)
    saver = (RememSaver(ThreadStore(location, **schema), owns_threads=True) if schema
             else RememSaver.open(location))
    with RememStore.open(location, **_schema(location)) as store:

        def remember(state: Notes, *, store: BaseStore) -> dict[str, Any]:
            store.put(("memories", "u1"), f"m{len(state['said'])}", {"text": state["said"][-1]})
            return {}

        def answer(state: Notes, *, store: BaseStore) -> dict[str, Any]:
            known = [item.value["text"] for item in store.search(("memories", "u1"))]
            return {"said": [f"I know {len(known)} things"]}

        graph = StateGraph(Notes)
        graph.add_node("remember", remember)
        graph.add_node("answer", answer)
        graph.add_edge(START, "remember")
        graph.add_edge("remember", "answer")
        app = graph.compile(checkpointer=saver, store=store)
        config: Any = {"configurable": {"thread_id": f"t{next(_ids)}"}}
        try:
            app.invoke({"said": ["I like tea"]}, config)
            final = app.invoke({"said": ["I live in Lyon"]}, config)
            store.put(("direct",), "k", {"v": 1})  # RememStore's own sync API
            return [final["said"], len(list(saver.list(config))),
                    store.get(("direct",), "k").value,  # type: ignore[union-attr]
                    sorted(i.key for i in store.search(("memories", "u1")))]
        finally:
            saver.close()


def test_langgraph_store_and_saver_on_a_loop(where: Callable[[], str],
                                             on_loop: Callable[..., Any]) -> None:
    pytest.importorskip("langgraph.graph")
    want = [["I like tea", "I know 1 things", "I live in Lyon", "I know 2 things"], 8,
            {"v": 1}, ["m1", "m3"]]
    assert on_loop(lambda: langgraph_calls(where())) == want


def test_sync_calls_inside_async_nodes_of_a_checkpointed_graph(tmp_path: Path) -> None:
    """``async def`` nodes calling the sync API of the graph's own RememStore and of a Memory,
    the graph run by ``ainvoke`` with RememSaver."""
    pytest.importorskip("langgraph.graph")
    from langgraph.graph import START, StateGraph
    from langgraph.store.base import BaseStore

    from remem.integrations.langgraph import RememSaver, RememStore

    db = str(tmp_path / "nodes.db")
    saver, store = RememSaver.open(db), RememStore.open(db)
    mem = Memory.open(db, embedder=FakeEmbedder())

    async def remember(state: Notes, *, store: BaseStore) -> dict[str, Any]:
        store.put(("memories",), "last", {"text": state["said"][-1]})
        mem.add(state["said"][-1], user_id="u1", infer=False)
        return {}

    async def answer(state: Notes, *, store: BaseStore) -> dict[str, Any]:
        last = store.get(("memories",), "last")
        hits = mem.search("tea", user_id="u1", limit=1)
        return {"said": [f"{last.value['text'] if last else None} / "  # type: ignore[index]
                         f"{[h.memory.text for h in hits]}"]}

    graph = StateGraph(Notes)
    graph.add_node("remember", remember)
    graph.add_node("answer", answer)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "answer")
    app = graph.compile(checkpointer=saver, store=store)
    config: Any = {"configurable": {"thread_id": "nodes"}}
    try:
        final = bounded(lambda: asyncio.run(app.ainvoke({"said": ["green tea"]}, config)))
        assert final["said"] == ["green tea", "green tea / ['green tea']"]
        assert saver.get_tuple(config) is not None
    finally:
        mem.close()
        saver.close()
        store.close()


def test_openai_agents_session_beside_sync_thread_calls_on_a_loop(tmp_path: Path) -> None:
    """RememSession's methods are async (the SDK's Session protocol); the same ThreadStore's
    sync calls on that loop see what it wrote."""
    pytest.importorskip("agents")
    from remem.integrations.openai_agents import RememSession

    with ThreadStore(str(tmp_path / "agents.db")) as threads:
        session = RememSession("s1", threads, metadata={"user_id": "u1"})

        async def main() -> list[object]:
            await session.add_items([{"role": "user", "content": "Weather in Rome?"},
                                     {"role": "assistant", "content": "Sunny."}])
            synced = [m.text for m in threads.messages("s1")]  # sync, on the loop
            threads.append("s1", [Message.user("And Paris?")])
            items = await session.get_items()
            return [synced, [i["content"] for i in items], threads.exists("s1")]

        assert bounded(lambda: asyncio.run(main())) == [
            ["Weather in Rome?", "Sunny."], ["Weather in Rome?", "Sunny.", "And Paris?"], True]


# -- the HTTP clients -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, str]]:
    """A real remem server on a free loopback port (its own thread and loop) and a key."""
    pytest.importorskip("fastapi")
    from remem.server import ServerConfig, create_app
    from remem.testing.server import ThreadedServer

    app = create_app(ServerConfig(db=":memory:", embedder=FakeEmbedder(), llm=rule_model(),
                                  mcp=False))
    with ThreadedServer(app) as server:
        yield server.url, app.state.remem.keys.create("acme")[0]
    app.state.remem.close()


def client_calls(url: str, key: str) -> list[object]:
    user = f"u{next(_ids)}"
    with Client(url, key) as client:
        client.add("I live in Paris", user_id=user)
        client.add("I moved to Berlin", user_id=user)
        hits = client.search("Berlin", user_id=user, limit=1)
        chat = client.threads.create()
        chat.append([Message.user("hello")])
        return [[h.memory.text for h in hits],
                sorted(m.text for m in client.get_all(user_id=user, include_invalid=True)),
                [m.text for m in chat.messages()]]


def test_client_on_a_loop(served: tuple[str, str], on_loop: Callable[..., Any]) -> None:
    url, key = served
    assert on_loop(lambda: client_calls(url, key)) == [
        ["Lives in Berlin"], ["Lives in Berlin", "Lives in Paris"], ["hello"]]


def test_chat_model_complete_in_an_async_node() -> None:
    pytest.importorskip("langgraph.graph")
    with LoopbackServer() as server, OpenAIChatModel("gpt-test", base_url=server.url,
                                                     api_key="sk-test") as model:
        server.chat.add(ChatReply("from the node"))
        got = in_async_node(lambda: model.complete(ChatRequest((Message.user("hi"),))).text)
    assert got == "from the node"


# -- other tasks on the loop ------------------------------------------------------------------


def test_a_sync_call_among_running_tasks_does_not_deadlock(where: Callable[[], str]) -> None:
    """Tasks on the loop write through the async twins while the loop's own thread makes
    sync calls to the same Memory, store and thread store; every write lands, nothing hangs.
    (The sync calls write to other scopes than the tasks: see docs/memory.md on one scope.)"""
    location = where()
    mem = Memory.open(location, embedder=FakeEmbedder())
    store = open_store(location, **_schema(location))
    threads = ThreadStore(location, **_schema(location))
    users = [f"task{next(_ids)}" for _ in range(4)]
    me = f"sync{next(_ids)}"

    async def task(user: str) -> None:
        for n in range(3):
            await mem.aadd(f"{user} fact {n}", user_id=user, infer=False)
            await store.aput(("tasks", user), str(n), {"n": n})
            await asyncio.sleep(0)

    async def main() -> list[object]:
        threads.create("mine")
        running = [asyncio.create_task(task(user)) for user in users]
        await asyncio.sleep(0)  # the tasks are mid-flight: their batches are in worker threads
        seen = []
        for n in range(3):
            mem.add(f"my fact {n}", user_id=me, infer=False)
            store.put(("sync",), str(n), {"n": n})
            threads.append("mine", [Message.user(f"m{n}")])
            seen.append(len(mem.get_all(user_id=me)))
            await asyncio.sleep(0)
        await asyncio.gather(*running)
        return [seen, [len(await mem.aget_all(user_id=u)) for u in users],
                [store.count(("tasks", u)) for u in users], store.count(("sync",)),
                [m.text for m in threads.messages("mine")]]

    try:
        assert bounded(lambda: asyncio.run(main()), timeout=90) == [
            [1, 2, 3], [3, 3, 3, 3], [3, 3, 3, 3], 3, ["m0", "m1", "m2"]]
    finally:
        threads.close()
        store.close()
        mem.close()


@pytest.mark.parametrize("where", ["memory.db", ":memory:"])
def test_a_sync_write_behind_a_task_of_its_own_loop_fails_fast(tmp_path: Path,
                                                               where: str) -> None:
    """The task holds the scope's write lock and cannot resume while the loop's thread
    blocks: the sync write says so at once instead of waiting out the lock's 10 s TTL."""
    import time

    from remem.errors import ConflictError

    path = str(tmp_path / where) if where != ":memory:" else where
    with Memory.open(path, embedder=FakeEmbedder()) as mem:
        async def main() -> float:
            task = asyncio.create_task(mem.aadd("Alice drinks tea", user_id="alice",
                                                infer=False))
            await asyncio.sleep(0)  # the task sends its locking batch to a worker thread
            time.sleep(0.5)  # which takes the lock; the task cannot resume meanwhile
            started = time.monotonic()
            with pytest.raises(ConflictError, match=r"await the async method"):
                mem.add("Alice lives in Lyon", user_id="alice", infer=False)
            waited = time.monotonic() - started
            await task
            mem.add("Alice lives in Lyon", user_id="alice", infer=False)  # lock free again
            return waited

        waited = asyncio.run(main())
        assert waited < 5.0  # not the ticket's TTL
        assert sorted(m.text for m in mem.get_all(user_id="alice")) == [
            "Alice drinks tea", "Alice lives in Lyon"]
