"""remem quickstart: the long-term store in one SQLite file, offline, no API key.

Run: python examples/quickstart.py [PATH]   (default: a temporary file)
"""

from __future__ import annotations

import io
import sys
import tempfile
from pathlib import Path

from remem import FakeEmbedder, IndexConfig, SQLiteStore, TTLConfig
from remem.store import InMemoryStore, PutOp, export_jsonl, import_jsonl


def main(path: Path) -> None:
    # The fake embedder keeps this demo offline; a real local model arrives in a later release.
    index = IndexConfig(FakeEmbedder(384), fields=("text",))
    with SQLiteStore(path, index=index, ttl=TTLConfig(refresh_on_read=True)) as store:
        user = ("users", "alice", "memories")
        store.batch([
            PutOp(user, "tea", {"text": "Alice drinks green tea every morning",
                                "kind": "preference", "confidence": 0.9}),
            PutOp(user, "city", {"text": "Alice lives in Berlin", "kind": "fact",
                                 "confidence": 0.8}),
            PutOp(user, "lang", {"text": "Alice 在学中文", "kind": "fact", "confidence": 0.6}),
            PutOp(("users", "bob", "memories"), "tea",
                  {"text": "Bob dislikes tea", "kind": "preference", "confidence": 0.7}),
        ])
        store.put(user, "session", {"text": "Alice is debugging a flaky test"}, ttl=3600)

        print("search by similarity (fake embedder: shared words) under ('users', 'alice'):")
        for hit in store.search(("users", "alice"), query="tea in the morning", limit=2):
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
