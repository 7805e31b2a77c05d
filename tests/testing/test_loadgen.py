"""The load generator's two modes against a real server: a closed loop sends as fast as it
is answered; a paced run keeps to its schedule."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from remem.embed import FakeEmbedder
from remem.server import ServerConfig, create_app
from remem.testing.loadgen import run_load, verify_writes
from remem.testing.server import ThreadedServer


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, str]]:
    app = create_app(ServerConfig(db=":memory:", embedder=FakeEmbedder(), mcp=False))
    token = app.state.remem.keys.create("load")[0]
    with ThreadedServer(app) as server:
        yield server.url, token
    app.state.remem.close()


def test_paced_run_keeps_to_its_schedule(served: tuple[str, str]) -> None:
    url, token = served
    paced = asyncio.run(run_load(url, token, clients=4, duration=1.5, rate=20))
    # due every 0.2 s per client over 1.5 s: at most 8 requests each (fewer only if the
    # server falls behind, as a busy test machine may)
    assert 8 <= paced.requests <= 4 * 8
    assert not paced.errors
    assert verify_writes(url, token, paced.acknowledged) == []
    # the same seed: its first adds repeat texts already stored, which are not acknowledged
    closed = asyncio.run(run_load(url, token, clients=4, duration=1.5))
    assert closed.requests > 2 * paced.requests  # the closed loop is not paced


@pytest.mark.parametrize("rate", [0, -5.0])
def test_rate_must_be_positive(served: tuple[str, str], rate: float) -> None:
    with pytest.raises(ValueError, match="rate must be a positive number"):
        asyncio.run(run_load(served[0], served[1], rate=rate))
