"""Tenant isolation, route by route: a key for tenant B can never read, list, search, update,
delete or detect tenant A's data. The tenant comes from the key alone."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient

from remem.embed import FakeEmbedder
from remem.server import ServerConfig, create_app
from remem.server.ratelimit import RateLimiter

NS = ["shared", "notes"]


@dataclass
class World:
    client: TestClient
    a: dict[str, str]
    b: dict[str, str]
    memory_id: str
    event_id: str
    checkpoint_id: str

    def a_state(self) -> Any:
        """Everything tenant A can see, to compare before and after B's attempt."""
        c = self.client
        return (c.get("/v1/store/items", params={"namespace": NS, "key": "k"},
                      headers=self.a).json(),
                c.post("/v1/store/search", json={}, headers=self.a).json(),
                c.get(f"/v1/memories/{self.memory_id}", headers=self.a).json(),
                c.get(f"/v1/memories/{self.memory_id}/history", headers=self.a).json(),
                c.get("/v1/threads/t1/messages", headers=self.a).json(),
                c.get("/v1/threads/t1/checkpoints", headers=self.a).json())


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    directory = tempfile.mkdtemp(prefix="remem-isolation-")
    with open_world(ServerConfig(db=os.path.join(directory, "iso.db"), embedder=FakeEmbedder(),
                                 mcp=False, key_cache_seconds=0)) as found:
        yield found
    shutil.rmtree(directory, ignore_errors=True)


@contextlib.contextmanager
def open_world(config: ServerConfig) -> Iterator[World]:
    """A server on ``config`` where tenant ``alpha`` has data in every family and ``beta``
    has a key and nothing else (tests/shards runs the matrix with the two on two shards)."""
    app = create_app(config)
    # the matrix sends hundreds of bad keys from one address to see each 401: the limit on
    # failed authentications (a 429 past 10, tests/adversarial/test_auth_failures.py) is lifted
    app.state.remem.auth_failures = RateLimiter(1e9, burst=1e9)
    with TestClient(app) as client:
        keys = app.state.remem.keys
        a = {"Authorization": f"Bearer {keys.create('alpha')[0]}"}
        b = {"Authorization": f"Bearer {keys.create('beta')[0]}"}
        r = client.put("/v1/store/items", headers=a, json={
            "namespace": NS, "key": "k", "value": {"text": "alpha secret tea"}})
        assert r.status_code == 200
        r = client.post("/v1/memories", headers=a, json={
            "messages": "alpha likes oolong tea", "user_id": "u1", "infer": False})
        assert r.status_code == 200, r.text
        change = r.json()["changes"][0]
        r = client.post("/v1/threads", headers=a, json={
            "thread_id": "t1", "metadata": {"user_id": "u1"},
            "messages": [{"role": "user", "content": "alpha thread secret"}]})
        assert r.status_code == 200, r.text
        head = r.json()["head"]["id"]
        for path, body in (("/v1/prompts", {"name": "alpha_prompt", "text": "alpha secret {x}"}),
                           ("/v1/episodes", {"situation": "alpha secret situation",
                                             "action": "alpha act"})):
            assert client.post(path, headers=a, json=body).status_code == 200
        assert client.post("/v1/files/write", headers=a, json={
            "path": "/notes.md", "content": "alpha secret"}).status_code == 200
        _park_alpha_approval(app.state.remem)
        assert client.post("/v1/blocks", json={"id": "alpha-block", "label": "human",
                                               "value": "alpha secret"}, headers=a
                           ).status_code == 201
        assert client.put("/v1/agents/a1/blocks/alpha-block", headers=a).status_code == 200
        yield World(client, a, b, change["memory"]["id"], change["event_id"], head)
    app.state.remem.close()


def _not_found_like_missing(world: World, method: str, path: str, real_id: str,
                            **kwargs: Any) -> None:
    """B gets the same answer for A's id as for an id that exists nowhere."""
    c = world.client
    fake_id = real_id[:-4] + ("0000" if not real_id.endswith("0000") else "1111")
    got = c.request(method, path.format(id=real_id), headers=world.b, **kwargs)
    missing = c.request(method, path.format(id=fake_id), headers=world.b, **kwargs)
    assert got.status_code == missing.status_code == 404
    assert got.json()["message"].replace(real_id, "ID") == \
        missing.json()["message"].replace(fake_id, "ID")


def _store_get(w: World) -> None:
    r = w.client.get("/v1/store/items", params={"namespace": NS, "key": "k"}, headers=w.b)
    assert r.status_code == 404
    r2 = w.client.get("/v1/store/items", params={"namespace": NS, "key": "nope"}, headers=w.b)
    assert r.json()["message"].replace("'k'", "K") == r2.json()["message"].replace("'nope'", "K")


def _store_get_spelled_prefix(w: World) -> None:
    # naming A's full namespace only reaches B's own tenants/beta/tenants/alpha/...
    r = w.client.get("/v1/store/items", headers=w.b,
                     params={"namespace": ["tenants", "alpha", *NS], "key": "k"})
    assert r.status_code == 404


def _store_search(w: World) -> None:
    for body in ({}, {"query": "alpha secret"}, {"namespace_prefix": NS},
                 {"filter": {"text": "alpha secret tea"}},
                 {"namespace_prefix": ["tenants", "alpha"]}):
        r = w.client.post("/v1/store/search", json=body, headers=w.b)
        assert r.status_code == 200 and r.json() == {"items": []}, body


