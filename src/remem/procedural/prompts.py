"""Versioned prompts kept in any remem store: every version, who wrote it, why, from what.

A :class:`PromptRegistry` keeps named prompts under a namespace of a
:class:`~remem.store.BaseStore` (SQLite, PostgreSQL or in memory), through the store's public
operations only. Each write makes a new immutable :class:`PromptVersion` (text, declared
template variables, author, reason, source trajectories, time); :meth:`~PromptRegistry.rollback`
is a write too (a new version with an old text), so history never loses anything.

Layout (``prefix`` defaults to ``("prompts",)``)::

    (*prefix, "head")              key = name       {"name", "record": <latest version>, "write_id"}
    (*prefix, "versions", name)    key = 00000003   <version 3>

A write is optimistic: the head is replaced only if it is still the one read
(``PutOp.if_updated_at``), and a read-back in the same batch tells whether this writer won;
the loser reads again and retries (or, with ``expected_version``, raises
:class:`~remem.errors.ConflictError`). The new version's own item is written only after the head
says it won, so a loser never overwrites a version; the latest version always lives in the
head, and the next write copies it to its own item (a crash between the two batches loses
nothing). Known limit: two processes creating the *same new* name at the same instant both
see their own write; the later one wins.

Every method is written once as a flow (:mod:`remem.memory.flow`) and driven by a blocking
or an async shell.
"""

from __future__ import annotations

import builtins
import difflib
import re
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from remem.errors import ConflictError, Fix, Hint, InvalidInputError, NotFoundError
from remem.memory.flow import Flow, StoreBatch, run_async, run_sync
from remem.procedural.templates import check_variables, render, variables
from remem.store.bad_records import (
    check_record,
    int_field,
    kind_of,
    optional_text,
    parse_items,
    parse_or_raise,
    text_field,
    text_list,
    time_field,
)
from remem.store.base import BaseStore
from remem.store.reserved import PROMPTS
from remem.store.types import GetOp, Item, PutOp, SearchOp, validate_namespace

if TYPE_CHECKING:
    from remem.llm.base import ChatModel
    from remem.procedural.requests import PromptRequest

__all__ = ["PromptKind", "PromptRegistry", "PromptVersion", "diff_texts", "prompt_head_of",
           "prompt_version_of"]

R = TypeVar("R")

PromptKind = Literal["create", "update", "rollback"]
_KINDS: tuple[PromptKind, ...] = ("create", "update", "rollback")

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")
_WRITE_ATTEMPTS = 5
_PAGE = 500


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidInputError(
            f"prompt name {name!r} is invalid: use 1-128 letters, digits, '_', '.', ':' or '-', "
            "starting with a letter or digit (e.g. 'support.system')")
    return name


_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _check_declared(declared: Sequence[str] | None) -> tuple[str, ...] | None:
    """Declared variable names, sorted, or ``None`` (take them from the text)."""
    if declared is None:
        return None
    if isinstance(declared, str):
        raise InvalidInputError(f"variables must be a list of names, got the string "
                                f"{declared!r}; write variables=[{declared!r}]")
    for position, name in enumerate(declared):
        if not isinstance(name, str) or not _VARIABLE.fullmatch(name):
            raise InvalidInputError(
                f"variables[{position}] = {name!r} is not a template variable name: use "
                "letters, digits and '_', not starting with a digit (written {name} in the text)")
    return tuple(sorted(set(declared)))


def _check_label(value: Any, what: str, *, allow_empty: bool) -> str:
    if not isinstance(value, str) or (not allow_empty and not value.strip()):
        raise InvalidInputError(f"{what} must be {'' if allow_empty else 'non-empty '}text, "
                                f"got {value!r}")
    return value


def _check_text(text: Any, what: str = "text") -> str:
    if not isinstance(text, str) or not text.strip():
        raise InvalidInputError(f"{what} must be non-empty text, got {text!r}")
    return text


