"""A bounded load generator for a running remem server (loopback only), shared by
``benchmarks/load.py`` and the test suite.

``clients`` concurrent tasks each loop until ``duration`` seconds pass or ``max_requests``
are sent: with probability ``write_ratio`` an add (``POST /v1/memories``, ``infer: false``,
a unique text), otherwise a search of the client's own user. Every add answered 200 is an
*acknowledged write*; :func:`verify_writes` later reads each one back by id. Requests that
fail (the server was killed, say) are counted, never retried: a write whose answer never
arrived may or may not be stored, and neither outcome is a loss.

By default the clients are a closed loop: each sends its next request as soon as the last is
answered, so the run measures the server at saturation, where latency is mostly queueing
(32 clients at 400 requests/s wait 80 ms on average, whatever the server's speed per
request). With ``rate`` the clients are paced instead (an open loop): together they send
``rate`` requests per second on a fixed schedule, and a request's latency counts from when it
was due, so a server that falls behind shows it in the latencies, not in a slower schedule.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import httpx

__all__ = ["LoadReport", "drain_check", "percentile", "run_load", "verify_writes"]

WORDS = ("tea", "coffee", "paris", "berlin", "music", "running", "python", "garden", "train",
         "cinema", "piano", "hiking", "sushi", "novel", "chess", "bicycle")


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (nearest rank) of ``values``; NaN when empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


@dataclass
class LoadReport:
    """What a load run did: latencies (seconds) per kind, acknowledged writes, failures, and
    requests that were in flight when ``on_tick`` fired its event (e.g. a SIGTERM)."""

    clients: int
    seconds: float = 0.0
    latencies: dict[str, list[float]] = field(default_factory=lambda: {"add": [], "search": []})
    acknowledged: list[tuple[str, str, str]] = field(default_factory=list)  # (id, user, text)
    errors: dict[str, int] = field(default_factory=dict)
    in_flight_at_event: int = 0
    completed_after_event: int = 0

    @property
    def requests(self) -> int:
        """Requests answered with a 2xx."""
        return sum(len(v) for v in self.latencies.values())

    @property
    def throughput(self) -> float:
        """Answered requests per second."""
        return self.requests / self.seconds if self.seconds else 0.0

    def summary(self) -> dict[str, Any]:
        """A JSON-ready summary (latencies in milliseconds)."""
        out: dict[str, Any] = {"clients": self.clients, "seconds": round(self.seconds, 3),
                               "requests": self.requests,
                               "throughput_rps": round(self.throughput, 1),
                               "acknowledged_writes": len(self.acknowledged),
                               "errors": dict(self.errors)}
        for kind, values in self.latencies.items():
            out[kind] = {"count": len(values),
                         "p50_ms": round(percentile(values, 50) * 1000, 2),
                         "p95_ms": round(percentile(values, 95) * 1000, 2),
                         "p99_ms": round(percentile(values, 99) * 1000, 2)}
        return out


def _loopback(url: str) -> None:
    host = urlparse(url).hostname or ""
    if host not in ("127.0.0.1", "localhost", "::1") and not host.startswith("127."):
        raise ValueError(f"the load generator only targets loopback addresses, got {url}")


class _Connection:
    """A bare HTTP/1.1 keep-alive connection: the load generator's client.

    A general client (httpx) spends several milliseconds of CPU per request, so on a small
    machine it, not the server, would set the pace; this one writes the request bytes and
    reads back one ``Content-Length`` framed answer.
    """

    def __init__(self, url: str, token: str | None) -> None:
        parsed = urlparse(url)
        self.host = parsed.hostname or "127.0.0.1"
        self.port = parsed.port or 80
        auth = f"Authorization: Bearer {token}\r\n" if token else ""
        self._head = (f"Host: {self.host}:{self.port}\r\nContent-Type: application/json\r\n"
                      f"{auth}").encode()
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def post(self, path: str, payload: Any) -> tuple[int, Any]:
        """POST ``payload`` as JSON; the status and the decoded JSON answer."""
        if self._writer is None:
            self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        assert self._reader is not None
        body = json.dumps(payload).encode()
        self._writer.write(b"POST " + path.encode() + b" HTTP/1.1\r\n" + self._head
                           + b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n"
                           + body)
        try:
            await self._writer.drain()
            head = await self._reader.readuntil(b"\r\n\r\n")
            status = int(head[9:12])
            length = 0
            closing = False
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                name = name.strip().lower()
                if name == b"content-length":
                    length = int(value)
                elif name == b"connection" and value.strip().lower() == b"close":
                    closing = True
            data = await self._reader.readexactly(length)
        except (OSError, asyncio.IncompleteReadError, ValueError):
            self.close()
            raise
        if closing:
            self.close()
        return status, json.loads(data) if data else None

    def close(self) -> None:
        """Drop the connection (the next request opens a new one)."""
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None


async def run_load(url: str, token: str | None, *, clients: int = 32, duration: float = 10.0,
                   write_ratio: float = 0.3, max_requests: int = 1_000_000,
                   event_at: float | None = None, event: Callable[[], None] | None = None,
                   seed: int = 0, rate: float | None = None) -> LoadReport:
    """Drive ``clients`` concurrent clients against ``url``; see the module docstring
    (``rate``: paced requests per second in all, instead of a closed loop).

    ``event`` is called once, ``event_at`` seconds into the run (a kill or SIGTERM);
    requests in flight at that moment are counted, and those answered afterwards too.
    """
    _loopback(url)
    if rate is not None and not rate > 0:
        raise ValueError(f"rate must be a positive number of requests per second, got {rate!r}")
    interval = clients / rate if rate else 0.0  # between one client's requests
    report = LoadReport(clients)
    deadline = time.monotonic() + duration
    schedule_end = time.perf_counter() + duration  # the paced schedule's clock
    budget = [max_requests]
    in_flight: set[int] = set()
    marked: set[int] = set()
    counter = [0]

    def fail(kind: str) -> None:
        report.errors[kind] = report.errors.get(kind, 0) + 1

    async def one_client(number: int) -> None:
        rng = random.Random(seed * 1000 + number)
        user = f"user{number}"
        conn = _Connection(url, token)
        due = time.perf_counter() + interval * number / clients  # clients staggered
        try:
            while time.monotonic() < deadline and budget[0] > 0:
                if interval:
                    if due >= schedule_end:
                        break
                    await asyncio.sleep(max(0.0, due - time.perf_counter()))
                budget[0] -= 1
                counter[0] += 1
                ticket = counter[0]
                write = rng.random() < write_ratio
                text = f"{user} likes {rng.choice(WORDS)} #{ticket}"
                in_flight.add(ticket)
                start = due if interval else time.perf_counter()
                due += interval
                try:
                    if write:
                        status, answer = await conn.post("/v1/memories", {
                            "messages": text, "user_id": user, "infer": False})
                    else:
                        status, answer = await conn.post("/v1/memories/search", {
                            "query": rng.choice(WORDS), "user_id": user, "limit": 5})
                except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                    fail(type(exc).__name__)
                    await asyncio.sleep(0.05)  # the server is down: do not spin
                    continue
                finally:
                    in_flight.discard(ticket)
                elapsed = time.perf_counter() - start
                if status != 200:
                    fail(f"http_{status}")
                    continue
                if ticket in marked:
                    report.completed_after_event += 1
                kind = "add" if write else "search"
                report.latencies[kind].append(elapsed)
                if write and answer["changes"]:  # none: the text was stored already
                    memory = answer["changes"][0]["memory"]
                    report.acknowledged.append((memory["id"], user, text))
        finally:
            conn.close()

    async def fire() -> None:
        assert event_at is not None and event is not None
        await asyncio.sleep(event_at)
        marked.update(in_flight)
        report.in_flight_at_event = len(marked)
        await asyncio.to_thread(event)

    started = time.monotonic()
    tasks = [asyncio.create_task(one_client(i)) for i in range(clients)]
    if event is not None:
        tasks.append(asyncio.create_task(fire()))
    await asyncio.gather(*tasks)
    report.seconds = time.monotonic() - started
    return report


def verify_writes(url: str, token: str | None,
                  acknowledged: list[tuple[str, str, str]]) -> list[str]:
    """Ids of acknowledged writes that cannot be read back with their text (should be none)."""
    _loopback(url)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    lost: list[str] = []
    with httpx.Client(base_url=url, headers=headers, timeout=30.0) as http:
        for memory_id, _, text in acknowledged:
            r = http.get(f"/v1/memories/{memory_id}")
            if r.status_code != 200 or r.json()["text"] != text:
                lost.append(memory_id)
    return lost


async def drain_check(url: str, token: str | None, stop: Callable[[], int], *,
                      uploads: int = 8, chunks: int = 10, delay: float = 0.15
                      ) -> dict[str, Any]:
    """Graceful shutdown under way: ``uploads`` puts whose bodies stream in slowly are being
    handled when ``stop`` (a SIGTERM, say; it returns the exit code) is called; report how
    many were answered 200 and whether a new connection was refused meanwhile."""
    _loopback(url)
    headers = {"Authorization": f"Bearer {token}"} if token else {}

    async def upload(http: httpx.AsyncClient, n: int) -> int:
        async def body() -> Any:
            yield b'{"namespace": ["drain"], "key": "k%d", "value": {"text": "' % n
            for _ in range(chunks):
                await asyncio.sleep(delay)
                yield b"x" * 100
            yield b'"}}'

        try:
            r = await http.put("/v1/store/items", content=body(),
                               headers={"Content-Type": "application/json"})
        except httpx.HTTPError:
            return -1
        return r.status_code

    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as http:
        tasks = [asyncio.create_task(upload(http, n)) for n in range(uploads)]
        await asyncio.sleep(min(0.5, chunks * delay / 3))  # all of them are being read now
        stopping = asyncio.create_task(asyncio.to_thread(stop))
        await asyncio.sleep(0.3)
        async with httpx.AsyncClient() as fresh:
            try:
                await fresh.get(url + "/healthz")
                refused = False
            except httpx.HTTPError:
                refused = True
        statuses = await asyncio.gather(*tasks)
        code = await stopping
    return {"uploads_in_flight": uploads, "answered_200": statuses.count(200),
            "new_connection_refused": refused, "exit_code": code}
