"""Memory formation scenario: a scripted multi-session conversation run through Memory.add.

Someone introduces themselves, repeats facts in other words, moves city, changes job,
corrects an earlier statement, mentions unrelated facts and asks to forget one. The script
checks the final current memories and their history against the expected state and reports
LLM calls, tokens and latency per add (overhead = latency minus time inside the model).

The "scripted" model answers like a correct model would: for each step it reads the memories
the manager showed it (under their aliases) and refers to them; if a memory it needs was not
shown (retrieval missed it), the step fails. With a real OpenAI-compatible or Anthropic
endpoint configured (REMEM_LLM_MODEL etc., see docs/llm.md) the scenario also runs against it,
checked by keywords; otherwise the script says it was skipped and why.

    python benchmarks/formation.py                      # fake + local embedder, scripted model
    python benchmarks/formation.py --repeat 30 --out benchmarks/results/formation.json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from remem.api import Memory
from remem.embed import Embedder, FakeEmbedder
from remem.llm import ChatModel, ChatRequest, ChatResponse, ScriptedModel
from remem.llm.base import WrappedChatModel
from remem.llm.config import model_from_env

# -- the scenario -----------------------------------------------------------------------------

Answer = dict[str, list[Any]]


@dataclass(frozen=True)
class Step:
    """One thing the user says, and what a correct model decides about it.

    ``inserts``: new facts; ``updates``: (old fact, new fact); ``deletes``: facts to drop.
    ``llm``: whether the add should call the model at all (an exact repeat should not).
    """

    session: int
    text: str
    inserts: tuple[str, ...] = ()
    updates: tuple[tuple[str, str], ...] = ()
    deletes: tuple[str, ...] = ()
    llm: bool = True


SCENARIO = (
    Step(1, "Hi, I'm Sam. I live in Lisbon and I work as a nurse at Santa Maria hospital.",
         inserts=("Name is Sam", "Lives in Lisbon",
                  "Works as a nurse at Santa Maria hospital")),
    Step(1, "I have a dog called Biscuit.", inserts=("Has a dog called Biscuit",)),
    Step(2, "I have a dog called Biscuit.", llm=False),                 # exact repeat
    Step(2, "As I said, my home is in Lisbon."),                        # rephrased repeat
    Step(2, "I enjoy hiking in the mountains on weekends.",
         inserts=("Enjoys hiking in the mountains on weekends",)),     # unrelated fact
    Step(3, "Big news: I moved to Porto last month.",
         updates=(("Lives in Lisbon", "Lives in Porto"),)),
    Step(3, "I also started playing the cello.", inserts=("Plays the cello",)),
    Step(4, "I quit nursing. I now work as a software developer at Critical Software.",
         updates=(("Works as a nurse at Santa Maria hospital",
                   "Works as a software developer at Critical Software"),)),
    Step(5, "Correction: my dog is called Cookie, not Biscuit.",
         updates=(("Has a dog called Biscuit", "Has a dog called Cookie"),)),
    Step(6, "Please forget that I play the cello.", deletes=("Plays the cello",)),
    Step(7, "I'm Sam and I live in Porto, by the way."),                # rephrased repeat
)

EXPECTED_CURRENT = sorted([
    "Name is Sam", "Lives in Porto", "Works as a software developer at Critical Software",
    "Has a dog called Cookie", "Enjoys hiking in the mountains on weekends",
])
EXPECTED_HISTORY = {  # fact -> its events, oldest first
    "Lives in Lisbon": ["add", "invalidate"],
    "Works as a nurse at Santa Maria hospital": ["add", "invalidate"],
    "Has a dog called Biscuit": ["add", "invalidate"],
    "Plays the cello": ["add", "invalidate"],
    "Lives in Porto": ["add"],
}
#: keyword checks for a real model (it words facts its own way)
REAL_CHECKS: dict[str, Callable[[list[str]], bool]] = {
    "current mentions Porto": lambda cur: any("porto" in t for t in cur),
    "Lisbon no longer current": lambda cur: not any("lisbon" in t for t in cur),
    "current job is developer": lambda cur: any("developer" in t for t in cur),
    "nurse no longer current": lambda cur: not any("nurse" in t for t in cur),
    "dog is Cookie": lambda cur: any("cookie" in t for t in cur),
    "Biscuit no longer current": lambda cur: not any("biscuit" in t for t in cur),
    "cello forgotten": lambda cur: not any("cello" in t for t in cur),
    "hiking kept": lambda cur: any("hik" in t for t in cur),
}


class ScenarioError(AssertionError):
    """The scripted model could not answer: a memory it needed was not shown to it."""


def shown_memories(request: ChatRequest) -> dict[str, int]:
    """Content -> alias of the existing memories in a manager prompt."""
    text = request.messages[-1].text
    block = text.split("Existing memories (refer to them by id):\n", 1)[1]
    block = block.split("\n\nConversation:\n", 1)[0]
    if block.strip() == "(none)":
        return {}
    entries = [json.loads(line) for line in block.splitlines()]
    return {e["memory"]["content"]: e["id"] for e in entries}


def scripted_answer(step: Step) -> Callable[[ChatRequest], Answer]:
    def answer(request: ChatRequest) -> Answer:
        shown = shown_memories(request)

        def alias(fact: str) -> int:
            if fact not in shown:
                raise ScenarioError(f"{fact!r} was not among the memories shown to the model "
                                    f"for {step.text!r} (shown: {sorted(shown)})")
            return shown[fact]

        return {
            "inserts": [{"memory": {"content": f}} for f in step.inserts],
            "updates": [{"id": alias(old), "memory": {"content": new}}
                        for old, new in step.updates],
            "deletes": [{"id": alias(f)} for f in step.deletes],
        }

    return answer


# -- timing -----------------------------------------------------------------------------------


class TimedModel(WrappedChatModel):
    """Wraps a chat model and adds up the time spent inside it."""

    def __init__(self, model: ChatModel) -> None:
        super().__init__(model)
        self.seconds = 0.0

    def complete(self, request: ChatRequest) -> ChatResponse:
        start = time.perf_counter()
        try:
            return self.inner.complete(request)
        finally:
            self.seconds += time.perf_counter() - start

    async def acomplete(self, request: ChatRequest) -> ChatResponse:
        start = time.perf_counter()
        try:
            return await self.inner.acomplete(request)
        finally:
            self.seconds += time.perf_counter() - start


@dataclass
class AddRow:
    session: int
    text: str
    llm_calls: int
    input_tokens: int
    output_tokens: int
    total_ms: float
    llm_ms: float
    ops: list[str]
    expected_calls: int
    problems: list[str] = field(default_factory=list)

    @property
    def overhead_ms(self) -> float:
        return self.total_ms - self.llm_ms


@dataclass
class Run:
    label: str
    rows: list[AddRow]
    current: list[str]
    problems: list[str]

    def summary(self) -> dict[str, Any]:
        overhead = [r.overhead_ms for r in self.rows]
        return {
            "label": self.label,
            "adds": len(self.rows),
            "llm_calls": sum(r.llm_calls for r in self.rows),
            "max_calls_per_add": max(r.llm_calls for r in self.rows),
            "tokens": sum(r.input_tokens + r.output_tokens for r in self.rows),
            "overhead_ms_p50": round(statistics.median(overhead), 2),
            "overhead_ms_p95": round(percentile(overhead, 95), 2),
            "total_ms_p95": round(percentile([r.total_ms for r in self.rows], 95), 2),
            "ok": not self.problems,
            "problems": self.problems,
        }


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    index = min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]


class StepModel(ScriptedModel):
    """A scripted model answering for the step being run (see :func:`scripted_answer`)."""

    def __init__(self) -> None:
        super().__init__(default=lambda request: self.step_answer(request))
        self.step: Step | None = None

    def step_answer(self, request: ChatRequest) -> Answer:
        assert self.step is not None
        return scripted_answer(self.step)(request)


def run_scenario(mem: Memory, timed: TimedModel, user: str, *,
                 scripted: StepModel | None) -> tuple[list[AddRow], list[str]]:
    rows: list[AddRow] = []
    problems: list[str] = []
    for step in SCENARIO:
        if scripted is not None:
            scripted.step = step
        llm_before = timed.seconds
        start = time.perf_counter()
        try:
            result = mem.add(step.text, user_id=user, thread_id=f"session-{step.session}")
        except ScenarioError as exc:
            problems.append(str(exc))
            continue
        total = time.perf_counter() - start
        row = AddRow(step.session, step.text, result.usage.calls, result.usage.input_tokens,
                     result.usage.output_tokens, total * 1000,
                     (timed.seconds - llm_before) * 1000,
                     [c.op for c in result.changes], int(step.llm))
        if scripted is not None and row.llm_calls != row.expected_calls:
            row.problems.append(f"{row.llm_calls} LLM calls, expected {row.expected_calls}")
        problems += [f"{step.text!r}: {p}" for p in row.problems]
        rows.append(row)
    return rows, problems


def check_state(mem: Memory, user: str) -> tuple[list[str], list[str]]:
    current = sorted(h.memory.text for h in mem.search(user_id=user, limit=100))
    problems = []
    if current != EXPECTED_CURRENT:
        problems.append(f"current memories {current} != expected {EXPECTED_CURRENT}")
    everything = {h.memory.text: h.memory for h in mem.search(user_id=user, limit=100,
                                                               include_invalid=True)}
    for fact, ops in EXPECTED_HISTORY.items():
        record = everything.get(fact)
        if record is None:
            problems.append(f"no memory {fact!r} at all (history lost)")
            continue
        got = [e.op for e in mem.history(record.id)]
        if got != ops:
            problems.append(f"history of {fact!r} is {got}, expected {ops}")
    porto = everything.get("Lives in Porto")
    lisbon = everything.get("Lives in Lisbon")
    if porto and lisbon and (porto.supersedes != lisbon.id or lisbon.superseded_by != porto.id):
        problems.append("Porto does not supersede Lisbon")
    return current, problems


def scripted_run(label: str, embedder: Embedder, repeat: int, background: int,
                 workdir: Path) -> Run:
    scripted = StepModel()
    timed = TimedModel(scripted)
    path = workdir / f"{label}.db"
    rows: list[AddRow] = []
    problems: list[str] = []
    current: list[str] = []
    with Memory.open(path, embedder=embedder, llm=timed) as mem:
        for n in range(background):  # other users' memories: a store that is not empty
            mem.add(f"Background fact number {n} about hobbies, food and travel",
                    user_id=f"other{n % 25}", infer=False)
        for r in range(repeat):
            user = f"sam{r}"
            got, trouble = run_scenario(mem, timed, user, scripted=scripted)
            current, state_problems = check_state(mem, user)
            rows += got
            problems += [f"[{user}] {p}" for p in trouble + state_problems]
    return Run(label, rows, current, problems)


def real_run(workdir: Path, embedder: Embedder) -> Run | str:
    try:
        model = model_from_env()
    except Exception as exc:  # a bad setting: report it instead of the run
        return f"skipped: the LLM settings are invalid ({exc})"
    if model is None:
        return ("skipped: no real endpoint configured (set REMEM_LLM_MODEL, and "
                "REMEM_LLM_BASE_URL / REMEM_LLM_API_KEY as needed; see docs/llm.md)")
    timed = TimedModel(model)
    with Memory.open(workdir / "real.db", embedder=embedder, llm=timed) as mem:
        rows, problems = run_scenario(mem, timed, "sam", scripted=None)
        current = sorted(h.memory.text for h in mem.search(user_id="sam", limit=100))
    lowered = [t.lower() for t in current]
    problems += [name for name, check in REAL_CHECKS.items() if not check(lowered)]
    return Run(f"real:{model.model}", rows, current, problems)


# -- report -----------------------------------------------------------------------------------


def print_rows(run: Run) -> None:
    print(f"\n{run.label}: per add (first repetition)")
    print(f"{'s':>2} {'calls':>5} {'tokens':>7} {'total ms':>9} {'overhead ms':>11}  "
          f"{'changes':<22} text")
    for row in run.rows[:len(SCENARIO)]:
        ops = ",".join(row.ops) or "-"
        print(f"{row.session:>2} {row.llm_calls:>5} {row.input_tokens + row.output_tokens:>7} "
              f"{row.total_ms:>9.1f} {row.overhead_ms:>11.1f}  {ops:<22} {row.text[:48]}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10,
                        help="scenario repetitions (one user each) per embedder")
    parser.add_argument("--background", type=int, default=500,
                        help="other users' memories stored first")
    parser.add_argument("--embedders", default="fake,local",
                        help="comma-separated: fake (store + reconcile cost only), local")
    parser.add_argument("--out", type=Path, help="write the results as JSON")
    opts = parser.parse_args(argv)
    runs: list[Run] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        local: Embedder | None = None
        for name in opts.embedders.split(","):
            if name == "fake":
                embedder: Embedder = FakeEmbedder()
            elif name == "local":
                from remem.embed.local import LocalEmbedder

                local = embedder = LocalEmbedder()
            else:
                parser.error(f"unknown embedder {name!r}")
            runs.append(scripted_run(f"scripted/{name}", embedder, opts.repeat,
                                     opts.background, workdir))
        real = real_run(workdir, local or FakeEmbedder())
        if isinstance(real, str):
            notes.append(f"real endpoint {real}")
        else:
            runs.append(real)
    for run in runs:
        print_rows(run)
    print("\nsummary (overhead = add latency minus time inside the model; SQLite file)")
    header = ("run", "adds", "calls", "max/add", "tokens", "ovh p50", "ovh p95", "ok")
    width = max(10, *(len(run.label) for run in runs))
    print(f"{header[0]:<{width}} " + " ".join(f"{h:>10}" for h in header[1:]))
    for run in runs:
        s = run.summary()
        print(f"{s['label']:<{width}} " + " ".join(f"{v:>10}" for v in (
            s["adds"], s["llm_calls"], s["max_calls_per_add"], s["tokens"],
            s["overhead_ms_p50"], s["overhead_ms_p95"], "yes" if s["ok"] else "NO")))
        for problem in s["problems"][:10]:
            print(f"  problem: {problem}")
    print("\nfinal current memories (" + runs[0].label + "):")
    for text in runs[0].current:
        print(f"  {text}")
    for note in notes:
        print(note)
    if opts.out:
        opts.out.parent.mkdir(parents=True, exist_ok=True)
        opts.out.write_text(json.dumps({
            "machine": {"python": platform.python_version(), "platform": platform.platform()},
            "config": {"repeat": opts.repeat, "background": opts.background},
            "runs": [{**r.summary(), "current": r.current,
                      "rows": [{**row.__dict__, "overhead_ms": row.overhead_ms}
                               for row in r.rows]} for r in runs],
            "notes": notes,
        }, indent=2))
    return 0 if all(not r.problems for r in runs if r.label.startswith("scripted")) else 1


if __name__ == "__main__":
    sys.exit(main())
