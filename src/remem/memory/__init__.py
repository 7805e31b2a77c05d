"""Memory formation: extract memories from conversations and keep them right over time.

* :class:`MemoryManager`: one structured LLM call decides inserts, updates and deletes
  against existing memories shown under small integer aliases.
* :class:`MemoryStoreManager`: runs that against a store: namespace templates, related
  memories found by exact, keyword and hybrid search, changes applied in one atomic batch
  under a per-namespace write lock.
* :class:`ProfileManager`: one document per namespace and schema, updated by JSON patches.
* :class:`MemoryRecord` / :class:`HistoryEvent`: what is stored; validity intervals
  (``valid_at`` / ``invalid_at``), history and undo.

Most users want the facade, :class:`remem.api.Memory`; its operations are request values in
:mod:`remem.memory.requests`.
"""

from remem.memory.aliases import IdAliases
from remem.memory.history import HistoryEvent, HistoryOp
from remem.memory.locking import LockSettings
from remem.memory.manager import (
    DEFAULT_INSTRUCTIONS,
    Extraction,
    Fact,
    MemoryExtraction,
    MemoryManager,
    MemoryUpdate,
    NewMemory,
)
from remem.memory.namespaces import NamespaceTemplate
from remem.memory.profiles import PatchOperation, ProfileManager, ProfileResult
from remem.memory.reconcile import Change, Skip
from remem.memory.records import MemoryRecord, MemoryStatus, Source
from remem.memory.results import (
    ChangeResult,
    ExportResult,
    ImportResult,
    MemoryHit,
    MemoryPage,
    SearchResult,
)
from remem.memory.store_manager import AddResult, MemoryStoreManager

__all__ = [
    "DEFAULT_INSTRUCTIONS",
    "AddResult",
    "Change",
    "ChangeResult",
    "ExportResult",
    "Extraction",
    "Fact",
    "HistoryEvent",
    "HistoryOp",
    "IdAliases",
    "ImportResult",
    "LockSettings",
    "MemoryExtraction",
    "MemoryHit",
    "MemoryManager",
    "MemoryPage",
    "MemoryRecord",
    "MemoryStatus",
    "MemoryStoreManager",
    "MemoryUpdate",
    "NamespaceTemplate",
    "NewMemory",
    "PatchOperation",
    "ProfileManager",
    "ProfileResult",
    "SearchResult",
    "Skip",
    "Source",
]
