"""LangGraph's own test suites, run on remem: fetch the pinned sdists, run their tests in a
subprocess pytest (their config, the installed LangGraph) with
tests/integrations/langgraph_suite_plugin.py putting remem in place of their savers and
stores, and compare the outcomes with the same tests run unchanged (the suite's reference:
``InMemorySaver`` for ``langgraph`` and ``langgraph-checkpoint``, ``SqliteSaver`` for
``langgraph-checkpoint-sqlite``).

``python -m tests.integrations.langgraph_suites`` prints the counts for every suite and
variant (``remem``; ``memory``: LangGraph's ``InMemorySaver``/``InMemoryStore``; ``sqlite``:
its SQLite saver and store) and every failure remem has that the reference does not;
test_langgraph_own_suite.py asserts on them.

The sdists are downloaded with pip once per version into a cache directory
(``$REMEM_LANGGRAPH_SUITES``, else ``<tmp>/remem-langgraph-suites``), only their ``tests/``
and ``pyproject.toml`` extracted: never their ``langgraph/`` sources, so the installed
LangGraph is the one under test.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path, PurePosixPath

#: the sdists whose tests run; the test extra in pyproject.toml pins the same versions
PINS = {"langgraph": "1.2.24", "langgraph-checkpoint": "4.3.2",
        "langgraph-checkpoint-sqlite": "3.1.2"}

PLUGIN_DIR = Path(__file__).resolve().parent  # langgraph_suite_plugin.py is imported from here


@dataclass(frozen=True)
class Suite:
    """One sdist's test files and how the plugin puts remem in them."""

    name: str
    dist: str
    mode: str  # "langgraph": their conftest fixtures; "modules": classes rebound by name
    reference: str  # the variant that runs their tests unchanged ("memory" or "sqlite")
    files: tuple[str, ...]
    store_files: tuple[str, ...] = ()  # the files that test a store (RememStore), not a saver


SUITES = {
    # the graph tests that run on the checkpointer and store fixtures of LangGraph's conftest
    "langgraph": Suite("langgraph", "langgraph", "langgraph", "memory", (
        "tests/test_pregel.py", "tests/test_pregel_async.py", "tests/test_time_travel.py",
        "tests/test_time_travel_async.py", "tests/test_checkpoint_migration.py",
        "tests/test_large_cases.py", "tests/test_large_cases_async.py",
        "tests/test_subgraph_persistence.py", "tests/test_subgraph_persistence_async.py",
        "tests/test_interruption.py", "tests/test_interrupt_state.py",
        "tests/test_strict_resume.py", "tests/test_pydantic.py",
        "tests/test_delta_channel_exit_mode.py", "tests/test_delta_channel_fork.py",
        "tests/test_delta_channel_parallel_order.py", "tests/test_delta_channel_subgraph.py",
        "tests/test_delta_channel_to_plain.py", "tests/test_delta_channel_update_state.py")),
    "checkpoint": Suite("checkpoint", "langgraph-checkpoint", "modules", "memory", (
        "tests/test_memory.py", "tests/test_store.py"), store_files=("tests/test_store.py",)),
    "sqlite": Suite("sqlite", "langgraph-checkpoint-sqlite", "modules", "sqlite", (
        "tests/test_sqlite.py", "tests/test_aiosqlite.py",
        "tests/test_store.py", "tests/test_async_store.py", "tests/test_ttl.py"),
        store_files=("tests/test_store.py", "tests/test_async_store.py", "tests/test_ttl.py")),
}

#: remem, and LangGraph's two savers (and stores) whose tests run beside it
VARIANTS = ("remem", "memory", "sqlite")

#: what the sync remem API says when it is called while an event loop runs on the thread
EVENT_LOOP_REFUSAL = "called inside a running event loop"


def cache_dir() -> Path:
    """Where the sdists' tests are kept, one directory per distribution and version."""
    configured = os.environ.get("REMEM_LANGGRAPH_SUITES")
    return Path(configured) if configured else Path(tempfile.gettempdir()) / \
        "remem-langgraph-suites"


def installed_mismatches() -> list[str]:
    """The pinned distributions whose installed version is another."""
    out = []
    for dist, version in PINS.items():
        try:
            found = metadata.version(dist)
        except metadata.PackageNotFoundError:
            found = "not installed"
        if found != version:
            out.append(f"{dist}: pinned {version}, installed {found}")
    return out


