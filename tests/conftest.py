"""Shared fixtures: a controllable clock."""

from __future__ import annotations

import pytest

from remem.testing import block_remote_requests

# no test may reach a real LLM or embedding provider: remem's HTTP clients refuse non-loopback hosts
block_remote_requests()

pytest_plugins = ["tests.pg_fixtures"]  # postgres_dsn, pg_database (PostgreSQL fixtures)


class FakeClock:
    """A clock that only moves when told to (seconds since the epoch)."""

    def __init__(self, start: float = 1_750_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()
