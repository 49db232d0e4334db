"""`LogTail`: a KRaft metadata log dir read as the messages the shipper produces.

Each message is one record batch exactly as it is on disk (framing and CRC
intact), or a run of bytes that is no batch (the job quarantines it, with the
same reason `check` gives), with where it came from:

- `file`, `position`: the segment or snapshot and the byte position in it;
- `kind`: "segment", "snapshot" or "comparison": a snapshot the controller wrote, compared
  with the image this log dir's records build to its end (`image.verify_snapshots`) once
  the log has been shipped past that end, as JSON (`image.comparison_to_plain`; the job
  judges it with `kraft.snapshot-equals-log`, bucket 0, and skips a comparison it already
  judged: a restarted shipper compares its snapshots again). Its `file` and `position`
  are where the tail stands, so a shipper resuming from it goes on from there;
- `next_offset`: the offset the shipper reads next after this message, so a
  restarted shipper resumes from the newest message of its cluster in the
  topic, not from a local file that could be lost.

It follows what Kafka does to the directory: a new segment (roll), a segment
deleted by retention before it was read (then the newest snapshot, as the
file readers do), and a batch still being written (waited for).

Committed only, given the controllers (`controllers`, HOST:PORT): a batch is yielded only
once it is proven committed (kraft_audit/quorum.py's `CommitPoint`: the quorum's high
watermark, a snapshot, the log's own epochs), so the topic never holds a tail that a
deposed leader wrote and a later leader replaced. The tail's byte position then always
stands in the committed prefix, which no truncation touches. Without them every whole
batch is yielded as it is written. Nothing else here talks to Kafka:
`kraft_audit.ship.shipper` produces what it yields.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from kraft_audit.core.codec.batches import HEADER, HEADER_SIZE, LOG_OVERHEAD, Batch, iter_batches
from kraft_audit.core.codec.logdir import SNAPSHOT_RE, list_segments, list_snapshots, metadata_dir
from kraft_audit.core.events import (KIND_SNAPSHOT_COMPARISON, NO_OFFSET, SNAPSHOT_COMPARISON,
                                     MetadataEvent, Quarantined)
from kraft_audit.core.image import comparison_to_plain, verify_snapshots
from kraft_audit.quorum import CommitPoint

SEGMENT, SNAPSHOT, COMPARISON = "segment", "snapshot", "comparison"


@dataclass(frozen=True)
class Shipment:
    """One message: a whole batch, or bytes that are no batch."""

    value: bytes
    file: str
    position: int
    kind: str  # SEGMENT | SNAPSHOT | COMPARISON
    next_offset: int  # where reading goes on after this message
    records: int  # records in the batch (0 for bytes that are no batch; 1 for a comparison)

    def headers(self) -> list[tuple[str, bytes]]:
        return [("kraft.file", self.file.encode()), ("kraft.position", str(self.position).encode()),
                ("kraft.kind", self.kind.encode()), ("kraft.next_offset", str(self.next_offset).encode())]


def comparison_event(cluster_id: str, value: bytes | None, where: str) -> MetadataEvent | Quarantined:
    """A comparison message as the event the auditor judges; a quarantine row when its
    value is no JSON object (the auditor checks the fields)."""
    try:
        data = json.loads(value or b"")
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        timestamp_ms = int(data.get("timestampMs") or 0)
    except (ValueError, TypeError, UnicodeDecodeError) as exc:
        return Quarantined(cluster_id, where, 0, f"{where} is no snapshot comparison of kraft-audit "
                           f"ship: {exc}", bytes(value or b"")[:1024])
    return MetadataEvent(cluster_id=cluster_id, source=where, position=0, offset=NO_OFFSET,
                         batch_base_offset=NO_OFFSET, batch_last_offset=NO_OFFSET,
                         timestamp_ms=timestamp_ms, kind=KIND_SNAPSHOT_COMPARISON,
                         type=SNAPSHOT_COMPARISON, version=0, data=data)


@dataclass(frozen=True)
class Resume:
    """Where a shipper goes on: after the newest message it shipped."""

    file: str
    position: int  # just past that message
    next_offset: int

    @classmethod
    def from_headers(cls, headers: dict[str, bytes], value_size: int) -> Resume:
        # a comparison is no part of the file: its position is where the tail stood
        after = 0 if headers.get("kraft.kind") == COMPARISON.encode() else value_size
        return cls(headers["kraft.file"].decode(), int(headers["kraft.position"]) + after,
                   int(headers["kraft.next_offset"]))


class LogTail:
    def __init__(self, log_dir: str | os.PathLike, resume: Resume | None = None,
                 controllers: list[str] | tuple[str, ...] = ()):
        self.dir = metadata_dir(log_dir)
        self.controllers = list(controllers)
        self.commit = CommitPoint(self.dir) if self.controllers else None
        self._stop_offset: int | None = None  # batches reaching it wait (not known committed)
        self.next_offset = resume.next_offset if resume else 0
        self.file: str | None = None
        self.position = 0
        if resume is not None and (self.dir / resume.file).exists():
            self.file, self.position = resume.file, resume.position
        self._end = (None, 0, 0)  # incremental scan of the newest segment: (file, position, next offset)
        # end offset of the newest snapshot compared (a restart compares them all again)
        self.compared_to = -1

    def poll(self, max_bytes: int = 8 << 20) -> list[Shipment]:
        """The whole batches written (and proven committed, given the controllers) since the
        last call (at most about `max_bytes`, never less than one batch)."""
        out: list[Shipment] = []
        budget = max_bytes
        self._stop_offset = self.commit.refresh(self.controllers) if self.commit is not None else None
        for _ in range(10_000):  # bounded: every step reads or moves on, or stops
            if self.file is None or not (self.dir / self.file).exists():
                if not self._start_point():
                    break
            shipped, at_end = self._read(budget)
            out.extend(shipped)
            budget -= sum(len(s.value) for s in shipped)
            if budget <= 0 or not at_end or not self._next_file():
                break
        return out + self._comparisons()

    def _comparisons(self) -> list[Shipment]:
        """Each snapshot the log has been shipped past, compared with the log's image."""
        ends = [end for end, _epoch, _p in list_snapshots(self.dir)
                if self.compared_to < end <= self.next_offset]
        if not ends or self.file is None:
            return []
        out = []
        for c in verify_snapshots(self.dir, "", after_offset=self.compared_to - 1):
            if c.end_offset > self.next_offset:
                break
            out.append(Shipment(json.dumps(comparison_to_plain(c)).encode(), self.file, self.position,
                                COMPARISON, self.next_offset, 1))
        # a snapshot the log no longer holds the records of cannot be compared: not again
        self.compared_to = max(ends)
        return out

    def log_end_offset(self) -> int:
        """The offset after the newest whole batch in the log (headers only, incrementally)."""
        segments = list_segments(self.dir)
        if not segments:
            snaps = list_snapshots(self.dir)
            return snaps[-1][0] if snaps else 0
        base, path = segments[-1]
        name, pos, nxt = self._end if self._end[0] == path.name else (path.name, 0, base)
        try:
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                while pos + HEADER_SIZE <= size:
                    f.seek(pos)
                    header = HEADER.unpack(f.read(HEADER_SIZE))
                    total = LOG_OVERHEAD + header[1]
                    if header[1] <= 0 or pos + total > size:
                        break
                    nxt = header[0] + header[6] + 1
                    pos += total
        except FileNotFoundError:
            pass
        self._end = (name, pos, nxt)
        return max(nxt, self.next_offset)

    # ------------------------------------------------------------ moving

    def _start_point(self) -> bool:
        """Choose the file to read: the segment holding next_offset, or the newest snapshot
        when no segment holds it (a fresh shipper on a log whose start was deleted, or one
        that fell behind retention). False when the log has nothing yet."""
        segments = list_segments(self.dir)
        snapshots = list_snapshots(self.dir)
        wanted = self.next_offset
        oldest = segments[0][0] if segments else None
        if snapshots and (oldest is None or oldest > wanted) and snapshots[-1][0] > wanted:
            end, _epoch, path = snapshots[-1]
            self.file, self.position = path.name, 0
            return True
        if not segments:
            return False
        holding = [p for base, p in segments if base <= wanted] or [segments[0][1]]
        self.file, self.position = holding[-1].name, 0
        return True

    def _next_file(self) -> bool:
        """At the end of the current file: on to the next one, if there is one."""
        if SNAPSHOT_RE.match(self.file):  # a snapshot is whole: go on after its end offset
            self.next_offset = int(self.file[:20])
            self.file = None
            return self._start_point()
        later = [p.name for base, p in list_segments(self.dir) if p.name > self.file]
        if not later:
            return False  # the active segment: wait for it to grow
        self.file, self.position = later[0], 0
        return True

    def _read(self, budget: int) -> tuple[list[Shipment], bool]:
        """Shipments from the current file's position; and whether its end was reached
        (False when a batch is still being written or the budget ran out)."""
        path = self.dir / self.file
        snapshot = SNAPSHOT_RE.match(self.file) is not None
        want = max(budget, HEADER_SIZE)
        while True:  # at least one whole batch, however big, unless the file ends first
            try:
                with open(path, "rb") as f:
                    f.seek(self.position)
                    buf = f.read(want)
                    size = os.fstat(f.fileno()).st_size
            except FileNotFoundError:
                self.file = None
                return [], False
            first = next(iter_batches(buf, base_position=self.position), None)
            cut = (first is not None and first.__class__ is not Batch and first.at_tail
                   and self.position + len(buf) < size)
            if not cut:
                break
            want *= 4
        out: list[Shipment] = []
        pos = 0
        for item in iter_batches(buf, base_position=self.position):
            if isinstance(item, Batch):
                last = item.base_offset + item.last_offset_delta
                if not snapshot and self._stop_offset is not None and last >= self._stop_offset:
                    self.position += pos  # not known committed yet: from here next time
                    return out, False
                if snapshot or last >= self.next_offset:
                    if not snapshot:
                        self.next_offset = last + 1
                    out.append(Shipment(buf[pos:pos + item.size], self.file, item.position,
                                        SNAPSHOT if snapshot else SEGMENT, self.next_offset,
                                        item.records_count))
            elif item.at_tail:
                if self.position + pos + item.size >= size:
                    break  # a batch being written: come back for it
                # cut by our read size: read on from here next time
                self.position += pos
                return out, False
            else:  # bytes no writer can complete: shipped for the job to quarantine
                out.append(Shipment(buf[pos:pos + item.size], self.file, item.position,
                                    SNAPSHOT if snapshot else SEGMENT, self.next_offset, 0))
            pos += item.size
        self.position += pos
        return out, self.position >= size
