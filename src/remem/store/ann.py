"""An approximate (HNSW) index over a SQLite file's vectors, for scopes too large to hold.

A scope that does not fit the vector budget (every item of a million-item file) was streamed
from the table on each search: exact, bounded in memory, and linear in the file (seconds at a
million vectors). With the optional ``usearch`` package installed (``pip install
'remem[ann]'``), such a scope is searched through HNSW graphs instead. Without it, nothing
changes: the scope is streamed as before.

The index only proposes candidates; the table stays the truth:

* **Shards on disk, memory-mapped.** Vectors are indexed in shards of ``shard_rows`` (int8
  codes, cosine metric), each saved beside the database (``<db>.ann/``) and opened with
  ``usearch``'s ``view()``: a search touches a few thousand graph nodes, not the whole file,
  and building holds one shard at a time. ``manifest.json`` names the shards and the table's
  ``vector_seq`` they reflect; it is replaced atomically after its shards are written, so a
  process killed mid-build leaves the previous manifest (or none) and stray files only.
* **Catching up.** Rows written since the manifest's sequence number (by this process or
  another) are read from the table into an exact in-memory :class:`VectorIndex` (the
  *delta*) and searched beside the shards; once it holds ``delta_rows`` rows it becomes a new
  shard. Deleted vectors may still sit in a shard: a candidate is re-read from the table by
  its vector id, so a deleted one is simply not found.
* **Exact scores.** Candidates are re-scored with their float32 vectors from the table in the
  search's transaction, with the arithmetic every backend uses (:func:`_dot_rows`), and
  confirmed by the items table (alive, prefix, filter) in the same way as exact search.
* **Filters and prefixes.** When a round's candidates hold too few matches for the page,
  the candidate count grows fourfold; when few of them match at all (under ``widen_above``:
  a selective filter, a small prefix), or past ``max_candidates``, the items that match are
  searched exactly instead (read through the items table's filter), so a selective filter
  costs time, never recall.
"""

from __future__ import annotations

import importlib.util
import json
import os
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from remem.errors import ConfigError

try:
    import fcntl
except ImportError:  # Windows: builds are not serialised across processes
    fcntl = None  # type: ignore[assignment]
from remem.retrieval.ranking import Candidate
from remem.store.types import Namespace
from remem.store.vectors import VectorIndex, _dot_rows

__all__ = ["AnnConfig", "AnnIndex", "ann_available", "ann_hits"]

_MANIFEST = "manifest.json"
_FORMAT = 1


def ann_available() -> bool:
    """Whether the optional ``usearch`` package can be imported."""
    return importlib.util.find_spec("usearch") is not None


@dataclass(frozen=True)
class AnnConfig:
    """When and how a SQLite store searches large scopes approximately.

    ``above``: a scope holding more than this many vectors is searched through the index;
    ``None`` (default): only scopes too large for the vector budget (which were streamed).
    ``ef_search``: search beam per shard (more is slower and more accurate); ``rescore``:
    candidates re-scored exactly per round, at least (grows with the page size).
    ``connectivity`` / ``expansion_add``: HNSW degree and build beam (fixed when a shard is
    built). ``shard_rows``: vectors per shard (building holds one shard in memory).
    ``delta_rows``: rows written since the last shard kept exactly in memory before they
    become a shard. When fewer than ``widen_above`` of a round's candidates match the
    search's prefix and filter, or past ``max_candidates`` per shard, the matching items are
    searched exactly instead of asking the index for more.
    """

    above: int | None = None
    ef_search: int = 256
    rescore: int = 100
    connectivity: int = 16
    expansion_add: int = 128
    shard_rows: int = 262_144
    delta_rows: int = 20_000
    max_candidates: int = 8192
    widen_above: float = 0.1

    def __post_init__(self) -> None:
        for name, low, high in (("ef_search", 1, 100_000), ("rescore", 1, 1_000_000),
                                ("connectivity", 2, 256), ("expansion_add", 1, 100_000),
                                ("shard_rows", 1, 10**9), ("delta_rows", 1, 10**9),
                                ("max_candidates", 1, 10**9)):
            _check_int(name, getattr(self, name), low, high)
        if isinstance(self.widen_above, bool) or not isinstance(self.widen_above, int | float) \
                or not 0.0 <= self.widen_above <= 1.0:
            raise ConfigError(f"AnnConfig.widen_above must be a number in [0, 1], got "
                              f"{self.widen_above!r}")
        if self.above is not None:
            _check_int("above", self.above, 0, 10**12)

    def threshold(self, budget_rows: int) -> int:
        """Scope size (vectors) above which the index is used."""
        return budget_rows if self.above is None else self.above


