"""Build a chat model from environment variables.

==========================  =====================================================================
``REMEM_LLM_PROVIDER``      ``openai`` (any OpenAI-compatible server) or ``anthropic``; default
                            ``openai``, or ``anthropic`` when only ``ANTHROPIC_API_KEY`` is set
``REMEM_LLM_MODEL``         the model name (required to configure a model)
``REMEM_LLM_BASE_URL``      the server, e.g. ``http://localhost:11434/v1`` for Ollama
``REMEM_LLM_API_KEY``       the key; falls back to ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``
``REMEM_LLM_TIMEOUT``       seconds per request (default 120)
``REMEM_LLM_MAX_RETRIES``   retries on 429 / 5xx / timeouts (default 3)
``REMEM_LLM_MAX_CONCURRENCY``  requests in flight at once (default 8)
``REMEM_LLM_CONTEXT_WINDOW``   the model's context window in tokens (default unknown)
``REMEM_LLM_STRUCTURED_MODE``  ``json_schema`` | ``json_object`` | ``prompt`` (OpenAI) or
                               ``tool`` | ``prompt`` (Anthropic)
==========================  =====================================================================
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from remem.errors import ConfigError
from remem.llm.base import ChatModel

__all__ = ["ENV_VARS", "missing_model_error", "model_from_env", "require_model"]

#: every variable :func:`model_from_env` reads
ENV_VARS = ("REMEM_LLM_PROVIDER", "REMEM_LLM_MODEL", "REMEM_LLM_BASE_URL", "REMEM_LLM_API_KEY",
            "REMEM_LLM_TIMEOUT", "REMEM_LLM_MAX_RETRIES", "REMEM_LLM_MAX_CONCURRENCY",
            "REMEM_LLM_CONTEXT_WINDOW", "REMEM_LLM_STRUCTURED_MODE")

_PROVIDERS = ("openai", "anthropic")


def _number(env: Mapping[str, str], name: str, kind: Callable[[str], Any], minimum: float,
            rule: str) -> Any:
    raw = env.get(name, "").strip()
    if not raw:
        return None
    try:
        value = kind(raw)
    except ValueError:
        value = None
    if value is None or value < minimum:
        raise ConfigError(f"{name} must be {rule}, got {raw!r}")
    return value


def model_from_env(env: Mapping[str, str] | None = None) -> ChatModel | None:
    """The chat model the environment describes, or ``None`` when ``REMEM_LLM_MODEL`` is unset.

    ``env`` defaults to ``os.environ``. Raises :class:`~remem.errors.ConfigError` naming the
    variable when a value is invalid.
    """
    env = os.environ if env is None else env
    model = env.get("REMEM_LLM_MODEL", "").strip()
    provider = env.get("REMEM_LLM_PROVIDER", "").strip().lower()
    if provider and provider not in _PROVIDERS:
        raise ConfigError(f"REMEM_LLM_PROVIDER must be one of {', '.join(_PROVIDERS)}, got "
                          f"{provider!r} (use 'openai' for Ollama, vLLM, LM Studio, llama.cpp)")
    if not model:
        return None
    if not provider:
        provider = ("anthropic" if env.get("ANTHROPIC_API_KEY") and not env.get("OPENAI_API_KEY")
                    and not env.get("REMEM_LLM_API_KEY") else "openai")
    options: dict[str, Any] = {}
    for name, key, kind, minimum, rule in (
            ("REMEM_LLM_TIMEOUT", "timeout", float, 1e-3, "a positive number of seconds"),
            ("REMEM_LLM_MAX_RETRIES", "max_retries", int, 0, "an integer >= 0"),
            ("REMEM_LLM_MAX_CONCURRENCY", "max_concurrency", int, 1, "a positive integer"),
            ("REMEM_LLM_CONTEXT_WINDOW", "context_window", int, 1, "a positive number of tokens")):
        value = _number(env, name, kind, minimum, rule)
        if value is not None:
            options[key] = value
    mode = env.get("REMEM_LLM_STRUCTURED_MODE", "").strip()
    modes = ("json_schema", "json_object", "prompt") if provider == "openai" else (
        "tool", "prompt")
    if mode and mode not in modes:
        raise ConfigError(f"REMEM_LLM_STRUCTURED_MODE must be one of {', '.join(modes)} for "
                          f"provider {provider!r}, got {mode!r}")
    if mode:
        options["structured_mode"] = mode
    base_url = env.get("REMEM_LLM_BASE_URL", "").strip()
    api_key = env.get("REMEM_LLM_API_KEY")
    # the clients (and httpx) are imported only when a model is configured
    from remem.llm.anthropic import DEFAULT_ANTHROPIC_BASE_URL, AnthropicChatModel
    from remem.llm.openai import DEFAULT_OPENAI_BASE_URL, OpenAIChatModel

    if provider == "anthropic":
        return AnthropicChatModel(
            model, base_url=base_url or env.get("ANTHROPIC_BASE_URL") or DEFAULT_ANTHROPIC_BASE_URL,
            api_key=api_key if api_key is not None else env.get("ANTHROPIC_API_KEY", ""),
            **options)
    return OpenAIChatModel(
        model, base_url=base_url or env.get("OPENAI_BASE_URL") or DEFAULT_OPENAI_BASE_URL,
        api_key=api_key if api_key is not None else env.get("OPENAI_API_KEY", ""), **options)


def require_model(env: Mapping[str, str] | None = None) -> ChatModel:
    """Like :func:`model_from_env`, but a missing configuration is a
    :class:`~remem.errors.ConfigError` that names the variables to set."""
    model = model_from_env(env)
    if model is None:
        raise ConfigError(
            "no chat model is configured: set REMEM_LLM_MODEL (e.g. gpt-4.1-mini, or "
            "llama3.1 with REMEM_LLM_BASE_URL=http://localhost:11434/v1), plus "
            "REMEM_LLM_PROVIDER=openai|anthropic and REMEM_LLM_API_KEY (or OPENAI_API_KEY / "
            "ANTHROPIC_API_KEY) as needed; see docs/llm.md")
    return model


def missing_model_error() -> ConfigError:
    """The error for an operation that needs a chat model when none is configured."""
    return ConfigError(
        "this operation needs a chat model (add(infer=True) extracts memories with one) and "
        "none is configured: pass llm=... to Memory.open, or set "
        + ", ".join(ENV_VARS[:4])
        + " (see remem.llm.config.require_model); or call add(..., infer=False) to store "
        "the text as is"
    )