def _store_count(w: World) -> None:
    # A's items exist (see a_state); B counts none of them however it spells the prefix
    for body in ({}, {"namespace_prefix": NS}, {"namespace_prefix": ["tenants", "alpha"]},
                 {"namespace_prefix": ["tenants", "alpha", *NS]},
                 {"filter": {"text": "alpha secret tea"}}):
        r = w.client.post("/v1/store/count", json=body, headers=w.b)
        assert r.status_code == 200 and r.json() == {"count": 0}, (body, r.text)
    mine = w.client.post("/v1/store/count", json={"namespace_prefix": NS}, headers=w.a)
    assert mine.status_code == 200 and mine.json()["count"] >= 1  # the probe can see a count


def _store_namespaces(w: World) -> None:
    for params in ({}, {"prefix": ["shared"]}, {"prefix": ["*"]}, {"suffix": ["notes"]},
                   {"suffix": ["alpha", "shared", "notes"]}, {"max_depth": 1}):
        r = w.client.get("/v1/store/namespaces", params=params, headers=w.b)
        assert r.status_code == 200 and r.json() == {"namespaces": []}, params


def _store_put(w: World) -> None:
    r = w.client.put("/v1/store/items", headers=w.b, json={
        "namespace": NS, "key": "k", "value": {"text": "beta overwrite"}})
    assert r.status_code == 200
    mine = w.client.get("/v1/store/items", params={"namespace": NS, "key": "k"}, headers=w.b)
    assert mine.json()["value"] == {"text": "beta overwrite"}
    w.client.delete("/v1/store/items", params={"namespace": NS, "key": "k"}, headers=w.b)


def _store_delete(w: World) -> None:
    r = w.client.delete("/v1/store/items", params={"namespace": NS, "key": "k"}, headers=w.b)
    assert r.status_code == 200  # deleting a missing item is not an error: nothing to detect


def _memory_search(w: World) -> None:
    for body in ({"query": "oolong", "user_id": "u1"}, {"query": "oolong"}, {},
                 {"namespace": ["memories", "user", "u1"]}, {"include_invalid": True}):
        r = w.client.post("/v1/memories/search", json=body, headers=w.b)
        assert r.status_code == 200 and r.json()["hits"] == [], body


def _memory_get(w: World) -> None:
    _not_found_like_missing(w, "GET", "/v1/memories/{id}", w.memory_id)


def _memory_update(w: World) -> None:
    _not_found_like_missing(w, "PATCH", "/v1/memories/{id}", w.memory_id,
                            json={"content": "beta was here"})


def _memory_delete(w: World) -> None:
    _not_found_like_missing(w, "DELETE", "/v1/memories/{id}", w.memory_id)
    _not_found_like_missing(w, "DELETE", "/v1/memories/{id}?hard=true", w.memory_id)


def _memory_history(w: World) -> None:
    _not_found_like_missing(w, "GET", "/v1/memories/{id}/history", w.memory_id)


def _memory_undo(w: World) -> None:
    _not_found_like_missing(w, "POST", "/v1/events/{id}/undo", w.event_id)


def _memory_add_same_scope(w: World) -> None:
    r = w.client.post("/v1/memories", headers=w.b, json={
        "messages": "alpha likes oolong tea", "user_id": "u1", "infer": False})
    assert r.status_code == 200
    # an exact duplicate in A would be skipped; in B it is a new memory with a new id
    added = r.json()["changes"]
    assert len(added) == 1 and added[0]["memory"]["id"] != w.memory_id
    gone = w.client.delete(f"/v1/memories/{added[0]['memory']['id']}?hard=true", headers=w.b)
    assert gone.status_code == 200


def _thread_reads(w: World) -> None:
    for path in ("/v1/threads/{id}", "/v1/threads/{id}/messages",
                 "/v1/threads/{id}/checkpoints"):
        _not_found_like_missing(w, "GET", path, "t1")


def _thread_list(w: World) -> None:
    for body in ({}, {"filter": {"user_id": "u1"}}, {"filter": {"_remem_tenant": "alpha"}}):
        r = w.client.post("/v1/threads/list", json=body, headers=w.b)
        assert r.status_code == 200 and r.json() == {"threads": []}, body


def _thread_writes(w: World) -> None:
    c = w.client
    r = c.post("/v1/threads/t1/messages", headers=w.b,
               json={"messages": [{"role": "user", "content": "beta"}]})
    assert r.status_code == 404
    assert c.delete("/v1/threads/t1", headers=w.b).json() == {"deleted": False}
    r = c.post("/v1/threads/t1/fork", headers=w.b, json={})
    assert r.status_code == 404
    r = c.post("/v1/threads/t1/rewind", headers=w.b, json={"checkpoint_id": w.checkpoint_id})
    assert r.status_code == 404


def _thread_same_id_and_foreign_checkpoint(w: World) -> None:
    c = w.client
    r = c.post("/v1/threads", headers=w.b, json={"thread_id": "t1"})
    assert r.status_code == 200 and r.json()["head"]["position"] == 0  # B's own, empty
    r = c.post("/v1/threads/t1/rewind", headers=w.b, json={"checkpoint_id": w.checkpoint_id})
    assert 400 <= r.status_code < 500 and "alpha" not in r.text
    r = c.post("/v1/threads/t1/fork", headers=w.b, json={"checkpoint_id": w.checkpoint_id})
    assert 400 <= r.status_code < 500 and "alpha" not in r.text
    r = c.get("/v1/threads/t1/messages", headers=w.b,
              params={"checkpoint_id": w.checkpoint_id})
    assert 400 <= r.status_code < 500 and "secret" not in r.text
    assert c.delete("/v1/threads/t1", headers=w.b).json() == {"deleted": True}


