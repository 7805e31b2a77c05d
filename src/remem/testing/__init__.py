"""Test doubles shipped with remem, for its own tests and yours.

:class:`LoopbackServer` stands in for an LLM provider's HTTP API on 127.0.0.1, speaking its
real wire format, so the real client code runs without reaching the network.
"""

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
    "DEFAULT_ROUTES",
    "LoopbackServer",
    "RecordedRequest",
    "Route",
    "ScriptedReply",
    "check_bearer",
    "drop_data",
    "embeddings_route",
    "openai_error",
    "reverse_data",
]
