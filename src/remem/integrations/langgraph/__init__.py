"""remem as LangGraph's long-term store (extra ``remem[langgraph]``).

:class:`RememStore` is a ``langgraph.store.base.BaseStore`` over any remem store (SQLite,
in memory, PostgreSQL): LangGraph graphs, LangMem's memory tools and Deep Agents' store
backend use it like LangGraph's own stores. :class:`RememSaver` is a checkpointer over remem
threads, so a graph's short-term memory can live in the same file or database. See
``docs/integrations.md`` for the few places where the behaviour differs from LangGraph's
own stores.
"""

from remem.integrations.langgraph.checkpoint import RememSaver
from remem.integrations.langgraph.store import (
    InvalidNamespaceError,
    LangGraphEmbedder,
    RememStore,
    translate_filter,
)

__all__ = ["InvalidNamespaceError", "LangGraphEmbedder", "RememSaver", "RememStore",
           "translate_filter"]
