"""``remem approvals``: list, show, approve and reject the file operations a permission rule
parked for a human (``ask``, :mod:`remem.files.permissions`).

``ls``, ``approve``, ``reject`` and ``recover`` are built from their rows of the approvals
table (:data:`~remem.files.operation_table.APPROVAL_OPERATIONS`) by :mod:`remem.cli.table`;
``show`` reads one approval (no row: ``/v1/approvals`` lists). They work on the approvals of
file tree ``--tree`` (default ``default``: the tree of ``remem files``, ``remem ui`` and
``/v1/files``), of the database's own data or, with ``--tenant T``, of what ``remem serve``
keeps for tenant T (what ``/v1/approvals`` shows); ``--namespace`` and ``--files-namespace``
name other store namespaces instead. Output is JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import click

from remem.cli.common import NamespaceType, db_param
from remem.cli.table import CommandSpec, Family, add_table_commands
from remem.files import StoreFileBackend
from remem.files.approvals import ApproveByIdRequest, RejectByIdRequest
from remem.files.operation_table import APPROVAL_OPERATIONS
from remem.files.permissions import (
    Approval,
    Approvals,
    ListApprovalsRequest,
    RecoverRequest,
)
from remem.operations import Operation
from remem.requests import Request
from remem.store import Namespace, open_store

__all__ = ["approvals_group"]


def _where() -> list[click.Parameter]:
    return [
        db_param("The store (SQLite path or postgresql:// DSN)."),
        click.Option(["--namespace", "-n"], type=NamespaceType(), default=None,
                     help="The store namespace holding the approvals, dot-separated "
                          "(without --tenant; default: approvals.TREE)."),
        click.Option(["--files-namespace"], type=NamespaceType(), default=None,
                     help="The namespace of the files an approved operation changes "
                          "(without --tenant; default: files.TREE, those of remem files)."),
        click.Option(["--tenant"], metavar="NAME", default=None,
                     help="Work on the approvals `remem serve` keeps for this tenant."),
        click.Option(["--tree"], default="default", show_default=True,
                     help="Which file tree (remem files --tree, /v1/approvals?tree=)."),
    ]


def _id() -> click.Argument:
    return click.Argument(["approval_id"], metavar="APPROVAL_ID")


@contextmanager
def _approvals(db: str, namespace: Namespace | None, files_namespace: Namespace | None,
               tenant: str | None, tree: str) -> Iterator[Approvals]:
    store = open_store(db)
    try:
        if tenant is None:
            yield Approvals(StoreFileBackend(store, namespace or ("approvals", tree)),
                            StoreFileBackend(store, files_namespace or ("files", tree)))
            return
        from remem.cli.memory import _tenant_prefix
        from remem.server.routes_approvals import approvals_for
        from remem.store.scoped import ScopedStore

        yield approvals_for(ScopedStore(store, _tenant_prefix(tenant)), tree)
    finally:
        store.close()


def _emit(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


@click.group(name="approvals")
def approvals_group() -> None:
    """File operations waiting for a human: ls, show, approve, reject."""


def _run(row: Operation, request: Any, where: Mapping[str, Any]) -> Any:
    with _approvals(**where) as approvals:
        return approvals.run(request, actor="cli")


def _show_one(request: Any, approval: Approval) -> None:
    _emit(approval.to_value())


def _show_many(request: Any, found: list[Approval]) -> None:
    _emit([a.to_value() for a in found])


_ID = {"approval_id": "APPROVAL_ID"}

_COMMANDS: Mapping[type[Request], CommandSpec] = {
    ListApprovalsRequest: CommandSpec(
        "List approvals (pending ones unless --status), oldest first.", _show_many),
    ApproveByIdRequest: CommandSpec(
        "Approve APPROVAL_ID: its operation runs once (with --edited-arguments merged over "
        "the parked ones); prints the approval as it ends (done, or failed with the reason).",
        _show_one, arguments=_ID),
    RejectByIdRequest: CommandSpec(
        "Reject APPROVAL_ID: its operation never runs.", _show_one, arguments=_ID),
    RecoverRequest: CommandSpec(
        "Finish the approvals a crashed resolver left running for --stale-after seconds: "
        "each ends done (its change was made, once) or failed (it was not made); prints "
        "them.", _show_many),
}
add_table_commands(approvals_group, APPROVAL_OPERATIONS, _COMMANDS, Family(_where, _run))


@approvals_group.command("show", params=[_id(), *_where()])
def show_command(approval_id: str, **where: Any) -> None:
    """Show APPROVAL_ID: the parked operation, its arguments and status."""
    with _approvals(**where) as approvals:
        _emit(approvals.get(approval_id).to_value())
