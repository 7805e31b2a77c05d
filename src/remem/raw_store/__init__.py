"""The raw store as a family: its operations as request values (:mod:`.requests`), their
JSON results (:mod:`.wire`), one row each in :data:`STORE_OPERATIONS`
(:mod:`.operation_table`), from which the server builds ``/v1/store`` and ``client.store``
(:mod:`.remote`) sends them.

It sits beside :mod:`remem.memory`, above :mod:`remem.operations` and :mod:`remem.store`:
its requests are built on :class:`remem.requests.Request` and its table on
:class:`remem.operations.Operation`, which the store package (below both) may not import.
"""

from __future__ import annotations

from remem.raw_store.operation_table import STORE_OPERATIONS
from remem.raw_store.requests import (
    DeleteItemRequest,
    GetItemRequest,
    ListNamespacesRequest,
    PutItemBody,
    StoreCountBody,
    StoreRequest,
    StoreSearchBody,
)

__all__ = [
    "STORE_OPERATIONS",
    "DeleteItemRequest",
    "GetItemRequest",
    "ListNamespacesRequest",
    "PutItemBody",
    "StoreCountBody",
    "StoreRequest",
    "StoreSearchBody",
]
