"""An embedder for any server that speaks OpenAI's ``POST {base_url}/embeddings`` wire format.

That covers OpenAI itself, Azure OpenAI, Ollama (``http://localhost:11434/v1``), vLLM,
LM Studio and llama.cpp's server. Failures surface as :class:`~remem.errors.EmbeddingError`
(naming the URL, the HTTP status and the provider's message, never the API key); bad
settings as :class:`~remem.errors.ConfigError`. Tests run it against
:class:`remem.testing.LoopbackServer`, never a real provider.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import threading
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, Self

import httpx
import numpy as np
import numpy.typing as npt

from remem._http import (
    LOOPBACK_HOSTS,
    Failure,
    RetryPolicy,
    check_host_allowed,
    provider_message,
    send_sync,
    snippet,
    ssl_context,
    user_agent,
)
from remem.embed.base import normalize_rows
from remem.errors import ConfigError, EmbeddingError, InvalidInputError, UsageError

__all__ = ["DEFAULT_BASE_URL", "OpenAIEmbedder"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"

_PROBE_TEXT = "dimension probe"
_SECRET_HEADER_WORDS = ("key", "auth", "token", "secret")


class OpenAIEmbedder:
    """Embeds texts through an OpenAI-compatible ``/embeddings`` endpoint.

    Settings not passed as arguments come from the environment: ``REMEM_EMBED_MODEL``,
    ``REMEM_EMBED_BASE_URL`` (then ``OPENAI_BASE_URL``, then :data:`DEFAULT_BASE_URL`) and
    ``REMEM_EMBED_API_KEY`` (then ``OPENAI_API_KEY``; local servers need no key, and
    ``api_key=""`` sends none whatever the environment holds).

    ``dims``: the vector length. When omitted it is learned from the first response (reading
    :attr:`dims` before any embedding costs one probe request). With
    ``request_dimensions=True`` it is sent as the ``dimensions`` request field, for models that
    can shorten their vectors (OpenAI's ``text-embedding-3-*``).

    ``batch_size`` texts go in one request; longer inputs are split. Requests that fail with
    HTTP 429, 5xx, a timeout or a connection error are retried up to ``max_retries`` times with
    exponential backoff (``retry_backoff`` seconds doubling up to ``max_backoff``, jittered),
    waiting what ``Retry-After`` / ``retry-after-ms`` asks instead (at most 60 s) when the server
    sends it. Other failures raise at once.

    ``query_prefix`` / ``document_prefix`` are prepended to each text, for models trained with
    them (e5: ``"query: "`` / ``"passage: "``; nomic: ``"search_query: "`` /
    ``"search_document: "``). ``headers`` are sent with every request (Azure: ``{"api-key":
    ...}``). Empty strings get zero vectors without a request, since OpenAI rejects them.

    The HTTP client is created on first use and shared by all threads; :meth:`close` it, or
    use the embedder as a context manager. ``requests_sent`` and ``prompt_tokens`` (as reported
    in responses' ``usage``) count the work done, for cost tracking and tests.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        dims: int | None = None,
        request_dimensions: bool = False,
        batch_size: int = 100,
        timeout: float = 60.0,
        max_retries: int = 3,
        retry_backoff: float = 0.5,
        max_backoff: float = 20.0,
        query_prefix: str = "",
        document_prefix: str = "",
        headers: Mapping[str, str] | None = None,
        encoding_format: Literal["float", "base64"] = "float",
    ) -> None:
        model = model or os.environ.get("REMEM_EMBED_MODEL") or None
        if not model:
            raise ConfigError(
                "OpenAIEmbedder needs a model: pass model='text-embedding-3-small' (or your "
                "server's model name) or set the REMEM_EMBED_MODEL environment variable"
            )
        base_url = (base_url or os.environ.get("REMEM_EMBED_BASE_URL")
                    or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL)
        try:
            url = httpx.URL(base_url)
        except httpx.InvalidURL:
            url = httpx.URL()
        if url.scheme not in ("http", "https") or not url.host:
            raise ConfigError(
                f"OpenAIEmbedder base_url (or REMEM_EMBED_BASE_URL / OPENAI_BASE_URL) must be an "
                f"http:// or https:// URL such as {DEFAULT_BASE_URL!r}, got {base_url!r}"
            )
        _require(dims is None or (isinstance(dims, int) and dims >= 1), "dims",
                 "a positive integer or None", dims)
        _require(not request_dimensions or dims is not None, "request_dimensions",
                 "used together with dims=N (the length to ask for)", request_dimensions)
        _require(isinstance(batch_size, int) and batch_size >= 1, "batch_size",
                 "a positive integer", batch_size)
        _require(timeout > 0, "timeout", "a positive number of seconds", timeout)
        _require(isinstance(max_retries, int) and max_retries >= 0, "max_retries",
                 "an integer >= 0", max_retries)
        _require(retry_backoff >= 0 and max_backoff >= 0, "retry_backoff/max_backoff",
                 "numbers of seconds >= 0", (retry_backoff, max_backoff))
        _require(encoding_format in ("float", "base64"), "encoding_format",
                 "'float' or 'base64'", encoding_format)

        self._model_name = model
        self._base_url = base_url
        # Append to the path so Azure-style URLs keep their ?api-version=... query
        self._url = url.copy_with(path=url.path.rstrip("/") + "/embeddings")
        if api_key is None:
            api_key = os.environ.get("REMEM_EMBED_API_KEY") or os.environ.get("OPENAI_API_KEY")
        self._api_key = api_key or None  # "" means: send no key, whatever the environment says
        self._dims = dims
        self._dims_given = dims is not None
        self._request_dimensions = request_dimensions
        self._batch_size = batch_size
        self._timeout = timeout
        self._policy = RetryPolicy(max_retries, retry_backoff, max_backoff)
        self._query_prefix = query_prefix
        self._document_prefix = document_prefix
        self._extra_headers = dict(headers or {})
        self._encoding_format = encoding_format
        self._secrets = [s for s in [self._api_key, *(
            v for k, v in self._extra_headers.items()
            if any(w in k.lower() for w in _SECRET_HEADER_WORDS))] if s]

        self._client: httpx.Client | None = None
        self._closed = False
        self._lock = threading.Lock()  # guards the client, dims and counters
        self._probe_lock = threading.Lock()  # one dims probe, however many threads ask
        self.requests_sent = 0
        self.prompt_tokens = 0

    # -- the Embedder protocol ----------------------------------------------------------------

    @property
    def model(self) -> str:
        """``"openai:{model}"``, plus ``"+prefix:{hash}"`` when query or document prefixes
        are set: vectors made with other prefixes are other vectors, and the store keys its
        embedding cache and its model check on this name."""
        name = f"openai:{self._model_name}"
        if self._query_prefix or self._document_prefix:
            digest = hashlib.blake2b(
                f"{self._query_prefix}\0{self._document_prefix}".encode(), digest_size=4
            ).hexdigest()
            name += f"+prefix:{digest}"
        return name

    @property
    def dims(self) -> int:
        """The vector length; unless configured or already seen, one probe request finds it."""
        if self._dims is None:
            with self._probe_lock:
                if self._dims is None:
                    self._embed_batch([_PROBE_TEXT])
        assert self._dims is not None
        return self._dims

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed stored texts (with ``document_prefix``): unit float32 rows, one per text."""
        return self._embed(texts, self._document_prefix)

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed search queries (with ``query_prefix``): unit float32 rows, one per text."""
        return self._embed(texts, self._query_prefix)

    # -- settings and lifecycle ----------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """The base URL requests go to (``/embeddings`` is appended)."""
        return self._base_url

    def close(self) -> None:
        """Close the HTTP connections. The embedder cannot be used afterwards."""
        with self._lock:
            client, self._client, self._closed = self._client, None, True
        if client is not None:
            client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        # never the key
        return (f"OpenAIEmbedder(model={self._model_name!r}, base_url={self._base_url!r}, "
                f"dims={self._dims!r})")

    # -- embedding ----------------------------------------------------------------------------

    def _embed(self, texts: Sequence[str], prefix: str) -> npt.NDArray[np.float32]:
        if isinstance(texts, str | bytes) or not isinstance(texts, Sequence):
            raise InvalidInputError(
                f"embed_documents/embed_queries take a list of strings, got "
                f"{type(texts).__name__}; wrap a single text as [text]"
            )
        for position, text in enumerate(texts):
            if not isinstance(text, str):
                raise InvalidInputError(
                    f"text {position} must be a string, got {type(text).__name__}"
                )
        sent = [i for i, text in enumerate(texts) if text]
        if not sent:
            return np.zeros((len(texts), self.dims), dtype=np.float32)
        blocks = [
            self._embed_batch([prefix + texts[i] for i in sent[start:start + self._batch_size]])
            for start in range(0, len(sent), self._batch_size)
        ]
        vectors = np.concatenate(blocks) if len(blocks) > 1 else blocks[0]
        if len(sent) == len(texts):
            return vectors
        out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
        out[sent] = vectors
        return out

    def _embed_batch(self, inputs: list[str]) -> npt.NDArray[np.float32]:
        payload: dict[str, Any] = {"model": self._model_name, "input": inputs,
                                   "encoding_format": self._encoding_format}
        if self._request_dimensions:
            payload["dimensions"] = self._dims
        body = self._post(payload)
        vectors = self._parse(body, len(inputs))
        self._check_dims(vectors.shape[1])
        return normalize_rows(vectors)

    def _parse(self, body: Any, expected: int) -> npt.NDArray[np.float32]:
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list):
            raise self._bad_response(f"expected a JSON object with a 'data' list, got "
                                     f"{_snippet(json.dumps(body))}")
        if len(data) != expected:
            raise self._bad_response(
                f"expected {expected} embeddings (one per input), got {len(data)}")
        rows: list[npt.NDArray[np.float32] | None] = [None] * expected
        for position, entry in enumerate(data):
            if not isinstance(entry, dict):
                raise self._bad_response(f"data[{position}] is not an object")
            # Servers that omit 'index' answer in input order
            index = entry.get("index", position)
            if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < expected:
                raise self._bad_response(
                    f"data[{position}].index must be an integer in [0, {expected}), got {index!r}")
            if rows[index] is not None:
                raise self._bad_response(f"index {index} appears twice in 'data'")
            rows[index] = self._vector(entry.get("embedding"), position)
        lengths = {len(row) for row in rows if row is not None}
        if len(lengths) != 1:
            raise self._bad_response(
                f"expected every embedding to have the same length, got lengths {sorted(lengths)}")
        matrix = np.stack([row for row in rows if row is not None])
        if not np.isfinite(matrix).all():
            raise self._bad_response("embeddings contain NaN or infinite values")
        if usage := body.get("usage"):
            tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
            if isinstance(tokens, int):
                with self._lock:
                    self.prompt_tokens += tokens
        return matrix

    def _vector(self, raw: object, position: int) -> npt.NDArray[np.float32]:
        # Accept both encodings whatever was asked: some servers ignore encoding_format
        if isinstance(raw, str):
            try:
                packed = base64.b64decode(raw, validate=True)
            except (binascii.Error, ValueError) as exc:
                raise self._bad_response(f"data[{position}].embedding is not base64") from exc
            if not packed or len(packed) % 4:
                raise self._bad_response(
                    f"data[{position}].embedding decodes to {len(packed)} bytes, not float32s")
            return np.frombuffer(packed, dtype="<f4").astype(np.float32)
        if isinstance(raw, list) and raw and all(
                isinstance(x, int | float) and not isinstance(x, bool) for x in raw):
            return np.asarray(raw, dtype=np.float32)
        raise self._bad_response(
            f"data[{position}].embedding must be a non-empty list of numbers or a base64 "
            f"string, got {_snippet(json.dumps(raw))}")

    def _check_dims(self, got: int) -> None:
        with self._lock:
            if self._dims is None:
                self._dims = got
                return
            expected = self._dims
        if got != expected:
            source = "the dims setting" if self._dims_given else "earlier responses"
            raise self._bad_response(
                f"expected {expected}-dimensional vectors ({source}), got {got}; the model on "
                f"the server changed, or dims= does not match it")

    def _bad_response(self, problem: str) -> EmbeddingError:
        return EmbeddingError(self._scrub(f"POST {self._url} returned a malformed embeddings "
                                          f"response for {self.model}: {problem}"))

    # -- HTTP ---------------------------------------------------------------------------------

    def _get_client(self) -> httpx.Client:
        with self._lock:
            if self._closed:
                raise UsageError("this OpenAIEmbedder is closed; create a new one")
            if self._client is None:
                headers = {"User-Agent": user_agent()}
                if self._api_key:
                    headers["Authorization"] = f"Bearer {self._api_key}"
                headers.update(self._extra_headers)
                # proxy environment variables are for remote hosts, not a local Ollama
                trust_env = self._url.host not in LOOPBACK_HOSTS
                self._client = httpx.Client(headers=headers, timeout=self._timeout,
                                            trust_env=trust_env, verify=ssl_context(trust_env))
            return self._client

    def _post(self, payload: dict[str, Any]) -> Any:
        client = self._get_client()
        check_host_allowed(self._url)

        def send() -> httpx.Response:
            with self._lock:
                self.requests_sent += 1
            return client.post(self._url, json=payload)

        result = send_sync(self._policy, self._timeout, send)
        if isinstance(result, Failure):
            if not result.retryable and result.response is not None:
                raise self._http_error(result.response)
            raise EmbeddingError(self._scrub(
                f"POST {self._url} for {self.model} failed after {result.attempts} attempt(s); "
                f"last error: {result.description}"))
        try:
            return result.json()
        except ValueError as exc:
            raise self._bad_response(f"body is not JSON: {_snippet(result.text)}") from exc

    def _http_error(self, response: httpx.Response) -> EmbeddingError:
        status = response.status_code
        message = (f"POST {self._url} for {self.model} failed with HTTP {status}: "
                   f"{_provider_message(response)}")
        if status in (401, 403) and self._api_key:
            message += (". The API key was refused: check it (api_key=, REMEM_EMBED_API_KEY or "
                        "OPENAI_API_KEY) and its access to the model")
        elif status in (401, 403):
            message += (". No API key was sent: pass api_key= or set REMEM_EMBED_API_KEY or "
                        "OPENAI_API_KEY")
        elif status == 404:
            message += (". Check base_url (OpenAI-compatible servers usually end in /v1) and "
                        "that the server has the model")
        return EmbeddingError(self._scrub(message))

    def _scrub(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text


def _require(ok: bool, name: str, rule: str, value: object) -> None:
    if not ok:
        raise ConfigError(f"OpenAIEmbedder {name} must be {rule}, got {value!r}")


_provider_message = provider_message
_snippet = snippet
