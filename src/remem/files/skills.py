"""Skills: folders holding a ``SKILL.md`` whose YAML frontmatter names and describes them.

::

    /skills/pdf-forms/SKILL.md
    ---
    name: pdf-forms
    description: Fill in PDF forms. Use when the user sends a PDF with form fields.
    allowed-tools: read_file write_file
    ---
    (instructions, loaded only when the skill is used)

The system prompt lists each skill by name and description (:meth:`Skills.render`); the
model reads the whole ``SKILL.md`` when a task needs it (:meth:`Skills.load`). Frontmatter
rules: ``name`` is 1-64 lowercase letters, digits and hyphens and equals the folder's name;
``description`` is non-empty text of at most 1024 characters; ``allowed-tools`` (optional) is
a list of tool names or one string of names separated by spaces or commas; other fields are
kept in ``metadata``. A malformed frontmatter raises :class:`~remem.errors.FrontmatterError`
naming the file, the field and the fix.

Listing parses each ``SKILL.md`` once per content: results are cached by etag, so listing
again reads only what changed.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any, Final

import yaml

from remem.errors import FrontmatterError, NotFoundError
from remem.files.base import FileBackend
from remem.files.paths import join, normalize_dir
from remem.files.render import Overflow, Rendered, check_budget
from remem.store.bad_records import BadRecord, reason_of, report
from remem.tokens import DEFAULT_COUNTER, TokenCounter

__all__ = ["Skill", "SkillInfo", "Skills", "parse_skill"]

SKILL_FILE: Final = "SKILL.md"
_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
MAX_NAME: Final = 64
MAX_DESCRIPTION: Final = 1024
#: libyaml's safe loader when PyYAML was built with it (about 10x faster), else the pure one
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True, slots=True)
class SkillInfo:
    """What the system prompt shows of a skill, and where it lives."""

    name: str
    description: str
    path: str
    allowed_tools: tuple[str, ...] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"name": self.name, "description": self.description, "path": self.path,
                "allowed_tools": list(self.allowed_tools) if self.allowed_tools is not None
                else None, "metadata": self.metadata}


@dataclass(frozen=True, slots=True)
class Skill:
    """A skill loaded in full: its info, the instructions after the frontmatter, and the
    other files of its folder."""

    info: SkillInfo
    body: str
    files: tuple[str, ...] = ()


def _bad(path: str, field_name: str, problem: str, fix: str) -> FrontmatterError:
    return FrontmatterError(f"{path}: frontmatter field '{field_name}' {problem}; {fix}")


def parse_skill(path: str, text: str) -> tuple[SkillInfo, str]:
    """The info and body of the ``SKILL.md`` at ``path`` holding ``text``."""
    lines = text.lstrip("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise FrontmatterError(
            f"{path}: no frontmatter; start the file with a line '---', then 'name: ...' and "
            "'description: ...', then a line '---'")
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise FrontmatterError(f"{path}: the frontmatter is not closed; add a line '---' "
                               "after its last field")
    try:
        data = yaml.load("".join(lines[1:end]), Loader=_LOADER)  # a safe loader (above)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at frontmatter line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "is not valid YAML"
        raise FrontmatterError(f"{path}: the frontmatter is not valid YAML{where} ({problem}); "
                               "quote values that contain ':' or '#'") from None
    if not isinstance(data, dict):
        raise FrontmatterError(f"{path}: the frontmatter must be 'key: value' lines, got "
                               f"{type(data).__name__}; write 'name: ...' and "
                               "'description: ...'")
    folder = path.rstrip("/").split("/")[-2] if path.count("/") >= 2 else ""
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise _bad(path, "name", "is missing or not text",
                   f"add 'name: {folder or 'my-skill'}' (the folder's name)")
    if len(name) > MAX_NAME or not _NAME.match(name):
        raise _bad(path, "name", f"is {name!r}",
                   f"use 1-{MAX_NAME} lowercase letters, digits and single hyphens, "
                   "e.g. 'pdf-forms'")
    if folder and name != folder:
        raise _bad(path, "name", f"is {name!r} but the folder is {folder!r}",
                   "rename one of them so they match")
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        raise _bad(path, "description", "is missing or empty",
                   "add 'description: what the skill does and when to use it'")
    if len(description) > MAX_DESCRIPTION:
        raise _bad(path, "description", f"has {len(description)} characters",
                   f"shorten it to {MAX_DESCRIPTION}; put details in the body")
    tools = data.get("allowed-tools")
    allowed: tuple[str, ...] | None = None
    if tools is not None:
        if isinstance(tools, str):
            allowed = tuple(t for t in re.split(r"[\s,]+", tools) if t)
        elif isinstance(tools, list) and all(isinstance(t, str) and t for t in tools):
            allowed = tuple(tools)
        else:
            raise _bad(path, "allowed-tools", f"is {tools!r}",
                       "write a list of tool names, e.g. [read_file, grep]")
    metadata = {k: v for k, v in data.items()
                if k not in ("name", "description", "allowed-tools")}
    info = SkillInfo(name, description.strip(), path, allowed, _jsonable(metadata))
    return info, "".join(lines[end + 1:]).lstrip("\n")


def _jsonable(value: Any) -> Any:
    """YAML dates and other scalars as text, so metadata is plain JSON."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


