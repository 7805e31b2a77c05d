"""The prompts pages: the tenant's versioned prompts (procedural memory), and one prompt's
versions newest first, each with the word diff from the version before."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from fastapi.responses import Response

from remem.procedural.prompts import PromptRegistry
from remem.ui.views import word_diff
from remem.ui.web import inspector

__all__ = ["router"]

router = APIRouter()

#: most prompts listed, and versions of one prompt shown
MAX_PROMPTS = 200
MAX_VERSIONS = 100

NamePath = Annotated[str, Path(min_length=1, max_length=256, pattern=r"^[^\x00-\x1f\x7f/]+$")]


@router.get("/prompts")
async def prompts(request: Request) -> Response:
    """The latest version of every prompt, by name."""
    ui = inspector(request)
    viewer, who = await ui.member(request)
    found = await ui.run(lambda: PromptRegistry(ui.memory(who).store).list())
    return ui.page(request, viewer, "prompts.html", prompts=found[:MAX_PROMPTS],
                   more=len(found) > MAX_PROMPTS)


@router.get("/prompts/{name}")
async def prompt_page(request: Request, name: NamePath) -> Response:
    """A prompt's current text and its versions, newest first, with diffs."""
    ui = inspector(request)
    viewer, who = await ui.member(request)
    history = await ui.run(lambda: PromptRegistry(ui.memory(who).store).history(name))
    shown = history[-MAX_VERSIONS:]
    versions: list[dict[str, Any]] = []
    previous = history[-len(shown) - 1].text if len(history) > len(shown) else None
    for version in shown:
        versions.append({"version": version, "diff": word_diff(previous, version.text)
                         if previous is not None else []})
        previous = version.text
    return ui.page(request, viewer, "prompt.html", current=history[-1],
                   versions=list(reversed(versions)), more=len(history) > len(shown))
