"""``/v1/approvals``: the file operations a permission rule parked for a human (``ask``), in
the caller's tenant.

The approvals of file tree ``tree`` (a query parameter, default ``default``, as on
``/v1/files``) are kept under the store namespace ``("approvals", tree)`` of the tenant's
scoped store, and an approved operation runs on that tree's files (``("files", tree)``).
The routes are the rows of :data:`remem.files.operation_table.APPROVAL_OPERATIONS` (the
router builder makes them): listing takes
:class:`~remem.files.permissions.ListApprovalsRequest` (as query parameters), approving
:class:`~remem.files.permissions.ApproveRequest` (optional edited arguments, merged over the
parked ones), rejecting :class:`~remem.files.permissions.RejectRequest`, finishing what a
crashed resolver left running :class:`~remem.files.approvals.RecoverRequest`; each body may
be left out. An approval resolves once: resolving it again is a 409 that says so; an unknown
id is a 404; the key that asked cannot approve (403 ``permission_denied``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from fastapi import Request as HttpRequest

from remem.files import StoreFileBackend
from remem.files.operation_table import APPROVAL_OPERATIONS
from remem.files.permissions import Approvals
from remem.server.auth import server_state
from remem.server.errors import ERROR_RESPONSES
from remem.server.operation_routes import add_operation_routes
from remem.server.schemas import Label
from remem.server.state import Principal
from remem.store.base import BaseStore
from remem.store.reserved import APPROVALS, FILES

__all__ = ["approvals_for", "router"]

router = APIRouter(tags=["approvals"], responses=ERROR_RESPONSES)


def approvals_for(store: BaseStore, tree: str = "default") -> Approvals:
    """The approvals of file tree ``tree`` in a tenant's scoped ``store`` (where a
    server-side :class:`~remem.files.permissions.GuardedFiles` parks them)."""
    return Approvals(StoreFileBackend(store, (APPROVALS, tree)),
                     StoreFileBackend(store, (FILES, tree)))


def _tree(tree: Annotated[Label, Query(description="which of the tenant's file trees")]
          = "default") -> str:
    return tree


async def _run_approval(http: HttpRequest, who: Principal, request: Any, tree: str) -> Any:
    """Run ``request`` on the approvals of the caller's file tree ``tree``, in a worker
    thread, as ``api:<tenant>`` (the key approving is recorded: the one that asked cannot)."""
    state = server_state(http)
    approvals = approvals_for(state.store_for(who), tree)
    return await state.run(lambda: approvals.run(request, actor=f"api:{who.tenant}",
                                                 approver=who.key_id))


add_operation_routes(router, APPROVAL_OPERATIONS, _run_approval,
                     context=Annotated[str, Depends(_tree)])
