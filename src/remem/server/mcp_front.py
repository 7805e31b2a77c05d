"""Answer MCP ``initialize`` on stdio at once, while ``remem mcp`` is still loading.

Agent hosts start ``remem mcp`` and count the time to its answer to ``initialize`` against
their start-up timeout, but the MCP SDK, the store and the embedding model take seconds to
import and open. :class:`StdioFront` sits between the wire (the process's stdin and stdout) and
the SDK's own stdio transport, which it gives a pipe on each side: it answers the client's
first ``initialize`` request itself, from this module's constants, as soon as it arrives, and
forwards every line both ways. The SDK server, once built, reads the same ``initialize`` first
(so its session is initialised as usual), and its answer to that request alone is dropped;
if that answer ever differs from the one already sent (a new SDK), a warning says so on
stderr. Everything after it is the SDK's own doing.

This module imports only the standard library: ``remem mcp`` starts the front before it
imports anything heavy. :data:`HANDSHAKE_PROTOCOL_VERSIONS` and :data:`CAPABILITIES` mirror the
SDK's (a test compares the front's answer with the SDK server's for several requests).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Mapping
from typing import IO, Any

__all__ = ["CAPABILITIES", "HANDSHAKE_PROTOCOL_VERSIONS", "INSTRUCTIONS", "SERVER_NAME",
           "StdioFront", "initialize_result", "server_version"]

SERVER_NAME = "remem"

INSTRUCTIONS = (
    "Long-term memory. Save durable facts about the user with add_memory (scope them with "
    "user_id), look them up with search_memories before answering, correct or remove them "
    "with update_memory / delete_memory using the ids that search returns; "
    "memory_history and undo_memory_change show and revert changes."
)

#: the protocol revisions the SDK negotiates through ``initialize`` (``mcp_types.version``),
#: oldest first; a client asking for another gets the newest
HANDSHAKE_PROTOCOL_VERSIONS: tuple[str, ...] = ("2024-11-05", "2025-03-26", "2025-06-18",
                                                "2025-11-25")

#: what the SDK's ``MCPServer`` declares (tools, resources and prompts, none of them changing)
CAPABILITIES: dict[str, Any] = {
    "prompts": {"listChanged": False},
    "resources": {"listChanged": False, "subscribe": False},
    "tools": {"listChanged": False},
}


def server_version() -> str:
    """The installed remem's version, as MCP server info and ``/healthz`` report it."""
    from remem import __version__

    return __version__


def initialize_result(params: Mapping[str, Any]) -> dict[str, Any]:
    """The ``initialize`` result for the request parameters ``params``, as the SDK answers."""
    requested = params.get("protocolVersion")
    negotiated = (requested if requested in HANDSHAKE_PROTOCOL_VERSIONS
                  else HANDSHAKE_PROTOCOL_VERSIONS[-1])
    return {"capabilities": CAPABILITIES, "instructions": INSTRUCTIONS,
            "protocolVersion": negotiated,
            "serverInfo": {"name": SERVER_NAME, "version": server_version()}}


