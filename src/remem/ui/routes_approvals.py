"""The approvals pages: file operations a permission rule parked for a human (``ask``),
and resolving one: approve (it runs once) or reject (it never runs), each a POST with the
session's CSRF token from the approval's own page, which is the confirmation step. The
key that asked for an operation cannot approve it, here as over HTTP."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Path, Query, Request
from fastapi.responses import Response

from remem.errors import PermissionDeniedError
from remem.files.approvals import ApproveRequest, RejectRequest
from remem.server.routes_approvals import approvals_for
from remem.server.state import Principal
from remem.ui.web import Inspector, form_value, inspector

__all__ = ["router"]

router = APIRouter()

#: most approvals one page shows
MAX_APPROVALS = 100

Tree = Annotated[str, Query(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")]
ApprovalId = Annotated[str, Path(min_length=5, max_length=64, pattern=r"^apr_[A-Za-z0-9]+$")]
Status = Literal["pending", "running", "done", "rejected", "failed", "all"]


def _approvals(ui: Inspector, who: Principal, tree: str) -> Any:
    return approvals_for(ui.memory(who).store, tree)


@router.get("/approvals")
async def approvals(request: Request, tree: Tree = "default",
                    status: Status = "pending") -> Response:
    """Approvals of a file tree with ``status`` (default: those waiting), oldest first."""
    ui = inspector(request)
    viewer, who = await ui.member(request)
    found = await ui.run(lambda: _approvals(ui, who, tree).list_approvals(
        None if status == "all" else status))
    return ui.page(request, viewer, "approvals.html", approvals=found[:MAX_APPROVALS],
                   more=len(found) > MAX_APPROVALS, tree=tree, status_filter=status,
                   statuses=("pending", "running", "done", "rejected", "failed", "all"))


@router.get("/approvals/{approval_id}")
async def approval_page(request: Request, approval_id: ApprovalId,
                        tree: Tree = "default") -> Response:
    """One approval: the operation, its path and arguments, who asked, and (while it waits)
    the approve and reject forms."""
    ui = inspector(request)
    viewer, who = await ui.member(request)
    found = await ui.run(lambda: _approvals(ui, who, tree).get(approval_id))
    return ui.page(request, viewer, "approval.html", approval=found, tree=tree,
                   arguments=json.dumps(found.arguments, indent=2, ensure_ascii=False),
                   result=None if found.result is None else
                   json.dumps(found.result, indent=2, ensure_ascii=False))


@router.post("/approvals/{approval_id}/{decision}")
async def resolve(request: Request, approval_id: ApprovalId,
                  decision: Annotated[Literal["approve", "reject"], Path()],
                  tree: Tree = "default") -> Response:
    """Approve (the operation runs once) or reject (it never runs) a waiting approval
    (CSRF-checked; writing keys only; not the key that asked)."""
    ui = inspector(request)
    viewer, who = await ui.member(request)
    fields = await ui.form(request, viewer)
    if who.read_only:
        raise HTTPException(403, "this API key is read-only; log in with a key created "
                                 "without --read-only to resolve approvals")
    store = _approvals(ui, who, tree)
    if decision == "approve":
        actor = f"ui:{who.key_id}" if who.key_id else "ui"
        try:
            await ui.run(lambda: store.run(ApproveRequest.of(), approval_id, actor=actor,
                                           approver=who.key_id))
        except PermissionDeniedError as exc:  # the key that asked cannot approve
            raise HTTPException(403, str(exc)) from None
    else:
        reason = form_value(fields, "reason")
        await ui.run(lambda: store.run(RejectRequest.of(reason=reason), approval_id))
    return ui.redirect(request, f"{ui.prefix}/approvals/{approval_id}?tree={tree}")
