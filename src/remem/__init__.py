"""remem: memory for LLM agents.

Open a memory in one line (:class:`Memory`), keep conversations in threads
(:class:`ThreadStore`), or use the long-term store directly (:func:`open_store`). The same
code talks to a remem server by swapping :class:`Memory` for :class:`Client`. What an agent
sees: :class:`ContextResult` (``Memory.context``), core memory :class:`Blocks` and files
(:class:`FileBackend` and its backends).

Names are imported on first use (PEP 562 ``__getattr__``): ``import remem`` is cheap, so the
``remem`` command starts fast, and ``remem.Memory`` imports :mod:`remem.api` the first time it
is read. ``__version__`` is the installed distribution's version.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from remem.api import Memory
    from remem.blocks import Blocks
    from remem.client import Client
    from remem.context import ContextRequest, ContextResult
    from remem.embed import Embedder, FakeEmbedder
    from remem.errors import (
        ConfigError,
        ConflictError,
        FilterError,
        IndexConfigError,
        InvalidInputError,
        LLMError,
        NamespaceError,
        NotFoundError,
        RememError,
        StructuredOutputError,
        ToolError,
        UnsupportedError,
        UsageError,
    )
    from remem.files import (
        CompositeBackend,
        FileBackend,
        InMemoryFileBackend,
        LocalFileBackend,
        StoreFileBackend,
    )
    from remem.llm import (
        AnthropicChatModel,
        ChatModel,
        OpenAIChatModel,
        ScriptedModel,
        model_from_env,
    )
    from remem.messages import Message, ToolCall
    from remem.store import (
        BaseStore,
        IndexConfig,
        InMemoryStore,
        Item,
        SearchItem,
        SQLiteStore,
        TTLConfig,
        open_store,
    )
    from remem.threads import SummaryPolicy, Thread, ThreadStore, trim_messages
    from remem.tools import MemoryTools

    __version__: str

#: public name -> the module that defines it (imported when the name is first read)
_LAZY: dict[str, str] = {
    "Memory": "remem.api",
    "Blocks": "remem.blocks",
    "Client": "remem.client",
    "ContextRequest": "remem.context",
    "ContextResult": "remem.context",
    "Embedder": "remem.embed",
    "FakeEmbedder": "remem.embed",
    "ConfigError": "remem.errors",
    "ConflictError": "remem.errors",
    "FilterError": "remem.errors",
    "IndexConfigError": "remem.errors",
    "InvalidInputError": "remem.errors",
    "LLMError": "remem.errors",
    "NamespaceError": "remem.errors",
    "NotFoundError": "remem.errors",
    "RememError": "remem.errors",
    "StructuredOutputError": "remem.errors",
    "ToolError": "remem.errors",
    "UnsupportedError": "remem.errors",
    "UsageError": "remem.errors",
    "CompositeBackend": "remem.files",
    "FileBackend": "remem.files",
    "InMemoryFileBackend": "remem.files",
    "LocalFileBackend": "remem.files",
    "StoreFileBackend": "remem.files",
    "AnthropicChatModel": "remem.llm",
    "ChatModel": "remem.llm",
    "OpenAIChatModel": "remem.llm",
    "ScriptedModel": "remem.llm",
    "model_from_env": "remem.llm",
    "Message": "remem.messages",
    "ToolCall": "remem.messages",
    "BaseStore": "remem.store",
    "InMemoryStore": "remem.store",
    "IndexConfig": "remem.store",
    "Item": "remem.store",
    "SQLiteStore": "remem.store",
    "SearchItem": "remem.store",
    "TTLConfig": "remem.store",
    "open_store": "remem.store",
    "SummaryPolicy": "remem.threads",
    "Thread": "remem.threads",
    "ThreadStore": "remem.threads",
    "trim_messages": "remem.threads",
    "MemoryTools": "remem.tools",
}

__all__ = [
    "AnthropicChatModel",
    "BaseStore",
    "Blocks",
    "ChatModel",
    "Client",
    "CompositeBackend",
    "ConfigError",
    "ConflictError",
    "ContextRequest",
    "ContextResult",
    "Embedder",
    "FakeEmbedder",
    "FileBackend",
    "FilterError",
    "InMemoryFileBackend",
    "InMemoryStore",
    "IndexConfig",
    "IndexConfigError",
    "InvalidInputError",
    "Item",
    "LLMError",
    "LocalFileBackend",
    "Memory",
    "MemoryTools",
    "Message",
    "NamespaceError",
    "NotFoundError",
    "OpenAIChatModel",
    "RememError",
    "SQLiteStore",
    "ScriptedModel",
    "SearchItem",
    "StoreFileBackend",
    "StructuredOutputError",
    "SummaryPolicy",
    "TTLConfig",
    "Thread",
    "ThreadStore",
    "ToolCall",
    "ToolError",
    "UnsupportedError",
    "UsageError",
    "__version__",
    "model_from_env",
    "open_store",
    "trim_messages",
]


def _version() -> str:
    """The installed distribution's version (``0+unknown`` when run from an uninstalled
    source tree)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("remem")
    except PackageNotFoundError:  # pragma: no cover - a source tree on sys.path
        return "0+unknown"


def __getattr__(name: str) -> Any:
    """Import a public name on first use and keep it in the module (PEP 562)."""
    if name == "__version__":
        value: Any = _version()
    elif name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    else:
        raise AttributeError(f"module 'remem' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The module's names, the lazy ones included."""
    return sorted({*globals(), *__all__})
