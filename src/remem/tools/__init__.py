"""Agent tools: memory management in the hot path, exported for OpenAI and Anthropic.

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
from remem.tools.export import to_anthropic_tool, to_openai_tool
from remem.tools.files import FileTools
from remem.tools.memory import ACTIONS, MemoryTools, tool_runner

__all__ = ["ACTIONS", "ArchivalTools", "BlockTools", "ConversationTools", "FileTools",
           "MemoryTools", "to_anthropic_tool", "to_openai_tool", "tool_runner"]
