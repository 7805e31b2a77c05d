"""File backend benchmark: read, write and edit latency on a SQLite store holding many files,
and skill listing.

Run from the repository root::

    python benchmarks/files.py --files 10000 --skills 500 --repeat 300 \
        --out benchmarks/results/files.json

It fills a ``StoreFileBackend`` on a SQLite file with ``--files`` files (about 1 KB each, in
100 directories), then times ``--ops`` random reads, writes (replacing a whole file) and
edits (one exact replacement), each a separate call as an agent makes them, and reports the
median, p95 and p99 in milliseconds. Writes and edits include the path's write lock, the
history event and the commit (SQLite in WAL mode, its default synchronous setting).
Then it lists ``--skills`` skills (``/skills/<name>/SKILL.md`` with YAML frontmatter, and
``--skill-files`` more files in each folder, as real skills carry references and scripts):
the first listing parses every file, the next ``--repeat`` ones reuse the parse of files whose
etag did not change. Each listing is timed in wall and CPU time, and the garbage collector's
passes during them are counted (a full, generation-2 pass walks every object of the process,
so its pause is what a p95 sees first). ``--gc-freeze`` calls :func:`gc.freeze` after the
fill, as a long-running application may at start-up; the library itself never changes the
collector's settings. Targets (issue 18): read/write/edit p95 <= 5 ms at 10k files, listing
500 skills <= 20 ms.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from remem.files import StoreFileBackend
from remem.files.skills import Skills
from remem.store import SQLiteStore

LINE = "The agent notes what it learned about the trip, one line at a time. "


def _percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {"median_ms": round(statistics.median(ordered) * 1000, 3),
            "p95_ms": round(at(0.95) * 1000, 3), "p99_ms": round(at(0.99) * 1000, 3),
            "n": len(ordered)}


#: CPU seconds of the last _time call's operations (this process only: independent of how
#: busy the machine's other processes keep its cores)
_cpu: list[float] = []


def _time(fn: Callable[[int], Any], ops: int) -> list[float]:
    samples = []
    _cpu.clear()
    for n in range(ops):
        start, cpu = time.perf_counter(), time.process_time()
        fn(n)
        samples.append(time.perf_counter() - start)
        _cpu.append(time.process_time() - cpu)
    return samples


def _timed(fn: Callable[[int], Any], ops: int) -> dict[str, Any]:
    wall = _percentiles(_time(fn, ops))
    cpu = _percentiles(list(_cpu))
    return {**wall, "cpu_median_ms": cpu["median_ms"], "cpu_p95_ms": cpu["p95_ms"]}


class GcWatch:
    """Counts the collector's passes by generation, and the time spent in full ones, while
    it is active (a ``gc.callbacks`` hook: observing, not changing, the collector)."""

    def __init__(self) -> None:
        self.passes = [0, 0, 0]
        self.full_ms: list[float] = []
        self._started = 0.0

    def _hook(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        self.passes[info["generation"]] += 1
        if info["generation"] == 2:
            self.full_ms.append((time.perf_counter() - self._started) * 1000)

    def __enter__(self) -> GcWatch:
        gc.callbacks.append(self._hook)
        return self

    def __exit__(self, *_: object) -> None:
        gc.callbacks.remove(self._hook)

    def summary(self) -> dict[str, Any]:
        return {"passes_by_generation": self.passes, "full_passes_ms": [
            round(ms, 2) for ms in self.full_ms]}


def _fill_skills(files: StoreFileBackend, root: str, count: int, extra: int) -> None:
    for n in range(count):
        name = f"skill-{n:04d}"
        files.write(f"{root}/{name}/SKILL.md",
                    f"---\nname: {name}\ndescription: Does task {n}. Use it when the "
                    f"user asks for task {n}.\nallowed-tools: read_file grep\n---\n"
                    + LINE * 5)
        for k in range(extra):
            other = "reference.md" if k == 0 else f"scripts/step_{k}.py"
            files.write(f"{root}/{name}/{other}", f"# {other} of {name}\n" + LINE * 14)


def run(files_count: int, skills_count: int, ops: int, seed: int, *, repeat: int = 300,
        skill_files: int = 0, gc_freeze: bool = False) -> dict[str, Any]:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(tmp) / "files.db")
        store.setup()
        files = StoreFileBackend(store, ("bench",))
        paths = [f"/notes/d{n % 100:02d}/f{n:05d}.md" for n in range(files_count)]
        started = time.perf_counter()
        for n, path in enumerate(paths):
            files.write(path, f"# file {n}\n" + LINE * 14 + f"\nmarker {n}\n")
        fill_s = time.perf_counter() - started

        def read(_: int) -> None:
            files.read(rng.choice(paths))

        def write(n: int) -> None:
            files.write(rng.choice(paths), f"# rewritten {n}\n" + LINE * 14 + "\nmarker x\n")

        def edit(n: int) -> None:
            path = rng.choice(paths)
            current = files.read(path)
            marker = current.content.rsplit("marker ", 1)[1].strip()
            files.edit(path, f"marker {marker}", f"marker e{n}", etag=current.etag)

        def edit_only(n: int) -> None:  # the edit call alone, as a tool call makes it
            path = paths[n % len(paths)]
            files.edit(path, "# ", "## ", replace_all=False)

        results: dict[str, Any] = {
            "read": _timed(read, ops),
            "write": _timed(write, ops),
            "edit": _timed(edit_only, min(ops, len(paths))),
            "read_then_edit": _timed(edit, ops),
        }
        root = "/skills"
        _fill_skills(files, root, skills_count, skill_files)
        if gc_freeze:
            gc.freeze()
        skills = Skills(files, root)
        start = time.perf_counter()
        listed = skills.list()
        first = time.perf_counter() - start
        with GcWatch() as watch:
            again = _timed(lambda _: skills.list(), repeat)
        assert len(listed) == skills_count
        store.close()
    return {"files": files_count, "fill_seconds": round(fill_s, 2), **results,
            "skills": {"count": skills_count, "other_files_per_skill": skill_files,
                       "first_listing_ms": round(first * 1000, 2), "cached_listing": again,
                       "gc_during_listings": watch.summary(), "gc_freeze": gc_freeze}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--skills", type=int, default=500)
    parser.add_argument("--ops", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=300,
                        help="cached listings timed (enough for a stable p95)")
    parser.add_argument("--skill-files", type=int, default=0,
                        help="other files in each skill folder besides SKILL.md")
    parser.add_argument("--gc-freeze", action="store_true",
                        help="gc.freeze() after the fill, as an application may at start-up")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    load_before = [round(x, 2) for x in os.getloadavg()]
    result = run(args.files, args.skills, args.ops, args.seed, repeat=args.repeat,
                 skill_files=args.skill_files, gc_freeze=args.gc_freeze)
    result["load_average_before"] = load_before
    result["load_average"] = [round(x, 2) for x in os.getloadavg()]
    result["machine"] = {"python": platform.python_version(), "platform": platform.platform()}
    print(f"StoreFileBackend on SQLite, {result['files']} files "
          f"(filled in {result['fill_seconds']} s)")
    print(f"{'operation':<16}{'median ms':>11}{'p95 ms':>9}{'p99 ms':>9}{'CPU p95 ms':>12}"
          f"{'target p95':>12}")
    for name in ("read", "write", "edit", "read_then_edit"):
        row = result[name]
        target = "5 ms" if name != "read_then_edit" else "-"
        print(f"{name:<16}{row['median_ms']:>11}{row['p95_ms']:>9}{row['p99_ms']:>9}"
              f"{row['cpu_p95_ms']:>12}{target:>12}")
    skills = result["skills"]
    cached = skills["cached_listing"]
    watched = skills["gc_during_listings"]
    print(f"skills: {skills['count']} listed ({skills['other_files_per_skill']} other files "
          f"per folder), first listing {skills['first_listing_ms']} ms")
    print(f"cached listing x{cached['n']}: median {cached['median_ms']} ms, p95 "
          f"{cached['p95_ms']} ms, p99 {cached['p99_ms']} ms; CPU median "
          f"{cached['cpu_median_ms']} ms, p95 {cached['cpu_p95_ms']} ms (target p95 20 ms)")
    print(f"collector passes during the listings by generation "
          f"{watched['passes_by_generation']}, full passes (ms) {watched['full_passes_ms']}"
          + (" [gc.freeze() after the fill]" if skills["gc_freeze"] else ""))
    print(f"load average (1, 5, 15 min) before the run {load_before}, after it "
          f"{result['load_average']} (the machine has {os.cpu_count()} cores: wall times "
          "include waiting for a core, CPU times do not)")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
