"""The base of every thread result's JSON shape (:class:`~remem.wire_models.Wire`, shared by
every family) and how a thread shape is dumped (:func:`json_of`).

A value whose ``to_dict()`` is its shape declares that shape beside itself, on this base
(:class:`~remem.threads.types.CheckpointOut` and ``ThreadInfoOut`` in
:mod:`remem.threads.types`, ``ThreadHitOut`` in :mod:`remem.threads.search`), so a value never
reaches up to :mod:`remem.threads.wire`, which gathers every shape and names each request's
result model.
"""

from __future__ import annotations

from typing import Any

from remem.wire_models import Wire

__all__ = ["Wire", "json_of"]


def json_of(model: Wire[Any]) -> dict[str, Any]:
    """A shape as JSON-ready data, fields at their defaults left out: what ``to_dict()``
    and the HTTP answers hold."""
    data: dict[str, Any] = model.model_dump(mode="json", exclude_defaults=True)
    return data