@dataclass(frozen=True, slots=True)
class PromptVersion:
    """One version of a named prompt. ``version`` counts from 1; ``rolled_back_to`` names the
    version a rollback restored; ``trajectories`` are references to the sources of an
    optimized version (:meth:`remem.procedural.Trajectory.reference`); ``change_id`` is the
    caller's key for the write (a background job's id), so a re-run can find it."""

    name: str
    version: int
    text: str
    variables: tuple[str, ...]
    author: str
    reason: str
    created_at: float
    kind: PromptKind = "update"
    trajectories: tuple[Mapping[str, Any], ...] = ()
    rolled_back_to: int | None = None
    change_id: str | None = None

    def format(self, **values: object) -> str:
        """The text with its variables filled in (``{{``/``}}`` become single braces)."""
        return render(self.text, values)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (the stored form)."""
        return {"name": self.name, "version": self.version, "text": self.text,
                "variables": list(self.variables), "author": self.author,
                "reason": self.reason, "created_at": self.created_at, "kind": self.kind,
                "trajectories": [dict(t) for t in self.trajectories],
                "rolled_back_to": self.rolled_back_to, "change_id": self.change_id}

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> PromptVersion:
        """Read a dict written by :meth:`to_dict`; another shape raises ``ValueError`` or
        ``TypeError`` naming the field (what readers skip and report:
        :mod:`remem.store.bad_records`)."""
        if not isinstance(data, Mapping):
            raise TypeError(f"a prompt version must be a JSON object, got {kind_of(data)}")
        kind = data.get("kind", "update")
        if kind not in _KINDS:
            raise ValueError(f"kind must be one of {', '.join(_KINDS)}, got {kind_of(kind)}")
        trajectories = data.get("trajectories") or []
        if not isinstance(trajectories, list) or not all(
                isinstance(t, dict) for t in trajectories):
            raise TypeError(f"trajectories must be a list of objects, got "
                            f"{kind_of(trajectories)}")
        rolled_back_to = data.get("rolled_back_to")
        return PromptVersion(
            name=_check_name(text_field(data["name"], "name")),
            version=int_field(data["version"], "version", minimum=1),
            text=text_field(data["text"], "text"),
            variables=text_list(data.get("variables"), "variables"),
            author=text_field(data.get("author", ""), "author"),
            reason=text_field(data.get("reason", ""), "reason"),
            created_at=time_field(data.get("created_at"), "created_at") or 0.0, kind=kind,
            trajectories=tuple(trajectories),
            rolled_back_to=None if rolled_back_to is None else int_field(
                rolled_back_to, "rolled_back_to", minimum=1),
            change_id=optional_text(data.get("change_id"), "change_id"))


def _head_of(name: str, value: Mapping[str, Any]) -> PromptVersion:
    """The latest version a head value holds (``{"name", "record", "write_id"}``); its
    record must be a version of prompt ``name`` (the head's key)."""
    record = PromptVersion.from_dict(value["record"])
    if record.name != name:
        raise ValueError(f"record.name is {record.name!r} but the head is kept for {name!r}")
    optional_text(value.get("write_id"), "write_id")
    return record


def prompt_head_of(item: Item) -> PromptVersion:
    """The latest version a head item holds (``remem doctor`` reads heads with it)."""
    return _head_of(item.key, item.value)


def prompt_version_of(item: Item) -> PromptVersion:
    """The version a version item holds."""
    return PromptVersion.from_dict(item.value)


def diff_texts(old: str, new: str, *, old_label: str = "before", new_label: str = "after",
               context: int = 3) -> str:
    """A unified diff (:mod:`difflib`) of two prompt texts; ``""`` when they are equal.

    Prompts rarely end with a newline; when neither (or both) does, the last lines are compared
    as lines, so the diff carries no "No newline at end of file" markers."""
    if old.endswith("\n") == new.endswith("\n") and not old.endswith("\n"):
        old, new = old + "\n", new + "\n"
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                 fromfile=old_label, tofile=new_label, n=context)
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


@dataclass(frozen=True, slots=True)
class _Change:
    """What a write asks for, applied to the current version (``None``: no prompt yet)."""

    build: Callable[[PromptVersion | None], PromptVersion]
    expected_version: int | None = None
    #: create only: an existing prompt is an error
    must_be_new: bool = False
    fields: Mapping[str, Any] = field(default_factory=dict)


