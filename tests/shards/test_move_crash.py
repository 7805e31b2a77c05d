"""``kill -9`` of ``remem shards move`` (a real process) while writers keep writing: once in
its bulk copy, once after its flip; the route stays consistent, running the move again
finishes it, and every acknowledged write is on the tenant's shard, none left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from remem.server import ServerConfig
from remem.server.keys import tenant_prefix
from remem.server.state import Principal, ServerState
from remem.shards import parse_shards
from remem.store import DeleteOp, PutOp, open_store
from tests.shards.conftest import TwoServers
from tests.shards.test_move import _text

ENV = {**os.environ, "REMEM_LLM_MODEL": "", "REMEM_LLM_PROVIDER": ""}
TENANT = "crashy"


def _items_on(dsn: str) -> dict[tuple[tuple[str, ...], str], dict[str, object]]:
    store = open_store(dsn)
    try:
        return {(item.namespace, item.key): item.value
                for item in store.iter_items(tenant_prefix(TENANT))}
    finally:
        store.close()


def _mover(servers: TwoServers, to: str, settle: float, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as err:  # the child keeps its own descriptor
        return subprocess.Popen(
            [sys.executable, "-m", "remem", "shards", "--db", servers.control, "--embedder",
             "none", *(f"--shard={s}" for s in servers.shards()), "move", TENANT, "--to", to,
             "--settle", str(settle)],
            env=ENV, stdout=subprocess.DEVNULL, stderr=err)


def _finished(proc: subprocess.Popen[bytes], log: Path) -> None:
    try:
        proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, log.read_text()


def _copied_to(dsn: str) -> int:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        made = conn.execute("SELECT to_regclass('remem.items')").fetchone()
        if made is None or made[0] is None:
            return 0  # the mover has not opened the shard yet
        row = conn.execute("SELECT count(*) FROM remem.items WHERE ns LIKE %s",
                           (f"tenants\x1f{TENANT}\x1f%",)).fetchone()
    return int(row[0]) if row else 0


def _kill_when(proc: subprocess.Popen[bytes], ready: Callable[[], bool], log: Path) -> None:
    deadline = time.monotonic() + 240
    try:
        while not ready():
            assert proc.poll() is None, f"the mover ended first: {log.read_text()}"
            assert time.monotonic() < deadline, \
                f"the mover never reached the point to kill at: {log.read_text()}"
            time.sleep(0.02)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()


class Writers:
    """Threads writing new keys (and deleting the batch before, now and then) through a
    server state, recording each write once it is acknowledged."""

    def __init__(self, state: ServerState, count: int = 3) -> None:
        self.expected: dict[tuple[str, str], dict[str, object] | None] = {}
        self.errors: list[BaseException] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._state = state
        self._count = count
        self._threads: list[threading.Thread] = []
        self._round = 0

    def start(self, round_: int) -> None:
        self._round = round_
        self._stop.clear()
        self._threads = [threading.Thread(target=self._write, args=(self._state, f"w{i}"))
                         for i in range(self._count)]
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()

    def _write(self, state: ServerState, name: str) -> None:
        store = state.store_for(Principal(TENANT))
        n = 0
        try:
            while not self._stop.is_set():
                # a few items every 50 ms: steady writes, and a tenant that does not grow
                # faster than the mover copies it on a loaded machine
                time.sleep(0.05)
                keys = [f"{name}-r{self._round}-{n - (n % 5 == 4)}-{i}" for i in range(4)]
                if n % 5 == 4:
                    store.batch([DeleteOp(("live",), key) for key in keys])
                    values: list[dict[str, object] | None] = [None] * len(keys)
                else:
                    values = [{"text": _text(f"{name} {self._round} {n} {i}")}
                              for i in range(len(keys))]
                    store.batch([PutOp(("live",), key, value)
                                 for key, value in zip(keys, values, strict=True)])
                with self._lock:
                    self.expected.update({("live", key): value
                                          for key, value in zip(keys, values, strict=True)})
                n += 1
        except BaseException as exc:  # pragma: no cover - reported by the test
            self.errors.append(exc)


@pytest.mark.slow
def test_kill_9_of_the_mover_loses_nothing(two_servers: TwoServers, tmp_path: Path) -> None:
    log = tmp_path / "mover.log"
    # keyword index only, as the mover opens the shards (--embedder none): quick writes
    config = ServerConfig(db=two_servers.control, embedder=None, mcp=False,
                          shards=parse_shards(two_servers.shards()), route_cache_seconds=0.5)
    state = ServerState.open(config)
    try:
        router = state.router
        assert router is not None
        store = state.store_for(Principal(TENANT))
        for start in range(0, 4000, 500):
            store.batch([PutOp(("bulk",), f"k{n}", {"text": _text(f"seed {n}")})
                         for n in range(start, start + 500)])
        seeded = _items_on(two_servers.a)
        assert len(seeded) == 4000
        writers = Writers(state)

        # 1. killed during its bulk copy: the route still names a, the move is marked
        writers.start(1)
        proc = _mover(two_servers, "b", 1.0, log)
        _kill_when(proc, lambda: _copied_to(two_servers.b) > 500, log)
        route = router.routes.lookup(TENANT)
        assert route is not None and (route.shard, route.moving_to) == ("a", "b")
        time.sleep(0.5)  # writers keep writing to a meanwhile
        # run again: it copies everything, catches up and flips
        _finished(_mover(two_servers, "b", 1.0, log), log)
        writers.stop()
        assert not writers.errors, writers.errors
        route = router.routes.lookup(TENANT)
        assert route is not None and (route.shard, route.moving_to, route.moved_from) == (
            "b", None, None)
        _check(two_servers.b, two_servers.a, writers.expected, seeded)

        # 2. killed after flipping back to a, while it waits to delete the copy on b
        writers.start(2)
        proc = _mover(two_servers, "a", 60.0, log)

        def flipped() -> bool:
            now = router.routes.lookup(TENANT)
            return now is not None and now.shard == "a" and now.moved_from == "b"
        _kill_when(proc, flipped, log)
        time.sleep(1.0)  # writers follow the route to a within their cache time
        _finished(_mover(two_servers, "a", 1.0, log), log)  # finishes: deletes b's copy
        writers.stop()
        assert not writers.errors, writers.errors
        route = router.routes.lookup(TENANT)
        assert route is not None and (route.shard, route.moving_to, route.moved_from) == (
            "a", None, None)
        assert route.version == 3  # two flips, no more
        _check(two_servers.a, two_servers.b, writers.expected, seeded)
    finally:
        state.close()


def _check(home: str, away: str, expected: dict[tuple[str, str], dict[str, object] | None],
           seeded: dict[tuple[tuple[str, ...], str], dict[str, object]]) -> None:
    found = _items_on(home)
    assert _items_on(away) == {}
    lost = [key for (namespace, key), value in expected.items()
            if found.get(((*tenant_prefix(TENANT), namespace), key)) != value]
    assert lost == [], f"{len(lost)} acknowledged writes differ, e.g. {lost[:3]}"
    assert {k: v for k, v in found.items() if k[0][2] == "bulk"} == seeded
    live = {k for k, v in found.items() if k[0][2] == "live"}
    assert len(live) == sum(1 for v in expected.values() if v is not None)
