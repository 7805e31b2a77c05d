"""A loopback HTTP server that speaks OpenAI's wire format, so tests run the real client code.

It listens on ``127.0.0.1`` (a free port) in a background thread and answers
``POST /v1/embeddings`` like OpenAI does, with deterministic vectors from
:class:`~remem.embed.FakeEmbedder`. Every request is recorded for assertions, and replies can be
scripted: errors with headers (``429`` + ``Retry-After``), malformed bodies, wrong counts,
shuffled indices, delays and dropped connections::

    with LoopbackServer(dims=32) as server:
        server.enqueue(429, headers={"Retry-After": "0"})
        embedder = OpenAIEmbedder("text-embedding-3-small", base_url=server.url)
        ...
        assert server.requests[0].headers["authorization"] == "Bearer sk-test"

Routes live in a table keyed by method and path (:data:`DEFAULT_ROUTES`); each route is one
function. The chat routes (``/v1/chat/completions`` and Anthropic's ``/v1/messages``) live in
:mod:`remem.testing.chat_server` and answer from :attr:`LoopbackServer.chat`.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import socket
import threading
from collections import deque
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

import numpy as np
import numpy.typing as npt

from remem.embed.base import normalize_rows
from remem.embed.fake import FakeEmbedder
from remem.errors import UsageError
from remem.testing.chat_server import (
    CHAT_ROUTES,
    ChatQueue,
    anthropic_error,
    check_bearer,
    check_openai_request,
    openai_error,
)

__all__ = [
    "DEFAULT_ROUTES",
    "MAX_EMBEDDING_INPUTS",
    "LoopbackServer",
    "RecordedRequest",
    "Route",
    "ScriptedReply",
    "check_bearer",
    "drop_data",
    "embeddings_route",
    "openai_error",
    "reverse_data",
]

MAX_EMBEDDING_INPUTS = 2048  # OpenAI's limit on inputs per embeddings request


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as the server received it. Header names are lower-cased."""

    method: str
    path: str
    query: str
    headers: Mapping[str, str]
    raw_body: bytes
    body: Any  # the parsed JSON, or None when the body is not JSON


@dataclass(frozen=True, slots=True)
class ScriptedReply:
    """How to answer one upcoming request instead of (or on top of) the route's own answer.

    ``body``: sent verbatim with ``status`` if ``bytes``/``str``, as JSON otherwise. Without a
    body, an error ``status`` (>= 400) gets an OpenAI-style error body, and otherwise the
    route answers as usual, its answer passed through ``transform`` if given. ``delay`` seconds
    pass before answering; ``disconnect`` closes the connection without answering. ``path``
    limits the reply to requests for that path.
    """

    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    body: object = None
    transform: Callable[[Any], Any] | None = None
    delay: float = 0.0
    disconnect: bool = False
    path: str | None = None


_UNSCRIPTED = ScriptedReply()

Route = Callable[["LoopbackServer", RecordedRequest], tuple[int, Any]]
"""A route answers a request with a status and a JSON-serialisable body."""


