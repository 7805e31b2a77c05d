"""``remem blocks`` update / delete / detach / get / list --agent on a real SQLite file: built
from the same request values as ``/v1/blocks`` and the MCP block admin tools, so the CLI
prints what ``run_block_admin`` answers for the same request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from remem.blocks import Blocks
from remem.blocks.requests import ChangeBlockRequest, DetachBlockRequest, run_block_admin
from remem.cli import cli
from remem.files import InMemoryFileBackend


def _run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def _json(*args: str) -> Any:
    result = _run(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_update_delete_detach_answer_like_the_request_values(tmp_path: Path) -> None:
    db = ["--db", str(tmp_path / "blocks.db")]
    made = _json("blocks", "create", "p-1", "--label", "persona", "--value", "A guide.",
                 "--read-only", *db)
    _json("blocks", "create", "h-1", "--label", "human", "--limit", "40", *db)
    for agent, block in (("a", "p-1"), ("a", "h-1"), ("b", "h-1")):
        _json("blocks", "attach", agent, block, *db)

    # update keeps the fields it is not given (read_only stays on)
    changed = _json("blocks", "update", "p-1", "--value", "A careful guide.", "--etag",
                    made["etag"], *db)
    assert (changed["value"], changed["read_only"], changed["limit"]) == (
        "A careful guide.", True, 2000)
    # the same request in process answers the same JSON (but for the etag it moves on)
    here = Blocks(InMemoryFileBackend())
    here.create("p-1", label="persona", value="A guide.", read_only=True)
    expected = run_block_admin(here, ChangeBlockRequest.of(id="p-1", value="A careful guide."))
    assert {k: v for k, v in changed.items() if k != "etag"} == {
        k: v for k, v in expected.items() if k != "etag"}
    writable = _json("blocks", "update", "p-1", "--writable", "--description", "who I am",
                     "--limit", "100", *db)
    assert (writable["read_only"], writable["description"], writable["limit"]) == (
        False, "who I am", 100)

    stale = _run("blocks", "update", "p-1", "--value", "x", "--etag", made["etag"], *db)
    assert stale.exit_code == 1 and "changed" in stale.output, stale.output
    over = _run("blocks", "update", "h-1", "--value", "x" * 41, *db)
    assert over.exit_code != 0 and "limit" in over.output, over.output

    # detach: what run_block_admin answers, and only that agent stops seeing it
    detached = _json("blocks", "detach", "a", "h-1", *db)
    both = Blocks(InMemoryFileBackend())
    both.create("h-1", label="human")
    both.create("p-1", label="persona")
    both.attach("a", "p-1")
    both.attach("a", "h-1")
    assert detached == run_block_admin(both, DetachBlockRequest.of(agent_id="a",
                                                                   block_id="h-1"))
    assert detached == {"agent_id": "a", "blocks": ["p-1"]}
    assert [b["id"] for b in _json("blocks", "list", "--agent", "b", *db)["blocks"]] == ["h-1"]

    assert _json("blocks", "delete", "h-1", *db) == {"deleted": "h-1"}
    assert [b["id"] for b in _json("blocks", "list", *db)["blocks"]] == ["p-1"]
    assert _json("blocks", "get", "p-1", *db)["description"] == "who I am"
    missing = _run("blocks", "get", "h-1", *db)
    assert missing.exit_code == 1 and "h-1" in missing.output, missing.output
    gone = _run("blocks", "delete", "h-1", *db)
    assert gone.exit_code == 1 and "h-1" in gone.output, gone.output


def test_bad_values_are_usage_errors_naming_the_option(tmp_path: Path) -> None:
    db = ["--db", str(tmp_path / "blocks.db")]
    bad_limit = _run("blocks", "update", "p-1", "--limit", "0", *db)
    assert bad_limit.exit_code == 2 and "--limit" in bad_limit.output, bad_limit.output
    bad_agent = _run("blocks", "detach", "no agent", "p-1", *db)
    assert bad_agent.exit_code == 2 and "AGENT_ID: String should match pattern" in \
        bad_agent.output, bad_agent.output
    no_label = _run("blocks", "create", "x-1", *db)
    assert no_label.exit_code == 2 and "--label" in no_label.output, no_label.output
