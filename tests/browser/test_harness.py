"""The browser harness itself: a missing Chromium fails the session with the fix (the
install path, as root, is what .ci/run and the fixture run; it needs the network, so it is
not repeated here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.harness import ensure_chromium


def test_a_missing_chromium_fails_naming_the_install_command(tmp_path: Path) -> None:
    missing = tmp_path / "chromium"
    with pytest.raises(pytest.fail.Exception) as failed:
        ensure_chromium(missing, may_install=False)
    assert str(missing) in str(failed.value)
    assert "apt-get install -y chromium" in str(failed.value)


def test_a_present_chromium_is_used_as_it_is(tmp_path: Path) -> None:
    present = tmp_path / "chromium"
    present.write_text("#!/bin/sh\n")
    assert ensure_chromium(present, may_install=False) == present
