"""Records that do not parse (issue 32, item 4): for each family, a malformed record written
straight into the store (or the graph's tables) is skipped by every read of the family, which
still returns its neighbours; the skip is counted; writes refuse what would not read back;
``remem doctor`` finds each one and ``--repair`` moves it aside.

The matrix of cases (family, malformed record, reads checked) is :data:`MATRIX`; run
``pytest tests/adversarial/test_bad_records.py -k matrix -s`` to print it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from remem.api import Memory
from remem.blocks import Blocks
from remem.cli import cli
from remem.context.agent_sections import BlocksSection
from remem.context.types import ContextScope
from remem.embed import FakeEmbedder
from remem.episodic import EpisodeStore
from remem.errors import BadRecordError, ImportFormatError, RecordFormatError
from remem.files import StoreFileBackend
from remem.files.approvals import Approvals
from remem.files.skills import Skills
from remem.files.types import etag_of
from remem.graph import Graph
from remem.llm import ScriptedModel
from remem.memory.history import event_ops, id_index_op
from remem.memory.operations import import_lines
from remem.memory.records import HEADS_NAMESPACE, IDS_NAMESPACE, history_namespace
from remem.memory.writer import head_key
from remem.messages import Message
from remem.procedural import PromptRegistry
from remem.server import ServerConfig, create_app
from remem.store import BaseStore, IndexConfig, KeywordConfig, open_store
from remem.store.bad_records import FAMILIES, skipped_counts
from remem.store.namespace_codec import encode_ns
from remem.store.scoped import ScopedStore
from remem.store.types import PutOp
from remem.threads.search import ThreadIndex
from tests.graph.scripts import E, F, answer

NOW = 1_750_000_000.0
USER = ("memories", "user", "u1")


@dataclass(frozen=True)
class Case:
    """One row of the matrix: a family, the malformed record, and the reads checked."""

    family: str
    malformed: str
    reads: str
    check: Callable[[BaseStore], None]


MATRIX: list[Case] = []


def case(family: str, malformed: str, reads: str) -> Callable[[Callable[[BaseStore], None]],
                                                              Callable[[BaseStore], None]]:
    def register(check: Callable[[BaseStore], None]) -> Callable[[BaseStore], None]:
        MATRIX.append(Case(family, malformed, reads, check))
        return check
    return register


class Skips:
    """How many records a family's reads skipped since this object was made."""

    def __init__(self, family: str) -> None:
        self.family = family
        self.start = skipped_counts()[family]

    @property
    def count(self) -> int:
        return skipped_counts()[self.family] - self.start


def file_record(backend: tuple[str, ...], path: str, content: str | None, *,
                version: Any = 1, **extra: Any) -> PutOp:
    """A file record put straight into the store, in StoreFileBackend's layout."""
    parts = path.strip("/").split("/")
    namespace = (*backend, "files", *(f"/{p}" for p in parts[:-1]))
    value: dict[str, Any] = {
        "type": "file", "path": path, "content": content, "version": version,
        "modified_at": NOW, "previous": None, "last_op": "write", "live": content is not None,
        "name": parts[-1], "depth": len(parts)}
    if content is not None:
        value.update(etag=etag_of(content), size=len(content.encode()))
    value.update(extra)
    return PutOp(namespace, parts[-1], value, index=False)


# -- memories and their bookkeeping -------------------------------------------------------------


def _memory(store: BaseStore) -> tuple[Memory, list[str]]:
    memory = Memory(store)
    ids = [memory.add(text, user_id="u1", infer=False).added[0].id
           for text in ("Alice drinks green tea", "Alice lives in Paris")]
    return memory, ids


def _bad_memory(store: BaseStore, **fields: Any) -> None:
    value = {"type": "memory", "id": "mem_bad", "kind": "fact", "schema": "Fact",
             "content": "Alice drinks black coffee", "text": "Alice drinks black coffee",
             "status": "current", "valid_at": NOW, "invalid_at": None, "version": 1,
             "source": {}, "metadata": {}, **fields}
    store.batch([PutOp(USER, "mem_bad", value), id_index_op("mem_bad", USER)])


