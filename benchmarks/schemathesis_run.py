"""A long schemathesis run against a real ``remem serve``: every check, every phase.

    python benchmarks/schemathesis_run.py --max-examples 420 --stateful-passes 10 \
        --out benchmarks/results/schemathesis.json -- --continue-on-failure

Not part of the test suite (``tests/server/test_fuzz.py`` is its bounded, in-process
sibling). What it does:

1. a fresh SQLite file and API key, then ``remem serve`` (fake embedder, no MCP) on a free
   loopback port, in a child process;
2. the server's OpenAPI schema, with OpenAPI ``links`` added from the memory routes'
   answers to the routes that take their ids (add -> get / history / patch / delete /
   undo, patch and delete -> undo, undo -> get / history, list -> get), so the stateful
   phase can chain real ids; schemathesis also infers links of its own;
3. the schemathesis CLI on that schema with ``--checks all`` and the phases examples,
   coverage, fuzzing and stateful, writing its NDJSON event stream; then
   ``--stateful-passes`` more stateful passes (the next seeds) over the memory routes
   only, since the stateful phase ends its run at the first failing check and the
   whole-API pass rarely gets far into the memory chains;
4. a summary read from the stream: test cases per phase, answers by status class, 5xx
   answers, failures by check, and per operation of the stateful phase how many calls it
   got and how many answered 2xx (a 2xx of ``GET /v1/memories/{memory_id}`` in that phase
   means the id came from an earlier answer: random ids get 404). It prints a table and
   writes JSON.

The failures are split into the ones the issue's targets are about (5xx, and answers that
break the schema: status code, content type, headers, body) and the others, which report
the server being stricter than its schema (ST202: a schema-valid request refused with a
4xx that names the rule) or looser (ST201).
"""

from __future__ import annotations

import argparse
import base64
import collections
import contextlib
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from remem.server.keys import KeyStore
from remem.store import open_store
from remem.testing import LoopbackServer
from remem.testing.server import ServerProcess

#: check names whose failures mean an answer broke the schema
SCHEMA_CHECKS = ("status_code_conformance", "content_type_conformance",
                 "response_headers_conformance", "response_schema_conformance")
#: the stateful operations the issue asks to be reached
MUST_REACH = ("POST /v1/events/{event_id}/undo", "GET /v1/memories/{memory_id}/history",
              "GET /v1/memories/{memory_id}", "DELETE /v1/memories/{memory_id}")

#: what the loopback chat model answers every memory extraction
EXTRACTION = {"inserts": [{"memory": {"content": "Lives in Berlin"}}]}

_ADD = ("post", "/v1/memories")
_GET = ("get", "/v1/memories/{memory_id}")
_HISTORY = ("get", "/v1/memories/{memory_id}/history")
_PATCH = ("patch", "/v1/memories/{memory_id}")
_DELETE = ("delete", "/v1/memories/{memory_id}")
_UNDO = ("post", "/v1/events/{event_id}/undo")
_LIST = ("post", "/v1/memories/list")

_FIRST_MEMORY = "$response.body#/changes/0/memory/id"
_FIRST_EVENT = "$response.body#/changes/0/event_id"
#: (source, target, parameters) for each added link
LINKS: tuple[tuple[tuple[str, str], tuple[str, str], dict[str, str]], ...] = (
    *((_ADD, target, {"memory_id": _FIRST_MEMORY}) for target in (_GET, _HISTORY, _PATCH,
                                                                  _DELETE)),
    (_ADD, _UNDO, {"event_id": _FIRST_EVENT}),
    (_PATCH, _UNDO, {"event_id": _FIRST_EVENT}),
    (_DELETE, _UNDO, {"event_id": _FIRST_EVENT}),
    (_PATCH, _HISTORY, {"memory_id": "$request.path.memory_id"}),
    (_DELETE, _GET, {"memory_id": "$request.path.memory_id"}),
    (_UNDO, _GET, {"memory_id": _FIRST_MEMORY}),
    (_UNDO, _HISTORY, {"memory_id": _FIRST_MEMORY}),
    (_LIST, _GET, {"memory_id": "$response.body#/memories/0/id"}),
    (_LIST, _DELETE, {"memory_id": "$response.body#/memories/0/id"}),
)


