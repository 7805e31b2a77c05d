"""``remem chat``: an interactive chat that keeps its thread and uses long-term memory.

Each turn: search the user's memories for the message and put the best ones in the system
prompt, send the system prompt plus the thread's prompt view (running summary and recent
messages within ``--max-tokens``) to the model, print the answer, and save both messages as a
checkpoint of the thread (compacting it when it grows past the budget). At the end, the
session's messages go to ``Memory.add`` (one extraction call) unless ``--no-remember``.

The model comes from the ``REMEM_LLM_*`` environment variables (:mod:`remem.llm.config`).
"""

from __future__ import annotations

import sys
from typing import TextIO

import click

from remem.api import Memory
from remem.cli.common import db_option, embedder_hint, embedder_option, make_embedder
from remem.errors import LLMError, NotFoundError
from remem.llm.base import ChatModel, ChatRequest
from remem.llm.config import require_model
from remem.memory.records import KEYWORD_FIELDS
from remem.messages.types import Message
from remem.store import IndexConfig, KeywordConfig, open_store
from remem.threads import SummaryPolicy, Thread, ThreadIndex, ThreadStore

__all__ = ["DEFAULT_SYSTEM", "chat_command", "system_prompt"]

DEFAULT_SYSTEM = "You are a helpful assistant with a long-term memory of the user."
_HELP = "commands: /exit (or Ctrl-D) ends the chat, /thread shows the thread id, /help this"


def system_prompt(base: str, memories: list[str]) -> str:
    """The system prompt of a turn: ``base``, then what is remembered about the user."""
    if not memories:
        return base
    listed = "\n".join(f"- {text}" for text in memories)
    return f"{base}\n\nWhat you remember about the user (use it when relevant):\n{listed}"


def _open_thread(threads: ThreadStore, thread_id: str | None, user: str) -> tuple[Thread, bool]:
    if thread_id is not None:
        try:
            return threads.thread(thread_id), True
        except NotFoundError:
            pass
    return threads.create(thread_id, metadata={"user_id": user}), False


def _read_line(stdin: TextIO, echo: bool) -> str | None:
    click.echo("you> ", nl=False)
    line = stdin.readline()
    if not line:
        click.echo()
        return None
    if echo:  # piped input: show it, so the output reads as a transcript
        click.echo(line.rstrip("\n"))
    return line.strip()


@click.command(name="chat")
@db_option("SQLite file holding the threads and memories (created if missing).")
@click.option("--thread", "thread_id", metavar="ID",
              help="Resume thread ID (a new thread gets this id if none exists).")
@click.option("--user", default="me", show_default=True, metavar="ID",
              help="Whose memories to use and whose thread this is (metadata user_id).")
@click.option("--system", default=DEFAULT_SYSTEM, metavar="TEXT", help="The system prompt.")
@click.option("--memories", type=click.IntRange(min=0), default=5, show_default=True,
              metavar="N", help="Memories to put in the system prompt per turn (0: none).")
@click.option("--remember/--no-remember", default=True, show_default=True,
              help="At the end, extract memories from the session (one model call).")
@click.option("--max-tokens", type=click.IntRange(min=200), default=8000, show_default=True,
              metavar="N", help="Token budget of the thread's messages in each prompt; past "
                                "it the thread is summarised.")
@embedder_option("Embedder for memory and thread search by meaning (none: keywords only).")
def chat_command(db: str, thread_id: str | None, user: str, system: str, memories: int,
                 remember: bool, max_tokens: int, embedder: str) -> None:
    """Chat with the configured model, keeping the thread and using memory.

    Needs a model: set REMEM_LLM_MODEL (and REMEM_LLM_BASE_URL, REMEM_LLM_API_KEY or
    OPENAI_API_KEY / ANTHROPIC_API_KEY, REMEM_LLM_PROVIDER as needed). Reads messages from
    stdin, one per line.
    """
    ctx = click.get_current_context()
    model = require_model()
    close = getattr(model, "close", None)
    if callable(close):  # HTTP clients hold a connection pool
        ctx.call_on_close(close)
    index = None if embedder == "none" else IndexConfig(make_embedder(embedder),
                                                        fields=("text",))
    with embedder_hint(db):
        store = open_store(db, index=index, keyword=KeywordConfig(fields=KEYWORD_FIELDS),
                           strict=True)
    ctx.call_on_close(store.close)
    memory = Memory(store, llm=model)
    policy = SummaryPolicy(trigger_tokens=max_tokens, keep_tokens=max_tokens // 4)
    threads = ThreadStore(db, summarizer=model, policy=policy, index=ThreadIndex(store))
    ctx.call_on_close(threads.close)
    thread, resumed = _open_thread(threads, thread_id, user)
    length = thread.info().length
    click.echo(f"thread {thread.id} ({'resumed, ' if resumed else 'new, '}{length} messages) "
               f"with {model.model}; /help for commands")
    session = _converse(model, memory, thread, user=user, system=system, memories=memories,
                        max_tokens=max_tokens)
    if remember and session:
        result = memory.add(session, user_id=user, thread_id=thread.id)
        for record in result.added:
            click.echo(f"remembered: {record.text}")
    usage = model.usage.snapshot()
    click.echo(f"saved thread {thread.id}: {thread.info().length} messages; {usage.calls} "
               f"model calls, {usage.total_tokens} tokens")


def _converse(model: ChatModel, memory: Memory, thread: Thread, *, user: str, system: str,
              memories: int, max_tokens: int) -> list[Message]:
    """The read-answer-save loop; returns the session's messages."""
    stdin = sys.stdin
    echo = not stdin.isatty()
    session: list[Message] = []
    while True:
        line = _read_line(stdin, echo)
        if line is None or line in ("/exit", "/quit"):
            return session
        if not line:
            continue
        if line == "/help":
            click.echo(_HELP)
            continue
        if line == "/thread":
            click.echo(f"thread {thread.id}")
            continue
        found = memory.search(line, user_id=user, limit=memories).memories if memories else []
        asked = Message.user(line)
        prompt = [Message.system(system_prompt(system, [m.text for m in found])),
                  *thread.context(max_tokens=max_tokens), asked]
        try:
            answer = model.complete(ChatRequest(tuple(prompt), operation="chat")).message
        except LLMError as exc:  # keep the session; the failed turn is not saved
            click.echo(f"error: {' '.join(str(exc).split())}", err=True)
            continue
        click.echo(f"assistant> {answer.text}")
        thread.append([asked, answer])
        session += [asked, answer]
