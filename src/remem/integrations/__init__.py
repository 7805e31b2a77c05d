"""remem inside other frameworks: each integration is an optional extra.

* :mod:`remem.integrations.langgraph` (``pip install 'remem[langgraph]'``): a LangGraph
  ``BaseStore`` over any remem store and a checkpointer over remem threads.
* :mod:`remem.integrations.openai_agents`: an OpenAI Agents SDK session over a remem thread.
* :mod:`remem.integrations.langchain` (``remem[langchain]``): LangChain tools, chat message
  history and retriever.
* :mod:`remem.integrations.autogen` (``remem[autogen]``): AutoGen's ``Memory`` protocol.
* :mod:`remem.integrations.llama_index` (``remem[llama-index]``): a LlamaIndex memory block
  and chat stores over remem threads.
* :mod:`remem.integrations.pydantic_ai` (``remem[pydantic-ai]``): Pydantic AI tools and
  message history kept in a remem thread.
* :mod:`remem.integrations.google_adk` (``remem[google-adk]``): Google ADK's session service
  over remem threads and memory service over :class:`remem.Memory`.
"""
