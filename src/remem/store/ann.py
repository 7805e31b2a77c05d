"""An approximate index over a SQLite file's vectors, for scopes too large to hold.

A scope that does not fit the vector budget (every item of a million-item file) is streamed
from the table on each search: exact, bounded in memory, and linear in the file (seconds at a
million vectors). A store opened with ``ann=AnnConfig(...)`` searches such a scope through
compact codes held in the process instead, in three stages, each narrowing the last:

1. **Sign bits** (one bit a dimension: 48 bytes for a 384-d vector, 48 MB at a million)
   are compared with the query's by Hamming distance, all of them, in cache-sized blocks; the
   ``shortlist`` nearest go on.
2. **Four-bit codes** (per dimension, centred and scaled on a sample of the table: 192 bytes
   a 384-d vector) score the shortlist against the float query; the ``rescore`` best go on.
3. **The table**: those are re-read by vector id in the search's transaction and scored in
   float32 with the arithmetic every backend uses (:func:`_dot_rows`), then confirmed by the
   items table (alive, prefix, filter) as in exact search.

Why codes and not a graph (HNSW): on near-uniform vectors (the benchmark's hash embeddings)
a graph's neighbours of neighbours are not the query's neighbours; usearch's HNSW reached
recall@10 0.72 at a million, 0.956 only at a beam of 2,048 on 100k vectors (21 ms). A scan
of sign bits costs the same on any vectors and its recall is set by the shortlist alone
(docs/vectors.md has the curve). It is linear in the scope: past a few million vectors a
graph would likely be faster again (not measured).

The table stays the truth. The codes follow it by the database's ``vector_seq`` (rows newer
than theirs appended, tombstoned ones marked dead and skipped by the scan, removed outright
once they are ``compact_above`` of the codes), and every answer's scores are exact: a stale
index can lower recall, never correctness. Building reads every vector of the model once (a
million in 12-35 s on two busy cores); :class:`AnnIndex` only holds the state, the store runs
the build (in a background thread for a file: the first searches are answered exactly
meanwhile and never wait for it).

Filters and prefixes: when a round's candidates hold too few matches for the page, the
shortlist grows fourfold; when few of them match at all (under ``widen_above``: a selective
filter, a small prefix), or past ``max_candidates``, the items that match are searched
exactly instead (read through the items table's filter), so a selective filter costs time,
never recall.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from remem.errors import ConfigError
from remem.retrieval.ranking import Candidate
from remem.store.types import Namespace
from remem.store.vectors import _dot_rows

__all__ = ["READ_ROWS", "RETRY_AFTER", "AnnConfig", "AnnIndex", "Codes", "ann_hits", "build_codes"]

#: rows read from the table a chunk while building (smaller chunks, smaller temporaries)
READ_ROWS = 4096
#: seconds after a failed build before a search starts another
RETRY_AFTER = 60.0

#: rows scanned per block: a block's words and counts stay in the CPU cache between passes
_BLOCK = 32_768
#: a Hamming distance no live row reaches (dead rows get it)
_FAR = np.uint16(0xFFFF)
#: a scan split over threads gives each part at least this many blocks
_BLOCKS_PER_PART = 4
#: every how many rows the shortlist's distance is estimated from
_SAMPLE_STEP = 16
#: four-bit levels: -7..7 stored as 1..15 (0 unused), clipped at this many deviations
_LEVELS = 7
_CLIP_SIGMAS = 3.0


@dataclass(frozen=True)
class AnnConfig:
    """When and how a SQLite store searches large scopes approximately.

    ``above``: a scope holding more than this many vectors is searched through the index;
    ``None`` (default): only scopes too large for the vector budget (which are streamed
    otherwise). ``shortlist``: codes nearest by sign bits scored with four-bit codes per
    round (more is slower and more accurate: the recall knob); ``rescore``: of those, the
    best re-read from the table and scored exactly (at least four pages). When fewer than
    ``widen_above`` of a round's candidates match the search's prefix and filter, or past
    ``max_candidates``, the matching items are searched exactly instead of asking the index
    for more. ``background``: build the index in a thread (exact answers until it is ready)
    rather than in the first search that needs it (always in the search for ``:memory:``).
    Dead rows (deleted vectors) are compacted out once they are ``compact_above`` of the
    codes. ``scan_threads``: threads a search's scan of the sign bits is split over (1: the
    searching thread alone; more helps only where cores are idle: at load average 14 on two
    cores, 2 was slower).
    """

    above: int | None = None
    shortlist: int = 8192
    rescore: int = 40
    max_candidates: int = 131_072
    widen_above: float = 0.1
    background: bool = True
    compact_above: float = 0.2
    scan_threads: int = 1

    def __post_init__(self) -> None:
        for name, low, high in (("shortlist", 1, 10**9), ("rescore", 1, 1_000_000),
                                ("max_candidates", 1, 10**9), ("scan_threads", 1, 64)):
            _check_int(name, getattr(self, name), low, high)
        for name in ("widen_above", "compact_above"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) \
                    or not 0.0 <= value <= 1.0:
                raise ConfigError(f"AnnConfig.{name} must be a number in [0, 1], got "
                                  f"{value!r}")
        if not isinstance(self.background, bool):
            raise ConfigError(f"AnnConfig.background must be True or False, got "
                              f"{self.background!r}")
        if self.above is not None:
            _check_int("above", self.above, 0, 10**12)

    def threshold(self, budget_rows: int) -> int:
        """Scope size (vectors) above which the index is used."""
        return budget_rows if self.above is None else self.above


def _check_int(name: str, value: object, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"AnnConfig.{name} must be an integer in [{low}, {high}], got "
                          f"{value!r}")


class Codes:
    """Sign bits and four-bit codes of vectors, by vector id, in blocks of ``_BLOCK`` rows
    (growing never copies what is held: a new block is added), with dead rows.

    ``centre`` and ``step`` (per dimension) fix the four-bit quantisation; they come from a
    sample (:meth:`fitted`) and stay fixed, so rows appended later are coded alike (values
    past the sample's range are clipped, which costs accuracy, never correctness)."""

    def __init__(self, dims: int, centre: npt.NDArray[np.float32],
                 step: npt.NDArray[np.float32]) -> None:
        self.dims = dims
        self.words = (dims + 63) // 64
        self.centre = centre.astype(np.float32)
        self.step = step.astype(np.float32)
        # block i holds rows i * _BLOCK ...; the last one grows (doubling) up to _BLOCK rows
        self._bits: list[npt.NDArray[np.uint64]] = []  # (words, rows) each
        self._nibbles: list[npt.NDArray[np.uint8]] = []  # (rows, (dims + 1) // 2) each
        self._ids: list[npt.NDArray[np.int64]] = []
        self.size = 0
        self.top_id = -1  # the largest vector id appended (a smaller one may be a reused id)
        self._dead: set[int] = set()  # positions of removed rows (until compacted)
        self._dead_positions = np.zeros(0, dtype=np.int64)

    @classmethod
    def fitted(cls, sample: npt.NDArray[np.float32]) -> Codes:
        """Codes whose four-bit scale fits ``sample`` (rows of unit vectors): each dimension
        centred on its mean, levels spread over +-3 standard deviations."""
        centre = sample.mean(axis=0)
        spread = sample.std(axis=0) if len(sample) > 1 else np.full(sample.shape[1], 0.05)
        step = np.maximum(spread * _CLIP_SIGMAS / _LEVELS, 1e-6)
        return cls(sample.shape[1], centre.astype(np.float32), step.astype(np.float32))

    def __len__(self) -> int:
        """Live rows."""
        return self.size - len(self._dead)

    def nbytes(self) -> int:
        """Bytes of the arrays held."""
        return sum(b.nbytes + n.nbytes + i.nbytes
                   for b, n, i in zip(self._bits, self._nibbles, self._ids, strict=True))

    def dead_share(self) -> float:
        """Share of the held rows that are dead."""
        return len(self._dead) / self.size if self.size else 0.0

    def sign_words(self, matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.uint64]:
        """Sign bits of each row as ``words`` 64-bit words, shape (words, rows)."""
        packed = np.packbits(matrix > 0, axis=1)
        padded = np.zeros((len(matrix), self.words * 8), dtype=np.uint8)
        padded[:, :packed.shape[1]] = packed
        return np.ascontiguousarray(padded.view(np.uint64).T)

    def nibbles(self, matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.uint8]:
        """Four-bit codes of each row, two dimensions a byte (even in the low half)."""
        levels = np.clip(np.rint((matrix - self.centre) / self.step), -_LEVELS, _LEVELS)
        codes = (levels + _LEVELS + 1).astype(np.uint8)
        if self.dims % 2:
            codes = np.concatenate([codes, np.zeros((len(codes), 1), np.uint8)], axis=1)
        packed: npt.NDArray[np.uint8] = codes[:, 0::2] | (codes[:, 1::2] << 4)
        return packed

    def _room(self, need: int) -> int:
        """Make room in the last block for up to ``need`` rows (adding or growing it); the
        rows it can take. Only a first block starts small (a small store holds kilobytes);
        later ones are allocated whole, so a large build frees no outgrown blocks (which
        the allocator would keep as heap: 50 MB at a million rows)."""
        used = self.size - (len(self._ids) - 1) * _BLOCK if self._ids else _BLOCK
        if used == _BLOCK:  # full (or none yet): a new block
            size = _BLOCK if self._ids else min(_BLOCK, 1 << max(6, (need - 1).bit_length()))
            self._bits.append(np.zeros((self.words, size), dtype=np.uint64))
            self._nibbles.append(np.zeros((size, (self.dims + 1) // 2), dtype=np.uint8))
            self._ids.append(np.zeros(size, dtype=np.int64))
            return size
        held = len(self._ids[-1])
        if used == held:  # the last block is full at its size: double it
            grown = min(max(held * 2, 1 << (used + need - 1).bit_length()), _BLOCK)
            bits = np.zeros((self.words, grown), dtype=np.uint64)
            bits[:, :held] = self._bits[-1]
            nibbles = np.zeros((grown, self._nibbles[-1].shape[1]), dtype=np.uint8)
            nibbles[:held] = self._nibbles[-1]
            ids = np.zeros(grown, dtype=np.int64)
            ids[:held] = self._ids[-1]
            self._bits[-1], self._nibbles[-1], self._ids[-1] = bits, nibbles, ids
            held = grown
        return held - used

    def append(self, ids: Sequence[int], matrix: npt.NDArray[np.float32]) -> None:
        """Add rows (vector ids and their unit vectors)."""
        if not len(ids):
            return
        keys = np.asarray(ids, dtype=np.int64)
        bits, nibbles = self.sign_words(matrix), self.nibbles(matrix)
        at = 0
        while at < len(keys):
            take = min(self._room(len(keys) - at), len(keys) - at)
            start = self.size - (len(self._ids) - 1) * _BLOCK
            self._bits[-1][:, start:start + take] = bits[:, at:at + take]
            self._nibbles[-1][start:start + take] = nibbles[at:at + take]
            self._ids[-1][start:start + take] = keys[at:at + take]
            self.size += take
            at += take
        self.top_id = max(self.top_id, int(keys.max()))

    def _block_rows(self, block: int) -> int:
        return min(_BLOCK, self.size - block * _BLOCK)

    def remove(self, vector_ids: Iterable[int]) -> None:
        """Mark these vector ids dead (skipped by every later search)."""
        wanted = np.fromiter(vector_ids, dtype=np.int64)
        if not len(wanted) or not self.size:
            return
        fresh: list[int] = []
        for block, ids in enumerate(self._ids):
            hit = np.flatnonzero(np.isin(ids[:self._block_rows(block)], wanted))
            fresh += [p for p in (hit + block * _BLOCK).tolist() if p not in self._dead]
        if fresh:
            self._dead.update(fresh)
            self._dead_positions = np.fromiter(self._dead, dtype=np.int64)

    def compact(self) -> None:
        """Drop the dead rows (positions change; ids do not), block by block, so at most
        one block more than the codes is held meanwhile."""
        if not self._dead:
            return
        dead = self._dead_positions
        old = list(zip(self._bits, self._nibbles, self._ids, strict=True))
        rows = [self._block_rows(b) for b in range(len(old))]
        self._bits, self._nibbles, self._ids = [], [], []
        self.size, self._dead, self._dead_positions = 0, set(), np.zeros(0, dtype=np.int64)
        for block in range(len(old)):
            bits, nibbles, ids = old[block]
            old[block] = None  # type: ignore[call-overload]  # freed as it is copied
            keep = np.ones(rows[block], dtype=bool)
            mine = dead[(dead >= block * _BLOCK) & (dead < (block + 1) * _BLOCK)]
            keep[mine - block * _BLOCK] = False
            self._append_coded(bits[:, :rows[block]][:, keep], nibbles[:rows[block]][keep],
                               ids[:rows[block]][keep])

    def _append_coded(self, bits: npt.NDArray[np.uint64], nibbles: npt.NDArray[np.uint8],
                      ids: npt.NDArray[np.int64]) -> None:
        at = 0
        while at < len(ids):
            take = min(self._room(len(ids) - at), len(ids) - at)
            start = self.size - (len(self._ids) - 1) * _BLOCK
            self._bits[-1][:, start:start + take] = bits[:, at:at + take]
            self._nibbles[-1][start:start + take] = nibbles[at:at + take]
            self._ids[-1][start:start + take] = ids[at:at + take]
            self.size += take
            at += take

    def hamming(self, query: npt.NDArray[np.float32], threads: int = 1
                ) -> npt.NDArray[np.uint16]:
        """Hamming distance of every held row's sign bits to the query's (dead rows: far).
        With ``threads`` > 1 a large scan is split in parts (NumPy releases the GIL in its
        loops): the calling thread scans one, pool threads the others."""
        q = self.sign_words(query[None, :])[:, 0]
        out = np.empty(self.size, dtype=np.uint16)
        blocks = len(self._bits)
        parts = min(threads, blocks // _BLOCKS_PER_PART) or 1
        cuts = [blocks * i // parts for i in range(parts + 1)]
        pending = [_scan_pool().submit(self._scan, q, out, cuts[i], cuts[i + 1])
                   for i in range(1, parts)]
        self._scan(q, out, cuts[0], cuts[1])
        for job in pending:
            job.result()
        if len(self._dead_positions):
            out[self._dead_positions] = _FAR
        return out

    def _scan(self, q: npt.NDArray[np.uint64], out: npt.NDArray[np.uint16], first_block: int,
              end_block: int) -> None:
        """Distances of the rows of blocks ``first_block`` to ``end_block`` into ``out``."""
        word = np.empty(_BLOCK, dtype=np.uint64)
        count = np.empty(_BLOCK, dtype=np.uint8)
        part = np.empty(_BLOCK, dtype=np.uint8)
        for block in range(first_block, end_block):
            bits = self._bits[block]
            rows = self._block_rows(block)
            start = block * _BLOCK
            acc, w, c, p = out[start:start + rows], word[:rows], count[:rows], part[:rows]
            # counts of up to three words (192) fit a byte: summed as bytes (one dtype, no
            # casting loop), widened once per three words
            for first in range(0, self.words, 3):
                np.bitwise_xor(bits[first, :rows], q[first], out=w)
                np.bitwise_count(w, out=p)
                for j in range(first + 1, min(first + 3, self.words)):
                    np.bitwise_xor(bits[j, :rows], q[j], out=w)
                    np.bitwise_count(w, out=c)
                    np.add(p, c, out=p)
                if first:
                    np.add(acc, p, out=acc)
                else:
                    acc[:] = p

    def _gather(self, positions: npt.NDArray[np.int64]
                ) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
        """Four-bit codes and ids of these (ascending) positions."""
        cuts = np.searchsorted(positions, np.arange(1, len(self._ids) + 1) * _BLOCK)
        nibbles, ids, at = [], [], 0
        for block, cut in enumerate(cuts.tolist()):
            if cut > at:
                local = positions[at:cut] - block * _BLOCK
                nibbles.append(self._nibbles[block][local])
                ids.append(self._ids[block][local])
            at = cut
        return np.concatenate(nibbles), np.concatenate(ids)

    def candidates(self, query: npt.NDArray[np.float32], shortlist: int, rescore: int,
                   threads: int = 1) -> list[int]:
        """Vector ids of the ``rescore`` best of the ``shortlist`` nearest by sign bits,
        best first by their four-bit scores (the scan split over ``threads``)."""
        live = len(self)
        if not live:
            return []
        distances = self.hamming(query, threads)
        if shortlist < live:
            positions = _nearest(distances, shortlist, self.words * 64)
        else:
            positions = np.flatnonzero(distances != _FAR)
        codes, ids = self._gather(positions)
        weights = query * self.step
        if self.dims % 2:
            weights = np.concatenate([weights, np.zeros(1, np.float32)])
        # einsum, not BLAS: a multithreaded sgemv waits for idle threads on a loaded machine;
        # contiguous weights: a strided operand takes einsum's slow generic loop
        low, high = np.ascontiguousarray(weights[0::2]), np.ascontiguousarray(weights[1::2])
        scores = (np.einsum("ij,j->i", (codes & 15).astype(np.float32), low)
                  + np.einsum("ij,j->i", (codes >> 4).astype(np.float32), high))
        if rescore < len(positions):
            best = np.argpartition(-scores, rescore - 1)[:rescore]
        else:
            best = np.arange(len(positions))
        best = best[np.argsort(-scores[best], kind="stable")]
        return [int(i) for i in ids[best]]


def _nearest(distances: npt.NDArray[np.uint16], count: int, most: int
             ) -> npt.NDArray[np.int64]:
    """Positions (ascending) of the ``count`` smallest distances (ties cut in position
    order). The distance at which ``count`` rows are reached is read from the counts per
    distance of every 16th row, with a margin (a partition of a million distances costs
    more); the rows within it are few, and are cut exactly."""
    sample = np.cumsum(np.bincount(distances[::_SAMPLE_STEP], minlength=most + 1))
    limit = int(np.searchsorted(sample * _SAMPLE_STEP, count + count // 4 + 64))
    positions = np.flatnonzero(distances <= limit)
    if len(positions) < count and limit < most:  # the sample misled: count them all
        counts = np.cumsum(np.bincount(distances, minlength=most + 1))
        positions = np.flatnonzero(distances <= int(np.searchsorted(counts, count)))
    if len(positions) > count:
        near = distances[positions]
        keep = np.argsort(near, kind="stable")[:count]  # stable: ties by position
        positions = np.sort(positions[keep])
    return positions


_scan_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def _scan_pool() -> ThreadPoolExecutor:
    """The threads that scan parts of large codes, shared by every store of the process
    (each call fills its own part of its own output: nothing is shared but the threads)."""
    global _pool
    with _scan_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=max(1, min(7, (os.cpu_count() or 2) - 1)),
                                       thread_name_prefix="remem-ann-scan")
        return _pool


@dataclass
class AnnIndex:
    """The codes of one store's model and the table's ``vector_seq`` they reflect. Not
    thread-safe: the store holds its cache lock around every use except the build, which
    fills a fresh :class:`Codes` and hands it over with :meth:`install`."""

    dims: int
    config: AnnConfig
    codes: Codes | None = None
    #: the table's vector_seq the codes reflect
    seq: int = -1
    #: the thread building the codes, while it runs
    builder: threading.Thread | None = None
    #: why the last build failed and when (monotonic seconds): searches stay exact, and a
    #: search retries the build once ``RETRY_AFTER`` seconds have passed
    error: BaseException | None = None
    failed_at: float = 0.0

    def may_build(self, now: float) -> bool:
        """Whether a build may start: none running, and none failed in the last
        ``RETRY_AFTER`` seconds (a file that cannot be read is not re-read every search)."""
        return self.builder is None and (self.error is None
                                         or now - self.failed_at >= RETRY_AFTER)

    @property
    def ready(self) -> bool:
        """Whether codes are held (a search may use them)."""
        return self.codes is not None

    def install(self, codes: Codes, seq: int) -> None:
        """Hold freshly built codes reflecting the table at ``seq``."""
        self.codes, self.seq, self.error = codes, seq, None

    def sync(self, seq: int, pruned: int, rows_since: Callable[[int], Iterable[
            tuple[Sequence[int], npt.NDArray[np.float32]]]],
             tombstones_since: Callable[[int], list[int]]) -> bool:
        """Bring the codes up to the table's ``seq``: tombstoned vectors marked dead, newer
        rows appended, dead rows compacted past ``compact_above``. ``False`` (codes
        dropped: rebuild) when the tombstones needed were pruned."""
        codes = self.codes
        if codes is None:
            return False
        if self.seq == seq:
            return True
        if self.seq < pruned:
            self.codes, self.seq = None, -1
            return False
        codes.remove(tombstones_since(self.seq))
        for ids, matrix in rows_since(self.seq):
            if len(ids) and min(ids) <= codes.top_id:
                codes.remove(ids)  # a vector id written again (a reused rowid): its new row
            codes.append(ids, matrix)
        self.seq = seq
        if codes.dead_share() > self.config.compact_above:
            codes.compact()
        return True


def build_codes(rows: Iterable[tuple[Sequence[int], npt.NDArray[np.float32]]]
                ) -> Codes | None:
    """Codes of every row (chunks of vector ids and unit vectors), fitted on the first
    chunk; ``None`` when there are no rows."""
    codes: Codes | None = None
    for ids, matrix in rows:
        if codes is None:
            codes = Codes.fitted(matrix)
        codes.append(ids, matrix)
    _trim_heap()
    return codes


def _trim_heap() -> None:
    """Hand the heap the build's temporaries freed back to the OS: glibc keeps it otherwise
    (52 MB after coding a million rows, counted in RSS for the process's life). A no-op
    where the C library has no ``malloc_trim``."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return
    trim(0)


def ann_hits(codes: Codes, config: AnnConfig, query: npt.NDArray[np.float32], depth: int,
             vectors: Callable[[Sequence[int]], list[tuple[int, npt.NDArray[np.float32]]]],
             addresses: Callable[[list[int]], Mapping[int, tuple[Namespace, str]]],
             exact: Callable[[], list[Candidate]]) -> list[Candidate]:
    """The ``depth`` best items under the search's prefix and filter, best first, ties by
    (namespace, key): candidates from the codes, re-scored exactly with ``vectors`` (vector
    ids -> ``(item id, float32 vector)`` of those still in the table), confirmed with
    ``addresses``; rounds grow until the page is full, then ``exact`` (the exact search of
    the matching items) takes over past ``max_candidates`` or when few candidates match."""
    shortlist = config.shortlist
    rescore = max(config.rescore, 4 * depth)
    held = len(codes)
    while True:
        best: dict[int, float] = {}
        pairs = vectors(codes.candidates(query, shortlist, rescore, config.scan_threads))
        if pairs:
            scores = _dot_rows(np.stack([v for _, v in pairs]), query).tolist()
            for (item_id, _), score in zip(pairs, scores, strict=True):
                if score > best.get(item_id, -np.inf):
                    best[item_id] = score
        found = addresses(list(best))
        hits = [(item_id, address, best[item_id]) for item_id, address in found.items()]
        # enough: the page is full and the codes were asked deep enough that the last
        # matches are not at the end of what they proposed (where approximate ranks are least
        # sure): every candidate matched (no filter), or three pages of matches
        enough = len(hits) >= depth and len(hits) >= min(len(best), 3 * depth)
        if enough or rescore >= held:  # or every vector was re-scored: exact
            hits.sort(key=lambda c: (-c[2], c[1]))
            if len(hits) <= depth:
                return hits
            return hits[:depth] + [c for c in hits[depth:] if c[2] == hits[depth - 1][2]]
        if rescore >= config.max_candidates or len(hits) < len(best) * config.widen_above:
            # a selective filter or a small prefix: the codes would be asked for many times
            # the page to hold its matches; the matching items alone are searched exactly
            return exact()
        shortlist, rescore = shortlist * 4, min(rescore * 4, config.max_candidates)
