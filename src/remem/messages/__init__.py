"""Messages: one type for every conversation remem sees, with converters to provider formats.

>>> from remem.messages import Message
>>> Message.user("I moved to Berlin").text
'I moved to Berlin'

Converters: :func:`to_openai` / :func:`from_openai` (chat-completions dicts),
:func:`to_anthropic` / :func:`from_anthropic` (Messages API, with its separate ``system``) and
:func:`to_langchain` / :func:`from_langchain` (LangChain-style dicts). A dict that cannot be
read raises :class:`~remem.errors.MessageFormatError` naming the field.
"""

from remem.messages.convert_anthropic import from_anthropic, to_anthropic
from remem.messages.convert_langchain import (
    from_langchain,
    from_langchain_message,
    to_langchain,
    to_langchain_message,
)
from remem.messages.convert_openai import (
    from_openai,
    from_openai_message,
    to_openai,
    to_openai_message,
)
from remem.messages.types import (
    ContentPart,
    ImagePart,
    Message,
    Role,
    TextPart,
    ToolCall,
    new_id,
)

__all__ = [
    "ContentPart",
    "ImagePart",
    "Message",
    "Role",
    "TextPart",
    "ToolCall",
    "from_anthropic",
    "from_langchain",
    "from_langchain_message",
    "from_openai",
    "from_openai_message",
    "new_id",
    "to_anthropic",
    "to_langchain",
    "to_langchain_message",
    "to_openai",
    "to_openai_message",
]
