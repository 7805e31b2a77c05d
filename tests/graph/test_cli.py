"""`remem graph`: a real SQLite file, the chat model over loopback HTTP."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from click.testing import CliRunner, Result

from remem.cli import cli
from remem.testing import LoopbackServer


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), env=env or {})


def llm_env(server: LoopbackServer) -> dict[str, str]:
    return {"REMEM_LLM_MODEL": "gpt-test", "REMEM_LLM_BASE_URL": server.url,
            "REMEM_LLM_API_KEY": "sk-test", "REMEM_LLM_PROVIDER": "openai"}


def extraction(company: str, since: str, ends: list[int]) -> dict[str, object]:
    return {"entities": [{"ref": 1, "name": "Ada", "type": "person",
                          "existing": 1 if ends else None},
                         {"ref": 2, "name": company, "type": "organization"}],
            "facts": [{"subject": 1, "predicate": "works_at", "object": 2,
                       "fact": f"Ada works at {company}", "valid_at": since,
                       "contradicts": ends}]}


def test_ingest_search_entity_export(tmp_path: Path) -> None:
    db = str(tmp_path / "g.db")
    common = ("--db", db, "--embedder", "fake")
    with LoopbackServer() as server:
        server.chat.add(extraction("Acme", "2019-01-01", []),
                        extraction("Globex", "2022-05-01", [1]))
        first = run("graph", "ingest", "Ada joined Acme in 2019.", "--at", "2019-02-01",
                    *common, env=llm_env(server))
        assert first.exit_code == 0, first.output
        assert "1 facts added" in first.output and "1 model call" in first.output
        second = run("graph", "ingest", "Ada moved to Globex in May.", "--at",
                     "2022-06-01", "--json", *common, env=llm_env(server))
        assert second.exit_code == 0, second.output
        data = json.loads(second.output)
        assert data["llm_calls"] == 1 and len(data["invalidated"]) == 1
    then = run("graph", "search", "Ada works", "--as-of", "2020-06-01", *common)
    assert then.exit_code == 0, then.output
    assert "Ada works at Acme" in then.output and "Globex" not in then.output
    assert "[2019-01-01 .. 2022-05-01]" in then.output
    hits = json.loads(run("graph", "search", "Ada", "--json", *common).output)["hits"]
    assert {h["fact"]["fact"] for h in hits} == {"Ada works at Acme", "Ada works at Globex"}
    page = run("graph", "entity", "Ada", *common)
    assert page.exit_code == 0, page.output
    current = page.output.split("timeline:")[0]
    assert "Ada works at Globex" in current and "Acme" not in current
    out = tmp_path / "g.graphml"
    assert run("graph", "export", "--db", db, "--format", "graphml", "--out",
               str(out)).exit_code == 0
    ns = {"g": "http://graphml.graphdrawing.org/xmlns"}
    assert len(ET.parse(out).getroot().findall(".//g:edge", ns)) == 2
    exported = json.loads(run("graph", "export", "--db", db).output)
    assert len(exported["facts"]) == 2 and len(exported["episodes"]) == 2


def test_bad_input_is_exit_2_and_names_the_option(tmp_path: Path) -> None:
    db = str(tmp_path / "g.db")
    result = run("graph", "search", "Ada", "--db", db, "--as-of", "yesterday")
    assert result.exit_code in (1, 2)  # no database yet
    with LoopbackServer() as server:
        server.chat.add(extraction("Acme", "2019-01-01", []))
        run("graph", "ingest", "Ada joined Acme.", "--db", db, "--embedder", "none",
            env=llm_env(server))
    result = run("graph", "search", "Ada", "--db", db, "--as-of", "yesterday",
                 "--embedder", "none")
    # the one time option of every command (remem.cli.options.TimestampType)
    assert result.exit_code == 2 and "'--as-of': 'yesterday' is not a time" in result.output
    result = run("graph", "entity", "Zed", "--db", db, "--embedder", "none")
    assert result.exit_code == 1 and "no entity named 'Zed'" in result.output
    result = run("graph", "ingest", "--db", db, "--embedder", "none")
    assert result.exit_code == 2 and "give the episode once" in result.output


def test_profile_and_timeline_of_a_users_graph(tmp_path: Path) -> None:
    from remem import FakeEmbedder, Memory
    from remem.llm import ScriptedModel

    db = str(tmp_path / "p.db")
    reply = {**extraction("Acme", "2019-01-01", []),
             "profile": [{"op": "add", "path": "/work/company", "value": "Acme"}],
             "events": [{"text": "joined Acme", "date": "2019-01-01", "tags": ["work"]},
                        {"text": "moved to Berlin", "date": "2020-06-01", "tags": ["move"]}]}
    with Memory.open(db, embedder=FakeEmbedder(), llm=ScriptedModel([reply])) as mem:
        mem.graph(user_id="ada").ingest("Ada joined Acme in 2019, moved to Berlin in 2020.")
    common = ("--db", db, "--embedder", "none", "--user", "ada")
    shown = run("graph", "profile", *common)
    assert shown.exit_code == 0, shown.output
    assert shown.output == "work:\n  company: Acme\n"
    changed = run("graph", "profile", *common, "--set", "/work/title=engineer", "--remove",
                  "/work/company", "--json")
    assert changed.exit_code == 0, changed.output
    assert json.loads(changed.output) == {"work": {"title": "engineer"}}
    history = run("graph", "profile", *common, "--history")
    assert [line.split()[1:3] for line in history.output.splitlines()] == [
        ["add", "/work/company"], ["add", "/work/title"], ["remove", "/work/company"]]
    bad = run("graph", "profile", *common, "--set", "/zodiac/sign=Leo")
    assert bad.exit_code == 2 and "not in the schema" in bad.output
    events = run("graph", "timeline", *common, "--since", "2020-01-01")
    assert events.output == "2020-06-01  moved to Berlin  [move]\n"
    tagged = json.loads(run("graph", "timeline", *common, "--tag", "work", "--json").output)
    assert [e["text"] for e in tagged] == ["joined Acme"]
    other = run("graph", "timeline", "--db", db, "--embedder", "none", "--user", "bob")
    assert other.output == "no events\n"