def _thread_reserved_metadata(w: World) -> None:
    r = w.client.post("/v1/threads", headers=w.b, json={"metadata": {"_remem_tenant": "alpha"}})
    assert r.status_code == 422 and "reserved" in r.json()["message"]


def _tenant_header(w: World) -> None:
    """Headers other than X-Remem-Tenant are ignored; X-Remem-Tenant from a key that is not
    an admin key is refused (403), on reads and writes alike."""
    for name in ("X-Tenant", "Tenant"):
        r = w.client.post("/v1/store/search", json={"namespace_prefix": NS},
                          headers={**w.b, name: "alpha"})
        assert r.json() == {"items": []}
    for method, path, kwargs in READS + WRITES:
        r = w.client.request(method, path, headers={**w.b, "X-Remem-Tenant": "alpha"},
                             **kwargs)
        assert r.status_code == 403, (method, path, r.text)
        assert r.json()["error"] == "permission_denied" and "admin key" in r.json()["message"]


def _tenant_body_field_refused(w: World) -> None:
    r = w.client.post("/v1/store/search", json={"tenant": "alpha"}, headers=w.b)
    assert r.status_code == 422 and r.json()["field"] == "body.tenant"


def _metrics_reveal_no_tenant(w: World) -> None:
    text = w.client.get("/metrics").text
    assert "alpha" not in text and "tenant" not in text


def _memory_list_export_and_forget(w: World) -> None:
    c = w.client
    for body in ({"user_id": "u1"}, {"namespace": ["memories", "user", "u1"]},
                 {"user_id": "u1", "include_invalid": True}):
        r = c.post("/v1/memories/list", json=body, headers=w.b)
        assert r.status_code == 200 and r.json()["memories"] == [], body
    for body in ({}, {"user_id": "u1"}):
        r = c.post("/v1/memories/export", json=body, headers=w.b)
        # (B's own hard-deleted copy of the text, from another case, may be in its history)
        assert r.status_code == 200 and w.memory_id not in r.text, body
    for hard in (False, True):  # forgetting "u1" in B reaches nothing of A's
        r = c.post("/v1/memories/delete", json={"user_id": "u1", "hard": hard}, headers=w.b)
        assert r.status_code == 200 and r.json()["changes"] == [], hard


def _memory_import_stays_in_tenant(w: World) -> None:
    c = w.client
    exported = c.post("/v1/memories/export", json={"user_id": "u1"}, headers=w.a).json()
    r = c.post("/v1/memories/import", json={"lines": exported["lines"]}, headers=w.b)
    assert r.status_code == 200, r.text
    # B now holds its own copy; A's memory is untouched (checked by the caller) and B's
    # copy is B's to delete
    mine = c.post("/v1/memories/list", json={"user_id": "u1"}, headers=w.b).json()["memories"]
    assert [m["id"] for m in mine] == [w.memory_id]
    r = c.post("/v1/memories/delete", json={"user_id": "u1", "hard": True}, headers=w.b)
    assert r.status_code == 200


def _thread_new_routes(w: World) -> None:
    c = w.client
    for path in ("/v1/threads/{id}/checkpoint", "/v1/threads/{id}/context"):
        _not_found_like_missing(w, "GET", path, "t1")
    _not_found_like_missing(w, "PATCH", "/v1/threads/{id}", "t1",
                            json={"metadata": {"beta": True}})
    _not_found_like_missing(w, "POST", "/v1/threads/{id}/state", "t1",
                            json={"state": {"beta": True}})
    _not_found_like_missing(w, "POST", "/v1/threads/{id}/copy", "t1", json={})
    r = c.post("/v1/threads/t1/compact", json={}, headers=w.b)
    assert 400 <= r.status_code < 500 and "alpha" not in r.text
    r = c.post("/v1/threads/search", json={"query": "secret"}, headers=w.b)
    assert r.status_code == 200 and "secret" not in r.text


def _jobs(w: World) -> None:
    """A's background job (queued in A's tenant) is invisible and untouchable for B."""
    from remem.background import NewJob
    from remem.server.routes_jobs import jobs_queue

    queue = jobs_queue(w.client.app)  # type: ignore[arg-type]
    job = queue.enqueue(NewJob("noop", {"secret": "alpha"}, tenant="alpha", thread_id="t1"))
    c = w.client
    for method, path in (("GET", f"/v1/jobs/{job.id}"), ("POST", f"/v1/jobs/{job.id}/cancel"),
                         ("POST", f"/v1/jobs/{job.id}/retry")):
        r = c.request(method, path, headers=w.b)
        assert r.status_code == 404 and "alpha" not in r.text
    assert c.get("/v1/jobs", headers=w.b).json() == {"jobs": []}
    assert c.get("/v1/jobs/stats", headers=w.b).json()["depth"] == 0
    assert c.post("/v1/memories/cancel", json={"thread_id": "t1"},
                  headers=w.b).json() == {"cancelled": []}
    for path in ("/v1/memories/submit", "/v1/memories/flush"):  # no model here: refused
        r = c.post(path, json={"messages": "x", "thread_id": "t1"} if "submit" in path
                   else {"thread_id": "t1"}, headers=w.b)
        assert 400 <= r.status_code < 500 and "alpha" not in r.text
    assert queue.get(job.id).status == "queued"


