"""Permissions on file operations, with a human in the loop.

A :class:`Policy` is a list of :class:`Rule` values, each ``allow``, ``deny`` or ``ask`` for
a path glob, a set of operations (``read``, ``write``, ``edit``, ``delete``; listing, glob
and grep are reads) and optionally a scope (the agent or user acting). The first rule that
matches decides; ``default`` decides when none does.

:class:`GuardedFiles` runs file operations through a policy. ``deny`` raises
:class:`~remem.errors.PermissionDeniedError`. ``ask`` does nothing yet and returns an
:class:`Interrupt` value naming a pending approval, kept as a file of an approvals backend (a
store-backed one survives restarts). A human then calls :meth:`Approvals.approve` (optionally
with edited arguments) or :meth:`Approvals.reject`: resolving claims the approval with its
etag first, so of two resolvers only one wins, and the operation runs at most once (a crash
after the claim leaves it ``running``, never re-run).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Annotated, Any, ClassVar, Final, Literal, TypeAlias

from pydantic import Field

from remem.errors import (
    FileConflictError,
    InvalidInputError,
    NotFoundError,
    PermissionDeniedError,
    UsageError,
)
from remem.files.base import FileBackend
from remem.files.core import compile_glob, glob_matches
from remem.files.paths import normalize_dir, normalize_file
from remem.requests import JsonObject, Request

__all__ = [
    "OPERATIONS",
    "Approval",
    "ApprovalStatus",
    "Approvals",
    "ApproveRequest",
    "Effect",
    "GuardedFiles",
    "Interrupt",
    "ListApprovalsRequest",
    "Operation",
    "Policy",
    "RejectRequest",
    "Rule",
    "rules",
]

Effect: TypeAlias = Literal["allow", "deny", "ask"]
ApprovalStatus: TypeAlias = Literal["pending", "running", "done", "rejected", "failed"]
Operation: TypeAlias = Literal["read", "write", "edit", "delete"]
OPERATIONS: Final = ("read", "write", "edit", "delete")
_EFFECTS: Final = ("allow", "deny", "ask")


@dataclass(frozen=True, slots=True)
class Rule:
    """``effect`` for ``operations`` (``None``: all) on paths matching ``paths`` (a glob from
    the root, e.g. ``/memories/**``), for ``scope`` (``None``: anyone)."""

    effect: Effect
    paths: str = "/**"
    operations: frozenset[str] | None = None
    scope: str | None = None

    def __post_init__(self) -> None:
        if self.effect not in _EFFECTS:
            raise InvalidInputError(f"rule effect must be allow, deny or ask, got "
                                    f"{self.effect!r}")
        if self.operations is not None:
            ops = frozenset(self.operations)
            bad = sorted(ops - set(OPERATIONS))
            if bad or not ops:
                raise InvalidInputError(f"rule operations must be some of "
                                        f"{', '.join(OPERATIONS)}, got {sorted(ops)}")
            object.__setattr__(self, "operations", ops)
        compile_glob(self.paths)

    def matches(self, operation: str, path: str, scope: str | None) -> bool:
        """Whether the rule applies."""
        return ((self.operations is None or operation in self.operations)
                and (self.scope is None or self.scope == scope)
                and glob_matches(compile_glob(self.paths), path))


@dataclass(frozen=True, slots=True)
class Policy:
    """Rules in order (first match wins) and the effect when none matches."""

    rules: tuple[Rule, ...] = ()
    default: Effect = "allow"

    def decide(self, operation: str, path: str, scope: str | None = None) -> Effect:
        """The effect for ``operation`` on ``path`` by ``scope``."""
        for rule in self.rules:
            if rule.matches(operation, path, scope):
                return rule.effect
        return self.default


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
    """A stored approval: ``status`` is ``pending``, ``running``, ``done``, ``rejected`` or
    ``failed``."""

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

    def to_value(self) -> dict[str, Any]:
        """The stored (and JSON) form."""
        return {"id": self.id, "operation": self.operation, "path": self.path,
                "arguments": self.arguments, "scope": self.scope, "status": self.status,
                "created_at": self.created_at, "reason": self.reason, "result": self.result}


class GuardedFiles:
    """File operations of ``files`` checked against ``policy`` for ``scope``; ``ask`` parks
    the operation in ``approvals``."""

    def __init__(self, files: FileBackend, policy: Policy, approvals: Approvals, *,
                 scope: str | None = None, actor: str = "agent") -> None:
        self.files = files
        self.policy = policy
        self.approvals = approvals
        self.scope = scope
        self.actor = actor

    def _check(self, operation: str, path: str) -> Effect:
        effect = self.policy.decide(operation, path, self.scope)
        if effect == "deny":
            raise PermissionDeniedError(
                f"{operation} on {path!r} is denied by the file permissions; do not retry, "
                "ask the user to change the rules if it is needed")
        return effect

    def read(self, path: str, *, offset: int = 0, limit: int | None = None) -> Any:
        """``files.read`` if reads of ``path`` are allowed (``ask`` parks it)."""
        name = normalize_file(path)
        if self._check("read", name) == "ask":
            return self.approvals.park("read", name, {"offset": offset, "limit": limit},
                                       self.scope)
        return self.files.read(name, offset=offset, limit=limit)

    def ls(self, path: str = "/") -> Any:
        """``files.ls`` if reads are allowed under ``path``."""
        name = normalize_dir(path)
        if self._check("read", name) == "ask":
            return self.approvals.park("read", name, {"ls": True}, self.scope)
        return self.files.ls(name)

    def write(self, path: str, content: str, *, etag: str | None = None) -> Any:
        """``files.write``, or an :class:`Interrupt` to approve."""
        name = normalize_file(path)
        if self._check("write", name) == "ask":
            return self.approvals.park("write", name, {"content": content, "etag": etag},
                                       self.scope)
        return self.files.write(name, content, etag=etag, actor=self.actor)

    def edit(self, path: str, old: str, new: str, *, replace_all: bool = False,
             etag: str | None = None) -> Any:
        """``files.edit``, or an :class:`Interrupt` to approve."""
        name = normalize_file(path)
        if self._check("edit", name) == "ask":
            return self.approvals.park("edit", name, {"old": old, "new": new,
                                                      "replace_all": replace_all,
                                                      "etag": etag}, self.scope)
        return self.files.edit(name, old, new, replace_all=replace_all, etag=etag,
                               actor=self.actor)

    def delete(self, path: str, *, etag: str | None = None) -> Any:
        """``files.delete``, or an :class:`Interrupt` to approve."""
        name = normalize_file(path)
        if self._check("delete", name) == "ask":
            return self.approvals.park("delete", name, {"etag": etag}, self.scope)
        self.files.delete(name, etag=etag, actor=self.actor)
        return None


class Approvals:
    """Pending approvals kept as files of ``store`` under ``root``, and how they resolve
    against ``files`` (the backend the parked operations run on)."""

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
             scope: str | None) -> Interrupt:
        """Store a pending approval; the :class:`Interrupt` naming it."""
        approval = Approval(f"apr_{uuid.uuid4().hex[:20]}", operation, path, dict(arguments),
                            scope, "pending", self.clock())
        self.store.write(self._path(approval.id), json.dumps(approval.to_value()),
                         etag="absent")
        return Interrupt(approval.id, operation, path, dict(arguments), scope)

    def get(self, approval_id: str) -> Approval:
        """The approval with ``approval_id``."""
        try:
            read = self.store.read(self._path(approval_id))
        except NotFoundError:
            raise NotFoundError(f"no approval {approval_id!r}; list them with "
                                "Approvals.pending()") from None
        data = json.loads(read.content)
        return Approval(data["id"], data["operation"], data["path"], data["arguments"],
                        data["scope"], data["status"], data["created_at"],
                        data.get("reason", ""), data.get("result"), read.etag)

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

    def run(self, request: ListApprovalsRequest | ApproveRequest | RejectRequest,
            approval_id: str | None = None, *, actor: str = "human") -> Any:
        """Run an approvals request (what the CLI and the HTTP routes do): a list of
        :class:`Approval` for :class:`ListApprovalsRequest`, the resolved :class:`Approval`
        for the others (``approval_id`` names it)."""
        if isinstance(request, ListApprovalsRequest):
            return self.list_approvals(None if request.status == "all" else request.status)
        if approval_id is None:
            raise UsageError(f"{request.operation} needs the approval id")
        if isinstance(request, ApproveRequest):
            return self.approve(approval_id, arguments=request.edited_arguments, actor=actor)
        return self.reject(approval_id, request.reason)

    def _claim(self, approval_id: str, status: str, reason: str = "") -> Approval:
        approval = self.get(approval_id)
        if approval.status != "pending":
            raise UsageError(f"approval {approval_id!r} is already {approval.status}; an "
                             "approval resolves once")
        claimed = Approval(approval.id, approval.operation, approval.path,
                           approval.arguments, approval.scope, status, approval.created_at,
                           reason)
        try:  # the etag makes the claim race-free: of two resolvers one wins
            info = self.store.write(self._path(approval_id), json.dumps(claimed.to_value()),
                                    etag=approval.etag)
        except FileConflictError:
            raise UsageError(f"approval {approval_id!r} was resolved meanwhile; an approval "
                             "resolves once") from None
        assert info.etag is not None
        return replace(claimed, etag=info.etag)

    def reject(self, approval_id: str, reason: str = "") -> Approval:
        """Refuse the operation: it never runs."""
        return self._claim(approval_id, "rejected", reason)

    def approve(self, approval_id: str, *, arguments: Mapping[str, Any] | None = None,
                actor: str = "human") -> Approval:
        """Run the parked operation once (with ``arguments`` merged over the parked ones, for
        a human's edit) and record its outcome."""
        claimed = self._claim(approval_id, "running")
        args = {**claimed.arguments, **(arguments or {})}
        result: dict[str, Any] | None
        try:
            result = self._run(claimed.operation, claimed.path, args, actor)
            status, reason = "done", ""
        except Exception as exc:
            result, status, reason = None, "failed", f"{type(exc).__name__}: {exc}"
        final = Approval(claimed.id, claimed.operation, claimed.path, args, claimed.scope,
                         status, claimed.created_at, reason, result)
        self.store.write(self._path(approval_id), json.dumps(final.to_value()))
        return final

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
        if args.get("ls"):
            return {"entries": [e.to_dict() for e in self.files.ls(path)]}
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


def rules(spec: Sequence[Mapping[str, Any]]) -> tuple[Rule, ...]:
    """Rules from plain dicts (``{"effect": "ask", "paths": "/memories/**",
    "operations": ["write"]}``), as read from a config file."""
    out = []
    for position, item in enumerate(spec):
        unknown = sorted(set(item) - {"effect", "paths", "operations", "scope"})
        if unknown:
            raise InvalidInputError(f"rule {position}: unknown field(s) {', '.join(unknown)}; "
                                    "a rule has effect, paths, operations and scope")
        ops = item.get("operations")
        out.append(Rule(item["effect"], item.get("paths", "/**"),
                        frozenset(ops) if ops is not None else None, item.get("scope")))
    return tuple(out)