def _memory_reads(memory: Memory, ids: list[str]) -> None:
    hits = memory.search("Alice drinks", user_id="u1")
    assert sorted(h.memory.id for h in hits) == sorted(ids)
    assert sorted(r.id for r in memory.get_all(user_id="u1").memories) == sorted(ids)
    assert sorted(h.memory.id for h in memory.search("Alice", user_id="u1", as_of=NOW * 2)
                  ) == sorted(ids)
    context = memory.context("Alice", user_id="u1").to_string()
    assert "green tea" in context and "Paris" in context and "coffee" not in context
    assert [e.op for e in memory.history(ids[0])] == ["add"]
    with pytest.raises(BadRecordError, match="mem_bad"):
        memory.get("mem_bad")
    # writes to the scope still work, and a later undo of a neighbour's change too
    changed = memory.update(ids[1], "Alice lives in Lyon")
    assert memory.undo(changed.changes[0].event_id).changes


for _field, _bad in (("valid_at", "yesterday"), ("content", 42),
                     ("source", {"message_ids": "m1"}), ("version", 0)):
    def _check(store: BaseStore, field: str = _field, bad: Any = _bad) -> None:
        memory, ids = _memory(store)
        _bad_memory(store, **{field: bad})
        skips = Skips("memories")
        _memory_reads(memory, ids)
        assert skips.count >= 4  # (an as_of filter may leave a bad valid_at out in SQL)

    case("memories", f"memory record with {_field} = {_bad!r}",
         "search, list, as_of search, context, history, get (BadRecordError), update+undo")(
        _check)


@case("memory_history", "history event with at = 'noon' and the neighbour's memory id",
      "history, undo of the neighbour's change")
def _history(store: BaseStore) -> None:
    memory, ids = _memory(store)
    good = memory.history(ids[0])[0]
    store.put(history_namespace(USER), "evt_bad",
              {**good.to_value(), "id": "evt_bad", "at": "noon"}, index=False)
    skips = Skips("memory_history")
    assert [e.id for e in memory.history(ids[0])] == [good.id]
    assert memory.undo(good.id).changes  # its siblings are read too: the bad one is skipped
    assert skips.count >= 2


@case("memory_ids", "id index entry whose namespace is the text 'oops'",
      "get of the neighbour, search, get of the bad id (BadRecordError)")
def _ids(store: BaseStore) -> None:
    memory, ids = _memory(store)
    store.put(IDS_NAMESPACE, ids[1], {"type": "id", "namespace": "oops"}, index=False)
    skips = Skips("memory_ids")
    assert memory.get(ids[0]).text == "Alice drinks green tea"
    assert len(memory.search("Alice", user_id="u1")) == 2
    with pytest.raises(BadRecordError, match="id index entry"):
        memory.get(ids[1])
    assert skips.count == 1


@case("memory_heads", "the scope's change counter with n = 'many'",
      "two adds to that scope (the first writes 1 over the bad head), search")
def _heads(store: BaseStore) -> None:
    store.put(HEADS_NAMESPACE, head_key(USER), {"type": "head", "n": "many"}, index=False)
    skips = Skips("memory_heads")
    memory, _ = _memory(store)  # two adds through the bad head
    assert len(memory.search("Alice", user_id="u1")) == 2
    head = store.get(HEADS_NAMESPACE, head_key(USER))
    assert head is not None and head.value["n"] == 2
    assert skips.count == 1  # read bad once, written good by that same commit


# -- files and what is kept as files ------------------------------------------------------------

FILES = ("files", "default")


@case("files", "file record with version = 'one'",
      "ls, glob, grep, read of a neighbour; read and write of the bad path (BadRecordError)")
