"""The OpenAI Agents SDK's own session tests, run on RememSession: fetch the pinned sdist, run
its test files that build a ``SQLiteSession`` in a subprocess pytest (its config, the
installed SDK) with tests/integrations/openai_agents_suite_plugin.py putting RememSession in
its place, and compare with the same run on the SDK's ``SQLiteSession``.

``python -m tests.integrations.openai_agents_suite`` prints the counts of both runs and every
failure RememSession has that SQLiteSession does not, sorted by kind;
tests/integrations/test_openai_agents_own_suite.py asserts on them.

The sdist is downloaded with pip once into a cache directory (``$REMEM_AGENTS_SUITE``, else
``<tmp>/remem-openai-agents-suite``); only its ``tests/`` and ``pyproject.toml`` are
extracted, never its ``agents/`` sources, so the installed SDK is the one under test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ElementTree
from collections import Counter
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path, PurePosixPath

DIST, VERSION = "openai-agents", "0.24.0"  # the test extra pins it exactly; the installed SDK
PLUGIN_DIR = Path(__file__).resolve().parent
#: the SDK's test files that build a SQLiteSession (the plugin keeps only those tests)
FILES = (
    "tests/memory/test_session.py", "tests/memory/test_session_limit.py",
    "tests/memory/test_session_persistence_sanitize.py",
    "tests/memory/test_session_context_wrapper.py", "tests/memory/test_compaction_suffix.py",
    "tests/memory/test_compaction_model_visibility.py",
    "tests/memory/test_openai_responses_compaction_session.py", "tests/test_agent_runner.py",
    "tests/test_agent_runner_streamed.py", "tests/test_tool_batch_failure_history.py",
    "tests/test_native_tool_failure_history.py", "tests/test_tool_failure_boundaries.py",
    "tests/test_soft_cancel.py", "tests/test_max_turns.py",
    "tests/test_programmatic_tool_calling.py", "tests/test_run_impl_resume_paths.py",
)

#: why RememSession fails a test that SQLiteSession passes: marks in the failure's message or
#: in the test's id. The compaction tests fail the same way on a plain subclass of
#: SQLiteSession: the SDK's partial compaction (its private ``_get_compaction_snapshot``) is
#: for SQLiteSession itself only, and every other session is compacted whole.
KINDS = (
    ("a closed session", ("is closed",)),
    ("SQLiteSession's connections and locks", ("_connections", "_locked_connection", "_lock",
                                               "no such table: agent_", "db_path")),
    ("the SDK's partial compaction, SQLiteSession's own", (
        "_get_compaction_snapshot", "_insert_items", "test_compaction_suffix",
        "test_compaction_model_visibility", "compaction_rollback_budget",
        "after_cancelled_compaction")),
)


def installed_mismatch() -> str | None:
    """Why the pinned tests cannot run on the installed SDK, or ``None``."""
    try:
        found = metadata.version(DIST)
    except metadata.PackageNotFoundError:
        return f"{DIST} is not installed"
    return None if found == VERSION else f"{DIST}: pinned {VERSION}, installed {found}"


def cache_dir() -> Path:
    configured = os.environ.get("REMEM_AGENTS_SUITE")
    return Path(configured) if configured else \
        Path(tempfile.gettempdir()) / "remem-openai-agents-suite"


def _extract(archive: Path, target: Path) -> None:
    """The archive's ``tests/`` and ``pyproject.toml`` (regular files, no path leaving
    ``target``) into ``target``."""
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            parts = PurePosixPath(member.name).parts[1:]  # below the top directory
            if not member.isfile() or not parts or ".." in parts or (
                    parts[0] != "tests" and parts != ("pyproject.toml",)):
                continue
            source = tar.extractfile(member)
            if source is None:
                continue
            path = target.joinpath(*parts)
            path.parent.mkdir(parents=True, exist_ok=True)
            with source, path.open("wb") as out:
                shutil.copyfileobj(source, out)


def fetch() -> Path:
    """The directory holding the sdist's ``tests/``, downloaded from PyPI the first time."""
    root = cache_dir() / f"{DIST}-{VERSION}"
    if (root / "pyproject.toml").exists():
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{DIST}-", dir=root.parent))
    try:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        "--no-binary", ":all:", f"{DIST}=={VERSION}", "-d", str(work / "sdist")],
                       check=True, capture_output=True, text=True, timeout=600)
        archives = list((work / "sdist").glob("*.tar.gz"))
        if len(archives) != 1:
            raise RuntimeError(f"pip download {DIST}=={VERSION} left {archives}")
        _extract(archives[0], work / "tree")
        try:
            (work / "tree").rename(root)  # atomic: a concurrent run may have won
        except OSError:
            if not (root / "pyproject.toml").exists():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return root


