"""``GET /v1/usage``: the caller's tenant's chat model calls and tokens per UTC day (with
totals per operation and model), and its memories written, changed and removed per day.

Usage rows are recorded as the server's and its workers' chat model calls happen
(:mod:`remem.usage`); memory counts come from the history the memory layer keeps. A key
sees its own tenant's figures only.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi import Request as HttpRequest
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from remem.errors import InvalidInputError
from remem.server.auth import Reader, server_state
from remem.server.errors import ERROR_RESPONSES, error_response
from remem.server.state import Principal, ServerState
from remem.usage import (
    ActivityReport,
    DayWindow,
    UsageReport,
    day_window,
    parse_day,
)

__all__ = ["TenantUsageOut", "query_window", "router", "tenant_usage", "usage_out"]

router = APIRouter(prefix="/v1", tags=["usage"], responses=ERROR_RESPONSES)

_DATE = "a UTC day, YYYY-MM-DD"


class Totals(BaseModel):
    """Chat model calls and tokens."""

    calls: int
    input_tokens: int
    output_tokens: int


class DayTotals(Totals):
    """One UTC day's calls and tokens (zeros on a day without calls)."""

    day: str


class UsageRowOut(Totals):
    """One day, operation label and model."""

    day: str
    operation: str
    model: str


class DayActivityOut(BaseModel):
    """Memories written (added), changed (updated, restored) and removed (invalidated,
    deleted) on one UTC day."""

    day: str
    written: int
    changed: int
    removed: int


class ActivityOut(BaseModel):
    """Memory changes per day; ``complete`` is false when the window held more events than
    were read (the days then count the newest ones)."""

    events: int
    complete: bool
    days: list[DayActivityOut]


class TenantUsageOut(BaseModel):
    """The tenant's usage from ``since`` to ``until`` (UTC days, both included)."""

    since: str
    until: str
    total: Totals
    days: list[DayTotals] = Field(description="every day of the window, oldest first")
    by_operation: dict[str, Totals] = Field(description="extract, summarize, reconcile...")
    by_model: dict[str, Totals]
    rows: list[UsageRowOut] = Field(description="per day, operation and model")
    memories: ActivityOut


def tenant_usage(state: ServerState, who: Principal,
                 window: DayWindow) -> tuple[UsageReport, ActivityReport]:
    """``who``'s tenant's usage and memory changes over ``window`` (blocking: call it in
    a worker thread)."""
    recorder = state.usage()
    return (recorder.report(window, tenant=who.tenant),
            recorder.activity(window, tenant=who.tenant))


def usage_out(report: UsageReport, activity: ActivityReport) -> TenantUsageOut:
    """The response body of both reports."""
    body = report.to_dict()
    body["memories"] = activity.to_dict()
    del body["memories"]["since"], body["memories"]["until"]
    return TenantUsageOut.model_validate(body)


def query_window(since: str | None, until: str | None) -> DayWindow | JSONResponse:
    """The window ``since`` and ``until`` ask for, or the 422 naming the query parameter
    that breaks a rule."""
    try:
        for name, value in (("since", since), ("until", until)):
            field = f"query.{name}"
            if value is not None:
                parse_day(name, value)
        field = "query.since"
        return day_window(since, until)
    except InvalidInputError as exc:
        return error_response(422, "invalid_input", str(exc), field=field)


@router.get("/usage", response_model=TenantUsageOut, summary="Calls, tokens and memory changes "
                                                         "per day")
async def get_usage(
    who: Reader, http: HttpRequest,
    since: Annotated[str | None, Query(max_length=32, description=f"first day ({_DATE}); "
                                       "default: 29 days before until")] = None,
    until: Annotated[str | None, Query(max_length=32, description=f"last day ({_DATE}); "
                                       "default: today")] = None,
) -> TenantUsageOut | JSONResponse:
    """The tenant's chat model calls and input/output tokens per UTC day, per operation
    and per model, and its memories written, changed and removed per day; at most 367
    days (422 naming ``since`` or ``until`` otherwise)."""
    window = query_window(since, until)
    if isinstance(window, JSONResponse):
        return window
    state = server_state(http)
    report, activity = await state.run(lambda: tenant_usage(state, who, window))
    return usage_out(report, activity)