def _files(store: BaseStore) -> None:
    files = StoreFileBackend(store, FILES)
    files.write("/notes/a.md", "hello a")
    files.write("/notes/b.md", "hello b")
    store.batch([file_record(FILES, "/notes/bad.md", "hello bad", version="one")])
    skips = Skips("files")
    assert [i.path for i in files.ls("/notes")] == ["/notes/a.md", "/notes/b.md"]
    assert [i.path for i in files.glob("**/*.md")] == ["/notes/a.md", "/notes/b.md"]
    assert [m.path for m in files.grep("hello")] == ["/notes/a.md", "/notes/b.md"]
    assert files.read("/notes/a.md").content == "hello a"
    with pytest.raises(BadRecordError, match="/notes/bad"):
        files.read("/notes/bad.md")
    with pytest.raises(BadRecordError):
        files.write("/notes/bad.md", "over it")
    assert skips.count >= 5


@case("file_history", "file history event with op = 'explode'",
      "history of the path (the good events), undo")
def _file_history(store: BaseStore) -> None:
    files = StoreFileBackend(store, FILES)
    files.write("/notes/a.md", "one")
    files.write("/notes/a.md", "two")
    where = files._history_ns("/notes/a.md")
    store.put(where, "0000000009", {"type": "file_event", "path": "/notes/a.md", "version": 9,
                                    "op": "explode", "before": None, "after": "x",
                                    "at": NOW}, index=False)
    skips = Skips("file_history")
    assert [e.version for e in files.history("/notes/a.md")] == [1, 2]
    files.undo("/notes/a.md")
    assert files.read("/notes/a.md").content == "one"
    assert skips.count >= 1


BLOCKS = ("blocks",)


def _blocks(store: BaseStore) -> Blocks:
    blocks = Blocks(StoreFileBackend(store, BLOCKS))
    blocks.create("human", label="human", value="Name: Alice")
    blocks.create("persona", label="persona", value="A travel agent")
    for block_id in ("human", "persona"):
        blocks.attach("a1", block_id)
    return blocks


@case("blocks", "block file holding '{not json' (attached to the agent too)",
      "list, blocks of the agent, render, context section; get (BadRecordError)")
def _blocks_case(store: BaseStore) -> None:
    blocks = _blocks(store)
    store.batch([file_record(BLOCKS, "/blocks/broken.json", "{not json"),
                 file_record(BLOCKS, "/blocks/_agents/a1.json",
                             json.dumps({"blocks": ["human", "broken", "persona"]}),
                             version=3)])
    skips = Skips("blocks")
    assert [b.id for b in blocks.list_blocks()] == ["human", "persona"]
    assert [b.id for b in blocks.blocks_of("a1")] == ["human", "persona"]
    rendered = blocks.render("a1").text
    assert "Name: Alice" in rendered and "travel agent" in rendered
    items = BlocksSection(blocks).gather(ContextScope(memory=None, agent_id="a1"))  # type: ignore[arg-type]
    assert [i.key for i in items] == ["human", "persona"]
    with pytest.raises(BadRecordError, match="broken"):
        blocks.get("broken")
    assert skips.count >= 4


@case("block_agents", "an agent's block list {'blocks': 'human'} (not a list)",
      "blocks of that agent (none), render, another agent's blocks, attach (BadRecordError)")
def _agents(store: BaseStore) -> None:
    blocks = _blocks(store)
    store.batch([file_record(BLOCKS, "/blocks/_agents/a2.json", '{"blocks": "human"}')])
    skips = Skips("block_agents")
    assert blocks.blocks_of("a2") == []
    assert blocks.render("a2").text == "# Core memory"
    assert [b.id for b in blocks.blocks_of("a1")] == ["human", "persona"]
    with pytest.raises(BadRecordError, match="agent 'a2'"):
        blocks.attach("a2", "persona")
    assert skips.count >= 3


def _approvals(store: BaseStore) -> Approvals:
    return Approvals(StoreFileBackend(store, ("approvals", "default")),
                     StoreFileBackend(store, FILES))


@case("approvals", "approval file with only an id and an operation",
      "list (all, pending), approve a neighbour; get of the bad one (BadRecordError)")
