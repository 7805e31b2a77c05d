"""Files an agent reads and writes: one protocol, several backends, one path policy.

>>> from remem.files import InMemoryFileBackend
>>> files = InMemoryFileBackend()
>>> info = files.write("/notes/todo.md", "- buy tea\\n")
>>> files.edit("/notes/todo.md", "tea", "green tea", etag=info.etag).size
16
>>> files.read("/notes/todo.md").content
'- buy green tea\\n'
>>> [event.op for event in files.history("/notes/todo.md")]
['write', 'edit']

Backends: :class:`StoreFileBackend` (items of any remem store, with history and undo),
:class:`LocalFileBackend` (a sandboxed directory; no history), :class:`InMemoryFileBackend`,
and :class:`CompositeBackend` routing by path prefix; :class:`AsyncFiles` is the async shell
over any of them. Every path goes through :mod:`remem.files.paths` first.
"""

from remem.files.aio import AsyncFileBackend, AsyncFiles
from remem.files.base import FileBackend, RecordBackend
from remem.files.composite import CompositeBackend
from remem.files.local import LocalFileBackend
from remem.files.memory import InMemoryFileBackend
from remem.files.store import StoreFileBackend
from remem.files.types import ABSENT, FileEvent, FileInfo, FileRead, GrepMatch, etag_of

__all__ = [
    "ABSENT",
    "AsyncFileBackend",
    "AsyncFiles",
    "CompositeBackend",
    "FileBackend",
    "FileEvent",
    "FileInfo",
    "FileRead",
    "GrepMatch",
    "InMemoryFileBackend",
    "LocalFileBackend",
    "RecordBackend",
    "StoreFileBackend",
    "etag_of",
]
