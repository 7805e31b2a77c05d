"""The Python examples of docs/llm.md and docs/messages.md run as written (no network: they use
ScriptedModel and the loopback server, and build real clients without calling them)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"


def run_blocks(page: str) -> str:
    """Run every ```python block of ``page`` in one namespace; return what they printed."""
    blocks = re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(), re.S)
    assert blocks, f"{page} has no Python examples"
    namespace: dict[str, object] = {"__name__": f"docs_{page}"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for block in blocks:
            exec(compile(block, f"{page} example", "exec"), namespace)
    return out.getvalue()


def test_llm_page_examples(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "REMEM_LLM_API_KEY", "REMEM_LLM_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    out = run_blocks("llm.md")
    assert "http://localhost:11434/v1/chat/completions" in out
    assert "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21" in out
    assert "https://api.anthropic.com/v1/messages" in out
    assert "OpenAIChatModel qwen2.5:7b 32768" in out
    assert "topic='tea' likes=True 2 2" in out
    assert "'Still no.' | no JSON value found in the answer" in out
    assert "['chat', 'summarize'] 2" in out
    assert "Hello!\nget_weather\ntopic='tea' likes=True\n4 {'type': 'tool', 'name': " \
           "'Preference'}" in out
    assert "rate limited, retry after 0.0" in out


def test_messages_page_examples() -> None:
    out = run_blocks("messages.md")
    assert '{"temp_c": 21}' in out
    assert "'tool_calls': [{'id': 'call_1', 'type': 'function'" in out
    assert "{'role': 'tool', 'tool_call_id': 'call_1', 'content': '{\"temp_c\": 21}'}" in out
    assert "{'type': 'tool_use', 'id': 'call_1', 'name': 'get_weather'" in out
    assert "'is_error': True" in out
    assert "['system', 'user', 'assistant', 'tool', 'tool']" in out
    assert "[('user', 'm1', False), ('assistant', None, False), ('tool', None, True), " \
           "('assistant', None, False)]" in out
    assert "messages[0].tool_calls[0].function.arguments is not valid JSON" in out
