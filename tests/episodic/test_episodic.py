"""Episodes and few-shot examples (remem.episodic) on real stores."""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remem.embed import FakeEmbedder
from remem.episodic import Episode, EpisodeStore, render_examples, similarity
from remem.errors import InvalidInputError, NotFoundError, StructuredOutputError
from remem.llm import ScriptedModel
from remem.messages import Message
from remem.store import BaseStore, IndexConfig, SQLiteStore
from remem.tokens import count_messages

QUERY = "customer wants a refund for a damaged parcel"
GROUPS = [
    "asked for photos of the broken box",
    "offered store credit instead of cash",
    "escalated to the courier claims team",
    "checked the order was within thirty days",
]
_schemas = itertools.count()


def _planted(rng: random.Random) -> list[Episode]:
    """4 relevant episodes (one per GROUPS entry), each with 2 near-duplicate copies, and
    988 distractors drawn from a vocabulary that shares no word with the query."""
    episodes = []
    for group, detail in enumerate(GROUPS):
        base = f"A customer wants a refund for a damaged parcel; {detail}"
        for copy, extra in enumerate(["", " today", " again"]):
            episodes.append(Episode(
                id=f"rel-{group}-{copy}", situation=base + extra,
                thought="Refunds for damage need evidence first.",
                action=f"Handled it: {detail}.", result="Customer satisfied.",
                metadata={"group": group}))
    vocabulary = [f"{a}{b}" for a in ("zor", "quil", "mab", "tren", "vosk", "pel", "drun")
                  for b in ("ax", "eth", "ion", "ura", "ock", "imb", "ast", "ew")]
    while len(episodes) < 1000:
        words = rng.sample(vocabulary, 8)
        episodes.append(Episode(id=f"noise-{len(episodes)}", situation=" ".join(words),
                                action=" ".join(rng.sample(vocabulary, 4))))
    rng.shuffle(episodes)
    return episodes


@pytest.fixture(scope="module")
def planted() -> Iterator[EpisodeStore]:
    store = SQLiteStore(":memory:", index=IndexConfig(embedder=FakeEmbedder()))
    store.setup()
    episodes = EpisodeStore(store)
    episodes.add_many(_planted(random.Random(7)))
    yield episodes
    store.close()


def test_the_k_selected_are_the_planted_relevant_ones_without_near_duplicates(
        planted: EpisodeStore) -> None:
    selection = planted.select_examples(QUERY, k=4, budget_tokens=2_000)
    groups = [e.metadata.get("group") for e in selection.examples]
    assert sorted(groups) == [0, 1, 2, 3]  # one of each planted group, no distractor
    for a, b in itertools.combinations(selection.examples, 2):
        assert similarity(a, b) <= 0.8
    assert selection.tokens == count_messages(selection.messages()) <= 2_000


def test_without_mmr_the_near_duplicates_are_still_dropped(planted: EpisodeStore) -> None:
    ranked = planted.search(QUERY, limit=12)
    assert {e.id.split("-")[0] for e in ranked} == {"rel"}  # the 12 planted ones rank first
    selection = planted.select_examples(QUERY, k=4, mmr=1.0)  # 1.0: relevance only
    assert sorted(e.metadata["group"] for e in selection.examples) == [0, 1, 2, 3]
    assert selection.duplicates > 0


@settings(max_examples=40, deadline=None)
@given(budget=st.integers(min_value=1, max_value=600), k=st.integers(min_value=1, max_value=6))
def test_selection_never_passes_the_budget(planted: EpisodeStore, budget: int, k: int) -> None:
    selection = planted.select_examples(QUERY, k=k, budget_tokens=budget)
    assert len(selection.examples) <= k
    assert selection.tokens == count_messages(render_examples(selection.examples)) <= budget
    one = count_messages(render_examples(selection.examples[:1])) if selection.examples else 0
    if budget >= 200 and k >= 1:  # every planted example costs well under 200 tokens
        assert selection.examples and one <= budget


def test_rendering_as_few_shot_messages() -> None:
    episode = Episode(situation="User asks for a refund", thought="Check the date",
                      action="Approved the refund", result="Thanked")
    messages = render_examples([episode, Episode(situation="s", action="a")])
    assert [m.role for m in messages] == ["user", "assistant", "user", "assistant"]
    assert messages[0].text == "User asks for a refund"
    assert messages[1].text == (
        "Thought: Check the date\nAction: Approved the refund\nResult: Thanked")
    assert messages[3].text == "Action: a"
    assert {m.name for m in messages} == {"example"}