def _procedural(w: World) -> None:
    """A's prompts and episodes are invisible and untouchable for B; B's same name is its own."""
    c = w.client
    episodes_of_a = c.post("/v1/episodes/list", json={}, headers=w.a).json()
    assert c.get("/v1/prompts", headers=w.b).json() == {"prompts": []}
    for path in ("/v1/prompts/{id}", "/v1/prompts/{id}/history", "/v1/prompts/{id}/diff"):
        _not_found_like_missing(w, "GET", path, "alpha_prompt")
    _not_found_like_missing(w, "POST", "/v1/prompts/{id}", "alpha_prompt",
                            json={"text": "beta {x}"})
    _not_found_like_missing(w, "POST", "/v1/prompts/{id}/rollback", "alpha_prompt",
                            json={"version": 1})
    r = c.post("/v1/prompts/alpha_prompt/optimize", headers=w.b, json={
        "trajectories": [{"messages": "x", "feedback": 0.0}]})  # no model here: refused
    assert 400 <= r.status_code < 500 and "alpha" not in r.text.replace("alpha_prompt", "")
    assert c.post("/v1/episodes/list", json={}, headers=w.b).json() == {"episodes": []}
    r = c.post("/v1/episodes/select", json={"query": "alpha secret situation"}, headers=w.b)
    assert r.status_code == 200 and r.json()["examples"] == []
    for path, body in (("/v1/episodes/extract", {"messages": "x"}),
                       ("/v1/episodes/extract/submit", {"messages": "x"}),
                       ("/v1/prompts/alpha_prompt/optimize/submit", {"trajectories": [
                           {"messages": "x", "feedback": 0.0}]})):  # no model: refused
        r = c.post(path, json=body, headers=w.b)
        assert 400 <= r.status_code < 500, path
        assert "alpha" not in r.text.replace("alpha_prompt", ""), path
    mine = c.post("/v1/prompts", json={"name": "alpha_prompt", "text": "beta {y}"},
                  headers=w.b)
    assert mine.status_code in (200, 409) and c.get(
        "/v1/prompts/alpha_prompt", headers=w.b).json()["text"] == "beta {y}"
    assert c.post("/v1/episodes", json={"situation": "beta", "action": "b"},
                  headers=w.b).status_code == 200
    a_prompt = c.get("/v1/prompts/alpha_prompt", headers=w.a).json()
    assert (a_prompt["version"], a_prompt["text"]) == (1, "alpha secret {x}")
    assert c.post("/v1/episodes/list", json={}, headers=w.a).json() == episodes_of_a


def _park_alpha_approval(state: Any) -> None:
    """A write of A's agent that a rule parked for A's human."""
    from remem.files.permissions import GuardedFiles, Policy
    from remem.server.routes_approvals import approvals_for
    from remem.server.state import Principal

    approvals = approvals_for(state.store_for(Principal("alpha")))
    GuardedFiles(approvals.files, Policy(default="ask"), approvals).write(
        "/alpha.md", "alpha secret")


def _approvals(w: World) -> None:
    """B lists none of A's approvals and cannot resolve them (404 as for a missing id)."""
    c = w.client
    [parked] = c.get("/v1/approvals", headers=w.a).json()["approvals"]
    for status in ("pending", "all"):
        r = c.get("/v1/approvals", params={"status": status}, headers=w.b)
        assert r.status_code == 200 and r.json() == {"approvals": []}
    for action, body in (("approve", {"edited_arguments": {"content": "beta"}}),
                         ("reject", {"reason": "beta"})):
        _not_found_like_missing(w, "POST", "/v1/approvals/{id}/" + action, parked["id"],
                                json=body)
    assert c.get("/v1/approvals", headers=w.a).json()["approvals"] == [parked]


def _context(w: World) -> None:
    """B's context for A's user and thread holds nothing of A's; A's own does."""
    c = w.client
    mine = c.post("/v1/memories/context", json={"query": "tea", "user_id": "u1"}, headers=w.a)
    assert "oolong" in mine.json()["text"]
    r = c.post("/v1/memories/context", json={"query": "tea", "user_id": "u1"}, headers=w.b)
    assert r.status_code == 200 and r.json()["text"] == "" and r.json()["dropped"] == []
    r = c.post("/v1/memories/context", json={"thread_id": "t1"}, headers=w.b)
    assert r.status_code == 404 and "alpha" not in r.text


def _files_and_blocks(w: World) -> None:
    """A's files are invisible to B; B's file of the same path is its own; B has no blocks
    of A's agent to read or edit."""
    c = w.client
    assert c.post("/v1/files/ls", json={"path": "/"}, headers=w.b).json() == []
    for path, body in (("/v1/files/read", {"path": "/notes.md"}),
                       ("/v1/files/edit", {"path": "/notes.md", "old_string": "alpha",
                                           "new_string": "beta"}),
                       ("/v1/files/undo", {"path": "/notes.md"})):
        r = c.post(path, json=body, headers=w.b)
        assert 400 <= r.status_code < 500 and "alpha secret" not in r.text, path
    r = c.get("/v1/files/history", params={"path": "/notes.md"}, headers=w.b)
    assert r.status_code in (200, 404) and "alpha" not in r.text
    for path, body in (("/v1/files/glob", {"pattern": "**"}),
                       ("/v1/files/grep", {"pattern": "alpha"})):
        r = c.post(path, json=body, headers=w.b)
        assert r.status_code == 200 and "notes" not in r.text, path
    assert c.post("/v1/files/write", json={"path": "/notes.md", "content": "beta"},
                  headers=w.b).status_code == 200
    read = c.post("/v1/files/read", json={"path": "/notes.md"}, headers=w.a)
    assert "alpha secret" in read.text
    r = c.get("/v1/blocks/render", params={"agent_id": "a1"}, headers=w.b)
    assert r.status_code == 200 and "alpha" not in r.text
    for path, body in (("/v1/blocks/append", {"label": "human", "content": "x"}),
                       ("/v1/blocks/replace", {"label": "human", "old_content": "a",
                                               "new_content": "b"}),
                       ("/v1/blocks/rethink", {"label": "human", "new_memory": "x"})):
        r = c.post(path, params={"agent_id": "a1"}, json=body, headers=w.b)
        assert 400 <= r.status_code < 500, (path, r.text)


