"""Retrieval: keyword tokenization, BM25 and hybrid ranking (pure code shared by backends)."""

from remem.retrieval.bm25 import BM25Params
from remem.retrieval.ranking import Ranking, Recency
from remem.retrieval.tokenize import DefaultTokenizer, Tokenizer

__all__ = ["BM25Params", "DefaultTokenizer", "Ranking", "Recency", "Tokenizer"]
