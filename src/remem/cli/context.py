"""``remem context``: the context a model call would get, within a token budget.

The command is built from :class:`~remem.context.ContextRequest` (:mod:`remem.cli.options`):
its options are the request's fields, minus the token counter (a Python object; the CLI
counts with the offline estimate). It prints the rendered text, or with ``--json`` the same
document ``POST /v1/memories/context`` answers (:class:`~remem.context.wire.ContextOut`):
the text, the messages, the tokens per section and every item left out.
"""

from __future__ import annotations

from typing import Any

import click

from remem.cli.memory import CliSession, _session_params
from remem.cli.options import request_command
from remem.cli.render import emit_json
from remem.context.assemble import ContextRequest, assemble
from remem.context.operation_table import CONTEXT_OPERATIONS
from remem.context.wire import ContextOut
from remem.operations import command_of

__all__ = ["CLI_EXCLUDED", "context_command"]

CLI_EXCLUDED = ("token_counter",)
"""ContextRequest fields the CLI does not offer: a token counter is a Python object."""


def _threads(session: CliSession, request: ContextRequest) -> Any:
    """The thread store the summary and recent sections read (only with ``--thread``),
    in the tenant's view when ``--tenant`` is given."""
    if request.thread_id is None:
        return None
    from remem.threads import ThreadStore

    threads = ThreadStore(session.db)
    threads.setup()
    click.get_current_context().call_on_close(threads.close)
    if session.tenant is None:
        return threads
    from remem.threads.scoped import ScopedThreads

    return ScopedThreads(threads, session.tenant)


def _body(request: ContextRequest, db: str, embedder: str, tenant: str | None,
          json_output: bool) -> None:
    """Print the context for a model call: the profile, the memories relevant to QUERY, and
    with --thread its running summary and recent messages, packed into --budget-tokens.

    Whole items are kept or left out (lowest priority first); --json adds the tokens per
    section and every item left out.
    """
    session = CliSession(db, embedder, json_output, tenant)
    memory = session.open()
    result = assemble(memory, request, _threads(session, request))
    if json_output:
        emit_json(ContextOut.of(result).model_dump(mode="json"))
        return
    if result.text:
        click.echo(result.text)
    else:
        click.echo("nothing to put in context", err=True)
    if result.dropped:
        click.echo(f"left out {len(result.dropped)} item(s) over the budget of "
                   f"{result.budget} tokens (--json lists them)", err=True)


context_command = request_command(  # named by context's operation row
    ContextRequest, name=command_of(CONTEXT_OPERATIONS, ContextRequest),
    params=_session_params(), exclude=CLI_EXCLUDED)(_body)