def _check_int(name: str, value: object, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"AnnConfig.{name} must be an integer in [{low}, {high}], got "
                          f"{value!r}")


#: rows as read from the table: (vector ids, item ids, namespaces, matrix)
Chunk = tuple[list[int], list[int], list[Namespace], npt.NDArray[np.float32]]


@dataclass
class _Shard:
    name: str
    rows: int
    index: Any  # usearch.index.Index (viewed from its file, or in memory for ":memory:")


@dataclass
class AnnIndex:
    """The shards and the delta of one store's model. Not thread-safe: the store holds its
    cache lock around every use. ``directory`` ``None`` keeps shards in memory only."""

    directory: Path | None
    model_id: int
    dims: int
    config: AnnConfig
    #: the table's vector_seq the shards reflect (-1: no shards yet)
    seq: int = -1
    #: the table's vector_seq the delta reflects
    delta_seq: int = -1
    shards: list[_Shard] = field(default_factory=list)
    delta: VectorIndex | None = None
    _manifest_stamp: int | None = None

    # -- files ------------------------------------------------------------------------------

    def _manifest_path(self) -> Path | None:
        return None if self.directory is None else self.directory / _MANIFEST

    def _stamp(self) -> int | None:
        path = self._manifest_path()
        if path is None:
            return self._manifest_stamp
        try:
            return os.stat(path).st_mtime_ns  # os.stat: pathlib's stat costs more per search
        except FileNotFoundError:
            return None

    def _load_manifest(self) -> bool:
        """Open the shards a manifest names; ``False`` (and nothing held) when there is no
        usable manifest (missing, another model or settings, a shard missing or torn)."""
        from usearch.index import Index

        path = self._manifest_path()
        if path is None:
            return False
        try:
            manifest = json.loads(path.read_text())
            if (manifest.get("format") != _FORMAT or manifest.get("model_id") != self.model_id
                    or manifest.get("dims") != self.dims
                    or manifest.get("connectivity") != self.config.connectivity):
                return False
            shards = []
            for entry in manifest["shards"]:
                index = Index.restore(str(path.parent / entry["file"]), view=True)
                if index is None or len(index) != entry["rows"] or index.ndim != self.dims:
                    return False
                shards.append(_Shard(entry["file"], int(entry["rows"]), index))
        except (OSError, ValueError, KeyError, TypeError, RuntimeError):
            return False
        self.shards = shards
        self.seq = int(manifest["seq"])
        return True

    def _write_manifest(self) -> None:
        path = self._manifest_path()
        if path is None:
            self._manifest_stamp = (self._manifest_stamp or 0) + 1
            return
        body = json.dumps({"format": _FORMAT, "model_id": self.model_id, "dims": self.dims,
                           "connectivity": self.config.connectivity, "seq": self.seq,
                           "shards": [{"file": s.name, "rows": s.rows} for s in self.shards]})
        tmp = path.with_name(f".{_MANIFEST}.{uuid.uuid4().hex}.tmp")
        with open(tmp, "w") as out:
            out.write(body)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)  # atomic: readers see the old manifest or the new one
        self._manifest_stamp = path.stat().st_mtime_ns
        self._drop_strays()

    def _drop_strays(self) -> None:
        """Remove shard files no manifest names (a build that was cut short, replaced shards).
        Another process still mapping one keeps its mapping (POSIX unlink semantics)."""
        assert self.directory is not None
        keep = {s.name for s in self.shards} | {_MANIFEST, "lock"}
        for entry in self.directory.iterdir():
            if entry.name not in keep and (entry.suffix == ".usearch" or entry.name.endswith(
                    ".tmp")):
                entry.unlink(missing_ok=True)

    def _new_index(self) -> Any:
        from usearch.index import Index

        return Index(ndim=self.dims, metric="cos", dtype="i8",
                     connectivity=self.config.connectivity,
                     expansion_add=self.config.expansion_add)

    def _seal(self, index: Any, rows: int) -> _Shard:
        """Save a built shard (to a temporary name, then renamed) and map it read-only."""
        name = f"{self.model_id}-{uuid.uuid4().hex}.usearch"
        if self.directory is None:
            return _Shard(name, rows, index)
        from usearch.index import Index

        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self.directory / f".{name}.tmp"
        index.save(str(tmp))
        with open(tmp, "rb") as written:
            os.fsync(written.fileno())
        os.replace(tmp, self.directory / name)
        viewed = Index.restore(str(self.directory / name), view=True)
        return _Shard(name, rows, viewed)

    # -- keeping up with the table ----------------------------------------------------------

    def sync(self, seq: int, pruned: int, read_since: Callable[[int], Iterator[Chunk]],
             read_tombstones: Callable[[int], list[int]]) -> None:
        """Bring the index up to the table's ``seq``: open (or reopen) the manifest, build the
        shards when there are none, read rows newer than the shards into the delta and seal
        the delta into a shard once it is large. ``read_since(s)`` yields every row of the
        model with a sequence number above ``s``; ``read_tombstones(s)`` the vector ids
        deleted since ``s`` (only asked when ``s >= pruned``, while they are kept)."""
        stamp = self._stamp()
        if stamp != self._manifest_stamp or (stamp is None and not self.shards):
            self._manifest_stamp = stamp
            self.delta, self.delta_seq = None, -1
            if not self._load_manifest():
                self.shards, self.seq = [], -1
        if self.seq < 0:
            with self._exclusive():
                # another process may have built it while this one waited for the lock
                if not self._reload():
                    self._build(seq, read_since(-1))
                    return
        if self.delta is None or self.delta_seq < pruned:
            self.delta = VectorIndex(self.dims, block=1024)
            self.delta_seq = self.seq
        if self.delta_seq != seq:
            for vector_id in read_tombstones(self.delta_seq):
                self.delta.remove(vector_id)
            for ids, items, namespaces, matrix in read_since(self.delta_seq):
                self.delta.upsert_many(ids, items, namespaces, matrix)
            self.delta_seq = seq
        if len(self.delta) >= self.config.delta_rows:
            with self._exclusive():
                if self._stamp() == self._manifest_stamp:  # else: sealed elsewhere, reread
                    self._seal_delta(seq, read_since(self.seq))
                else:
                    self._manifest_stamp = None  # the next search opens the new manifest

    def _reload(self) -> bool:
        """Open the manifest if one appeared; whether shards are now held."""
        stamp = self._stamp()
        if stamp is None or not self._load_manifest():
            return False
        self._manifest_stamp = stamp
        self.delta, self.delta_seq = VectorIndex(self.dims, block=1024), self.seq
        return True

    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        """Hold the index directory's lock (builds and seals by several processes take
        turns, and stray files are only removed under it); no lock for an in-memory store
        or where ``fcntl`` is missing."""
        if self.directory is None or fcntl is None:
            yield
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.directory / "lock", os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    def _build(self, seq: int, rows: Iterator[Chunk]) -> None:
        """Index every row of the model, shard by shard (one shard in memory at a time)."""
        shards: list[_Shard] = []
        index, held = self._new_index(), 0
        for ids, _, _, matrix in rows:
            at = 0
            while at < len(ids):
                take = min(len(ids) - at, self.config.shard_rows - held)
                index.add(np.asarray(ids[at:at + take], dtype=np.uint64), matrix[at:at + take])
                held += take
                at += take
                if held == self.config.shard_rows:
                    shards.append(self._seal(index, held))
                    index, held = self._new_index(), 0
        if held:
            shards.append(self._seal(index, held))
        self.shards, self.seq = shards, seq
        self.delta, self.delta_seq = VectorIndex(self.dims, block=1024), seq
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True)
        self._write_manifest()

    def _seal_delta(self, seq: int, rows: Iterator[Chunk]) -> None:
        """Turn the rows newer than the shards (read again from the table, so exactly what
        it holds now) into one more shard."""
        index, held = self._new_index(), 0
        for ids, _, _, matrix in rows:
            index.add(np.asarray(ids, dtype=np.uint64), matrix)
            held += len(ids)
        if held:
            self.shards = [*self.shards, self._seal(index, held)]
        self.seq = seq
        self.delta, self.delta_seq = VectorIndex(self.dims, block=1024), seq
        self._write_manifest()

    def rows(self) -> int:
        """Vectors in the shards (deleted ones included until rebuilt) and in the delta."""
        return sum(s.rows for s in self.shards) + (len(self.delta) if self.delta else 0)

    # -- candidates -------------------------------------------------------------------------

    def shard_candidates(self, query: npt.NDArray[np.float32], count: int) -> list[int]:
        """Vector ids of the ``count`` nearest per shard, merged by approximate distance."""
        keys: list[npt.NDArray[np.uint64]] = []
        distances: list[npt.NDArray[np.float32]] = []
        for shard in self.shards:
            shard.index.expansion_search = max(self.config.ef_search, count)
            found = shard.index.search(query, min(count, shard.rows), threads=1)
            keys.append(np.asarray(found.keys, dtype=np.uint64))
            distances.append(np.asarray(found.distances, dtype=np.float32))
        if not keys:
            return []
        all_keys = np.concatenate(keys)
        order = np.argsort(np.concatenate(distances), kind="stable")
        return [int(k) for k in all_keys[order]]


