"""Globs narrowed by what their pattern fixes (the last name, the depth): every backend answers
exactly what matching the pattern against every file answers; store records written before
records kept ``name`` and ``depth`` still list; the composite asks each mount for its part."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from remem.files import CompositeBackend, FileBackend, InMemoryFileBackend, StoreFileBackend
from remem.files.base import ScanHint, literal_prefix
from remem.files.core import glob_matches, match_glob
from remem.files.skills import Skills
from remem.files.types import etag_of
from tests.files.conftest import Opened, make_backend

TREE = ("SKILL.md", "a/SKILL.md", "b/SKILL.md", "b/SKILL.md.bak", "b/xSKILL.md",
        "c/d/SKILL.md", ".hidden/SKILL.md", "e/notes.md", "e/f/g/SKILL.md", "a/ref/guide.md")
PATTERNS = ("*/SKILL.md", "**/SKILL.md", "*/*.md", "*/*/SKILL.md", "SKILL.md", ".*/SKILL.md",
            "**/*/SKILL.md", "*/S*.md", "b/*", "a/**", "*", "**")


def test_narrowed_globs_answer_what_the_pattern_matches(files: FileBackend, base: str) -> None:
    for name in TREE:
        files.write(f"{base}/{name}", f"{name}\n")
    paths = sorted(f"{base}/{name}" for name in TREE)
    for pattern in PATTERNS:
        expected = [p for p in paths if match_glob(pattern, p, base)]
        assert [i.path for i in files.glob(pattern, base)] == expected, pattern
    assert [i.path for i in files.glob("*/SKILL.md", base)] == [
        f"{base}/a/SKILL.md", f"{base}/b/SKILL.md"]
    assert [i.path for i in files.glob(f"{base}/*/*/SKILL.md")] == [f"{base}/c/d/SKILL.md"]
    assert [h.path for h in files.grep("SKILL", base, glob="*/SKILL.md")] == [
        f"{base}/a/SKILL.md", f"{base}/b/SKILL.md"]
    # a listing entry is what stat says (store backends keep size and etag beside the text)
    for info in files.glob("**", base):
        assert info == files.stat(info.path)
        assert info.etag == etag_of(f"{info.path.removeprefix(base + '/')}\n")


def test_a_composite_asks_each_mount_for_its_part_and_keeps_shadowing(tmp_path: Path) -> None:
    outer, inner, default = InMemoryFileBackend(), InMemoryFileBackend(), InMemoryFileBackend()
    files = CompositeBackend({"/m": outer, "/m/inner": inner}, default=default)
    files.write("/m/a/SKILL.md", "a")
    files.write("/m/inner/x/SKILL.md", "x")
    files.write("/top/SKILL.md", "top")
    outer.write("/inner/y/SKILL.md", "shadowed by the deeper mount")
    assert [i.path for i in files.glob("*/SKILL.md", "/m")] == ["/m/a/SKILL.md"]
    assert [i.path for i in files.glob("inner/*/SKILL.md", "/m")] == ["/m/inner/x/SKILL.md"]
    assert [i.path for i in files.glob("**/SKILL.md")] == [
        "/m/a/SKILL.md", "/m/inner/x/SKILL.md", "/top/SKILL.md"]
    assert [i.path for i in files.glob("/m/*/*/SKILL.md")] == ["/m/inner/x/SKILL.md"]
    assert [i.path for i in files.glob("*/SKILL.md")] == ["/top/SKILL.md"]


def _legacy_value(path: str, content: str | None, version: int = 1) -> dict[str, Any]:
    """A file record as StoreFileBackend wrote it before records kept name, depth, etag and
    size."""
    return {"type": "file", "path": path, "content": content, "version": version,
            "modified_at": 1_700_000_000.0, "previous": None, "last_op": "write",
            "live": content is not None}


SKILL = "---\nname: {name}\ndescription: The {name} skill.\n---\nSteps.\n"


@pytest.mark.parametrize("kind", ["store-memory", "store-sqlite", "store-postgres"])
def test_records_written_before_name_and_depth_still_list(kind: str, tmp_path: Path,
                                                           request: pytest.FixtureRequest) -> None:
    opened = Opened()
    dsn = request.getfixturevalue("pg_database") if kind == "store-postgres" else None
    files = make_backend(kind, tmp_path, opened, dsn)
    assert isinstance(files, StoreFileBackend)
    try:
        old = SKILL.format(name="old")
        # the documented layout: one namespace label per directory, the file name as key
        root = (*files.namespace, "files", "/skills")
        files.store.put((*root, "/old"), "SKILL.md", _legacy_value("/skills/old/SKILL.md", old),
                        index=False)
        files.store.put((*root, "/old"), "notes.md",
                        _legacy_value("/skills/old/notes.md", "n"), index=False)
        files.store.put((*root, "/gone"), "SKILL.md",
                        _legacy_value("/skills/gone/SKILL.md", None, 2), index=False)
        files.write("/skills/new/SKILL.md", SKILL.format(name="new"))
        files.write("/skills/new/deeper/SKILL.md", "not a skill: too deep")

        assert [i.path for i in files.glob("*/SKILL.md", "/skills")] == [
            "/skills/new/SKILL.md", "/skills/old/SKILL.md"]
        listed = {i.path: i for i in files.glob("**", "/skills")}
        assert sorted(listed) == ["/skills/new/SKILL.md", "/skills/new/deeper/SKILL.md",
                                  "/skills/old/SKILL.md", "/skills/old/notes.md"]
        assert listed["/skills/old/SKILL.md"].etag == etag_of(old)
        assert listed["/skills/old/SKILL.md"].size == len(old.encode("utf-8"))
        assert [s.name for s in Skills(files).list()] == ["new", "old"]
        # the store leaves out what the name and depth rule out, but not the older records
        hint = ScanHint.of(("skills", "*", "SKILL.md"))
        assert sorted(v["path"] for v in files._values("/skills", hint)) == [
            "/skills/new/SKILL.md", "/skills/old/SKILL.md", "/skills/old/notes.md"]

        # any change rewrites a record with the fields the store filters on
        files.edit("/skills/old/SKILL.md", "Steps.", "Steps, edited.")
        value = files.store.get((*root, "/old"), "SKILL.md")
        assert value is not None
        assert (value.value["name"], value.value["depth"], value.value["version"]) == (
            "SKILL.md", 3, 2)
        assert value.value["etag"] == etag_of(old.replace("Steps.", "Steps, edited."))
        assert [i.path for i in files.glob("*/SKILL.md", "/skills")] == [
            "/skills/new/SKILL.md", "/skills/old/SKILL.md"]

        # upgrade() rewrites the rest (the tombstone too) and nothing else changes
        before = {i.path: i for i in files.glob("**", "/")}
        assert files.upgrade() == 2
        assert files.upgrade() == 0
        assert {i.path: i for i in files.glob("**", "/")} == before
        assert sorted(v["path"] for v in files._values("/skills", hint)) == [
            "/skills/new/SKILL.md", "/skills/old/SKILL.md"]
        assert files.history("/skills/old/notes.md") == []
        notes = files.store.get((*root, "/old"), "notes.md")
        gone = files.store.get((*root, "/gone"), "SKILL.md")
        assert notes is not None and gone is not None
        assert (notes.value["version"], notes.value["depth"], gone.value["version"],
                gone.value["live"], gone.value["name"]) == (1, 3, 2, False, "SKILL.md")
        assert files.stat("/skills/gone/SKILL.md") is None
        assert files.undo("/skills/old/SKILL.md") is not None  # the edit, undone
        assert files.read("/skills/old/SKILL.md").content == old
    finally:
        opened.close()


_NAMES = st.sampled_from(["a", "b", ".h", "SKILL.md", "x.md"])
_GLOB_SEGMENTS = st.sampled_from(["*", "?", "**", "a", "b", "S*", ".*", "[ab]", "SKILL.md",
                                  "*.md"])


@given(pattern=st.lists(_GLOB_SEGMENTS, max_size=5), path=st.lists(_NAMES, min_size=1,
                                                                     max_size=5))
def test_a_hint_never_rules_out_a_match(pattern: list[str], path: list[str]) -> None:
    hint = ScanHint.of(tuple(pattern))
    full = "/" + "/".join(path)
    if hint.admits(full):
        assert hint.name is None or path[-1] == hint.name
        assert hint.depth is None or len(path) == hint.depth


@given(pattern=st.lists(_GLOB_SEGMENTS, max_size=5),
       mount=st.lists(st.sampled_from(["a", "b", "m"]), min_size=1, max_size=2),
       inner=st.lists(_NAMES, min_size=1, max_size=4))
def test_the_part_asked_of_a_mount_keeps_every_match(pattern: list[str], mount: list[str],
                                                     inner: list[str]) -> None:
    rest = literal_prefix(tuple(pattern), tuple(mount))
    if rest is not None and glob_matches(tuple(pattern), "/" + "/".join([*mount, *inner])):
        assert glob_matches(rest, "/" + "/".join(inner))
