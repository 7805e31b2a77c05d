"""Test doubles shipped with remem, for its own tests and yours.

:class:`LoopbackServer` stands in for an LLM provider's HTTP API on 127.0.0.1, speaking its
real wire format (OpenAI embeddings and chat completions, Anthropic messages), so the real
client code runs without reaching the network. Chat answers are scripted on ``server.chat``.
:func:`block_remote_requests` makes every remem HTTP client refuse non-loopback hosts, so a
test suite cannot reach a real provider by accident.

With the ``server`` extra: :mod:`remem.testing.server` runs a real ``remem serve`` on a free
loopback port (in a thread or a child process), and :mod:`remem.testing.loadgen` is a
bounded load generator for it (shared by ``benchmarks/load.py`` and the tests).
"""

from remem._http import block_remote_requests, remote_requests_blocked
from remem.testing.chat_server import (
    CHAT_ROUTES,
    ChatAnswer,
    ChatCall,
    ChatQueue,
    ChatReply,
    anthropic_error,
    anthropic_messages_route,
    chat_completions_route,
)
from remem.testing.openai_server import (
    DEFAULT_ROUTES,
    LoopbackServer,
    RecordedRequest,
    Route,
    ScriptedReply,
    check_bearer,
    drop_data,
    embeddings_route,
    openai_error,
    reverse_data,
)

__all__ = [
    "CHAT_ROUTES",
    "DEFAULT_ROUTES",
    "ChatAnswer",
    "ChatCall",
    "ChatQueue",
    "ChatReply",
    "LoopbackServer",
    "RecordedRequest",
    "Route",
    "ScriptedReply",
    "anthropic_error",
    "anthropic_messages_route",
    "block_remote_requests",
    "chat_completions_route",
    "check_bearer",
    "drop_data",
    "embeddings_route",
    "openai_error",
    "remote_requests_blocked",
    "reverse_data",
]