def _blocks_crud(w: World) -> None:
    """B sees, reads, changes, deletes and attaches none of A's blocks; B's recover of
    approvals touches none of A's."""
    c = w.client
    mine = (c.get("/v1/blocks", headers=w.a).json(),
            c.get("/v1/agents/a1/blocks", headers=w.a).json())
    assert c.get("/v1/blocks", headers=w.b).json() == {"blocks": []}
    assert c.get("/v1/agents/a1/blocks", headers=w.b).json() == {"blocks": []}
    for method, path, kwargs in (("GET", "/v1/blocks/alpha-block", {}),
                                 ("GET", "/v1/blocks/alpha-block/history", {}),
                                 ("PATCH", "/v1/blocks/alpha-block", {"json": {"value": "b"}}),
                                 ("DELETE", "/v1/blocks/alpha-block", {}),
                                 ("PUT", "/v1/agents/a1/blocks/alpha-block", {})):
        r = c.request(method, path, headers=w.b, **kwargs)
        assert r.status_code == 404 and "alpha secret" not in r.text, (method, path, r.text)
    assert c.delete("/v1/agents/a1/blocks/alpha-block", headers=w.b).json()["blocks"] == []
    assert c.post("/v1/approvals/recover", json={"stale_after": 0},
                  headers=w.b).json() == {"approvals": []}
    assert (c.get("/v1/blocks", headers=w.a).json(),
            c.get("/v1/agents/a1/blocks", headers=w.a).json()) == mine


def _graph(w: World) -> None:
    """B reads and changes none of A's graph, profile or timeline, for the same user id."""
    c = w.client
    patch = {"user_id": "u1", "patch": [{"op": "add", "path": "/work/company",
                                         "value": "alpha secret"}]}
    assert c.patch("/v1/graph/profile", json=patch, headers=w.a).status_code == 200
    mine = c.post("/v1/graph/profile", json={"user_id": "u1"}, headers=w.a).json()
    assert c.post("/v1/graph/profile", json={"user_id": "u1"}, headers=w.b).json() == {
        "topics": {}}
    assert c.post("/v1/graph/timeline", json={"user_id": "u1"}, headers=w.b).json() == {
        "events": []}
    assert c.post("/v1/graph/search", json={"user_id": "u1", "query": "alpha secret"},
                  headers=w.b).json() == {"hits": []}
    for path in ("/v1/graph/entity", "/v1/graph/expand"):
        r = c.post(path, json={"user_id": "u1", "entity": "alpha secret"}, headers=w.b)
        assert r.status_code == 404, (path, r.text)
    assert c.post("/v1/graph/episodes", json={"user_id": "u1", "text": "beta"},
                  headers=w.b).status_code == 400  # no server model: nothing written
    other = {"user_id": "u1", "patch": [{"op": "remove", "path": "/work/company"}]}
    assert c.patch("/v1/graph/profile", json=other, headers=w.b).json() == {"changes": []}
    assert c.post("/v1/graph/profile", json={"user_id": "u1"}, headers=w.a).json() == mine


def _budgets(w: World) -> None:
    """B neither sees nor drops A's budget for the same user id; B's own budget for that user
    id is B's alone."""
    c = w.client
    assert c.put("/v1/budgets", json={"user_id": "u1", "max_memories": 1000},
                 headers=w.a).status_code == 200
    mine = c.get("/v1/budgets", headers=w.a).json()
    assert c.get("/v1/budgets", headers=w.b).json() == {"budgets": []}
    assert c.delete("/v1/budgets", params={"user_id": "u1"},
                    headers=w.b).json() == {"deleted": False}
    assert c.put("/v1/budgets", json={"user_id": "u1", "max_memories": 1},
                 headers=w.b).status_code == 200
    assert c.get("/v1/budgets", headers=w.a).json() == mine
    assert c.delete("/v1/budgets", params={"user_id": "u1"},
                    headers=w.b).json() == {"deleted": True}