def _extract(archive: Path, target: Path) -> None:
    """Copy the archive's ``tests/`` and ``pyproject.toml`` (regular files only, no path
    that leaves ``target``) into ``target``."""
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            parts = PurePosixPath(member.name).parts[1:]  # below the top directory
            if not member.isfile() or not parts or ".." in parts:
                continue
            if parts[0] != "tests" and parts != ("pyproject.toml",):
                continue
            source = tar.extractfile(member)
            if source is None:
                continue
            path = target.joinpath(*parts)
            path.parent.mkdir(parents=True, exist_ok=True)
            with source, path.open("wb") as out:
                shutil.copyfileobj(source, out)


def fetch(dist: str, version: str | None = None) -> Path:
    """The directory holding the sdist's ``tests/`` and ``pyproject.toml``, downloaded from
    PyPI the first time (pip, sdist only) and kept in :func:`cache_dir` after."""
    version = version or PINS[dist]
    root = cache_dir() / f"{dist}-{version}"
    if (root / "pyproject.toml").exists():
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{dist}-", dir=root.parent))
    try:
        done = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                               "--no-binary", ":all:", f"{dist}=={version}", "-d",
                               str(work / "sdist")], capture_output=True, text=True, timeout=600)
        if done.returncode:
            raise RuntimeError(f"pip could not download the {dist} {version} sdist from PyPI "
                               f"(its tests are run on remem):\n{done.stderr[-2000:]}")
        archives = list((work / "sdist").glob("*.tar.gz"))
        if len(archives) != 1:
            raise RuntimeError(f"pip download {dist}=={version} left {archives}")
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
    """One run of a suite: each test's outcome (``passed``, ``failed``, ``skipped``) and the
    first line of each failure's message, by test id (the saver's and store's parameters as
    ``*``, so the ids of two variants compare)."""

    variant: str
    outcomes: dict[str, str] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)
    nodeids: dict[str, str] = field(default_factory=dict)  # pytest's own id, to rerun one
    seconds: float = 0.0
    log: str = ""

    def count(self) -> Counter[str]:
        return Counter(self.outcomes.values())

    def failed(self) -> set[str]:
        return {test for test, outcome in self.outcomes.items() if outcome == "failed"}


def _parse(report: Path, variant: str) -> Outcome:
    outcome = Outcome(variant)
    root = ElementTree.parse(report).getroot()
    outcome.seconds = sum(float(suite.get("time") or 0) for suite in root.iter("testsuite"))
    for case in root.iter("testcase"):
        # the plugin names each test twice: pytest's id, and the id to compare variants by
        properties = {prop.get("name"): prop.get("value") or ""
                      for prop in case.iter("property")}
        fallback = f"{case.get('classname')}::{case.get('name')}"  # a collection error
        test = properties.get("compare_as", fallback)
        outcome.nodeids[test] = properties.get("nodeid", fallback)
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is not None:
            if outcome.outcomes.get(test) == "failed":
                continue  # a teardown error after a failure: keep the failure's message
            outcome.outcomes[test] = "failed"
            message = (problem.get("message") or problem.text or "").strip()
            outcome.messages[test] = message.splitlines()[0][:300] if message else ""
        elif case.find("skipped") is not None:
            outcome.outcomes.setdefault(test, "skipped")
        else:
            outcome.outcomes.setdefault(test, "passed")
    return outcome


def start(suite: Suite, variant: str, workdir: Path,
          select: Sequence[str] = ()) -> tuple[subprocess.Popen[bytes], Path, Path]:
    """Start one variant's run of ``suite`` (a subprocess pytest in the sdist's directory,
    with its own pytest config); return the process, its junit report and its log."""
    root = fetch(suite.dist)
    workdir.mkdir(parents=True, exist_ok=True)
    report = workdir / f"{suite.name}-{variant}.xml"
    log = workdir / f"{suite.name}-{variant}.log"
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("PYTEST_", "REMEM_LANGGRAPH_"))}
    env.update(PYTHONPATH=os.pathsep.join([str(PLUGIN_DIR), *filter(None, [
        os.environ.get("PYTHONPATH")])]), REMEM_LANGGRAPH_SUITE=suite.mode,
        REMEM_LANGGRAPH_VARIANT=variant, NO_DOCKER="true", PYTHONDONTWRITEBYTECODE="1")
    command = [sys.executable, "-m", "pytest", "-p", "langgraph_suite_plugin",
               "-p", "no:cacheprovider", "-q", "--rootdir", str(root),
               "-c", str(root / "pyproject.toml"), f"--junitxml={report}",
               *(select or suite.files)]
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=root, env=env, stdout=out,
                                   stderr=subprocess.STDOUT)
    return process, report, log


