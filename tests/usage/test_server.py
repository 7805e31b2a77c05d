"""Usage on the server: calls the server's model makes for a tenant are recorded for it and
shown by ``GET /v1/usage`` and the dashboard's plots, never to another tenant; bad dates
are typed 422s; ``remem worker``'s tenant memories record through the same wrapper."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from remem.api import Memory
from remem.background.access import recorder_of
from remem.background.queue import JobQueue
from remem.cli.worker import MemoryHandlers
from remem.llm import ScriptedModel
from remem.llm.base import ChatRequest, Usage
from remem.messages import Message
from remem.usage import RecordingChatModel, day_of, day_window
from tests.ui_support import server

EXTRACTED = {"inserts": [{"memory": {"content": "Drinks tea at five", "kind": "preference"}}]}


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _count(html: str, element_id: str) -> int:
    found = re.search(rf'id="{element_id}" data-count="(\d+)"', html)
    assert found is not None, element_id
    return int(found.group(1))


def _flush_counts(memory: Memory) -> None:
    """Memory changes are counted by the store's observer thread within ~50 ms; flush it
    so the test reads them now."""
    observer = recorder_of(memory.store)
    assert observer is not None
    observer.flush()


def test_a_tenants_calls_are_its_own_on_the_route_and_the_dashboard() -> None:
    llm = ScriptedModel(default=EXTRACTED, model="scripted-x")
    with server(llm=llm) as srv:
        acme, beta = srv.key("acme"), srv.key("beta")
        api = srv.browser()
        r = api.post("/v1/memories", headers=_auth(acme),
                     json={"messages": "I drink tea at five", "user_id": "u", "infer": True})
        assert r.status_code == 200, r.text
        _flush_counts(srv.memory("acme"))
        spent = llm.usage.by_operation()
        assert spent and sum(u.calls for u in spent.values()) == len(llm.requests)

        body = api.get("/v1/usage", headers=_auth(acme)).json()
        assert {op: Usage(**t) for op, t in body["by_operation"].items()} == spent
        assert list(body["by_model"]) == ["scripted-x"]
        today = body["days"][-1]
        assert today["day"] == day_of(time.time())
        assert today["calls"] == len(llm.requests)
        assert body["memories"]["days"][-1]["written"] == 1
        assert len(body["days"]) == 30 and body["since"] == day_window().since.isoformat()

        other = api.get("/v1/usage", headers=_auth(beta)).json()
        assert other["total"] == {"calls": 0, "input_tokens": 0, "output_tokens": 0}
        assert other["rows"] == [] and other["memories"]["events"] == 0

        page = srv.logged_in("acme").get("/ui/dashboard", params={"days": "7"})
        assert page.status_code == 200
        assert _count(page.text, "usage-calls") == len(llm.requests)
        assert _count(page.text, "usage-memory-events") == 1
        # four plots (memories added, model calls, tokens, memory changes), a table row a day
        assert page.text.count('<tr data-day="') == 4 * 7
        assert 'aria-labelledby="plot-calls-title"' in page.text
        assert re.search(r'<rect class="bar" [^>]*><title>\d{4}-\d\d-\d\d: \d+ '
                         + re.escape(next(iter(spent))), page.text)
        assert 'data-model="scripted-x"' in page.text

        theirs = srv.logged_in("beta").get("/ui/dashboard").text
        assert _count(theirs, "usage-calls") == 0
        assert _count(theirs, "usage-memory-events") == 0
        assert "scripted-x" not in theirs and 'class="bar"' not in theirs
        assert 'id="usage-empty"' in theirs


def test_bad_dates_are_422s_naming_the_parameter() -> None:
    with server() as srv:
        api, key = srv.browser(), _auth(srv.key("acme"))
        cases: list[tuple[dict[str, Any], str, str]] = [
            ({"since": "2026-02-30"}, "query.since", "since must be a UTC day"),
            ({"until": "tomorrow"}, "query.until", "until must be a UTC day"),
            ({"since": "2026-03-02", "until": "2026-03-01"}, "query.since", "is after until"),
            ({"since": "2020-01-01", "until": "2026-01-01"}, "query.since", "more than 367"),
        ]
        for params, field, message in cases:
            r = api.get("/v1/usage", params=params, headers=key)
            assert r.status_code == 422, (params, r.text)
            assert r.json()["error"] == "invalid_input" and r.json()["field"] == field
            assert message in r.json()["message"]
        ok = api.get("/v1/usage", params={"since": "2026-01-01", "until": "2026-01-03"},
                     headers=key).json()
        assert [d["day"] for d in ok["days"]] == ["2026-01-01", "2026-01-02", "2026-01-03"]
        page = srv.logged_in("acme").get("/ui/dashboard", params={"days": "0"})
        assert page.status_code == 422 and "days must be a whole number" in page.text


def test_the_workers_tenant_memories_record_their_calls(tmp_path: Path) -> None:
    llm = ScriptedModel(default="ok")
    memory = Memory.open(str(tmp_path / "w.db"), embedder=False, llm=llm)
    queue = JobQueue.beside(memory.store)
    handlers = MemoryHandlers(memory)
    handlers.handlers(queue)
    model = handlers.memory_for("acme").llm
    assert isinstance(model, RecordingChatModel) and model.tenant == "acme"
    spent = model.complete(ChatRequest((Message.user("hi"),), operation="consolidate")).usage
    assert handlers.usage is not None
    report = handlers.usage.report(day_window(), tenant="acme")
    assert report.by_operation() == {"consolidate": spent}
    queue.close()
    memory.close()


def test_operation_and_model_names_render_as_text() -> None:
    with server() as srv:
        srv.state.usage().record("acme", "<script>alert(1)</script>", "<img src=x onerror=1>",
                                 Usage(1, 2, 3))
        page = srv.logged_in("acme").get("/ui/dashboard").text
        assert "<script>alert(1)</script>" not in page and "<img src=x" not in page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
        assert "&lt;img src=x onerror=1&gt;" in page
