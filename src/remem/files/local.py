"""Files in a directory on disk, sandboxed to its root.

The root is opened once per operation and every path is walked one name at a time from it
with ``openat``-style calls (``dir_fd=``) and ``O_NOFOLLOW``: a name can never be
reinterpreted by the operating system as ``..``, an absolute path or a link. Symbolic links are
never followed, even ones pointing inside the root (an operation that meets one fails with
:class:`~remem.errors.PathError`; listings skip them), which also rules out link loops and a
link swapped in between a check and a use. Paths were already checked by
:mod:`remem.files.paths`.

Writes go to a temporary file in the same directory, are flushed to disk, then renamed over
the target, so a reader sees the old or the new content, never a torn file. Changes are
serialised by an exclusive ``flock`` on the root directory (across processes too), which is
what makes ``etag=`` checks race-free.

History: none. The disk holds only the current content (``keeps_history = False``;
``history`` and ``undo`` raise :class:`~remem.errors.UnsupportedError`); route paths that
need history to a store-backed backend with :class:`~remem.files.CompositeBackend`.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from remem.errors import InvalidInputError, PathError, UnsupportedError
from remem.files import core
from remem.files.base import RecordBackend, ScanHint
from remem.files.paths import segments
from remem.files.types import FileEvent, FileRecord

__all__ = ["LocalFileBackend"]

_TMP_PREFIX = ".remem-tmp-"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO someone left in the root must not hang the agent
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _link_refused(path: str, name: str) -> PathError:
    return PathError(f"path {path!r} is refused: {name!r} is a symbolic link or not a "
                     "directory (the disk backend never follows links); use the real path")


class LocalFileBackend(RecordBackend):
    """Text files under directory ``root`` (created on first write if missing).

    ``durable``: flush each written file to disk before it replaces the old one.
    """

    keeps_history = False

    def __init__(self, root: str | os.PathLike[str], *, durable: bool = True,
                 clock: Callable[[], float] = time.time) -> None:
        super().__init__(clock=clock)
        self.root = Path(root)
        self.durable = durable
        self._lock = threading.Lock()

    # -- walking from the root --------------------------------------------------------------

    def _root_fd(self, create: bool) -> int | None:
        try:
            return os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except FileNotFoundError:
            if not create:
                return None
            self.root.mkdir(parents=True, exist_ok=True)
            return os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

    def _open_dir(self, fd: int, path: str, parts: list[str], create: bool) -> int | None:
        """The fd of the directory ``parts`` below directory ``fd`` (which it takes over),
        ``None`` when a part is missing and ``create`` is false."""
        for part in parts:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    os.close(fd)
                    return None
                # made meanwhile, or a dangling link: the open below decides
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
                try:
                    child = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except OSError:
                    os.close(fd)
                    raise _link_refused(path, part) from None
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    raise _link_refused(path, part) from None
                raise
            os.close(fd)
            fd = child
        return fd

    def _read_at(self, dir_fd: int, name: str, path: str) -> FileRecord | None:
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):
                raise _link_refused(path, name) from None
            raise
        try:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                raise PathError(f"{path!r} is a directory, not a file; call ls on it")
            if not stat.S_ISREG(info.st_mode):
                raise PathError(f"{path!r} is not a regular file (a device, socket or FIFO)")
            chunks = []
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
        finally:
            os.close(fd)
        try:
            content = b"".join(chunks).decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInputError(f"{path!r} is not UTF-8 text; the file tools read text "
                                    "files only") from None
        return FileRecord(path, content, 0, info.st_mtime)

    # -- primitives -------------------------------------------------------------------------

    def _load(self, path: str) -> FileRecord | None:
        parts = segments(path)
        root = self._root_fd(create=False)
        if root is None:
            return None
        fd = self._open_dir(root, path, parts[:-1], create=False)
        if fd is None:
            return None
        try:
            return self._read_at(fd, parts[-1], path)
        finally:
            os.close(fd)

    def _scan(self, directory: str, hint: ScanHint | None = None) -> Iterable[FileRecord]:
        root = self._root_fd(create=False)
        if root is None:
            return []
        try:
            fd = self._open_dir(root, directory, segments(directory), create=False)
        except PathError:
            return []
        if fd is None:
            return []
        try:
            return list(self._walk(fd, directory.rstrip("/"), hint))
        finally:
            os.close(fd)

    def _walk(self, fd: int, prefix: str, hint: ScanHint | None) -> Iterator[FileRecord]:
        """The files below directory ``fd`` (at ``prefix``); with a ``hint``, only the ones
        it admits are read, and no directory deeper than its matches is opened."""
        with os.scandir(fd) as entries:
            names = sorted((e.name, e.is_dir(follow_symlinks=False),
                            e.is_file(follow_symlinks=False)) for e in entries)
        for name, is_dir, is_file in names:
            path = f"{prefix}/{name}"
            if name.startswith(_TMP_PREFIX):
                continue
            try:
                segments(path)  # a name the path rules refuse could not be named back
            except PathError:
                continue
            if is_dir:
                if hint is not None and hint.depth is not None and path.count("/") >= hint.depth:
                    continue  # every file inside would be deeper than a match
                try:
                    child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except OSError:
                    continue  # replaced by a link meanwhile: skipped, never followed
                try:
                    yield from self._walk(child, path, hint)
                finally:
                    os.close(child)
            elif is_file and (hint is None or hint.admits(path)):
                with contextlib.suppress(PathError, InvalidInputError, OSError):
                    record = self._read_at(fd, name, path)
                    if record is not None:
                        yield record

    def _commit(self, path: str, plan: core.Plan) -> core.FileChange:
        parts = segments(path)
        root = self._root_fd(create=True)
        assert root is not None
        # the lock belongs to the root's open file description: every fd below is opened
        # from a dup of it and closed in a finally, so the lock ends with the call
        with self._lock:
            fcntl.flock(root, fcntl.LOCK_EX)
            fd: int | None = None
            try:
                fd = self._open_dir(os.dup(root), path, parts[:-1], create=False)
                current = self._read_at(fd, parts[-1], path) if fd is not None else None
                change = plan(current)
                if fd is None and change.record.content is not None:
                    fd = self._open_dir(os.dup(root), path, parts[:-1], create=True)
                if fd is not None:
                    self._save(fd, parts[-1], path, change.record.content)
                return change
            finally:
                if fd is not None:
                    os.close(fd)
                fcntl.flock(root, fcntl.LOCK_UN)
                os.close(root)

    def _save(self, dir_fd: int, name: str, path: str, content: str | None) -> None:
        if content is None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=dir_fd)
            return
        tmp = f"{_TMP_PREFIX}{uuid.uuid4().hex}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o644, dir_fd=dir_fd)
        try:
            with os.fdopen(fd, "wb", closefd=True) as handle:
                handle.write(content.encode("utf-8"))
                if self.durable:
                    handle.flush()
                    os.fsync(handle.fileno())
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except IsADirectoryError:
            os.unlink(tmp, dir_fd=dir_fd)
            raise PathError(f"{path!r} is a directory, not a file; write to a file inside "
                            "it") from None
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise

    def _events(self, path: str) -> list[FileEvent]:
        raise UnsupportedError("LocalFileBackend keeps no history")
