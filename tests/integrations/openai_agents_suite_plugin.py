"""A pytest plugin loaded (``-p openai_agents_suite_plugin``) into the OpenAI Agents SDK's own
test suite, which tests/integrations/openai_agents_suite.py runs in a subprocess from its
sdist: it keeps the tests that build a ``SQLiteSession`` and, with
``REMEM_AGENTS_VARIANT=remem``, rebinds that name in each test module (and in ``agents`` and
``agents.memory``, for imports inside a test) to :class:`RememSQLiteSession`, a
:class:`~remem.integrations.openai_agents.RememSession` with ``SQLiteSession``'s constructor.
``REMEM_AGENTS_VARIANT=reference`` runs the same tests unchanged. Nothing here is imported by
remem's own test run.
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import Any

import pytest

from remem.integrations.openai_agents import RememSession
from remem.testing import block_remote_requests
from remem.threads import ThreadStore

block_remote_requests()  # remem inside their suite reaches no provider either

VARIANT = os.environ.get("REMEM_AGENTS_VARIANT", "reference")
if VARIANT not in ("remem", "reference"):
    raise pytest.UsageError(f"REMEM_AGENTS_VARIANT must be remem or reference, got {VARIANT!r}")
NAME = "SQLiteSession"


class RememSQLiteSession(RememSession):
    """``SQLiteSession(session_id, db_path=":memory:", ..., session_settings=None)``: a
    RememSession over a thread store at ``db_path`` (a private one for ``":memory:"``, as
    each ``SQLiteSession(":memory:")`` has its own database)."""

    def __init__(self, session_id: str, db_path: str | Path = ":memory:",
                 sessions_table: str = "agent_sessions", messages_table: str = "agent_messages",
                 session_settings: Any = None) -> None:
        super().__init__(session_id, ThreadStore(str(db_path)),
                         session_settings=session_settings, owns_threads=True)


def _builds_a_session(item: pytest.Item) -> bool:
    function = getattr(item, "obj", None)
    try:
        return function is not None and NAME in inspect.getsource(function)
    except (OSError, TypeError):
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    kept = [item for item in items if _builds_a_session(item)]
    dropped = [item for item in items if not _builds_a_session(item)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept
    if VARIANT != "remem":
        return
    import agents
    import agents.memory

    for module in {item.module for item in kept if isinstance(item, pytest.Function)}:
        if getattr(module, NAME, None) is not None:
            setattr(module, NAME, RememSQLiteSession)
    agents.SQLiteSession = RememSQLiteSession  # type: ignore[attr-defined,misc]
    agents.memory.SQLiteSession = RememSQLiteSession  # type: ignore[attr-defined,misc]