class LoopbackServer:
    """A provider stand-in on ``127.0.0.1``: start it (or use ``with``), point a client at
    :attr:`url`, script replies with :meth:`enqueue`, inspect :attr:`requests`.

    ``dims``: length of the vectors it returns (a request's ``dimensions`` can shorten them).
    ``api_key``: when set, requests must carry ``Authorization: Bearer <api_key>``.
    ``models``: when set, other model names get OpenAI's 404 ``model_not_found``.
    ``port``: 0 picks a free port. Chat answers are scripted on :attr:`chat` (see
    :mod:`remem.testing.chat_server`).
    """

    def __init__(self, *, dims: int = 64, api_key: str | None = None,
                 models: Collection[str] | None = None,
                 routes: Mapping[tuple[str, str], Route] | None = None, port: int = 0) -> None:
        self.dims = dims
        self.port_requested = port
        #: scripted answers of the chat routes (OpenAI chat completions, Anthropic messages)
        self.chat = ChatQueue()
        self.api_key = api_key
        self.models = frozenset(models) if models is not None else None
        self.routes: dict[tuple[str, str], Route] = dict(routes or DEFAULT_ROUTES)
        self._fake = FakeEmbedder(dims)
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._script: deque[ScriptedReply] = deque()
        self._connections: set[socket.socket] = set()
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> Self:
        """Bind a free port on 127.0.0.1 and serve from a background thread."""
        if self._httpd is not None:
            raise UsageError("this LoopbackServer is already running")
        self._stopping.clear()
        httpd = _HTTPServer(("127.0.0.1", self.port_requested), _Handler)
        httpd.owner = self
        self._httpd = httpd
        # a short poll interval keeps stop() fast
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01},
                                        name="remem-loopback-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, drop open connections and wait for every handler thread."""
        httpd, thread, self._httpd, self._thread = self._httpd, self._thread, None, None
        if httpd is None or thread is None:
            return
        self._stopping.set()  # wakes scripted delays
        httpd.shutdown()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:  # keep-alive handlers block reading until their socket ends
            with contextlib.suppress(OSError):  # already closed by the client
                conn.shutdown(socket.SHUT_RDWR)
        httpd.server_close()  # joins the handler threads
        thread.join()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The port it listens on."""
        if self._httpd is None:
            raise UsageError("the LoopbackServer is not running: call start() or use `with`")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """The OpenAI-style base URL, ``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting and inspection -------------------------------------------------------------

    def enqueue(self, status: int = 200, *, headers: Mapping[str, str] | None = None,
                body: object = None, transform: Callable[[Any], Any] | None = None,
                delay: float = 0.0, disconnect: bool = False, path: str | None = None) -> None:
        """Script the answer to the next matching request (see :class:`ScriptedReply`)."""
        self.enqueue_reply(ScriptedReply(status, dict(headers or {}), body, transform, delay,
                                         disconnect, path))

    def enqueue_reply(self, *replies: ScriptedReply) -> None:
        """Script several answers, used in order."""
        with self._lock:
            self._script.extend(replies)

    @property
    def pending(self) -> int:
        """Scripted replies not used yet."""
        with self._lock:
            return len(self._script)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def requests_to(self, path: str) -> list[RecordedRequest]:
        """The requests whose path ends with ``path`` (e.g. ``"/embeddings"``)."""
        return [r for r in self.requests if r.path.endswith(path)]

    def clear(self) -> None:
        """Forget recorded requests, unused scripted replies and chat answers."""
        with self._lock:
            self._requests.clear()
            self._script.clear()
        self.chat.clear()

    def vectors_for(self, texts: list[str], dimensions: int | None = None
                    ) -> npt.NDArray[np.float32]:
        """The unit vectors the embeddings route answers for ``texts``, for assertions."""
        with self._lock:  # FakeEmbedder's counters are not thread-safe
            full = self._fake.embed_documents(texts)
        return full if dimensions is None else normalize_rows(full[:, :dimensions])

    # -- used by the handler ------------------------------------------------------------------

    def _record(self, request: RecordedRequest) -> ScriptedReply | None:
        with self._lock:
            self._requests.append(request)
            for reply in self._script:
                if reply.path is None or reply.path == request.path:
                    self._script.remove(reply)
                    return reply
        return None

    def _answer(self, request: RecordedRequest) -> tuple[int, dict[str, str], bytes] | None:
        """Status, headers and body for ``request``; None to hang up without answering."""
        scripted = self._record(request) or _UNSCRIPTED
        if scripted.delay > 0:
            self._stopping.wait(scripted.delay)
        if scripted.disconnect:
            return None
        headers = dict(scripted.headers)
        if scripted.body is not None:
            return scripted.status, headers, _encode(scripted.body)
        if scripted.status >= 400:
            return scripted.status, headers, _encode(_scripted_error(scripted.status,
                                                                     request.path))
        status, body = self._route(request)
        if scripted.transform is not None and status < 400:
            try:
                body = scripted.transform(body)
            except Exception as exc:  # surface a broken test script as a reply, not a hang-up
                status, body = openai_error(500, f"scripted transform crashed: {exc!r}",
                                            type="server_error")
        return status, headers, _encode(body)

    def _route(self, request: RecordedRequest) -> tuple[int, Any]:
        route = self.routes.get((request.method, request.path))
        if route is None:
            if any(path == request.path for _, path in self.routes):
                return openai_error(405, f"Method {request.method} not allowed on "
                                         f"{request.path}")
            return openai_error(404, f"Unknown request URL: {request.method} {request.path}",
                                code="unknown_url")
        try:
            return route(self, request)
        except Exception as exc:  # a route bug should fail the client call, not hang it
            return openai_error(500, f"loopback route crashed: {exc!r}", type="server_error")


# -- routes -----------------------------------------------------------------------------------


