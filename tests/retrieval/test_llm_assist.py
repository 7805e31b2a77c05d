"""LLM-assisted retrieval (remem.retrieval.llm_assist) and ``remem eval locomo --llm``: the
pure prompts and fusion, the assist on the scripted model, a real store helped by it, and the
command against the loopback OpenAI-wire server (so the real HTTP client runs)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from remem.cli import cli
from remem.embed import FakeEmbedder
from remem.errors import InvalidInputError, LLMConnectionError, StructuredOutputError
from remem.eval import StoreRetriever, TurnMemory
from remem.eval.assisted import AssistedRetriever
from remem.llm import ScriptedModel
from remem.retrieval.llm_assist import (
    MAX_CANDIDATE_CHARS,
    LLMAssist,
    RerankAnswer,
    fuse_rankings,
    hyde_prompt,
    rerank_order,
    rerank_prompt,
    rewrite_prompt,
)
from remem.store import IndexConfig, InMemoryStore, KeywordConfig
from remem.testing import LoopbackServer
from remem.testing.chat_server import ChatCall

MINI = Path(__file__).parent.parent / "data" / "eval" / "locomo_facts_mini.json"
WHEN = datetime(2023, 3, 3, tzinfo=UTC)


# -- the pure core ------------------------------------------------------------------------------


def test_prompts_carry_the_question_and_ask_for_no_answer() -> None:
    instructions, prompt = rewrite_prompt("Where did Ines move?")
    assert prompt == "Question: Where did Ines move?"
    assert "Do not answer the question" in instructions and "1 to 3" in instructions
    instructions, prompt = hyde_prompt("我上司叫什么？")
    assert prompt == "Question: 我上司叫什么？" and "never shown" in instructions


def test_rerank_prompt_numbers_flattens_and_cuts_candidates() -> None:
    long = "word " * 200
    _, prompt = rerank_prompt("q?", ["first\nline", long])
    lines = prompt.splitlines()
    assert lines[:2] == ["Memories:", "[1] first line"]
    assert lines[2].startswith("[2] word word") and lines[2].endswith("\u2026")
    assert len(lines[2]) == len("[2] ") + MAX_CANDIDATE_CHARS
    assert lines[-1] == "Question: q?"


def test_rerank_order_keeps_valid_numbers_then_the_rest() -> None:
    order, ignored = rerank_order(RerankAnswer(ranking=[3, 1, 3, 9, 0, -2]), 4)
    assert order == [2, 0, 1, 3]
    assert ignored == 4  # a repeat, two out of range, one negative
    assert rerank_order(RerankAnswer(ranking=[]), 3) == ([0, 1, 2], 0)


def test_fuse_rankings_weighs_ranks_and_keeps_first_appearance_on_ties() -> None:
    assert fuse_rankings([["a", "b", "c"], ["c", "d"]], [1.0, 1.0]) == ["c", "a", "b", "d"]
    # the question's ranking outweighs a half-weight query that disagrees
    assert fuse_rankings([["a", "b"], ["b", "a"]], [1.0, 0.5]) == ["a", "b"]
    assert fuse_rankings([["a", "b"], ["b", "a"]], [1.0, 1.0]) == ["a", "b"]  # tie
    assert fuse_rankings([["a", "a", "b"]], [1.0]) == ["a", "b"]
    with pytest.raises(InvalidInputError, match="one weight per ranking"):
        fuse_rankings([["a"]], [1.0, 2.0])


# -- the assist on the scripted model -----------------------------------------------------------


def test_rewrite_makes_one_call_and_weighs_its_queries() -> None:
    model = ScriptedModel([{"queries": ["border collie puppy", "adopted dog ", "border collie "
                                        "puppy"]}])
    assist = LLMAssist(model, "rewrite")
    assert assist.queries("What dog did I get?") == [("border collie puppy", 0.5),
                                                     ("adopted dog", 0.5)]
    assert len(model.requests) == 1
    request = model.requests[0]
    assert request.operation == "retrieval.rewrite"
    assert request.response_format is not None
    assert request.messages[-1].text == "Question: What dog did I get?"
    stats = assist.stats
    assert (stats.queries, stats.calls, stats.failures) == (1, 1, 0)
    assert stats.input_tokens > 0 and stats.output_tokens > 0
    assert stats.to_dict()["calls_per_query"] == 1.0


def test_an_invalid_answer_is_not_retried_and_raises_without_fallback() -> None:
    model = ScriptedModel(["I think the dog is a collie."])
    assist = LLMAssist(model, "hyde")
    with pytest.raises(StructuredOutputError):
        assist.queries("What dog did I get?")
    assert len(model.requests) == 1  # at most one call per query
    assert assist.stats.failures == 1


def test_fallback_counts_failures_and_gives_no_help() -> None:
    model = ScriptedModel(["not json", LLMConnectionError("down"), {"ranking": [2, 1]}])
    assist = LLMAssist(model, "rerank", fallback=True)
    assert assist.rerank("q", ["a", "b", "c"]) == [0, 1, 2]
    assert assist.rerank("q", ["a", "b", "c"]) == [0, 1, 2]
    assert assist.rerank("q", ["a", "b", "c"]) == [1, 0, 2]
    stats = assist.stats
    assert (stats.queries, stats.calls, stats.failures) == (3, 3, 2)


def test_rerank_shows_only_the_first_depth_candidates() -> None:
    model = ScriptedModel([{"ranking": [3, 2]}])
    assist = LLMAssist(model, "rerank", rerank_depth=3)
    order = assist.rerank("q", ["a", "b", "c", "d", "e"])
    assert order == [2, 1, 0, 3, 4]
    prompt = model.requests[0].messages[-1].text
    assert "[3] c" in prompt and "[4]" not in prompt
    assert assist.rerank("q", ["only one"]) == [0]  # nothing to reorder: no call
    assert len(model.requests) == 1


def test_async_shells_answer_like_the_sync_ones() -> None:
    model = ScriptedModel([{"passage": "I adopted a border collie."}, {"ranking": [2]}])

    async def both() -> tuple[list[tuple[str, float]], list[int]]:
        queries = await LLMAssist(model, "hyde").aqueries("What dog?")
        order = await LLMAssist(model, "rerank").arerank("What dog?", ["x", "y"])
        return queries, order

    assert asyncio.run(both()) == ([("I adopted a border collie.", 1.0)], [1, 0])


def test_a_mode_is_checked() -> None:
    with pytest.raises(InvalidInputError, match="mode must be one of rewrite, hyde, rerank"):
        LLMAssist(ScriptedModel(), "expand")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="built for mode 'rerank'"):
        LLMAssist(ScriptedModel(), "rerank").queries("q")
    with pytest.raises(InvalidInputError, match="rerank_depth must be >= 2"):
        LLMAssist(ScriptedModel(), "rerank", rerank_depth=1)


# -- a real store, helped -----------------------------------------------------------------------


TURNS = [
    TurnMemory("c", "D1:1", "Ana", "Ana: We adopted a border collie from the shelter", 1, 1,
               WHEN),
    TurnMemory("c", "D1:2", "Ben", "Ben: What a lovely name for a pet", 1, 2, WHEN),
    TurnMemory("c", "D1:3", "Ana", "Ana: My sister works as a nurse in Leeds", 1, 3, WHEN),
]


@pytest.fixture
def store() -> Iterator[InMemoryStore]:
    index = IndexConfig(embedder=FakeEmbedder(), fields=("text",))
    with InMemoryStore(index=index, keyword=KeywordConfig(fields=("text", "context"))) as s:
        yield s


def test_a_rewrite_finds_a_turn_the_question_alone_misses(store: InMemoryStore) -> None:
    question = "Which dog breed?"
    plain = StoreRetriever(store, "keyword")
    plain.ingest("c", TURNS)
    assert "D1:1" not in plain.rank("c", question, 3)  # no shared word
    model = ScriptedModel([{"queries": ["border collie adopted shelter"]}])
    helped = AssistedRetriever(StoreRetriever(store, "keyword"), LLMAssist(model, "rewrite"))
    helped.ingest("c", [])  # the turns are in the store already
    assert helped.rank("c", question, 3)[0] == "D1:1"


def test_a_rerank_sees_the_ingested_texts_and_reorders(store: InMemoryStore) -> None:
    def answer(request: Any) -> dict[str, Any]:
        prompt = request.messages[-1].text
        number = re.search(r"\[(\d+)\] Ana: My sister", prompt)
        assert number is not None
        return {"ranking": [int(number[1])]}

    model = ScriptedModel([answer])
    helped = AssistedRetriever(StoreRetriever(store, "vector"), LLMAssist(model, "rerank"))
    helped.ingest("c", TURNS)
    ranking = helped.rank("c", "Who is a nurse?", 3)
    assert ranking[0] == "D1:3" and sorted(ranking) == ["D1:1", "D1:2", "D1:3"]


# -- the command, through the loopback server ---------------------------------------------------


def invoke(env: dict[str, str | None], *args: str) -> Result:
    return CliRunner().invoke(cli, ["eval", "locomo", str(MINI), "--embedder", "fake",
                                    "--mode", "keyword", "--bootstrap", "0", *args], env=env)


def llm_env(server: LoopbackServer) -> dict[str, str | None]:
    return {"REMEM_LLM_MODEL": "gpt-test", "REMEM_LLM_BASE_URL": server.url,
            "REMEM_LLM_API_KEY": "sk-test", "REMEM_LLM_PROVIDER": "openai",
            "REMEM_LLM_MAX_RETRIES": "0"}


def test_without_a_model_the_command_names_the_setting() -> None:
    result = invoke({"REMEM_LLM_MODEL": None}, "--llm", "rerank")
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "--llm rerank needs a chat model" in lines[0] and "REMEM_LLM_MODEL" in lines[0]


def test_rerank_over_the_wire_counts_one_call_per_question() -> None:
    def reverse(call: ChatCall) -> dict[str, Any]:
        count = len(re.findall(r"^\[\d+\]", call.messages[-1].text, re.MULTILINE))
        return {"ranking": list(range(count, 0, -1))}

    with LoopbackServer() as server:
        server.chat.default = reverse
        result = invoke(llm_env(server), "--llm", "rerank", "--json")
        assert result.exit_code == 0, result.stderr
        calls = server.requests_to("/v1/chat/completions")
    doc = json.loads(result.stdout)
    llm = doc["llm"]
    questions = doc["config"]["questions_scored"]
    assert llm["mode"] == "rerank" and llm["model"] == "gpt-test"
    assert llm["queries"] == questions and llm["calls"] == questions == len(calls)
    assert llm["failures"] == 0 and llm["input_tokens"] > 0 and llm["output_tokens"] > 0
    assert calls[0].body["response_format"]["type"] == "json_schema"
    plain = json.loads(invoke({"REMEM_LLM_MODEL": None}, "--json").stdout)
    # reversing every ranking moves the best hit down
    assert doc["main"]["recall@1"] < plain["main"]["recall@1"]
    assert doc["main"]["recall@50"] == plain["main"]["recall@50"]


def test_hyde_and_rewrite_over_the_wire(tmp_path: Path) -> None:
    with LoopbackServer() as server:
        server.chat.default = {"passage": "Bruno named the new starter Gerald II."}
        result = invoke(llm_env(server), "--llm", "hyde")
        assert result.exit_code == 0, result.stderr
        assert re.search(r"llm hyde with gpt-test: 5 calls for 5 queries, \d+ input and \d+ "
                         r"output tokens, 0 failed", result.stdout)
        server.chat.default = "no json here"
        result = invoke(llm_env(server), "--llm", "rewrite", "--json", "--units", "facts")
        assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["llm"]["failures"] == 5 and doc["llm"]["calls"] == 5  # counted, not hidden
    assert doc["config"]["units"] == "facts"