def _approvals_case(store: BaseStore) -> None:
    approvals = _approvals(store)
    first = approvals.park("write", "/notes/x.md", {"content": "x", "etag": None}, None)
    second = approvals.park("delete", "/notes/y.md", {"etag": None}, None)
    store.batch([file_record(("approvals", "default"), "/approvals/apr_bad.json",
                             '{"id": "apr_bad", "operation": "write"}')])
    skips = Skips("approvals")
    assert [a.id for a in approvals.list_approvals(None)] == [first.approval_id,
                                                             second.approval_id]
    assert len(approvals.pending()) == 2
    assert approvals.approve(first.approval_id).status == "done"
    with pytest.raises(BadRecordError, match="apr_bad"):
        approvals.get("apr_bad")
    assert skips.count >= 3


@case("skills", "SKILL.md without frontmatter",
      "list, render, load of a neighbour")
def _skills(store: BaseStore) -> None:
    files = StoreFileBackend(store, FILES)
    files.write("/skills/pdf-forms/SKILL.md",
                "---\nname: pdf-forms\ndescription: Fill in PDF forms.\n---\nSteps.")
    store.batch([file_record(FILES, "/skills/broken/SKILL.md", "no frontmatter here")])
    skills = Skills(files)
    skips = Skips("skills")
    assert [s.name for s in skills.list()] == ["pdf-forms"]
    assert "pdf-forms" in skills.render(budget=200).text
    assert skills.load("pdf-forms").body == "Steps."
    assert list(skills.errors) == ["/skills/broken/SKILL.md"] and skips.count >= 2


# -- prompts, episodes, the thread index --------------------------------------------------------


@case("prompts", "prompt head whose record has version 'one'; a version item {'text': 5}",
      "list, get, history (the bad version left out); get of the bad prompt (BadRecordError)")
def _prompts(store: BaseStore) -> None:
    prompts = PromptRegistry(store)
    prompts.create("greeter", "Greet {user}.")
    prompts.update("greeter", "Greet {user} warmly.")
    prompts.create("closer", "Bye.")
    store.batch([PutOp(("prompts", "head"), "broken", {"name": "broken", "record": {
        "name": "broken", "version": "one", "text": "x"}}, index=False),
        PutOp(("prompts", "versions", "closer"), "00000000", {"text": 5}, index=False)])
    skips = Skips("prompts")
    assert [p.name for p in prompts.list()] == ["closer", "greeter"]
    assert prompts.get("greeter").version == 2
    assert [v.version for v in prompts.history("closer")] == [1]
    with pytest.raises(BadRecordError, match="broken"):
        prompts.get("broken")
    assert skips.count >= 3


@case("episodes", "episode without an action (and an unknown field)",
      "list, search, select_examples; get (BadRecordError)")
def _episodes(store: BaseStore) -> None:
    episodes = EpisodeStore(store)
    for n in range(2):
        episodes.add({"id": f"ep{n}", "situation": f"user asks to book flight {n}",
                      "action": "booked it"})
    store.put(("episodes",), "ep_bad", {"id": "ep_bad", "situation": "user asks to book a "
                                        "flight", "colour": "red"}, index=["situation"])
    skips = Skips("episodes")
    assert sorted(e.id for e in episodes.list()) == ["ep0", "ep1"]
    assert sorted(e.id for e in episodes.search("book flight")) == ["ep0", "ep1"]
    assert {e.id for e in episodes.select_examples("book flight", k=3).examples} <= {"ep0",
                                                                                     "ep1"}
    with pytest.raises(BadRecordError, match="ep_bad"):
        episodes.get("ep_bad")
    assert skips.count >= 3


@case("thread_index", "index entry with position = 'first'", "thread search")
def _thread_index(store: BaseStore) -> None:
    index = ThreadIndex(store)
    for tid in ("t1", "t2"):
        index.index_messages(tid, {"user_id": "u1"},
                             [Message.user(f"hello world from {tid}", id=f"{tid}m")], 0)
    store.put(("threads", "u1"), "t3/m", {"text": "hello world", "role": "user",
                                          "thread_id": "t3", "message_id": "m",
                                          "position": "first", "created_at": NOW},
              index=("text",))
    skips = Skips("thread_index")
    assert sorted(h.thread_id for h in index.search("hello world")) == ["t1", "t2"]
    assert skips.count == 1


