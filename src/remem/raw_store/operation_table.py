"""The raw store's operations, one row each (:class:`remem.operations.Operation`): the table
the ``/v1/store`` routes (:mod:`remem.server.routes_store`, by the router builder),
``client.store`` (:mod:`remem.raw_store.remote`) and the store's parity tests read.

The rows declare no MCP tool and no CLI command: the MCP server's one store tool,
``list_namespaces``, answers the namespaces an agent may use (bookkeeping left out, a
``prefix`` and a ``limit`` only), and ``remem store`` works on a database file, its
namespace and key positional; neither is one of these requests.
"""

from __future__ import annotations

from remem.operations import Operation, Route
from remem.raw_store.requests import (
    DeleteItemRequest,
    GetItemRequest,
    ListNamespacesRequest,
    PutItemBody,
    StoreCountBody,
    StoreSearchBody,
)
from remem.raw_store.wire import CountOut, NamespaceList, OkOut, SearchResultsOut, StoreItemOut

__all__ = ["STORE_OPERATIONS"]

STORE_OPERATIONS: tuple[Operation, ...] = (
    Operation(
        PutItemBody, OkOut, writes=True, python="put",
        route=Route("PUT", "/v1/store/items", "put_item", "Insert or replace an item",
                    "Store ``value`` at ``namespace`` / ``key`` (replacing what is there).")),
    Operation(
        GetItemRequest, StoreItemOut, writes=False, python="get",
        route=Route("GET", "/v1/store/items", "get_item", "Read an item",
                    "The item at ``namespace`` / ``key`` (404 if absent or expired).")),
    Operation(
        DeleteItemRequest, OkOut, writes=True, python="delete",
        route=Route("DELETE", "/v1/store/items", "delete_item", "Delete an item",
                    "Delete the item (deleting a missing item is not an error).")),
    Operation(
        StoreSearchBody, SearchResultsOut, writes=False, python="search",
        route=Route("POST", "/v1/store/search", "search_items", "Search items",
                    "Items under ``namespace_prefix`` matching ``filter``, ranked by "
                    "``query`` when given.")),
    Operation(
        StoreCountBody, CountOut, writes=False, python="count",
        route=Route("POST", "/v1/store/count", "count_items", "Count items",
                    "How many live items under ``namespace_prefix`` match ``filter`` and the "
                    "event-time\nrange: what a search without a query lists over all its "
                    "pages.")),
    Operation(
        ListNamespacesRequest, NamespaceList, writes=False, python="list_namespaces",
        route=Route("GET", "/v1/store/namespaces", "list_namespaces", "List namespaces",
                    "Distinct namespaces (``*`` in ``prefix``/``suffix`` matches any one "
                    "label).")),
)
"""Every raw store operation (each request type of :mod:`remem.raw_store.requests`)."""
