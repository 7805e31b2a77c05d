"""An approved operation runs at most once across a crash: a real process claims (and maybe
executes) an approval, is killed with SIGKILL before it stores the outcome, and a restart's
``recover`` finishes it. The file changes once or not at all, and the approval says which."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from remem.errors import ConflictError
from remem.files import StoreFileBackend
from remem.files.approvals import Approvals, approval_tag
from remem.files.permissions import GuardedFiles, Interrupt, Policy, rules
from remem.store import open_store

POLICY = Policy(rules([{"effect": "ask", "paths": "/memories/**"}]))

#: the resolver: claims the approval, maybe executes it, says so, then waits to be killed
RESOLVER = textwrap.dedent("""
    import sys, time
    from remem.files import StoreFileBackend
    from remem.files.approvals import Approvals
    from remem.store import open_store

    db, approval_id, stage = sys.argv[1:4]
    store = open_store(db)
    approvals = Approvals(StoreFileBackend(store, ("approvals",)),
                          StoreFileBackend(store, ("files",)))
    claimed = approvals.claim(approval_id, arguments={"content": "approved text"})
    if stage == "executed":
        outcome = approvals.execute(claimed)
        assert outcome.status == "done", outcome
    print(stage, flush=True)
    time.sleep(600)
""")


def _layout(db: str) -> tuple[object, Approvals, StoreFileBackend]:
    store = open_store(db)
    files = StoreFileBackend(store, ("files",))
    return store, Approvals(StoreFileBackend(store, ("approvals",)), files), files


def _park(db: str) -> str:
    store, approvals, files = _layout(db)
    files.write("/memories/a.md", "before")
    parked = GuardedFiles(files, POLICY, approvals).write("/memories/a.md", "parked text")
    assert isinstance(parked, Interrupt)
    store.close()  # type: ignore[attr-defined]
    return parked.approval_id


def _crash_after(db: str, approval_id: str, stage: str) -> None:
    with subprocess.Popen([sys.executable, "-c", RESOLVER, db, approval_id, stage],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as child:
        try:
            assert child.stdout is not None and child.stderr is not None
            line = child.stdout.readline().strip()
            if line != stage:
                child.wait(timeout=60)
                raise AssertionError(f"the resolver said {line!r}: {child.stderr.read()}")
            os.kill(child.pid, signal.SIGKILL)
        finally:
            if child.poll() is None:
                child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL


def _tagged(files: StoreFileBackend, approval_id: str) -> int:
    return sum(e.actor.endswith(approval_tag(approval_id))
               for e in files.history("/memories/a.md"))


@pytest.mark.parametrize("stage", ["claimed", "executed"])
def test_killed_resolver_then_recover_runs_exactly_once(tmp_path: Path, stage: str) -> None:
    db = str(tmp_path / "crash.db")
    approval_id = _park(db)
    _crash_after(db, approval_id, stage)

    store, approvals, files = _layout(db)
    stuck = approvals.get(approval_id)
    assert stuck.status == "running"  # the claim survived the crash, the outcome did not
    assert stuck.arguments["content"] == "approved text" and stuck.base_etag is not None
    assert _tagged(files, approval_id) == (1 if stage == "executed" else 0)
    with pytest.raises(ConflictError, match="already running"):
        approvals.approve(approval_id)  # nobody can claim it a second time
    assert approvals.recover(stale_after=3600) == []  # too fresh: maybe still resolving
    [recovered] = approvals.recover(stale_after=0)
    assert recovered.status == "done", recovered
    assert approvals.get(approval_id).status == "done"
    assert files.read("/memories/a.md").content == "approved text"
    assert _tagged(files, approval_id) == 1  # the write happened exactly once
    assert [e.op for e in files.history("/memories/a.md")] == ["write", "write"]
    assert approvals.recover(stale_after=0) == []  # nothing left running
    store.close()  # type: ignore[attr-defined]


def test_killed_after_claim_and_file_changed_meanwhile_is_failed_not_applied(
        tmp_path: Path) -> None:
    db = str(tmp_path / "crash.db")
    approval_id = _park(db)
    _crash_after(db, approval_id, "claimed")

    store, approvals, files = _layout(db)
    files.write("/memories/a.md", "someone else's text", actor="user")
    [recovered] = approvals.recover(stale_after=0)
    assert recovered.status == "failed"
    assert recovered.reason.startswith("not applied:") and "changed since" in recovered.reason
    assert files.read("/memories/a.md").content == "someone else's text"
    assert _tagged(files, approval_id) == 0  # the approved write never ran
    stored = json.loads(approvals.store.read(f"/approvals/{approval_id}.json").content)
    assert stored["status"] == "failed"
    store.close()  # type: ignore[attr-defined]


def test_two_recoverers_of_one_running_approval_apply_it_once(tmp_path: Path) -> None:
    db = str(tmp_path / "race.db")
    approval_id = _park(db)
    store, approvals, files = _layout(db)
    claimed = approvals.claim(approval_id)
    first = approvals.execute(claimed)  # two executors: the second sees the tagged change
    second = approvals.execute(claimed)
    assert first.status == second.status == "done"
    assert approvals.finish(first).status == "done"
    assert approvals.finish(second).status == "done"
    assert _tagged(files, approval_id) == 1
    assert files.read("/memories/a.md").content == "parked text"
    store.close()  # type: ignore[attr-defined]


def test_without_history_a_write_made_before_the_crash_is_recognised(tmp_path: Path) -> None:
    from remem.files import InMemoryFileBackend, LocalFileBackend

    files = LocalFileBackend(tmp_path / "root")
    approvals = Approvals(InMemoryFileBackend(), files)
    files.write("/memories/a.md", "before")
    parked = GuardedFiles(files, POLICY, approvals).write("/memories/a.md", "after")
    assert isinstance(parked, Interrupt)
    approvals.execute(approvals.claim(parked.approval_id))  # ... and the outcome is lost
    [recovered] = approvals.recover(stale_after=0)
    assert recovered.status == "done" and files.read("/memories/a.md").content == "after"
    edit = GuardedFiles(files, POLICY, approvals).edit("/memories/a.md", "after", "later")
    assert isinstance(edit, Interrupt)
    claimed = approvals.claim(edit.approval_id)
    files.write("/memories/a.md", "changed by hand")
    assert approvals.finish(approvals.execute(claimed)).status == "failed"
    assert files.read("/memories/a.md").content == "changed by hand"
