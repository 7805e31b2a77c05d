"""``remem approvals``: list, show, approve and reject the file operations a permission rule
parked for a human (``ask``, :mod:`remem.files.permissions`).

``ls``, ``approve`` and ``reject`` are built from their request values
(:class:`~remem.files.permissions.ListApprovalsRequest`, :class:`ApproveRequest`,
:class:`RejectRequest`), the bodies of ``/v1/approvals``. They work on the approvals of
file tree ``--tree`` (default ``default``: the tree of ``remem files``, ``remem ui`` and
``/v1/files``), of the database's own data or, with ``--tenant T``, of what ``remem serve``
keeps for tenant T (what ``/v1/approvals`` shows); ``--namespace`` and ``--files-namespace``
name other store namespaces instead. Output is JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from remem.cli.common import NamespaceType, db_param
from remem.cli.options import request_command
from remem.files import StoreFileBackend
from remem.files.permissions import (
    Approvals,
    ApproveRequest,
    ListApprovalsRequest,
    RecoverRequest,
    RejectRequest,
)
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


@request_command(ListApprovalsRequest, name="ls", params=_where())
def ls_command(request: ListApprovalsRequest, **where: Any) -> None:
    """List approvals (pending ones unless --status), oldest first."""
    with _approvals(**where) as approvals:
        _emit([a.to_value() for a in approvals.run(request)])


@click.command("show", params=[_id(), *_where()])
def show_command(approval_id: str, **where: Any) -> None:
    """Show APPROVAL_ID: the parked operation, its arguments and status."""
    with _approvals(**where) as approvals:
        _emit(approvals.get(approval_id).to_value())


@request_command(ApproveRequest, name="approve", params=[_id(), *_where()])
def approve_command(request: ApproveRequest, approval_id: str, **where: Any) -> None:
    """Approve APPROVAL_ID: its operation runs once (with --edited-arguments merged over
    the parked ones); prints the approval as it ends (done, or failed with the reason)."""
    with _approvals(**where) as approvals:
        _emit(approvals.run(request, approval_id, actor="cli").to_value())


@request_command(RejectRequest, name="reject", params=[_id(), *_where()])
def reject_command(request: RejectRequest, approval_id: str, **where: Any) -> None:
    """Reject APPROVAL_ID: its operation never runs."""
    with _approvals(**where) as approvals:
        _emit(approvals.run(request, approval_id).to_value())


@request_command(RecoverRequest, name="recover", params=_where())
def recover_command(request: RecoverRequest, **where: Any) -> None:
    """Finish the approvals a crashed resolver left running for --stale-after seconds: each
    ends done (its change was made, once) or failed (it was not made); prints them."""
    with _approvals(**where) as approvals:
        _emit([a.to_value() for a in approvals.run(request)])


for _command in (ls_command, show_command, approve_command, reject_command,
                 recover_command):
    approvals_group.add_command(_command)
