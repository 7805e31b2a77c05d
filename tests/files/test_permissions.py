"""File permissions: first matching rule wins; ``ask`` parks the operation for a human, whose
approval runs it exactly once, and pending approvals survive a restart."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from remem.errors import ConflictError, InvalidInputError, PermissionDeniedError
from remem.files import InMemoryFileBackend, StoreFileBackend
from remem.files.permissions import Approvals, GuardedFiles, Interrupt, Policy, Rule, rules
from remem.store import SQLiteStore

POLICY = Policy(rules((
    {"effect": "deny", "paths": "/secrets/**"},
    {"effect": "ask", "paths": "/memories/**", "operations": ["write", "edit", "delete"]},
    {"effect": "allow", "paths": "/memories/**", "operations": ["read"]},
    {"effect": "ask", "paths": "/**", "operations": ["delete"], "scope": "intern"},
)), default="allow")


def test_first_matching_rule_wins() -> None:
    assert POLICY.decide("read", "/secrets/key.txt") == "deny"
    assert POLICY.decide("write", "/memories/a.md") == "ask"
    assert POLICY.decide("read", "/memories/a.md") == "allow"
    assert POLICY.decide("delete", "/work/a.md", "intern") == "ask"
    assert POLICY.decide("delete", "/work/a.md", "lead") == "allow"  # the default
    assert Policy(default="deny").decide("read", "/x") == "deny"
    with pytest.raises(InvalidInputError, match="effect"):
        Rule("maybe")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="operations"):
        rules([{"effect": "allow", "operations": ["chmod"]}])
    with pytest.raises(InvalidInputError, match="unknown field"):
        rules([{"effect": "allow", "path": "/x"}])


def test_ask_parks_then_approve_runs_exactly_once(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "agent.db")
    files = StoreFileBackend(store, ("files",))
    approvals = Approvals(StoreFileBackend(store, ("approvals",)), files)
    guarded = GuardedFiles(files, POLICY, approvals, scope="planner")
    with pytest.raises(PermissionDeniedError, match="denied"):
        guarded.read("/secrets/key.txt")
    interrupt = guarded.write("/memories/user.md", "Alice likes tea")
    assert isinstance(interrupt, Interrupt)
    assert interrupt.to_dict()["status"] == "needs_approval"
    assert files.stat("/memories/user.md") is None  # nothing written yet
    store.close()

    # a restart: the pending approval is still there
    store = SQLiteStore(tmp_path / "agent.db")
    files = StoreFileBackend(store, ("files",))
    approvals = Approvals(StoreFileBackend(store, ("approvals",)), files)
    [pending] = approvals.pending()
    assert (pending.id, pending.operation, pending.path) == (
        interrupt.approval_id, "write", "/memories/user.md")
    # the human edits the content while approving
    done = approvals.approve(pending.id, arguments={"content": "Alice likes green tea"})
    assert done.status == "done" and done.result is not None
    assert files.read("/memories/user.md").content == "Alice likes green tea"
    assert files.history("/memories/user.md")[-1].actor == f"human (approval {pending.id})"
    with pytest.raises(ConflictError, match="already done"):
        approvals.approve(pending.id)
    assert [e.op for e in files.history("/memories/user.md")] == ["write"]  # once
    assert approvals.pending() == []
    store.close()


def test_reject_never_runs_and_races_resolve_once(tmp_path: Path) -> None:
    files = InMemoryFileBackend()
    approvals = Approvals(InMemoryFileBackend(), files)
    guarded = GuardedFiles(files, POLICY, approvals)
    files.write("/memories/a.md", "keep me")
    parked = guarded.delete("/memories/a.md")
    assert isinstance(parked, Interrupt)
    assert approvals.reject(parked.approval_id, "not now").status == "rejected"
    assert files.read("/memories/a.md").content == "keep me"

    parked = guarded.edit("/memories/a.md", "keep", "kept")
    assert isinstance(parked, Interrupt)
    barrier = threading.Barrier(4)
    outcomes: list[str] = []

    def resolve() -> None:
        barrier.wait()
        try:
            outcomes.append(approvals.approve(parked.approval_id).status)
        except ConflictError:
            outcomes.append("refused")

    threads = [threading.Thread(target=resolve) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["done", "refused", "refused", "refused"]
    assert files.read("/memories/a.md").content == "kept me"
    assert [e.op for e in files.history("/memories/a.md")] == ["write", "edit"]


def test_a_failed_approved_operation_is_recorded_not_retried() -> None:
    files = InMemoryFileBackend()
    approvals = Approvals(InMemoryFileBackend(), files)
    parked = GuardedFiles(files, POLICY, approvals).edit("/memories/none.md", "a", "b")
    assert isinstance(parked, Interrupt)
    failed = approvals.approve(parked.approval_id)
    assert failed.status == "failed" and "no file at" in failed.reason
    with pytest.raises(ConflictError, match="already failed"):
        approvals.approve(parked.approval_id)


def test_file_tools_answer_with_the_pending_approval() -> None:
    import json

    from remem.messages.types import ToolCall
    from remem.tools import FileTools

    files = InMemoryFileBackend()
    approvals = Approvals(InMemoryFileBackend(), files)
    tools = FileTools(files, permissions=GuardedFiles(files, POLICY, approvals))
    reply = tools.execute(ToolCall(id="1", name="write_file", arguments={
        "path": "/memories/a.md", "content": "x"}))
    answer = json.loads(reply.text)
    assert not reply.is_error and answer["status"] == "needs_approval"
    assert files.stat("/memories/a.md") is None
    denied = tools.execute(ToolCall(id="2", name="read_file",
                                    arguments={"path": "/secrets/k"}))
    assert denied.is_error and "denied" in denied.text
    approvals.approve(answer["approval_id"])
    read = tools.execute(ToolCall(id="3", name="read_file", arguments={"path": "/memories/a.md"}))
    assert json.loads(read.text)["content"] == "x"


WRITER_FIRST = Policy(rules([
    {"effect": "allow", "paths": "/memories/**", "operations": ["write", "edit"],
     "agent": "writer"},
    {"effect": "ask", "paths": "/memories/**", "operations": ["write", "edit"]},
    {"effect": "deny", "paths": "/hr/**", "org": "acme", "user": "bob"},
    {"effect": "deny", "paths": "/legacy/**", "scope": "intern"},
]))


def test_rules_match_the_callers_org_user_and_agent() -> None:
    from remem.files.permissions import Caller

    writer, reader = Caller("acme", "ann", "writer"), Caller("acme", "ann", "reader")
    assert WRITER_FIRST.decide("write", "/memories/a.md", writer) == "allow"
    assert WRITER_FIRST.decide("write", "/memories/a.md", reader) == "ask"
    assert WRITER_FIRST.decide("write", "/memories/a.md", Caller("acme")) == "ask"  # no agent
    assert WRITER_FIRST.decide("read", "/memories/a.md", reader) == "allow"  # the default
    # every id a rule names must match
    assert WRITER_FIRST.decide("read", "/hr/pay.md", Caller("acme", "bob")) == "deny"
    assert WRITER_FIRST.decide("read", "/hr/pay.md", Caller("other", "bob")) == "allow"
    assert WRITER_FIRST.decide("read", "/hr/pay.md", Caller("acme", "ann")) == "allow"
    # scope: any of the caller's ids; a plain string names the agent, as it always did
    assert WRITER_FIRST.decide("read", "/legacy/x", Caller(user="intern")) == "deny"
    assert WRITER_FIRST.decide("read", "/legacy/x", "intern") == "deny"
    assert WRITER_FIRST.decide("write", "/memories/a.md", "writer") == "allow"


def test_guarded_files_for_one_agent_write_for_others_ask() -> None:
    from remem.files.permissions import Caller

    files = InMemoryFileBackend()
    approvals = Approvals(InMemoryFileBackend(), files)
    writer = GuardedFiles(files, WRITER_FIRST, approvals, scope=Caller("acme", "ann", "writer"))
    other = GuardedFiles(files, WRITER_FIRST, approvals, scope=Caller("acme", "ann", "helper"))
    assert writer.write("/memories/a.md", "Ann likes tea").path == "/memories/a.md"
    parked = other.edit("/memories/a.md", "tea", "coffee")
    assert isinstance(parked, Interrupt)
    assert files.read("/memories/a.md").content == "Ann likes tea"
    [pending] = approvals.pending()
    assert pending.scope == "org acme, user ann, agent helper"  # who asked, for the human
    bob = GuardedFiles(files, WRITER_FIRST, approvals, scope=Caller("acme", "bob"))
    with pytest.raises(PermissionDeniedError) as denied:
        bob.read("/hr/pay.md")
    # the message names the rule that decided, as the policy file writes it
    assert 'rule 2 {"effect": "deny", "paths": "/hr/**", "org": "acme", "user": "bob"}' \
        in str(denied.value)


@pytest.mark.parametrize(("rule", "names"), [
    ({"effect": "allow", "agent": ""}, ["rule 0", "agent", "non-empty id", "'writer'"]),
    ({"effect": "allow", "user": 7}, ["rule 0", "user", "non-empty id", "'alice'"]),
    ({"effect": "deny", "paths": "/a/../b"}, ["rule 0", "paths", "'..'", "/memories/**"]),
    ({"effect": "deny", "paths": ["/a"]}, ["rule 0", "paths", "one glob"]),
    ({"effect": "ask", "operations": "write"}, ["rule 0", "operations", '["write", "edit"]']),
    ({"effect": "ask", "operations": ["chmod"]}, ["rule 0", "operations", "read, write"]),
    ({"effect": "nope"}, ["rule 0", "effect", "allow, deny or ask"]),
    ({"effect": "ask", "agents": "x"}, ["rule 0", "unknown field", "agents", "agent"]),
    ("deny /x", ["rule 0", "must be an object"]),
])
def test_a_bad_rule_names_its_position_the_field_and_the_fix(rule: object,
                                                            names: list[str]) -> None:
    with pytest.raises(InvalidInputError) as raised:
        rules([rule])  # type: ignore[list-item]
    for name in names:
        assert name in str(raised.value), (name, str(raised.value))