class PromptRegistry:
    """Named, versioned prompts in ``store`` under ``prefix``.

    >>> from remem.store import InMemoryStore
    >>> prompts = PromptRegistry(InMemoryStore())
    >>> prompts.create("greeter", "Greet {user} warmly.").version
    1
    >>> prompts.update("greeter", "Greet {user} warmly, by name.", reason="feedback").version
    2
    >>> prompts.get("greeter").format(user="Ada")
    'Greet Ada warmly, by name.'
    """

    def __init__(self, store: BaseStore, *, prefix: Sequence[str] = (PROMPTS,)) -> None:
        if not isinstance(store, BaseStore):
            raise InvalidInputError(
                f"store must be a remem BaseStore, got {type(store).__name__}; open one with "
                "remem.store.open_store(...)")
        self.store = store
        self.prefix = validate_namespace(tuple(prefix), what="prefix")
        self._heads = (*self.prefix, "head")

    def _versions_ns(self, name: str) -> tuple[str, ...]:
        return (*self.prefix, "versions", name)

    # -- flows ----------------------------------------------------------------------------------

    def _head(self, item: Any) -> PromptVersion | None:
        """The latest version a head holds; one that does not parse raises
        :class:`~remem.errors.BadRecordError` (it is never written over)."""
        if item is None:
            return None
        assert isinstance(item, Item)
        return parse_or_raise(prompt_head_of, item, family="prompts", namespace=item.namespace,
                              key=item.key, what=f"prompt {item.key!r}")

    def _write_flow(self, name: str, change: _Change) -> Flow[PromptVersion]:
        for _ in range(_WRITE_ATTEMPTS):
            [item] = yield StoreBatch([GetOp(self._heads, name)])
            current = self._head(item)
            if change.must_be_new and current is not None:
                raise ConflictError(
                    f"prompt {name!r} already exists (version {current.version}); use "
                    "update() to change it")
            if change.expected_version is not None:
                have = current.version if current else 0
                if have != change.expected_version:
                    raise ConflictError(
                        f"prompt {name!r} is at version {have}, not {change.expected_version} as "
                        "expected: it changed since it was read; read it again (or optimize "
                        "again) and retry")
            new = change.build(current)
            write_id = uuid.uuid4().hex
            head = {"name": name, "record": new.to_dict(), "write_id": write_id}
            # what is written must read back (remem.store.bad_records)
            check_record(lambda v: _head_of(name, v), head, family="prompts",
                         namespace=self._heads, key=name)
            ops: list[Any] = [PutOp(
                self._heads, name, head, index=False,
                if_updated_at=item.updated_at.timestamp() if item is not None else None)]
            if current is not None:  # the previous head's version gets its own item (repair)
                ops.append(PutOp(self._versions_ns(name), f"{current.version:08d}",
                                 current.to_dict(), index=False))
            ops.append(GetOp(self._heads, name))
            results = yield StoreBatch(ops)
            after = results[-1]
            if isinstance(after, Item) and after.value.get("write_id") == write_id:
                yield StoreBatch([PutOp(self._versions_ns(name), f"{new.version:08d}",
                                        new.to_dict(), index=False)])
                return new
            if change.expected_version is not None:
                raise ConflictError(
                    f"prompt {name!r} was changed by another writer meanwhile; read it again "
                    "and retry")
        raise ConflictError(f"prompt {name!r} kept changing under {_WRITE_ATTEMPTS} write "
                            "attempts; retry later")

    def _get_flow(self, name: str, version: int | None) -> Flow[PromptVersion]:
        _check_name(name)
        if version is None:
            [item] = yield StoreBatch([GetOp(self._heads, name)])
            current = self._head(item)
            if current is None:
                raise self._missing(name)
            return current
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise InvalidInputError(f"version must be an int >= 1, got {version!r}")
        history = yield from self._history_flow(name)
        for entry in history:
            if entry.version == version:
                return entry
        raise NotFoundError(
            f"prompt {name!r} has no version {version}; it has versions 1-{history[-1].version}",
            hint=Hint(Fix.PROMPT_HISTORY, f"see history({name!r})", name))

    def _missing(self, name: str) -> NotFoundError:
        return NotFoundError(f"no prompt named {name!r} under {'.'.join(self.prefix)}",
                             hint=Hint(Fix.CREATE_PROMPT, "create it with create(name, text)",
                                       name))

    def _history_flow(self, name: str) -> Flow[list[PromptVersion]]:
        _check_name(name)
        [head] = yield StoreBatch([GetOp(self._heads, name)])
        current = self._head(head)
        if current is None:
            raise self._missing(name)
        found: dict[int, PromptVersion] = {}
        offset = 0
        while True:
            [page] = yield StoreBatch([SearchOp(self._versions_ns(name), limit=_PAGE,
                                                offset=offset)])
            # a version that does not parse is left out (and reported)
            for entry in parse_items(page, prompt_version_of, family="prompts"):
                if entry.version <= current.version:  # a crashed loser's future version: skip
                    found[entry.version] = entry
            if len(page) < _PAGE:
                break
            offset += _PAGE
        found[current.version] = current  # the head is the truth for the latest version
        return [found[v] for v in sorted(found)]

    def _list_flow(self) -> Flow[list[PromptVersion]]:
        out: list[PromptVersion] = []
        offset = 0
        while True:
            [page] = yield StoreBatch([SearchOp(self._heads, limit=_PAGE, offset=offset)])
            # a head that does not parse is left out (and reported), never fatal to the list
            out.extend(parse_items((item for item in page if item.namespace == self._heads),
                                   prompt_head_of, family="prompts"))
            if len(page) < _PAGE:
                break
            offset += _PAGE
        return sorted(out, key=lambda v: v.name)

    # -- changes --------------------------------------------------------------------------------

    def _create_change(self, name: str, text: str, declared: Sequence[str] | None, author: str,
                       reason: str) -> _Change:
        _check_name(name)
        _check_text(text)
        _check_label(author, "author", allow_empty=False)
        _check_label(reason, "reason", allow_empty=True)
        checked = _check_declared(declared)
        names = variables(text) if checked is None else checked
        check_variables(text, names, what=f"prompt {name!r}")

        def build(current: PromptVersion | None) -> PromptVersion:
            return PromptVersion(name, 1, text, names, author, reason, time.time(), "create")

        return _Change(build, must_be_new=True)

    def _update_change(self, name: str, text: str, *, author: str, reason: str,
                       trajectories: Sequence[Mapping[str, Any]],
                       expected_version: int | None,
                       declared: Sequence[str] | None,
                       change_id: str | None = None) -> _Change:
        _check_name(name)
        _check_text(text)
        _check_label(author, "author", allow_empty=False)
        _check_label(reason, "reason", allow_empty=True)
        checked = _check_declared(declared)
        if expected_version is not None and (isinstance(expected_version, bool) or not
                                             isinstance(expected_version, int)
                                             or expected_version < 1):
            raise InvalidInputError(
                f"expected_version must be an int >= 1 or None, got {expected_version!r}")
        if change_id is not None:
            _check_label(change_id, "change_id", allow_empty=False)
        refs = tuple(dict(t) for t in trajectories)

        def build(current: PromptVersion | None) -> PromptVersion:
            if current is None:
                raise self._missing(name)
            names = current.variables if checked is None else checked
            check_variables(text, names, what=f"update of prompt {name!r}")
            return PromptVersion(name, current.version + 1, text, names, author, reason,
                                 time.time(), "update", refs, change_id=change_id)

        return _Change(build, expected_version=expected_version)

    def _rollback_flow(self, name: str, version: int, author: str,
                       reason: str | None) -> Flow[PromptVersion]:
        target = yield from self._get_flow(name, version)

        def build(current: PromptVersion | None) -> PromptVersion:
            if current is None:
                raise self._missing(name)
            return PromptVersion(name, current.version + 1, target.text, target.variables,
                                 author, reason or f"rollback to version {version}",
                                 time.time(), "rollback", rolled_back_to=version)

        return (yield from self._write_flow(name, _Change(build)))

    def _diff_flow(self, name: str, old: int | None, new: int | None) -> Flow[str]:
        history = yield from self._history_flow(name)
        by_version = {v.version: v for v in history}
        latest = history[-1].version
        new_v = latest if new is None else new
        old_v = (new_v - 1 if new_v > 1 else new_v) if old is None else old
        for label, value in (("old", old_v), ("new", new_v)):
            if value not in by_version:
                raise NotFoundError(f"prompt {name!r} has no version {value} ({label}); it has "
                                    f"versions 1-{latest}")
        return diff_texts(by_version[old_v].text, by_version[new_v].text,
                          old_label=f"{name}@v{old_v}", new_label=f"{name}@v{new_v}")

    # -- flows for composition ----------------------------------------------------------------

    def get_flow(self, name: str, version: int | None = None) -> Flow[PromptVersion]:
        """:meth:`get` as a flow, to run inside another flow (:mod:`remem.memory.flow`)."""
        return self._get_flow(name, version)

    def update_flow(self, name: str, text: str, *, author: str = "user", reason: str = "",
                    trajectories: Sequence[Mapping[str, Any]] = (),
                    expected_version: int | None = None,
                    variables: Sequence[str] | None = None,
                    change_id: str | None = None) -> Flow[PromptVersion]:
        """:meth:`update` as a flow, to run inside another flow; ``change_id`` is recorded on
        the new version."""
        change = self._update_change(name, text, author=author, reason=reason,
                                     trajectories=trajectories,
                                     expected_version=expected_version, declared=variables,
                                     change_id=change_id)
        return self._write_flow(name, change)

    # -- blocking API ---------------------------------------------------------------------------

    def create(self, name: str, text: str, *, variables: Sequence[str] | None = None,
               author: str = "user", reason: str = "created") -> PromptVersion:
        """Create prompt ``name`` (version 1). ``variables`` declares its template variables
        (default: those the text uses); the text must use exactly those. Raises
        :class:`~remem.errors.ConflictError` if the name exists."""
        change = self._create_change(name, text, variables, author, reason)
        return run_sync(self._write_flow(name, change), self.store)

    def update(self, name: str, text: str, *, author: str = "user", reason: str = "",
               trajectories: Sequence[Mapping[str, Any]] = (),
               expected_version: int | None = None,
               variables: Sequence[str] | None = None) -> PromptVersion:
        """Write a new version of ``name``. The text must use exactly the declared variables
        (:class:`~remem.errors.TemplateVariableError` otherwise); pass ``variables`` to
        declare a different set on purpose. ``expected_version``: fail with
        :class:`~remem.errors.ConflictError` unless the prompt is still at that version."""
        change = self._update_change(name, text, author=author, reason=reason,
                                     trajectories=trajectories,
                                     expected_version=expected_version, declared=variables)
        return run_sync(self._write_flow(name, change), self.store)

    def get(self, name: str, version: int | None = None) -> PromptVersion:
        """The latest version of ``name``, or version ``version``; raises
        :class:`~remem.errors.NotFoundError` naming what exists."""
        return run_sync(self._get_flow(name, version), self.store)

    def history_flow(self, name: str) -> Flow[builtins.list[PromptVersion]]:
        """:meth:`history` as a flow, to run inside another flow."""
        return self._history_flow(name)

    def history(self, name: str) -> list[PromptVersion]:
        """Every version of ``name``, oldest first."""
        return run_sync(self._history_flow(name), self.store)

    def diff(self, name: str, old: int | None = None, new: int | None = None) -> str:
        """Unified diff from version ``old`` (default: the one before ``new``) to ``new``
        (default: the latest)."""
        return run_sync(self._diff_flow(name, old, new), self.store)

    def rollback(self, name: str, version: int, *, author: str = "user",
                 reason: str | None = None) -> PromptVersion:
        """Make version ``version``'s text current again, as a new version."""
        return run_sync(self._rollback_flow(name, version, author, reason), self.store)

    def list(self) -> list[PromptVersion]:
        """The latest version of every prompt, by name."""
        return run_sync(self._list_flow(), self.store)

    def run(self, request: PromptRequest[R], model: ChatModel | None = None) -> R:
        """Run one request of :mod:`remem.procedural.requests` (the value the HTTP routes,
        ``remem.Client.prompts`` and the MCP tools are built from); ``model``: what
        :class:`~remem.procedural.requests.OptimizePromptRequest` optimizes with."""
        return request.run_on(self, model)

    # -- async API ------------------------------------------------------------------------------

    async def arun(self, request: PromptRequest[R], model: ChatModel | None = None) -> R:
        """Async :meth:`run`."""
        return await request.arun_on(self, model)

    async def acreate(self, name: str, text: str, *, variables: Sequence[str] | None = None,
                      author: str = "user", reason: str = "created") -> PromptVersion:
        """Async :meth:`create`."""
        change = self._create_change(name, text, variables, author, reason)
        return await run_async(self._write_flow(name, change), self.store)

    async def aupdate(self, name: str, text: str, *, author: str = "user", reason: str = "",
                      trajectories: Sequence[Mapping[str, Any]] = (),
                      expected_version: int | None = None,
                      variables: Sequence[str] | None = None) -> PromptVersion:
        """Async :meth:`update`."""
        change = self._update_change(name, text, author=author, reason=reason,
                                     trajectories=trajectories,
                                     expected_version=expected_version, declared=variables)
        return await run_async(self._write_flow(name, change), self.store)

    async def aget(self, name: str, version: int | None = None) -> PromptVersion:
        """Async :meth:`get`."""
        return await run_async(self._get_flow(name, version), self.store)

    async def ahistory(self, name: str) -> builtins.list[PromptVersion]:
        """Async :meth:`history`."""
        return await run_async(self._history_flow(name), self.store)

    async def adiff(self, name: str, old: int | None = None, new: int | None = None) -> str:
        """Async :meth:`diff`."""
        return await run_async(self._diff_flow(name, old, new), self.store)

    async def arollback(self, name: str, version: int, *, author: str = "user",
                        reason: str | None = None) -> PromptVersion:
        """Async :meth:`rollback`."""
        return await run_async(self._rollback_flow(name, version, author, reason), self.store)

    async def alist(self) -> builtins.list[PromptVersion]:
        """Async :meth:`list`."""
        return await run_async(self._list_flow(), self.store)