@dataclass
class Outcome:
    """One run: each test's outcome (``passed``, ``failed``, ``skipped``) and the first line
    of each failure's message, by test id."""

    variant: str
    outcomes: dict[str, str] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)

    def count(self) -> Counter[str]:
        return Counter(self.outcomes.values())

    def failed(self) -> set[str]:
        return {test for test, outcome in self.outcomes.items() if outcome == "failed"}


def _parse(report: Path, variant: str) -> Outcome:
    outcome = Outcome(variant)
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        test = f"{case.get('classname')}::{case.get('name')}"
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is not None:
            if outcome.outcomes.get(test) != "failed":
                outcome.outcomes[test] = "failed"
                message = (problem.get("message") or problem.text or "").strip()
                outcome.messages[test] = message.splitlines()[0][:300] if message else ""
        elif case.find("skipped") is not None:
            outcome.outcomes.setdefault(test, "skipped")
        else:
            outcome.outcomes.setdefault(test, "passed")
    return outcome


def start(variant: str, workdir: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """Start one variant's run (a subprocess pytest in the sdist's directory)."""
    root = fetch()
    report = workdir / f"agents-{variant}.xml"
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("PYTEST_", "REMEM_AGENTS_VARIANT"))}
    env.update(REMEM_AGENTS_VARIANT=variant, PYTHONPATH=os.pathsep.join(
        [str(PLUGIN_DIR), str(root), env.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "-p", "openai_agents_suite_plugin", f"--junitxml={report}", *FILES]
    log = (workdir / f"agents-{variant}.log").open("wb")
    process = subprocess.Popen(command, cwd=root, env=env, stdout=log,
                               stderr=subprocess.STDOUT)
    log.close()
    return process, report


def run_both(workdir: Path) -> dict[str, Outcome]:
    """Both variants, side by side (two processes)."""
    started = {variant: start(variant, workdir) for variant in ("reference", "remem")}
    out = {}
    for variant, (process, report) in started.items():
        process.wait(timeout=1800)
        if not report.exists():
            log = (workdir / f"agents-{variant}.log").read_text(errors="replace")
            raise RuntimeError(f"the {variant} run wrote no report:\n{log[-3000:]}")
        out[variant] = _parse(report, variant)
    return out


def kind_of(test: str, message: str) -> str:
    """The documented kind a RememSession-only failure belongs to, or ``undocumented``."""
    for kind, marks in KINDS:
        if any(mark in message or mark in test for mark in marks):
            return kind
    return "undocumented"


def only_remem(outcomes: dict[str, Outcome]) -> dict[str, str]:
    """The tests RememSession fails and SQLiteSession does not, with their kind."""
    reference, remem = outcomes["reference"], outcomes["remem"]
    return {test: kind_of(test, remem.messages.get(test, ""))
            for test in sorted(remem.failed() - reference.failed())}


def main() -> None:
    problem = installed_mismatch()
    if problem:
        raise SystemExit(problem)
    with tempfile.TemporaryDirectory() as workdir:
        outcomes = run_both(Path(workdir))
    for variant, outcome in outcomes.items():
        print(f"{variant}: {dict(sorted(outcome.count().items()))}")
    failures = only_remem(outcomes)
    print(f"RememSession-only failures: {dict(Counter(failures.values()))}")
    for test, kind in failures.items():
        print(f"  [{kind}] {test}: {outcomes['remem'].messages.get(test, '')[:160]}")


if __name__ == "__main__":
    main()
