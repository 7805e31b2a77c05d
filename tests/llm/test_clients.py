"""The HTTP chat clients against the loopback server: the real client code over real HTTP, for
both wire formats: success, tool calls, structured output, malformed bodies, 429, 5xx, timeouts,
the concurrency limit and usage accounting."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from remem.errors import (
    ConfigError,
    ContextWindowError,
    LLMConnectionError,
    LLMResponseError,
    LLMStatusError,
    RateLimitError,
    UsageError,
)
from remem.llm import (
    AnthropicChatModel,
    ChatRequest,
    HTTPChatModel,
    OpenAIChatModel,
    ToolSpec,
    agenerate,
    generate,
    tool_call,
)
from remem.messages import Message
from remem.testing import ChatCall, ChatReply, LoopbackServer

KEY = "sk-test-0123456789"
PROVIDERS = ["openai", "anthropic"]
WEATHER = ToolSpec("get_weather", "Current weather in a city",
                   {"type": "object", "properties": {"city": {"type": "string"}},
                    "required": ["city"]})


class Person(BaseModel):
    name: str
    age: int


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer(api_key=KEY) as running:
        yield running


Make = Callable[..., HTTPChatModel]


@pytest.fixture
def make(server: LoopbackServer) -> Iterator[Make]:
    made: list[HTTPChatModel] = []

    def build(provider: str, **options: Any) -> HTTPChatModel:
        options = {"base_url": server.url, "api_key": KEY, "retry_backoff": 0.0,
                   "max_retries": 2, **options}
        model: HTTPChatModel = (OpenAIChatModel("gpt-test", **options) if provider == "openai"
                                else AnthropicChatModel("claude-test", **options))
        made.append(model)
        return model

    yield build
    for model in made:
        model.close()


def ask(text: str = "hi", **fields: Any) -> ChatRequest:
    return ChatRequest((Message.user(text),), **fields)


def chat_requests(server: LoopbackServer) -> list[Any]:
    return [r for r in server.requests if r.path.endswith(("/chat/completions", "/messages"))]


# -- success paths ------------------------------------------------------------------------------


def test_openai_text_answer_wire_and_usage(server: LoopbackServer, make: Make) -> None:
    server.chat.add(ChatReply("Hello there", usage=(11, 3)))
    model = make("openai")
    response = model.complete(ChatRequest(
        (Message.system("Be brief."), Message.user("hi")), max_tokens=50, temperature=0.2,
        stop=("END",), operation="greet"))
    assert response.text == "Hello there"
    assert response.finish_reason == "stop"
    assert response.model == "gpt-test"
    [sent] = server.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.body == {"model": "gpt-test", "max_tokens": 50, "temperature": 0.2,
                         "stop": ["END"], "messages": [
                             {"role": "system", "content": "Be brief."},
                             {"role": "user", "content": "hi"}]}
    assert response.usage.input_tokens == 11 and response.usage.output_tokens == 3
    assert model.usage.by_operation() == {"greet": response.usage}


def test_anthropic_text_answer_wire_and_usage(server: LoopbackServer, make: Make) -> None:
    server.chat.add(ChatReply("Hello there", usage=(11, 3)))
    model = make("anthropic", default_max_tokens=777)
    response = model.complete(ChatRequest(
        (Message.system("Be brief."), Message.user("hi")), stop=("END",), operation="greet"))
    assert response.text == "Hello there"
    assert response.finish_reason == "stop"
    [sent] = server.requests
    assert sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == KEY
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in sent.headers
    assert sent.body == {"model": "claude-test", "max_tokens": 777, "system": "Be brief.",
                         "stop_sequences": ["END"],
                         "messages": [{"role": "user", "content": "hi"}]}
    assert model.usage.by_operation()["greet"].input_tokens == 11


@pytest.mark.parametrize("provider", PROVIDERS)
def test_tool_call_round_trip(provider: str, server: LoopbackServer, make: Make) -> None:
    server.chat.add(tool_call("get_weather", {"city": "Paris"}, call_id="call_7"),
                    "It is 21°C in Paris.")
    model = make(provider)
    first = model.complete(ask("weather in Paris?", tools=(WEATHER,), tool_choice="required"))
    assert first.finish_reason == "tool_calls"
    [call] = first.message.tool_calls
    assert (call.id, call.name, call.arguments) == ("call_7", "get_weather", {"city": "Paris"})
    history = (Message.user("weather in Paris?"), first.message,
               Message.tool(call.id, {"temp_c": 21}))
    final = model.complete(ChatRequest(history, tools=(WEATHER,)))
    assert final.text == "It is 21°C in Paris."
    body0, body1 = (r.body for r in server.requests)
    if provider == "openai":
        assert body0["tools"] == [{"type": "function", "function": {
            "name": "get_weather", "description": WEATHER.description,
            "parameters": dict(WEATHER.parameters)}}]
        assert body0["tool_choice"] == "required"
        assert body1["messages"][1]["tool_calls"][0]["id"] == "call_7"
        assert body1["messages"][2] == {"role": "tool", "tool_call_id": "call_7",
                                        "content": '{"temp_c": 21}'}
    else:
        assert body0["tools"] == [{"name": "get_weather", "description": WEATHER.description,
                                   "input_schema": dict(WEATHER.parameters)}]
        assert body0["tool_choice"] == {"type": "any"}
        assert body1["messages"][1]["content"][0]["type"] == "tool_use"
        assert body1["messages"][2] == {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "call_7", "content": '{"temp_c": 21}'}]}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_structured_output_with_validation_retry(provider: str, server: LoopbackServer,
                                                 make: Make) -> None:
    server.chat.add({"name": "Ada", "age": "unknown"}, {"name": "Ada", "age": 36})
    model = make(provider)
    result = generate(model, "Who wrote the first program?", Person, operation="extract")
    assert result.value == Person(name="Ada", age=36)
    assert result.attempts == 2
    assert result.usage.calls == 2
    assert model.usage.by_operation()["extract"] == result.usage
    first, second = (r.body for r in server.requests)
    if provider == "openai":
        assert first["response_format"]["type"] == "json_schema"
        assert first["response_format"]["json_schema"]["name"] == "Person"
        assert first["response_format"]["json_schema"]["schema"] == Person.model_json_schema()
        retry_text = second["messages"][-1]["content"]
    else:
        assert first["tool_choice"] == {"type": "tool", "name": "Person"}
        assert first["tools"][0]["input_schema"] == Person.model_json_schema()
        retry_text = second["messages"][-1]["content"]
    assert "age" in retry_text and "integer" in retry_text


@pytest.mark.parametrize("provider", PROVIDERS)
def test_structured_output_tolerates_wrapped_json_text(provider: str, server: LoopbackServer,
                                                       make: Make) -> None:
    # a local model that ignores the format and wraps its JSON in reasoning and a fence
    server.chat.add('<think>they want JSON</think>\n```json\n{"name": "Lin", "age": 7}\n```')
    result = generate(make(provider), "who?", Person)
    assert result.value == Person(name="Lin", age=7)


def test_openai_falls_back_when_the_server_rejects_response_formats(
        server: LoopbackServer, make: Make) -> None:
    server.chat.rejected_formats = {"json_schema"}
    server.chat.add({"name": "A", "age": 1}, {"name": "B", "age": 2})
    model = make("openai")
    assert isinstance(model, OpenAIChatModel)
    assert generate(model, "x", Person).value.name == "A"
    rejected, accepted = server.requests
    assert rejected.body["response_format"]["type"] == "json_schema"
    assert accepted.body["response_format"] == {"type": "json_object"}
    assert model.structured_mode == "json_object"  # remembered: one request next time
    assert generate(model, "y", Person).value.name == "B"
    assert len(server.requests) == 3
    assert "JSON schema" in accepted.body["messages"][0]["content"]


def test_openai_prompt_mode_when_no_format_is_supported(server: LoopbackServer,
                                                        make: Make) -> None:
    server.chat.rejected_formats = {"json_schema", "json_object"}
    server.chat.add({"name": "A", "age": 1})
    model = make("openai")
    assert generate(model, "x", Person).value.age == 1
    assert "response_format" not in server.requests[-1].body
    assert len(server.requests) == 3


def test_openai_fallback_can_be_switched_off(server: LoopbackServer, make: Make) -> None:
    server.chat.rejected_formats = {"json_schema"}
    model = make("openai", structured_fallback=False)
    with pytest.raises(LLMStatusError) as info:
        generate(model, "x", Person)
    assert info.value.status == 400
    assert "response_format" in str(info.value)


def test_anthropic_prompt_mode_puts_the_schema_in_system(server: LoopbackServer,
                                                         make: Make) -> None:
    server.chat.add({"name": "A", "age": 1})
    assert generate(make("anthropic", structured_mode="prompt"), "x", Person).value.age == 1
    body = server.requests[0].body
    assert "tools" not in body and "tool_choice" not in body
    assert '"age"' in body["system"]


# -- failure paths ------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("body", ["{not json", "<html>Bad gateway</html>"])
def test_malformed_body_is_a_response_error(provider: str, body: str, server: LoopbackServer,
                                            make: Make) -> None:
    server.enqueue(200, body=body)
    with pytest.raises(LLMResponseError, match="not JSON"):
        make(provider).complete(ask())
    assert len(server.requests) == 1  # not retried: the server did answer


@pytest.mark.parametrize("provider", PROVIDERS)
def test_json_of_the_wrong_shape_is_a_response_error(provider: str, server: LoopbackServer,
                                                     make: Make) -> None:
    server.enqueue(200, body={"unexpected": True})
    with pytest.raises(LLMResponseError, match="cannot read"):
        make(provider).complete(ask())


@pytest.mark.parametrize("provider", PROVIDERS)
def test_429_is_retried_after_retry_after(provider: str, server: LoopbackServer,
                                          make: Make) -> None:
    server.enqueue(429, headers={"Retry-After": "0"})
    server.chat.add("ok")
    assert make(provider).complete(ask()).text == "ok"
    assert len(server.requests) == 2
    # the 429 came in the provider's own error shape
    assert server.pending == 0


@pytest.mark.parametrize("provider", PROVIDERS)
def test_429_after_every_retry_is_a_rate_limit_error(provider: str, server: LoopbackServer,
                                                     make: Make) -> None:
    for _ in range(3):
        server.enqueue(429, headers={"retry-after-ms": "1"})
    with pytest.raises(RateLimitError) as info:
        make(provider).complete(ask())
    assert info.value.status == 429
    assert info.value.retry_after == pytest.approx(0.001)
    assert "3 attempt(s)" in str(info.value)
    assert len(server.requests) == 3
    expected = "rate_limit_error" if provider == "anthropic" else "rate_limit_exceeded"
    assert expected in info.value.body


@pytest.mark.parametrize("provider", PROVIDERS)
def test_5xx_is_retried(provider: str, server: LoopbackServer, make: Make) -> None:
    server.enqueue(500)
    server.enqueue(529 if provider == "anthropic" else 503)
    server.chat.add("recovered")
    assert make(provider).complete(ask()).text == "recovered"
    assert len(server.requests) == 3


@pytest.mark.parametrize("provider", PROVIDERS)
def test_5xx_after_every_retry_is_a_status_error(provider: str, server: LoopbackServer,
                                                 make: Make) -> None:
    server.enqueue(503)
    server.enqueue(503)
    with pytest.raises(LLMStatusError) as info:
        make(provider, max_retries=1).complete(ask())
    assert not isinstance(info.value, RateLimitError)
    assert info.value.status == 503
    assert len(server.requests) == 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_4xx_is_not_retried_and_the_key_is_never_shown(provider: str, server: LoopbackServer,
                                                       make: Make) -> None:
    model = make(provider, api_key="sk-wrong-key-987654321")
    with pytest.raises(LLMStatusError) as info:
        model.complete(ask())
    assert info.value.status == 401
    assert "API key was refused" in str(info.value)
    assert "sk-wrong-key-987654321" not in str(info.value) + info.value.body
    assert len(server.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_context_overflow_is_a_context_window_error(provider: str, server: LoopbackServer,
                                                    make: Make) -> None:
    message = ("prompt is too long: 210000 tokens > 200000 maximum" if provider == "anthropic"
               else "This model's maximum context length is 8192 tokens.")
    server.enqueue(400, body={"error": {"message": message, "code": "context_length_exceeded",
                                        "type": "invalid_request_error"}})
    with pytest.raises(ContextWindowError, match="trim"):
        make(provider).complete(ask())


@pytest.mark.parametrize("provider", PROVIDERS)
def test_timeout_and_refused_connection_are_connection_errors(
        provider: str, server: LoopbackServer, make: Make) -> None:
    server.enqueue(delay=1.0)
    with pytest.raises(LLMConnectionError, match="timed out"):
        make(provider, timeout=0.2, max_retries=0).complete(ask())
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(LLMConnectionError, match="connection failed"):
        make(provider, base_url=f"http://127.0.0.1:{port}/v1", max_retries=1).complete(ask())


@pytest.mark.parametrize("provider", PROVIDERS)
def test_unscripted_request_fails_loudly(provider: str, make: Make) -> None:
    with pytest.raises(LLMStatusError, match="no chat answer scripted"):
        make(provider).complete(ask())


@pytest.mark.parametrize("provider", PROVIDERS)
def test_missing_usage_is_estimated(provider: str, server: LoopbackServer, make: Make) -> None:
    server.chat.add(ChatReply("four words right here", omit_usage=True))
    usage = make(provider).complete(ask("a question of some length")).usage
    assert usage.calls == 1
    assert usage.input_tokens > 0 and usage.output_tokens > 0


# -- limits, async, lifecycle -------------------------------------------------------------------


def _tracking(state: dict[str, int], lock: threading.Lock) -> Callable[[ChatCall], str]:
    def answer(call: ChatCall) -> str:
        with lock:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
        time.sleep(0.05)
        with lock:
            state["now"] -= 1
        return "done"
    return answer


@pytest.mark.parametrize("provider", PROVIDERS)
def test_concurrency_limit_holds_for_threads_and_tasks(provider: str, server: LoopbackServer,
                                                       make: Make) -> None:
    state, lock = {"now": 0, "max": 0}, threading.Lock()
    server.chat.default = _tracking(state, lock)
    model = make(provider, max_concurrency=2)
    threads = [threading.Thread(target=model.complete, args=(ask(),)) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert state["max"] == 2

    state["max"] = 0

    async def many() -> list[str]:
        async with model:  # one pool for the block
            responses = await asyncio.gather(*(model.acomplete(ask()) for _ in range(6)))
        return [r.text for r in responses]

    assert asyncio.run(many()) == ["done"] * 6
    assert state["max"] == 2
    assert len(chat_requests(server)) == 12


@pytest.mark.parametrize("provider", PROVIDERS)
def test_async_matches_sync(provider: str, server: LoopbackServer, make: Make) -> None:
    script = [{"name": "Ada", "age": "x"}, {"name": "Ada", "age": 36}]
    server.chat.add(*script, *script)
    model = make(provider)
    sync_result = generate(model, "who?", Person)

    async def run() -> Any:
        return await agenerate(model, "who?", Person)  # a pool for this call only

    async_result = asyncio.run(run())
    assert (async_result.value, async_result.attempts) == (sync_result.value,
                                                           sync_result.attempts)
    bodies = [r.body for r in server.requests]
    assert bodies[:2] == bodies[2:]


def test_a_model_survives_several_event_loops(server: LoopbackServer, make: Make) -> None:
    server.chat.default = "again"
    model = make("openai")
    for _ in range(2):
        assert asyncio.run(model.acomplete(ask())).text == "again"
    model.close()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_closed_model_refuses_and_remote_hosts_are_blocked(provider: str, make: Make) -> None:
    model = make(provider)
    model.close()
    with pytest.raises(UsageError, match="closed"):
        model.complete(ask())
    remote = make(provider, base_url="https://api.example.com/v1")
    with pytest.raises(UsageError, match="blocked"):
        remote.complete(ask())


# -- settings -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("options", "name"), [
    ({"timeout": 0}, "timeout"),
    ({"max_retries": -1}, "max_retries"),
    ({"max_concurrency": 0}, "max_concurrency"),
    ({"context_window": 0}, "context_window"),
    ({"base_url": "localhost:11434"}, "base_url"),
    ({"structured_mode": "xml"}, "structured_mode"),
])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_bad_settings_are_config_errors(provider: str, options: dict[str, Any], name: str,
                                        make: Make) -> None:
    with pytest.raises(ConfigError, match=name):
        make(provider, **options)


def test_endpoint_urls(server: LoopbackServer) -> None:
    azure = OpenAIChatModel("gpt", base_url="https://acme.openai.azure.com/openai/deployments/"
                            "gpt4?api-version=2024-10-21", api_key="az-key")
    assert azure.url == ("https://acme.openai.azure.com/openai/deployments/gpt4/chat/"
                         "completions?api-version=2024-10-21")
    assert azure._auth_headers() == {"api-key": "az-key"}
    assert AnthropicChatModel("c", api_key="k").url == "https://api.anthropic.com/v1/messages"
    assert AnthropicChatModel("c", base_url=server.url).url == f"{server.url}/messages"
    assert "az-key" not in repr(azure)


@pytest.mark.slow
def test_standalone_server_answers_both_providers() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "remem.testing", "--port", str(port), "--answer", "first",
         "--default", "always"], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # printed once the server listens
        assert f"REMEM_LLM_BASE_URL=http://127.0.0.1:{port}/v1" in line
        url = f"http://127.0.0.1:{port}/v1"
        with OpenAIChatModel("any", base_url=url, api_key="") as gpt, \
                AnthropicChatModel("any", base_url=url, api_key="") as claude:
            assert gpt.complete(ask()).text == "first"
            assert claude.complete(ask()).text == "always"
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


def _raw_completion(arguments: str) -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion", "model": "local", "choices": [{
        "index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": None, "tool_calls": [{
                "id": "c1", "type": "function",
                "function": {"name": "get_weather", "arguments": arguments}}]}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 5}}


@pytest.mark.parametrize("arguments", ['{"city": "Paris",}', "```json\n{\"city\": \"Paris\"}\n```",
                                       "{'city': 'Paris'}"])
def test_sloppy_tool_arguments_from_local_models_are_read(
        arguments: str, server: LoopbackServer, make: Make) -> None:
    server.enqueue(200, body=_raw_completion(arguments))
    [call] = make("openai").complete(ask(tools=(WEATHER,))).message.tool_calls
    assert call.arguments == {"city": "Paris"}


def test_unreadable_tool_arguments_name_the_field(server: LoopbackServer, make: Make) -> None:
    server.enqueue(200, body=_raw_completion("city=Paris"))
    with pytest.raises(LLMResponseError, match=r"tool_calls\[0\]\.function\.arguments"):
        make("openai").complete(ask(tools=(WEATHER,)))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_sync_call_inside_a_running_event_loop_answers(server: LoopbackServer, make: Make,
                                                       provider: str) -> None:
    """complete() is a blocking httpx call: on a thread whose loop runs (a notebook cell) it
    holds the loop for the request and answers as off it; the async twin agrees."""
    server.chat.add(ChatReply("sync on the loop"))
    server.chat.add(ChatReply("async on the loop"))
    model = make(provider)

    async def inside() -> tuple[str, str]:
        asyncio.get_running_loop()
        return model.complete(ask()).text, (await model.acomplete(ask())).text

    assert asyncio.run(inside()) == ("sync on the loop", "async on the loop")
    assert len(chat_requests(server)) == 2
    model.close()


def test_exhausted_quota_is_not_retried(server: LoopbackServer, make: Make) -> None:
    server.enqueue(429, body={"error": {"message": "You exceeded your current quota.",
                                        "type": "insufficient_quota",
                                        "code": "insufficient_quota"}})
    with pytest.raises(LLMStatusError, match="quota or credit is used up") as info:
        make("openai").complete(ask())
    assert not isinstance(info.value, RateLimitError)
    assert len(server.requests) == 1


@pytest.mark.parametrize("is_async", [False, True])
def test_openai_without_a_key_fails_before_the_first_request(
        monkeypatch: pytest.MonkeyPatch, is_async: bool) -> None:
    """Before: four attempts against api.openai.com, then a connection error. A server that
    needs no key (Ollama, the loopback server) keeps working without one (test above)."""
    from remem.errors import ConfigError

    for name in ("REMEM_LLM_API_KEY", "OPENAI_API_KEY", "REMEM_LLM_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with OpenAIChatModel("gpt-4.1-mini", max_retries=3, timeout=2) as model, \
            pytest.raises(ConfigError, match="OPENAI_API_KEY") as raised:
        if is_async:
            asyncio.run(model.acomplete(ask()))
        else:
            model.complete(ask())
    assert "api.openai.com" in str(raised.value) and "base_url" in str(raised.value)
