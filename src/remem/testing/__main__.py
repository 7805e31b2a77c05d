"""``python -m remem.testing``: serve the loopback chat APIs (OpenAI's chat completions and
Anthropic's messages) on a fixed port, answering with scripted text."""

from __future__ import annotations

import argparse
import contextlib
import threading
from collections.abc import Iterable

from remem.testing.openai_server import LoopbackServer

__all__ = ["main"]


def main(argv: Iterable[str] | None = None) -> None:
    """Serve both chat APIs on a fixed port until interrupted, answering ``--default``."""
    parser = argparse.ArgumentParser(
        prog="python -m remem.testing",
        description="A loopback OpenAI/Anthropic chat server answering with scripted text.")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--default", default="This is the remem loopback model.",
                        help="the answer to every request (JSON is sent as JSON text)")
    parser.add_argument("--answer", action="append", default=[],
                        help="an answer to queue before the default (repeatable)")
    args = parser.parse_args(list(argv) if argv is not None else None)
    server = LoopbackServer(port=args.port)
    server.chat.add(*args.answer)
    server.chat.default = args.default
    with server:
        for provider in ("openai", "anthropic"):
            print(f"REMEM_LLM_PROVIDER={provider} REMEM_LLM_BASE_URL={server.url} "
                  "REMEM_LLM_MODEL=any", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
