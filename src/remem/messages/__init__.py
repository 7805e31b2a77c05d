"""Messages: one type for every conversation remem sees, with converters to provider formats.

>>> from remem.messages import Message
>>> Message.user("I moved to Berlin").text
'I moved to Berlin'
"""

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
    "new_id",
]