# -- the graph ---------------------------------------------------------------------------------


def _graph(store: BaseStore) -> Graph:
    script = [answer([E("Ada"), E("Acme", "organization")],
                     [F("Ada", "works_at", "Acme", "Ada works at Acme")]),
              answer([E("Bob"), E("Globex", "organization")],
                     [F("Bob", "works_at", "Globex", "Bob works at Globex")])]
    # where Memory.graph(user_id="u1") and /v1/graph keep u1's graph
    graph = Graph.beside(store, ("graph", *USER), model=ScriptedModel(script))  # type: ignore[arg-type]
    graph.ingest("Ada works at Acme.")
    graph.ingest("Bob works at Globex.")
    return graph


def _corrupt_graph(graph: Graph) -> None:
    with graph.storage.transaction(True, encode_ns(graph.namespace)) as tx:
        tx.execute("UPDATE graph_entities SET aliases = 'not json' WHERE name = 'Ada'")
        tx.execute("UPDATE graph_facts SET episodes = '[\"one\"]' "
                   "WHERE fact = 'Ada works at Acme'")


@case("graph", "entity row with aliases 'not json'; fact row with episodes ['one']",
      "entities, facts, search, find_entities, entity page of a neighbour")
def _graph_case(store: BaseStore) -> None:
    graph = _graph(store)
    _corrupt_graph(graph)
    skips = Skips("graph")
    assert sorted(e.name for e in graph.entities()) == ["Acme", "Bob", "Globex"]
    assert [f.fact for f in graph.facts()] == ["Bob works at Globex"]
    assert [h.fact.fact for h in graph.search("works at", limit=5)] == ["Bob works at Globex"]
    assert [e.name for e in graph.find_entities("Bob")] == ["Bob"]
    assert [f.fact for f in graph.entity("Bob").current] == ["Bob works at Globex"]
    assert skips.count >= 3
    graph.close()


# -- running the matrix -------------------------------------------------------------------------


def _store(kind: str, tmp_path: Path) -> BaseStore:
    location = {"memory": "memory://", "sqlite": ":memory:"}.get(kind) or str(
        tmp_path / "bad.db")
    return open_store(location, index=IndexConfig(FakeEmbedder(), fields=("text",)),
                      keyword=KeywordConfig(fields=("text", "situation")))


