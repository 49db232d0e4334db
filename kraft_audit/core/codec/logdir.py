"""The `__cluster_metadata-0` directory: segments, snapshots, meta.properties,
bootstrap.checkpoint; a full ordered read, a resumable per-segment read for
the streaming source, and a writer that lays files out as Kafka does.

Layout (Kafka's LocalLog / Snapshots):
  <data dir>/meta.properties, <data dir>/bootstrap.checkpoint
  <data dir>/__cluster_metadata-0/<baseOffset %020d>.log
  <data dir>/__cluster_metadata-0/<endOffset %020d>-<epoch %010d>.checkpoint
A snapshot's end offset is exclusive: it holds the state after offset
endOffset - 1. Records inside a snapshot carry the snapshot's own offsets
(0 for the header batch, then 1, 2, ...), as kafka-dump-log prints them.
"""

from __future__ import annotations

import itertools
import os
import re
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kraft_audit.core.codec import wire
from kraft_audit.core.codec.batches import (
    LOG_OVERHEAD,
    NOOP_BATCH_SIZE,
    Batch,
    BatchProblem,
    NoOpRun,
    batch_at,
    batch_events,
    encode_batch,
    iter_batches,
    iter_events,
    noop_run_length,
    problem_to_quarantined,
)
from kraft_audit.core.codec.dumpread import DumpChunk, iter_dump
from kraft_audit.core.codec.keyrows import KeyRows, NoOpBatches
from kraft_audit.core.codec.records import encode_control, encode_value
from kraft_audit.core.events import (COMMIT_CLAIM, KIND_COMMIT, NO_OFFSET, MetadataEvent, Quarantined,
                                     is_snapshot_source)

METADATA_DIR = "__cluster_metadata-0"
META_PROPERTIES = "meta.properties"
BOOTSTRAP_CHECKPOINT = "bootstrap.checkpoint"
SEGMENT_RE = re.compile(r"^(\d{20})\.log$")
SNAPSHOT_RE = re.compile(
    r"^(\d{20})-(\d{10})\.checkpoint$"
)  # .part and .deleted are not snapshots yet/any more

DEFAULT_SEGMENT_BYTES = 1 << 30  # Kafka's metadata.log.segment.bytes default
MAX_RECORDS_PER_BATCH = 10_000  # snapshot writer: split big record lists into batches


# ---------------------------------------------------------------- layout


def metadata_dir(path: str | os.PathLike) -> Path:
    """The directory holding segments: ``path`` itself or its ``__cluster_metadata-0``."""
    path = Path(path)
    nested = path / METADATA_DIR
    return nested if nested.is_dir() else path


def read_meta_properties(path: str | os.PathLike) -> dict[str, str]:
    """meta.properties of a data dir (or of the parent of a metadata dir); {} if none."""
    path = Path(path)
    for candidate in (path / META_PROPERTIES, path.parent / META_PROPERTIES):
        if candidate.is_file():
            props = {}
            for line in candidate.read_text(encoding="utf-8", errors="replace").splitlines():
                line = line.strip()
                if line and not line.startswith(("#", "!")) and "=" in line:
                    key, _, value = line.partition("=")
                    props[key.strip()] = value.strip()
            return props
    return {}


def list_segments(path: str | os.PathLike) -> list[tuple[int, Path]]:
    """(base offset, file) of every segment, in offset order."""
    directory = metadata_dir(path)
    found = [(int(m.group(1)), p) for p in directory.iterdir() if (m := SEGMENT_RE.match(p.name))]
    return sorted(found)


def list_snapshots(path: str | os.PathLike) -> list[tuple[int, int, Path]]:
    """(end offset, epoch, file) of every complete snapshot, oldest first."""
    directory = metadata_dir(path)
    found = [
        (int(m.group(1)), int(m.group(2)), p)
        for p in directory.iterdir()
        if (m := SNAPSHOT_RE.match(p.name))
    ]
    return sorted(found)


QUORUM_STATE = "quorum-state"


def quorum_voters(path: str | os.PathLike) -> list[int] | None:
    """The voter ids a controller's quorum-state file names (`currentVoters`, written by a
    static quorum); None when it names none (no file, a dynamic quorum's, unreadable)."""
    import json

    try:
        state = json.loads((metadata_dir(path) / QUORUM_STATE).read_text(encoding="utf-8"))
        voters = [v["voterId"] for v in state.get("currentVoters") or ()]
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    return [v for v in voters if isinstance(v, int)] or None


