"""File paths: the one place a path an agent (or a caller) gives is checked and normalised.

Every backend (store, disk, in-memory, composite) sees only paths this module returned: an
absolute, ``/``-separated virtual path such as ``/notes/today.md``, whose root is the
backend's root. The rules refuse rather than repair anything that could mean a different
place to another layer:

* ``..`` segments are refused (not resolved): ``a/../b`` is a sign of a confused or hostile
  caller, and resolving it would hide an escape attempt behind a legal result;
* backslashes, NUL and other control characters, and percent-encoded separators or dots
  (``%2e``, ``%2f``, ``%5c``) are refused, so no later decoding step can turn a name into a
  separator;
* characters that look like or normalise (NFKC) to ``/``, ``\\`` or ``.`` (U+2215
  DIVISION SLASH, U+FF0F FULLWIDTH SOLIDUS, U+FF0E FULLWIDTH FULL STOP...) are refused,
  so a file system or a human reading the path cannot take them for one;
* a drive (``C:``) or a UNC prefix is refused; a leading ``/`` is the backend's root, never the
  host's (``/etc/passwd`` is ``<root>/etc/passwd``);
* segments are at most :data:`MAX_SEGMENT_BYTES` bytes of UTF-8, paths at most
  :data:`MAX_PATH_CHARS` characters and :data:`MAX_DEPTH` segments deep.

``.`` segments and repeated or trailing slashes are dropped. Directory paths (for ``ls``,
``glob`` and ``grep``) may be ``/``; file paths may not.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

from remem.errors import PathError

__all__ = [
    "MAX_DEPTH",
    "MAX_PATH_CHARS",
    "MAX_SEGMENT_BYTES",
    "ROOT",
    "ancestors",
    "is_under",
    "join",
    "normalize_dir",
    "normalize_file",
    "parent",
    "segments",
]

ROOT: Final = "/"
MAX_SEGMENT_BYTES: Final = 255
MAX_PATH_CHARS: Final = 1024
MAX_DEPTH: Final = 32

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_ENCODED = re.compile(r"%(2e|2f|5c|00|25)", re.IGNORECASE)
_DRIVE = re.compile(r"^[A-Za-z]:")
#: characters whose NFKC form holds one of these is a look-alike of a separator or a dot
_LOOKALIKE_TARGETS: Final = frozenset("/\\.")
#: look-alikes NFKC keeps as they are (they only look like a slash or dot)
_LOOKALIKES: Final = frozenset(
    "\u2215\u2044\u29f8\u29f9\u2216\u29f5\u29f6\u29f7\u2024\u2027\u00b7\u30fb\u02d9\u0701"
    "\u0702\u3002\uff61\u2e31\u2e33\u1427\u2cc6\u2cc7\u27cb\u27cd\u3033\u3035\u2cbb")


def _refuse(path: str, rule: str, fix: str) -> PathError:
    shown = path if len(path) <= 80 else f"{path[:60]}...({len(path)} characters)"
    return PathError(f"path {shown!r} is refused: {rule}; {fix}")


def segments(path: object, *, what: str = "path") -> list[str]:
    """The checked segments of ``path`` (``[]`` for the root), or :class:`PathError`."""
    if not isinstance(path, str):
        raise PathError(f"{what} must be a string, got {type(path).__name__}")
    if not path:
        raise PathError(f"{what} is empty; give a path such as '/notes.md'")
    if len(path) > MAX_PATH_CHARS:
        raise _refuse(path, f"it has {len(path)} characters, the limit is {MAX_PATH_CHARS}",
                      "use a shorter path")
    bad = _CONTROL.search(path)
    if bad is not None:
        raise _refuse(path, f"it contains the control character {bad.group()!r}",
                      "remove it (NUL and control characters are never allowed)")
    if "\\" in path:
        raise _refuse(path, "it contains a backslash", "separate directories with '/'")
    if _ENCODED.search(path):
        raise _refuse(path, "it contains a percent-encoded dot, separator or '%'",
                      "write the characters themselves (paths are never URL-decoded)")
    if _DRIVE.match(path) or path.startswith("//"):
        raise _refuse(path, "it names a drive or a network share",
                      "paths are relative to the backend's root, e.g. '/notes.md'")
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            raise _refuse(path, "it has a '..' segment (paths may not climb out of a "
                                "directory)", "name the file from the root, e.g. '/a/b.md'")
        _check_segment(path, part)
        parts.append(part)
    if len(parts) > MAX_DEPTH:
        raise _refuse(path, f"it is {len(parts)} directories deep, the limit is {MAX_DEPTH}",
                      "use a flatter layout")
    return parts


def _check_segment(path: str, part: str) -> None:
    if len(part.encode("utf-8")) > MAX_SEGMENT_BYTES:
        raise _refuse(path, f"a name is longer than {MAX_SEGMENT_BYTES} bytes",
                      "use shorter file and directory names")
    if part.strip(" ") != part or part.rstrip(".") != part:
        raise _refuse(path, f"the name {part[:40]!r} starts or ends with a space or ends "
                            "with a dot", "trim it (some file systems drop those characters)")
    for char in part:
        if char in _LOOKALIKES or (
                ord(char) > 127
                and _LOOKALIKE_TARGETS & set(unicodedata.normalize("NFKC", char))):
            raise _refuse(path, f"it contains {char!r} (U+{ord(char):04X}), which looks like "
                                "'/', '\\' or '.'", "use the ASCII character or another name")


def normalize_dir(path: object = ROOT) -> str:
    """``path`` as a normalised directory path (``/`` or ``/a/b``)."""
    return ROOT + "/".join(segments(path))


def normalize_file(path: object) -> str:
    """``path`` as a normalised file path (``/a/b.md``); the root itself is refused."""
    parts = segments(path)
    if not parts:
        raise PathError(f"path {path!r} is the root directory, not a file; name a file, "
                        "e.g. '/notes.md'")
    return ROOT + "/".join(parts)


def join(directory: str, name: str) -> str:
    """A normalised directory joined with one more (already checked) segment."""
    return f"{directory.rstrip('/')}/{name}"


def parent(path: str) -> str:
    """The directory holding a normalised path (``/`` for a top-level name)."""
    head = path.rsplit("/", 1)[0]
    return head or ROOT


def ancestors(path: str) -> list[str]:
    """Every directory above a normalised file path, root first (``/``, ``/a``, ``/a/b``)."""
    out = [ROOT]
    parts = path.strip("/").split("/")[:-1]
    for index in range(1, len(parts) + 1):
        out.append(ROOT + "/".join(parts[:index]))
    return out


def is_under(path: str, directory: str) -> bool:
    """Whether normalised ``path`` is ``directory`` or inside it."""
    return directory == ROOT or path == directory or path.startswith(directory + "/")
