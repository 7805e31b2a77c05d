"""Agent tools: memory management in the hot path, exported for OpenAI (chat completions and
Responses, strict or not), Anthropic, the OpenAI Agents SDK and LangChain.

>>> from remem import FakeEmbedder
>>> from remem.api import Memory
>>> from remem.messages import ToolCall
>>> tools = MemoryTools(Memory.open(":memory:", embedder=FakeEmbedder()), user_id="alice")
>>> [t["function"]["name"] for t in tools.openai_tools()]
['manage_memory', 'search_memory']
>>> reply = tools.execute(ToolCall(id="c1", name="manage_memory",
...                                arguments={"action": "create", "content": "Likes tea"}))
>>> reply.is_error, '"status": "created"' in reply.text
(False, True)
"""

from remem.tools.archival import ArchivalTools, ConversationTools
from remem.tools.blocks import BlockTools
from remem.tools.export import (
    Toolset,
    strict_parameters,
    to_anthropic_tool,
    to_openai_tool,
    to_responses_tool,
)
from remem.tools.files import FileTools
from remem.tools.memory import ACTIONS, MemoryTools, tool_runner

__all__ = ["ACTIONS", "ArchivalTools", "BlockTools", "ConversationTools", "FileTools",
           "MemoryTools", "Toolset", "strict_parameters", "to_anthropic_tool", "to_openai_tool",
           "to_responses_tool", "tool_runner"]