def log_dir_evidence(path: str | os.PathLike, cluster_id: str, copy: str = "") -> MetadataEvent:
    """What a log dir says of its own commit point, as a COMMIT item for the Raft gate: its
    newest snapshot's end (a controller snapshots committed state only) and the voter set its
    quorum-state file names."""
    snapshots = list_snapshots(path)
    data: dict[str, Any] = {"copy": copy, "proof": f"snapshot {snapshots[-1][2].name}" if snapshots else ""}
    voters = quorum_voters(path)
    if voters:
        data["voters"] = voters
    end, epoch = (snapshots[-1][0], snapshots[-1][1]) if snapshots else (0, -1)
    return MetadataEvent(cluster_id, QUORUM_STATE, -1, end - 1, NO_OFFSET, NO_OFFSET, 0, KIND_COMMIT,
                         COMMIT_CLAIM, 0, data, leader_epoch=epoch)


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}.log"


def snapshot_name(end_offset: int, epoch: int) -> str:
    return f"{end_offset:020d}-{epoch:010d}.checkpoint"


# ---------------------------------------------------------------- reading


def read_file_events(
    path: str | os.PathLike, cluster_id: str, data: bytes | None = None, noop_runs: bool = False,
    dump_chunks: bool = False,
) -> Iterator[MetadataEvent | Quarantined | NoOpRun | DumpChunk]:
    """Every event of one segment or snapshot file; a torn tail is quarantined.
    `noop_runs`: runs of NoOp batches come as `NoOpRun`s (iter_events).
    `dump_chunks`: runs of batches `dump` writes from their bytes come as `DumpChunk`s
    (dumpread.iter_dump)."""
    path = Path(path)
    buf = path.read_bytes() if data is None else data
    if dump_chunks:
        yield from iter_dump(buf, cluster_id, path.name)
    else:
        yield from iter_events(buf, cluster_id, path.name, noop_runs)


def not_a_metadata_log(path: str | os.PathLike, batches: int = 20) -> str | None:
    """Why `path` is not a KRaft metadata log, judged from the first batches of its oldest
    segment: records there that all fail as metadata records (an ordinary topic partition's
    log: its values are not framed as metadata records). None when it may well be one."""
    directory = metadata_dir(path)
    segments = list_segments(directory)
    if not segments:
        return None
    with open(segments[0][1], "rb") as f:
        buf = f.read(1 << 20)
    problems: list[Quarantined] = []
    for item in itertools.islice((b for b in iter_batches(buf) if isinstance(b, Batch)), batches):
        for event in batch_events(item, "", segments[0][1].name):
            if isinstance(event, MetadataEvent) and event.kind == "record":
                return None
            if isinstance(event, Quarantined):
                problems.append(event)
    if not problems:
        return None
    hint = (f" ({directory.name} looks like a topic partition's log dir)"
            if directory.name != METADATA_DIR else "")
    return (f"{path} is not a KRaft metadata log{hint}: the records of {segments[0][1].name} are "
            f"not metadata records ({problems[0].reason}); give the controller's "
            f"{METADATA_DIR} directory or the directory holding it")


def missing_start(next_offset: int, first_offset: int) -> str:
    """Why the records before a log's oldest segment are not read (no snapshot covers them):
    one wording for every reader, so `check` and `run` quarantine the same row."""
    return (f"offsets {next_offset}..{first_offset - 1} are missing: the log starts at offset "
            f"{first_offset} and no snapshot covers the records before it")


