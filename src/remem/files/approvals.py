"""Approvals: file operations a permission rule parked for a human (``ask``), kept as files
of a backend (a store-backed one survives restarts), and how they resolve.

Resolving is three steps, each safe to lose to a crash:

1. **claim**: an etag-checked write turns the approval from ``pending`` to ``running`` (of
   two resolvers one wins; the other gets :class:`~remem.errors.ConflictError`, a 409 over
   HTTP). The claim records the approved arguments and the file's etag at that moment
   (``base_etag``).
2. **execute**: the operation runs conditionally on ``base_etag`` (unless the parked call
   named its own etag) and its history event carries the approval id in its actor
   (``"human (approval apr_...)"``). That tag is the idempotency key: before running,
   :meth:`Approvals.execute` looks for it in the file's history, so an operation never runs
   twice; the etag condition makes two executors race safely (one writes, the other sees
   the tag).
3. **finish**: the outcome is stored: ``done`` (with the result) or ``failed`` (with the
   reason; the change was not made).

A process killed between 1 and 3 leaves the approval ``running``; :meth:`Approvals.recover`
(``remem approvals recover``, ``POST /v1/approvals/recover``) finishes such approvals once
they are older than a grace period: ``done`` if the tagged change is in history, else it
runs the operation now (still only if the file is as it was when approved) or marks it
``failed`` saying the change was not made.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Annotated, Any, ClassVar, Literal, TypeAlias

from pydantic import Field

from remem.errors import (
    ConflictError,
    FileConflictError,
    InvalidInputError,
    NotFoundError,
    PermissionDeniedError,
    UsageError,
)
from remem.files.base import FileBackend
from remem.files.paths import normalize_dir
from remem.files.types import ABSENT, FileEvent, etag_of
from remem.requests import JsonObject, Request

__all__ = [
    "Approval",
    "ApprovalStatus",
    "Approvals",
    "ApproveRequest",
    "Interrupt",
    "ListApprovalsRequest",
    "RecoverRequest",
    "RejectRequest",
]

ApprovalStatus: TypeAlias = Literal["pending", "running", "done", "rejected", "failed"]
#: operations that change a file (the ones that must run at most once)
_CHANGES = frozenset({"write", "edit", "delete", "undo"})


@dataclass(frozen=True, slots=True)
class Interrupt:
    """An operation waiting for a human: resolve it with :meth:`Approvals.approve` or
    :meth:`Approvals.reject`."""

    approval_id: str
    operation: str
    path: str
    arguments: dict[str, Any]
    scope: str | None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (what a tool answers with)."""
        return {"status": "needs_approval", "approval_id": self.approval_id,
                "operation": self.operation, "path": self.path, "arguments": self.arguments,
                "message": "a human must approve this change first; it has not been made"}


@dataclass(frozen=True, slots=True)
class Approval:
    """A stored approval: ``status`` is ``pending``, ``running`` (claimed, outcome not yet
    stored), ``done``, ``rejected`` or ``failed``. ``base_etag``: the file's etag when it
    was claimed (``"absent"``: no file); ``claimed_at``: when."""

    id: str
    operation: str
    path: str
    arguments: dict[str, Any]
    scope: str | None
    status: str
    created_at: float
    reason: str = ""
    result: dict[str, Any] | None = None
    etag: str = field(default="", compare=False)
    actor: str | None = None
    base_etag: str | None = None
    claimed_at: float | None = None
    requested_by: str | None = None

    def to_value(self) -> dict[str, Any]:
        """The stored (and JSON) form."""
        return {"id": self.id, "operation": self.operation, "path": self.path,
                "arguments": self.arguments, "scope": self.scope, "status": self.status,
                "created_at": self.created_at, "reason": self.reason, "result": self.result,
                "actor": self.actor, "base_etag": self.base_etag,
                "claimed_at": self.claimed_at, "requested_by": self.requested_by}

    @classmethod
    def from_value(cls, data: Mapping[str, Any], etag: str = "") -> Approval:
        """Read :meth:`to_value` (older records lack the claim fields)."""
        return cls(data["id"], data["operation"], data["path"], data["arguments"],
                   data["scope"], data["status"], data["created_at"], data.get("reason", ""),
                   data.get("result"), etag, data.get("actor"), data.get("base_etag"),
                   data.get("claimed_at"), data.get("requested_by"))


