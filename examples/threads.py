"""remem threads: a conversation's short-term memory, checkpointed in one SQLite file.

Shows: a thread per conversation with metadata, a checkpoint after every append, reading the
thread as it was at any checkpoint, rewinding, forking (sharing history) and copying, listing
threads by metadata, a running summary when the thread grows long, the prompt view within a
token budget, and finding a past conversation by meaning with the offline local model.

The summariser here is remem's ScriptedModel, so the demo runs offline and gives the same
output every time; pass any ChatModel (e.g. ``remem.llm.config.require_model()``) instead.

Run: python examples/threads.py [PATH]   (default: a temporary file)
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from remem.embed.local import LocalEmbedder
from remem.llm import ChatRequest, ScriptedModel
from remem.messages import Message
from remem.store import IndexConfig, KeywordConfig, SQLiteStore
from remem.threads import SummaryPolicy, ThreadIndex, ThreadStore
from remem.threads.types import summary_usage
from remem.tokens import count_messages


def summarise(request: ChatRequest) -> str:
    """Stands in for a model's summary: the user's lines of the part to fold."""
    # a line may start with the time it was sent ("[Sunday 2025-06-15 15:06 UTC] User: ...")
    asked = [line.split("User:", 1)[1].strip()
             for line in request.messages[1].text.splitlines() if "User:" in line]
    return "The user asked how to cook: " + ", ".join(
        text.removeprefix("How do I make ").split(" at home")[0] for text in asked)


def main(path: Path) -> None:
    # the long-term store indexes thread messages for search; both live in one file
    store = SQLiteStore(path, index=IndexConfig(LocalEmbedder(), fields=("text",)),
                        keyword=KeywordConfig(fields=("text",)))
    summariser = ScriptedModel(default=summarise)
    policy = SummaryPolicy(trigger_tokens=160, keep_tokens=60)
    with store, ThreadStore(path, index=ThreadIndex(store), summarizer=summariser,
                            policy=policy) as threads:
        trip = threads.create("trip", metadata={"user_id": "ada", "topic": "travel"},
                              messages=[Message.system("You are a travel agent.")])
        first = trip.append([Message.user("I want to visit Lisbon in April."),
                             Message.assistant("Lisbon in April is mild and sunny.")])
        trip.append([Message.user("Find me a hotel in Alfama."),
                     Message.assistant("Memmo Alfama has a terrace over the river.")])
        print(f"{trip.id}: {trip.info().length} messages, "
              f"{len(trip.checkpoints())} checkpoints")

        # time travel: read the thread as it was, then continue from there in place
        then = [m.text for m in trip.messages(checkpoint_id=first.id)]
        print(f"at the first turn: {then[1:]}")
        trip.rewind(first.id)
        trip.append([Message.user("Actually, a hotel in Belém."),
                     Message.assistant("Altis Belém is next to the monument.")])
        print(f"after the rewind: {[m.text for m in trip.messages(last=2)]}")

        # a fork shares the history up to its checkpoint; a copy duplicates it
        porto = trip.fork(first.id, new_thread_id="trip-porto")
        porto.append([Message.user("What about Porto instead?"),
                      Message.assistant("Porto is two hours away by train.")])
        print(f"fork: {porto.id}, {porto.info().length} messages, from {porto.info().source}")
        backup = trip.copy(new_thread_id="trip-backup", metadata={"topic": "backup"})
        listed = [t.thread_id for t in threads.list_threads({"topic": "travel"})]
        print(f"travel threads: {sorted(listed)}; backup has {backup.info().length} messages")
        backup.delete()  # its messages leave the search index too

        # a long conversation gets a running summary; its messages stay in the thread
        cooking = threads.create("cooking", metadata={"user_id": "ada", "topic": "food"})
        for dish in ("roast duck", "dumplings", "mapo tofu", "noodles", "fried rice",
                     "spring rolls", "hot pot", "baozi"):
            cooking.append([Message.user(f"How do I make {dish} at home, step by step?"),
                            Message.assistant(f"For {dish}: prepare, season, then cook.")])
        head = cooking.checkpoint()
        print(f"cooking: {cooking.info().length} messages, summary covers the first "
              f"{head.summary_through}, cost {summary_usage(head.state).calls} model call(s)")
        print(f"summary: {head.summary}")
        view = cooking.context(max_tokens=120)
        print(f"prompt view: {len(view)} messages, {count_messages(view)} tokens "
              f"(first: {view[0].role}, the summary)")

        # episodic recall: which past conversation was about this? (no shared words)
        for query in ("where did I want to sleep on my Portuguese holiday?",
                      "我以前问过怎么做烤鸭吗？"):
            hit = threads.search(query, owner="ada", limit=1)[0]
            print(f"{query!r} -> {hit.thread_id}: {hit.matches[0].text!r}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp) / "memory.db")
