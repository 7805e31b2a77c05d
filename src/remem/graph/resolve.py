"""Entity resolution in pure code: which existing entity a newly extracted name refers to.

The stages run in order and the first that finds anyone decides (each is stricter about
what it accepts than the model would be, and cheaper):

1. **exact**: the normalised name or one of the aliases equals an existing entity's
   normalised name or alias (:func:`name_key`: NFKC, case-folded, punctuation dropped);
2. **lexical**: the names are variants of each other (:func:`variants`): every word of the
   shorter one matches a distinct word of the longer one, whole or as an initial, and at
   least one whole word is shared ("R. Smith" ~ "Robert Smith", "Bob" ~ "Bob Lee", never
   "Bob Lee" ~ "Bob Jones");
3. **semantic**: cosine similarity of the name's embedding to an entity's at least the
   threshold.

One candidate: resolved. Several: ambiguous, and the model is asked (one call for every
ambiguous name of an episode). None: a new entity.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

from remem.retrieval.tokenize import bounded_term

__all__ = ["name_key", "name_words", "variants"]

_PUNCT = re.compile(r"[\W_]+", re.UNICODE)
_HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def name_key(name: str) -> str:
    """The form names are compared in: NFKC, case-folded, punctuation as single spaces; a key
    past the keyword index's term length is cut with a hash of the whole (as long words are),
    so an entity's key row fits every backend's index (PostgreSQL's btree rows hold ~2,700
    bytes) and one long name still meets itself."""
    text = unicodedata.normalize("NFKC", name).casefold()
    return bounded_term(" ".join(_PUNCT.sub(" ", text).split()))


def name_words(name: str) -> list[str]:
    """The words of a name (a Chinese name is one word: its characters are not initials)."""
    key = name_key(name)
    return key.split() if not _HAN.search(key) else [key.replace(" ", "")]


def _word_match(a: str, b: str) -> int:
    """2: the same word; 1: one is the other's initial; 0: no match."""
    if a == b:
        return 2
    if (len(a) == 1 and b.startswith(a)) or (len(b) == 1 and a.startswith(b)):
        return 1
    return 0


def variants(a: str, b: str) -> bool:
    """Whether two names can be the same entity's (module docstring, stage 2)."""
    wa, wb = name_words(a), name_words(b)
    if not wa or not wb:
        return False
    short, long = (wa, wb) if len(wa) <= len(wb) else (wb, wa)
    free = list(long)
    whole = False
    for word in short:
        best = max(range(len(free)), key=lambda i: _word_match(word, free[i]), default=None)
        if best is None or _word_match(word, free[best]) == 0:
            return False
        whole = whole or _word_match(word, free[best]) == 2
        free.pop(best)
    # two full names must also agree on the last word ("Bob Lee" vs "Bob Jones" fail above)
    return whole


def any_variant(names: Sequence[str], others: Iterable[str]) -> bool:
    """Whether any of ``names`` is a variant of any of ``others``."""
    others = list(others)
    return any(variants(a, b) for a in names for b in others)
