"""One file tree over several backends, routed by path prefix.

``CompositeBackend({"/memories": store_files, "/workspace": disk_files}, default=scratch)``
sends ``/memories/notes.md`` to ``store_files`` as ``/notes.md`` (the prefix is stripped, so
a backend never knows where it is mounted) and maps paths in results back. The longest
matching prefix wins; paths under no prefix go to ``default`` (without one they are refused).
Listing ``/`` shows each mount point as a directory beside the default's entries.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from remem.errors import PathError, UnsupportedError
from remem.files.base import FileBackend, literal_prefix
from remem.files.core import MAX_GREP_MATCHES, compile_glob, glob_matches, list_children, match_glob
from remem.files.paths import ROOT, is_under, normalize_dir, normalize_file, segments
from remem.files.types import FileEvent, FileInfo, FileRead, GrepMatch

__all__ = ["CompositeBackend"]


class CompositeBackend:
    """Route each path to the backend mounted at its longest matching prefix (see the module
    docstring). ``keeps_history`` is true only when every backend keeps it; ``history`` and
    ``undo`` work on the paths of backends that do."""

    def __init__(self, routes: Mapping[str, FileBackend],
                 default: FileBackend | None = None) -> None:
        mounts: dict[str, FileBackend] = {}
        for prefix, backend in routes.items():
            mount = normalize_dir(prefix)
            if mount == ROOT:
                raise PathError("a route prefix may not be '/'; pass that backend as "
                                "default= instead")
            mounts[mount] = backend
        if not mounts and default is None:
            raise UnsupportedError("CompositeBackend needs at least one route or a default")
        # longest first, so '/a/b' wins over '/a'
        self.routes = dict(sorted(mounts.items(), key=lambda kv: -len(kv[0])))
        self.default = default
        everyone = [*self.routes.values(), *([default] if default is not None else [])]
        self.keeps_history = all(b.keeps_history for b in everyone)

    def _route(self, path: str) -> tuple[str, FileBackend, str]:
        """The mount, its backend and the path inside it."""
        for mount, backend in self.routes.items():
            if is_under(path, mount):
                return mount, backend, path[len(mount):] or ROOT
        if self.default is None:
            raise PathError(f"path {path!r} is under no mounted prefix "
                            f"({', '.join(self.routes)}); use one of them")
        return "", self.default, path

    @staticmethod
    def _out(mount: str, path: str) -> str:
        return mount + path if path != ROOT else (mount or ROOT)

    def _mounts_in(self, directory: str) -> list[tuple[str, FileBackend, str]]:
        """Every backend holding something under ``directory``, with the part of
        ``directory`` inside it."""
        found = []
        mount = ""
        if self.default is not None or any(is_under(directory, m) for m in self.routes):
            mount, backend, inner = self._route(directory)
            found.append((mount, backend, inner))
        for other, other_backend in self.routes.items():
            if other != mount and is_under(other, directory):
                found.append((other, other_backend, ROOT))
        return found

    # -- operations -------------------------------------------------------------------------

    def ls(self, path: str = ROOT) -> list[FileInfo]:
        """Entries directly in ``path``: its backend's, plus mount points below it."""
        directory = normalize_dir(path)
        entries: list[FileInfo] = []
        mount = ""
        if self.default is not None or any(is_under(directory, m) for m in self.routes):
            mount, backend, inner = self._route(directory)
            entries = [replace(e, path=self._out(mount, e.path)) for e in backend.ls(inner)]
        mounts = [FileInfo(m, is_dir=True) for m in self.routes if m != mount]
        extra = list_children(directory, mounts)
        known = {e.path for e in entries}
        return sorted([*entries, *(e for e in extra if e.path not in known)],
                      key=lambda e: e.path)

    def stat(self, path: str) -> FileInfo | None:
        """The file at ``path``, or ``None``."""
        mount, backend, inner = self._route(normalize_file(path))
        info = backend.stat(inner)
        return replace(info, path=self._out(mount, info.path)) if info is not None else None

    def read(self, path: str, *, offset: int = 0, limit: int | None = None) -> FileRead:
        """Lines of the file, from its backend."""
        name = normalize_file(path)
        _, backend, inner = self._route(name)
        return replace(backend.read(inner, offset=offset, limit=limit), path=name)

    def write(self, path: str, content: str, *, etag: str | None = None,
              actor: str = "user") -> FileInfo:
        """Create or replace a file in its backend."""
        mount, backend, inner = self._route(normalize_file(path))
        info = backend.write(inner, content, etag=etag, actor=actor)
        return replace(info, path=self._out(mount, info.path))

    def edit(self, path: str, old: str, new: str, *, replace_all: bool = False,
             etag: str | None = None, actor: str = "user") -> FileInfo:
        """Replace text in a file in its backend."""
        mount, backend, inner = self._route(normalize_file(path))
        info = backend.edit(inner, old, new, replace_all=replace_all, etag=etag, actor=actor)
        return replace(info, path=self._out(mount, info.path))

    def glob(self, pattern: str, path: str = ROOT) -> list[FileInfo]:
        """Matching files across every backend under ``path``."""
        directory = normalize_dir(path)
        compiled = compile_glob(pattern, directory)  # a bad pattern fails at once
        found: list[FileInfo] = []
        for mount, backend, inner in self._mounts_in(directory):
            # ask the backend for the part of the pattern inside it, so it can narrow its
            # scan; every answer is still matched against the whole pattern below
            rest = literal_prefix(compiled, tuple(segments(mount)) if mount else ())
            asked = ROOT + "/".join(rest) if rest is not None else "**"
            for info in backend.glob(asked, inner):
                outer = self._out(mount, info.path)
                if (is_under(outer, directory) and self._route(outer)[1] is backend
                        and glob_matches(compiled, outer)):
                    found.append(replace(info, path=outer))
        return sorted(found, key=lambda e: e.path)

    def grep(self, text: str, path: str = ROOT, *, glob: str | None = None,
             limit: int = MAX_GREP_MATCHES) -> list[GrepMatch]:
        """Lines holding ``text`` across every backend under ``path``."""
        directory = normalize_dir(path)
        hits: list[GrepMatch] = []
        for mount, backend, inner in sorted(self._mounts_in(directory), key=lambda m: m[0]):
            for hit in backend.grep(text, inner, limit=limit):
                outer = self._out(mount, hit.path)
                if self._route(outer)[1] is not backend:
                    continue  # shadowed by a deeper mount
                if glob is not None and not match_glob(glob, outer, directory):
                    continue
                hits.append(replace(hit, path=outer))
        hits.sort(key=lambda h: (h.path, h.line))
        return hits[:limit]

    def delete(self, path: str, *, etag: str | None = None, actor: str = "user") -> None:
        """Delete a file in its backend."""
        _, backend, inner = self._route(normalize_file(path))
        backend.delete(inner, etag=etag, actor=actor)

    def history(self, path: str) -> list[FileEvent]:
        """The history of a file, from its backend."""
        name = normalize_file(path)
        _, backend, inner = self._route(name)
        return [replace(e, path=name) for e in backend.history(inner)]

    def undo(self, path: str, *, etag: str | None = None,
             actor: str = "user") -> FileInfo | None:
        """Revert the latest change of a file, in its backend."""
        mount, backend, inner = self._route(normalize_file(path))
        info = backend.undo(inner, etag=etag, actor=actor)
        return replace(info, path=self._out(mount, info.path)) if info is not None else None
