"""Where side inputs go in the log: by event time, as the streaming operator and
`kraft-audit check` both place them (an inventory is judged against the state
of its time, a registration request after the record it led to)."""

from __future__ import annotations

from typing import Iterable, Iterator

from kraft_audit.core.events import MetadataEvent, Quarantined


def interleave(records: list, side_inputs: list, clock_ms: int, release_all: bool
               ) -> tuple[list, list]:
    """Merge side inputs (registration requests, log-dir inventories) into the
    log by event time: each goes before the first log record stamped later
    than it. Spark reads the side files and the log independently (a side file
    may arrive micro-batches before the records around it), so a side input
    newer than everything the log has shown so far is held back (returned as
    the second list) until the log catches up, or until the group times out.
    """
    side_inputs = by_time(side_inputs)
    horizon = max([clock_ms] + [r.timestamp_ms for r in records if isinstance(r, MetadataEvent)])
    ready = side_inputs if release_all else [e for e in side_inputs if e.timestamp_ms <= horizon]
    held = [] if release_all else [e for e in side_inputs if e.timestamp_ms > horizon]
    return list(merge_by_time(records, ready)), held


def by_time(side_inputs: Iterable) -> list:
    """Oldest first; quarantine rows (no time) first of all."""
    return sorted(side_inputs, key=lambda e: (getattr(e, "timestamp_ms", -1), e.source, e.position))


def merge_by_time(records: Iterable[MetadataEvent | Quarantined], ready: list
                  ) -> Iterator[MetadataEvent | Quarantined]:
    """The log as it comes, each side input (sorted by time) before the first log
    record stamped later than it; the rest after the log. A batch's records share
    its time, so a side input never lands inside an atomic batch."""
    i = 0
    for r in records:
        ts = r.timestamp_ms if isinstance(r, MetadataEvent) and r.offset >= 0 else None
        while ts is not None and i < len(ready) and getattr(ready[i], "timestamp_ms", -1) < ts:
            yield ready[i]
            i += 1
        yield r
    yield from ready[i:]