def _usage(w: World) -> None:
    """A's chat model calls show in A's usage only; each tenant's memory changes per day
    are within its own history (B may have calls and changes of its own)."""
    from remem.background.access import recorder_of
    from remem.llm.base import Usage
    from remem.server.state import Principal
    from remem.usage import count_history, day_window

    state = w.client.app.state.remem  # type: ignore[attr-defined]
    before = w.client.get("/v1/usage", headers=w.b).json()
    state.usage().record("alpha", "alpha-only-operation", "m", Usage(1, 100, 10))
    mine = w.client.get("/v1/usage", headers=w.a).json()
    assert mine["by_operation"]["alpha-only-operation"]["calls"] == 1
    theirs = w.client.get("/v1/usage", headers=w.b).json()
    assert theirs["total"] == before["total"] and theirs["rows"] == before["rows"]
    assert "alpha-only-operation" not in theirs["by_operation"]
    for tenant, headers in (("alpha", w.a), ("beta", w.b)):
        store = state.memory_for(Principal(tenant)).store
        observer = recorder_of(store)
        assert observer is not None
        observer.flush()  # memory changes are counted within ~50 ms; now
        shown = w.client.get("/v1/usage", headers=headers).json()["memories"]["days"]
        own = count_history(store, day_window()).days
        # never more than its own history holds (imports restore events uncounted)
        assert all(s[k] <= getattr(d, k) for s, d in zip(shown, own, strict=True)
                   for k in ("written", "changed", "removed")), (tenant, shown, own)
    assert mine["memories"]["events"] >= 1  # A's memories were written today


MATRIX: dict[str, Callable[[World], None]] = {
    "store/items GET": _store_get,
    "store/items GET (A's full namespace spelled out)": _store_get_spelled_prefix,
    "store/items PUT": _store_put,
    "store/items DELETE": _store_delete,
    "store/search POST": _store_search,
    "store/namespaces GET": _store_namespaces,
    "store/count POST": _store_count,
    "memories POST (add)": _memory_add_same_scope,
    "memories/search POST": _memory_search,
    "memories/{id} GET": _memory_get,
    "memories/{id} PATCH": _memory_update,
    "memories/{id} DELETE": _memory_delete,
    "memories/{id}/history GET": _memory_history,
    "events/{id}/undo POST": _memory_undo,
    "memories/list, export, delete (forget) POST": _memory_list_export_and_forget,
    "memories/import POST (A's export into B)": _memory_import_stays_in_tenant,
    "threads/{id} PATCH, checkpoint, context, state, copy, compact; threads/search": (
        _thread_new_routes),
    "threads/{id} GET, messages GET, checkpoints GET": _thread_reads,
    "threads/list POST": _thread_list,
    "threads/{id} messages POST, DELETE, fork, rewind": _thread_writes,
    "threads POST (A's id) + rewind/fork/read at A's checkpoint": (
        _thread_same_id_and_foreign_checkpoint),
    "threads POST (reserved metadata)": _thread_reserved_metadata,
    "tenant header (X-Remem-Tenant refused for a non-admin key)": _tenant_header,
    "tenant body field": _tenant_body_field_refused,
    "metrics": _metrics_reveal_no_tenant,
    "jobs GET, stats, retry, cancel; memories/submit, flush, cancel": _jobs,
    "prompts (list, get, history, diff, update, rollback, optimize, submit); episodes": (
        _procedural),
    "memories/context POST": _context,
    "approvals GET, approve, reject": _approvals,
    "files (ls, read, write, edit, glob, grep, history, undo); blocks": _files_and_blocks,
    "blocks (list, create, get, patch, delete, history, attach, detach); approvals recover": (
        _blocks_crud),
    "graph (episodes, search, entity, expand, profile, timeline)": _graph,
    "budgets PUT, GET, DELETE": _budgets,
    "usage GET": _usage,
}


@pytest.mark.parametrize("case", list(MATRIX))
def test_tenant_b_cannot_reach_tenant_a(world: World, case: str) -> None:
    before = world.a_state()
    MATRIX[case](world)
    assert world.a_state() == before  # nothing of A's changed
    assert before[0]["value"] == {"text": "alpha secret tea"}


def test_every_v1_route_is_in_the_matrix(world: World) -> None:
    paths = set(world.client.get("/openapi.json").json()["paths"])
    covered = {"/v1/store/items", "/v1/store/search", "/v1/store/count",
               "/v1/store/namespaces", "/v1/memories",
               "/v1/memories/search", "/v1/memories/{memory_id}",
               "/v1/memories/{memory_id}/history", "/v1/events/{event_id}/undo",
               "/v1/threads", "/v1/threads/list", "/v1/threads/{thread_id}",
               "/v1/threads/{thread_id}/messages", "/v1/threads/{thread_id}/checkpoints",
               "/v1/threads/{thread_id}/rewind", "/v1/threads/{thread_id}/fork",
               "/v1/memories/list", "/v1/memories/delete", "/v1/memories/export",
               "/v1/memories/import", "/v1/threads/search",
               "/v1/threads/{thread_id}/checkpoint", "/v1/threads/{thread_id}/state",
               "/v1/threads/{thread_id}/copy", "/v1/threads/{thread_id}/compact",
               "/v1/threads/{thread_id}/context", "/v1/memories/submit", "/v1/memories/flush",
               "/v1/memories/cancel", "/v1/jobs", "/v1/jobs/stats", "/v1/jobs/{job_id}",
               "/v1/jobs/{job_id}/retry", "/v1/jobs/{job_id}/cancel",
               "/v1/prompts", "/v1/prompts/{name}", "/v1/prompts/{name}/history",
               "/v1/prompts/{name}/diff", "/v1/prompts/{name}/rollback",
               "/v1/prompts/{name}/optimize", "/v1/episodes", "/v1/episodes/list",
               "/v1/episodes/select", "/v1/episodes/extract",
               "/v1/prompts/{name}/optimize/submit", "/v1/episodes/extract/submit",
               "/v1/memories/context", "/v1/files/ls", "/v1/files/read", "/v1/files/write",
               "/v1/files/edit", "/v1/files/glob", "/v1/files/grep", "/v1/files/history",
               "/v1/files/undo", "/v1/blocks/render", "/v1/blocks/append",
               "/v1/blocks/replace", "/v1/blocks/rethink", "/v1/approvals",
               "/v1/approvals/{approval_id}/approve", "/v1/approvals/{approval_id}/reject",
               "/v1/approvals/recover", "/v1/blocks", "/v1/blocks/{block_id}",
               "/v1/blocks/{block_id}/history", "/v1/agents/{agent_id}/blocks",
               "/v1/agents/{agent_id}/blocks/{block_id}", "/v1/graph/episodes",
               "/v1/graph/search", "/v1/graph/entity", "/v1/graph/expand",
               "/v1/graph/profile", "/v1/graph/timeline", "/v1/budgets", "/v1/usage"}
    assert {p for p in paths if p.startswith("/v1/")} == covered