#: the schemathesis CLI, with one heuristic widened: the stateful phase starts its chains
#: only at operations it guesses will succeed with random data, and it guesses wrong for
#: ``POST /v1/memories`` (its ``user_id`` / ``thread_id`` fields look like references to
#: resources nothing produces), so no chain would start at an add. Here every operation
#: with outgoing links may start a chain; the checks are unchanged.
_CLI = """
import sys
from schemathesis.specs.openapi import stateful
guess = stateful.is_likely_root_transition
stateful.is_likely_root_transition = lambda operation, node, produced: (
    guess(operation, node, produced) or operation.label == "POST /v1/memories")
from schemathesis.cli import schemathesis
sys.argv[0] = "schemathesis"
sys.exit(schemathesis())
"""


def add_links(schema: dict[str, Any]) -> int:
    """Add :data:`LINKS` to ``schema`` (in place); how many were added."""
    paths = schema["paths"]
    added = 0
    for (verb, path), (target_verb, target_path), parameters in LINKS:
        target_id = paths[target_path][target_verb]["operationId"]
        answer = paths[path][verb]["responses"]["200"]
        name = f"{target_verb.upper()} {target_path}".replace("/", "_").replace(" ", "")
        answer.setdefault("links", {})[name] = {"operationId": target_id,
                                                "parameters": parameters}
        added += 1
    return added


def _slim(event: dict[str, Any]) -> dict[str, Any]:
    """``event`` without request bodies (most of the stream's size)."""
    finished = event.get("ScenarioFinished")
    if finished and finished.get("recorder"):
        for case in finished["recorder"].get("cases", {}).values():
            case["value"].pop("body", None)
        for interaction in finished["recorder"].get("interactions", {}).values():
            interaction.get("request", {}).pop("body", None)
    return event


def _events(events_file: Path) -> Iterator[dict[str, Any]]:
    with events_file.open(encoding="utf-8") as lines:  # hundreds of MB in a long run
        for line in lines:
            yield _slim(json.loads(line))


def summarise(events_file: Path) -> dict[str, Any]:
    """Counts read from schemathesis' NDJSON event stream."""
    cases_by_phase: collections.Counter[str] = collections.Counter()
    statuses: collections.Counter[str] = collections.Counter()
    server_errors: list[dict[str, Any]] = []
    failed_checks: collections.Counter[str] = collections.Counter()
    stateful: dict[str, collections.Counter[str]] = collections.defaultdict(
        collections.Counter)
    transitions = 0
    for event in _events(events_file):
        if "LoadingFinished" in event:
            transitions = event["LoadingFinished"]["statistic"]["transitions"]["total"]
        finished = event.get("ScenarioFinished")
        if not finished or not finished.get("recorder"):
            continue
        phase = finished["phase"]
        recorder = finished["recorder"]
        cases = recorder.get("cases", {})
        for case_id, case in cases.items():
            value = case["value"]
            label = f"{value['method']} {value['path']}"
            interaction = recorder.get("interactions", {}).get(case_id)
            response = interaction and interaction.get("response")
            if response is None:
                continue  # a case that was not sent (skipped or errored)
            cases_by_phase[phase] += 1
            status = int(response["status_code"])
            statuses[f"{status // 100}xx"] += 1
            if status >= 500:
                body = response.get("content") or {}
                text = (base64.b64decode(body["$base64"]).decode("utf-8", "replace")
                        if isinstance(body, dict) and "$base64" in body else str(body))
                server_errors.append({"operation": label, "status": status,
                                      "body": text[:300]})
            if phase == "stateful":
                stateful[label]["calls"] += 1
                stateful[label]["2xx"] += 200 <= status < 300
        for case_checks in recorder.get("checks", {}).values():
            for check in case_checks:
                if check["status"] == "failure":
                    failed_checks[check["name"]] += 1
    return {
        "cases": sum(cases_by_phase.values()),
        "cases_by_phase": dict(cases_by_phase),
        "answers_by_status_class": dict(sorted(statuses.items())),
        "server_errors": len(server_errors),
        "server_error_samples": server_errors[:20],
        "failed_checks": dict(failed_checks),
        "schema_violations": sum(failed_checks[name] for name in SCHEMA_CHECKS),
        "explicit_links": transitions,
        "stateful_operations": {label: dict(counts)
                                for label, counts in sorted(stateful.items())},
        "stateful_reached": {label: stateful[label]["2xx"] > 0 for label in MUST_REACH},
    }


