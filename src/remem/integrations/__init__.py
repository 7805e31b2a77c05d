"""remem inside other frameworks: each integration is an optional extra.

* :mod:`remem.integrations.langgraph` (``pip install 'remem[langgraph]'``): a LangGraph
  ``BaseStore`` over any remem store.
"""
