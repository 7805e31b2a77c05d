"""One HTTP call to ``remem serve``, as a value: what :class:`remem.Client` and every family's
remote side (``client.threads``, ``client.blocks``, ``client.prompts``, ``client.episodes``,
``client.graph(...)``) build and send.

A family's remote module turns an operation into a :class:`Call` (pure code) and hands it to
the :class:`Sender` it was given (the Client, whose sync and async shells send it); it never
imports :mod:`remem.client`, which sits above the families and builds their remote objects.
An answer of HTTP 400 or more becomes remem's own error (:func:`error_of`), with the
server's message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar
from urllib.parse import quote

from remem.errors import (
    ConfigError,
    ConflictError,
    EmbeddingError,
    InvalidInputError,
    LLMError,
    NotFoundError,
    PermissionDeniedError,
    QuotaExceededError,
    ReadOnlyError,
    RememError,
    ReservedNamespaceError,
    StoreError,
    UnsupportedError,
    UsageError,
)

if TYPE_CHECKING:  # only in annotations: the memory commands import this module, not httpx
    import httpx

__all__ = ["Call", "Sender", "error_of", "path_segment"]

T = TypeVar("T")

#: the server's error kinds -> remem errors
_ERRORS: dict[str, type[RememError]] = {
    "invalid_input": InvalidInputError, "validation_error": InvalidInputError,
    "invalid_json": InvalidInputError, "too_large": InvalidInputError,
    "not_found": NotFoundError, "conflict": ConflictError, "unsupported": UnsupportedError,
    "not_configured": ConfigError, "unauthorized": ConfigError, "forbidden": UsageError,
    "llm_failed": LLMError, "embedding_failed": EmbeddingError,
    "store_unavailable": StoreError, "index_config": ConflictError,
    "quota_exceeded": QuotaExceededError,
    "read_only": ReadOnlyError, "permission_denied": PermissionDeniedError,
    "reserved_namespace": ReservedNamespaceError,
}


def error_of(response: httpx.Response) -> RememError:
    """The remem error a failed answer stands for (its ``error`` kind), with the server's
    message and the HTTP status."""
    try:
        body = response.json()
        kind, message = str(body.get("error", "")), str(body.get("message", response.text))
    except ValueError:
        kind, message = "", response.text or response.reason_phrase
    cls = _ERRORS.get(kind, RememError)
    return cls(f"{message} (HTTP {response.status_code})")


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One HTTP request and how to read its answer."""

    method: str
    path: str
    parse: Callable[[Any], T]
    json: Mapping[str, Any] | None = None
    params: Mapping[str, Any] = field(default_factory=dict)

    def read(self, response: httpx.Response) -> T:
        """The parsed answer, or the remem error of a failed one (raised)."""
        if response.status_code >= 400:
            raise error_of(response)
        return self.parse(response.json())


def path_segment(value: str) -> str:
    """An id as one path segment (stripped, every reserved character quoted)."""
    return quote(value.strip(), safe="")


class Sender(Protocol):
    """What a family's remote side needs from :class:`remem.Client`: the server's URL and
    the shells that send a :class:`Call` (blocking, and async)."""

    @property
    def url(self) -> str:
        """The server's base URL."""
        ...

    def _send(self, call: Call[T]) -> T: ...

    async def _asend(self, call: Call[T]) -> T: ...
