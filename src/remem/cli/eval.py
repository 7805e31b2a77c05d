"""``remem eval``: measure retrieval quality on benchmark data (``remem eval locomo FILE``).

A thin shell over :mod:`remem.eval`: read the file, self-test the harness with the oracle and
random rankings, ingest every conversation into its own namespace of a temporary store, ask
every question, then print the table (or ``--json``) and write ``--out`` files.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Final

import click
from click.core import ParameterSource
from rich.console import Console
from rich.measure import Measurement
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from remem import __version__
from remem.cli.common import CommandFailed, make_embedder
from remem.cli.render import emit_json, write_atomically
from remem.embed.base import Embedder
from remem.errors import ConfigError, InvalidInputError
from remem.eval.assisted import AssistedRetriever
from remem.eval.facts import (
    TOP,
    UNITS,
    FactMemory,
    Returned,
    Units,
    UnitsRetriever,
    parse_facts,
    returned_summary,
)
from remem.eval.harness import Phase, RunResult, run_locomo, self_test, summarize_sets
from remem.eval.labelled import (
    FormatFix,
    LabelledDataset,
    labelled_records,
    labelled_summary,
    labelled_table,
    parent_depths,
    random_floor,
    run_labelled,
    summarize_labelled,
    withheld_cutoffs,
)
from remem.eval.locomo import LocomoDataset, load_locomo
from remem.eval.longmemeval import load_longmemeval
from remem.eval.memdaily import POOLINGS, Pooling, load_json_file, load_memdaily
from remem.eval.memory_retriever import THROUGH, MemoryRetriever, temporary_memory
from remem.eval.metrics import KS
from remem.eval.report import question_records, results_table, summary_object, timing_line
from remem.eval.retrievers import Retriever
from remem.eval.store_retriever import (
    BACKENDS,
    DEFAULT_STAGES,
    MODES,
    STAGES,
    Backend,
    EvalMode,
    StoreRetriever,
    stage_ranking,
    temporary_store,
)
from remem.llm.base import ChatModel
from remem.llm.config import model_from_env
from remem.retrieval.llm_assist import ASSIST_MODES, AssistMode, LLMAssist
from remem.retrieval.ranking import Ranking
from remem.store import is_dsn

__all__ = ["EVAL_EMBEDDERS", "eval_group", "make_embedder"]

EVAL_EMBEDDERS: Final = ("local", "fake")
"""Values of ``remem eval locomo --embedder``."""

CI_LEVEL: Final = 0.95

MEMDAILY_STAGES: Final[tuple[str, ...]] = ("sessions", "mentions", "subjects")
"""The default ``--stages`` of ``remem eval memdaily``: each trajectory is a session of its
pool, and scoring trajectories lifts the messages of the one a question is about; messages
naming the same person pool the question's terms they match, which finds a fact asked for by
relation and condition; a question naming a person searches again inside the trajectories
that name them (``subjects``, the same default as ``Memory.search`` for Chinese queries); the
other stages lowered pools of the Chinese sets (docs/eval.md, "Ranking stages")."""

LONGMEMEVAL_STAGES: Final[tuple[str, ...]] = ()
"""The default ``--stages`` of ``remem eval longmemeval``: none, for want of LongMemEval data
to measure on; a stand-in made of LoCoMo conversations favours ``questions``, a stage that
acts where the stand-in differs most (docs/eval.md, "Ranking stages")."""


class _Bars:
    """A rich progress bar per phase, on stderr (implements :class:`remem.eval.Progress`)."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._tasks: dict[Phase, TaskID] = {}

    def start(self, phase: Phase, total: int) -> None:
        """Add the phase's bar."""
        label = "ingesting turns" if phase == "ingest" else "asking questions"
        self._tasks[phase] = self._progress.add_task(label, total=total)

    def advance(self, phase: Phase, amount: int) -> None:
        """Move the phase's bar."""
        self._progress.advance(self._tasks[phase], amount)


