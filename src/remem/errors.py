"""The one error tree of remem.

Every error remem raises on purpose derives from :class:`RememError`. Errors caused by bad
input also derive from :class:`ValueError`, so code that already catches ``ValueError`` keeps
working. Messages name the offending value, the rule it broke and how to fix it::

    RememError
    ├── InvalidInputError (ValueError)      bad input from a caller
    │   ├── NamespaceError                  a namespace label or key breaks a rule
    │   ├── FilterError                     a filter is malformed (names operator and path)
    │   ├── InvalidValueError               an item value is not a JSON object
    │   ├── ImportFormatError               a JSONL line cannot be imported
    │   ├── MessageFormatError              a message or provider dict cannot be converted
    │   ├── TemplateVariableError           a prompt drops or invents a template variable
    │   ├── PathError                       a file path is refused (escapes its root, bad name)
    │   ├── EditError                       an edit's old text is missing or not unique
    │   ├── FrontmatterError                a SKILL.md frontmatter is malformed (names the file)
    │   ├── BlockLimitError                 a memory block edit would pass its character limit
    │   ├── RecordFormatError               a record about to be written would not read back
    │   └── ApprovalEditError               an approval's arguments are refused (edit, etag)
    ├── NotFoundError (LookupError)         a thread, checkpoint, memory or event does not exist
    │   └── BadRecordError                  a stored record cannot be read (remem doctor)
    ├── ConflictError                       a write lost a race (version check); retry it
    │   └── FileConflictError               a file or block changed since its etag was read
    ├── UsageError                          the API is used in a way it does not support
    │   ├── UnsupportedError                a backend lacks a declared capability
    │   ├── ReadOnlyError                   a read-only file or memory block cannot be changed
    │   ├── QuotaExceededError              a write would pass a tenant's storage quota
    │   └── PermissionDeniedError           a file permission rule denies the operation
    │       └── ReservedNamespaceError      a raw store write (or a governed read) names a
    │                                       family's root; names the family's API instead
    ├── ConfigError                         a setting is missing or invalid (names the setting)
    ├── IndexConfigError                    vectors from another embedder or dimension
    ├── EmbeddingError                      an embedder failed (model missing, HTTP error)
    ├── LLMError                            a chat model call failed
    │   ├── LLMConnectionError              the provider could not be reached (or timed out)
    │   ├── LLMStatusError                  the provider answered with an HTTP error
    │   │   └── RateLimitError              429 after every retry (carries retry_after)
    │   ├── ContextWindowError              the prompt does not fit the model's window
    │   ├── LLMResponseError                the provider's answer cannot be read (malformed body)
    │   └── StructuredOutputError           the answer is not valid for the schema (has raw text)
    │       └── PromptRewriteError          a rewritten prompt still breaks its variables
    ├── ToolError                           a tool call failed; its message is meant for the model
    └── StoreError                          the storage layer failed
        └── MigrationError                  the database schema cannot be brought up to date

What to do next is data, not a phrase per call site: an error may carry a :class:`Hint`, a
:class:`Fix` (the operation that helps) with its subject and the Python API's words for it.
``str(error)`` is the fact and the Python words (``no block with id 'x'; list them with
Blocks.list_blocks()``); another surface words the same :class:`Fix` its own way from one table
(the CLI: :data:`remem.cli.hints.CLI_FIXES`, ``...; list them with `remem blocks list```).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = [
    "ApprovalEditError",
    "BadRecordError",
    "BlockLimitError",
    "ConfigError",
    "ConflictError",
    "ContextWindowError",
    "EditError",
    "EmbeddingError",
    "FileConflictError",
    "FilterError",
    "Fix",
    "FrontmatterError",
    "Hint",
    "ImportFormatError",
    "IndexConfigError",
    "InvalidInputError",
    "InvalidValueError",
    "LLMConnectionError",
    "LLMError",
    "LLMResponseError",
    "LLMStatusError",
    "MessageFormatError",
    "MigrationError",
    "NamespaceError",
    "NotFoundError",
    "PathError",
    "PermissionDeniedError",
    "PromptRewriteError",
    "QuotaExceededError",
    "RateLimitError",
    "ReadOnlyError",
    "RecordFormatError",
    "RememError",
    "StoreError",
    "StructuredOutputError",
    "TemplateVariableError",
    "ToolError",
    "UnsupportedError",
    "UsageError",
]


class Fix(Enum):
    """An operation an error's :class:`Hint` points to; each surface words it its own way."""

    LIST_BLOCKS = "list the blocks"
    LIST_FILES = "list the files"
    CREATE_PROMPT = "create the prompt"
    PROMPT_HISTORY = "read the prompt's history"
    LIST_APPROVALS = "list the pending approvals"
    LIST_THREADS = "list the threads"
    LIST_CHECKPOINTS = "list a thread's checkpoints"
    MEMORY_HISTORY = "read a memory's history"


@dataclass(frozen=True, slots=True)
class Hint:
    """What to do next: ``fix`` is the operation, ``subject`` what it is about (a name, a
    path; ``""``: nothing), ``python`` the Python API's words, which ``str(error)`` ends with.
    """

    fix: Fix
    python: str
    subject: str = ""


class RememError(Exception):
    """Root of every error remem raises on purpose.

    ``hint`` (keyword-only) is what to do next as data (:class:`Hint`); the message is then
    ``fact`` and the hint's Python words, and ``fact`` alone is kept for other surfaces.
    """

    hint: Hint | None = None
    fact: str = ""

    def __init__(self, *args: object, hint: Hint | None = None) -> None:
        if hint is not None and args and isinstance(args[0], str):
            self.fact = args[0]
            args = (f"{args[0]}; {hint.python}", *args[1:])
        super().__init__(*args)
        self.hint = hint


