"""Packaging: the license the metadata declares ships as a file, and the container files
are structurally what docs/deploy.md describes (Docker itself is not available in CI)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_declared_license_ships_as_a_file() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT"
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License") and "Permission is hereby granted" in text
    # hatchling puts LICEN[CS]E* into the wheel and sdist by default
    assert project.get("license-files", ["LICENSE"]) == ["LICENSE"]
