"""Does the per-key rate limit hold a key to its rate under many concurrent clients?

    python benchmarks/ratelimit.py --rate 100 --clients 32 --duration 20

A fresh SQLite database and API key, then a server child process (uvicorn, one
worker, ``ServerConfig(rate_limit=RATE)``: bursts of one second's worth) on a free
loopback port. ``--clients`` clients, each on a keep-alive connection of its own, send
``GET /v1/store/namespaces`` with the one key as fast as they are answered, for
``--duration`` seconds. The admitted rate is the 200s counted from the end of the second
second to the start of the last (the first two spend the initial burst, the last is cut by
the deadline), divided by that time. Target: within 5% of ``--rate``; every 429 carries
``Retry-After``. (With ``rate_burst=1`` a key gets less than its rate whenever the server
stalls longer than one request's share of a second: tokens cannot accumulate past the
burst.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from remem.server.keys import KeyStore
from remem.store import open_store
from remem.testing.server import free_port

SERVER = """
import sys, uvicorn
from remem.server import ServerConfig, create_app
app = create_app(ServerConfig(db=sys.argv[1], mcp=False, rate_limit=float(sys.argv[2])))
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[3]), log_level="warning",
            access_log=False)
"""


async def _client(url: str, token: str, deadline: float,
                  admitted: list[float], refused: list[int]) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=30,
                                 headers={"Authorization": f"Bearer {token}"}) as http:
        while time.monotonic() < deadline:
            r = await http.get("/v1/store/namespaces")
            if r.status_code == 200:
                admitted.append(time.monotonic())
            elif r.status_code == 429:
                refused.append(int("Retry-After" in r.headers))
            else:
                raise RuntimeError(f"unexpected answer {r.status_code}: {r.text}")


async def _load(url: str, token: str, clients: int, duration: float) -> dict[str, Any]:
    admitted: list[float] = []
    refused: list[int] = []
    start = time.monotonic()
    deadline = start + duration
    await asyncio.gather(*[_client(url, token, deadline, admitted, refused)
                           for _ in range(clients)])
    window = (start + 2.0, deadline - 1.0)
    inside = [t for t in admitted if window[0] <= t < window[1]]
    return {"admitted": len(admitted), "refused": len(refused),
            "refused_with_retry_after": sum(refused),
            "measured_rate": len(inside) / (window[1] - window[0]),
            "requests_per_second": (len(admitted) + len(refused)) / duration}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        db = str(Path(directory) / "ratelimit.db")
        with open_store(db) as store:
            token = KeyStore(store).create("bench")[0]
        port = free_port()
        server = subprocess.Popen([sys.executable, "-c", SERVER, db, str(args.rate),
                                   str(port)])
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(300):
                try:
                    if httpx.get(url + "/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.1)
            result = asyncio.run(_load(url, token, args.clients, args.duration))
        finally:
            server.terminate()
            server.wait(30)
    error = result["measured_rate"] / args.rate - 1
    report = {"rate": args.rate, "clients": args.clients, "duration": args.duration,
              **result, "error": error, "within_5_percent": abs(error) <= 0.05}
    print(json.dumps(report, indent=2))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
