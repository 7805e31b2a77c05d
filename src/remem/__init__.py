"""remem: memory for LLM agents.

Open a memory in one line (:class:`Memory`), keep conversations in threads
(:class:`ThreadStore`), or use the long-term store directly (:func:`open_store`). The same
code talks to a remem server by swapping :class:`Memory` for :class:`Client`. What an agent
sees: :class:`ContextResult` (``Memory.context``), core memory :class:`Blocks` and files
(:class:`FileBackend` and its backends).
"""

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

__version__ = "0.1.0"

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
