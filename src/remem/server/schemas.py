"""Request and response bodies of the HTTP API (pydantic models; they are the OpenAPI schema).

The memory routes take the request values of :mod:`remem.memory.requests` as their bodies
and answer with the result models of :mod:`remem.memory.wire`, the store routes those of
:mod:`remem.raw_store.requests` and :mod:`remem.raw_store.wire` (all derived from the
families' operation tables by :mod:`remem.server.operation_routes`); the store's are
importable here too, as they were. The one model declared here is the error body.

The constraints mirror the store's own rules (:mod:`remem.store.types`), so a request that
breaks one is refused by validation with a 422 naming the field, before any I/O. Rules the
schema cannot state (``"*"`` as a label, integers beyond 64 bits...) are still enforced by
the library and answered with a 422 as well.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from remem.raw_store.requests import Key, PutItemBody, StoreSearchBody
from remem.raw_store.wire import NamespaceList, SearchItemOut, StoreItemOut
from remem.requests import MAX_NAMESPACE_DEPTH, Label, NamespacePath

__all__ = [
    "MAX_NAMESPACE_DEPTH",
    "ErrorBody",
    "ErrorDetail",
    "Key",
    "Label",
    "NamespaceList",
    "NamespacePath",
    "PutItemBody",
    "SearchItemOut",
    "StoreItemOut",
    "StoreSearchBody",
]


class ErrorDetail(BaseModel):
    """One problem: where (``field``, a dotted path such as ``body.namespace.0``) and what."""

    field: str | None = None
    message: str


class ErrorBody(BaseModel):
    """Every 4xx/5xx answer: ``error`` is a machine-readable kind, ``message`` says what is
    wrong and how to fix it, ``field`` names the offending field when there is one."""

    error: str
    message: str
    field: str | None = None
    details: list[ErrorDetail] = Field(default_factory=list)