@contextmanager
def _progress_bars(enabled: bool) -> Iterator[_Bars | None]:
    if not enabled:
        yield None
        return
    console = Console(stderr=True)
    columns = (TextColumn("{task.description:<17}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True,
                  disable=not console.is_terminal) as progress:
        yield _Bars(progress)


def _warn(message: str) -> None:
    click.echo(f"warning: {message}", err=True)


def _write_out(directory: Path, records: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CommandFailed(f"cannot create {directory}: {exc.strerror}") from None

    def jsonl(out: IO[str]) -> int:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
        return len(records)

    def document(out: IO[str]) -> int:
        out.write(json.dumps(summary, ensure_ascii=False, indent=2) + "\n")
        return 1

    write_atomically(directory / "questions.jsonl", jsonl)
    write_atomically(directory / "summary.json", document)


def _print_table(table: Table) -> None:
    console = Console(highlight=False)
    unbounded = console.options.update_width(10_000)
    needed = Measurement.get(console, unbounded, table).maximum
    if needed > console.width:  # wider than the terminal beats squeezed, cut-off figures
        console = Console(highlight=False, width=needed)
    console.print(table)


def _stages_option(default: Sequence[str]) -> Callable[[Any], Any]:
    """``--stages``, shared by every ``remem eval`` command with its own measured default."""
    return click.option(
        "--stages", default=",".join(default) or "none", show_default=True, metavar="LIST",
        help=f"Multi-evidence ranking stages, comma-separated, from {', '.join(STAGES)}; "
             "'none' for plain hybrid ranking (docs/search.md).")


def _through_options(function: Any) -> Any:
    """``--through``, ``--db`` and ``--extract``, shared by every ``remem eval`` command."""
    function = click.option(
        "--extract", is_flag=True,
        help="With --through memory: extract facts from each session with the configured "
             "chat model (REMEM_LLM_*), as Memory.add(infer=True) does, instead of storing "
             "each turn; a fact counts for the turns of its session.")(function)
    function = click.option(
        "--db", metavar="DSN",
        help="With --through memory: the database to run in (a postgresql:// DSN or a "
             "path; the run writes under its own namespace); default a temporary SQLite "
             "file.")(function)
    return click.option(
        "--through", type=click.Choice(THROUGH), default="store", show_default=True,
        help="'memory': add each session with Memory.add(infer=False) and ask "
             "Memory.search, as users run remem (its stages default to the search's own); "
             "'store': the eval's turn retriever over a bare store.")(function)


def _product_stages(stages: str) -> str | None:
    """``--stages`` as ``SearchRequest.stages``: ``None`` (the search's defaults) when left
    at the command's default."""
    context = click.get_current_context()
    source = context.get_parameter_source("stages")
    return None if source in (None, ParameterSource.DEFAULT) else stages


def _backend_of(backend: str, db: str | None) -> str:
    """The database a run used, for the report: ``--db``'s when given (a DSN is
    PostgreSQL), else ``--backend``."""
    if db is None:
        return backend
    return "postgresql" if is_dsn(db) else "sqlite"


@contextmanager
def _retriever(through: str, *, backend: Backend, db: str | None, model: Embedder,
               mode: EvalMode, ranking: Ranking, stages: str,
               extract: bool = False) -> Iterator[Retriever]:
    """The retriever of one run: through the product or the bare store."""
    if extract and through != "memory":
        raise click.BadParameter("--extract goes with --through memory (the formation "
                                 "pipeline writes memories, not store items)",
                                 param_hint="--extract")
    if through == "memory":
        if mode != "hybrid":
            raise click.BadParameter("--through memory searches as Memory.search does "
                                     "(hybrid)", param_hint="--mode")
        chat_model = _configured_model("--extract") if extract else None
        with temporary_memory(model, db=db, llm=chat_model) as memory:
            try:
                yield MemoryRetriever(memory, stages=_product_stages(stages), infer=extract)
            except InvalidInputError as exc:
                raise click.BadParameter(str(exc), param_hint="--stages") from None
        return
    if db is not None:
        raise click.BadParameter("--db goes with --through memory", param_hint="--db")
    with temporary_store(backend, model) as store:
        yield StoreRetriever(store, mode, ranking)


@click.group(name="eval")
def eval_group() -> None:
    """Measure retrieval quality on benchmark data."""


@eval_group.command(name="locomo")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--mode", type=click.Choice(MODES), default="hybrid", show_default=True,
              help="Store search mode: BM25, embeddings, or both fused.")
@click.option("--k", "k", type=click.IntRange(min=1), default=50, show_default=True,
              metavar="N", help="Ranking depth: turns retrieved per question (>= 50 fills "
                                "recall@50).")
@click.option("--json", "json_output", is_flag=True,
              help="Machine output: print one JSON document on stdout.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
              help="Also write questions.jsonl (one record per question) and summary.json "
                   "to DIR.")
@click.option("--backend", type=click.Choice(BACKENDS), default="sqlite", show_default=True,
              help="Store for the run: a temporary SQLite file, or in memory.")
@click.option("--embedder", type=click.Choice(EVAL_EMBEDDERS), default="local",
              show_default=True,
              help="'local': the on-device embedding model; 'fake': deterministic word "
                   "hashing, offline (for smoke runs; its recall means nothing).")
@click.option("--limit-conversations", type=click.IntRange(min=1), metavar="N",
              help="Use only the first N conversations (quick runs).")
@click.option("--bootstrap", type=click.IntRange(min=0), default=1000, show_default=True,
              metavar="N", help="Bootstrap resamples for the 95% intervals (0: none).")
@click.option("--seed", type=int, default=0, show_default=True, metavar="N",
              help="Seed of the bootstrap and of the random baseline.")
@_stages_option(DEFAULT_STAGES)
@click.option("--units", type=click.Choice(UNITS),
              help="What is indexed: the turns, LoCoMo's generated per-session observations "
                   "(facts, each scored through the turns it came from), or both; also "
                   "reports the items and tokens returned.")
@click.option("--llm", "llm_mode", type=click.Choice(ASSIST_MODES),
              help="Let the configured chat model (REMEM_LLM_*) help each query, one call "
                   "at most: rewrite it into search queries, search a hypothetical answer "
                   "beside it (hyde), or rerank the top 30. Calls and tokens are reported.")
@_through_options
def locomo(file: Path, mode: EvalMode, k: int, json_output: bool, out: Path | None,
           backend: Backend, embedder: str, limit_conversations: int | None, bootstrap: int,
           seed: int, units: Units | None, stages: str,
           llm_mode: AssistMode | None, through: str, db: str | None, extract: bool) -> None:
    """Score turn retrieval on a LoCoMo-format FILE.

    Reports recall@k, hit@k, MRR and nDCG@10 per LoCoMo category, with bootstrap 95%
    intervals. Each conversation goes into its own namespace of a temporary store, one memory
    per turn, and each question searches its own conversation. Oracle and random rankings run
    first as self-tests of the harness. See docs/eval.md for the protocol.
    """
    dataset = load_locomo(file)
    if limit_conversations is not None:
        dataset = dataset.head(limit_conversations)
    model = make_embedder(embedder)
    if k < max(KS):
        _warn(f"--k {k} is below {max(KS)}: recall@k and hit@k for k > {k} are computed on "
              f"the top {k} only")
    if not json_output:
        for fix in dataset.fixes:
            click.echo(f"data fix: {fix}", err=True)
    check = self_test(dataset, k=k, seed=seed)
    if not check.passed:
        raise CommandFailed(f"harness self-test failed ({len(check.failures)} questions): "
                            f"{check.failures[0]}")
    units_view = _UnitsView.load(file, dataset, units, json_output)
    assist = _llm_assist(llm_mode)
    ranking = _stage_ranking(stages)
    with _retriever(through, backend=backend, db=db, model=model, mode=mode,
                    ranking=ranking, stages=stages, extract=extract) as retriever:
        if assist is not None:
            retriever = AssistedRetriever(retriever, assist)
        retriever = units_view.wrap(retriever)
        with _progress_bars(not json_output) as bars:
            run = run_locomo(dataset, retriever, k=k, progress=bars)
    sets = summarize_sets(run, resamples=bootstrap, seed=seed)
    summary = summary_object(sets, run.timing, _config(
        dataset, file=file, mode=mode, k=k, backend=_backend_of(backend, db),
        embedder=embedder, model=model.model, bootstrap=bootstrap, seed=seed,
        questions_scored=len(run.results), random_floor=check.random.to_dict(),
    ))
    summary["config"]["stages"] = _stage_names(stages)
    summary["config"]["through"] = through
    summary["config"]["extract"] = extract
    units_view.report(summary, run)
    if assist is not None:
        summary["llm"] = _assist_report(assist)
    if out is not None:
        _write_out(out, units_view.records(run), summary)
    if json_output:
        emit_json(summary)
        return
    _print_table(results_table(sets, random_floor=check.random, random_seed=seed,
                               resamples=bootstrap))
    click.echo(timing_line(run.timing, dataset.n_turns))
    click.echo(f"mode {mode}, embedder {model.model}, backend {_backend_of(backend, db)}, "
               f"k {k}, "
               f"stages {','.join(_stage_names(stages)) or 'none'}, through {through}"
               + (", facts extracted by the chat model" if extract else ""))
    units_view.echo(summary)
    if assist is not None:
        llm = summary["llm"]
        click.echo(f"llm {llm['mode']} with {llm['model']}: {llm['calls']} calls for "
                   f"{llm['queries']} queries, {llm['input_tokens']} input and "
                   f"{llm['output_tokens']} output tokens, {llm['failures']} failed"
                   + (f", {llm['ignored_ids']} rerank numbers ignored"
                      if llm["ignored_ids"] else ""))
    click.echo(f"self-test passed: the oracle scores 1.000 on hit@k; {len(dataset.fixes)} "
               "data fixes" + (f"; records in {out}" if out is not None else ""))


def _configured_model(option: str) -> ChatModel:
    """The chat model ``REMEM_LLM_*`` configure, closed with the command; failing before any
    work, naming the setting, when there is none."""
    chat_model = model_from_env()
    if chat_model is None:
        raise ConfigError(
            f"{option} needs a chat model and none is configured: set REMEM_LLM_MODEL "
            "(e.g. gpt-4.1-mini, or llama3.1 with REMEM_LLM_BASE_URL=http://localhost:11434/v1)"
            " and, as the provider needs, REMEM_LLM_API_KEY and REMEM_LLM_PROVIDER; see "
            "docs/llm.md")
    close = getattr(chat_model, "close", None)
    if callable(close):  # the HTTP clients hold a connection pool
        click.get_current_context().call_on_close(close)
    return chat_model


def _llm_assist(mode: AssistMode | None) -> LLMAssist | None:
    """The assist ``--llm`` asks for, with the model ``REMEM_LLM_*`` configure; failing
    before any work, naming the setting, when there is none."""
    if mode is None:
        return None
    chat_model = _configured_model(f"--llm {mode}")
    # a failed call is counted and that query runs unhelped, so one bad answer cannot
    # end a long run; the report shows how many failed
    return LLMAssist(chat_model, mode, fallback=True)


def _assist_report(assist: LLMAssist) -> dict[str, Any]:
    """``summary["llm"]``: the mode, the model, calls, tokens (the model's own usage ledger,
    which also counts failed calls) and failures."""
    report: dict[str, Any] = {"mode": assist.mode, "model": assist.model.model}
    report.update(assist.stats.to_dict())
    usage = assist.model.usage.by_operation().get(f"retrieval.{assist.mode}")
    if usage is not None:
        report["input_tokens"] = usage.input_tokens
        report["output_tokens"] = usage.output_tokens
        queries = report["queries"]
        report["tokens_per_query"] = usage.total_tokens / queries if queries else None
    return report


class _UnitsView:
    """``eval locomo --units``: index turns, facts or both; report items and tokens returned.

    Without ``--units`` every method is a no-op, so the command runs exactly as before.
    """

    def __init__(self, units: Units | None, facts: dict[str, tuple[FactMemory, ...]],
                 fixes: list[FormatFix]) -> None:
        self.units = units
        self.facts = facts
        self.fixes = fixes
        self.retriever: UnitsRetriever | None = None

    @classmethod
    def load(cls, file: Path, dataset: LocomoDataset, units: Units | None,
             quiet: bool) -> _UnitsView:
        if units is None or units == "turns":
            return cls(units, {}, [])
        data, _ = load_json_file(file)
        facts, fixes = parse_facts(data, dataset, source=str(file))
        if not quiet:
            for fix in fixes:
                click.echo(f"fact fix: {fix}", err=True)
        return cls(units, facts, fixes)

    def wrap(self, retriever: Retriever) -> Retriever:
        if self.units is None:
            return retriever
        self.retriever = UnitsRetriever(retriever, self.units, self.facts)
        return self.retriever

    def _returned(self, run: RunResult, main: bool) -> list[Returned]:
        assert self.retriever is not None
        return [self.retriever.returned[(r.question.conversation_id, r.question.question)]
                for r in run.results if (r.question.category != 5) == main]

    def report(self, summary: dict[str, Any], run: RunResult) -> None:
        if self.retriever is None:
            return
        summary["returned"] = {"main": returned_summary(self._returned(run, True)),
                               "cat5": returned_summary(self._returned(run, False))}
        summary["reachable"] = {"main": self._reachable(run, True),
                                "cat5": self._reachable(run, False)}
        summary["config"]["units"] = self.units
        summary["config"]["facts"] = sum(len(f) for f in self.facts.values())
        summary["config"]["fact_fixes"] = [fix.to_dict() for fix in self.fixes]

    def _reachable(self, run: RunResult, main: bool) -> float | None:
        """The recall ceiling: the mean share of gold turns any indexed unit leads to."""
        if self.units != "facts":
            return 1.0 if run.results else None
        shares = []
        for result in run.results:
            if (result.question.category != 5) != main:
                continue
            facts = self.facts.get(result.question.conversation_id, ())
            reached = {d for fact in facts for d in fact.sources}
            gold = result.question.gold
            shares.append(sum(d in reached for d in gold) / len(gold))
        return sum(shares) / len(shares) if shares else None

    def records(self, run: RunResult) -> list[dict[str, Any]]:
        records = list(question_records(run))
        if self.retriever is not None:
            for record, result in zip(records, run.results, strict=True):
                cost = self.retriever.returned[(result.question.conversation_id,
                                                result.question.question)]
                record["returned"] = {"items": cost.items, "tokens": cost.tokens,
                                      f"items_top{TOP}": cost.items_top,
                                      f"tokens_top{TOP}": cost.tokens_top}
        return records

    def echo(self, summary: dict[str, Any]) -> None:
        if self.retriever is None:
            return
        main = summary["returned"]["main"]
        if main["n"]:
            click.echo(f"units {self.units} ({summary['config']['facts']} facts): per main "
                       f"question {main['items']:.1f} items, {main['tokens']:.0f} tokens "
                       f"returned; up to the {TOP}th turn {main[f'items_top{TOP}']:.1f} "
                       f"items, {main[f'tokens_top{TOP}']:.0f} tokens; gold turns "
                       f"reachable through them {summary['reachable']['main']:.3f}")


def _stage_names(stages: str) -> list[str]:
    names = [name.strip() for name in stages.split(",") if name.strip()]
    return [] if names == ["none"] else names


def _stage_ranking(stages: str) -> Ranking:
    """``--stages`` as the store's ranking; an unknown name is a usage error naming the
    valid ones."""
    try:
        return stage_ranking(_stage_names(stages))
    except InvalidInputError as exc:
        raise click.BadParameter(str(exc), param_hint="--stages") from None


def _config(dataset: LocomoDataset, *, file: Path, mode: str, k: int, backend: str,
            embedder: str, model: str, bootstrap: int, seed: int, questions_scored: int,
            random_floor: dict[str, Any]) -> dict[str, Any]:
    """The ``config`` object of the report: enough to reproduce and compare runs."""
    return {
        "mode": mode,
        "k": k,
        "backend": backend,
        "embedder": embedder,
        "embedder_model": model,
        "dataset": {"path": str(file), "sha256": dataset.sha256},
        "conversations": len(dataset.conversations),
        "turns": dataset.n_turns,
        "questions": dataset.n_questions,
        "questions_scored": questions_scored,
        "remem_version": __version__,
        "bootstrap": {"resamples": bootstrap, "seed": seed, "level": CI_LEVEL},
        "self_test": {"oracle_passed": True, "random_seed": seed,
                      "random_floor": random_floor},
        "data_fixes": [fix.to_dict() for fix in dataset.fixes],
    }


# -- other formats: MemDaily, LongMemEval ---------------------------------------------------


#: data fixes that leave a question out of the run
_EXCLUDING: Final = ("ambiguous", "no_gold")


def _unscorable(dataset: LabelledDataset, file: Path, json_output: bool, hint: str) -> str:
    """The one-line reason a run has no question to score, and the fix."""
    counts = Counter(f.kind for f in dataset.fixes if f.kind in _EXCLUDING)
    where = "run without --json to see them" if json_output else "listed above"
    if counts:
        tally = ", ".join(f"{n} {kind}" for kind, n in counts.items())
        why = f"every question was excluded ({tally}; see the data fixes, {where})"
    else:
        why = "it holds no questions" + (f" (see the data fixes, {where})"
                                         if dataset.fixes else "")
    return f"{file}: no question can be scored: {why}; {hint}"


def _run_labelled(dataset: LabelledDataset, *, file: Path, mode: EvalMode, k: int,
                  json_output: bool, out: Path | None, backend: Backend, embedder: str,
                  bootstrap: int, seed: int, unit: str, stages: str, hint: str,
                  extra_config: dict[str, Any] | None = None, through: str = "store",
                  db: str | None = None, extract: bool = False) -> None:
    """The shell shared by the non-LoCoMo commands: self-test, run, report, write.

    ``hint`` says how a file whose questions were all excluded could be scored."""
    ranking = _stage_ranking(stages)
    parent = dataset.parent_name
    if k < max(KS):
        _warn(f"--k {k} is below {max(KS)}: recall@k and hit@k for k > {k} are computed on "
              f"the top {k} only" + (
                  f"; at the {parent} level, a cut-off is reported only where every "
                  f"question's top {k} {unit} reach that many {parent}s"
                  if dataset.parent_gold else ""))
    if not json_output:
        for fix in dataset.fixes:
            click.echo(f"data fix: {fix}", err=True)
    if not dataset.n_scorable:
        raise InvalidInputError(_unscorable(dataset, file, json_output, hint))
    model = make_embedder(embedder)
    check = self_test(dataset.data, k=k, seed=seed)
    if not check.passed:
        raise CommandFailed(f"harness self-test failed ({len(check.failures)} questions): "
                            f"{check.failures[0]}")
    floor = random_floor(dataset, k=k, seed=seed)
    with _retriever(through, backend=backend, db=db, model=model, mode=mode,
                    ranking=ranking, stages=stages, extract=extract) as retriever, \
            _progress_bars(not json_output) as bars:
        run = run_labelled(dataset, retriever, k=k, progress=bars)
    sets = summarize_labelled(dataset, run, resamples=bootstrap, seed=seed)
    parent_sets = (summarize_labelled(dataset, run, resamples=bootstrap, seed=seed,
                                      level="parent") if dataset.parent_gold else None)
    withheld: dict[str, tuple[str, ...]] = {}
    if parent_sets is not None:
        depths = parent_depths(dataset, run)
        withheld = withheld_cutoffs(depths)
        if withheld:
            metrics = dict.fromkeys(m for ms in withheld.values() for m in ms)
            fewest = min(d for name, d in depths.items() if name in withheld and d is not None)
            _warn(f"{parent} level: {', '.join(metrics)} not reported for "
                  f"{', '.join(withheld)}: the top {k} {unit} of some questions reach only "
                  f"{fewest} {parent}s, fewer than the cut-off; a deeper --k scores them")
    config = _config(dataset.data, file=file, mode=mode, k=k, backend=_backend_of(backend, db),
                     embedder=embedder, model=model.model, bootstrap=bootstrap, seed=seed,
                     questions_scored=len(run.results), random_floor=floor.to_dict())
    if dataset.parent_gold:
        config[f"questions_{parent}_only"] = len(dataset.parent_only())
    config["format"] = dataset.format
    config["namespaces"] = config.pop("conversations")
    config[unit] = config.pop("turns")
    config["data_fixes"] = [fix.to_dict() for fix in dataset.fixes]
    config["stages"] = _stage_names(stages)
    config["through"] = through
    config["extract"] = extract
    config.update(extra_config or {})
    summary = labelled_summary(dataset, sets, run, config, parent_sets)
    if out is not None:
        _write_out(out, list(labelled_records(dataset, run)), summary)
    if json_output:
        emit_json(summary)
        return
    _print_table(labelled_table(dataset, sets, floor=floor, seed=seed, resamples=bootstrap,
                                unit=unit))
    if parent_sets is not None:
        _print_table(labelled_table(dataset, parent_sets, resamples=bootstrap,
                                    title=f"{dataset.parent_name}s (each ranking lifted to "
                                          f"its {dataset.parent_name}s, deduplicated)",
                                    unit=f"{dataset.parent_name}s",
                                    note=(f"\u2013: deeper than the {parent}s the top {k} "
                                          f"{unit} of some question reach" if withheld
                                          else None)))
    click.echo(timing_line(run.timing, dataset.data.n_turns).replace("turns", unit))
    click.echo(f"mode {mode}, embedder {model.model}, backend {_backend_of(backend, db)}, "
               f"k {k}, "
               f"stages {','.join(_stage_names(stages)) or 'none'}")
    click.echo(f"self-test passed: the oracle scores 1.000 on hit@k; {len(dataset.fixes)} "
               "data fixes" + (f"; records in {out}" if out is not None else ""))


def _run_options(function: Any) -> Any:
    """The options every format command shares with ``eval locomo``."""
    options = [
        click.option("--mode", type=click.Choice(MODES), default="hybrid", show_default=True,
                     help="Store search mode: BM25, embeddings, or both fused."),
        click.option("--k", "k", type=click.IntRange(min=1), default=50, show_default=True,
                     metavar="N", help="Ranking depth: memories retrieved per question."),
        click.option("--json", "json_output", is_flag=True,
                     help="Machine output: print one JSON document on stdout."),
        click.option("--out", type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
                     help="Also write questions.jsonl and summary.json to DIR."),
        click.option("--backend", type=click.Choice(BACKENDS), default="sqlite",
                     show_default=True, help="Store for the run: a temporary SQLite file, "
                                             "or in memory."),
        click.option("--embedder", type=click.Choice(EVAL_EMBEDDERS), default="local",
                     show_default=True, help="'local': the on-device embedding model; "
                                             "'fake': deterministic word hashing, offline."),
        click.option("--bootstrap", type=click.IntRange(min=0), default=1000,
                     show_default=True, metavar="N",
                     help="Bootstrap resamples for the 95% intervals (0: none)."),
        click.option("--seed", type=int, default=0, show_default=True, metavar="N",
                     help="Seed of the bootstrap and of the random baseline."),
    ]
    for option in reversed(options):
        function = option(function)
    return _through_options(function)


@eval_group.command(name="memdaily")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@_run_options
@click.option("--pool", type=click.Choice(POOLINGS), default="file", show_default=True,
              help="'file': all trajectories of a pool share one namespace (a question text "
                   "asked in several of them is ambiguous and excluded); 'trajectory': each "
                   "trajectory is its own namespace.")
@click.option("--limit-pools", type=click.IntRange(min=1), metavar="N",
              help="Use only the first N pools (namespaces), for quick runs.")
@_stages_option(MEMDAILY_STAGES)
def memdaily(file: Path, mode: EvalMode, k: int, json_output: bool, out: Path | None,
             backend: Backend, embedder: str, bootstrap: int, seed: int, pool: Pooling,
             limit_pools: int | None, stages: str, through: str, db: str | None,
             extract: bool) -> None:
    """Score message retrieval on a MemDaily-format FILE.

    One memory per message; a file's trajectories are pooled into one namespace (an object
    file: one pool per list of trajectories), and each question searches its pool. Gold is
    the messages its target_step_id names. Same report as `eval locomo`, by question type.
    See docs/eval.md.
    """
    dataset = load_memdaily(file, pool=pool)
    if limit_pools is not None:
        dataset = dataset.head(limit_pools)
    _run_labelled(dataset, file=file, mode=mode, k=k, json_output=json_output, out=out,
                  backend=backend, embedder=embedder, bootstrap=bootstrap, seed=seed,
                  unit="messages", stages=stages, extra_config={"pool": pool},
                  through=through, db=db, extract=extract,
                  hint="questions come from question_list (or QA); one asked in several "
                       "trajectories of a pool is ambiguous there (--pool trajectory keeps "
                       "it), and one needs a target_step_id naming a mid of its own "
                       "trajectory")


@eval_group.command(name="longmemeval")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@_run_options
@click.option("--limit-items", type=click.IntRange(min=1), metavar="N",
              help="Use only the first N items (haystacks), for quick runs.")
@_stages_option(LONGMEMEVAL_STAGES)
def longmemeval(file: Path, mode: EvalMode, k: int, json_output: bool, out: Path | None,
                backend: Backend, embedder: str, bootstrap: int, seed: int,
                limit_items: int | None, stages: str, through: str,
                db: str | None, extract: bool) -> None:
    """Score turn retrieval on a LongMemEval-format FILE.

    Each item's haystack sessions go into their own namespace, one memory per turn; gold is
    the turns marked has_answer, and the rankings are scored again by session against
    answer_session_ids. Abstention questions (*_abs) are reported apart. See docs/eval.md.
    """
    dataset = load_longmemeval(file)
    if limit_items is not None:
        dataset = dataset.head(limit_items)
    _run_labelled(dataset, file=file, mode=mode, k=k, json_output=json_output, out=out,
                  backend=backend, embedder=embedder, bootstrap=bootstrap, seed=seed,
                  unit="turns", stages=stages, through=through, db=db,
                  extract=extract,
                  hint="a question needs turns marked has_answer: true, or "
                       "answer_session_ids naming sessions of its haystack")
