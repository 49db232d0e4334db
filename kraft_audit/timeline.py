"""One partition's story through a metadata log: every state it went through, the
violations on it and on its replicas' brokers, and its replicas' broker events
(register, fence, unfence, controlled shutdown, unregister). The data behind
`kraft-audit timeline`; the drawing is in `kraft_audit.timeline_draw`.

Built by running the real `Auditor` over the log, so the states are exactly the
`partition_history` rows the streaming job writes and the violations exactly
what `check` reports.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping

from kraft_audit.core.audit import Auditor
from kraft_audit.core.events import MetadataEvent, Quarantined
from kraft_audit.core.rows import BrokerRow, ConditionChange, PartitionRow, Violation
from kraft_audit.core.rules import load_catalog
from kraft_audit.core.rules.catalog import Catalog
from kraft_audit.errors import TimelineError  # noqa: F401 (exported here too)

# what a broker event means for its replicas, derived from the broker's state before and after
REGISTERED = "registered"
UNREGISTERED = "unregistered"
FENCED = "fenced"
UNFENCED = "unfenced"
CONTROLLED_SHUTDOWN = "controlled shutdown"


@dataclass(frozen=True, slots=True)
class Bound:
    """One end of the window to draw (--since, --until): a log offset or a record time."""
    offset: int | None = None
    ms: int | None = None

    def admits_after(self, offset: int, ms: int) -> bool:
        """Whether a record is at or after this bound."""
        return offset >= self.offset if self.offset is not None else ms >= self.ms

    def admits_before(self, offset: int, ms: int) -> bool:
        """Whether a record is at or before this bound."""
        return offset <= self.offset if self.offset is not None else ms <= self.ms


# (offset, time) as read -> where it belongs in the log: a snapshot's records are read at
# their positions in the file (cli/views.SnapshotPlaces)
Place = Callable[[int, int], tuple[int, int]]


def _as_read(offset: int, ms: int) -> tuple[int, int]:
    return offset, ms


class WindowFinder:
    """Finds the first and last records of a --since/--until window as records go by:
    the first at or after `since`, the last at or before `until` (record times may step
    back, so the last one is only known at the end)."""

    def __init__(self, since: Bound | None, until: Bound | None):
        self.since, self.until = since, until
        self.first: tuple[int, int] | None = None  # (offset, time) of the window's first record
        self.last: tuple[int, int] | None = None

    def see(self, offset: int, ms: int) -> None:
        if self.first is None and (self.since is None or self.since.admits_after(offset, ms)):
            self.first = (offset, ms)
        if self.until is None or self.until.admits_before(offset, ms):
            self.last = (offset, ms)

    def watch(self, events: Iterable[MetadataEvent | Quarantined], place: Place | None = None
              ) -> Iterator[MetadataEvent | Quarantined]:
        """`events`, unchanged, seeing each log record on the way (where `place` puts it)."""
        for event in events:
            if isinstance(event, MetadataEvent) and event.offset >= 0:  # not a side input
                self.see(*(place or _as_read)(event.offset, event.timestamp_ms))
            yield event


@dataclass(frozen=True, slots=True)
class BrokerEvent:
    broker_id: int
    kind: str  # REGISTERED | UNREGISTERED | FENCED | UNFENCED | CONTROLLED_SHUTDOWN
    offset: int
    timestamp_ms: int
    last_shutdown: str | None = None  # on REGISTERED after a restart: "clean" | "unclean" | "unknown"
    last_shutdown_source: str | None = None  # "request-log" | "inferred" (BrokerRow)


@dataclass
class Timeline:
    cluster_id: str
    topic: str
    partition: int
    states: list[PartitionRow]  # in log order; each holds until the next one
    violations: list[Violation]  # on this partition, or on one of its replicas' brokers
    broker_events: list[BrokerEvent]  # of brokers that were ever a replica of it
    conditions: list[ConditionChange] = field(default_factory=list)  # intervals, closed or open
    last_offset: int = -1  # the log's last applied offset: the last state holds until here
    last_timestamp_ms: int = 0
    # (offset, time) of the first record shown when a window was cut (`window`); until then
    # the picture starts at the first state
    shown_from: tuple[int, int] | None = None

    @property
    def first_offset(self) -> int:
        """Where the picture starts: the window's first record, else the first state."""
        return self.shown_from[0] if self.shown_from else self.states[0].offset

    @property
    def first_timestamp_ms(self) -> int:
        return self.shown_from[1] if self.shown_from else self.states[0].timestamp_ms

    @property
    def end_offset(self) -> int:
        """Where the picture ends: the last record read (or the window's last)."""
        return max(self.last_offset, self.states[-1].offset)

    @property
    def end_timestamp_ms(self) -> int:
        # record times may step back (another controller's clock): the latest one seen
        return max(self.last_timestamp_ms, self.states[-1].timestamp_ms)

    def known_times(self) -> list[tuple[int, int]]:
        """Every (offset, record time) the timeline holds, in offset order: what maps
        offsets to times and back without the log."""
        known = {(s.offset, s.timestamp_ms) for s in self.states}
        known |= {(e.offset, e.timestamp_ms) for e in self.broker_events}
        known |= {(v.offset, v.timestamp_ms) for v in self.violations if v.offset >= 0}
        known.add((self.last_offset, self.last_timestamp_ms))
        if self.shown_from:
            known.add(self.shown_from)
        return sorted(known)

    def shown_broker_events(self) -> list[BrokerEvent]:
        """The broker events inside the window (all of them when none was cut)."""
        if self.shown_from is None:
            return self.broker_events
        return [e for e in self.broker_events if e.offset >= self.shown_from[0]]

    def window(self, first: tuple[int, int], last: tuple[int, int]) -> Timeline:
        """The timeline between two records given as (offset, time), both included: the
        state in force at `first` (it may have started before), the states and violations
        inside, and the condition intervals that overlap it. Broker events are kept up to
        the window's end: those before it say whether a broker was already fenced when
        it starts (`shown_broker_events` are the ones inside)."""
        start, end = first[0], last[0]
        if start > end:
            raise TimelineError(f"the window is empty: its first record (offset {start}) "
                                f"comes after its last (offset {end})")
        held = [s for s in self.states if s.offset <= start][-1:]
        states = held + [s for s in self.states if start < s.offset <= end]
        if not states:
            raise TimelineError(f"{self.topic}-{self.partition} did not exist yet at offset "
                                f"{end}: its first state is at offset {self.states[0].offset}")
        return Timeline(
            self.cluster_id, self.topic, self.partition, states,
            [v for v in self.violations if start <= v.offset <= end],
            [e for e in self.broker_events if e.offset <= end],
            [c for c in self.conditions
             if c.start_offset <= end and (c.end_offset is None or c.end_offset >= start)],
            last_offset=end, last_timestamp_ms=last[1], shown_from=first)

    @property
    def replicas(self) -> list[int]:
        """Every broker that was ever a replica (or being added), in first-seen order."""
        seen: dict[int, None] = {}
        for state in self.states:
            for broker in (*state.replicas, *state.adding_replicas):
                seen.setdefault(broker, None)
        return list(seen)


