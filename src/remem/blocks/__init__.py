"""Core memory blocks: labelled, size-limited text an agent always sees in its system prompt
and edits itself through tools (Letta/MemGPT's core memory).

>>> from remem.blocks import Blocks
>>> from remem.files import InMemoryFileBackend
>>> blocks = Blocks(InMemoryFileBackend())
>>> _ = blocks.create("human-alice", label="human", limit=200, value="Name: Alice")
>>> blocks.attach("travel-agent", "human-alice")
>>> _ = blocks.append("travel-agent", "human", "Vegetarian.")
>>> blocks.get("human-alice").value
'Name: Alice\\nVegetarian.'
"""

from remem.blocks.core import Block, BlockSpec
from remem.blocks.store import Blocks

__all__ = ["Block", "BlockSpec", "Blocks"]
