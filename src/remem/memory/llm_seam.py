"""The memory layer's view of the LLM package: structured calls and the missing-model error."""

from __future__ import annotations

from remem.errors import ConfigError
from remem.llm.structured import agenerate, generate

__all__ = ["LLM_SETTINGS", "agenerate", "generate", "missing_model_error"]

#: the environment variables that configure a chat model (read by remem.llm.config)
LLM_SETTINGS = ("REMEM_LLM_PROVIDER", "REMEM_LLM_MODEL", "REMEM_LLM_BASE_URL",
                "REMEM_LLM_API_KEY")


def missing_model_error() -> ConfigError:
    """The error for an operation that needs a chat model when none is configured."""
    return ConfigError(
        "this operation needs a chat model (add(infer=True) extracts memories with one) and "
        "none is configured: pass llm=... to Memory.open, or set "
        + ", ".join(LLM_SETTINGS)
        + " (see remem.llm.config.require_model); or call add(..., infer=False) to store "
        "the text as is"
    )
