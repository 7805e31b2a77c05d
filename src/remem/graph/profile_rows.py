"""Row operations of the profile and the timeline over one graph transaction.

The companion of :class:`~remem.graph.rows.GraphRows` for the ``g002_profile`` tables
(:mod:`remem.graph.schema`): every read and write is confined to the graph's namespace.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from remem.graph.profile import ProfileChange, ProfileSlot, SlotChange, TimelineEvent
from remem.graph.rows import json_list, parse_rows
from remem.graph.storage import GraphTx
from remem.store.bad_records import int_field, text_field, time_field

__all__ = ["ProfileRows", "event_of_row"]


def event_of_row(row: Sequence[Any]) -> TimelineEvent:
    """A timeline event row (``ValueError``/``TypeError`` naming the column if it does not
    parse)."""
    id_, happened_at, text, tags, episode_id, recorded_at = row
    happened, recorded = time_field(happened_at, "happened_at"), time_field(recorded_at,
                                                                            "recorded_at")
    if happened is None or recorded is None:
        raise TypeError("happened_at and recorded_at must be numbers of seconds since the "
                        "epoch, got null")
    return TimelineEvent(int_field(id_, "id"), happened, text_field(text, "text"),
                         json_list(tags, "tags", str),
                         None if episode_id is None else int_field(episode_id, "episode_id"),
                         recorded)


class ProfileRows:
    """Profile slots, their history and the timeline of one graph (namespace ``ns``)."""

    def __init__(self, tx: GraphTx, ns: str) -> None:
        self.tx = tx
        self.ns = ns

    def slots(self) -> dict[str, dict[str, ProfileSlot]]:
        """Every set slot: topic -> sub-topic -> slot, in name order."""
        rows = self.tx.execute(
            "SELECT topic, sub_topic, value, updated_at, episode_id FROM graph_profile "
            "WHERE ns = ? ORDER BY topic, sub_topic", (self.ns,)).fetchall()
        out: dict[str, dict[str, ProfileSlot]] = {}
        for topic, sub_topic, value, updated_at, episode_id in rows:
            out.setdefault(topic, {})[sub_topic] = ProfileSlot(
                value, updated_at, None if episode_id is None else int(episode_id))
        return out

    def apply(self, changes: Sequence[SlotChange], now: float,
              episode_id: int | None) -> None:
        """Write ``changes`` (from :func:`remem.graph.profile.plan_patch`) and record each in
        the history."""
        for change in changes:
            if change.new is None:
                self.tx.execute("DELETE FROM graph_profile WHERE ns = ? AND topic = ? AND "
                                "sub_topic = ?", (self.ns, change.topic, change.sub_topic))
            else:
                self.tx.execute(
                    "INSERT INTO graph_profile (ns, topic, sub_topic, value, updated_at, "
                    "episode_id) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (ns, topic, sub_topic) "
                    "DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at, "
                    "episode_id = excluded.episode_id",
                    (self.ns, change.topic, change.sub_topic, change.new, now, episode_id))
            self.tx.insert(
                "INSERT INTO graph_profile_history (ns, topic, sub_topic, op, old_value, "
                "new_value, changed_at, episode_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (self.ns, change.topic, change.sub_topic, change.op, change.old, change.new,
                 now, episode_id))

    def history(self, topic: str | None = None) -> list[ProfileChange]:
        """Recorded changes, oldest first (``topic``: of that topic only)."""
        query = ("SELECT id, topic, sub_topic, op, old_value, new_value, changed_at, "
                 "episode_id FROM graph_profile_history WHERE ns = ?")
        params: list[object] = [self.ns]
        if topic is not None:
            query += " AND topic = ?"
            params.append(topic)
        rows = self.tx.execute(query + " ORDER BY id", params).fetchall()
        return [ProfileChange(int(r[0]), r[1], r[2], r[3], r[4], r[5], r[6],
                              None if r[7] is None else int(r[7])) for r in rows]

    def add_event(self, happened_at: float, text: str, tags: Sequence[str],
                  episode_id: int | None, now: float) -> TimelineEvent:
        """Store one event of the timeline (the same text at the same time, restated by a
        later episode, is the event already stored)."""
        same = self.tx.execute("SELECT id, tags, episode_id, recorded_at FROM graph_events "
                               "WHERE ns = ? AND happened_at = ? AND text = ?",
                               (self.ns, happened_at, text)).fetchone()
        if same is not None:
            return TimelineEvent(int(same[0]), happened_at, text, tuple(json.loads(same[1])),
                                 None if same[2] is None else int(same[2]), same[3])
        event_id = self.tx.insert(
            "INSERT INTO graph_events (ns, happened_at, text, tags, episode_id, recorded_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (self.ns, happened_at, text, json.dumps(list(tags), ensure_ascii=False),
             episode_id, now))
        return TimelineEvent(event_id, happened_at, text, tuple(tags), episode_id, now)

    def events(self, since: float | None, until: float | None) -> list[TimelineEvent]:
        """Events with ``since <= happened_at < until`` (either bound open), by time."""
        query = ("SELECT id, happened_at, text, tags, episode_id, recorded_at FROM "
                 "graph_events WHERE ns = ?")
        params: list[object] = [self.ns]
        if since is not None:
            query += " AND happened_at >= ?"
            params.append(since)
        if until is not None:
            query += " AND happened_at < ?"
            params.append(until)
        rows = self.tx.execute(query + " ORDER BY happened_at, id", params).fetchall()
        return parse_rows(rows, event_of_row, self.ns, "graph_events")
