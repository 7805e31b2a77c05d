"""What the browser tests' server holds: two tenants' keys (and an admin key) and their
memories, threads, jobs, a block, files, prompts, a parked approval and a temporal graph, all
written through the HTTP API as a user of the server would (:func:`serve_world`)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import httpx

from remem.server.keys import KeyStore
from remem.store import open_store
from remem.testing import LoopbackServer
from remem.testing.chat_server import ChatCall
from remem.testing.server import ServerProcess
from tests.graph.scripts import E, F, answer

USER = "ada"
#: the memory the tests correct, search for and undo
TEA = "Ada drinks jasmine tea every morning"
TEA_CORRECTED = "Ada drinks oolong tea every morning"
#: a memory that is markup: it must render as text, never run or add elements
XSS = ('<script>window.__xss = "script"</script><img src="x" id="xss-img" '
       'onerror="window.__xss = \'onerror\'"> tea probe')
#: the memory the undo test reverts (a test of its own, so the others never see it change)
BIRD = "Ada's parrot is called Kiwi"
BIRD_CORRECTED = "Ada's parrot is called Mango"
ALPHA_MEMORIES = [TEA, BIRD, "Ada's dog is called Biscuit", "Ada prefers window seats on trains",
                  "Ada is allergic to peanuts", "Ada keeps green tea and black tea at work",
                  XSS]
BETA_SECRET = "Bob hides a spare key under the blue tea pot"


@dataclass
class Seeded:
    """What the session's server holds: two tenants' keys and the ids the tests look for."""

    url: str
    alpha_key: str
    beta_key: str
    human_key: str  # a second key of alpha: a human approving what alpha's agent asked
    tea_id: str
    xss_id: str
    beta_id: str
    thread_id: str
    tea_event: str  # the tea memory's correction, an event only alpha may undo
    queued_job: str
    cancelled_job: str
    approval_id: str  # alpha's write to /approve/plan.md, parked by the file policy
    ids: dict[str, str] = field(default_factory=dict)  # alpha memory text -> id
    admin_key: str = ""  # an admin key whose own tenant, ops, holds nothing


def _post(client: httpx.Client, path: str, key: str, body: dict[str, Any]) -> Any:
    response = client.post(path, json=body, headers={"Authorization": f"Bearer {key}"})
    assert response.status_code in (200, 201), (path, response.status_code, response.text)
    return response.json()


#: a thread forked from alpha's conversation
FORK = "ada-chat-oolong"
#: a file whose writing the server's file policy asks a human about
PLAN = "/approve/plan.md"
#: the first message of a Chinese thread
ZH_QUESTION = "我每天早上喝茉莉花茶，下午喝乌龙茶。请帮我记住这个习惯。"
#: an organisation whose name is markup: the graph page draws it as text
ACME = 'Acme <img src=x id="xss-node" onerror="window.__xss = 1">'


def _extract_graph(call: ChatCall) -> dict[str, Any]:
    """The loopback model's answer to a graph extraction: Ada worked at Acme (in Berlin),
    then moved to Globex (ending the Acme fact)."""
    episode = call.messages[-1].text.split("Episode:", 1)[1]
    if "Globex" in episode:
        graph = answer([E("Ada", existing="Ada"), E("Globex", "organization")],
                       [F("Ada", "works_at", "Globex", "Ada works at Globex",
                          valid_at="2024-05-01", contradicts=["Ada works at Acme"])])(call)
    else:
        graph = answer([E("Ada"), E(ACME, "organization"), E("Berlin", "place")],
                       [F("Ada", "works_at", ACME, "Ada works at Acme", valid_at="2020-01-01"),
                        F(ACME, "located_in", "Berlin", "Acme is based in Berlin")])(call)
    return {**graph, "profile": [], "events": []}


def _seed(url: str, alpha: str, beta: str, human: str, model: LoopbackServer) -> Seeded:
    """Seed through the HTTP API, as a user of the server would."""
    ids: dict[str, str] = {}
    with httpx.Client(base_url=url, timeout=30) as client:
        for text in ALPHA_MEMORIES:
            added = _post(client, "/v1/memories", alpha,
                          {"messages": text, "user_id": USER, "infer": False, "split": "none"})
            ids[text] = added["changes"][0]["memory"]["id"]
        # corrections give memories a history (version 2): one to read, one to undo
        events = {}
        for text, correction in ((TEA, TEA_CORRECTED), (BIRD, BIRD_CORRECTED)):
            corrected = client.patch(f"/v1/memories/{ids[text]}", json={
                "content": correction, "reason": "she switched teas"},
                headers={"Authorization": f"Bearer {alpha}"})
            assert corrected.status_code == 200, corrected.text
            events[text] = corrected.json()["changes"][0]["event_id"]
        beta_added = _post(client, "/v1/memories", beta,
                           {"messages": BETA_SECRET, "user_id": "bob", "infer": False,
                            "split": "none"})
        _post(client, "/v1/threads", alpha, {
            "thread_id": "ada-chat", "metadata": {"user_id": USER},
            "messages": [{"role": "user", "content": "Remember that I drink jasmine tea."},
                         {"role": "assistant", "content": "Noted: jasmine tea."}]})
        # a fork of the conversation that goes on its own way
        _post(client, "/v1/threads/ada-chat/fork", alpha, {"new_thread_id": FORK})
        _post(client, f"/v1/threads/{FORK}/messages", alpha, {
            "messages": [{"role": "user", "content": "Actually, make it oolong."}]})
        # a thread in Chinese, titled by its first message (the list shows it, not boxes)
        _post(client, "/v1/threads", alpha, {
            "thread_id": "zh-chat", "metadata": {"user_id": USER},
            "messages": [{"role": "user", "content": ZH_QUESTION}]})
        _post(client, "/v1/threads", alpha, {
            "thread_id": "xss-thread", "metadata": {"user_id": USER},
            "messages": [{"role": "user", "content": XSS}]})
        # a core memory block, a file and a prompt, each changed once (a history to show)
        _post(client, "/v1/blocks", alpha, {"id": "persona", "label": "persona", "limit": 200,
                                             "value": "Ada's assistant: brief and warm."})
        changed = client.patch("/v1/blocks/persona", headers={"Authorization": f"Bearer {alpha}"},
                               json={"value": "Ada's assistant: brief, warm, tea-minded."})
        assert changed.status_code == 200, changed.text
        _post(client, "/v1/files/write", alpha, {"path": "/notes/tea.md",
                                                  "content": "# Tea\n\njasmine in the morning\n"})
        _post(client, "/v1/files/edit", alpha, {"path": "/notes/tea.md",
                                                 "old_string": "jasmine", "new_string": "oolong"})
        _post(client, "/v1/prompts", alpha, {"name": "greeting", "text": "Hello {name}."})
        _post(client, "/v1/prompts/greeting", alpha, {"text": "Hello {name}, welcome back."})
        # a write the file policy parks until a human approves it
        parked = client.post("/v1/files/write", headers={"Authorization": f"Bearer {alpha}"},
                             json={"path": PLAN, "content": "Ship on Friday.\n"})
        assert parked.status_code == 202, parked.text
        # a temporal graph of two episodes (the model's answers are scripted)
        model.chat.default = _extract_graph
        for text, day in (("Ada joined Acme in January 2020; Acme is in Berlin.", 1_580_515_200),
                          ("Ada moved to Globex in May 2024.", 1_715_126_400)):
            _post(client, "/v1/graph/episodes", alpha,
                  {"user_id": USER, "text": text, "event_at": day})
        # background extractions an hour away (no worker runs): one queued, one cancelled
        jobs = [_post(client, "/v1/memories/submit", alpha, {
            "thread_id": thread, "user_id": USER, "messages": "I moved to Lisbon",
            "delay": 3600})["job_id"] for thread in ("ada-chat", "ada-travel")]
        _post(client, f"/v1/jobs/{jobs[1]}/cancel", alpha, {})
    return Seeded(url=url, alpha_key=alpha, beta_key=beta, tea_id=ids[TEA], xss_id=ids[XSS],
                  beta_id=beta_added["changes"][0]["memory"]["id"], thread_id="ada-chat",
                  tea_event=events[TEA], queued_job=jobs[0], cancelled_job=jobs[1],
                  human_key=human, approval_id=parked.json()["approval_id"], ids=ids)


def _make_keys(db: str) -> tuple[str, str, str, str]:
    with open_store(db) as store:
        keys = KeyStore(store)
        return (keys.create("alpha")[0], keys.create("beta")[0], keys.create("alpha")[0],
                keys.create("ops", admin=True)[0])



@contextmanager
def serve_world() -> Iterator[Seeded]:
    """A real ``remem serve`` (SQLite file, fake embedder, the loopback model) with keys for
    tenants alpha and beta and seeded memories, stopped and removed on leaving."""
    directory = tempfile.mkdtemp(prefix="remem-browser-")
    db = os.path.join(directory, "inspected.db")
    try:
        # made on this thread even while Playwright's sync API keeps its event loop running
        # here: remem's sync calls work on a running loop
        alpha, beta, human, admin = _make_keys(db)
        policy = os.path.join(directory, "file-policy.json")
        with open(policy, "w") as file:
            json.dump({"default": "allow", "rules": [
                {"effect": "ask", "paths": "/approve/**", "operations": ["write"]}]}, file)
        # the loopback model lets the server accept background extractions; none runs
        with LoopbackServer() as model, ServerProcess(
                ["--db", db, "--embedder", "fake", "--no-mcp"],
                env={"REMEM_LLM_BASE_URL": model.url, "REMEM_LLM_MODEL": "loopback",
                     "REMEM_LLM_API_KEY": "sk-test", "REMEM_LLM_PROVIDER": "openai",
                     "REMEM_FILE_POLICY": policy},
        ) as server:
            yield replace(_seed(server.url, alpha, beta, human, model), admin_key=admin)
    finally:
        shutil.rmtree(directory, ignore_errors=True)