def _initialize_request(line: bytes) -> tuple[Any, dict[str, Any]] | None:
    """``(id, params)`` when ``line`` is a well-formed ``initialize`` request, else ``None``
    (the SDK then answers it, and whatever else the line is, itself)."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("method") != "initialize":
        return None
    params = message.get("params")
    ident = message.get("id")
    if (not isinstance(ident, str | int) or isinstance(ident, bool)
            or not isinstance(params, dict) or not isinstance(params.get("protocolVersion"), str)
            or not isinstance(params.get("capabilities"), dict)
            or not isinstance(params.get("clientInfo"), dict)):
        return None
    return ident, params


#: the line :meth:`StdioFront.finish` writes after the server's output (no JSON-RPC line
#: holds a NUL byte)
_END = b"\x00remem-mcp-front-end\n"


class StdioFront:
    """Answers ``initialize`` on the wire while the server loads; then relays both ways.

    :meth:`start` moves the wire off fds 0 and 1 (the SDK's stdio transport then serves the
    two pipes found there) and starts the relay threads; :meth:`finish`, once the server has
    returned, forwards what it still wrote and closes the wire.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()  # one writer of the wire at a time
        self._answered: tuple[Any, dict[str, Any]] | None = None  # (id, result) sent early
        self._wire_out: IO[bytes] | None = None
        self._out_thread: threading.Thread | None = None
        self._stop_fd: int | None = None  # a write end of the server's pipe, for _END

    def start(self) -> None:
        """Take over fds 0 and 1 and start relaying (POSIX; call before anything else reads
        stdin or writes stdout)."""
        wire_in = os.fdopen(os.dup(0), "rb")
        self._wire_out = os.fdopen(os.dup(1), "wb")
        server_in, to_server = os.pipe()
        from_server, server_out = os.pipe()
        os.dup2(server_in, 0)
        os.dup2(server_out, 1)
        self._stop_fd = os.dup(server_out)
        os.close(server_in)
        os.close(server_out)
        threading.Thread(target=self._relay_in, args=(wire_in, os.fdopen(to_server, "wb")),
                         name="mcp-front-in", daemon=True).start()
        self._out_thread = threading.Thread(target=self._relay_out,
                                            args=(os.fdopen(from_server, "rb"),),
                                            name="mcp-front-out", daemon=True)
        self._out_thread.start()

    def finish(self, timeout: float = 5.0) -> None:
        """After the server returned: mark the end of its output, wait until the relay has
        written everything before it to the wire, and close the wire. (The SDK may keep a
        duplicate of the pipe's write end open, so the relay cannot wait for end of file.)"""
        sys.stdout.flush()
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)  # stray output from here on goes nowhere
        os.close(null)
        if self._stop_fd is not None:
            os.write(self._stop_fd, _END)
            os.close(self._stop_fd)
            self._stop_fd = None
        if self._out_thread is not None:
            self._out_thread.join(timeout)

    def _write(self, data: bytes) -> None:
        assert self._wire_out is not None
        with self._lock:
            self._wire_out.write(data)
            self._wire_out.flush()

    def _relay_in(self, wire_in: IO[bytes], to_server: IO[bytes]) -> None:
        """Wire -> server, answering the first line itself when it is ``initialize``."""
        first = True
        try:
            with wire_in, to_server:
                for line in wire_in:
                    if first:
                        first = False
                        request = _initialize_request(line)
                        if request is not None:
                            ident, params = request
                            result = initialize_result(params)
                            self._answered = (ident, result)
                            self._write(json.dumps({"jsonrpc": "2.0", "id": ident,
                                                    "result": result}).encode() + b"\n")
                    to_server.write(line)
                    to_server.flush()
        except (OSError, ValueError):  # the server went away: nothing left to feed it
            return

    def _relay_out(self, from_server: IO[bytes]) -> None:
        """Server -> wire, dropping the server's own answer to the ``initialize`` already
        answered."""
        pending = True
        try:
            with from_server:
                for line in from_server:
                    if line == _END:
                        break
                    if pending and self._answered is not None and self._is_answer(line):
                        pending = False
                        continue
                    self._write(line)
        except (OSError, ValueError):  # the wire is gone (the host hung up)
            pass
        finally:
            assert self._wire_out is not None
            try:
                with self._lock:
                    self._wire_out.close()
            except OSError:
                pass

    def _is_answer(self, line: bytes) -> bool:
        """Whether ``line`` is the server's answer to the ``initialize`` answered early (a
        different answer is reported on stderr: the SDK changed under this module)."""
        assert self._answered is not None
        ident, sent = self._answered
        try:
            message = json.loads(line)
        except ValueError:
            return False
        if not isinstance(message, dict) or message.get("id") != ident or "method" in message:
            return False
        if message.get("result") != sent:
            print(f"warning: remem mcp answered initialize with {json.dumps(sent)}, but the MCP "
                  f"server answers {json.dumps(message.get('result', message.get('error')))}; "
                  "please report this", file=sys.stderr, flush=True)
        return True
