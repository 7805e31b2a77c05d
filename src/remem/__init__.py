"""remem: memory for LLM agents.

Open a memory in one line (:class:`Memory`), keep conversations in threads
(:class:`ThreadStore`), or use the long-term store directly (:func:`open_store`). The same
code talks to a remem server by swapping :class:`Memory` for :class:`Client`.
"""

from remem.api import Memory
from remem.client import Client
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
    "ChatModel",
    "Client",
    "ConfigError",
    "ConflictError",
    "Embedder",
    "FakeEmbedder",
    "FilterError",
    "InMemoryStore",
    "IndexConfig",
    "IndexConfigError",
    "InvalidInputError",
    "Item",
    "LLMError",
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
