"""The :class:`Graph` facade: ingest episodes, search facts, read entity pages, export.

>>> from remem.graph import Graph
>>> from remem.llm import ScriptedModel
>>> model = ScriptedModel([{"entities": [{"ref": 1, "name": "Ada", "type": "person"},
...                                      {"ref": 2, "name": "Acme", "type": "organization"}],
...                         "facts": [{"subject": 1, "predicate": "works_at", "object": 2,
...                                    "fact": "Ada works at Acme"}]}])
>>> with Graph.in_memory(("users", "u1"), model=model) as graph:
...     result = graph.ingest("Ada joined Acme today.", event_at=1_700_000_000)
...     [hit.fact.fact for hit in graph.search("where does Ada work?")]
['Ada works at Acme']
>>> result.llm_calls
1
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from types import TracebackType
from typing import Any, Literal, Self

import numpy as np
import numpy.typing as npt

from remem.embed.base import Embedder, normalize_rows
from remem.errors import InvalidInputError, NotFoundError, UsageError
from remem.graph import extract
from remem.graph.ingest import apply_facts, candidates, resolve
from remem.graph.profile import (
    DEFAULT_PROFILE,
    Profile,
    ProfileChange,
    ProfileSchema,
    ProfileSlot,
    TimelineEvent,
    XPatch,
    parse_patches,
    plan_patch,
)
from remem.graph.profile_rows import ProfileRows
from remem.graph.quota import GraphQuota, text_bytes
from remem.graph.resolve import name_key
from remem.graph.rows import GraphRows
from remem.graph.search import SearchPlan, expand, hit_of, search
from remem.graph.storage import GraphStorage, SQLiteGraphStorage, storage_at, storage_beside
from remem.graph.types import (
    Entity,
    EntityPage,
    Episode,
    Fact,
    FactHit,
    IngestResult,
    timestamp,
)
from remem.graph.vectors import ANN_MIN_ROWS, VectorCache
from remem.llm.base import ChatModel, Usage
from remem.llm.structured import generate
from remem.messages.grounding import date_to_timestamp, reference_time, timed_conversation
from remem.messages.types import Message
from remem.retrieval.tokenize import DefaultTokenizer, Tokenizer
from remem.store.namespace_codec import encode_ns
from remem.store.reserved import GRAPH
from remem.store.types import validate_namespace
from remem.store.values import nul_problem

__all__ = ["Graph"]

When = datetime | float | int | None


def _values(slots: dict[str, dict[str, ProfileSlot]]) -> dict[str, dict[str, str]]:
    return {t: {s: slot.value for s, slot in subs.items()} for t, subs in slots.items()}


class Graph:
    """One temporal knowledge graph, living under a namespace of a database.

    ``storage``: where rows live (:meth:`open`, :meth:`beside`, :meth:`in_memory` pick it);
    ``namespace``: the graph's namespace tuple (a tenant's store view prefixes it);
    ``model``: the chat model of :meth:`ingest`; ``embedder``: vectors for facts and entity
    names (``None``: keyword and graph search only, no semantic resolution);
    ``semantic_threshold``: the cosine an entity name needs to match an existing one on
    meaning alone; ``offer_entities`` / ``offer_facts``: how many existing entities and
    current facts the extraction prompt shows; ``profile``: the topics of the user's profile
    kept from the same extraction call (``None``: no profile, no timeline);
    ``ann_min_rows``: from how many fact vectors search goes through an approximate inverted
    file instead of scanning them all (:mod:`remem.graph.vectors`); ``quota``: what ingest
    asks before it grows the graph (:mod:`remem.graph.quota`; :meth:`beside` finds a store's).
    """

    def __init__(self, storage: GraphStorage, namespace: Sequence[str], *,
                 model: ChatModel | None = None, embedder: Embedder | None = None,
                 tokenizer: Tokenizer | None = None, clock: Callable[[], float] = time.time,
                 semantic_threshold: float = 0.9, offer_entities: int = 20,
                 offer_facts: int = 40,
                 profile: ProfileSchema | None = DEFAULT_PROFILE,
                 ann_min_rows: int = ANN_MIN_ROWS, quota: GraphQuota | None = None) -> None:
        self.namespace = validate_namespace(tuple(namespace))
        self.storage = storage
        self.model = model
        self.embedder = embedder
        self.tokenizer: Tokenizer = tokenizer or DefaultTokenizer()
        self.clock = clock
        if not 0.0 < semantic_threshold <= 1.0:
            raise InvalidInputError(f"semantic_threshold must be in (0, 1], got "
                                    f"{semantic_threshold!r}")
        self.semantic_threshold = semantic_threshold
        self.offer_entities = offer_entities
        self.offer_facts = offer_facts
        if profile is not None and not isinstance(profile, ProfileSchema):
            raise InvalidInputError(f"profile must be a ProfileSchema or None, got "
                                    f"{type(profile).__name__}")
        self.profile_schema = profile
        self._ns = encode_ns(self.namespace)
        if isinstance(ann_min_rows, bool) or not isinstance(ann_min_rows, int) or \
                ann_min_rows < 1:
            raise InvalidInputError(f"ann_min_rows must be a positive int, got {ann_min_rows!r}")
        self._fact_vectors = VectorCache(ann_min_rows=ann_min_rows)
        self._entity_vectors = VectorCache()
        self._df_cache: dict[str, tuple[int, int]] = {}
        self.quota = quota

    # -- opening ----------------------------------------------------------------------------

    @classmethod
    def open(cls, location: str | os.PathLike[str], namespace: Sequence[str], *,
             schema: str = "remem", **kwargs: Any) -> Graph:
        """The graph in a SQLite file, ``":memory:"`` or a PostgreSQL DSN."""
        return cls(storage_at(location, schema=schema), namespace, **kwargs)

    @classmethod
    def in_memory(cls, namespace: Sequence[str] = (GRAPH,), **kwargs: Any) -> Graph:
        """A graph in this process's memory (SQLite ``":memory:"``)."""
        return cls(SQLiteGraphStorage(":memory:"), namespace, **kwargs)

    @classmethod
    def beside(cls, store: Any, namespace: Sequence[str], **kwargs: Any) -> Graph:
        """The graph in ``store``'s database under ``namespace``; a tenant's view of a store
        (``ScopedStore``) puts it under the view's prefix, as the store does for items. The
        store's embedder is used unless ``embedder=`` is given; a layer of the store enforcing
        a quota (a :class:`~remem.graph.quota.GraphQuota`) counts the graph's rows too."""
        prefix: tuple[str, ...] = ()
        inner = store
        while hasattr(inner, "inner") and not hasattr(inner, "dsn") and not hasattr(
                inner, "path"):
            if isinstance(inner, GraphQuota):
                kwargs.setdefault("quota", inner)
            prefix = tuple(getattr(inner, "prefix", ())) + prefix
            inner = inner.inner
        index = getattr(inner, "index", None)
        if "embedder" not in kwargs and index is not None:
            kwargs["embedder"] = index.embedder
        return cls(storage_beside(inner), (*prefix, *namespace), **kwargs)

    def setup(self) -> None:
        """Create or migrate the graph tables (idempotent)."""
        self.storage.setup()

    def close(self) -> None:
        """Close the connections."""
        self.storage.close()

    def __enter__(self) -> Self:
        self.setup()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    @contextmanager
    def _rows(self, write: bool) -> Iterator[GraphRows]:
        with self.storage.transaction(write, self._ns) as tx:
            yield GraphRows(tx, self._ns, self.tokenizer, self._df_cache)

    def _embed(self, texts: Sequence[str]) -> list[npt.NDArray[np.float32] | None]:
        if self.embedder is None or not texts:
            return [None] * len(texts)
        # unit vectors, checked: a row of NaN, or of huge values, fails here naming the model
        return list(normalize_rows(self.embedder.embed_documents(list(texts)),
                                   model=self.embedder.model))

    # -- ingest -----------------------------------------------------------------------------

    def ingest(self, episode: str | Sequence[Message], *, event_at: When = None,
               source_ids: Sequence[str] = (), source: str | None = None,
               model: ChatModel | None = None) -> IngestResult:
        """Learn from one episode: one extraction call, a second only when a name stays
        ambiguous; see :mod:`remem.graph.ingest`.

        ``episode``: text, or messages (rendered with their times). ``event_at``: when it
        happened (default: the latest message's time, else now); relative dates in it are
        resolved against this time."""
        chat = model or self.model
        if chat is None:
            raise UsageError("Graph.ingest needs a chat model: Graph(..., model=...) or "
                             "ingest(..., model=...)")
        now = self.clock()
        if isinstance(episode, str):
            content, kind = episode, source or "text"
            default_at = now
        else:
            messages = list(episode)
            if not all(isinstance(m, Message) for m in messages):
                raise InvalidInputError("episode must be a str or a sequence of Message")
            content, kind = timed_conversation(messages), source or "messages"
            default_at = reference_time(messages, now)
        if not content.strip():
            raise InvalidInputError("episode is empty: give text or messages with text")
        at = timestamp(event_at, "event_at")
        at = default_at if at is None else at
        # refused before the model is called (the storage would refuse it after)
        problem = nul_problem(episode, "episode") or nul_problem(list(source_ids),
                                                                   "source_ids")
        if problem is not None:
            raise InvalidInputError(problem)
        quota = self.quota
        if quota is not None:  # the episode alone: a full tenant is refused before the call
            quota.admit_graph(1, text_bytes(content))
        with self._rows(False) as rows:
            offer = candidates(rows, content, limit=self.offer_entities,
                               facts_limit=self.offer_facts)
            slots = ProfileRows(rows.tx, self._ns).slots() if self.profile_schema else {}
        shown = _values(slots)
        keeps = None if self.profile_schema is None else (self.profile_schema, shown)
        schema = extract.extraction_schema(len(offer.entities), len(offer.facts),
                                           self.profile_schema)
        instructions = extract.EXTRACTION_INSTRUCTIONS + (
            extract.PROFILE_INSTRUCTIONS if keeps else "")
        answer = generate(chat, extract.extraction_prompt(content, at, offer.entities,
                                                          offer.facts, offer.names, keeps),
                          schema, instructions=instructions, operation="graph.extract")
        usage = answer.usage
        extraction = answer.value
        names = [x.name for x in extraction.entities]
        name_vectors = {x.ref: v for x, v in zip(extraction.entities, self._embed(names),
                                                 strict=True) if v is not None}
        entity_vectors = self._all_entity_vectors()
        with self._rows(False) as rows:
            first = resolve(rows, extraction, offer, name_vectors, entity_vectors,
                            threshold=self.semantic_threshold)
            choices: dict[int, int | None] = {}
            if first.ambiguous:
                choices, asked = self._disambiguate(chat, rows, content, at, extraction,
                                                    first.ambiguous)
                usage = usage + asked
        fact_vectors = self._embed([x.fact for x in extraction.facts])
        with self._rows(True) as rows:
            final = resolve(rows, extraction, offer, name_vectors, entity_vectors,
                            threshold=self.semantic_threshold, choices=choices)
            stored = rows.insert_episode(content, at, now, source_ids, kind)
            entity_of: dict[int, int] = {}
            created: list[int] = []
            how = dict(final.how)
            for x in extraction.entities:
                found = final.ids[x.ref]
                if found is None and x.ref in final.ambiguous:
                    found = final.ambiguous[x.ref][0]  # appeared meanwhile: the oldest
                if found is None:
                    entity = rows.insert_entity(x.name, x.type, x.aliases, now,
                                                name_vectors.get(x.ref))
                    created.append(entity.id)
                    if how[x.ref] != "asked":
                        how[x.ref] = "new"
                else:
                    known = rows.entities([found]).get(found)
                    if known is None:
                        raise NotFoundError(f"entity {found} vanished during the ingest; retry")
                    entity = rows.add_aliases(known, [x.name, *x.aliases], now)
                entity_of[x.ref] = entity.id
            applied = apply_facts(rows, extraction.facts, entity_of, offer,
                                  episode_id=stored.id, event_at=at, now=now,
                                  embeddings=fact_vectors)
            changes, events = self._keep_profile(rows, extraction, stored.id, at, now)
            if quota is not None:  # everything it adds; a refusal rolls all of it back
                grown = (1 + len(created) + len(applied.added), text_bytes(content) + sum(
                    text_bytes(f.fact) for f in rows.facts(applied.added).values()) + sum(
                    text_bytes(e.name) for e in rows.entities(created).values()))
                quota.admit_graph(*grown, recount=False)
        if quota is not None:
            quota.graph_written(*grown)
        return IngestResult(
            episode=stored, entity_ids=tuple(entity_of[x.ref] for x in extraction.entities),
            created_entities=tuple(created), added=tuple(applied.added),
            confirmed=tuple(applied.confirmed), invalidated=tuple(applied.invalidated),
            llm_calls=usage.calls, input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            resolutions=tuple(how[x.ref] for x in extraction.entities),
            profile_changes=changes, events=events)

    def _keep_profile(self, rows: GraphRows, extraction: extract.Extraction, episode_id: int,
                      at: float, now: float
                      ) -> tuple[tuple[tuple[str, str, str | None], ...], tuple[int, ...]]:
        """Apply the answer's profile patch (to the profile as it is now, inside the write)
        and store its events."""
        if self.profile_schema is None:
            return (), ()
        kept = ProfileRows(rows.tx, self._ns)
        changes = plan_patch(_values(kept.slots()), extraction.profile, self.profile_schema)
        kept.apply(changes, now, episode_id)
        events = [kept.add_event(at if e.date is None else date_to_timestamp(e.date),
                                 e.text.strip(), e.tags, episode_id, now).id
                  for e in extraction.events]
        return (tuple((c.op, f"/{c.topic}/{c.sub_topic}", c.new) for c in changes),
                tuple(dict.fromkeys(events)))
    def _disambiguate(self, chat: ChatModel, rows: GraphRows, content: str, at: float,
                      extraction: extract.Extraction, ambiguous: dict[int, list[int]]
                      ) -> tuple[dict[int, int | None], Usage]:
        entities = rows.entities({i for ids in ambiguous.values() for i in ids})
        offered: dict[int, list[tuple[Entity, list[str]]]] = {}
        for ref, ids in ambiguous.items():
            offered[ref] = [(entities[i], [f.fact for f in rows.facts_about([i], current=True)])
                            for i in ids if i in entities]
        by_ref = {x.ref: x for x in extraction.entities}
        names = [(ref, by_ref[ref].name, by_ref[ref].type) for ref in sorted(ambiguous)]
        schema = extract.disambiguation_schema({r: len(c) for r, c in offered.items()})
        answer = generate(chat, extract.disambiguation_prompt(content, at, names, offered),
                          schema, instructions=extract.DISAMBIGUATION_INSTRUCTIONS,
                          operation="graph.disambiguate")
        choices = {c.ref: (None if c.choice is None else offered[c.ref][c.choice - 1][0].id)
                   for c in answer.value.choices}
        return choices, answer.usage

    def _all_entity_vectors(self) -> dict[int, npt.NDArray[np.float32]]:
        if self.embedder is None:
            return {}
        with self._rows(False) as rows:
            self._entity_vectors.refresh(rows.entity_vectors)
        ids, matrix = self._entity_vectors.snapshot()
        return {} if matrix is None else dict(zip(ids.tolist(), matrix, strict=True))

    # -- reads ------------------------------------------------------------------------------

    def search(self, query: str, *, limit: int = 10, as_of: When = None,
               known_at: When = None, focal: int | str | None = None, hops: int = 2,
               rerank: Literal["fusion", "distance", "mmr"] = "fusion",
               fusion: Literal["weighted", "rrf"] = "weighted", mmr_lambda: float = 0.5,
               candidates: int = 100, max_postings: int | None = 2000) -> list[FactHit]:
        """Facts for ``query``, best first (:mod:`remem.graph.search`).

        ``as_of``: only facts true then; ``known_at``: as the graph knew them then;
        ``focal``: an entity (id or name) whose neighbourhood seeds the graph signal (default:
        the entities the query names); ``hops``: how far the expansion walks;
        ``max_postings``: how many postings of one query term keyword scoring reads at most
        (its best: most occurrences, then shortest facts; ``None``: all, exact BM25)."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError("query must be a non-empty string")
        for name, value, low, high in (("limit", limit, 1, 1000), ("hops", hops, 0, 5),
                                       ("candidates", candidates, 1, 10_000),
                                       ("max_postings", 10**9 if max_postings is None
                                        else max_postings, 1, 10**9)):
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise InvalidInputError(f"{name} must be an int in {low}..{high}, "
                                        f"got {value!r}")
        if rerank not in ("fusion", "distance", "mmr"):
            raise InvalidInputError(f"rerank must be 'fusion', 'distance' or 'mmr', "
                                    f"got {rerank!r}")
        if rerank == "distance" and focal is None:
            raise InvalidInputError("rerank='distance' ranks by hops from a focal entity: "
                                    "give focal= (an entity id or name)")
        focal_id = None if focal is None else self._entity_id(focal)
        plan = SearchPlan(query, limit, timestamp(as_of, "as_of"),
                          timestamp(known_at, "known_at"), focal_id, hops, rerank, fusion,
                          mmr_lambda, max(candidates, limit), max_postings)
        query_vector = (None if self.embedder is None else normalize_rows(
            self.embedder.embed_queries([query]), model=self.embedder.model)[0])
        with self._rows(False) as rows:
            if query_vector is not None:
                self._fact_vectors.refresh(rows.fact_vectors)
            cache = self._fact_vectors
            return search(rows, plan, query_vector, cache.top, cache.vectors,
                          cache.scores if cache.approximate else None)

    def expand(self, entity: int | str, *, hops: int = 2, as_of: When = None,
               known_at: When = None) -> list[FactHit]:
        """Every fact within ``hops`` of ``entity``, nearest first, with its path."""
        if isinstance(hops, bool) or not isinstance(hops, int) or not 1 <= hops <= 5:
            raise InvalidInputError(f"hops must be an int in 1..5, got {hops!r}")
        seed = self._entity_id(entity)
        with self._rows(False) as rows:
            found = expand(rows, [seed], hops, timestamp(as_of, "as_of"),
                           timestamp(known_at, "known_at"))
            touched = {e for f in found.facts.values() for e in (f.subject_id, f.object_id)
                       if e is not None}
            touched |= {e for _, walk in found.reached.values() for e in walk}
            names = {i: e.name for i, e in rows.entities(touched).items()}
        order = sorted(found.reached, key=lambda i: (found.reached[i][0], i))
        return [hit_of(found.facts[i], 1.0 / found.reached[i][0], {}, found.reached[i], names)
                for i in order]

    def find_entities(self, name: str) -> list[Entity]:
        """Entities with this name or alias (compared normalised: case, punctuation)."""
        with self._rows(False) as rows:
            return sorted(rows.entities(rows.by_keys([name_key(name)])).values(),
                          key=lambda e: e.id)

    def _entity_id(self, entity: int | str) -> int:
        if isinstance(entity, bool) or not isinstance(entity, int | str):
            raise InvalidInputError(f"an entity is an id (int) or a name, got {entity!r}")
        if isinstance(entity, int):
            with self._rows(False) as rows:
                if entity not in rows.entities([entity]):
                    raise NotFoundError(f"no entity {entity} in graph {self.namespace}")
            return entity
        found = self.find_entities(entity)
        if not found:
            raise NotFoundError(f"no entity named {entity!r} in graph {self.namespace}; "
                                "search for it or give its id")
        if len(found) > 1:
            raise InvalidInputError(
                f"{entity!r} names {len(found)} entities ("
                + ", ".join(f"{e.id}: {e.name}" for e in found) + "); give the id")
        return found[0].id

    def entity(self, entity: int | str, *, as_of: When = None) -> EntityPage:
        """An entity's page: facts true at ``as_of`` (default now) and every fact about it in
        order of validity."""
        entity_id = self._entity_id(entity)
        at = timestamp(as_of, "as_of")
        at = self.clock() if at is None else at
        with self._rows(False) as rows:
            facts = rows.facts_about([entity_id])
            touched = {e for f in facts for e in (f.subject_id, f.object_id) if e is not None}
            entities = rows.entities(touched | {entity_id})
        current = tuple(f for f in facts if f.holds(as_of=at))
        timeline = tuple(sorted(facts, key=lambda f: (f.valid_at if f.valid_at is not None
                                                      else f.recorded_at, f.id)))
        return EntityPage(entities[entity_id], current, timeline,
                          {i: e.name for i, e in entities.items()})

    def refresh_summary(self, entity: int | str, *, model: ChatModel | None = None
                        ) -> tuple[Entity, Usage]:
        """Rewrite an entity's summary from its facts with one model call; returns the
        updated entity and the call's usage. Ingest never does this itself (it would cost a
        call per entity touched): call it for the entities of an
        :attr:`IngestResult.entity_ids` whose pages you show."""
        chat = model or self.model
        if chat is None:
            raise UsageError("refresh_summary needs a chat model: Graph(..., model=...) or "
                             "refresh_summary(..., model=...)")
        page = self.entity(entity)
        current = {f.id for f in page.current}
        answer = generate(chat, extract.summary_prompt(
            page.entity, [f.fact for f in page.current],
            [f.fact for f in page.timeline if f.id not in current]), extract.Summary,
            instructions=extract.SUMMARY_INSTRUCTIONS, operation="graph.summary")
        now = self.clock()
        with self._rows(True) as rows:
            rows.set_summary(page.entity.id, answer.value.summary, now)
            updated = rows.entities([page.entity.id])[page.entity.id]
        return updated, answer.usage

    def facts(self, *, as_of: When = None, known_at: When = None) -> list[Fact]:
        """Every fact of the graph passing the validity rule, by id."""
        with self._rows(False) as rows:
            return list(rows.facts(as_of=timestamp(as_of, "as_of"),
                                   known_at=timestamp(known_at, "known_at")).values())

    def entities(self) -> list[Entity]:
        """Every entity of the graph, by id."""
        with self._rows(False) as rows:
            return list(rows.entities().values())

    def episodes(self) -> list[Episode]:
        """Every episode of the graph, by event time."""
        with self._rows(False) as rows:
            return rows.episodes()

    # -- profile and timeline ---------------------------------------------------------------

    @contextmanager
    def _profile_rows(self, write: bool) -> Iterator[ProfileRows]:
        if self.profile_schema is None:
            raise UsageError("this graph keeps no profile (Graph(..., profile=None)); open it "
                             "with profile=DEFAULT_PROFILE or a ProfileSchema")
        with self._rows(write) as rows:
            yield ProfileRows(rows.tx, self._ns)

    def profile(self, *, as_of: When = None) -> Profile:
        """The user's profile: topic -> sub-topic -> slot (value, when, which episode).
        ``as_of``: the profile as it stood then (replayed from its history)."""
        at = timestamp(as_of, "as_of")
        with self._profile_rows(False) as kept:
            if at is None:
                return Profile(kept.slots())
            history = kept.history()
        topics: dict[str, dict[str, ProfileSlot]] = {}
        for change in history:
            if change.changed_at > at:
                break
            subs = topics.setdefault(change.topic, {})
            if change.new is None:
                subs.pop(change.sub_topic, None)
            else:
                subs[change.sub_topic] = ProfileSlot(change.new, change.changed_at,
                                                      change.episode_id)
        return Profile({t: dict(sorted(subs.items())) for t, subs in sorted(topics.items())
                        if subs})

    def profile_history(self, *, topic: str | None = None) -> list[ProfileChange]:
        """Every recorded change of the profile (of ``topic``), oldest first."""
        with self._profile_rows(False) as kept:
            return kept.history(topic)

    def patch_profile(self, patch: Sequence[dict[str, Any] | XPatch]) -> list[ProfileChange]:
        """Change the profile by hand with JSON Patch operations (``add`` / ``replace`` /
        ``remove`` on ``/topic/sub_topic``), checked against the schema like the model's;
        returns the changes recorded (none when nothing changed)."""
        ops = parse_patches(patch)
        now = self.clock()
        with self._profile_rows(True) as kept:
            assert self.profile_schema is not None
            before = len(kept.history())
            kept.apply(plan_patch(_values(kept.slots()), ops, self.profile_schema), now, None)
            return kept.history()[before:]

    def timeline(self, *, since: When = None, until: When = None,
                 tags: Sequence[str] = ()) -> list[TimelineEvent]:
        """Events of the user's timeline with ``since <= happened_at < until``, by time;
        ``tags``: only events carrying one of them."""
        lo, hi = timestamp(since, "since"), timestamp(until, "until")
        if lo is not None and hi is not None and hi < lo:
            raise InvalidInputError(f"until ({hi}) must not be before since ({lo})")
        wanted = {t.strip().lower() for t in tags}
        with self._profile_rows(False) as kept:
            events = kept.events(lo, hi)
        return [e for e in events if not wanted or wanted & set(e.tags)]

    # -- async ------------------------------------------------------------------------------
    # Thin shells: each runs its sync twin in a worker thread (database calls block; the
    # model is called through its sync method there), so the event loop is never blocked
    # and the logic exists once.

    async def aingest(self, episode: str | Sequence[Message], *, event_at: When = None,
                      source_ids: Sequence[str] = (), source: str | None = None,
                      model: ChatModel | None = None) -> IngestResult:
        """Async :meth:`ingest`."""
        return await asyncio.to_thread(self.ingest, episode, event_at=event_at,
                                       source_ids=source_ids, source=source, model=model)

    async def asearch(self, query: str, *, limit: int = 10, as_of: When = None,
                      known_at: When = None, focal: int | str | None = None, hops: int = 2,
                      rerank: Literal["fusion", "distance", "mmr"] = "fusion",
                      fusion: Literal["weighted", "rrf"] = "weighted", mmr_lambda: float = 0.5,
                      candidates: int = 100, max_postings: int | None = 2000
                      ) -> list[FactHit]:
        """Async :meth:`search`."""
        return await asyncio.to_thread(self.search, query, limit=limit, as_of=as_of,
                                       known_at=known_at, focal=focal, hops=hops,
                                       rerank=rerank, fusion=fusion, mmr_lambda=mmr_lambda,
                                       candidates=candidates, max_postings=max_postings)

    async def aexpand(self, entity: int | str, *, hops: int = 2, as_of: When = None,
                      known_at: When = None) -> list[FactHit]:
        """Async :meth:`expand`."""
        return await asyncio.to_thread(self.expand, entity, hops=hops, as_of=as_of,
                                       known_at=known_at)

    async def aentity(self, entity: int | str, *, as_of: When = None) -> EntityPage:
        """Async :meth:`entity`."""
        return await asyncio.to_thread(self.entity, entity, as_of=as_of)

    async def arefresh_summary(self, entity: int | str, *, model: ChatModel | None = None
                               ) -> tuple[Entity, Usage]:
        """Async :meth:`refresh_summary`."""
        return await asyncio.to_thread(self.refresh_summary, entity, model=model)

    async def aprofile(self, *, as_of: When = None) -> Profile:
        """Async :meth:`profile`."""
        return await asyncio.to_thread(self.profile, as_of=as_of)

    async def atimeline(self, *, since: When = None, until: When = None,
                        tags: Sequence[str] = ()) -> list[TimelineEvent]:
        """Async :meth:`timeline`."""
        return await asyncio.to_thread(self.timeline, since=since, until=until, tags=tags)
