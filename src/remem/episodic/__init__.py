"""Episodic memory: past experiences kept as episodes and shown again as few-shot examples.

* :class:`Episode`: situation, thought, action, result, and the thread it came from.
* :class:`EpisodeStore`: episodes in any remem store; written by the agent or extracted from a
  finished thread by one LLM call; :meth:`~EpisodeStore.select_examples` picks relevant,
  diverse episodes (hybrid search with MMR, near-duplicates dropped) within a token budget.
* :func:`render_examples`: episodes as few-shot messages.

See docs/procedural.md.
"""

from remem.episodic.episodes import EpisodeStore, Extracted
from remem.episodic.examples import (
    Selection,
    example_messages,
    fit_examples,
    render_examples,
    similarity,
)
from remem.episodic.schema import Episode, EpisodeDraft

__all__ = [
    "Episode",
    "EpisodeDraft",
    "EpisodeStore",
    "Extracted",
    "Selection",
    "example_messages",
    "fit_examples",
    "render_examples",
    "similarity",
]
