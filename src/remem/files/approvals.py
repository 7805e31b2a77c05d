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

A human's edit of the arguments (``edited_arguments``) is checked against the operation's
arguments before the claim, so a refused edit leaves the approval pending: a key the
operation does not take is refused naming it, the path cannot be changed (reject and let
the agent ask again), and a value of the wrong type names its field
(:class:`~remem.errors.ApprovalEditError`). An ``etag`` that is not an etag, or one the file
never had, is refused as malformed or unknown (rather than failing later as "changed since
the approval"); without a history the backend can only tell the file's current etag.

An approval file that does not parse (:mod:`remem.store.bad_records`) is left out of
listings; showing or resolving it raises :class:`~remem.errors.BadRecordError`.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Annotated, Any, ClassVar, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from remem.errors import (
    ApprovalEditError,
    ConflictError,
    FileConflictError,
    Fix,
    Hint,
    InvalidInputError,
    NotFoundError,
    PermissionDeniedError,
    UsageError,
)
from remem.files.base import FileBackend
from remem.files.core import MAX_FILE_CHARS
from remem.files.paths import normalize_dir
from remem.files.types import ABSENT, FileEvent, FileRead, etag_of
from remem.requests import JsonObject, Request
from remem.store.bad_records import (
    check_record,
    kind_of,
    object_field,
    optional_text,
    parse_each,
    parse_or_raise,
    text_field,
    time_field,
)

__all__ = [
    "ARGUMENTS",
    "Approval",
    "ApprovalId",
    "ApprovalStatus",
    "Approvals",
    "ApproveByIdRequest",
    "ApproveRequest",
    "Interrupt",
    "ListApprovalsRequest",
    "RecoverRequest",
    "RejectByIdRequest",
    "RejectRequest",
    "approval_of",
    "check_arguments",
]

ApprovalStatus: TypeAlias = Literal["pending", "running", "done", "rejected", "failed"]
_STATUSES: tuple[str, ...] = ("pending", "running", "done", "rejected", "failed")
#: operations that change a file (the ones that must run at most once)
_CHANGES = frozenset({"write", "edit", "delete", "undo"})
#: what an etag looks like (remem.files.types.etag_of)
_ETAG = re.compile(r"[0-9a-f]{20}")
_APPROVAL_ID = re.compile(r"apr_[A-Za-z0-9]+")


class _Arguments(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


_Etag = Annotated[str | None, Field(max_length=64)]


class _ReadArguments(_Arguments):
    offset: Annotated[int, Field(ge=0)] = 0
    limit: Annotated[int | None, Field(ge=1)] = None
    ls: bool = False
    history: bool = False


class _WriteArguments(_Arguments):
    content: Annotated[str, Field(max_length=MAX_FILE_CHARS)]
    etag: _Etag = None


class _EditArguments(_Arguments):
    old: Annotated[str, Field(min_length=1, max_length=MAX_FILE_CHARS)]
    new: Annotated[str, Field(max_length=MAX_FILE_CHARS)]
    replace_all: bool = False
    etag: _Etag = None


class _EtagArguments(_Arguments):
    etag: _Etag = None


#: the arguments each parked operation takes (what GuardedFiles parks, what an edit may set)
ARGUMENTS: Mapping[str, type[_Arguments]] = {
    "read": _ReadArguments, "write": _WriteArguments, "edit": _EditArguments,
    "delete": _EtagArguments, "undo": _EtagArguments,
}


def _problems(exc: ValidationError, where: str) -> str:
    return "; ".join(f"{where}.{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}"
                     for e in exc.errors(include_url=False))


def check_arguments(operation: str, arguments: Mapping[str, Any],
                    where: str = "arguments") -> dict[str, Any]:
    """``arguments`` if they are what ``operation`` takes (as parked), else ``ValueError``
    naming the field."""
    model = ARGUMENTS.get(operation)
    if model is None:
        raise ValueError(f"operation must be one of {', '.join(ARGUMENTS)}, got "
                         f"{kind_of(operation)}")
    try:
        model.model_validate(dict(arguments))
    except ValidationError as exc:
        raise ValueError(_problems(exc, where)) from None
    return dict(arguments)


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
        """Read :meth:`to_value` (older records lack the claim fields); another shape raises
        ``ValueError`` or ``TypeError`` naming the field."""
        if not isinstance(data, Mapping):
            raise TypeError(f"an approval must be a JSON object, got {kind_of(data)}")
        approval_id = text_field(data["id"], "id")
        if not _APPROVAL_ID.fullmatch(approval_id):
            raise ValueError(f"id must look like 'apr_...', got {approval_id!r}")
        operation = text_field(data["operation"], "operation")
        arguments = check_arguments(operation, object_field(data["arguments"], "arguments"))
        status = text_field(data["status"], "status")
        if status not in _STATUSES:
            raise ValueError(f"status must be one of {', '.join(_STATUSES)}, got {status!r}")
        created = time_field(data["created_at"], "created_at")
        if created is None:
            raise TypeError("created_at must be a number of seconds since the epoch, got null")
        result = data.get("result")
        if result is not None:
            object_field(result, "result")
        return cls(approval_id, operation, text_field(data["path"], "path"), arguments,
                   optional_text(data["scope"], "scope"), status, created,
                   text_field(data.get("reason", ""), "reason"), result, etag,
                   optional_text(data.get("actor"), "actor"),
                   optional_text(data.get("base_etag"), "base_etag"),
                   time_field(data.get("claimed_at"), "claimed_at"),
                   optional_text(data.get("requested_by"), "requested_by"))


def approval_of(read: FileRead) -> Approval:
    """The approval an approval file holds (its name must be its id)."""
    approval = Approval.from_value(json.loads(read.content), read.etag)
    name = read.path.rsplit("/", 1)[-1].removesuffix(".json")
    if name != approval.id:
        raise ValueError(f"id is {approval.id!r} but the file is named {name!r}.json")
    return approval


def _at(path: str) -> tuple[tuple[str, ...], str]:
    directory, _, name = path.rpartition("/")
    return (directory or "/",), name


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
        self.store.write(self._path(approval.id), self._text(approval), etag=ABSENT)
        return Interrupt(approval.id, operation, path, dict(arguments), scope)

    def _text(self, approval: Approval) -> str:
        """The stored text of ``approval``, checked to read back (nothing malformed is
        written)."""
        text = json.dumps(approval.to_value())
        namespace, key = _at(self._path(approval.id))
        check_record(lambda t: Approval.from_value(json.loads(t)), text, family="approvals",
                     namespace=namespace, key=key)
        return text

    def get(self, approval_id: str) -> Approval:
        """The approval with ``approval_id``."""
        path = self._path(approval_id)
        try:
            read = self.store.read(path)
        except NotFoundError:
            raise NotFoundError(f"no approval {approval_id!r}", hint=Hint(
                Fix.LIST_APPROVALS, "list them with Approvals.pending()")) from None
        namespace, key = _at(path)
        return parse_or_raise(approval_of, read, family="approvals", namespace=namespace,
                              key=key, what=f"approval {approval_id!r}")

    def pending(self) -> list[Approval]:
        """Approvals waiting for a human, oldest first."""
        return self.list_approvals("pending")

    def list_approvals(self, status: str | None = "pending") -> list[Approval]:
        """Approvals with ``status`` (``None``: every one), oldest first."""
        reads = []
        for info in self.store.glob("*.json", self.root):
            try:
                reads.append(self.store.read(info.path))
            except NotFoundError:
                continue  # deleted meanwhile
        # one that does not parse is left out (and reported), never fatal to the others
        parsed = parse_each(reads, approval_of, family="approvals", where=lambda r: _at(r.path))
        found = [a for a in parsed if status is None or a.status == status]
        return sorted(found, key=lambda a: (a.created_at, a.id))

    def run(self, request: ListApprovalsRequest | ApproveRequest | RejectRequest
            | RecoverRequest, approval_id: str | None = None, *, actor: str = "human",
            approver: str | None = None) -> Any:
        """Run an approvals request (what the CLI and the HTTP routes do): a list of
        :class:`Approval` for :class:`ListApprovalsRequest` and :class:`RecoverRequest`,
        the resolved :class:`Approval` for the others (``approval_id`` names it, or the
        request does)."""
        if isinstance(request, ApproveByIdRequest | RejectByIdRequest):
            approval_id = request.approval_id
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
            info = self.store.write(self._path(approval.id), self._text(claimed),
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
        args = self._edited(approval, arguments)
        self._check_etag(approval, args.get("etag"))
        base = None
        if approval.operation in _CHANGES:
            current = self.files.stat(approval.path)
            base = current.etag if current is not None else ABSENT
        return self._store_claim(approval, replace(
            approval, arguments=args, status="running", actor=actor, base_etag=base,
            claimed_at=self.clock()))

    def _edited(self, approval: Approval, edits: Mapping[str, Any] | None) -> dict[str, Any]:
        """The parked arguments with a human's ``edits`` merged over them, checked against
        what the operation takes (see the module docstring)."""
        edits = dict(edits or {})
        if "path" in edits:
            if edits["path"] != approval.path:
                raise ApprovalEditError(
                    f"edited_arguments.path: an approval edit cannot change the path (this "
                    f"{approval.operation} was parked for {approval.path!r}, the edit names "
                    f"{edits['path']!r}); reject it and let the agent ask again for the "
                    "other path")
            del edits["path"]
        takes = list(ARGUMENTS[approval.operation].model_fields) \
            if approval.operation in ARGUMENTS else []
        unknown = sorted(set(edits) - set(takes))
        if unknown:
            raise ApprovalEditError(
                f"edited_arguments has {', '.join(unknown)}, which a {approval.operation} does "
                f"not take; it takes {', '.join(takes) or 'nothing'} (the path cannot be "
                "edited)")
        merged = {**approval.arguments, **edits}
        try:
            return check_arguments(approval.operation, merged, "edited_arguments")
        except ValueError as exc:
            raise ApprovalEditError(f"{exc}; fix the edited value") from None

    def _check_etag(self, approval: Approval, etag: Any) -> None:
        """Refuse an ``etag`` that is not one, or that the file never had (only a history
        tells: without one, an etag other than the current one fails at execution)."""
        if approval.operation not in _CHANGES or etag is None or etag == ABSENT:
            return
        fix = ("approve with edited_arguments {\"etag\": null} to run it on the file as it "
               "is now, or reject it")
        if not isinstance(etag, str) or not _ETAG.fullmatch(etag):
            raise ApprovalEditError(
                f"etag {etag!r} of this {approval.operation} of {approval.path!r} is malformed: "
                f"an etag is the 20 hexadecimal digits a read returned, or {ABSENT!r}; {fix}")
        current = self.files.stat(approval.path)
        if (current is not None and current.etag == etag) or not self.files.keeps_history:
            return
        had = {etag_of(text) for event in self.files.history(approval.path)
               for text in (event.before, event.after) if text is not None}
        if etag not in had:
            now = current.etag if current is not None else "none: the file does not exist"
            raise ApprovalEditError(
                f"etag {etag!r} of this {approval.operation} of {approval.path!r} is unknown: "
                f"the file never had it (its current etag is {now}); {fix}")

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
            info = self.store.write(self._path(outcome.id), self._text(outcome),
                                    etag=outcome.etag or None)
        except FileConflictError:
            stored = self.get(outcome.id)
            if stored.status != "running":
                return stored
            info = self.store.write(self._path(outcome.id), self._text(outcome),
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


ApprovalId = Annotated[str, Field(min_length=5, max_length=64, pattern=r"^apr_[A-Za-z0-9]+$",
                                  description="an approval id (apr_...)")]


class ApproveByIdRequest(ApproveRequest):
    """Approve parked operation ``approval_id`` (``POST /v1/approvals/{approval_id}/approve``:
    the id in the path, the body an :class:`ApproveRequest`)."""

    approval_id: ApprovalId


class RejectByIdRequest(RejectRequest):
    """Reject parked operation ``approval_id`` (``POST /v1/approvals/{approval_id}/reject``:
    the id in the path, the body a :class:`RejectRequest`)."""

    approval_id: ApprovalId
