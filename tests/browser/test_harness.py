"""The browser harness itself: a missing Chromium fails the session with the fix, and the
test run never installs anything itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.harness import ensure_chromium


def test_a_missing_chromium_fails_naming_the_install_command(tmp_path: Path) -> None:
    missing = tmp_path / "chromium"
    with pytest.raises(pytest.fail.Exception) as failed:
        ensure_chromium(missing)
    assert str(missing) in str(failed.value)
    assert "make system-deps" in str(failed.value)
    assert "apt-get install -y chromium" in str(failed.value)


def test_a_present_chromium_is_used_as_it_is(tmp_path: Path) -> None:
    present = tmp_path / "chromium"
    present.write_text("#!/bin/sh\n")
    assert ensure_chromium(present) == present
