"""Retrieval-quality evaluation on LoCoMo-format data (``remem eval locomo FILE``), and on
MemDaily and LongMemEval files (:mod:`~remem.eval.memdaily`, :mod:`~remem.eval.longmemeval`,
read into the same shape by :mod:`~remem.eval.labelled`); ``--units facts`` retrieves LoCoMo's
generated observations (:mod:`~remem.eval.facts`).

Pure core, thin shells: :mod:`~remem.eval.locomo` reads the data and its gold,
:mod:`~remem.eval.metrics` scores rankings, :mod:`~remem.eval.harness` runs any
:class:`Retriever` over a dataset, :mod:`~remem.eval.report` shapes the results, and
:mod:`~remem.eval.store_retriever` plugs a remem store in. The CLI only wires them together.

Evaluating your own retriever (anything with ``ingest`` and ``rank``)::

    from remem.eval import load_locomo, run_locomo, summarize_sets

    data = load_locomo("locomo10.json")
    run = run_locomo(data, MyRetriever(), k=50)
    print(summarize_sets(run)["main"].mean["recall@10"])
"""

from remem.eval.facts import FactMemory, UnitsRetriever, parse_facts
from remem.eval.harness import (
    Progress,
    QuestionResult,
    RunResult,
    RunTiming,
    SelfTestResult,
    Timing,
    run_locomo,
    scored_questions,
    self_test,
    summarize_sets,
)
from remem.eval.labelled import FormatFix, LabelledDataset
from remem.eval.locomo import (
    CATEGORY_NAMES,
    Conversation,
    DataFix,
    LocomoDataset,
    Question,
    TurnMemory,
    load_locomo,
    parse_gold,
    parse_locomo,
)
from remem.eval.longmemeval import load_longmemeval, parse_longmemeval
from remem.eval.memdaily import load_memdaily, parse_memdaily
from remem.eval.metrics import (
    HEADLINE,
    KS,
    SetSummary,
    bootstrap_ci,
    hit_at_k,
    ndcg_at_k,
    question_metrics,
    recall_at_k,
    reciprocal_rank,
    summarize,
)
from remem.eval.retrievers import OracleRetriever, RandomRetriever, Retriever
from remem.eval.store_retriever import StoreRetriever, temporary_store

__all__ = [
    "CATEGORY_NAMES",
    "HEADLINE",
    "KS",
    "Conversation",
    "DataFix",
    "FactMemory",
    "FormatFix",
    "LabelledDataset",
    "LocomoDataset",
    "OracleRetriever",
    "Progress",
    "Question",
    "QuestionResult",
    "RandomRetriever",
    "Retriever",
    "RunResult",
    "RunTiming",
    "SelfTestResult",
    "SetSummary",
    "StoreRetriever",
    "Timing",
    "TurnMemory",
    "UnitsRetriever",
    "bootstrap_ci",
    "hit_at_k",
    "load_locomo",
    "load_longmemeval",
    "load_memdaily",
    "ndcg_at_k",
    "parse_facts",
    "parse_gold",
    "parse_locomo",
    "parse_longmemeval",
    "parse_memdaily",
    "question_metrics",
    "recall_at_k",
    "reciprocal_rank",
    "run_locomo",
    "scored_questions",
    "self_test",
    "summarize",
    "summarize_sets",
    "temporary_store",
]