def partition_timeline(events: Iterable[MetadataEvent | Quarantined], topic: str, partition: int,
                       catalog: Catalog | None = None,
                       settings: Mapping[str, Any] | None = None) -> Timeline:
    """Replay and audit `events`, keeping what concerns `topic`-`partition`.

    A topic deleted and created again under the same name keeps one timeline:
    its states follow each other in log order. Raises TimelineError when no
    record could be used or the partition never existed.
    """
    auditor = Auditor(catalog if catalog is not None else load_catalog(), settings)
    out = auditor.process(events)
    if auditor.applied == 0:
        raise TimelineError(
            f"no record could be decoded ({auditor.quarantined} input(s) quarantined)")
    # by id: the row of a deletion no longer carries the topic's name
    topic_ids = {row.topic_id for row in out.partitions if row.topic == topic}
    states = [row for row in out.partitions
              if row.topic_id in topic_ids and row.partition == partition]
    if not states:
        raise TimelineError(_missing(out.partitions, topic, partition))
    timeline = Timeline(auditor.cluster_id, topic, partition, states, [], [],
                        last_offset=auditor.last_offset,
                        last_timestamp_ms=auditor.last_timestamp_ms)
    replicas = set(timeline.replicas)
    timeline.violations = [
        v for v in out.violations
        if (v.topic_id in topic_ids and v.partition == partition)
        or (v.partition is None and v.broker_id in replicas)]
    timeline.broker_events = [e for e in broker_events(out.brokers) if e.broker_id in replicas]
    timeline.conditions = _latest_intervals(
        c for c in out.conditions if c.topic_id in topic_ids and c.partition == partition)
    return timeline


def broker_events(rows: Iterable[BrokerRow]) -> list[BrokerEvent]:
    """What each broker record did, from the broker's row before and after it."""
    events: list[BrokerEvent] = []
    previous: dict[int, BrokerRow] = {}
    for row in rows:
        before = previous.get(row.broker_id)
        previous[row.broker_id] = row

        def event(kind: str, last_shutdown: str | None = None) -> None:
            events.append(BrokerEvent(row.broker_id, kind, row.offset, row.timestamp_ms,
                                      last_shutdown, row.last_shutdown_source if last_shutdown else None))

        if row.registered and (before is None or not before.registered
                               or before.broker_epoch != row.broker_epoch
                               or before.incarnation_id != row.incarnation_id):
            event(REGISTERED, row.last_shutdown)
            continue  # a registration is fenced by definition: not a fence of its own
        if not row.registered:
            if before is not None and before.registered:
                event(UNREGISTERED)
            continue
        if before.fenced != row.fenced:
            event(FENCED if row.fenced else UNFENCED)
        if row.in_controlled_shutdown and not before.in_controlled_shutdown:
            event(CONTROLLED_SHUTDOWN)
    return events


