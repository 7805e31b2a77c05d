"""``client.blocks`` against a real server: the same calls on :class:`remem.blocks.Blocks` in
process and on :class:`remem.blocks.remote.RemoteBlocks` over HTTP give the same values and
the same typed errors (parity), and what one writes the other reads."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from remem.blocks import Blocks
from remem.client import Client
from remem.embed import FakeEmbedder
from remem.errors import ConflictError, InvalidInputError, NotFoundError, ReadOnlyError
from remem.files import InMemoryFileBackend
from remem.server import ServerConfig, create_app
from remem.server.routes_blocks import blocks_for
from remem.server.state import Principal
from remem.testing.server import ThreadedServer


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, str, Any]]:
    app = create_app(ServerConfig(db=":memory:", embedder=FakeEmbedder(), mcp=False))
    with ThreadedServer(app) as server:
        yield server.url, app.state.remem.keys.create("acme")[0], app.state.remem
    app.state.remem.close()


_KINDS = (ConflictError, ReadOnlyError, NotFoundError, InvalidInputError, Exception)


def _flow(blocks: Any) -> list[object]:
    """One script of block calls; each outcome is a comparable value or an error type."""
    out: list[object] = []

    def step(fn: Any) -> None:
        try:
            value = fn()
        except Exception as exc:  # the client raises the base classes of the wire's kinds
            out.append(next(c.__name__ for c in _KINDS if isinstance(exc, c)))
            return
        if hasattr(value, "spec"):
            value = (value.id, value.spec)
        elif isinstance(value, list):
            value = [(v.id, v.spec) if hasattr(v, "spec") else getattr(v, "op", v)
                     for v in value]
        elif hasattr(value, "text"):
            value = (value.text, value.tokens, [o.source for o in value.overflow])
        out.append(value)

    step(lambda: blocks.create("human-1", label="human", value="Name: Ann", limit=40))
    step(lambda: blocks.create("persona-1", label="persona", value="A guide.",
                               read_only=True))
    step(lambda: blocks.create("human-1", label="human"))
    step(lambda: blocks.attach("agent-a", "human-1"))
    step(lambda: blocks.attach("agent-b", "human-1"))
    step(lambda: blocks.attach("agent-a", "persona-1"))
    step(lambda: blocks.append("agent-a", "human", "Likes tea."))
    step(lambda: blocks.blocks_of("agent-b"))
    step(lambda: blocks.replace("agent-b", "human", "tea", "green tea"))
    step(lambda: blocks.replace("agent-b", "human", "coffee", "x"))
    step(lambda: blocks.append("agent-a", "human", "x" * 60))
    step(lambda: blocks.rethink("agent-a", "persona", "rogue"))
    step(lambda: blocks.append("agent-a", "nope", "x"))
    step(lambda: blocks.update("persona-1", value="A careful guide."))
    step(lambda: blocks.update("persona-1", value="stale", etag="0" * 20))
    step(lambda: blocks.render("agent-a"))
    step(lambda: blocks.render("agent-a", budget=20))
    step(lambda: blocks.attached("agent-a"))
    step(lambda: blocks.detach("agent-a", "human-1"))
    step(lambda: blocks.attached("agent-a"))
    step(lambda: blocks.history("human-1"))
    step(lambda: blocks.list_blocks())
    step(lambda: blocks.delete("persona-1"))
    step(lambda: blocks.get("persona-1"))
    step(lambda: blocks.create("bad id", label="x"))
    return out


def test_remote_blocks_match_the_python_api(served: tuple[str, str, Any]) -> None:
    url, key, _ = served
    local = _flow(Blocks(InMemoryFileBackend()))
    with Client(url, key) as client:
        remote = _flow(client.blocks)
    assert remote == local
    errors = [o for o in local if isinstance(o, str)]
    assert errors == ["ConflictError", "InvalidInputError", "InvalidInputError",
                      "ReadOnlyError", "NotFoundError", "ConflictError", "NotFoundError",
                      "InvalidInputError"]


def test_what_the_client_writes_the_server_side_api_reads(served: tuple[str, str, Any]) -> None:
    url, key, state = served
    with Client(url, key) as client:
        client.blocks.create("shared-1", label="team", value="Ship on Friday.")
        client.blocks.attach("agent-x", "shared-1")
        client.blocks.attach("agent-y", "shared-1")
        client.blocks.append("agent-x", "team", "Demo on Thursday.")
    here = blocks_for(state.store_for(Principal("acme")))
    assert here.by_label("agent-y", "team").value == "Ship on Friday.\nDemo on Thursday."


class _AsyncAsSync:
    """``client.blocks``' async twins called like the sync methods (each on the test's
    loop), so the one script above drives them too."""

    def __init__(self, blocks: Any, runner: Any) -> None:
        self.blocks = blocks
        self.runner = runner

    def __getattr__(self, name: str) -> Any:
        twin = getattr(self.blocks, f"a{name}")
        return lambda *args, **kwargs: self.runner.run(twin(*args, **kwargs))


def test_async_blocks_answer_like_the_sync_ones(served: tuple[str, str, Any]) -> None:
    import asyncio
    import inspect

    from remem.blocks.remote import RemoteBlocks

    # every public sync method has an async twin with the same parameters
    for name, method in inspect.getmembers(RemoteBlocks, inspect.isfunction):
        is_twin = name.startswith("a") and hasattr(RemoteBlocks, name[1:])
        if name.startswith("_") or is_twin:
            continue
        twin = getattr(RemoteBlocks, f"a{name}")
        assert inspect.iscoroutinefunction(twin), name
        assert inspect.signature(twin).parameters == inspect.signature(method).parameters

    # a tenant of its own, so the script starts from nothing as the sync one did
    url, _, state = served
    key = state.keys.create("acme-async")[0]
    with asyncio.Runner() as runner:
        client = Client(url, key)
        try:
            remote = _flow(_AsyncAsSync(client.blocks, runner))
        finally:
            runner.run(client.aclose())
    assert remote == _flow(Blocks(InMemoryFileBackend()))
