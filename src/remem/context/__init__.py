"""Context assembly: one call turns memory into a prompt that fits a token budget.

``mem.context(query, user_id=..., thread_id=..., threads=..., budget_tokens=2000)`` gathers,
in a configurable priority order, the user profile, the memories relevant to the query (with
their validity dates), the thread's running summary and its most recent messages, plus any
section registered through :class:`ContextSection`, and keeps whole items (lowest priority
dropped first, each drop reported) so the result never exceeds the budget. It renders to a
string or to messages (remem's, OpenAI's or Anthropic's shape). See ``docs/context.md``.
"""

from remem.context.assemble import (
    DEFAULT_ORDER,
    ContextRequest,
    aassemble,
    assemble,
    register_section,
    registered_sections,
    unregister_section,
)
from remem.context.packing import SectionOffer, pack
from remem.context.sections import (
    MemoriesSection,
    ProfileSection,
    RecentMessagesSection,
    SummarySection,
)
from remem.context.types import (
    ContextItem,
    ContextResult,
    ContextScope,
    ContextSection,
    DroppedItem,
    SectionReport,
)

__all__ = [
    "DEFAULT_ORDER",
    "ContextItem",
    "ContextRequest",
    "ContextResult",
    "ContextScope",
    "ContextSection",
    "DroppedItem",
    "MemoriesSection",
    "ProfileSection",
    "RecentMessagesSection",
    "SectionOffer",
    "SectionReport",
    "SummarySection",
    "aassemble",
    "assemble",
    "pack",
    "register_section",
    "registered_sections",
    "unregister_section",
]