def _latest_intervals(rows: Iterable[ConditionChange]) -> list[ConditionChange]:
    """One row per interval: a close re-emits the interval's row with its end set."""
    latest: dict[str, ConditionChange] = {}
    for row in rows:
        latest[row.interval_id] = row
    return sorted(latest.values(), key=lambda r: (r.start_offset, r.condition))


def _missing(rows: list[PartitionRow], topic: str, partition: int) -> str:
    partitions = sorted({r.partition for r in rows if r.topic == topic})
    if partitions:
        return (f"topic {topic!r} has no partition {partition} "
                f"(its partitions: {', '.join(map(str, partitions))})")
    topics = sorted({r.topic for r in rows if r.topic})
    if not topics:
        return f"topic {topic!r} does not exist; the log has no topics"
    # a cluster may hold thousands of topics: name the likeliest few
    close = difflib.get_close_matches(topic, topics, n=5, cutoff=0.6)
    if close:
        return (f"topic {topic!r} does not exist; did you mean {' or '.join(close)}? "
                f"({len(topics)} topics in the log)")
    more = f" and {len(topics) - 10} more" if len(topics) > 10 else ""
    return f"topic {topic!r} does not exist; the log's topics: {', '.join(topics[:10])}{more}"


def timeline_from_tables(tables_root: str, topic: str, partition: int,
                         cluster: str | None = None) -> Timeline:
    """The same timeline from the Delta tables the streaming job wrote
    (partition_history, violations, conditions).

    Without broker events: the `brokers` table keeps only each broker's latest
    row. Reads the tables whole (delta-rs), then keeps the partition's rows.
    """
    # deltalake: only when tables are asked for
    from kraft_audit.tables import CONDITIONS, PARTITION_HISTORY, VIOLATIONS
    from kraft_audit.tables.read import read_table

    history = [r for r in read_table(tables_root, PARTITION_HISTORY).to_pylist()
               if cluster is None or r["cluster_id"] == cluster]
    if not history:
        raise TimelineError(f"no partition_history rows under {tables_root}"
                            + (f" for cluster {cluster!r}" if cluster else ""))
    clusters = sorted({r["cluster_id"] for r in history if r["topic"] == topic})
    if len(clusters) > 1:
        raise TimelineError(f"topic {topic!r} exists in clusters {', '.join(clusters)}: "
                            "choose one with --cluster")
    topic_ids = {r["topic_id"] for r in history if r["topic"] == topic}
    rows = sorted((r for r in history
                   if r["topic_id"] in topic_ids and r["partition"] == partition),
                  key=lambda r: r["offset"])
    if not rows:
        raise TimelineError(_missing([_row(PartitionRow, r) for r in history], topic, partition))
    cluster_id = rows[0]["cluster_id"]
    last_offset, last_ms = _log_end(tables_root, cluster_id, history)
    timeline = Timeline(cluster_id, topic, partition, [_row(PartitionRow, r) for r in rows], [], [],
                        last_offset=last_offset, last_timestamp_ms=last_ms)
    replicas = set(timeline.replicas)
    violations = [_row(Violation, r) for r in read_table(tables_root, VIOLATIONS).to_pylist()
                  if r["cluster_id"] == cluster_id]
    timeline.violations = sorted(
        (v for v in violations if (v.topic_id in topic_ids and v.partition == partition)
         or (v.partition is None and v.broker_id in replicas)),
        key=lambda v: (v.offset, v.violation_id))
    timeline.conditions = _latest_intervals(
        _row(ConditionChange, r) for r in read_table(tables_root, CONDITIONS).to_pylist()
        if r["cluster_id"] == cluster_id and r["topic_id"] in topic_ids
        and r["partition"] == partition)
    return timeline


def _log_end(tables_root: str, cluster_id: str, history: list[dict]) -> tuple[int, int]:
    """The newest offset the job audited (its `progress` rows), else the newest partition change."""
    from kraft_audit.tables import PROGRESS
    from kraft_audit.tables.read import MissingTable, read_table

    ends = [(r["offset"], r["timestamp_ms"]) for r in history if r["cluster_id"] == cluster_id]
    try:
        for batch in read_table(tables_root, PROGRESS, ["clusters"]).to_pylist():
            ends += [(c["max_offset"], c["last_timestamp_ms"]) for c in batch["clusters"] or []
                     if c["cluster_id"] == cluster_id and c["max_offset"] is not None]
    except MissingTable:
        pass
    return max(ends)


def _row(kind, columns: dict):
    """A core row from a table row: the table's extra columns (batch_id, date) dropped."""
    return kind(**{name: columns[name] for name in kind.__dataclass_fields__})
