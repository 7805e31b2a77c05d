"""`remem serve`'s options reach every worker's ServerConfig (through the settings each
worker reads from the environment), and its --no-auth loopback check is the server's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from remem.cli import cli
from remem.cli.serve import _SETTINGS_VAR, app_from_env


def test_rate_limit_and_ready_timeout_reach_the_workers_config(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = {"db": str(tmp_path / "s.db"), "auth": True, "max_body_bytes": 1 << 20,
                "embedder": "fake", "mcp": False, "host": "127.0.0.1", "store_threads": 2,
                "rate_limit": 12.5, "rate_burst": 3.0, "ready_timeout": 1.5}
    monkeypatch.setenv(_SETTINGS_VAR, json.dumps(settings))
    app = app_from_env()
    try:
        config = app.state.remem.config
        assert (config.rate_limit, config.rate_burst, config.ready_timeout) == (12.5, 3.0, 1.5)
    finally:
        app.state.remem.close()


@pytest.mark.parametrize("host", ["10.0.0.1", "0.0.0.0", "example.com"])
def test_no_auth_refuses_a_host_the_server_does_not_count_as_loopback(host: str) -> None:
    result = CliRunner().invoke(cli, ["serve", "--no-auth", "--host", host, "--db", ":memory:",
                                      "--embedder", "fake"])
    assert result.exit_code == 2 and "binds to loopback only" in result.output


def test_rate_limit_must_be_positive() -> None:
    result = CliRunner().invoke(cli, ["serve", "--rate-limit", "0", "--db", ":memory:"])
    assert result.exit_code == 2 and "--rate-limit" in result.output
