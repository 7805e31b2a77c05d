"""Path-escape probes: hostile paths against every backend, and a count of escapes (must be 0).

An escape is: a file written outside the sandbox (the disk backend's root), the content of a
file outside it read back (through read, grep or a listing), or a store key that is not a
normalised path. Every probe must be accepted as a path inside the root, or refused with a
typed remem error (never an OSError or a crash).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from remem.errors import RememError
from remem.files import CompositeBackend, FileBackend, LocalFileBackend
from remem.files.paths import normalize_file

SECRET = "TOPSECRET-OUTSIDE"
PWNED = "PWNED-BY-PROBE"

PROBES: list[str] = [
    # '..' chains, plain and mixed with real names
    "..", "../", "../secret.txt", "../../etc/passwd", "/../outside/secret.txt",
    "a/../../outside/secret.txt", "a/b/../../../x", "/a/./../../x", "./../x", "a/..",
    "../../../../../../../../../../../../etc/passwd", "....//....//etc/passwd", ".../x",
    # encoded separators and dots (single and double encoded), backslashes
    "..%2f..%2fetc%2fpasswd", "%2e%2e/%2e%2e/etc/passwd", "%2e%2e%2f", "..%5c..%5cwindows",
    "%252e%252e/x", "%2E%2E/x", "..%00/x", "%00", "%2F", "..\\..\\outside\\secret.txt",
    "\\outside\\secret.txt", "a\\..\\..\\x", "..\\", "\\\\server\\share\\x",
    # absolute host paths, drives, shares (inside the root at most)
    "C:\\Windows\\system32", "C:/Windows/system32", "c:x", "//server/share/x",
    "/etc/passwd", "/root/.ssh/id_rsa", "~/.ssh/id_rsa", "/proc/self/environ",
    "file:///etc/passwd",
    # NUL and control characters
    "a\x00b", "secret.txt\x00.md", "\x00", "/x/\x00/../y", "\t../x", "\n/etc", "a\x7fb",
    "a\x85b",
    # very long names and deep paths
    "a" * 300, "/".join(["a"] * 100), "x/" * 600, "é" * 200, "/" + "b" * 2000,
    # Unicode look-alikes of '/', '\\' and '.'
    "\u2215etc\u2215passwd", "..\u2215..\u2215etc", "\uff0e\uff0e/\uff0e\uff0e/etc/passwd",
    "\uff0e\uff0e\uff0fsecret", "\u2024\u2024/x", "\ufe52\ufe52/x", "\u2044etc",
    "\u29f8x", "a\u2216b", "\uff3c..\uff3cx", "..\u200b/x", "\u3002\u3002/x",
    # spaces and trailing dots some file systems drop
    " ../x", "../ ", "x./y", "x /y",
    # symbolic links planted in the disk root: out, to a file out, loops, absolute, self
    "link_out/secret.txt", "link_out/new.txt", "link_secret", "loop_a/x", "loop_a",
    "abs_link/passwd", "self/self/self/x", "link_out/../link_out/secret.txt",
    "dangling/x", "dangling",
]


def _plant(root: Path, outside: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    links = {"link_out": outside, "link_secret": outside / "secret.txt",
             "loop_a": root / "loop_b", "loop_b": root / "loop_a", "abs_link": Path("/etc"),
             "self": root, "dangling": outside / "missing-dir"}
    for name, target in links.items():
        os.symlink(target, root / name)


def _disk_roots(files: FileBackend) -> list[tuple[str, Path]]:
    """(mount prefix, root) of each disk backend inside ``files``."""
    if isinstance(files, LocalFileBackend):
        return [("", files.root)]
    if isinstance(files, CompositeBackend):
        return [(mount, b.root) for mount, b in files.routes.items()
                if isinstance(b, LocalFileBackend)]
    return []


def _attempts(files: FileBackend, path: str) -> list[Callable[[], object]]:
    return [
        lambda: files.write(path, PWNED),
        lambda: files.read(path).content,
        lambda: files.edit(path, SECRET, PWNED),
        lambda: files.delete(path),
        lambda: files.stat(path),
        lambda: [i.path for i in files.ls(path)],
        lambda: [i.path for i in files.glob("**", path)],
        lambda: [h.text for h in files.grep(SECRET, path)],
        lambda: [i.path for i in files.glob(path)],
    ]


def test_hostile_paths_never_escape(make_files: Callable[[], FileBackend], base: str,
                                    tmp_path: Path) -> None:
    assert len(PROBES) >= 50
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    files = make_files()
    for _, root in _disk_roots(files):
        _plant(root, outside)
    mount = base.removesuffix("/proj")
    escapes: list[str] = []
    untyped: list[str] = []
    refused = accepted = 0
    for probe in PROBES:
        path = f"{mount}/{probe}" if mount else probe
        for attempt in _attempts(files, path):
            try:
                result = attempt()
            except RememError:
                refused += 1
                continue
            except Exception as exc:  # anything else is a crash, not a refusal
                untyped.append(f"{path!r}: {type(exc).__name__}: {exc}")
                continue
            accepted += 1
            if SECRET in repr(result):
                escapes.append(f"read outside through {path!r}")
    # nothing written outside the root, the secret unchanged
    assert (outside / "secret.txt").read_text() == SECRET
    for found in tmp_path.rglob("*"):
        if any(found.is_relative_to(root) for _, root in _disk_roots(files)):
            continue
        if found.is_file() and not found.is_symlink() and ".db" not in found.name and (
                PWNED in found.read_text(errors="replace")):
            escapes.append(f"written outside: {found}")
    # every file the backend now holds has a normalised path inside the tree
    for info in files.glob("**", "/"):
        if normalize_file(info.path) != info.path:
            escapes.append(f"stored under a non-normal path {info.path!r}")
    print(f"\n{type(files).__name__} at {mount or '/'}: {len(PROBES)} probes, "
          f"{accepted} attempts accepted inside the root, {refused} refused, "
          f"{len(escapes)} escapes")
    assert untyped == []
    assert escapes == []
    assert refused > len(PROBES) * 4  # most probes are refused outright


def test_links_inside_the_root_are_not_followed_either(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "real").mkdir(parents=True)
    (root / "real" / "a.md").write_text("inside")
    os.symlink(root / "real", root / "alias")
    files = LocalFileBackend(root, durable=False)
    assert files.read("/real/a.md").content == "inside"
    assert [i.path for i in files.glob("**")] == ["/real/a.md"]  # the alias is skipped
    try:
        files.read("/alias/a.md")
    except RememError as exc:
        assert "symbolic link" in str(exc)
    else:
        raise AssertionError("a link was followed")
