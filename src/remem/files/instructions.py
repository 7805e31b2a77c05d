"""Memory files: ``AGENTS.md``-style instructions per scope (organisation, user, agent) merged
into one system-prompt section within a token budget.

Files are read from any :class:`~remem.files.FileBackend` and merged from the most general
scope to the most specific, so the agent's own notes come last (closest to the conversation).
When the budget runs out, the file being added is cut at a sentence or line boundary and a
marker line tells the model how much is missing and which file to read; the files after it
are left out with a marker naming them. Both are reported in :attr:`Rendered.overflow`.
Missing files are skipped silently (not every scope has one).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from remem.errors import NotFoundError
from remem.files.base import FileBackend
from remem.files.paths import join, normalize_dir, normalize_file
from remem.files.render import Overflow, Rendered, check_budget, fit_prefix
from remem.tokens import DEFAULT_COUNTER, TokenCounter

__all__ = ["MemoryFile", "render_memory_files", "scope_files"]


@dataclass(frozen=True, slots=True)
class MemoryFile:
    """One memory file: the scope it belongs to (``org``, ``user``, ``agent``...) and its
    path."""

    scope: str
    path: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", normalize_file(self.path))


def scope_files(root: str = "/memories", *, org_id: str | None = None,
                user_id: str | None = None, agent_id: str | None = None,
                name: str = "AGENTS.md") -> list[MemoryFile]:
    """The conventional layout: ``<root>/org/<org_id>/AGENTS.md``, ``<root>/user/<user_id>/``
    and ``<root>/agent/<agent_id>/``, general to specific (scopes without an id are
    skipped)."""
    base = normalize_dir(root)
    out = []
    for scope, ident in (("org", org_id), ("user", user_id), ("agent", agent_id)):
        if ident is not None:
            out.append(MemoryFile(scope, join(join(join(base, scope), ident), name)))
    return out


def render_memory_files(files: FileBackend, sources: Sequence[MemoryFile], *, budget: int,
                        counter: TokenCounter = DEFAULT_COUNTER,
                        heading: str = "# Memory files") -> Rendered:
    """The memory files in ``sources`` (in order) as one section of at most ``budget`` tokens
    (see the module docstring)."""
    check_budget(budget)
    parts: list[str] = [heading]
    overflow: list[Overflow] = []

    def fits(candidate: list[str]) -> bool:
        return counter.count("\n\n".join(candidate)) <= budget

    if not fits(parts):
        parts = []
    left_out: list[str] = []
    for source in sources:
        try:
            content = files.read(source.path).content.strip()
        except NotFoundError:
            continue
        if not content:
            continue
        title = f"## {source.scope} ({source.path})"
        whole = f"{title}\n{content}"
        total = counter.count(content)
        if not left_out and fits([*parts, whole]):
            parts.append(whole)
            continue
        if left_out:
            left_out.append(source.path)
            overflow.append(Overflow(source.path, total))
            continue
        marker_for = _marker(source.path)
        kept = fit_prefix(content, _fits_with(fits, parts, title, marker_for(total)))
        if kept.strip():
            included = counter.count(kept)
            parts.append(f"{title}\n{kept.rstrip()}\n{marker_for(total - included)}")
            overflow.append(Overflow(source.path, total, included))
        else:
            overflow.append(Overflow(source.path, total))
        left_out.append(source.path)
    omitted = [o.source for o in overflow if o.included_tokens == 0]
    if omitted:
        note = f"[left out for space: {', '.join(omitted)}; read_file them if needed]"
        if fits([*parts, note]):
            parts.append(note)
    text = "\n\n".join(parts)
    return Rendered(text, counter.count(text), budget, counter.name, overflow)


def _fits_with(fits: Callable[[list[str]], bool], parts: list[str], title: str,
               marker: str) -> Callable[[str], bool]:
    """Whether a prefix of a file, with its title and the (longest) cut marker, fits."""
    return lambda prefix: fits([*parts, f"{title}\n{prefix.rstrip()}\n{marker}"])


def _marker(path: str) -> Callable[[int], str]:
    def marker(missing: int) -> str:
        return f"[cut for space: about {max(missing, 1)} more tokens; read_file {path}]"
    return marker
