"""remem: memory for LLM agents.

The long-term store is the foundation: :func:`remem.store.open_store` opens one.
"""

from remem.embed import Embedder, FakeEmbedder
from remem.errors import (
    FilterError,
    IndexConfigError,
    InvalidInputError,
    NamespaceError,
    RememError,
    UnsupportedError,
    UsageError,
)
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

__version__ = "0.1.0"

__all__ = [
    "BaseStore",
    "Embedder",
    "FakeEmbedder",
    "FilterError",
    "InMemoryStore",
    "IndexConfig",
    "IndexConfigError",
    "InvalidInputError",
    "Item",
    "NamespaceError",
    "RememError",
    "SQLiteStore",
    "SearchItem",
    "TTLConfig",
    "UnsupportedError",
    "UsageError",
    "__version__",
    "open_store",
]