def approval_tag(approval_id: str) -> str:
    """What the actor of a change made by approval ``approval_id`` ends with."""
    return f"(approval {approval_id})"


class Approvals:
    """Approvals kept as files of ``store`` under ``root``, and how they resolve against
    ``files`` (the backend the parked operations run on). See the module docstring."""

    def __init__(self, store: FileBackend, files: FileBackend, *, root: str = "/approvals",
                 clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.files = files
        self.root = normalize_dir(root)
        self.clock = clock

    def _path(self, approval_id: str) -> str:
        if not isinstance(approval_id, str) or not approval_id.startswith("apr_") or (
                not approval_id[4:].isalnum()):
            raise InvalidInputError(f"approval id must look like 'apr_...', got "
                                    f"{approval_id!r}")
        return f"{self.root.rstrip('/')}/{approval_id}.json"

    def park(self, operation: str, path: str, arguments: Mapping[str, Any],
             scope: str | None, *, requested_by: str | None = None) -> Interrupt:
        """Store a pending approval; the :class:`Interrupt` naming it. ``requested_by``
        (e.g. an API key id) may not approve it itself."""
        approval = Approval(f"apr_{uuid.uuid4().hex[:20]}", operation, path, dict(arguments),
                            scope, "pending", self.clock(), requested_by=requested_by)
        self.store.write(self._path(approval.id), json.dumps(approval.to_value()),
                         etag=ABSENT)
        return Interrupt(approval.id, operation, path, dict(arguments), scope)

    def get(self, approval_id: str) -> Approval:
        """The approval with ``approval_id``."""
        try:
            read = self.store.read(self._path(approval_id))
        except NotFoundError:
            raise NotFoundError(f"no approval {approval_id!r}; list them with "
                                "Approvals.pending()") from None
        return Approval.from_value(json.loads(read.content), read.etag)

    def pending(self) -> list[Approval]:
        """Approvals waiting for a human, oldest first."""
        return self.list_approvals("pending")

    def list_approvals(self, status: str | None = "pending") -> list[Approval]:
        """Approvals with ``status`` (``None``: every one), oldest first."""
        found = []
        for info in self.store.glob("*.json", self.root):
            approval = self.get(info.path.rsplit("/", 1)[1].removesuffix(".json"))
            if status is None or approval.status == status:
                found.append(approval)
        return sorted(found, key=lambda a: (a.created_at, a.id))

    def run(self, request: ListApprovalsRequest | ApproveRequest | RejectRequest
            | RecoverRequest, approval_id: str | None = None, *, actor: str = "human",
            approver: str | None = None) -> Any:
        """Run an approvals request (what the CLI and the HTTP routes do): a list of
        :class:`Approval` for :class:`ListApprovalsRequest` and :class:`RecoverRequest`,
        the resolved :class:`Approval` for the others (``approval_id`` names it)."""
        if isinstance(request, ListApprovalsRequest):
            return self.list_approvals(None if request.status == "all" else request.status)
        if isinstance(request, RecoverRequest):
            return self.recover(stale_after=request.stale_after)
        if approval_id is None:
            raise UsageError(f"{request.operation} needs the approval id")
        if isinstance(request, ApproveRequest):
            return self.approve(approval_id, arguments=request.edited_arguments, actor=actor,
                                approver=approver)
        return self.reject(approval_id, request.reason)

    # -- resolving --------------------------------------------------------------------------

    def _store_claim(self, approval: Approval, claimed: Approval) -> Approval:
        try:  # the etag makes the claim race-free: of two resolvers one wins
            info = self.store.write(self._path(approval.id), json.dumps(claimed.to_value()),
                                    etag=approval.etag)
        except FileConflictError:
            raise ConflictError(f"approval {approval.id!r} was resolved meanwhile; an "
                                "approval resolves once (show it to see how)") from None
        assert info.etag is not None
        return replace(claimed, etag=info.etag)

    def _pending(self, approval_id: str) -> Approval:
        approval = self.get(approval_id)
        if approval.status != "pending":
            raise ConflictError(f"approval {approval_id!r} is already {approval.status}; an "
                                "approval resolves once (show it to see its outcome)")
        return approval

    def reject(self, approval_id: str, reason: str = "") -> Approval:
        """Refuse the operation: it never runs."""
        approval = self._pending(approval_id)
        return self._store_claim(approval, replace(approval, status="rejected", reason=reason,
                                                   claimed_at=self.clock()))

    def claim(self, approval_id: str, *, arguments: Mapping[str, Any] | None = None,
              actor: str = "human", approver: str | None = None) -> Approval:
        """Step 1: take a pending approval (``arguments`` merged over the parked ones, for a
        human's edit); :class:`~remem.errors.ConflictError` if it is not pending,
        :class:`~remem.errors.PermissionDeniedError` if ``approver`` is who asked."""
        approval = self._pending(approval_id)
        if approver is not None and approver == approval.requested_by:
            raise PermissionDeniedError(
                f"approval {approval_id!r} was asked for with this same key; a human must "
                "approve it with another key (the one that asked may only reject it)")
        args = {**approval.arguments, **(arguments or {})}
        base = None
        if approval.operation in _CHANGES:
            current = self.files.stat(approval.path)
            base = current.etag if current is not None else ABSENT
        return self._store_claim(approval, replace(
            approval, arguments=args, status="running", actor=actor, base_etag=base,
            claimed_at=self.clock()))

    def execute(self, claimed: Approval) -> Approval:
        """Step 2: run a claimed approval's operation unless its change is already in
        history; the outcome (``done`` or ``failed``), not yet stored."""
        if claimed.status != "running":
            raise UsageError(f"approval {claimed.id!r} is {claimed.status}; only a claimed "
                             "(running) approval executes")
        found, already = self._applied(claimed)
        if found:
            return replace(claimed, status="done", reason="", result=already)
        args = dict(claimed.arguments)
        if claimed.operation in _CHANGES and not args.get("etag"):
            args["etag"] = claimed.base_etag  # only on the file as it was when approved
        actor = f"{claimed.actor or 'human'} {approval_tag(claimed.id)}"
        try:
            result = self._run(claimed.operation, claimed.path, args, actor)
        except FileConflictError as exc:
            found, already = self._applied(claimed)  # another executor may have run it
            if found:
                return replace(claimed, status="done", reason="", result=already)
            return replace(claimed, status="failed", result=None, reason=(
                f"not applied: {claimed.path} changed since the approval ({exc}); park the "
                "operation again if it is still wanted"))
        except Exception as exc:
            return replace(claimed, status="failed", result=None,
                           reason=f"not applied: {type(exc).__name__}: {exc}")
        return replace(claimed, status="done", reason="", result=result)

    def finish(self, outcome: Approval) -> Approval:
        """Step 3: store the outcome of :meth:`execute` (unless another process stored one
        first: then that one)."""
        try:
            info = self.store.write(self._path(outcome.id), json.dumps(outcome.to_value()),
                                    etag=outcome.etag or None)
        except FileConflictError:
            stored = self.get(outcome.id)
            if stored.status != "running":
                return stored
            info = self.store.write(self._path(outcome.id), json.dumps(outcome.to_value()),
                                    etag=stored.etag)
        assert info.etag is not None
        return replace(outcome, etag=info.etag)

    def approve(self, approval_id: str, *, arguments: Mapping[str, Any] | None = None,
                actor: str = "human", approver: str | None = None) -> Approval:
        """Run the parked operation once (with ``arguments`` merged over the parked ones, for
        a human's edit) and record its outcome: claim, execute, finish. ``approver``: who
        approves (refused if it is who asked)."""
        return self.finish(self.execute(self.claim(approval_id, arguments=arguments,
                                                   actor=actor, approver=approver)))

    def recover(self, *, stale_after: float = 60.0) -> list[Approval]:
        """Finish the approvals left ``running`` for more than ``stale_after`` seconds (a
        resolver crashed): each is ``done`` (its change is in history, or runs now on the
        file as it was when approved) or ``failed`` saying it was not applied."""
        if isinstance(stale_after, bool) or not isinstance(stale_after, int | float) or (
                stale_after < 0):
            raise InvalidInputError(f"stale_after must be seconds >= 0, got {stale_after!r}")
        now = self.clock()
        return [self.finish(self.execute(a)) for a in self.list_approvals("running")
                if now - (a.claimed_at or a.created_at) >= stale_after]

    def _applied(self, claimed: Approval) -> tuple[bool, dict[str, Any] | None]:
        """Whether the claimed change's tagged event is in history, and its result."""
        if claimed.operation not in _CHANGES:
            return False, None
        if not self.files.keeps_history:  # judge by the file itself where that is certain
            current = self.files.stat(claimed.path)
            if current is None or current.etag == claimed.base_etag:
                return (claimed.operation == "delete" and current is None), None
            if claimed.operation == "write" and current.etag == etag_of(
                    str(claimed.arguments.get("content"))):
                return True, current.to_dict()
            return False, None
        tag = approval_tag(claimed.id)
        events: list[FileEvent] = self.files.history(claimed.path)
        for event in reversed(events):
            if event.actor.endswith(tag):
                if event.after is None:
                    return True, None
                return True, {"path": claimed.path, "version": event.version,
                              "etag": etag_of(event.after)}
        return False, None

    def _run(self, operation: str, path: str, args: dict[str, Any],
             actor: str) -> dict[str, Any] | None:
        if operation == "write":
            return self.files.write(path, args["content"], etag=args.get("etag"),
                                    actor=actor).to_dict()
        if operation == "edit":
            return self.files.edit(path, args["old"], args["new"],
                                   replace_all=bool(args.get("replace_all")),
                                   etag=args.get("etag"), actor=actor).to_dict()
        if operation == "delete":
            self.files.delete(path, etag=args.get("etag"), actor=actor)
            return None
        if operation == "undo":
            info = self.files.undo(path, etag=args.get("etag"), actor=actor)
            return info.to_dict() if info is not None else None
        if args.get("ls"):
            return {"entries": [e.to_dict() for e in self.files.ls(path)]}
        if args.get("history"):
            return {"events": [e.to_value() for e in self.files.history(path)]}
        return self.files.read(path, offset=int(args.get("offset") or 0),
                               limit=args.get("limit")).to_dict()


class ListApprovalsRequest(Request):
    """List approvals (``remem approvals ls``, ``GET /v1/approvals``)."""

    operation: ClassVar[str] = "list_approvals"
    status: Literal["pending", "running", "done", "rejected", "failed", "all"] = Field(
        "pending", description="which approvals: those with this status, or all")


class ApproveRequest(Request):
    """Approve a parked operation (``remem approvals approve``,
    ``POST /v1/approvals/{id}/approve``): it runs once."""

    operation: ClassVar[str] = "approve"
    edited_arguments: JsonObject | None = Field(
        None, description="edited arguments, merged over the parked ones (e.g. "
                          "{\"content\": \"...\"} for a write)")


class RejectRequest(Request):
    """Reject a parked operation (``remem approvals reject``,
    ``POST /v1/approvals/{id}/reject``): it never runs."""

    operation: ClassVar[str] = "reject"
    reason: Annotated[str, Field(max_length=2000)] = Field(
        "", description="why, kept with the approval")


class RecoverRequest(Request):
    """Finish approvals a crashed resolver left running (``remem approvals recover``,
    ``POST /v1/approvals/recover``)."""

    operation: ClassVar[str] = "recover_approvals"
    stale_after: Annotated[float, Field(ge=0, le=86_400 * 365)] = Field(
        60.0, description="only approvals claimed at least this many seconds ago")
