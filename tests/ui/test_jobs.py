"""The jobs page: depth by status and failures, a job's payload and error, retry (CSRF,
writing keys only), the tenant's jobs only."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from remem.background import NewJob
from tests.ui_support import Server, csrf_of, server


@pytest.fixture(scope="module")
def srv() -> Iterator[Server]:
    with server() as running:
        queue = running.state.jobs()
        queue.enqueue(NewJob("memory.extract", {"note": "waiting"}, tenant="acme"))
        failing = queue.enqueue(NewJob("memory.extract", {"note": "doomed <b>x</b>"},
                                       tenant="acme", max_attempts=1))
        claimed = queue.claim_one(failing.id, "w1")
        assert claimed is not None
        queue.fail(failing.id, "w1", "model said <script>alert(1)</script>", permanent=True)
        queue.enqueue(NewJob("memory.extract", {"note": "other tenant"}, tenant="zeta"))
        running.state.failed_job = failing.id  # type: ignore[attr-defined]
        yield running


def test_jobs_page_shows_depth_failures_and_the_tenants_jobs_only(srv: Server) -> None:
    page = srv.logged_in("acme").get("/ui/jobs")
    assert page.status_code == 200
    assert 'id="jobs-depth" data-count="1"' in page.text
    assert 'id="jobs-failures" data-count="1"' in page.text
    assert re.findall(r'class="job-row" data-test="job" data-status="(\w+)"', page.text) == \
        ["failed", "queued"]
    assert "other tenant" not in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text and "<script>alert" not in page.text
    failed = srv.logged_in("acme").get("/ui/jobs", params={"status": "failed"})
    assert len(re.findall(r'class="job-row"', failed.text)) == 1
    assert srv.logged_in("acme").get("/ui/jobs", params={"status": "bogus"}).status_code == 422


def test_retry_a_failed_job_needs_csrf_and_a_writing_key(srv: Server) -> None:
    job_id = srv.state.failed_job  # type: ignore[attr-defined]
    reader = srv.logged_in("acme", read_only=True)
    page = reader.get(f"/ui/jobs/{job_id}")
    assert page.status_code == 200 and 'id="retry-form"' not in page.text
    assert "doomed &lt;b&gt;x&lt;/b&gt;" in page.text
    assert reader.post(f"/ui/jobs/{job_id}/retry",
                       data={"csrf_token": csrf_of(page.text)}).status_code == 403
    writer = srv.logged_in("acme")
    page = writer.get(f"/ui/jobs/{job_id}")
    assert 'id="retry-form"' in page.text
    assert writer.post(f"/ui/jobs/{job_id}/retry", data={}).status_code == 403
    foreign = srv.logged_in("zeta")
    foreign_page = foreign.get("/ui/jobs")
    assert foreign.get(f"/ui/jobs/{job_id}").status_code == 404
    assert foreign.post(f"/ui/jobs/{job_id}/retry",
                        data={"csrf_token": csrf_of(foreign_page.text)}).status_code == 404
    assert srv.state.jobs().get(job_id).status == "failed"
    done = writer.post(f"/ui/jobs/{job_id}/retry", data={"csrf_token": csrf_of(page.text)},
                       follow_redirects=False)
    assert done.status_code == 303
    assert srv.state.jobs().get(job_id).status == "queued"
