"""The marker of LangGraph's own suites run on remem (test_langgraph_own_suite.py here):
``pytest -m langgraph_suite`` runs them alone."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "langgraph_suite: LangGraph's own test suites (pinned sdists) run on remem "
        "in subprocesses (minutes; downloads the sdists from PyPI once)")
