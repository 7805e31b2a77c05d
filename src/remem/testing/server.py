"""Run a real remem server on a free loopback port, for tests (yours and ours).

:class:`ThreadedServer` serves an app from uvicorn in a background thread of this process;
:class:`ServerProcess` starts ``remem serve`` as a child process (for tests about processes:
kill -9, several servers on one database, graceful shutdown). Both stop what they start.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from types import TracebackType
from typing import Any, Self

import httpx
import uvicorn

__all__ = ["ServerProcess", "ThreadedServer", "free_port"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class ThreadedServer:
    """``app`` served by uvicorn on 127.0.0.1 in a daemon thread (a context manager)."""

    def __init__(self, app: Any, *, port: int | None = None, timeout: float = 20.0) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port,
                                                     log_level="warning", access_log=False))
        self._thread = threading.Thread(target=self._server.run, name="remem-test-server",
                                        daemon=True)
        self._timeout = timeout

    def __enter__(self) -> Self:
        self._thread.start()
        deadline = time.monotonic() + self._timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the test server did not start on port {self.port}")
            time.sleep(0.02)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._server.should_exit = True
        self._thread.join(self._timeout)


class ServerProcess:
    """``remem serve`` in a child process on a free port (a context manager).

    ``args`` are extra CLI arguments (``--db`` is required among them). ``stop()`` sends
    SIGTERM (graceful), ``kill()`` SIGKILL; ``close()`` (or leaving the block) kills whatever
    still runs and releases the log. The server runs in a process group of its own, so a
    kill also takes the worker processes of ``--workers N`` (a SIGKILL to the supervisor
    alone would leave them serving, orphaned).
    """

    def __init__(self, args: Sequence[str], *, port: int | None = None,
                 env: dict[str, str] | None = None, timeout: float = 60.0) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.args = [sys.executable, "-m", "remem", "serve", "--host", "127.0.0.1",
                     "--port", str(self.port), "--log-level", "warning", *args]
        self.env = {**os.environ, **(env or {})}
        self.timeout = timeout
        self.proc: subprocess.Popen[bytes] | None = None
        # a file, not a pipe: a full pipe would block a chatty server
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()

    def log(self) -> str:
        """What the server wrote to stderr so far."""
        self._log.seek(0)
        return self._log.read().decode(errors="replace")

    def start(self) -> Self:
        """Start the process and wait until ``/healthz`` answers."""
        self.proc = subprocess.Popen(self.args, env=self.env, stdout=subprocess.DEVNULL,
                                     stderr=self._log, start_new_session=True)
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"remem serve exited with {self.proc.returncode}: {self.log()}")
            try:
                if httpx.get(self.url + "/healthz", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"remem serve did not answer on {self.url} within {self.timeout}s")

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM and wait; the exit code."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def kill(self) -> None:
        """SIGKILL to the server and its workers (no cleanup at all), and reap."""
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):  # the group may be gone already
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def __enter__(self) -> Self:
        return self.start()

    def close(self) -> None:
        """Kill the process if it still runs and release its log file."""
        self.kill()
        self._log.close()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
