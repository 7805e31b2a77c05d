"""Scripted extraction answers written by name: the helpers read the E and F numbers the
prompt offered, so a scenario says "existing: Robert Smith" instead of guessing numbers."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from remem.llm import ChatRequest

_ENTITY = re.compile(r"^E(\d+): (.+?) \((?:[^()]*)\)(?:, also .*)?$", re.M)
_FACT = re.compile(r"^F(\d+): .+? [\w.-]+: (.+?)(?: \(since [^()]*\))?$", re.M)


def offered(request: ChatRequest) -> tuple[dict[str, int], dict[str, int]]:
    """(entity name -> E number, fact text -> F number) of an extraction prompt."""
    text = request.messages[-1].text
    entities = {name: int(n) for n, name in _ENTITY.findall(text)}
    facts = {fact: int(n) for n, fact in _FACT.findall(text)}
    return entities, facts


def E(name: str, type_: str = "person", *, aliases: Sequence[str] = (),
      existing: str | None = None) -> dict[str, Any]:
    """An extracted entity (``existing``: the name of a known entity it is)."""
    return {"name": name, "type": type_, "aliases": list(aliases), "existing": existing}


def F(subject: str, predicate: str, obj: str | None, fact: str, *, valid_at: str | None = None,
      invalid_at: str | None = None, contradicts: Sequence[str] = (), correction: bool = False,
      same_as: str | None = None, value: str | None = None) -> dict[str, Any]:
    """An extracted fact between entities named as in the answer's entity list."""
    return {"subject": subject, "predicate": predicate, "object": obj, "fact": fact,
            "valid_at": valid_at, "invalid_at": invalid_at, "contradicts": list(contradicts),
            "correction": correction, "same_as": same_as, "value": value}


def answer(entities: Sequence[dict[str, Any]],
           facts: Sequence[dict[str, Any]] = ()) -> Callable[[ChatRequest], dict[str, Any]]:
    """A script entry answering an extraction prompt with these entities and facts."""

    def respond(request: ChatRequest) -> dict[str, Any]:
        known_e, known_f = offered(request)
        refs = {e["name"]: i for i, e in enumerate(entities, 1)}
        out_e = []
        for i, e in enumerate(entities, 1):
            existing = e["existing"]
            if existing is not None and existing not in known_e:
                raise AssertionError(f"{existing!r} was not offered: {sorted(known_e)}")
            out_e.append({"ref": i, "name": e["name"], "type": e["type"],
                          "aliases": e["aliases"],
                          "existing": None if existing is None else known_e[existing]})
        out_f = []
        for f in facts:
            for text in (*f["contradicts"], *([f["same_as"]] if f["same_as"] else [])):
                if text not in known_f:
                    raise AssertionError(f"fact {text!r} was not offered: {sorted(known_f)}")
            out_f.append({"subject": refs[f["subject"]], "predicate": f["predicate"],
                          "object": None if f["object"] is None else refs[f["object"]],
                          "value": f["value"], "fact": f["fact"], "valid_at": f["valid_at"],
                          "invalid_at": f["invalid_at"],
                          "contradicts": [known_f[t] for t in f["contradicts"]],
                          "correction": f["correction"],
                          "same_as": None if f["same_as"] is None else known_f[f["same_as"]]})
        return {"entities": out_e, "facts": out_f}

    return respond


_CANDIDATE = re.compile(r"^  (\d+): (.+?) \(", re.M)
_NAME = re.compile(r"^Name (\d+): (.+?) \(", re.M)


def choose(**picks: str | None) -> Callable[[ChatRequest], dict[str, Any]]:
    """A script entry answering a disambiguation prompt: extracted name -> the candidate's
    name it is (``None``: new). Names are given with spaces as underscores."""

    def respond(request: ChatRequest) -> dict[str, Any]:
        text = request.messages[-1].text
        choices = []
        blocks = re.split(r"^(?=Name \d+:)", text, flags=re.M)[1:]
        for block in blocks:
            ref, name = _NAME.findall(block)[0]
            pick = picks[name.replace(" ", "_")]
            numbers = {cand: int(n) for n, cand in _CANDIDATE.findall(block)}
            choices.append({"ref": int(ref),
                            "choice": None if pick is None else numbers[pick]})
        return {"choices": choices}

    return respond
