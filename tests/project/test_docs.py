"""Every Python example of README.md and docs/ runs on its own and prints what it says it prints,
and every module of remem passes its doctests.

How blocks are found, run, checked and marked (fragments, PostgreSQL, a server):
``tests/docs_harness.py``. One test per block, named after its page and line
(``docs/memory.md:L10``); a failure's traceback points into the Markdown.
"""

from __future__ import annotations

import ast
import doctest
import importlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import docs_harness as harness
from tests.docs_harness import Block

BLOCKS = harness.collect()
RUNNABLE = [block for block in BLOCKS if block.kind != "fragment"]
FRAGMENTS = [block for block in BLOCKS if block.kind == "fragment"]


#: what the loopback chat model answers the server's memory extraction, whatever the text
EXTRACTION = {"inserts": [{"memory": {"content": "Lives in Berlin"}}]}


@pytest.fixture
def docs_server(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """``remem serve`` on a fresh SQLite file with the fake embedder and, as its chat model, the
    loopback server answering every call with :data:`EXTRACTION`: its URL and a key."""
    from remem.server.keys import KeyStore
    from remem.store import open_store
    from remem.testing import LoopbackServer
    from remem.testing.server import ServerProcess

    db = str(tmp_path / "served.db")
    with open_store(db) as store:
        token, _ = KeyStore(store).create("acme")
    with LoopbackServer() as model:
        model.chat.default = EXTRACTION
        env = harness.child_env({"REMEM_LLM_BASE_URL": model.url, "REMEM_LLM_MODEL": "loopback",
                                 "REMEM_LLM_API_KEY": "sk-test",
                                 "REMEM_LLM_PROVIDER": "openai"})
        with ServerProcess(["--db", db, "--embedder", "fake"], env=env) as server:
            yield server.url, token


@pytest.mark.parametrize("block", RUNNABLE, ids=[block.id for block in RUNNABLE])
def test_block_runs_and_prints_what_it_says(block: Block, tmp_path: Path,
                                            request: pytest.FixtureRequest) -> None:
    replace: dict[str, str] = {}
    env: dict[str, str] = {}
    if block.kind == "postgres":
        dsn = request.getfixturevalue("pg_database")
        urls = set(harness.POSTGRES_URL.findall(block.code))
        assert urls, f"{block.id} is marked postgres but has no postgresql:// URL to replace"
        replace = dict.fromkeys(urls, dsn)
    elif block.kind == "server":
        url, key = request.getfixturevalue("docs_server")
        assert harness.SERVER_URL in block.code, f"{block.id} never uses {harness.SERVER_URL}"
        replace = {harness.SERVER_URL: url, harness.SERVER_KEY: repr(key)}
        env = {"REMEM_API_KEY": key}
    result = harness.run(block, tmp_path, replace=replace, env=env)
    assert result.returncode == 0, f"{block.id} failed:\n{result.stderr}"
    problems = harness.output_problems(harness.documented_output(block.code),
                                       result.stdout.splitlines())
    assert not problems, f"{block.id} printed other than documented:\n" + "\n".join(problems)


@pytest.mark.parametrize("block", FRAGMENTS, ids=[block.id for block in FRAGMENTS])
def test_fragment_compiles(block: Block) -> None:
    """A block marked as a fragment is not run, but it must still be valid Python."""
    compile(block.source(), str(harness.ROOT / block.page), "exec",
            flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)


def test_every_python_block_is_collected() -> None:
    """The parser misses no ```python fence of a page, and the pages are where we think."""
    for path in harness.pages():
        page = path.relative_to(harness.ROOT).as_posix()
        fences = len(re.findall(r"^\s*```python\b", path.read_text(encoding="utf-8"), re.M))
        assert fences == sum(block.page == page for block in BLOCKS), page
    assert {"README.md", "docs/memory.md", "docs/llm.md"} <= {block.page for block in BLOCKS}


# --- the harness itself -------------------------------------------------------------------

PAGE = """\
Text.

```python
print(1)  # 1
```

<!-- docs-test: fragment: needs your own retriever -->
```python
run(MyRetriever())
```

````markdown
```python
not collected: inside another fence
```
````

<!-- docs-test: postgres -->
```python title="x.py"
open_store("postgresql://u@db/m")
```
"""


def test_blocks_of_reads_fences_and_markers() -> None:
    blocks = harness.blocks_of(PAGE, "p.md")
    assert [(b.line, b.kind, b.reason) for b in blocks] == [
        (3, "run", ""), (8, "fragment", "needs your own retriever"), (19, "postgres", "")]
    assert blocks[0].code == "print(1)  # 1\n" and blocks[0].id == "p.md:L3"
    assert blocks[0].source().splitlines()[3] == "print(1)  # 1"  # line 4 of the page


@pytest.mark.parametrize(("text", "error"), [
    ("<!-- docs-test: fragmnt: typo -->\n```python\nx\n```\n", "unknown marker"),
    ("<!-- docs-test: fragment -->\n```python\nx\n```\n", "needs a reason"),
    ("<!-- docs-test: server: why -->\n```python\nx\n```\n", "takes no reason"),
    ("<!-- docs-test: postgres -->\n\n```python\nx\n```\n", "right before"),
    ("<!-- docs-test: postgres -->\n```bash\nx\n```\n", "right before"),
    ("```python\nx\n", "never closed"),
])
def test_bad_markers_are_errors(text: str, error: str) -> None:
    with pytest.raises(harness.MarkdownError, match=error):
        harness.blocks_of(text, "p.md")


def test_documented_output_reads_trailing_and_following_comments() -> None:
    code = """\
# not output
print("a")  # a
print(
    "b", "c", sep="\\n",
)
# b
# c

print("d")
x = 1  # not output
for i in range(2):
    print(i)
# ...
# 1
"""
    assert harness.documented_output(code) == ["a", "b", "c", "...", "1"]


def test_output_problems_use_ellipsis_and_count_lines() -> None:
    assert harness.output_problems(["id mem_... ok"], ["id mem_01ab ok"]) == []
    assert harness.output_problems(["1"], ["2"]) == ["line 1: documented '1', printed '2'"]
    assert "documented 0 line(s), printed 1" in harness.output_problems([], ["stray"])[0]
    assert "documented 2 line(s), printed 1" in harness.output_problems(["a", "b"], ["a"])[0]


def test_blocks_see_no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real")
    monkeypatch.setenv("REMEM_LLM_MODEL", "gpt-4.1")
    env = harness.child_env({"REMEM_API_KEY": "rk_test"})
    assert "OPENAI_API_KEY" not in env and "REMEM_LLM_MODEL" not in env
    assert env["REMEM_API_KEY"] == "rk_test"


# --- doctests of the package -----------------------------------------------------------------

SRC = harness.ROOT / "src"
MODULES = sorted(
    ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
    for path in (SRC / "remem").rglob("*.py")
    if path.name != "__main__.py")  # importing a __main__ runs it


@pytest.mark.parametrize("name", MODULES)
def test_module_doctests(name: str) -> None:
    """Every module imports (with the test extras installed) and its docstring examples pass."""
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in finder.find(module, name):  # objects defined in the module, not re-exported
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} doctests of {name} failed"


def test_doctests_are_found() -> None:
    """The walk finds the modules that have examples (a broken finder would pass silently)."""
    counts = {}
    for name in ("remem.api", "remem.llm.scripted", "remem.threads.trim"):
        module = importlib.import_module(name)
        counts[name] = sum(len(test.examples) for test in doctest.DocTestFinder().find(module))
    assert all(count > 0 for count in counts.values()), counts
    assert set(counts) <= set(MODULES)
