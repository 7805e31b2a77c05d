"""Permissions on file operations, with a human in the loop.

A :class:`Policy` is a list of :class:`Rule` values, each ``allow``, ``deny`` or ``ask`` for
a path glob, a set of operations (``read``, ``write``, ``edit``, ``delete``; listing, glob,
grep and history are reads, undo is a write) and optionally who acts: ``org``, ``user`` and
``agent`` each match that id of the :class:`Caller` (all those a rule names must match; a
caller without that id does not), and ``scope`` matches any of the caller's ids. The first
rule that matches decides; ``default`` decides when none does. So "agent ``writer`` may
write ``/memories/**``, others ask" is two rules, in that order.

:class:`GuardedFiles` runs file operations through a policy. ``deny`` raises
:class:`~remem.errors.PermissionDeniedError`. ``ask`` does nothing yet and returns an
:class:`~remem.files.approvals.Interrupt` naming a pending approval
(:mod:`remem.files.approvals`: a human approves, edits or rejects it; it runs at most once).
Listings, globs and greps leave out what the caller may not read, so a search never shows
a denied file's content. :meth:`GuardedFiles.run` takes the file request values, so the
agent tools, the HTTP routes and the MCP tools share one guarded path.

:func:`load_policy` reads a policy from a JSON file (what ``REMEM_FILE_POLICY`` names for
``remem serve``)::

    {"default": "allow",
     "rules": [{"effect": "deny", "paths": "/secrets/**"},
               {"effect": "allow", "paths": "/memories/**", "operations": ["write", "edit"],
                "agent": "writer"},
               {"effect": "ask", "paths": "/memories/**", "operations": ["write", "edit"]}]}

A bad policy is an :class:`~remem.errors.InvalidInputError` (a
:class:`~remem.errors.ConfigError` from :func:`load_policy`) naming the rule by its
position, the field, the rule it breaks and the fix.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

from remem.errors import ConfigError, InvalidInputError, PermissionDeniedError
from remem.files.approvals import (
    Approval,
    Approvals,
    ApprovalStatus,
    ApproveRequest,
    Interrupt,
    ListApprovalsRequest,
    RecoverRequest,
    RejectRequest,
)
from remem.files.base import FileBackend
from remem.files.core import MAX_GREP_MATCHES, compile_glob, glob_matches
from remem.files.paths import ROOT, normalize_dir, normalize_file
from remem.files.requests import AnyFileRequest
from remem.files.types import FileEvent, FileInfo, GrepMatch

__all__ = [
    "OPERATIONS",
    "POLICY_ENV",
    "Approval",
    "ApprovalStatus",
    "Approvals",
    "ApproveRequest",
    "Caller",
    "Effect",
    "GuardedFiles",
    "Interrupt",
    "ListApprovalsRequest",
    "Operation",
    "Policy",
    "RecoverRequest",
    "RejectRequest",
    "Rule",
    "caller_of",
    "load_policy",
    "policy_from_spec",
    "rules",
]

Effect: TypeAlias = Literal["allow", "deny", "ask"]
Operation: TypeAlias = Literal["read", "write", "edit", "delete"]
OPERATIONS: Final = ("read", "write", "edit", "delete")
#: the environment variable naming a policy file (``remem serve`` and ``remem mcp`` read it)
POLICY_ENV: Final = "REMEM_FILE_POLICY"
_EFFECTS: Final = ("allow", "deny", "ask")


@dataclass(frozen=True, slots=True)
class Caller:
    """Who runs file operations: the organisation (on the server, the API key's tenant), the
    user and the agent, each ``None`` when not known. Rules match on these ids."""

    org: str | None = None
    user: str | None = None
    agent: str | None = None

    def ids(self) -> tuple[str, ...]:
        """The ids known, most general first."""
        return tuple(i for i in (self.org, self.user, self.agent) if i is not None)

    def label(self) -> str | None:
        """How approvals record the caller: ``"org acme, user alice, agent writer"``."""
        parts = [f"{kind} {value}" for kind, value in (
            ("org", self.org), ("user", self.user), ("agent", self.agent)) if value is not None]
        return ", ".join(parts) or None


def caller_of(scope: str | Caller | None) -> Caller:
    """``scope`` as a :class:`Caller`: a plain string names the agent (what
    ``GuardedFiles(scope="planner")`` always meant)."""
    if scope is None:
        return Caller()
    return scope if isinstance(scope, Caller) else Caller(agent=scope)


#: the rule fields naming who acts, and an example of each for error messages
_WHO: Final = (("scope", "acme"), ("org", "acme"), ("user", "alice"), ("agent", "writer"))


@dataclass(frozen=True, slots=True)
class Rule:
    """``effect`` for ``operations`` (``None``: all) on paths matching ``paths`` (a glob from
    the root, e.g. ``/memories/**``), for callers whose ``org``, ``user`` and ``agent`` are
    the ones given (``None``: any); ``scope`` matches a caller any of whose ids it is."""

    effect: Effect
    paths: str = "/**"
    operations: frozenset[str] | None = None
    scope: str | None = None
    org: str | None = None
    user: str | None = None
    agent: str | None = None

    def __post_init__(self) -> None:
        if self.effect not in _EFFECTS:
            raise InvalidInputError(f"effect must be allow, deny or ask, got "
                                    f"{self.effect!r}")
        if self.operations is not None:
            ops = frozenset(self.operations)
            bad = sorted(ops - set(OPERATIONS))
            if bad or not ops:
                raise InvalidInputError(f"operations must be some of "
                                        f"{', '.join(OPERATIONS)}, got {sorted(ops)}")
            object.__setattr__(self, "operations", ops)
        for name, example in _WHO:
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise InvalidInputError(f"{name} must be a non-empty id such as {example!r} "
                                        f"(or left out to match anyone), got {value!r}")
        if not isinstance(self.paths, str):
            raise InvalidInputError(f"paths must be one glob such as '/memories/**', got "
                                    f"{self.paths!r}")
        try:
            compile_glob(self.paths)
        except InvalidInputError as exc:
            raise InvalidInputError(f"paths: {exc}; give a glob from the root such as "
                                    "'/memories/**'") from None

    def describe(self) -> str:
        """The rule as a policy file writes it (the fields that are set), for messages."""
        spec: dict[str, Any] = {"effect": self.effect, "paths": self.paths}
        if self.operations is not None:
            spec["operations"] = [o for o in OPERATIONS if o in self.operations]
        spec.update({name: getattr(self, name) for name, _ in _WHO
                     if getattr(self, name) is not None})
        return json.dumps(spec)

    def matches(self, operation: str, path: str, caller: Caller) -> bool:
        """Whether the rule applies to ``caller`` doing ``operation`` on ``path``."""
        return ((self.operations is None or operation in self.operations)
                and (self.scope is None or self.scope in caller.ids())
                and (self.org is None or self.org == caller.org)
                and (self.user is None or self.user == caller.user)
                and (self.agent is None or self.agent == caller.agent)
                and glob_matches(compile_glob(self.paths), path))


@dataclass(frozen=True, slots=True)
class Policy:
    """Rules in order (first match wins) and the effect when none matches."""

    rules: tuple[Rule, ...] = ()
    default: Effect = "allow"

    def decide(self, operation: str, path: str, scope: str | Caller | None = None) -> Effect:
        """The effect for ``operation`` on ``path`` by ``scope`` (a :class:`Caller`, or an
        agent's name)."""
        return self.reason(operation, path, scope)[0]

    def reason(self, operation: str, path: str,
               scope: str | Caller | None = None) -> tuple[Effect, str]:
        """:meth:`decide`'s effect and what decided it (``rule 2 {...}`` or ``the default``),
        for messages."""
        caller = caller_of(scope)
        for position, rule in enumerate(self.rules):
            if rule.matches(operation, path, caller):
                return rule.effect, f"rule {position} {rule.describe()}"
        return self.default, f"the policy's default ({self.default})"


class GuardedFiles:
    """File operations of ``files`` checked against ``policy`` for ``scope`` (a
    :class:`Caller`, or an agent's name); ``ask`` parks the operation in ``approvals``."""

    def __init__(self, files: FileBackend, policy: Policy, approvals: Approvals, *,
                 scope: str | Caller | None = None, actor: str = "agent",
                 requester: str | None = None) -> None:
        self.files = files
        self.policy = policy
        self.approvals = approvals
        self.scope = caller_of(scope)
        #: what parked approvals record as their scope (a plain name stays as it was given)
        self.scope_label = scope if isinstance(scope, str) else self.scope.label()
        self.actor = actor
        #: who asks (e.g. an API key id): recorded with parked operations; it cannot approve
        self.requester = requester

    def _park(self, operation: str, path: str, arguments: dict[str, Any]) -> Interrupt:
        return self.approvals.park(operation, path, arguments, self.scope_label,
                                   requested_by=self.requester)

    def _check(self, operation: str, path: str) -> Effect:
        effect, why = self.policy.reason(operation, path, self.scope)
        if effect == "deny":
            raise PermissionDeniedError(
                f"{operation} on {path!r} is denied by the file permissions ({why}); do not "
                "retry, ask the user to change the rules if it is needed")
        return effect

    def _readable(self, path: str) -> bool:
        return self.policy.decide("read", path, self.scope) == "allow"

    def read(self, path: str, *, offset: int = 0, limit: int | None = None) -> Any:
        """``files.read`` if reads of ``path`` are allowed (``ask`` parks it)."""
        name = normalize_file(path)
        if self._check("read", name) == "ask":
            return self._park("read", name, {"offset": offset, "limit": limit})
        return self.files.read(name, offset=offset, limit=limit)

    def ls(self, path: str = ROOT) -> Any:
        """``files.ls`` if reads are allowed under ``path``, without the files whose read is
        denied."""
        name = normalize_dir(path)
        if self._check("read", name) == "ask":
            return self._park("read", name, {"ls": True})
        return [e for e in self.files.ls(name)
                if e.is_dir or self.policy.decide("read", e.path, self.scope) != "deny"]

    def glob(self, pattern: str, path: str = ROOT) -> list[FileInfo]:
        """``files.glob``, only the files the caller may read without asking."""
        return [i for i in self.files.glob(pattern, path) if self._readable(i.path)]

    def grep(self, text: str, path: str = ROOT, *, glob: str | None = None,
             limit: int = MAX_GREP_MATCHES) -> list[GrepMatch]:
        """``files.grep`` over the files the caller may read without asking (so a search
        never shows the content of a denied or ask-guarded file)."""
        want = limit
        while True:  # denied files may take places: ask for more until enough are kept
            hits = self.files.grep(text, path, glob=glob, limit=want)
            kept = [h for h in hits if self._readable(h.path)]
            if len(kept) >= limit or len(hits) < want:
                return kept[:limit]
            want *= 4

    def history(self, path: str) -> Any:
        """``files.history`` (a read of ``path``)."""
        name = normalize_file(path)
        if self._check("read", name) == "ask":
            return self._park("read", name, {"history": True})
        events: list[FileEvent] = self.files.history(name)
        return events

    def write(self, path: str, content: str, *, etag: str | None = None) -> Any:
        """``files.write``, or an :class:`Interrupt` to approve."""
        name = normalize_file(path)
        if self._check("write", name) == "ask":
            return self._park("write", name, {"content": content, "etag": etag})
        return self.files.write(name, content, etag=etag, actor=self.actor)

    def edit(self, path: str, old: str, new: str, *, replace_all: bool = False,
             etag: str | None = None) -> Any:
        """``files.edit``, or an :class:`Interrupt` to approve."""
        name = normalize_file(path)
        if self._check("edit", name) == "ask":
            return self._park("edit", name, {"old": old, "new": new,
                                             "replace_all": replace_all, "etag": etag})
        return self.files.edit(name, old, new, replace_all=replace_all, etag=etag,
                               actor=self.actor)

    def delete(self, path: str, *, etag: str | None = None) -> Any:
        """``files.delete``, or an :class:`Interrupt` to approve."""
        name = normalize_file(path)
        if self._check("delete", name) == "ask":
            return self._park("delete", name, {"etag": etag})
        self.files.delete(name, etag=etag, actor=self.actor)
        return None

    def undo(self, path: str, *, etag: str | None = None) -> Any:
        """``files.undo`` (a write of ``path``), or an :class:`Interrupt` to approve."""
        name = normalize_file(path)
        if self._check("write", name) == "ask":
            return self._park("undo", name, {"etag": etag})
        return self.files.undo(name, etag=etag, actor=self.actor)

    def run(self, request: AnyFileRequest) -> Any:
        """Run a file request value through the policy: the backend's result, or an
        :class:`Interrupt`."""
        return request.on(self)


_RULE_FIELDS: Final = ("effect", "paths", "operations", "scope", "org", "user", "agent")


def rules(spec: Sequence[Mapping[str, Any]]) -> tuple[Rule, ...]:
    """Rules from plain dicts (``{"effect": "ask", "paths": "/memories/**",
    "operations": ["write"], "agent": "writer"}``), as read from a config file; a bad one is
    an :class:`~remem.errors.InvalidInputError` naming its position, the field and the fix."""
    out = []
    for position, item in enumerate(spec):
        where = f"rule {position}"
        if not isinstance(item, Mapping):
            raise InvalidInputError(f"{where}: must be an object such as "
                                    '{"effect": "deny", "paths": "/secrets/**"}, got '
                                    f"{item!r}")
        unknown = sorted(set(item) - set(_RULE_FIELDS))
        if unknown:
            raise InvalidInputError(f"{where}: unknown field(s) {', '.join(unknown)}; a rule "
                                    f"has {', '.join(_RULE_FIELDS)}")
        if "effect" not in item:
            raise InvalidInputError(f"{where}: effect is missing; give allow, deny or ask")
        ops = item.get("operations")
        if ops is not None and (not isinstance(ops, list)
                                or not all(isinstance(o, str) for o in ops)):
            raise InvalidInputError(f"{where}: operations must be a list such as "
                                    f'["write", "edit"], got {ops!r}')
        try:
            out.append(Rule(item["effect"], item.get("paths", "/**"),
                            frozenset(ops) if ops is not None else None,
                            **{name: item.get(name) for name, _ in _WHO}))
        except InvalidInputError as exc:  # the field's own message, with the rule's position
            raise InvalidInputError(f"{where}: {exc}") from None
    return tuple(out)


def policy_from_spec(spec: Mapping[str, Any]) -> Policy:
    """A :class:`Policy` from ``{"default": ..., "rules": [...]}`` (see :func:`rules`)."""
    unknown = sorted(set(spec) - {"default", "rules"})
    if unknown:
        raise InvalidInputError(f"unknown policy field(s) {', '.join(unknown)}; a policy has "
                                "default and rules")
    default = spec.get("default", "allow")
    if default not in _EFFECTS:
        raise InvalidInputError(f"policy default must be allow, deny or ask, got {default!r}")
    items = spec.get("rules", [])
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise InvalidInputError("policy rules must be a list of objects such as "
                                '{"effect": "deny", "paths": "/secrets/**"}')
    return Policy(rules(items), default)


def load_policy(path: str | os.PathLike[str]) -> Policy:
    """The policy in JSON file ``path``; :class:`~remem.errors.ConfigError` naming the file
    and what is wrong with it."""
    try:
        with open(path, encoding="utf-8") as handle:
            spec = json.load(handle)
    except OSError as exc:
        raise ConfigError(f"cannot read the file policy {os.fspath(path)!r}: "
                          f"{exc.strerror}; check {POLICY_ENV} or --file-policy") from None
    except ValueError as exc:
        raise ConfigError(f"the file policy {os.fspath(path)!r} is not valid JSON: {exc}") \
            from None
    if not isinstance(spec, dict):
        raise ConfigError(f"the file policy {os.fspath(path)!r} must be a JSON object with "
                          "default and rules")
    try:
        return policy_from_spec(spec)
    except InvalidInputError as exc:
        raise ConfigError(f"the file policy {os.fspath(path)!r}: {exc}") from None
