"""model_from_env / require_model: which client the environment builds, and errors naming the
variable to fix."""

from __future__ import annotations

import pytest

from remem.errors import ConfigError
from remem.llm import AnthropicChatModel, OpenAIChatModel, model_from_env, require_model


def test_nothing_configured_is_none_and_require_names_the_variables() -> None:
    assert model_from_env({}) is None
    assert model_from_env({"OPENAI_API_KEY": "sk"}) is None  # a key alone picks no model
    with pytest.raises(ConfigError) as info:
        require_model({})
    for name in ("REMEM_LLM_MODEL", "REMEM_LLM_PROVIDER", "REMEM_LLM_API_KEY"):
        assert name in str(info.value)


def test_openai_compatible_local_server() -> None:
    model = model_from_env({"REMEM_LLM_MODEL": "llama3.1", "REMEM_LLM_BASE_URL":
                            "http://localhost:11434/v1", "REMEM_LLM_TIMEOUT": "300",
                            "REMEM_LLM_MAX_RETRIES": "0", "REMEM_LLM_MAX_CONCURRENCY": "2",
                            "REMEM_LLM_CONTEXT_WINDOW": "8192",
                            "REMEM_LLM_STRUCTURED_MODE": "json_object"})
    assert isinstance(model, OpenAIChatModel)
    assert model.model == "llama3.1"
    assert model.url == "http://localhost:11434/v1/chat/completions"
    assert model.context_window == 8192
    assert model.structured_mode == "json_object"
    assert model._timeout == 300.0 and model._policy.max_retries == 0
    assert model._max_concurrency == 2
    assert model._api_key is None  # local servers need none


def test_key_fallbacks_and_provider_choice() -> None:
    openai = model_from_env({"REMEM_LLM_MODEL": "gpt-4.1-mini", "OPENAI_API_KEY": "sk-o"})
    assert isinstance(openai, OpenAIChatModel) and openai._api_key == "sk-o"
    assert openai.url == "https://api.openai.com/v1/chat/completions"
    anthropic = model_from_env({"REMEM_LLM_MODEL": "claude-sonnet-4-5",
                                "ANTHROPIC_API_KEY": "sk-a"})
    assert isinstance(anthropic, AnthropicChatModel) and anthropic._api_key == "sk-a"
    assert anthropic.url == "https://api.anthropic.com/v1/messages"
    explicit = model_from_env({"REMEM_LLM_MODEL": "m", "REMEM_LLM_PROVIDER": "Anthropic",
                               "REMEM_LLM_API_KEY": "sk-r", "ANTHROPIC_API_KEY": "sk-a"})
    assert isinstance(explicit, AnthropicChatModel) and explicit._api_key == "sk-r"


@pytest.mark.parametrize(("env", "name"), [
    ({"REMEM_LLM_PROVIDER": "gemini"}, "REMEM_LLM_PROVIDER"),
    ({"REMEM_LLM_TIMEOUT": "soon"}, "REMEM_LLM_TIMEOUT"),
    ({"REMEM_LLM_TIMEOUT": "0"}, "REMEM_LLM_TIMEOUT"),
    ({"REMEM_LLM_MAX_RETRIES": "-1"}, "REMEM_LLM_MAX_RETRIES"),
    ({"REMEM_LLM_MAX_CONCURRENCY": "0"}, "REMEM_LLM_MAX_CONCURRENCY"),
    ({"REMEM_LLM_CONTEXT_WINDOW": "big"}, "REMEM_LLM_CONTEXT_WINDOW"),
    ({"REMEM_LLM_STRUCTURED_MODE": "tool"}, "REMEM_LLM_STRUCTURED_MODE"),
    ({"REMEM_LLM_BASE_URL": "localhost:11434"}, "REMEM_LLM_BASE_URL"),
])
def test_bad_values_name_the_variable(env: dict[str, str], name: str) -> None:
    with pytest.raises(ConfigError, match=name):
        model_from_env({"REMEM_LLM_MODEL": "m", **env})


def test_reads_os_environ_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REMEM_LLM_MODEL", "qwen2.5")
    monkeypatch.setenv("REMEM_LLM_BASE_URL", "http://127.0.0.1:8000/v1")
    for name in ("REMEM_LLM_PROVIDER", "REMEM_LLM_STRUCTURED_MODE", "REMEM_LLM_TIMEOUT",
                 "REMEM_LLM_MAX_RETRIES", "REMEM_LLM_MAX_CONCURRENCY", "REMEM_LLM_CONTEXT_WINDOW",
                 "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    model = require_model()
    assert isinstance(model, OpenAIChatModel) and model.model == "qwen2.5"