def read_log_dir(
    path: str | os.PathLike, cluster_id: str | None = None, start: str = "earliest",
    noop_runs: bool = False, dump_chunks: bool = False,
) -> Iterator[MetadataEvent | Quarantined | NoOpRun | DumpChunk]:
    """Every event of a metadata log dir in offset order.

    ``start="earliest"`` reads the segments from the first offset; it boots
    from the newest snapshot only when the segments before it are gone.
    ``start="snapshot"`` boots from the newest snapshot whenever there is one.
    Segment records the snapshot already covers are skipped.
    ``noop_runs``: a segment's runs of NoOp batches come as `NoOpRun`s (iter_events),
    for a consumer that takes them (the event loop); a run part of which is skipped comes
    as its events. ``dump_chunks``: `DumpChunk`s (read_file_events), taken as runs are.
    """
    if start not in ("earliest", "snapshot"):
        raise ValueError(f"start must be 'earliest' or 'snapshot', not {start!r}")
    directory = metadata_dir(path)
    if cluster_id is None:
        cluster_id = read_meta_properties(directory).get("cluster.id", "")
    segments = list_segments(directory)
    snapshots = list_snapshots(directory)
    first_offset = segments[0][0] if segments else None
    next_offset = 0
    if snapshots and (start == "snapshot" or first_offset is None or first_offset > 0):
        end_offset, _epoch, snapshot = snapshots[-1]
        yield from read_file_events(snapshot, cluster_id, dump_chunks=dump_chunks)
        next_offset = end_offset
    if first_offset is not None and first_offset > next_offset:
        reason = missing_start(next_offset, first_offset)
        yield Quarantined(cluster_id, segments[0][1].name, 0, reason, offset=next_offset)
        next_offset = first_offset
    for _base, segment in segments:
        for item in read_file_events(segment, cluster_id, noop_runs=noop_runs,
                                     dump_chunks=dump_chunks):
            if isinstance(item, MetadataEvent):
                if item.offset < next_offset:
                    continue  # already covered by the snapshot or an earlier segment
                if item.offset > next_offset and item.offset == item.batch_base_offset:
                    yield _gap(cluster_id, item.source, item.position, next_offset, item.offset)
                next_offset = item.offset + 1
            elif type(item) in RECORD_RUNS:
                if item.first_offset < next_offset:  # partly covered: the rest, one by one
                    yield from (e for e in item.events() if e.offset >= next_offset)
                    next_offset = max(next_offset, item.last_offset + 1)
                    continue
                if item.first_offset > next_offset:
                    yield _gap(cluster_id, item.source, item.position, next_offset, item.first_offset)
                next_offset = item.last_offset + 1
            yield item


# Items a reader gives for records at consecutive offsets, one item for many (count,
# first_offset, last_offset, source, position; events() gives them one by one)
RECORD_RUNS = (NoOpRun, DumpChunk)


def _gap(cluster_id: str, source: str, position: int, next_offset: int, offset: int) -> Quarantined:
    return Quarantined(cluster_id, source, position, missing_before(next_offset, offset, position),
                       offset=next_offset)


def missing_before(next_offset: int, offset: int, position: int) -> str:
    """Why offsets next_offset..offset - 1 are not read: the batch at `position` starts at
    `offset` (one wording for every reader, so that `check` and `run` quarantine the same
    row, and the audit knows it for a hole: `reader_gap`)."""
    return f"offsets {next_offset}..{offset - 1} are missing before the batch at position {position}"


def deleted_unread(next_offset: int, oldest: int, snapshot: str) -> str:
    """Why a reader that resumed where retention had deleted its next segments skipped to a
    snapshot."""
    return (f"offsets {next_offset}..{oldest - 1} were deleted by retention before they were "
            f"read; resumed from snapshot {snapshot}")


def gone(next_offset: int, base: int) -> str:
    """Why a reader that resumed where neither a segment nor a snapshot holds its next
    offset skipped to the oldest segment."""
    return f"offsets {next_offset}..{base - 1} are gone (no segment or snapshot holds them)"


def skipped(next_offset: int, offset: int) -> str:
    """Why offsets next_offset..offset - 1 are not audited: the input (the shipper's topic,
    any source) went on at `offset`, found where the batches it delivered are put in log
    order (the job's bucket 0, `RaftGate.follow_input`)."""
    return f"offsets {next_offset}..{offset - 1} are missing: the input's next batch starts at offset {offset}"


def rewritten(first: int, end: int, old_epoch: int, new_epoch: int) -> str:
    """Why a reader goes back to `first`: offsets first..end - 1, read from Raft epoch
    `old_epoch` on, are no longer in the copy it reads; a later leader truncated the copy there
    and wrote epoch `new_epoch`'s records (-1: none yet) in their place (no hole: the offsets
    are read again)."""
    return (f"offsets {first}..{end - 1}, read from Raft epoch {old_epoch} on, were replaced by a later "
            f"leader (epoch {new_epoch} from offset {first}): the log was truncated there and is read "
            f"again from it")


