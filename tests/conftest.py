"""Shared fixtures: a controllable clock. Marks the suites that start a browser or a Jupyter
kernel as ``slow`` (``make test-fast`` leaves them out)."""

from __future__ import annotations

from pathlib import Path

import pytest

from remem.testing import block_remote_requests

# no test may reach a real LLM or embedding provider: remem's HTTP clients refuse non-loopback hosts
block_remote_requests()

pytest_plugins = ["tests.pg_fixtures"]  # postgres_dsn, pg_database (PostgreSQL fixtures)

#: folders whose every test starts Chromium or a Jupyter kernel: seconds each
SLOW_FOLDERS = tuple(Path(__file__).parent / name for name in ("browser", "notebooks"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if any(Path(item.path).is_relative_to(folder) for folder in SLOW_FOLDERS):
            item.add_marker(pytest.mark.slow)


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