def embeddings_route(server: LoopbackServer, request: RecordedRequest) -> tuple[int, Any]:
    """``POST /v1/embeddings``: validates like OpenAI, answers with FakeEmbedder vectors."""
    if (refused := check_openai_request(server, request)) is not None:
        return refused
    body = request.body
    model = body["model"]
    raw = body.get("input")
    inputs = [raw] if isinstance(raw, str) else raw
    if not isinstance(inputs, list) or not inputs or not all(
            isinstance(t, str) and t for t in inputs):
        # real OpenAI also takes token arrays; this stand-in answers only text
        return openai_error(400, "'$.input' is invalid. Please check the API reference: "
                                 "https://platform.openai.com/docs/api-reference.",
                            param="input")
    if len(inputs) > MAX_EMBEDDING_INPUTS:
        return openai_error(400, f"'$.input' is too long: at most {MAX_EMBEDDING_INPUTS} "
                                 f"inputs per request, got {len(inputs)}", param="input")
    dimensions = body.get("dimensions")
    if dimensions is not None and (not isinstance(dimensions, int) or isinstance(dimensions, bool)
                                   or not 1 <= dimensions <= server.dims):
        return openai_error(400, f"dimensions must be an integer in [1, {server.dims}], got "
                                 f"{dimensions!r}", param="dimensions")
    encoding = body.get("encoding_format", "float")
    if encoding not in ("float", "base64"):
        return openai_error(400, f"{encoding!r} is not one of ['float', 'base64'] - "
                                 f"'encoding_format'", param="encoding_format")
    vectors = server.vectors_for(inputs, dimensions)
    tokens = sum(len(_TOKEN.findall(text)) for text in inputs)
    return 200, {
        "object": "list",
        "data": [{"object": "embedding", "index": i, "embedding": _encode_vector(v, encoding)}
                 for i, v in enumerate(vectors)],
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


DEFAULT_ROUTES: Mapping[tuple[str, str], Route] = {
    ("POST", "/v1/embeddings"): embeddings_route,
    **CHAT_ROUTES,
}
"""Every :class:`LoopbackServer` starts with these routes, keyed by ``(method, path)``."""


# -- ready-made transforms for ScriptedReply ---------------------------------------------------


def reverse_data(body: Any) -> Any:
    """Reverse ``data`` (keeping each item's ``index``), as servers answering out of order do."""
    return {**body, "data": list(reversed(body["data"]))}


def drop_data(count: int = 1) -> Callable[[Any], Any]:
    """A transform that drops the last ``count`` items of ``data`` (a wrong count)."""
    def transform(body: Any) -> Any:
        return {**body, "data": body["data"][:-count]}
    return transform


# -- HTTP plumbing ----------------------------------------------------------------------------

# a rough token count for ``usage``: words, CJK characters and punctuation
_TOKEN = re.compile(r"[\u4e00-\u9fff]|[^\W\u4e00-\u9fff]+|[^\w\s]")

_SCRIPTED_ERRORS: dict[int, tuple[str, str, str | None]] = {
    401: ("Incorrect API key provided.", "invalid_request_error", "invalid_api_key"),
    403: ("You are not allowed to sample from this model", "invalid_request_error", None),
    429: ("Rate limit reached for requests", "requests", "rate_limit_exceeded"),
    500: ("The server had an error while processing your request. Sorry about that!",
          "server_error", None),
    503: ("The engine is currently overloaded, please try again later", "server_error", None),
}


def _scripted_error(status: int, path: str = "") -> Any:
    phrase = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "Error"
    message, type_, code = _SCRIPTED_ERRORS.get(status, (phrase, "invalid_request_error", None))
    if path.endswith("/messages"):  # Anthropic's error shape
        return anthropic_error(status, message)[1]
    return openai_error(status, message, type=type_, code=code)[1]


def _encode(body: object) -> bytes:
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8")
    return json.dumps(body, ensure_ascii=False).encode("utf-8")


def _encode_vector(vector: npt.NDArray[np.float32], encoding: str) -> Any:
    if encoding == "base64":
        return base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii")
    return [float(x) for x in vector]


class _HTTPServer(ThreadingHTTPServer):
    owner: LoopbackServer
    daemon_threads = False  # so server_close() joins every handler thread
    block_on_close = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that hang up (timeouts, closed pools) are expected here


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    protocol_version = "HTTP/1.1"  # keep-alive, like real providers
    timeout = 30  # a forgotten client connection cannot pin a thread forever

    def setup(self) -> None:
        super().setup()
        # headers and body go out in separate writes: without this, Nagle's algorithm and
        # delayed ACKs add ~40 ms to every reply on a kept-alive connection
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.server.owner._lock:
            self.server.owner._connections.add(self.connection)

    def finish(self) -> None:
        with self.server.owner._lock:
            self.server.owner._connections.discard(self.connection)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # tests inspect server.requests instead

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        path, _, query = self.path.partition("?")
        request = RecordedRequest(self.command, path, query,
                                  {k.lower(): v for k, v in self.headers.items()}, raw, parsed)
        answer = self.server.owner._answer(request)
        if answer is None:  # scripted disconnect
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        status, headers, payload = answer
        self.send_response(status)
        headers.setdefault("Content-Type", "application/json")
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