class InvalidInputError(RememError, ValueError):
    """Input from the caller breaks a rule; the message names the field, rule and fix."""


class NamespaceError(InvalidInputError):
    """A namespace label or an item key is invalid."""


class FilterError(InvalidInputError):
    """A filter is malformed; the message names the operator and the path."""


class InvalidValueError(InvalidInputError):
    """An item value is not a JSON object of JSON-serialisable data."""


class ImportFormatError(InvalidInputError):
    """A line of a JSONL import cannot be read; the message names the line number."""


class MessageFormatError(InvalidInputError):
    """A message, or a provider's message dict, cannot be read or converted."""


class TemplateVariableError(InvalidInputError):
    """A prompt's text drops a declared template variable or uses an undeclared one."""


class NotFoundError(RememError, LookupError):
    """The thread, checkpoint, memory or history event asked for does not exist."""


class ConflictError(RememError):
    """A write was based on a version that changed meanwhile; read again and retry."""


class UsageError(RememError):
    """The API is used in a way it does not support."""


class UnsupportedError(UsageError):
    """The backend does not declare the capability this call needs."""


class ConfigError(RememError):
    """A setting (argument or environment variable) is missing or invalid; the message names it."""


class EmbeddingError(RememError):
    """An embedder could not produce vectors: its model is missing, or its service failed."""


class IndexConfigError(RememError):
    """The vector index configuration conflicts with what is already stored."""


class StoreError(RememError):
    """The storage layer failed."""


class MigrationError(StoreError):
    """The database schema cannot be brought up to date."""


class LLMError(RememError):
    """A chat model call failed."""


class LLMConnectionError(LLMError):
    """The provider could not be reached, or did not answer within the timeout."""


class LLMStatusError(LLMError):
    """The provider answered with an HTTP error status (after any retries)."""

    def __init__(self, message: str, *, status: int, body: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class RateLimitError(LLMStatusError):
    """The provider kept answering 429; ``retry_after`` is its last hint in seconds."""

    def __init__(self, message: str, *, status: int = 429, body: str = "",
                 retry_after: float | None = None) -> None:
        super().__init__(message, status=status, body=body)
        self.retry_after = retry_after


class ContextWindowError(LLMError):
    """The prompt does not fit the model's context window, even after trimming."""


class LLMResponseError(LLMError):
    """The provider answered 2xx with a body that cannot be read (not JSON, missing fields)."""


class StructuredOutputError(LLMError):
    """The model's answer could not be parsed or validated against the schema.

    ``raw`` is the model's last answer as text; ``errors`` describes what was wrong with it.
    """

    def __init__(self, message: str, *, raw: str, errors: str = "") -> None:
        super().__init__(message)
        self.raw = raw
        self.errors = errors


class ToolError(RememError):
    """A tool call was invalid or failed; the message is written for the model to read."""


class PromptRewriteError(StructuredOutputError):
    """A model's rewritten prompt broke the template variables again after one retry with the
    error; ``raw`` is its last answer and nothing was stored."""


class PathError(InvalidInputError):
    """A file path is refused: it would leave its root, or has a bad character or length."""


class EditError(InvalidInputError):
    """A file edit's old text does not occur, or occurs more than once without replace_all."""


class FrontmatterError(InvalidInputError):
    """A ``SKILL.md`` frontmatter is malformed; the message names the file, field and fix."""


class BlockLimitError(InvalidInputError):
    """A memory block edit would make its value longer than the block's character limit."""


class RecordFormatError(InvalidInputError):
    """A record a family is about to write would not read back with the family's own parser
    (nothing was written); the message names the family, the record and why."""


class ApprovalEditError(InvalidInputError):
    """An approval's arguments are refused before it runs: an edit with a key the operation
    does not take, a changed path or a value of the wrong type, or an etag that is malformed
    or unknown to the file; the message names them and the fix."""


class BadRecordError(NotFoundError):
    """A stored record does not parse: listings leave it out, and reading or changing that
    record itself raises this, naming it. ``remem doctor --repair`` moves it aside."""


class ReadOnlyError(UsageError):
    """A read-only file or memory block cannot be changed."""


class FileConflictError(ConflictError):
    """A file or block changed since the etag the writer gave was read.

    ``path`` names it, ``expected`` is the etag the writer gave and ``actual`` the current one
    (``None``: it does not exist).
    """

    def __init__(self, message: str, *, path: str, expected: str | None,
                 actual: str | None) -> None:
        super().__init__(message)
        self.path = path
        self.expected = expected
        self.actual = actual


class PermissionDeniedError(UsageError):
    """A file permission rule denies the operation (see :mod:`remem.files.permissions`)."""


class ReservedNamespaceError(PermissionDeniedError):
    """The raw store refuses a namespace under a root a family owns (see
    :mod:`remem.store.reserved`): every write there, and a read of a root whose reads a
    policy governs unless the caller is an admin. ``root`` is the reserved label, ``family``
    its owner and ``use`` the API to go through instead (an HTTP route and a CLI command)."""

    def __init__(self, message: str, *, root: str = "", family: str = "",
                 use: str = "") -> None:
        super().__init__(message)
        self.root = root
        self.family = family
        self.use = use


class QuotaExceededError(UsageError):
    """A write would leave a tenant over one of its storage quotas (nothing was written).

    ``quota`` is ``"items"`` or ``"bytes"``; ``limit`` the quota, ``usage`` the tenant's
    usage before the write, ``after`` what it would have been (``-1``: not known, as in
    :class:`remem.Client`, which reads only the server's message)."""

    def __init__(self, message: str, *, quota: str = "", limit: int = -1, usage: int = -1,
                 after: int = -1) -> None:
        super().__init__(message)
        self.quota = quota
        self.limit = limit
        self.usage = usage
        self.after = after