def ann_hits(index: AnnIndex, query: npt.NDArray[np.float32], prefix: Namespace, depth: int,
             vectors: Callable[[Sequence[int]], list[tuple[int, npt.NDArray[np.float32]]]],
             addresses: Callable[[list[int]], Mapping[int, tuple[Namespace, str]]],
             exact: Callable[[], list[Candidate]]) -> list[Candidate]:
    """The ``depth`` best items under ``prefix`` and the search's filter, best first, ties by
    (namespace, key): candidates from the shards and the delta, re-scored exactly with
    ``vectors`` (vector ids -> ``(item id, float32 vector)`` of those still in the table),
    confirmed with ``addresses``; rounds grow until the page is full, then ``exact`` (the
    exact stream) takes over past ``max_candidates``."""
    config = index.config
    count = max(config.rescore, 4 * depth)
    held = max([s.rows for s in index.shards] + [len(index.delta) if index.delta else 0])
    while True:
        # each shard proposes ``count``; the ``count`` nearest of them by the int8 distance
        # are re-scored exactly (a fixed number of table reads, however many shards)
        vector_ids = index.shard_candidates(query, count)
        if count < held:
            vector_ids = vector_ids[:count]
        best: dict[int, float] = {}
        pairs = vectors(vector_ids)
        if pairs:
            scores = _dot_rows(np.stack([v for _, v in pairs]), query).tolist()
            for (item_id, _), score in zip(pairs, scores, strict=True):
                if score > best.get(item_id, -np.inf):
                    best[item_id] = score
        if index.delta is not None:
            for position, (item_id, score) in enumerate(index.delta.ranked_items(query, prefix)):
                if position >= count:
                    break
                if score > best.get(item_id, -np.inf):
                    best[item_id] = score
        found = addresses(list(best))
        hits = [(item_id, address, best[item_id]) for item_id, address in found.items()]
        # enough: the page is full and the index was asked deep enough that its last matches
        # are not near the end of what it proposed (where approximate ranks are least sure):
        # every candidate matched (no filter), or three pages of matches
        enough = len(hits) >= depth and len(hits) >= min(len(best), 3 * depth)
        if enough or count >= held:  # or every vector was a candidate
            hits.sort(key=lambda c: (-c[2], c[1]))
            if len(hits) <= depth:
                return hits
            return hits[:depth] + [c for c in hits[depth:] if c[2] == hits[depth - 1][2]]
        if count >= config.max_candidates or len(hits) < len(best) * config.widen_above:
            # a selective filter or a small prefix: the index would be asked for many times
            # the page to hold its matches, and its deep ranks are its least sure ones; the
            # matching items alone are searched exactly instead
            return exact()
        count = min(count * 4, config.max_candidates)
