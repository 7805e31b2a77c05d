"""The file backend conformance suite: every test runs on every backend (see conftest)."""

from __future__ import annotations

import pytest

from remem.errors import (
    EditError,
    FileConflictError,
    InvalidInputError,
    NotFoundError,
    PathError,
    UnsupportedError,
)
from remem.files import ABSENT, FileBackend, etag_of


def test_write_then_read_round_trips_text(files: FileBackend, base: str) -> None:
    text = "第一行 first\nsecond line\n\tthird — with ✓ unicode\n"
    info = files.write(f"{base}/notes/a.md", text)
    assert info.path == f"{base}/notes/a.md"
    assert info.size == len(text.encode("utf-8"))
    assert info.etag == etag_of(text)
    read = files.read(f"{base}/notes/a.md")
    assert (read.content, read.etag, read.total_lines, read.remaining) == (text, info.etag, 3, 0)
    assert files.stat(f"{base}/notes/a.md") is not None
    assert files.stat(f"{base}/notes/missing.md") is None


def test_paths_are_normalised_the_same_everywhere(files: FileBackend, base: str) -> None:
    files.write(f"{base}//notes/./a.md", "x")
    assert files.read(f"{base}/notes/a.md").content == "x"
    assert [e.path for e in files.ls(f"{base}/notes/")] == [f"{base}/notes/a.md"]


def test_read_pages_by_lines(files: FileBackend, base: str) -> None:
    files.write(f"{base}/long.txt", "".join(f"line {n}\n" for n in range(10)))
    part = files.read(f"{base}/long.txt", offset=3, limit=4)
    assert part.content == "line 3\nline 4\nline 5\nline 6\n"
    assert (part.offset, part.lines, part.total_lines, part.remaining) == (3, 4, 10, 3)
    assert files.read(f"{base}/long.txt", offset=10).content == ""
    with pytest.raises(InvalidInputError, match="past the end"):
        files.read(f"{base}/long.txt", offset=11)
    with pytest.raises(InvalidInputError, match="limit must be"):
        files.read(f"{base}/long.txt", limit=0)


def test_missing_files_are_not_found(files: FileBackend, base: str) -> None:
    for call in (lambda: files.read(f"{base}/nope.md"),
                 lambda: files.edit(f"{base}/nope.md", "a", "b"),
                 lambda: files.delete(f"{base}/nope.md")):
        with pytest.raises(NotFoundError, match="no file at"):
            call()


def test_ls_lists_direct_children_with_directories(files: FileBackend, base: str) -> None:
    for name in ("b.md", "a.md", "sub/c.md", "sub/deeper/d.md", ".hidden"):
        files.write(f"{base}/{name}", name)
    entries = files.ls(base)
    assert [(e.path, e.is_dir) for e in entries] == [
        (f"{base}/.hidden", False), (f"{base}/a.md", False), (f"{base}/b.md", False),
        (f"{base}/sub", True)]
    assert [e.path for e in files.ls(f"{base}/sub")] == [f"{base}/sub/c.md",
                                                          f"{base}/sub/deeper"]
    assert files.ls(f"{base}/empty") == []


def test_edit_replaces_one_exact_occurrence(files: FileBackend, base: str) -> None:
    path = f"{base}/e.md"
    files.write(path, "alpha beta alpha\n")
    with pytest.raises(EditError, match="occurs 2 times"):
        files.edit(path, "alpha", "gamma")
    with pytest.raises(EditError, match="does not occur"):
        files.edit(path, "delta", "gamma")
    with pytest.raises(EditError, match="non-empty"):
        files.edit(path, "", "gamma")
    info = files.edit(path, "beta", "BETA")
    assert files.read(path).content == "alpha BETA alpha\n"
    files.edit(path, "alpha", "A", replace_all=True, etag=info.etag)
    assert files.read(path).content == "A BETA A\n"


def test_glob_matches_names_and_depths(files: FileBackend, base: str) -> None:
    for name in ("a.md", "b.txt", "x/c.md", "x/y/d.md", ".secret.md"):
        files.write(f"{base}/{name}", "-")
    assert [i.path for i in files.glob("*.md", base)] == [f"{base}/a.md"]
    assert [i.path for i in files.glob("**/*.md", base)] == [
        f"{base}/a.md", f"{base}/x/c.md", f"{base}/x/y/d.md"]
    assert [i.path for i in files.glob(f"{base}/x/*/?.md")] == [f"{base}/x/y/d.md"]
    assert [i.path for i in files.glob(".*", base)] == [f"{base}/.secret.md"]
    with pytest.raises(InvalidInputError):
        files.glob("../*", base)


