"""``/v1/approvals``: the file operations a permission rule parked for a human (``ask``), in
the caller's tenant.

The approvals of file tree ``tree`` (a query parameter, default ``default``, as on
``/v1/files``) are kept under the store namespace ``("approvals", tree)`` of the tenant's
scoped store, and an approved operation runs on that tree's files (``("files", tree)``).
Each route takes its request value (:mod:`remem.files.permissions`): listing is
:class:`~remem.files.permissions.ListApprovalsRequest` (as query parameters), approving
:class:`~remem.files.permissions.ApproveRequest` (optional edited arguments, merged over the
parked ones), rejecting :class:`~remem.files.permissions.RejectRequest`, finishing what a
crashed resolver left running :class:`~remem.files.approvals.RecoverRequest`. An approval
resolves once: resolving it again is a 409 that says so; an unknown id is a 404.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Path, Query, Request

from remem.errors import PermissionDeniedError
from remem.files import StoreFileBackend
from remem.files.permissions import (
    Approvals,
    ApproveRequest,
    ListApprovalsRequest,
    RecoverRequest,
    RejectRequest,
)
from remem.server.auth import Reader, Writer, server_state
from remem.server.errors import ERROR_RESPONSES, error_response
from remem.server.schemas import Label
from remem.store.base import BaseStore
from remem.store.reserved import APPROVALS, FILES

__all__ = ["approvals_for", "router"]

router = APIRouter(tags=["approvals"], responses=ERROR_RESPONSES)

TreeQuery = Annotated[Label, Query(description="which of the tenant's file trees")]
ApprovalId = Annotated[str, Path(min_length=5, max_length=64, pattern=r"^apr_[A-Za-z0-9]+$",
                                 description="an approval id (apr_...)")]


def approvals_for(store: BaseStore, tree: str = "default") -> Approvals:
    """The approvals of file tree ``tree`` in a tenant's scoped ``store`` (where a
    server-side :class:`~remem.files.permissions.GuardedFiles` parks them)."""
    return Approvals(StoreFileBackend(store, (APPROVALS, tree)),
                     StoreFileBackend(store, (FILES, tree)))


def _listing(status: Annotated[str, Query(description=(
        "which approvals: pending, running, done, rejected, failed or all"))] = "pending",
             ) -> ListApprovalsRequest:
    return ListApprovalsRequest.of(status=status)


@router.get("/v1/approvals", summary="List approvals")
async def list_approvals(who: Reader, request: Request,
                         body: Annotated[ListApprovalsRequest, Depends(_listing)],
                         tree: TreeQuery = "default") -> dict[str, Any]:
    """The tenant's approvals with ``status`` (default: pending), oldest first."""
    approvals = approvals_for(server_state(request).store_for(who), tree)
    found = await server_state(request).run(lambda: approvals.run(body))
    return {"approvals": [a.to_value() for a in found]}


@router.post("/v1/approvals/{approval_id}/approve", summary="Approve a parked operation")
async def approve(approval_id: ApprovalId, who: Writer, request: Request,
                  body: Annotated[ApproveRequest | None, Body()] = None,
                  tree: TreeQuery = "default") -> Any:
    """Run the parked operation once, with ``edited_arguments`` merged over the parked
    ones; the approval as it ends (``done``, or ``failed`` with the reason). 403 if this key
    is the one that asked for it (another key, a human's, must approve)."""
    approvals = approvals_for(server_state(request).store_for(who), tree)
    value = body or ApproveRequest.of()
    try:
        done = await server_state(request).run(
            lambda: approvals.run(value, approval_id, actor=f"api:{who.tenant}",
                                  approver=who.key_id))
    except PermissionDeniedError as exc:  # the key that asked cannot approve
        return error_response(403, "permission_denied", str(exc))
    result: dict[str, Any] = done.to_value()
    return result


@router.post("/v1/approvals/{approval_id}/reject", summary="Reject a parked operation")
async def reject(approval_id: ApprovalId, who: Writer, request: Request,
                 body: Annotated[RejectRequest | None, Body()] = None,
                 tree: TreeQuery = "default") -> dict[str, Any]:
    """Refuse the parked operation: it never runs."""
    approvals = approvals_for(server_state(request).store_for(who), tree)
    value = body or RejectRequest.of()
    done = await server_state(request).run(lambda: approvals.run(value, approval_id))
    result: dict[str, Any] = done.to_value()
    return result


@router.post("/v1/approvals/recover", summary="Finish approvals a crash left running")
async def recover(who: Writer, request: Request,
                  body: Annotated[RecoverRequest | None, Body()] = None,
                  tree: TreeQuery = "default") -> dict[str, Any]:
    """Approvals claimed at least ``stale_after`` seconds ago whose outcome was never stored
    (the resolver crashed): each ends ``done`` (its change was made, once) or ``failed``
    (it was not made)."""
    approvals = approvals_for(server_state(request).store_for(who), tree)
    value = body or RecoverRequest.of()
    found = await server_state(request).run(lambda: approvals.run(value))
    return {"approvals": [a.to_value() for a in found]}
