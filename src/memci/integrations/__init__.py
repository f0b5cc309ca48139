"""Adapters that put memci under the agent frameworks people already use.

Each adapter is a module of its own, behind its own extra, and imports its framework when
it is imported (never before): importing one without its extra raises
:class:`~memci.MissingExtraError` with the ``pip install`` command.

- :mod:`memci.integrations.openai_agents` (``memci[openai-agents]``): a ``Session`` for the
  OpenAI Agents SDK, a ``call_model_input_filter`` that holds the budget inside tool loops,
  memci's tools as ``FunctionTool`` objects;
- :mod:`memci.integrations.langchain` (``memci[langchain]``): an ``AgentMiddleware`` for
  ``create_agent``, memci's tools as ``StructuredTool`` objects, a ``BaseChatMessageHistory``;
- :mod:`memci.integrations.pydantic_ai` (``memci[pydantic-ai]``): a history processor and
  memci's tools as a toolset;
- :mod:`memci.integrations.llama_index` (``memci[llama-index]``): a ``BaseMemory``.

Every adapter keeps the same promises as memci itself: each message the framework shows
it is stored once, before the model call that needs it; the request the framework sends
is memci's context, within the session's budget less what the framework adds itself (its
instructions and its own tools' schemas); nothing is deleted (``clear`` and ``pop`` move
the conversation to another branch, see ``Session.fork``).
"""
