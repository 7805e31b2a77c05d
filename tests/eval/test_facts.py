"""``remem eval locomo --units turns|facts|both``: LoCoMo's observations as facts, scored
through the turns they came from, with the items and tokens returned."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from remem.cli import cli
from remem.embed import FakeEmbedder
from remem.errors import InvalidInputError
from remem.eval import StoreRetriever, TurnMemory, load_locomo
from remem.eval.facts import FactMemory, UnitsRetriever, parse_facts, returned_summary
from remem.eval.locomo import parse_locomo
from remem.store import IndexConfig, InMemoryStore, KeywordConfig

MINI = Path(__file__).parent.parent / "data" / "eval" / "locomo_facts_mini.json"


def raw() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(MINI.read_text(encoding="utf-8"))
    return data


def facts_of(data: list[dict[str, Any]]) -> tuple[tuple[FactMemory, ...], list[Any]]:
    dataset = parse_locomo(data)
    facts, fixes = parse_facts(data, dataset)
    return facts["conv-x"], fixes


def invoke(*args: str, path: Path = MINI) -> Result:
    return CliRunner().invoke(cli, ["eval", "locomo", str(path), "--embedder", "fake",
                                    "--bootstrap", "0", *args], catch_exceptions=False)


def run_json(*args: str) -> dict[str, Any]:
    result = invoke("--json", *args)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


# -- reading the observations -------------------------------------------------------------------


def test_observations_become_facts_with_their_source_turns() -> None:
    facts, _ = facts_of(raw())
    assert [(f.fact_id, f.speaker, f.sources) for f in facts] == [
        ("O1:1", "Ines", ("D1:1", "D1:3")),
        ("O1:2", "Bruno", ("D1:4",)),
        ("O2:1", "Ines", ("D2:1",)),
        ("O2:2", "Bruno", ("D2:2", "D2:4")),
    ]
    first = facts[0]
    assert first.text == "Ines signed a lease on a flat in the Ribeira district of Porto."
    assert first.session == 1
    assert first.event_time == datetime(2023, 3, 3, 9, 10, tzinfo=UTC)
    turn = facts[3].as_turn()
    assert (turn.dia_id, turn.turn, turn.session) == ("O2:2", 2, 2)


def test_bad_evidence_is_repaired_or_dropped_and_logged() -> None:
    _, fixes = facts_of(raw())
    assert [(f.where, f.kind) for f in fixes] == [
        ("conv-x session_2_observation Ines[0]", "rewritten"),
        ("conv-x session_2_observation Ines[1]", "dropped_absent"),
        ("conv-x session_2_observation Ines[1]", "no_source"),
        ("conv-x session_2_observation Ines[2]", "dropped_entry"),
    ]


def test_a_file_without_observations_is_refused_with_the_reason() -> None:
    data = raw()
    del data[0]["observation"]
    with pytest.raises(InvalidInputError, match="no 'observation' object; --units facts"):
        parse_facts(data, parse_locomo(data), source="x.json")


# -- the retriever ------------------------------------------------------------------------------


class KeysFirst:
    """A retriever that returns the keys it was given, in that order (to test the mapping)."""

    def __init__(self, keys: Sequence[str]) -> None:
        self.keys = list(keys)
        self.ingested: list[list[str]] = []

    def ingest(self, conversation_id: str, memories: Sequence[TurnMemory]) -> None:
        self.ingested.append([m.dia_id for m in memories])

    def rank(self, conversation_id: str, question: str, k: int) -> list[str]:
        return self.keys[:k]


def test_facts_rank_their_sources_in_item_order_deduplicated() -> None:
    data = raw()
    dataset = parse_locomo(data)
    facts, _ = parse_facts(data, dataset)
    inner = KeysFirst(["O2:2", "D2:4", "O1:1", "D1:3", "D1:2"])
    retriever = UnitsRetriever(inner, "both", facts)
    conversation = dataset.conversations[0]
    retriever.ingest("conv-x", conversation.turns)
    assert inner.ingested == [[t.dia_id for t in conversation.turns],
                              ["O1:1", "O1:2", "O2:1", "O2:2"]]
    assert retriever.rank("conv-x", "q", 50) == ["D2:2", "D2:4", "D1:1", "D1:3", "D1:2"]
    cost = retriever.returned[("conv-x", "q")]
    assert cost.items == 5
    assert cost.tokens > cost.items  # every item costs several tokens
    assert (cost.items_top, cost.tokens_top) == (cost.items, cost.tokens)  # under 10 turns


def test_items_and_tokens_up_to_the_tenth_turn() -> None:
    turns = [TurnMemory("c", f"D1:{i}", "A", f"turn number {i}", 1, i,
                        datetime(2023, 1, 1, tzinfo=UTC)) for i in range(1, 16)]
    inner = KeysFirst([t.dia_id for t in turns])
    retriever = UnitsRetriever(inner, "turns")
    retriever.ingest("c", turns)
    assert len(retriever.rank("c", "q", 50)) == 15
    cost = retriever.returned[("c", "q")]
    assert (cost.items, cost.items_top) == (15, 10)
    assert cost.tokens_top * 15 == cost.tokens * 10  # every turn costs the same
    assert returned_summary([cost, cost])["items_top10"] == 10.0
    assert returned_summary([])["items"] is None


def test_units_need_facts_and_a_known_name() -> None:
    with pytest.raises(InvalidInputError, match="units must be one of turns, facts, both"):
        UnitsRetriever(KeysFirst([]), "sentences")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="needs the conversations' facts"):
        UnitsRetriever(KeysFirst([]), "facts")


def test_a_real_store_finds_the_turn_behind_a_fact() -> None:
    data = raw()
    dataset = load_locomo(MINI)
    facts, _ = parse_facts(data, dataset)
    index = IndexConfig(embedder=FakeEmbedder(), fields=("text",))
    with InMemoryStore(index=index, keyword=KeywordConfig(fields=("text", "context"))) as store:
        retriever = UnitsRetriever(StoreRetriever(store, "keyword"), "facts", facts)
        retriever.ingest("conv-x", dataset.conversations[0].turns)
        ranking = retriever.rank("conv-x", "Who went to the monastery?", 5)
    assert ranking[0] == "D2:1"
    assert "D1:2" not in ranking  # no fact comes from this turn


# -- the command --------------------------------------------------------------------------------


def test_facts_units_report_recall_items_tokens_and_the_ceiling() -> None:
    doc = run_json("--mode", "keyword", "--units", "facts")
    assert doc["main"]["n"] == 4
    assert doc["main"]["recall@3"] == 1.0
    assert doc["by_category"]["1"]["recall@1"] == 0.0  # D2:4 is the fact's second source
    assert doc["cat5"]["recall@50"] == 0.0  # no fact comes from D1:2
    assert doc["reachable"] == {"main": 1.0, "cat5": 0.0}
    returned = doc["returned"]["main"]
    assert returned["n"] == 4 and 1 <= returned["items"] <= 4
    assert returned["tokens"] > returned["items"]
    config = doc["config"]
    assert config["units"] == "facts" and config["facts"] == 4
    assert [f["kind"] for f in config["fact_fixes"]] == ["rewritten", "dropped_absent",
                                                         "no_source", "dropped_entry"]


def test_both_units_index_turns_and_facts() -> None:
    doc = run_json("--mode", "keyword", "--units", "both")
    assert doc["config"]["units"] == "both"
    assert doc["cat5"]["recall@50"] == 1.0  # the turn itself is indexed too
    turns = run_json("--mode", "keyword", "--units", "turns")
    assert turns["returned"]["main"]["n"] == 4 and turns["config"]["facts"] == 0
    # facts and turns together return more items than turns alone, for the same questions
    assert doc["returned"]["main"]["items"] > turns["returned"]["main"]["items"]


def test_without_units_the_report_is_unchanged() -> None:
    doc = run_json("--mode", "keyword")
    assert "returned" not in doc and "units" not in doc["config"]


def test_table_line_fixes_and_records(tmp_path: Path) -> None:
    result = invoke("--mode", "keyword", "--units", "facts", "--out", str(tmp_path))
    assert result.exit_code == 0, result.stderr
    assert "fact fix: conv-x session_2_observation Ines[1]: no_source" in result.stderr
    assert "units facts (4 facts): per main question" in result.stdout
    assert "gold turns reachable through them 1.000" in result.stdout
    records = [json.loads(line) for line in
               (tmp_path / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert set(records[0]["returned"]) == {"items", "tokens", "items_top10", "tokens_top10"}


def test_facts_on_a_file_without_observations_exits_2(tmp_path: Path) -> None:
    data = raw()
    del data[0]["observation"]
    path = tmp_path / "plain.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    result = CliRunner().invoke(cli, ["eval", "locomo", str(path), "--embedder", "fake",
                                      "--units", "facts"])
    assert result.exit_code == 2
    assert "no 'observation' object" in result.stderr
