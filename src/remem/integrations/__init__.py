"""remem inside other frameworks: each integration is an optional extra.

* :mod:`remem.integrations.langgraph` (``pip install 'remem[langgraph]'``): a LangGraph
  ``BaseStore`` over any remem store and a checkpointer over remem threads.
* :mod:`remem.integrations.openai_agents`: an OpenAI Agents SDK session over a remem thread.
"""
