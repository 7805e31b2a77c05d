"""The layers of docs/architecture.md hold: no import cycle between remem's modules (imports
inside functions count, ``if TYPE_CHECKING:`` imports do not), the contracts of
pyproject.toml are kept, and the plug-in registries are filled by the families, never by the
packages below them."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import grimp  # the dev extra's import-linter brings it
import pytest

ROOT = Path(__file__).resolve().parents[2]


def import_cycles(graph: Any) -> list[frozenset[str]]:
    """The strongly connected components of more than one module of ``graph`` (a grimp
    graph): each is one or more import cycles (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work: list[tuple[str, Iterable[str]]] = []
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        work.append((root, iter(sorted(graph.find_modules_directly_imported_by(root)))))
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(
                        graph.find_modules_directly_imported_by(child)))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(frozenset(component))
    return found


def test_remem_has_no_import_cycle() -> None:
    graph = grimp.build_graph("remem", exclude_type_checking_imports=True, cache_dir=None)
    assert len(graph.modules) > 250  # the package itself was read, not an empty stand-in
    assert [sorted(cycle) for cycle in import_cycles(graph)] == []


def test_the_cycle_count_sees_imports_inside_functions_and_skips_type_checking_ones(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "layered"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "low.py").write_text(textwrap.dedent("""
        def later():
            from layered import high  # a cycle hidden in a function
            return high
    """))
    (package / "high.py").write_text("from layered import low\n")
    (package / "typed.py").write_text(textwrap.dedent("""
        from typing import TYPE_CHECKING
        from layered import low
        if TYPE_CHECKING:
            from layered import other  # never runs: no cycle
    """))
    (package / "other.py").write_text("from layered import typed\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("layered", exclude_type_checking_imports=True, cache_dir=None)
    assert import_cycles(graph) == [frozenset({"layered.low", "layered.high"})]


def test_the_import_contracts_are_kept() -> None:
    out = subprocess.run(
        [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports; "
         "sys.exit(lint_imports(no_cache=True, no_logo=True))"],
        cwd=ROOT, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "3 kept, 0 broken" in out.stdout


def _modules_after(code: str) -> set[str]:
    script = f"import sys\n{code}\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    return set(out.stdout.split())


def test_the_background_and_memory_import_no_family() -> None:
    loaded = _modules_after("import remem.background.extraction, remem.memory.operations")
    families = {"remem.api", "remem.episodic", "remem.procedural", "remem.threads",
                "remem.client", "remem.server"}
    assert sorted(families & loaded) == []


def test_every_worker_of_a_memory_runs_every_job_kind() -> None:
    every = {"extract", "noop", "consolidate", "forget", "episodes.extract",
             "prompts.optimize"}
    for entry in ("import remem.api", "import remem.server.state"):
        out = subprocess.run(
            [sys.executable, "-c", f"{entry}\nfrom remem.background.extraction import handlers\n"
             "print(' '.join(handlers(lambda tenant: None)))"],
            cwd=ROOT, capture_output=True, text=True, check=True)
        assert set(out.stdout.split()) == every, entry


def test_a_memory_counts_reads_through_the_registered_observer() -> None:
    out = subprocess.run(
        [sys.executable, "-c", "from remem import FakeEmbedder\nfrom remem.api import Memory\n"
         "from remem.memory.observers import observer_for\n"
         "mem = Memory.open(':memory:', embedder=FakeEmbedder())\n"
         "print(type(observer_for(mem.store)).__name__)"],
        cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "AccessRecorder"
