"""The OpenAI Agents SDK's own tests that build a SQLiteSession, run on RememSession in its
place and on SQLiteSession itself (tests/integrations/openai_agents_suite.py: the pinned
sdist's tests, downloaded from PyPI once and cached, in two subprocess runs). Every test
RememSession fails and SQLiteSession passes must be of a documented kind
(docs/integrations.md). Slow (minutes); skipped without the SDK at the pinned version or when
PyPI cannot be reached."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import pytest

from tests.integrations import openai_agents_suite as suite

pytestmark = pytest.mark.slow


def test_the_sdks_session_tests_on_remem_session(tmp_path: Path) -> None:
    # never a skip: the test extra pins the SDK this suite is for, and PyPI is reachable
    problem = suite.installed_mismatch()
    if problem:
        pytest.fail(f"{problem}: install the test extra's pin (pip install -e '.[test]')")
    try:
        suite.fetch()
    except (subprocess.SubprocessError, OSError) as error:
        pytest.fail(f"{suite.DIST}=={suite.VERSION} could not be downloaded: {error}")
    outcomes = suite.run_both(tmp_path)
    reference, remem = outcomes["reference"], outcomes["remem"]
    failures = suite.only_remem(outcomes)
    print(f"\nSQLiteSession: {dict(reference.count())}; RememSession: {dict(remem.count())}; "
          f"RememSession only: {dict(Counter(failures.values()))}")
    assert remem.outcomes.keys() == reference.outcomes.keys()
    assert len(remem.outcomes) >= 300  # the plugin kept the session tests, not none
    undocumented = {test: remem.messages.get(test, "") for test, kind in failures.items()
                    if kind == "undocumented"}
    assert undocumented == {}
    # the documented kinds are SQLiteSession's internals and its private compaction path
    assert remem.count()["passed"] >= reference.count()["passed"] - 60
