"""docs/trimming.md's Python examples run as written (in order, sharing one namespace)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

DOC = Path(__file__).resolve().parents[1] / "docs" / "trimming.md"


def test_trimming_doc_examples_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text("utf-8"), re.S)
    assert len(blocks) == 4
    namespace: dict[str, Any] = {}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)
    # the figures the doc states in comments
    assert namespace["DEFAULT_COUNTER"].count("I moved to Berlin last year") == 6
    assert namespace["DEFAULT_COUNTER"].count("我去年搬到了柏林") == 7
    assert namespace["counter"].count("Memory for agents") == 3
    assert namespace["result"].kept[-1].text == "Casa Alfama has rooms from 90 EUR."
