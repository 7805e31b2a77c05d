"""CLI start-up benchmark: each common ``remem`` command timed as a whole process.

Run from the repository root, in the venv that has ``remem`` installed::

    python benchmarks/cli.py                       # 5 runs per command after 1 warm-up
    python benchmarks/cli.py --runs 10 --out benchmarks/results/cli.json
    python benchmarks/cli.py --only help,list,mcp-initialize

Every figure is the wall time of one whole process, start-up and imports included, as a user
typing the command sees it: ``remem --help``, ``remem list``, ``remem add --no-infer``,
``remem search`` (which loads the local embedding model: it is what ``search`` costs on a fresh
shell), ``python -c "import remem"``, ``python -c "import remem.cli"``, and ``remem mcp``
answering ``initialize``: the JSON-RPC request is written to its stdin and the time runs to the
response line on its stdout (what an agent host counts against its start-up timeout). Each
command runs ``--warmup`` times uncounted (the OS file cache), then ``--runs`` times; the table
shows min, median and max. The store is a temporary SQLite file holding ``--memories``
memories, added with the same embedder the timed commands use (``--embedder``, default
``local``). The machine's load average is printed and recorded: compare runs made in the same
conditions. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

USER = "u"
TEXTS = ("prefers tea over coffee in the morning", "works on the remem project",
         "lives in Lisbon and cycles to work", "is allergic to peanuts",
         "meeting notes are kept in the shared drive")
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "remem-bench", "version": "0"}}}


@dataclass(frozen=True)
class Case:
    """One timed command: ``name`` in the table, ``run`` does one run and returns its wall
    seconds (raising when the command failed)."""

    name: str
    shown: str
    run: Callable[[], float]


def _remem() -> str:
    """The ``remem`` console script next to this interpreter, else the one on PATH."""
    here = Path(sys.executable).with_name("remem")
    found = str(here) if here.exists() else shutil.which("remem")
    if found is None:
        raise SystemExit("no `remem` command: install the package (pip install -e .)")
    return found


def timed(argv: Sequence[str], env: dict[str, str]) -> float:
    """Wall seconds of one whole process ``argv``; raises if it exits non-zero."""
    start = time.perf_counter()
    done = subprocess.run(list(argv), env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: "
                           f"{done.stderr.decode(errors='replace')[-500:]}")
    return elapsed


def timed_initialize(argv: Sequence[str], env: dict[str, str], timeout: float) -> float:
    """Seconds from starting ``argv`` (an MCP stdio server) to its answer to ``initialize``."""
    start = time.perf_counter()
    proc = subprocess.Popen(list(argv), env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
        proc.stdin.flush()
        line = proc.stdout.readline()
        elapsed = time.perf_counter() - start
        if not line:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise RuntimeError(f"{' '.join(argv)} closed stdout before answering: {err[-500:]}")
        answer = json.loads(line)
        if answer.get("id") != 1 or "result" not in answer:
            raise RuntimeError(f"unexpected answer to initialize: {line[:300]!r}")
        return elapsed
    finally:
        proc.stdin.close()  # end of input: the server shuts down
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout:
            proc.stdout.close()
        if proc.stderr:
            proc.stderr.close()


def cases(remem: str, db: Path, embedder: str, timeout: float) -> list[Case]:
    """The commands timed, in table order."""
    env = {**os.environ, "REMEM_EMBEDDER": embedder, "NO_COLOR": "1"}
    python = sys.executable
    scope = ["--db", str(db), "--user", USER]
    counter = iter(range(10**9))

    def add() -> float:
        return timed([remem, "add", *scope, "--no-infer", f"bench note {next(counter)}"], env)

    def cmd(*argv: str) -> Callable[[], float]:
        return lambda: timed(list(argv), env)

    return [
        Case("help", "remem --help", cmd(remem, "--help")),
        Case("list", "remem list --db F --user u", cmd(remem, "list", *scope)),
        Case("add", "remem add --db F --user u --no-infer TEXT", add),
        Case("search", "remem search --db F --user u QUERY",
             cmd(remem, "search", *scope, "what does the user drink")),
        Case("import-remem", 'python -c "import remem"', cmd(python, "-c", "import remem")),
        Case("import-remem-cli", 'python -c "import remem.cli"',
             cmd(python, "-c", "import remem.cli")),
        Case("mcp-initialize", "remem mcp --db F: initialize answered",
             lambda: timed_initialize([remem, "mcp", "--db", str(db)], env, timeout)),
    ]


def measure(case: Case, runs: int, warmup: int) -> dict[str, Any]:
    """Warm up, then ``runs`` timed runs of ``case``: min, median, max in seconds."""
    for _ in range(warmup):
        case.run()
    times = [case.run() for _ in range(runs)]
    return {"name": case.name, "command": case.shown, "runs": runs, "times": times,
            "min": min(times), "median": statistics.median(times), "max": max(times)}


def seed(remem: str, db: Path, embedder: str, memories: int) -> None:
    """The store the commands read: ``memories`` memories of user ``u``."""
    env = {**os.environ, "REMEM_EMBEDDER": embedder}
    texts = [TEXTS[i % len(TEXTS)] + f" ({i})" for i in range(memories)]
    for text in texts:
        timed([remem, "add", "--db", str(db), "--user", USER, "--no-infer", text], env)


def table(rows: list[dict[str, Any]]) -> str:
    """The results as a plain-text table (seconds)."""
    width = max(len(r["command"]) for r in rows)
    lines = [f"{'command':<{width}}  {'min s':>7}  {'median s':>8}  {'max s':>7}",
             "-" * (width + 30)]
    lines += [f"{r['command']:<{width}}  {r['min']:7.3f}  {r['median']:8.3f}  {r['max']:7.3f}"
              for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print the table, optionally write JSON (``--out``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=5, help="timed runs per command (5)")
    parser.add_argument("--warmup", type=int, default=1, help="uncounted runs first (1)")
    parser.add_argument("--memories", type=int, default=5, help="memories in the store (5)")
    parser.add_argument("--embedder", default="local",
                        help="embedder of the store and the commands (local)")
    parser.add_argument("--only", default=None,
                        help="comma-separated case names: help,list,add,search,import-remem,"
                             "import-remem-cli,mcp-initialize")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds an MCP server may take to exit after its input ends")
    parser.add_argument("--tmpdir", default=None, help="where the SQLite file goes")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON")
    args = parser.parse_args(argv)
    remem = _remem()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(dir=args.tmpdir) as tmp:
        db = Path(tmp) / "bench.db"
        print(f"seeding {args.memories} memories ({args.embedder} embedder)...", file=sys.stderr)
        seed(remem, db, args.embedder, args.memories)
        chosen = cases(remem, db, args.embedder, args.timeout)
        if args.only:
            wanted = set(args.only.split(","))
            unknown = wanted - {c.name for c in chosen}
            if unknown:
                parser.error(f"unknown case(s): {', '.join(sorted(unknown))}")
            chosen = [c for c in chosen if c.name in wanted]
        rows = []
        for case in chosen:
            print(f"timing {case.shown} ...", file=sys.stderr)
            rows.append(measure(case, args.runs, args.warmup))
    load_after = os.getloadavg()
    print(table(rows))
    print(f"\nload average before {load_before[0]:.2f}, after {load_after[0]:.2f} "
          f"({os.cpu_count()} cpus)")
    if args.out is not None:
        figures = {"benchmark": "cli", "rows": rows, "runs": args.runs, "warmup": args.warmup,
                   "memories": args.memories, "embedder": args.embedder,
                   "python": platform.python_version(), "machine": platform.machine(),
                   "cpus": os.cpu_count(), "load_average_before": list(load_before),
                   "load_average_after": list(load_after)}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