class Skills:
    """The skills in folders under ``root`` of ``files`` (see the module docstring).

    ``strict``: a malformed ``SKILL.md`` makes :meth:`list` raise; otherwise it is skipped,
    reported in :attr:`errors` and counted like every record that does not parse
    (:mod:`remem.store.bad_records`): one bad skill does not hide the others.
    """

    def __init__(self, files: FileBackend, root: str = "/skills", *,
                 strict: bool = False) -> None:
        self.files = files
        self.root = normalize_dir(root)
        self.strict = strict
        #: path -> (etag, parsed info); refreshed by :meth:`list`
        self._cache: dict[str, tuple[str, SkillInfo]] = {}
        self._lock = threading.Lock()
        #: the frontmatter errors of the last listing, by path
        self.errors: dict[str, FrontmatterError] = {}

    def list(self) -> list[SkillInfo]:
        """Every valid skill, sorted by name."""
        found = self.files.glob(f"*/{SKILL_FILE}", self.root)
        skills: list[SkillInfo] = []
        errors: dict[str, FrontmatterError] = {}
        cache: dict[str, tuple[str, SkillInfo]] = {}
        for info in found:
            assert info.etag is not None
            cached = self._cache.get(info.path)
            if cached is not None and cached[0] == info.etag:
                cache[info.path] = cached
                skills.append(cached[1])
                continue
            try:
                read = self.files.read(info.path)
                skill, _ = parse_skill(info.path, read.content)
            except NotFoundError:
                continue  # deleted meanwhile
            except FrontmatterError as exc:
                if self.strict:
                    raise
                errors[info.path] = exc
                directory, _, name = info.path.rpartition("/")
                report(BadRecord("skills", (directory,), name, reason_of(exc)))
                continue
            cache[info.path] = (read.etag, skill)
            skills.append(skill)
        with self._lock:
            self._cache, self.errors = cache, errors
        return sorted(skills, key=lambda s: s.name)

    def load(self, name: str) -> Skill:
        """The skill called ``name`` in full; :class:`~remem.errors.NotFoundError` names the
        skills there are."""
        if not isinstance(name, str) or not _NAME.match(name):
            raise self._unknown(name)
        folder = join(self.root, name)
        try:
            read = self.files.read(join(folder, SKILL_FILE))
        except NotFoundError:
            raise self._unknown(name) from None
        info, body = parse_skill(read.path, read.content)
        others = tuple(i.path for i in self.files.glob("**", folder)
                       if i.path != read.path)
        return Skill(info, body, others)

    def _unknown(self, name: object) -> NotFoundError:
        names = [s.name for s in self.list()]
        shown = ", ".join(names[:20]) + (" ..." if len(names) > 20 else "")
        return NotFoundError(f"no skill named {name!r}; the skills are: {shown or '(none)'}")

    def render(self, *, budget: int, counter: TokenCounter = DEFAULT_COUNTER,
               heading: str = "# Skills") -> Rendered:
        """The skill list for the system prompt (name, description, where to read it), at
        most ``budget`` tokens; skills that do not fit are counted in a last line and listed
        in ``overflow``."""
        check_budget(budget)
        lines = [heading, "Read a skill's SKILL.md before doing a task it covers."]
        overflow: list[Overflow] = []
        skills = self.list()
        for position, skill in enumerate(skills):
            line = f"- {skill.name}: {skill.description} ({skill.path})"
            rest = len(skills) - position - 1
            tail = [f"[{rest} more skills left out for space; ls {self.root}]"] if rest else []
            if counter.count("\n".join([*lines, line, *tail])) <= budget:
                lines.append(line)
                continue
            for left in skills[position:]:
                overflow.append(Overflow(left.path, counter.count(left.description)))
            note = f"[{len(skills) - position} more skills left out for space; ls {self.root}]"
            if counter.count("\n".join([*lines, note])) <= budget:
                lines.append(note)
            break
        text = "\n".join(lines)
        if counter.count(text) > budget:  # not even the heading fits
            text = ""
        return Rendered(text, counter.count(text), budget, counter.name, overflow)