# the reasons above: a hole in what a reader read (not missing_start: the log's own start)
_HOLE = re.compile(r"offsets (\d+)\.\.(\d+) (are missing before the batch at position \d+$|"
                   r"are missing: the input's next batch|"
                   r"were deleted by retention before they were read;|are gone \()")


def reader_gap(reason: str) -> tuple[int, int] | None:
    """The first and last offset of a hole a reader reported (`missing_before`,
    `skipped`, `deleted_unread`, `gone`), or None."""
    match = _HOLE.match(reason)
    return None if match is None else (int(match.group(1)), int(match.group(2)))


_START = re.compile(r"offsets (\d+)\.\.(\d+) are missing: the log starts at offset \d+ and no snapshot")


def unread_offsets(reason: str) -> tuple[int, int] | None:
    """The first and last offset a reader said it did not read: a hole (`reader_gap`), or
    what lies before a log's start (`missing_start`, no hole); None for any other reason."""
    match = _START.match(reason)
    return reader_gap(reason) if match is None else (int(match.group(1)), int(match.group(2)))


@dataclass(slots=True)
class SegmentRead:
    """What one resumable read of a segment consumed."""

    events: list[MetadataEvent] = field(default_factory=list)
    quarantined: list[Quarantined] = field(default_factory=list)
    # Byte position after the last whole batch (or bad bytes) consumed.
    next_position: int = 0
    # Last offset consumed + 1; NO_OFFSET if no batch was consumed.
    next_offset: int = NO_OFFSET
    # An incomplete batch (or zero fill) ends the file: retry later from next_position.
    waiting: bool = False
    # What that incomplete tail is, should the segment never grow.
    torn_tail: Quarantined | None = None


def read_segment(
    path: str | os.PathLike,
    cluster_id: str,
    position: int = 0,
    max_bytes: int | None = None,
    max_records: int | None = None,
    keep_values: bool = False,
    rows: KeyRows | None = None,
    min_offset: int = 0,
) -> SegmentRead:
    """Read whole batches of a (possibly live) segment from ``position``.

    Batches are never split: ``max_records`` stops after the batch that
    reaches it and ``max_bytes`` after the last batch that fits (but at least
    one batch is read). Bad bytes in the middle are quarantined and skipped;
    an incomplete batch at the end of the file is not consumed: ``waiting``
    says to come back when the writer has finished it. ``keep_values``: as
    `batch_events`'s (events keep their record values). ``rows``: the batches go
    there instead (`KeyRows.add_batch`, events below ``min_offset`` left out; a log's
    runs of NoOp batches as `NoOpBatches`), with the quarantined bytes between them, in
    file order; the torn tail stays apart.
    """
    path = Path(path)
    result = SegmentRead(next_position=position)
    with open(path, "rb") as fh:
        file_size = os.fstat(fh.fileno()).st_size
        want = file_size - position if max_bytes is None else min(max_bytes, file_size - position)
        fh.seek(position)
        buf = fh.read(max(want, 0))
        if want < file_size - position:
            # Never stall on a first batch bigger than max_bytes: read it whole.
            if len(buf) < LOG_OVERHEAD:
                buf += fh.read(LOG_OVERHEAD - len(buf))
            first_size = (
                LOG_OVERHEAD + wire.INT32.unpack_from(buf, 8)[0] if len(buf) >= LOG_OVERHEAD else 0
            )
            if len(buf) < first_size <= file_size - position:
                buf += fh.read(first_size - len(buf))
    reached_eof = position + len(buf) >= file_size
    records = 0
    name = path.name  # once, not per batch (a real log is mostly one-record batches)
    # a log's runs of NoOp batches (most of a real log) go to the rows whole, framed
    # without a Batch each; a snapshot's NoOps are rows of their own
    noop_runs = rows is not None and not is_snapshot_source(name)
    pos, end = 0, len(buf)
    while pos < end:
        if noop_runs:
            limit = end if max_records is None else max_records - records
            count, first, epoch = noop_run_length(buf, pos, end, limit)
            below = min(count, max(min_offset - first, 0))  # read already: framed, not sent
            if count - below >= 2:
                rows.add_noop_run(NoOpBatches(buf, pos + below * NOOP_BATCH_SIZE,
                                              position + pos + below * NOOP_BATCH_SIZE,
                                              first + below, count - below, epoch),
                                  cluster_id, name)
            if below or count - below >= 2:  # a lone NoOp batch takes the general path
                taken = count if count - below >= 2 else below
                records += taken
                pos += taken * NOOP_BATCH_SIZE
                result.next_position = position + pos
                result.next_offset = first + taken
                if max_records is not None and records >= max_records:
                    break
                continue
        item = batch_at(buf, pos, end, position)
        pos += item.size
        if isinstance(item, BatchProblem):
            if item.at_tail:
                if reached_eof:
                    result.waiting = True
                    result.torn_tail = problem_to_quarantined(item, cluster_id, name)
                break  # otherwise a batch cut by max_bytes: the next read gets it whole
            problem = problem_to_quarantined(item, cluster_id, name)
            (result.quarantined.append if rows is None else rows.add)(problem)
            result.next_position = item.position + item.size
            continue
        if rows is not None:
            rows.add_batch(item, cluster_id, name, min_offset)
        else:
            for event in batch_events(item, cluster_id, name, keep_values):
                (result.events if isinstance(event, MetadataEvent) else result.quarantined).append(
                    event
                )
        records += item.records_count
        result.next_position = item.position + item.size
        result.next_offset = item.last_offset + 1
        if max_records is not None and records >= max_records:
            break
    return result


