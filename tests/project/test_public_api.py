"""The public surface is what we mean it to be."""

from __future__ import annotations

import remem
import remem.errors
import remem.store


def test_top_level_all() -> None:
    assert sorted(remem.__all__) == sorted([
        "AnthropicChatModel", "BaseStore", "ChatModel", "Client", "ConfigError", "ConflictError",
        "Embedder", "FakeEmbedder", "FilterError", "InMemoryStore", "IndexConfig",
        "IndexConfigError", "InvalidInputError", "Item", "LLMError", "Memory", "MemoryTools",
        "Message", "NamespaceError", "NotFoundError", "OpenAIChatModel", "RememError",
        "SQLiteStore", "ScriptedModel", "SearchItem", "StructuredOutputError", "SummaryPolicy",
        "TTLConfig", "Thread", "ThreadStore", "ToolCall", "ToolError", "UnsupportedError",
        "UsageError", "__version__", "model_from_env", "open_store", "trim_messages",
        # what an agent sees (issues 18 and 19): context, core memory blocks, files
        "Blocks", "CompositeBackend", "ContextRequest", "ContextResult", "FileBackend",
        "InMemoryFileBackend", "LocalFileBackend", "StoreFileBackend",
    ])
    for name in remem.__all__:
        assert hasattr(remem, name), name


def test_subpackage_all_is_importable() -> None:
    import importlib

    for package in ("remem.store", "remem.llm", "remem.messages", "remem.threads",
                    "remem.tools", "remem.memory", "remem.testing", "remem.api", "remem.client",
                    "remem.requests", "remem.memory.requests", "remem.memory.results",
                    "remem.memory.wire", "remem.memory.namespaces", "remem.context",
                    "remem.files", "remem.blocks", "remem.files.permissions"):
        module = importlib.import_module(package)
        for name in getattr(module, "__all__", ()):
            assert hasattr(module, name), f"{package}.{name}"


def test_import_remem_stays_light() -> None:
    import subprocess
    import sys

    code = ("import sys, remem; heavy = [m for m in ('fastapi', 'uvicorn', 'mcp', 'psycopg', "
            "'tiktoken', 'tokenizers') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


def test_error_tree() -> None:
    errors = remem.errors
    for name in errors.__all__:
        cls = getattr(errors, name)
        if name in ("Fix", "Hint"):  # what an error says to do next, carried as data
            continue
        assert issubclass(cls, errors.RememError)
    for bad_input in (errors.NamespaceError, errors.FilterError, errors.InvalidValueError,
                      errors.ImportFormatError):
        assert issubclass(bad_input, ValueError)
    assert issubclass(errors.UnsupportedError, errors.UsageError)
    assert not issubclass(errors.UsageError, ValueError)
    for name in errors.__all__:  # the tree in the docstring names every class
        assert name in (errors.__doc__ or "")


def test_open_store_picks_backends(tmp_path: object) -> None:
    assert isinstance(remem.open_store("memory://"), remem.InMemoryStore)
    assert isinstance(remem.open_store(":memory:"), remem.SQLiteStore)


def test_every_friendly_method_has_an_async_twin_with_the_same_signature() -> None:
    import inspect

    from remem.store import BaseStore

    for name in ["get", "put", "delete", "search", "list_namespaces", "batch", "sweep"]:
        sync, twin = getattr(BaseStore, name), getattr(BaseStore, "a" + name)
        assert inspect.iscoroutinefunction(twin), name
        assert inspect.signature(sync).parameters == inspect.signature(twin).parameters, name


def test_namespace_policy_lives_in_one_module() -> None:
    import remem.api
    import remem.memory.namespaces as namespaces
    import remem.memory.records as records

    assert {"scope_namespace", "check_user_namespace", "resolve_scope"} <= set(
        namespaces.__all__)
    for module in (remem.api, records):  # no second copy to drift
        assert not hasattr(module, "scope_namespace"), module.__name__
    assert not hasattr(records, "check_user_namespace")