def test_grep_finds_literal_text_with_line_numbers(files: FileBackend, base: str) -> None:
    files.write(f"{base}/a.md", "one\ntwo (.*)\nthree\n")
    files.write(f"{base}/sub/b.txt", "(.*) again\n")
    hits = files.grep("(.*)", base)
    assert [(h.path, h.line, h.text) for h in hits] == [
        (f"{base}/a.md", 2, "two (.*)"), (f"{base}/sub/b.txt", 1, "(.*) again")]
    assert [h.path for h in files.grep("(.*)", base, glob="**/*.txt")] == [f"{base}/sub/b.txt"]
    assert len(files.grep("(.*)", base, limit=1)) == 1
    assert files.grep("absent", base) == []


def test_delete_removes_the_file(files: FileBackend, base: str) -> None:
    info = files.write(f"{base}/d.md", "bye")
    with pytest.raises(FileConflictError):
        files.delete(f"{base}/d.md", etag=etag_of("other"))
    files.delete(f"{base}/d.md", etag=info.etag)
    assert files.stat(f"{base}/d.md") is None
    assert files.glob("**", base) == []


def test_stale_etags_are_conflicts_naming_both_versions(files: FileBackend, base: str) -> None:
    path = f"{base}/c.md"
    first = files.write(path, "v1", etag=ABSENT)
    with pytest.raises(FileConflictError) as exists:
        files.write(path, "again", etag=ABSENT)
    assert exists.value.actual == first.etag
    second = files.write(path, "v2", etag=first.etag)
    for call in (lambda: files.write(path, "v3", etag=first.etag),
                 lambda: files.edit(path, "v2", "v3", etag=first.etag),
                 lambda: files.delete(path, etag=first.etag)):
        with pytest.raises(FileConflictError) as stale:
            call()
        assert (stale.value.expected, stale.value.actual) == (first.etag, second.etag)
        assert "read it again" in str(stale.value)
    assert files.read(path).content == "v2"


def test_bad_content_is_refused_before_anything_is_written(files: FileBackend,
                                                           base: str) -> None:
    for bad, rule in (("a\x00b", "NUL"), ("\ud800", "surrogate"), (b"bytes", "string")):
        with pytest.raises(InvalidInputError, match=rule):
            files.write(f"{base}/bad.md", bad)  # type: ignore[arg-type]
    assert files.stat(f"{base}/bad.md") is None


def test_history_and_undo(files: FileBackend, base: str, keeps_history: bool) -> None:
    path = f"{base}/h.md"
    files.write(path, "one")
    files.edit(path, "one", "two")
    files.delete(path)
    if not keeps_history:
        with pytest.raises(UnsupportedError, match="keeps no history"):
            files.history(path)
        with pytest.raises(UnsupportedError):
            files.undo(path)
        return
    events = files.history(path)
    assert [(e.op, e.before, e.after, e.version) for e in events] == [
        ("write", None, "one", 1), ("edit", "one", "two", 2), ("delete", "two", None, 3)]
    assert all(e.path == path for e in events)
    restored = files.undo(path)  # the delete
    assert restored is not None and files.read(path).content == "two"
    with pytest.raises(FileConflictError):
        files.undo(path, etag=etag_of("not it"))
    assert files.undo(path, etag=restored.etag) is None  # undoing the undo deletes again
    assert [e.op for e in files.history(path)] == ["write", "edit", "delete", "undo", "undo"]
    with pytest.raises(NotFoundError):
        files.undo(f"{base}/never.md")


def test_writing_over_a_directory_is_a_path_error(files: FileBackend, base: str,
                                                  backend_name: str) -> None:
    files.write(f"{base}/dir/inner.md", "x")
    if backend_name in ("local", "composite-workspace"):  # only disks have real directories
        with pytest.raises(PathError, match="is a directory"):
            files.write(f"{base}/dir", "x")
        with pytest.raises(PathError):
            files.write(f"{base}/dir/inner.md/child", "x")
    assert files.read(f"{base}/dir/inner.md").content == "x"


def test_unusual_but_legal_names_round_trip(files: FileBackend, base: str) -> None:
    names = ["*", "[x]", "a b", "名字.md", "#50%.txt", ".env", "?", "~"]
    for name in names:
        files.write(f"{base}/{name}/{name}", name)
    for name in names:
        assert files.read(f"{base}/{name}/{name}").content == name
        assert [e.path for e in files.ls(f"{base}/{name}")] == [f"{base}/{name}/{name}"]
    assert len(files.glob("**", base)) == len(names)
