"""Helpers for memory tests: stores, and a scripted model that follows the extraction rules.

``RuleModel`` reads the prompt the MemoryManager sent (existing memories with aliases and the
conversation) and answers like a correct model would for the phrases the tests use:
``"I live in X"`` / ``"I moved to X"`` -> a "Lives in X" fact (updating the current one),
``"I work at X"`` -> "Works at X" (same), ``"forget X"`` -> delete, anything else -> one
fact with the sentence as said.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from remem.embed import FakeEmbedder
from remem.llm import ChatRequest, ScriptedModel
from remem.memory.records import KEYWORD_FIELDS
from remem.store import BaseStore, IndexConfig, KeywordConfig, open_store

FIELDS = ("text",)


def make_store(kind: str, tmp_path: Path | None = None) -> BaseStore:
    """A store indexed like Memory.open's: 'memory' (in-process), 'sqlite' (:memory:),
    'file' (a SQLite file under tmp_path)."""
    location = {"memory": "memory://", "sqlite": ":memory:"}.get(kind)
    if location is None:
        assert tmp_path is not None
        location = str(tmp_path / "memories.db")
    return open_store(location, index=IndexConfig(FakeEmbedder(), fields=FIELDS),
                      keyword=KeywordConfig(fields=KEYWORD_FIELDS))


def existing_memories(request: ChatRequest) -> list[dict[str, Any]]:
    """The existing memories shown in a manager prompt."""
    text = request.messages[-1].text
    block = text.split("Existing memories (refer to them by id):\n", 1)[1]
    block = block.split("\n\nConversation:\n", 1)[0]
    if block.strip() == "(none)":
        return []
    return [json.loads(line) for line in block.splitlines()]


def conversation(request: ChatRequest) -> list[str]:
    """The user lines of the conversation in a manager prompt."""
    text = request.messages[-1].text.split("\n\nConversation:\n", 1)[1]
    text = text.split("\n\nAnswer with the changes", 1)[0]
    return [line[len("user: "):] for line in text.splitlines() if line.startswith("user: ")]


_PATTERNS = [
    (re.compile(r"^I (?:live in|moved to|now live in) (.+?)\.?$", re.I), "Lives in "),
    (re.compile(r"^I (?:work at|now work at|started working at) (.+?)\.?$", re.I), "Works at "),
]


def rule_answer(request: ChatRequest) -> dict[str, Any]:
    """A correct answer for the phrases above."""
    existing = existing_memories(request)
    inserts: list[dict[str, Any]] = []
    updates: list[dict[str, Any]] = []
    deletes: list[dict[str, Any]] = []
    for line in conversation(request):
        forget = re.match(r"^forget (.+)$", line, re.I)
        if forget:
            deletes += [{"id": m["id"]} for m in existing
                        if m["memory"]["content"].lower() == forget.group(1).lower()]
            continue
        for pattern, prefix in _PATTERNS:
            match = pattern.match(line)
            if match:
                content = prefix + match.group(1)
                same = [m for m in existing if m["memory"]["content"].startswith(prefix)]
                if same and same[0]["memory"]["content"] != content:
                    updates.append({"id": same[0]["id"], "memory": {"content": content}})
                elif not same:
                    inserts.append({"memory": {"content": content}})
                break
        else:
            if not any(m["memory"]["content"] == line for m in existing):
                inserts.append({"memory": {"content": line}})
    return {"inserts": inserts, "updates": updates, "deletes": deletes}


def rule_model() -> ScriptedModel:
    """A scripted model answering every request with :func:`rule_answer`."""
    return ScriptedModel(default=rule_answer)
