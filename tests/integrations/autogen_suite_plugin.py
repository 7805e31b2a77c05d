"""A pytest plugin loaded (``-p autogen_suite_plugin``) into AutoGen's own tests, which
tests/integrations/test_autogen.py runs in a subprocess from the autogen-core and
autogen-agentchat sdists: in the ``remem`` variant it rebinds, in each test module, the
memory classes their tests build (autogen-core's ``ListMemory``, autogen-agentchat's
``MockMemory``) to :class:`~remem.integrations.autogen.RememMemory` subclasses with the same
constructors, each over a new in-memory remem memory. In the ``reference`` variant their tests
run unchanged. Nothing here is imported by remem's own test run.

autogen-ext 0.7.5's MCP tools import names that mcp 2.x no longer has; autogen-agentchat's
test_assistant_agent.py imports them at the top, so where ``autogen_ext.tools.mcp`` cannot be
imported both variants get a stand-in module with the two names (only tests that use MCP
touch it, and the runner does not select them).
"""

from __future__ import annotations

import os
import sys
from types import ModuleType
from typing import Any

import pytest
from autogen_core import CancellationToken
from autogen_core.memory import MemoryContent, MemoryQueryResult, UpdateContextResult
from autogen_core.model_context import ChatCompletionContext

from remem import FakeEmbedder, Memory
from remem.integrations.autogen import RememMemory
from remem.testing import block_remote_requests

block_remote_requests()  # nothing in their suite reaches a provider either

VARIANT = os.environ.get("REMEM_AUTOGEN_VARIANT", "reference")
if VARIANT not in ("remem", "reference"):
    raise pytest.UsageError(f"REMEM_AUTOGEN_VARIANT must be remem or reference, got {VARIANT!r}")


def _mcp_stand_in() -> None:
    try:
        import autogen_ext.tools.mcp  # noqa: F401
    except ImportError:
        module = ModuleType("autogen_ext.tools.mcp")
        module.McpWorkbench = type("McpWorkbench", (), {})  # type: ignore[attr-defined]
        module.SseServerParams = type("SseServerParams", (), {})  # type: ignore[attr-defined]
        sys.modules["autogen_ext.tools.mcp"] = module


_mcp_stand_in()


class _Seeded(RememMemory):
    """A RememMemory over a new in-memory memory (fake embedder, user ``autogen``) that adds
    the contents its constructor got before its first call, through :meth:`add`."""

    def __init__(self, contents: list[MemoryContent], name: str | None) -> None:
        super().__init__(Memory.open(":memory:", embedder=FakeEmbedder()), user_id="autogen",
                         name=name)
        self._pending = list(contents)

    async def _seed(self) -> None:
        while self._pending:
            await RememMemory.add(self, self._pending.pop(0))

    async def add(self, content: MemoryContent,
                  cancellation_token: CancellationToken | None = None) -> None:
        await self._seed()
        await super().add(content, cancellation_token)

    async def query(self, query: str | MemoryContent = "",
                    cancellation_token: CancellationToken | None = None,
                    **kwargs: Any) -> MemoryQueryResult:
        await self._seed()
        return await super().query(query, cancellation_token, **kwargs)

    async def update_context(self, model_context: ChatCompletionContext) -> UpdateContextResult:
        await self._seed()
        return await super().update_context(model_context)

    async def clear(self) -> None:
        self._pending.clear()
        await super().clear()


class RememListMemory(_Seeded):
    """``ListMemory(name=None, memory_contents=None)``."""

    def __init__(self, name: str | None = None,
                 memory_contents: list[MemoryContent] | None = None) -> None:
        super().__init__(list(memory_contents or []), name)


class RememMockMemory(_Seeded):
    """autogen-agentchat's test ``MockMemory(contents=None)``: a list of strings."""

    def __init__(self, contents: list[str] | None = None) -> None:
        super().__init__([MemoryContent(content=text, mime_type="text/plain")
                          for text in contents or []], None)


REBOUND = {"ListMemory": RememListMemory, "MockMemory": RememMockMemory}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Rebind the memory classes in every collected test module (their tests look the names
    up when they run)."""
    if VARIANT != "remem":
        return
    for module in {id(item.module): item.module for item in items
                   if isinstance(item, pytest.Function) and item.module}.values():
        for name, cls in REBOUND.items():
            if hasattr(module, name):
                setattr(module, name, cls)
