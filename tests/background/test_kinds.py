"""The registry of job kinds: kinds registered by loaders that run when the kinds are read."""

from __future__ import annotations

import pytest

from remem.background import kinds
from remem.background.kinds import handlers_for, job_kinds, register_job_kind, register_kind_loader


@pytest.fixture(autouse=True)
def _own_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kinds, "_KINDS", {})
    monkeypatch.setattr(kinds, "_LOADERS", [])


def test_a_loader_runs_once_when_the_kinds_are_first_read() -> None:
    calls: list[str] = []

    def load() -> None:
        calls.append("load")
        register_job_kind("test.kind", lambda memory_for, queue: lambda job: {})

    register_kind_loader(load)
    assert calls == []  # registering runs nothing
    assert job_kinds() == ("test.kind",)
    assert list(handlers_for(lambda tenant: None)) == ["test.kind"]  # type: ignore[arg-type]
    assert calls == ["load"]


def test_a_failed_loader_fails_every_read_until_it_loads() -> None:
    attempts: list[int] = []

    def load() -> None:
        attempts.append(1)
        if len(attempts) == 1:
            raise ImportError("family missing")
        register_job_kind("test.kind", lambda memory_for, queue: lambda job: {})

    register_kind_loader(load)
    with pytest.raises(ImportError, match="family missing"):
        job_kinds()
    assert job_kinds() == ("test.kind",)  # tried again, not skipped
    assert len(attempts) == 2


def test_a_loader_may_read_the_kinds() -> None:
    def load() -> None:
        register_job_kind("test.kind", lambda memory_for, queue: lambda job: {})
        assert job_kinds() == ("test.kind",)  # reentrant, not a deadlock

    register_kind_loader(load)
    assert job_kinds() == ("test.kind",)