#: the 413 of the body limit refuses schema-breaking data too (a long string sent as JSON
#: escapes can pass 1 MiB before validation sees it), as in tests/server/test_fuzz.py
CONFIG = """[checks.negative_data_rejection]
expected-statuses = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422",
                     "428", "429", "5xx"]
"""
#: the operations of the extra stateful passes: the memory routes and undo
MEMORY_ROUTES = "^/v1/(memories|events)"


def merge(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One summary of several :func:`summarise` results (counts added up)."""

    def add(key: str) -> dict[str, int]:
        total: collections.Counter[str] = collections.Counter()
        for part in parts:
            total.update(part[key])
        return dict(sorted(total.items()))

    stateful: dict[str, collections.Counter[str]] = collections.defaultdict(
        collections.Counter)
    for part in parts:
        for label, counts in part["stateful_operations"].items():
            stateful[label].update(counts)
    return {
        "cases": sum(part["cases"] for part in parts),
        "cases_by_phase": add("cases_by_phase"),
        "answers_by_status_class": add("answers_by_status_class"),
        "server_errors": sum(part["server_errors"] for part in parts),
        "server_error_samples": [s for part in parts for s in part["server_error_samples"]],
        "failed_checks": add("failed_checks"),
        "schema_violations": sum(part["schema_violations"] for part in parts),
        "explicit_links": max(part["explicit_links"] for part in parts),
        "stateful_operations": {label: dict(counts)
                                for label, counts in sorted(stateful.items())},
        "stateful_reached": {label: stateful[label]["2xx"] > 0 for label in MUST_REACH},
    }


def run(max_examples: int, seed: int, workdir: Path, phases: str, extra: list[str], *,
        llm: bool = True, stateful_passes: int = 0) -> dict[str, Any]:
    """Serve, fuzz (one pass over everything, then ``stateful_passes`` stateful passes over
    the memory routes with the next seeds), summarise."""
    db = str(workdir / "fuzz.db")
    with open_store(db) as store:
        token, _ = KeyStore(store).create("fuzz")
    config = workdir / "schemathesis.toml"
    config.write_text(CONFIG, encoding="utf-8")
    passes = [(phases, seed, [])] + [("stateful", seed + n, ["--include-path-regex",
                                                              MEMORY_ROUTES])
                                     for n in range(1, stateful_passes + 1)]
    parts: list[dict[str, Any]] = []
    tails: list[str] = []
    with contextlib.ExitStack() as stack:
        env: dict[str, str] = {}
        if llm:  # infer=true adds (the default) then succeed, so stateful chains start
            model = stack.enter_context(LoopbackServer())
            model.chat.default = EXTRACTION
            env = {"REMEM_LLM_PROVIDER": "openai", "REMEM_LLM_BASE_URL": model.url,
                   "REMEM_LLM_MODEL": "loopback", "REMEM_LLM_API_KEY": "sk-loopback"}
        server = stack.enter_context(ServerProcess(
            ["--db", db, "--embedder", "fake", "--no-mcp"], env=env))
        schema = httpx.get(server.url + "/openapi.json").json()
        links = add_links(schema)
        schema_file = workdir / "openapi.json"
        schema_file.write_text(json.dumps(schema), encoding="utf-8")
        started = time.monotonic()
        codes = []
        for number, (pass_phases, pass_seed, narrowing) in enumerate(passes):
            reports = workdir / f"report-{number}"
            command = [sys.executable, "-c", _CLI, "--config-file", str(config), "run",
                       str(schema_file), "--url", server.url,
                       "-H", f"Authorization: Bearer {token}", "--checks", "all",
                       "--phases", pass_phases, "--max-examples", str(max_examples),
                       "--seed", str(pass_seed), "--workers", "1", "--no-color",
                       "--report", "ndjson,json", "--report-dir", str(reports),
                       "--generation-database", "none", *narrowing, *extra]
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            codes.append(done.returncode)
            parts.append(summarise(next(reports.glob("ndjson-*.ndjson"))))
            tails.append(done.stdout[done.stdout.rfind("SUMMARY") - 40:]
                         if "SUMMARY" in done.stdout
                         else done.stdout[-3000:] + done.stderr[-2000:])
        elapsed = time.monotonic() - started
        server_log = server.log()
    return {"max_examples": max_examples, "seed": seed, "phases": phases,
            "stateful_passes": stateful_passes, "links_added": links,
            "seconds": round(elapsed, 1), "exit_codes": codes,
            "schemathesis_summary": "\n".join(tails),
            "server_tracebacks": server_log.count("Traceback"),
            "passes": [{"cases": part["cases"], "cases_by_phase": part["cases_by_phase"]}
                       for part in parts],
            **merge(parts)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-examples", type=int, default=300,
                        help="schemathesis --max-examples (per operation and phase)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--phases", default="examples,coverage,fuzzing,stateful")
    parser.add_argument("--keep", type=Path, default=None,
                        help="keep the database, schema and reports in this directory")
    parser.add_argument("--out", type=Path, default=None, help="write the summary as JSON")
    parser.add_argument("--stateful-passes", type=int, default=0,
                        help="extra stateful passes over the memory routes (next seeds)")
    parser.add_argument("--no-llm", action="store_true",
                        help="serve without a chat model (infer=true adds answer 400)")
    parser.add_argument("extra", nargs="*", help="more schemathesis arguments (after --)")
    args = parser.parse_args()
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        result = run(args.max_examples, args.seed, args.keep, args.phases, args.extra,
                     llm=not args.no_llm, stateful_passes=args.stateful_passes)
    else:
        with tempfile.TemporaryDirectory(prefix="remem-schemathesis-") as tmp:
            result = run(args.max_examples, args.seed, Path(tmp), args.phases, args.extra,
                         llm=not args.no_llm, stateful_passes=args.stateful_passes)
    print(result["schemathesis_summary"])
    rows = [("test cases", f"{result['cases']:,}"),
            *((f"  {phase}", f"{n:,}") for phase, n in result["cases_by_phase"].items()),
            ("answers by class", ", ".join(f"{k}: {v:,}" for k, v in
                                           result["answers_by_status_class"].items())),
            ("5xx answers", str(result["server_errors"])),
            ("schema violations", str(result["schema_violations"])),
            ("failed checks", json.dumps(result["failed_checks"])),
            ("links added / in schema", f"{result['links_added']} / "
                                        f"{result['explicit_links']}"),
            ("server tracebacks", str(result["server_tracebacks"])),
            ("seconds", str(result["seconds"]))]
    rows += [(f"stateful 2xx: {label}",
              f"{result['stateful_operations'].get(label, {}).get('2xx', 0)} of "
              f"{result['stateful_operations'].get(label, {}).get('calls', 0)}")
             for label in MUST_REACH]
    width = max(len(name) for name, _ in rows)
    print("\n".join(f"{name:<{width}}  {value}" for name, value in rows))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
