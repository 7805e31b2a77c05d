"""The JSON shape of a job (:class:`JobOut`), for the routes that answer one and the operation
rows whose result is a queued job (``POST /v1/prompts/{name}/optimize/submit``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from remem.background.jobs import JobStatus

__all__ = ["JobOut"]


class JobOut(BaseModel):
    """One job (times in ISO 8601)."""

    id: str
    kind: str
    status: JobStatus
    payload: dict[str, Any]
    attempts: int
    max_attempts: int
    idempotency_key: str | None
    debounce_key: str | None
    thread_id: str | None
    claimed_by: str | None
    lease_until: str | None
    heartbeat_at: str | None
    run_after: str | None
    result: dict[str, Any] | None
    error: str | None
    created_at: str | None
    updated_at: str | None
    finished_at: str | None

    @classmethod
    def of(cls, result: Mapping[str, Any]) -> JobOut:
        """The model of a job's JSON (``Job.to_dict()``: what a submission answers in
        Python too)."""
        return cls.model_validate(result)

    def value(self) -> dict[str, Any]:
        """The job's JSON."""
        return self.model_dump(mode="json")
