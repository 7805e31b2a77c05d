"""The one error tree of remem.

Every error remem raises on purpose derives from :class:`RememError`. Errors caused by bad
input also derive from :class:`ValueError`, so code that already catches ``ValueError`` keeps
working. Messages name the offending value, the rule it broke and how to fix it::

    RememError
    ├── InvalidInputError (ValueError)      bad input from a caller
    │   ├── NamespaceError                  a namespace label or key breaks a rule
    │   ├── FilterError                     a filter is malformed (names operator and path)
    │   ├── InvalidValueError               an item value is not a JSON object
    │   └── ImportFormatError               a JSONL line cannot be imported
    ├── UsageError                          the API is used in a way it does not support
    │   └── UnsupportedError                a backend lacks a declared capability
    ├── ConfigError                         a setting is missing or invalid (names the setting)
    ├── IndexConfigError                    vectors from another embedder or dimension
    ├── EmbeddingError                      an embedder failed (model missing, HTTP error)
    └── StoreError                          the storage layer failed
        └── MigrationError                  the database schema cannot be brought up to date
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "EmbeddingError",
    "FilterError",
    "ImportFormatError",
    "IndexConfigError",
    "InvalidInputError",
    "InvalidValueError",
    "MigrationError",
    "NamespaceError",
    "RememError",
    "StoreError",
    "UnsupportedError",
    "UsageError",
]


class RememError(Exception):
    """Root of every error remem raises on purpose."""


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