@pytest.fixture(params=["sqlite-file", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseStore]:
    index = IndexConfig(embedder=FakeEmbedder())
    made: BaseStore
    if request.param == "sqlite-file":
        made = SQLiteStore(tmp_path / "episodes.db", index=index)
    else:
        from remem.store.postgres import PostgresStore

        made = PostgresStore(request.getfixturevalue("pg_database"),
                             schema=f"episodic{next(_schemas)}", index=index)
    made.setup()
    yield made
    made.close()


def test_extract_from_a_thread_is_one_call_and_cites_the_thread(store: BaseStore) -> None:
    episodes = EpisodeStore(store, prefix=("agents", "support", "episodes"))
    model = ScriptedModel([{"episodes": [
        {"situation": "User's parcel arrived broken; wants money back",
         "thought": "Damage claims need a photo", "action": "Asked for a photo, then refunded",
         "result": "User thanked the agent"},
    ]}])
    thread = [Message.user("My parcel arrived broken, I want my money back"),
              Message.assistant("Sorry! Could you send a photo?"),
              Message.user("Here it is"), Message.assistant("Refunded. Anything else?"),
              Message.user("No, thanks a lot!")]
    extracted = episodes.extract(model, thread, thread_id="thread-42")
    assert extracted.usage.calls == 1 and len(model.requests) == 1
    assert "My parcel arrived broken" in model.requests[0].messages[-1].text
    [episode] = extracted.episodes
    assert episode.thread_id == "thread-42"
    assert episodes.get(episode.id) == episode
    assert [e.id for e in episodes.list()] == [episode.id]
    found = episodes.search("parcel broken refund")
    assert [e.id for e in found] == [episode.id]
    episodes.add_many([{"situation": "User's parcel arrived broken; wants money back now",
                        "action": "Asked for a photo, then refunded"},
                       {"situation": "User cannot log in", "action": "Sent a reset link"}])
    chosen = episodes.select_examples("my parcel is broken, refund me", k=3)
    # one of the two near-identical parcel episodes; the log-in one is under the relevance floor
    assert len(chosen.examples) == 1 and chosen.duplicates == 1
    assert "parcel arrived broken" in chosen.examples[0].situation
    loose = episodes.select_examples("my parcel is broken, refund me", k=3, min_relevance=0.0)
    assert [e.situation for e in loose.examples][1:] == ["User cannot log in"]
    episodes.delete(episode.id)
    with pytest.raises(NotFoundError):
        episodes.get(episode.id)


def test_invalid_extraction_is_retried_once_then_fails_storing_nothing() -> None:
    store = SQLiteStore(":memory:")
    episodes = EpisodeStore(store)
    bad = {"episodes": [{"situation": "s"}]}  # no action
    model = ScriptedModel([bad, bad])
    with pytest.raises(StructuredOutputError, match="action"):
        episodes.extract(model, [Message.user("hi")])
    assert len(model.requests) == 2 and episodes.list() == []
    model.add({"episodes": []})
    assert episodes.extract(model, [Message.user("hi")]).episodes == ()


def test_bad_input_names_the_field() -> None:
    episodes = EpisodeStore(SQLiteStore(":memory:"))
    with pytest.raises(InvalidInputError, match=r"episode\.action: Field required"):
        episodes.add({"situation": "s"})
    with pytest.raises(InvalidInputError, match=r"episode\.situation: String should have"):
        episodes.add({"situation": "", "action": "a"})
    with pytest.raises(InvalidInputError, match="k must be an int from 1 to 50"):
        episodes.select_examples("q", k=0)
    with pytest.raises(InvalidInputError, match="budget_tokens must be an int >= 1"):
        episodes.select_examples("q", budget_tokens=0)
    with pytest.raises(InvalidInputError, match="query must be non-empty"):
        episodes.select_examples(" ")
    with pytest.raises(InvalidInputError, match="store must be a remem BaseStore"):
        EpisodeStore({})  # type: ignore[arg-type]


def test_keyword_only_store_selects_without_mmr() -> None:
    episodes = EpisodeStore(SQLiteStore(":memory:"))  # no embedder: keywords only
    episodes.add_many([{"situation": "refund a damaged parcel", "action": "refunded"},
                       {"situation": "refund a damaged parcel now", "action": "refunded"},
                       {"situation": "reset a password", "action": "sent a link"}])
    selection = episodes.select_examples("damaged parcel refund", k=3)
    assert [e.situation for e in selection.examples] == ["refund a damaged parcel"] or [
        e.situation for e in selection.examples] == ["refund a damaged parcel now"]
    assert selection.duplicates == 1


def test_async_twins() -> None:
    episodes = EpisodeStore(SQLiteStore(":memory:", index=IndexConfig(embedder=FakeEmbedder())))

    async def scenario() -> list[str]:
        await episodes.aadd({"situation": "refund a damaged parcel", "action": "refunded"})
        model = ScriptedModel([{"episodes": [{"situation": "reset a password",
                                              "action": "sent a link"}]}])
        await episodes.aextract(model, [Message.user("I forgot my password")])
        chosen = await episodes.aselect_examples("password reset", k=1)
        return [e.situation for e in chosen.examples]

    assert asyncio.run(scenario()) == ["reset a password"]