# -- keys: missing, bad, revoked, read-only ----------------------------------------------------

WRITES = [("PUT", "/v1/store/items", {"json": {"namespace": ["n"], "key": "k", "value": {}}}),
          ("DELETE", "/v1/store/items", {"params": {"namespace": ["n"], "key": "k"}}),
          ("POST", "/v1/memories", {"json": {"messages": "x", "user_id": "u", "infer": False}}),
          ("PATCH", "/v1/memories/mem_x", {"json": {"content": "y"}}),
          ("DELETE", "/v1/memories/mem_x", {}),
          ("POST", "/v1/events/evt_x/undo", {}),
          ("POST", "/v1/threads", {"json": {}}),
          ("POST", "/v1/threads/t/messages", {"json": {"messages": [{"role": "user",
                                                                      "content": "x"}]}}),
          ("DELETE", "/v1/threads/t", {}),
          ("POST", "/v1/threads/t/fork", {"json": {}}),
          ("POST", "/v1/threads/t/rewind", {"json": {"checkpoint_id": "c"}})]
READS = [("GET", "/v1/store/items", {"params": {"namespace": ["n"], "key": "k"}}),
         ("POST", "/v1/store/search", {"json": {}}),
         ("GET", "/v1/store/namespaces", {}),
         ("POST", "/v1/memories/search", {"json": {}}),
         ("GET", "/v1/memories/mem_x", {}),
         ("GET", "/v1/memories/mem_x/history", {}),
         ("POST", "/v1/threads/list", {"json": {}}),
         ("GET", "/v1/threads/t", {}),
         ("GET", "/v1/threads/t/messages", {}),
         ("GET", "/v1/threads/t/checkpoints", {})]


@pytest.mark.parametrize(("method", "path", "kwargs"), WRITES + READS)
def test_requests_without_a_valid_key_get_401(world: World, method: str, path: str,
                                              kwargs: dict[str, Any]) -> None:
    keys = world.client.app.state.remem.keys  # type: ignore[attr-defined]
    token, info = keys.create("gamma")
    keys.revoke(info.key_id)
    for headers in ({}, {"Authorization": "Bearer nope"}, {"X-API-Key": "rk_x"},
                    {"Authorization": f"Bearer {token}"},
                    {"Authorization": f"Bearer {token[:-1]}A"}):
        r = world.client.request(method, path, headers=headers, **kwargs)
        assert r.status_code == 401, (headers, r.text)
        assert r.json()["error"] == "unauthorized"
        assert r.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize(("method", "path", "kwargs"), WRITES)
def test_read_only_keys_cannot_write(world: World, method: str, path: str,
                                     kwargs: dict[str, Any]) -> None:
    keys = world.client.app.state.remem.keys  # type: ignore[attr-defined]
    ro = {"X-API-Key": keys.create("alpha", read_only=True)[0]}
    before = world.a_state()
    r = world.client.request(method, path, headers=ro, **kwargs)
    assert r.status_code == 403 and "read-only" in r.json()["message"]
    assert world.a_state() == before


def test_read_only_key_reads_its_tenant(world: World) -> None:
    keys = world.client.app.state.remem.keys  # type: ignore[attr-defined]
    ro = {"X-API-Key": keys.create("alpha", read_only=True)[0]}
    r = world.client.get("/v1/store/items", params={"namespace": NS, "key": "k"}, headers=ro)
    assert r.status_code == 200 and r.json()["value"] == {"text": "alpha secret tea"}


def test_keys_are_stored_hashed(world: World) -> None:
    state = world.client.app.state.remem  # type: ignore[attr-defined]
    token, info = state.keys.create("delta")
    from remem.server.keys import KEYS_NAMESPACE

    stored = state.store.get(KEYS_NAMESPACE, info.key_id).value
    # the secret is everything after "rk_<key id>_" (it may hold "_" itself, so no split)
    secret = token.removeprefix(f"rk_{info.key_id}_")
    assert len(secret) >= 40 and secret != token
    assert token not in str(stored) and secret not in str(stored)
    assert len(stored["sha256"]) == 64


# -- admin keys: X-Remem-Tenant ----------------------------------------------------------------