@pytest.fixture(params=["memory", "sqlite", "file"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseStore]:
    made = _store(str(request.param), tmp_path)
    yield made
    made.close()


@pytest.mark.parametrize("row", MATRIX, ids=[f"{c.family}-{i}" for i, c in enumerate(MATRIX)])
def test_reads_skip_the_bad_record_and_return_its_neighbours(row: Case,
                                                             store: BaseStore) -> None:
    row.check(store)


def test_every_family_is_in_the_matrix() -> None:
    assert {c.family for c in MATRIX} == set(FAMILIES)


def test_matrix(capsys: pytest.CaptureFixture[str]) -> None:
    """Print the matrix (run with -s): family | malformed record | reads checked."""
    lines = ["| family | malformed record | reads checked (memory, SQLite :memory:, SQLite "
             "file) |", "|---|---|---|"]
    lines += [f"| {c.family} | {c.malformed} | {c.reads} |" for c in MATRIX]
    with capsys.disabled():
        print("\n" + "\n".join(lines))
    assert len(lines) == len(MATRIX) + 2


def test_postgres_row(pg_database: str) -> None:
    """The memory case on PostgreSQL: a record with valid_at 'yesterday' (and the as_of
    filter compares it as text) is skipped; the neighbours come back."""
    store = open_store(pg_database, schema="bad_records",
                       index=IndexConfig(FakeEmbedder(), fields=("text",)),
                       keyword=KeywordConfig(fields=("text",)))
    try:
        memory, ids = _memory(store)
        _bad_memory(store, valid_at="yesterday")
        skips = Skips("memories")
        _memory_reads(memory, ids)
        assert skips.count >= 4
    finally:
        store.close()


# -- writes refuse what would not read back ------------------------------------------------------


def test_writes_check_what_they_put(store: BaseStore) -> None:
    memory, ids = _memory(store)
    event = memory.history(ids[0])[0]
    bad = replace(event, op="explode")  # type: ignore[arg-type]
    with pytest.raises(RecordFormatError, match="memory_history"):
        event_ops(bad)
    lines = [json.dumps({"memory": {"id": "m1", "content": "x", "valid_at": "yesterday"},
                         "namespace": list(USER)})]
    with pytest.raises(ImportFormatError, match=r"line 1.*valid_at"):
        import_lines(store, lines)
    with pytest.raises(RecordFormatError, match="approvals"):
        _approvals(store).park("write", "/notes/x.md", {"content": 5}, None)
    assert _approvals(store).list_approvals(None) == []  # nothing was acknowledged


# -- one store holding a bad record of every family: over HTTP, and for remem doctor ----------


def _seed(store: BaseStore) -> None:
    """Good records of every family and one bad record (two for memories) of each."""
    memory, ids = _memory(store)
    _bad_memory(store, valid_at="yesterday")
    event = memory.history(ids[0])[0]
    store.put(history_namespace(USER), "evt_bad", {**event.to_value(), "id": "evt_bad",
                                                   "at": "noon"}, index=False)
    third = memory.add("Alice has a cat", user_id="u1", infer=False).added[0].id
    store.put(IDS_NAMESPACE, third, {"type": "id", "namespace": "oops"}, index=False)
    store.put(HEADS_NAMESPACE, head_key(("memories", "user", "u2")),
              {"type": "head", "n": "many"}, index=False)
    files = StoreFileBackend(store, FILES)
    files.write("/notes/a.md", "hello a")
    files.write("/notes/b.md", "hello b")
    files.write("/notes/bad.md", "first text")  # its history keeps this through the repair
    files.write("/skills/pdf-forms/SKILL.md",
                "---\nname: pdf-forms\ndescription: Fill in PDF forms.\n---\nSteps.")
    store.put(files._history_ns("/notes/a.md"), "0000000009", {
        "type": "file_event", "path": "/notes/a.md", "version": 9, "op": "explode",
        "before": None, "after": "x", "at": NOW}, index=False)
    _blocks(store)
    approvals = _approvals(store)
    approvals.park("write", "/notes/x.md", {"content": "x", "etag": None}, None)
    prompts = PromptRegistry(store)
    prompts.create("greeter", "Greet {user}.")
    episodes = EpisodeStore(store)
    for n in range(2):
        episodes.add({"id": f"ep{n}", "situation": f"user asks to book flight {n}",
                      "action": "booked it"})
    store.batch([
        file_record(FILES, "/notes/bad.md", "hello bad", version="one"),
        file_record(FILES, "/skills/broken/SKILL.md", "no frontmatter here"),
        file_record(BLOCKS, "/blocks/broken.json", "{not json"),
        file_record(BLOCKS, "/blocks/_agents/a2.json", '{"blocks": "human"}'),
        file_record(("approvals", "default"), "/approvals/apr_bad.json",
                    '{"id": "apr_bad", "operation": "write"}'),
        PutOp(("prompts", "head"), "broken", {"name": "broken", "record": {
            "name": "broken", "version": "one", "text": "x"}}, index=False),
        PutOp(("episodes",), "ep_bad", {"id": "ep_bad", "situation": "book a flight"},
              index=["situation"]),
        PutOp(("threads", "u1"), "t3/m", {"text": "hello world", "role": "user",
                                          "thread_id": "t3", "message_id": "m",
                                          "position": "first", "created_at": NOW},
              index=("text",)),
    ])
    graph = _graph(store)
    _corrupt_graph(graph)
    graph.close()


#: what the seed leaves bad: one record per family (two graph rows, two memory records)
SEEDED = {"memories": 1, "memory_history": 1, "memory_ids": 1, "memory_heads": 1,
          "files": 1, "file_history": 1, "blocks": 1, "block_agents": 1, "approvals": 1,
          "skills": 1, "prompts": 1, "episodes": 1, "thread_index": 1, "graph": 2}


def _doctor(*args: str) -> Any:
    return CliRunner().invoke(cli, ["doctor", *args], prog_name="remem")


def _found(result: Any) -> dict[str, int]:
    data = json.loads(result.output)
    counts: dict[str, int] = {}
    for bad in data["bad"]:
        counts[bad["family"]] = counts.get(bad["family"], 0) + 1
    return counts


def test_doctor_finds_every_bad_record_and_repair_clears_them(tmp_path: Path) -> None:
    db = str(tmp_path / "doctor.db")
    store = open_store(db, index=IndexConfig(FakeEmbedder(), fields=("text",)),
                       keyword=KeywordConfig(fields=("text", "situation")))
    try:
        _seed(store)
    finally:
        store.close()
    found = _doctor("--db", db, "--json")
    assert found.exit_code == 1, found.output
    assert _found(found) == SEEDED
    assert all(b["reason"] and b["key"] for b in json.loads(found.output)["bad"])
    table = _doctor("--db", db)
    assert table.exit_code == 1 and "mem_bad" in table.output and "memory_heads" in table.output
    assert "15 bad record(s)" in table.output
    repaired = _doctor("--db", db, "--repair", "--json")
    assert repaired.exit_code == 0 and json.loads(repaired.output)["repaired"] == 15
    again = _doctor("--db", db, "--json")
    assert again.exit_code == 0 and json.loads(again.output)["bad"] == [], again.output
    # nothing was lost: a copy of each is in the quarantine; the families work on
    store = open_store(db, index=IndexConfig(FakeEmbedder(), fields=("text",)))
    try:
        kept = store.search(("_remem", "quarantine"), limit=100)
        assert sorted(i.value["family"] for i in kept) == sorted(
            f for f, n in SEEDED.items() for _ in range(n))
        bad_memory = next(i for i in kept if i.value["family"] == "memories")
        assert json.loads(bad_memory.value["value_json"])["valid_at"] == "yesterday"
        files = StoreFileBackend(store, FILES)
        assert files.stat("/notes/bad.md") is None  # a tombstone: its history stays
        files.undo("/notes/bad.md")  # brings back what its history last knew
        assert files.read("/notes/bad.md").content == "first text"
        assert [e.version for e in files.history("/notes/bad.md")] == [1, 2]
        prompts = PromptRegistry(store)
        assert [p.name for p in prompts.list()] == ["greeter"]
        assert Blocks(StoreFileBackend(store, BLOCKS)).blocks_of("a2") == []
    finally:
        store.close()


def test_doctor_delete_and_tenant_scope(tmp_path: Path) -> None:
    db = str(tmp_path / "tenants.db")
    store = open_store(db, index=IndexConfig(FakeEmbedder(), fields=("text",)),
                       keyword=KeywordConfig(fields=("text", "situation")))
    try:
        _seed(ScopedStore(store, ("tenants", "acme")))
        _memory(ScopedStore(store, ("tenants", "other")))
    finally:
        store.close()
    assert _doctor("--db", db, "--tenant", "other").exit_code == 0
    found = _doctor("--db", db, "--tenant", "acme", "--json")
    assert found.exit_code == 1 and _found(found) == SEEDED
    assert all(b["namespace"][:2] == ["tenants", "acme"] or b["family"] in (
        "blocks", "block_agents", "approvals", "skills")
        for b in json.loads(found.output)["bad"])
    deleted = _doctor("--db", db, "--tenant", "acme", "--delete", "--json")
    assert deleted.exit_code == 0 and json.loads(deleted.output)["repaired"] == 15
    assert _doctor("--db", db).exit_code == 0
    store = open_store(db)
    try:
        assert store.search(("tenants", "acme", "_remem", "quarantine")) == []
    finally:
        store.close()
    assert "--repair and --delete" in _doctor("--db", db, "--repair", "--delete").output


def test_doctor_on_postgres(pg_database: str) -> None:
    store = open_store(pg_database, index=IndexConfig(FakeEmbedder(), fields=("text",)),
                       keyword=KeywordConfig(fields=("text", "situation")))
    try:
        _seed(store)
    finally:
        store.close()
    found = _doctor("--db", pg_database, "--json")
    assert found.exit_code == 1 and _found(found) == SEEDED
    assert _doctor("--db", pg_database, "--repair").exit_code == 0
    assert _doctor("--db", pg_database).exit_code == 0


# -- over HTTP --------------------------------------------------------------------------------


def test_http_reads_answer_200_and_count_the_skips(tmp_path: Path) -> None:
    app = create_app(ServerConfig(db=str(tmp_path / "server.db"), embedder=FakeEmbedder(),
                                  mcp=False))
    state = app.state.remem
    key = state.keys.create("acme")[0]
    with TestClient(app, headers={"Authorization": f"Bearer {key}"}) as http:
        for tid in ("t1", "t2"):
            made = http.post("/v1/threads", json={"thread_id": tid, "metadata": {
                "user_id": "u1"}, "messages": [f"hello world from {tid}"]})
            assert made.status_code in (200, 201), made.text
        _seed(ScopedStore(state.store, ("tenants", "acme")))
        neighbour = http.post("/v1/memories/list", json={"user_id": "u1"}).json()
        first = neighbour["memories"][-1]["id"]
        reads = {
            "memories": [("POST", "/v1/memories/search", {"query": "Alice", "user_id": "u1"}),
                         ("POST", "/v1/memories/list", {"user_id": "u1"}),
                         ("POST", "/v1/memories/context", {"query": "Alice",
                                                           "user_id": "u1"})],
            "memory_history": [("GET", f"/v1/memories/{first}/history", None)],
            "memory_heads": [("POST", "/v1/memories", {"messages": "Bob likes tea",
                                                       "user_id": "u2", "infer": False})],
            "files": [("POST", "/v1/files/ls", {"path": "/notes"}),
                      ("POST", "/v1/files/glob", {"pattern": "**/*.md"}),
                      ("POST", "/v1/files/grep", {"pattern": "hello"})],
            "file_history": [("GET", "/v1/files/history?path=/notes/a.md", None)],
            "blocks": [("GET", "/v1/blocks", None), ("GET", "/v1/agents/a1/blocks", None),
                       ("GET", "/v1/blocks/render?agent_id=a1", None)],
            "block_agents": [("GET", "/v1/agents/a2/blocks", None),
                             ("GET", "/v1/blocks/render?agent_id=a2", None)],
            "approvals": [("GET", "/v1/approvals?status=all", None)],
            "prompts": [("GET", "/v1/prompts", None)],
            "episodes": [("POST", "/v1/episodes/list", {}),
                         ("POST", "/v1/episodes/select", {"query": "book a flight"})],
            "thread_index": [("POST", "/v1/threads/search", {"query": "hello world"})],
            "graph": [("POST", "/v1/graph/search", {"query": "works at", "user_id": "u1"})],
        }
        for family, calls in reads.items():
            for method, path, body in calls:
                answer_ = http.request(method, path, json=body)
                assert answer_.status_code == 200, (family, path, answer_.text)
        listed = http.post("/v1/memories/list", json={"user_id": "u1"}).json()["memories"]
        assert "mem_bad" not in {m["id"] for m in listed} and len(listed) == 3
        assert [b["id"] for b in http.get("/v1/blocks").json()["blocks"]] == ["human",
                                                                             "persona"]
        assert http.get("/v1/agents/a2/blocks").json() == {"blocks": []}
        assert [h["fact"]["fact"] for h in http.post("/v1/graph/search", json={
            "query": "works at", "user_id": "u1"}).json()["hits"]] == ["Bob works at Globex"]
        # the bad record itself: a 404 naming it and the fix, not a 5xx
        bad = http.get("/v1/memories/mem_bad")
        assert bad.status_code == 404 and "remem doctor" in bad.json()["message"]
        metrics = http.get("/metrics").text
    state.close()
    counted = {line.split('"')[1]: float(line.rsplit(" ", 1)[1])
               for line in metrics.splitlines()
               if line.startswith("remem_bad_records_skipped_total{")}
    for family in reads:
        assert counted[family] >= 1, (family, counted)