def run_all(runs: Sequence[tuple[Suite, str]], workdir: Path, *, jobs: int = 0,
            timeout: float = 1800, select: Sequence[str] = ()) -> dict[str, dict[str, Outcome]]:
    """Run each (suite, variant), ``jobs`` at a time (0: all at once; their TTL tests mostly
    sleep); the outcomes by suite name and variant."""
    began = time.monotonic()
    waiting = list(runs)
    running: list[tuple[Suite, str, subprocess.Popen[bytes], Path, Path]] = []
    out: dict[str, dict[str, Outcome]] = {}
    while waiting or running:
        while waiting and (not jobs or len(running) < jobs):
            suite, variant = waiting.pop(0)
            running.append((suite, variant, *start(suite, variant, workdir, select)))
        time.sleep(0.2)
        for entry in [entry for entry in running if entry[2].poll() is not None
                      or time.monotonic() - began > timeout]:
            running.remove(entry)
            suite, variant, process, report, log = entry
            if process.poll() is None:
                process.kill()
                process.wait()
            text = log.read_text(errors="replace")
            if not report.exists():
                raise RuntimeError(f"{suite.name} ({variant}) wrote no report, exit "
                                   f"{process.returncode}:\n{text[-4000:]}")
            outcome = _parse(report, variant)
            outcome.log = text
            out.setdefault(suite.name, {})[variant] = outcome
    return {name: out[name] for name in dict.fromkeys(suite.name for suite, _ in runs)}


def run(suite: Suite, variants: Sequence[str], workdir: Path, *, timeout: float = 1800,
        select: Sequence[str] = ()) -> dict[str, Outcome]:
    """Run ``suite`` once per variant, the variants side by side; their outcomes."""
    return run_all([(suite, variant) for variant in variants], workdir, timeout=timeout,
                   select=select)[suite.name]


def confirmed(suite: Suite, outcome: Outcome, tests: Sequence[str], workdir: Path,
              ) -> dict[str, str]:
    """Of ``tests`` (failures of ``outcome``'s run), those that fail again when run by
    themselves, with their message: a test that passes on a second run failed on timing
    (their suite has tests that race threads or sleep; the machine may be busy)."""
    if not tests:
        return {}
    again = run(suite, [outcome.variant], workdir / "rerun",
                select=[outcome.nodeids[test] for test in tests])[outcome.variant]
    return {test: again.messages.get(test, outcome.messages.get(test, ""))
            for test in tests if again.outcomes.get(test) == "failed"}


def is_store_test(suite: Suite, test_id: str) -> bool:
    """Whether a test of ``suite`` tests a store (RememStore) rather than a saver."""
    return test_id.split("::")[0] in suite.store_files


def new_failures(ours: Outcome, reference: Outcome) -> dict[str, str]:
    """remem's failures the reference does not have, with their first message line."""
    return {test: ours.messages.get(test, "") for test in sorted(ours.failed()
                                                                   - reference.failed())}


def _table(results: dict[str, dict[str, Outcome]]) -> str:
    lines = ["| suite | tests | variant | passed | failed | skipped | event loop | pytest s |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for name, outcomes in results.items():
        suite = SUITES[name]
        for part in (("savers", "stores") if suite.store_files else ("graphs",)):
            for variant, outcome in outcomes.items():
                tests = {t: o for t, o in outcome.outcomes.items()
                         if is_store_test(suite, t) == (part == "stores")}
                counts = Counter(tests.values())
                loop = sum(EVENT_LOOP_REFUSAL in outcome.messages.get(t, "")
                           for t, o in tests.items() if o == "failed")
                lines.append(f"| {name} | {part} | {variant} | {counts['passed']} | "
                             f"{counts['failed']} | {counts['skipped']} | {loop} | "
                             f"{outcome.seconds:.0f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suites", nargs="+", default=list(SUITES), choices=list(SUITES))
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument("--keep", type=Path, help="keep the reports and logs here")
    parser.add_argument("--jobs", type=int, default=0, help="runs at a time (0: all)")
    args = parser.parse_args(argv)
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="langgraph-suites-"))
    workdir.mkdir(parents=True, exist_ok=True)
    runs = [(SUITES[name], variant) for name in args.suites for variant in args.variants]
    began = time.monotonic()
    results = run_all(runs, workdir, jobs=args.jobs)
    print(_table(results))
    print(f"\nwall time {time.monotonic() - began:.0f} s ({args.jobs or len(runs)} at a time)")
    for name, outcomes in results.items():
        reference = SUITES[name].reference
        if "remem" in outcomes and reference in outcomes:
            extra = new_failures(outcomes["remem"], outcomes[reference])
            print(f"\n{name}: {len(extra)} failures on remem that {reference} (their tests "
                  f"unchanged) passes")
            for test, message in extra.items():
                print(f"  {test}\n      {message}")
    print(f"\nreports and logs: {workdir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