def test_an_admin_key_acts_for_the_tenant_its_header_names(world: World) -> None:
    """With ``X-Remem-Tenant: alpha`` an admin key sees what A's own key sees, and in the
    raw store also A's files and approvals (which only admins read there); without the
    header it acts for its own tenant, which holds none of A's data."""
    keys = world.client.app.state.remem.keys  # type: ignore[attr-defined]
    admin = {"Authorization": f"Bearer {keys.create('ops', admin=True)[0]}"}
    as_alpha = World(world.client, {**admin, "X-Remem-Tenant": "alpha"}, world.b,
                     world.memory_id, world.event_id, world.checkpoint_id)
    seen, mine = as_alpha.a_state(), world.a_state()
    assert seen[0] == mine[0] and seen[2:] == mine[2:]
    everything = [world.client.post("/v1/store/search", json={"limit": 1000}, headers=who
                                    ).json()["items"] for who in (as_alpha.a, world.a)]
    extra = [i for i in everything[0] if i not in everything[1]]
    assert [i for i in everything[0] if i not in extra] == everything[1]
    assert all(i["namespace"][0] in ("files", "approvals") for i in extra), extra
    own = world.client.post("/v1/store/search", json={"namespace_prefix": NS}, headers=admin)
    assert own.status_code == 200 and own.json() == {"items": []}
    r = world.client.get(f"/v1/memories/{world.memory_id}", headers=admin)
    assert r.status_code == 404


def test_an_admin_key_writes_to_the_named_tenant_only_as_its_key_allows(world: World) -> None:
    keys = world.client.app.state.remem.keys  # type: ignore[attr-defined]
    c = world.client
    admin = {"X-API-Key": keys.create("ops", admin=True)[0], "X-Remem-Tenant": "gamma"}
    item = {"namespace": NS, "key": "from-admin", "value": {"text": "written by ops"}}
    assert c.put("/v1/store/items", json=item, headers=admin).status_code == 200
    gamma = {"X-API-Key": keys.create("gamma")[0]}
    got = c.get("/v1/store/items", params={"namespace": NS, "key": "from-admin"},
                headers=gamma)
    assert got.status_code == 200 and got.json()["value"] == {"text": "written by ops"}
    reader = {"X-API-Key": keys.create("ops", admin=True, read_only=True)[0],
              "X-Remem-Tenant": "alpha"}
    before = world.a_state()
    for method, path, kwargs in WRITES:
        r = c.request(method, path, headers=reader, **kwargs)
        assert r.status_code == 403 and "read-only" in r.json()["message"], (method, path)
    assert world.a_state() == before
    r = c.get("/v1/store/items", params={"namespace": NS, "key": "k"}, headers=reader)
    assert r.json()["value"] == {"text": "alpha secret tea"}


def test_a_bad_or_repeated_tenant_header_is_refused(world: World) -> None:
    keys = world.client.app.state.remem.keys  # type: ignore[attr-defined]
    admin = {"X-API-Key": keys.create("ops", admin=True)[0]}
    for bad in ("", "../alpha", "a" * 65, "alpha/x", "tenants"):
        r = world.client.post("/v1/store/search", json={},
                              headers={**admin, "X-Remem-Tenant": bad})
        if bad == "tenants":  # a valid name: an (empty) tenant of that name
            assert r.status_code == 200 and r.json() == {"items": []}
            continue
        assert r.status_code == 422, (bad, r.text)
        assert r.json()["error"] == "invalid_input" and "X-Remem-Tenant" in r.json()["message"]
    twice = world.client.post("/v1/store/search", json={}, headers=[
        *admin.items(), ("X-Remem-Tenant", "alpha"), ("X-Remem-Tenant", "beta")])
    assert twice.status_code == 400 and "X-Remem-Tenant" in twice.json()["message"]


def test_who_a_request_acts_as() -> None:
    """The pure rule behind X-Remem-Tenant (without auth there is no admin key)."""
    from remem.errors import InvalidInputError, PermissionDeniedError
    from remem.server.auth import acting_principal
    from remem.server.keys import ApiKey
    from remem.server.state import Principal

    plain = ApiKey("a" * 12, "beta", False, "", 0.0)
    admin = ApiKey("b" * 12, "ops", True, "", 0.0, admin=True)
    assert acting_principal(plain, None) == Principal("beta", False, "a" * 12)
    assert acting_principal(admin, None) == Principal("ops", True, "b" * 12, admin=True)
    assert acting_principal(admin, " alpha ") == Principal("alpha", True, "b" * 12, admin=True)
    with pytest.raises(PermissionDeniedError, match="only an admin key"):
        acting_principal(plain, "beta")  # even its own tenant: the header is an admin's
    with pytest.raises(PermissionDeniedError, match="--no-auth"):
        acting_principal(None, "local")
    with pytest.raises(InvalidInputError, match="X-Remem-Tenant"):
        acting_principal(admin, "no such/tenant")


def test_every_v1_route_refuses_the_tenant_header_of_a_non_admin_key(world: World) -> None:
    """Every operation of the schema reads the header through the one auth dependency: a
    non-admin key naming another tenant is refused before anything runs."""
    import re

    from remem.ui.app import page_routes

    headers = {**world.b, "X-Remem-Tenant": "alpha"}
    before = world.a_state()
    checked = 0
    for route in page_routes(world.client.app.routes):  # type: ignore[attr-defined]
        if not route.path.startswith("/v1/"):
            continue
        url = re.sub(r"\{[^}]+\}", "x", route.path)
        for method in sorted(route.methods):
            body = {"json": {}} if method in {"PUT", "POST", "PATCH"} else {}
            r = world.client.request(method, url, headers=headers, **body)
            assert r.status_code == 403, (method, route.path, r.status_code, r.text)
            assert r.json()["error"] == "permission_denied", (method, route.path)
            checked += 1
    assert checked >= 90
    assert world.a_state() == before
