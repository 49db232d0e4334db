"""What the human-facing views (`describe`, `query`, `timeline`) share, so an
operator reads the same words everywhere: times as ISO-8601 UTC, "none" for
no leader, columns aligned, "(none)" for an empty answer, and offsets that are
the log's own even for records read from a snapshot.

Machine output (--json) keeps the raw values: milliseconds and leader -1.
"""

from __future__ import annotations

import datetime as dt
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import replace

from kraft_audit.core.codec.logdir import SNAPSHOT_RE
from kraft_audit.core.events import MetadataEvent, Quarantined

NO_LEADER = -1
LEADER_COLUMNS = {"leader", "leader_before"}  # broker ids where -1 means "no leader"
NOTHING = "(none)"  # what every view prints when nothing matches (and exits 0)


# ------------------------------------------------------------------ times


def iso_utc(ms: int | float, millis: bool = False) -> str:
    """2026-11-25T09:12:03Z (with .123 before the Z when `millis`)."""
    moment = dt.datetime.fromtimestamp(ms / 1000, dt.UTC)
    if millis:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def iso_or_dash(ms: int | None) -> str:
    """A record time, "-" when there is none (0 or None)."""
    return iso_utc(ms) if ms else "-"


def duration(seconds: float) -> str:
    """1d02h03m, 2h03m04s or 3m04s."""
    minutes, secs = divmod(int(round(max(seconds, 0))), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    if days:
        return f"{days}d{hours:02d}h{minutes:02d}m"
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


def since(start_ms: int, log_now_ms: int, wall_now_ms: int | None = None) -> str:
    """'since <time> (<age> ago; <age> before the log's newest record)': a log's newest
    record may be old, so an age is given from both clocks."""
    wall_now_ms = int(time.time() * 1000) if wall_now_ms is None else wall_now_ms
    return (f"since {iso_utc(start_ms)} ({duration((wall_now_ms - start_ms) / 1000)} ago; "
            f"{duration((log_now_ms - start_ms) / 1000)} before the log's newest record)")


def parse_iso_utc(text: str) -> int:
    """Milliseconds of an ISO-8601 date or date-time (UTC unless it names a zone);
    ValueError with an example otherwise."""
    try:
        moment = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO-8601 time: "
                         "give e.g. 2026-11-25T09:12:03Z or 2026-11-25") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return int(moment.timestamp() * 1000)


# ------------------------------------------------------------------ values


def leader_text(leader: int) -> str:
    return "none" if leader == NO_LEADER else str(leader)


def plural(count: int, word: str, words: str | None = None) -> str:
    """'1 finding', '2 findings', '0 findings' (`words` when adding an s is wrong)."""
    return f"{count} {word if count == 1 else words or word + 's'}"


def ids(values: Iterable[int]) -> str:
    return ",".join(str(v) for v in values)


def cell(column: str, value) -> str:
    """One value as a person reads it: `*_ms` as ISO time, leaders by name, lists joined."""
    if value is None:
        return "-"
    if isinstance(value, list):
        return ids(value) or "-"
    if column.endswith("_ms"):
        return iso_utc(value)
    if column in LEADER_COLUMNS:
        return leader_text(value)
    return str(value)


def heading(column: str) -> str:
    """A column's header: `*_ms` columns print ISO times, so they are named as times."""
    if column == "timestamp_ms":
        return "time"
    return column[:-3] + "_time" if column.endswith("_ms") else column


def print_table(rows: list[dict], columns: list[str], out=None, format_cell=cell) -> None:
    """Aligned columns under a header line; "(none)" when there is no row."""
    out = out or sys.stdout
    if not rows:
        print(NOTHING, file=out)
        return
    cells = [[format_cell(column, row.get(column)) for column in columns] for row in rows]
    headers = [heading(column) for column in columns]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    for line in [headers, *cells]:
        print("  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip(), file=out)


# ------------------------------------------------------------------ snapshot offsets


def absolute_offsets(events: Iterable[MetadataEvent | Quarantined]
                     ) -> Iterator[MetadataEvent | Quarantined]:
    """Events with a snapshot's records placed where they belong in the log.

    A snapshot `<endOffset>-<epoch>.checkpoint` holds the state after offset
    endOffset - 1, but its records carry the file's own positions (0, 1, 2, ...).
    Each of them is given offset endOffset - 1 and the time of that record (the
    header's lastContainedLogTimestamp), so a view never prints a position
    inside the file as if it were a log offset.
    """
    places = SnapshotPlaces()
    for event in events:
        place = places.of(event)
        if place is None:
            yield event
        else:
            offset, ms = place
            yield replace(event, offset=offset, batch_base_offset=offset,
                          batch_last_offset=offset, timestamp_ms=ms)


class SnapshotPlaces:
    """Where the records of the snapshot a log was read from belong in the log.

    For readers that must be given the raw offsets (the Auditor skips an offset it
    has seen as a duplicate, and every snapshot record belongs at the same one):
    `watch` notes the snapshot's records as they go by, `place` maps an offset and
    time read back from the result. Segment records after a snapshot start at its
    end offset, above every position inside it, so the two never mix up.
    """

    def __init__(self) -> None:
        self._header_ms: dict[str, int] = {}  # snapshot file -> lastContainedLogTimestamp
        self._last_position: int | None = None  # highest record position read from a snapshot
        self._place: tuple[int, int] | None = None  # (its last contained offset, that time)

    def watch(self, events: Iterable[MetadataEvent | Quarantined]
              ) -> Iterator[MetadataEvent | Quarantined]:
        for event in events:
            place = self.of(event)
            if place is not None:
                self._place = place
                self._last_position = max(self._last_position or 0, event.offset)
            yield event

    def of(self, event: MetadataEvent | Quarantined) -> tuple[int, int] | None:
        """(offset, time) where a snapshot record belongs; None for any other event."""
        match = SNAPSHOT_RE.match(event.source) if isinstance(event, MetadataEvent) else None
        if match is None:
            return None
        if event.type == "SNAPSHOT_HEADER":
            # 0 or absent in old writers: the batch time is the best left
            self._header_ms[event.source] = (event.data.get("lastContainedLogTimestamp")
                                             or event.timestamp_ms)
        return int(match.group(1)) - 1, self._header_ms.get(event.source, event.timestamp_ms)

    def place(self, offset: int, ms: int) -> tuple[int, int]:
        """The log's (offset, time) of something read at `offset` (a raw position when
        it came from the snapshot)."""
        if self._place is not None and 0 <= offset <= self._last_position:
            return self._place
        return offset, ms
