"""Move items between stores (and backends) as JSON Lines.

One line per item: ``{"namespace": [...], "key": ..., "value": {...}, "created_at": ...,
"updated_at": ..., "expires_at": ... | null, "event_at": ... | null, "ttl": seconds | null}``
with ISO 8601 UTC timestamps. Vectors are not exported: the importing store embeds with its own
index config.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from typing import IO, Any

from remem.errors import ImportFormatError, InvalidInputError
from remem.store.base import BaseStore
from remem.store.types import MAX_VALUE_DEPTH, PutOp

__all__ = ["export_jsonl", "import_jsonl"]


def export_jsonl(store: BaseStore, out: IO[str], namespace_prefix: Sequence[str] = ()) -> int:
    """Write every live item under ``namespace_prefix`` to ``out``; return the count."""
    count = 0
    for item in store.iter_items(namespace_prefix):
        record = item.to_dict()
        record["ttl"] = store.ttl_of(item.namespace, item.key) if item.expires_at else None
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
        count += 1
    return count


def _timestamp(record: dict[str, Any], name: str, line: int) -> float | None:
    raw = record.get(name)
    if raw is None:
        return None
    try:
        return datetime.fromisoformat(raw).timestamp()
    except (TypeError, ValueError):
        raise ImportFormatError(
            f"line {line}: {name} must be an ISO 8601 timestamp, got {raw!r}"
        ) from None


def _ops(lines: Iterable[str]) -> Iterator[PutOp]:
    for number, text in enumerate(lines, 1):
        if not text.strip():
            continue
        try:
            record = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ImportFormatError(f"line {number}: not valid JSON ({exc.msg})") from None
        except RecursionError:  # thousands of levels: past the 64 a value may have anyway
            raise ImportFormatError(
                f"line {number}: nested too deeply to read; values nest at most "
                f"{MAX_VALUE_DEPTH} levels of objects and arrays") from None
        if not isinstance(record, dict):
            raise ImportFormatError(f"line {number}: expected a JSON object per line")
        missing = [k for k in ("namespace", "key", "value") if k not in record]
        if missing:
            raise ImportFormatError(f"line {number}: missing field(s) {', '.join(missing)}")
        try:
            yield PutOp(
                tuple(record["namespace"]) if isinstance(record["namespace"], list)
                else record["namespace"],
                record["key"],
                record["value"],
                ttl=record.get("ttl"),
                created_at=_timestamp(record, "created_at", number),
                updated_at=_timestamp(record, "updated_at", number),
                expires_at=_timestamp(record, "expires_at", number),
                event_at=_timestamp(record, "event_at", number),
            )
        except ImportFormatError:
            raise
        except InvalidInputError as exc:
            raise ImportFormatError(f"line {number}: {exc}") from None


def import_jsonl(store: BaseStore, lines: Iterable[str], *, batch_size: int = 500,
                 progress: Callable[[int], None] | None = None) -> int:
    """Put every item of a JSONL export into ``store``, keeping timestamps and TTLs.

    Items are written in batches of ``batch_size`` (each batch atomic); a bad line raises
    :class:`ImportFormatError` naming its line number before its batch is written.
    ``progress`` is called with the number of items written after each batch.
    """
    count = 0
    pending: list[PutOp] = []
    for op in _ops(lines):
        pending.append(op)
        if len(pending) >= batch_size:
            store.batch(pending)
            count += len(pending)
            pending = []
            if progress is not None:
                progress(count)
    if pending:
        store.batch(pending)
        count += len(pending)
        if progress is not None:
            progress(count)
    return count