# ---------------------------------------------------------------- writing


class LogDirWriter:
    """Writes a metadata log dir as a KRaft controller would.

    ``path`` is the data dir (meta.properties, bootstrap.checkpoint and
    ``__cluster_metadata-0/`` go in it) or the ``__cluster_metadata-0`` dir
    itself. Reopening an existing dir resumes after its last whole batch, so
    a log can be appended to over time while another process tails it; each
    batch is written with one write() and flushed.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        cluster_id: str,
        node_id: int = 1,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        leader_epoch: int = 1,
        metadata_version: int = 25,
        bootstrap_records: list[tuple[str, int, dict[str, Any]]] | None = None,
    ) -> None:
        path = Path(path)
        self.data_dir = path.parent if path.name == METADATA_DIR else path
        self.log_dir = self.data_dir / METADATA_DIR
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.cluster_id = cluster_id
        self.node_id = node_id
        self.segment_bytes = segment_bytes
        self.leader_epoch = leader_epoch
        self._write_meta_properties()
        if not (self.data_dir / BOOTSTRAP_CHECKPOINT).exists():
            bootstrap = bootstrap_records or [
                (
                    "FEATURE_LEVEL_RECORD",
                    0,
                    {"name": "metadata.version", "featureLevel": metadata_version},
                )
            ]
            self._write_snapshot_file(self.data_dir / BOOTSTRAP_CHECKPOINT, bootstrap, 0, 0)
        self._segment = None
        self._segment_size = 0
        self.next_offset = 0
        self._resume()

    # -- files

    def _write_meta_properties(self) -> None:
        target = self.data_dir / META_PROPERTIES
        if target.exists():
            return
        directory_id = wire.uuid_to_str(uuid.uuid4().bytes)
        target.write_text(
            f"#\n#Written by kraft-audit\nnode.id={self.node_id}\ndirectory.id={directory_id}\n"
            f"version=1\ncluster.id={self.cluster_id}\n",
            encoding="utf-8",
        )

    def _resume(self) -> None:
        segments = list_segments(self.log_dir)
        if not segments:
            snapshots = list_snapshots(self.log_dir)
            self.next_offset = snapshots[-1][0] if snapshots else 0
            return
        base, last = segments[-1]
        buf = last.read_bytes()
        end = len(buf)
        self.next_offset = base
        for item in iter_batches(buf):
            if isinstance(item, Batch):
                self.next_offset = item.last_offset + 1
                self.leader_epoch = max(self.leader_epoch, item.leader_epoch)
            elif item.at_tail:  # drop a torn tail, as Kafka's recovery truncates it
                end = item.position
                with open(last, "r+b") as fh:
                    fh.truncate(end)
        self._segment = open(last, "ab")
        self._segment_size = end

    def _write_batch(self, batch: bytes) -> None:
        if self._segment is None or (
            self._segment_size and self._segment_size + len(batch) > self.segment_bytes
        ):
            self._roll()
        self._segment.write(batch)
        self._segment.flush()
        self._segment_size += len(batch)

    def _roll(self) -> None:
        if self._segment is not None:
            self._segment.close()
        self._segment = open(self.log_dir / segment_name(self.next_offset), "ab")
        self._segment_size = 0

    # -- appends

    def append(
        self,
        records: list[tuple[str, int, dict[str, Any]]],
        timestamp_ms: int,
        leader_epoch: int | None = None,
    ) -> tuple[int, int]:
        """Write ``(type_name, version, data)`` records as ONE atomic batch."""
        values = [encode_value(type_name, version, data) for type_name, version, data in records]
        return self.append_values(values, timestamp_ms, leader_epoch)

    def append_values(
        self, values: list[bytes], timestamp_ms: int, leader_epoch: int | None = None
    ) -> tuple[int, int]:
        """Write already-encoded record values as one batch."""
        if leader_epoch is not None:
            self.leader_epoch = leader_epoch
        base = self.next_offset
        self._write_batch(encode_batch(base, values, timestamp_ms, self.leader_epoch))
        self.next_offset = base + len(values)
        return base, self.next_offset - 1

    def append_control(
        self,
        type_name: str,
        data: dict[str, Any],
        timestamp_ms: int,
        leader_epoch: int | None = None,
    ) -> int:
        """Write one control record (LEADER_CHANGE, KRAFT_VOTERS, ...) in its own control batch."""
        if leader_epoch is not None:
            self.leader_epoch = leader_epoch
        key, value = encode_control(type_name, data)
        offset = self.next_offset
        self._write_batch(
            encode_batch(offset, [value], timestamp_ms, self.leader_epoch, control=True, keys=[key])
        )
        self.next_offset = offset + 1
        return offset

    def append_leader_change(
        self, leader_id: int, timestamp_ms: int, leader_epoch: int, voters: Iterable[int] | None = None
    ) -> int:
        """The control record a new leader writes at the start of its epoch (voters: the
        leader alone unless given; a leader is always one of its voters)."""
        voter_list = [{"voterId": v} for v in (voters if voters is not None else (leader_id,))]
        return self.append_control(
            "LEADER_CHANGE",
            {
                "version": 0,
                "leaderId": leader_id,
                "voters": voter_list,
                "grantingVoters": voter_list,
            },
            timestamp_ms,
            leader_epoch,
        )

    # -- snapshots

    def write_snapshot(
        self,
        records: list[tuple[str, int, dict[str, Any]]],
        end_offset: int,
        epoch: int,
        timestamp_ms: int,
    ) -> Path:
        """Write ``<endOffset>-<epoch>.checkpoint`` (via .part, then rename)."""
        final = self.log_dir / snapshot_name(end_offset, epoch)
        partial = final.with_name(final.name + ".part")
        self._write_snapshot_file(partial, records, epoch, timestamp_ms)
        os.replace(partial, final)
        return final

    @staticmethod
    def _write_snapshot_file(
        target: Path, records: list[tuple[str, int, dict[str, Any]]], epoch: int, timestamp_ms: int
    ) -> None:
        header_key, header_value = encode_control(
            "SNAPSHOT_HEADER", {"version": 0, "lastContainedLogTimestamp": timestamp_ms}
        )
        footer_key, footer_value = encode_control("SNAPSHOT_FOOTER", {"version": 0})
        parts = [
            encode_batch(0, [header_value], timestamp_ms, epoch, control=True, keys=[header_key])
        ]
        offset = 1
        values = [encode_value(t, v, d) for t, v, d in records]
        for start in range(0, len(values), MAX_RECORDS_PER_BATCH):
            chunk = values[start : start + MAX_RECORDS_PER_BATCH]
            parts.append(encode_batch(offset, chunk, timestamp_ms, epoch))
            offset += len(chunk)
        parts.append(
            encode_batch(
                offset, [footer_value], timestamp_ms, epoch, control=True, keys=[footer_key]
            )
        )
        target.write_bytes(b"".join(parts))

    # -- lifecycle

    def flush(self) -> None:
        if self._segment is not None:
            self._segment.flush()
            os.fsync(self._segment.fileno())

    def close(self) -> None:
        if self._segment is not None:
            self._segment.close()
            self._segment = None

    def __enter__(self) -> LogDirWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
