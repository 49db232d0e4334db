"""`spark.readStream.format("kraft-log")`: a streaming source over KRaft
metadata log directories (`__cluster_metadata-0`).

A normal Kafka consumer cannot read `__cluster_metadata`, so the files are the
interface. Per log dir the streaming offset is

    {"file": "00000000000000001234.log" | "<end>-<epoch>.checkpoint" | null,
     "position": <byte position of the next batch in that file>,
     "next_offset": <log offset of the next record>}

and the source offset is {"logs": {<path>: that}}. Offsets always fall on
batch boundaries, so an atomic batch is never split across micro-batches.

Planning (driver) only reads batch headers: base offset, length, magic and
last offset delta (61 bytes a batch); framing, CRC checks and quarantining
happen in the executors through the codec's `read_segment`, which reads only
each record's key columns from its bytes (`KeyRows`; the operator decodes the
value). Where a header is not valid the codec's own resynchronisation finds where the next batch
starts, so the source never guesses.

- The active (newest) segment is tailed: an incomplete batch at its end is
  being written and is waited for. In a rolled segment it is garbage and is
  read (and quarantined) as such.
- `startingPosition=earliest` (default) starts at the oldest segment, or at
  the newest snapshot when the oldest segment no longer starts at offset 0
  (retention deleted the beginning); `snapshot` starts at the newest snapshot.
- Segment roll: at the end of a segment with a newer one present, reading
  moves on. Deletion: a position in a deleted segment is re-found by log
  offset; if the records were deleted before being read, reading resumes at
  the newest snapshot and a quarantine row says which offsets were missed.
- Raft: a cursor also holds the offset and epoch of the last batch it took, checked on
  every walk; a copy a later leader truncated and rewrote is read again from where the
  copies agree, with a quarantine row naming what was replaced (`LogDirPlanner`). With
  `bootstrapControllers` (HOST:PORT,...) only batches the quorum committed are read
  (kraft_audit/quorum.py's `CommitPoint`: DescribeQuorum's high watermark, snapshots, the
  log's epochs).
- `maxRecordsPerTrigger` / `maxBytesPerTrigger` bound each micro-batch (per
  log dir; a single batch larger than the bound is still taken whole).
  Trigger.AvailableNow reads up to what existed when the query started.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from kraft_audit.core.codec.logdir import (deleted_unread, gone, metadata_dir, missing_before, missing_start,
                                          read_meta_properties, read_segment, rewritten)
from kraft_audit.core.raft import divergence_offset
from kraft_audit.quorum import CommitPoint
from kraft_audit.core.codec.batches import HEADER, HEADER_SIZE, LOG_OVERHEAD
from kraft_audit.core.codec.logwalk import Budget, batch_stands, list_segments, list_snapshots, scan_batches
from kraft_audit.core.codec.keyrows import KeyRows
from kraft_audit.core.collector import paused_each
from kraft_audit.core.events import Quarantined, is_snapshot_source
from kraft_audit.spark import event_rows

_READ_CHUNK_RECORDS = 20_000  # records per Arrow batch handed to Spark


# ---------------------------------------------------------------- log dir

def cluster_id_of(path: str | os.PathLike) -> str | None:
    """cluster.id from meta.properties beside or above the metadata dir."""
    return read_meta_properties(metadata_dir(path)).get("cluster.id") or None


def log_dir_cluster_id(path: str | os.PathLike, configured: str | None = None) -> str:
    """The configured id, else meta.properties', else the directory's name."""
    return configured or cluster_id_of(path) or Path(path).resolve().name


def _file_rank(name: str | None) -> tuple[int, int]:
    """Reading order of files: nothing yet < a snapshot < segments by base offset."""
    if not name:
        return (-1, 0)
    if is_snapshot_source(name):
        return (0, 0)
    return (1, int(name[:20]))


def _at_or_after(a: dict, b: dict) -> bool:
    return (_file_rank(a["file"]), a["position"]) >= (_file_rank(b["file"]), b["position"])


# ------------------------------------------------------------- planning

@dataclass
class ReadRange:
    """A run of whole batches in one file for one task to decode."""

    path: str
    cluster_id: str
    file: str
    start: int
    end: int
    min_offset: int  # records below this were already read (snapshot overlap)
    note: str | None = None  # a quarantine reason to emit instead of reading
    marker: bool = False  # emit the LOG_TAIL marker instead of reading

    def to_json(self) -> str:
        return json.dumps(self.__dict__)


@dataclass
class Walk:
    """Where planning got to in one log dir, and what to read to get there."""

    end: dict
    ranges: list[ReadRange] = field(default_factory=list)
    records: int = 0
    bytes: int = 0


def _snapshot_records(path: Path) -> int:
    """Records in a snapshot, from its batch headers (for the budget)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return 0
    count = pos = 0
    while pos + HEADER_SIZE <= len(data):
        length = HEADER.unpack_from(data, pos)[1]
        if length < HEADER_SIZE - LOG_OVERHEAD:
            break
        count += HEADER.unpack_from(data, pos)[6] + 1
        pos += LOG_OVERHEAD + length
    return count


_EPOCH_HISTORY = 64  # epochs a cursor remembers: a rewritten tail spans a few at most


def _history(epochs: list | None, runs: list) -> list[list[int]]:
    """A cursor's epochs ([epoch, first offset], the newest `_EPOCH_HISTORY`) after `runs`."""
    history = [list(e) for e in epochs or ()]
    for epoch, start, _ in runs:
        if not history or history[-1][0] != epoch:
            history.append([epoch, start])
    return history[-_EPOCH_HISTORY:]


def _epoch_at(epochs: list, offset: int) -> int:
    found = -1
    for epoch, start, *_ in epochs:
        if start <= offset:
            found = epoch
    return found


class LogDirPlanner:
    """Plans reads over one metadata log dir (driver side, headers only).

    A cursor knows where it is by log offset and Raft epoch as well as by byte position
    ("last": [file, position, base offset, epoch] of the last batch taken; "epochs": the
    epochs' first offsets it read), and every walk first checks that batch still stands.
    A copy that a later leader truncated and rewrote is found so: reading resumes where the
    copies still agree (`divergence_offset`), and a quarantine row says which offsets of
    which epoch were read before they were replaced, instead of taking the new bytes for
    damage. Bounded by `commit.end`, a walk takes only batches the quorum committed.
    """

    def __init__(self, path: str, cluster_id: str | None, starting_position: str = "earliest",
                 split_bytes: int = 8 << 20):
        self.path = path
        self.dir = metadata_dir(path)
        self.cluster_id = log_dir_cluster_id(path, cluster_id)
        self.starting_position = starting_position
        self.split_bytes = split_bytes
        self._tail: tuple | None = None  # (segment, position, next offset, time) of the last tail walk
        self.commit = CommitPoint(self.dir)

    # -- where to start
    def initial(self) -> dict:
        return {"file": None, "position": 0, "next_offset": 0}

    def _start_point(self, from_offset: int | None) -> tuple[dict, str | None]:
        """Where to read from when we hold no file yet or ours was deleted.

        `from_offset` is the next offset we still need (None on a fresh start).
        Returns the point and, when records were skipped, why.
        """
        segments = list_segments(self.dir)
        snapshots = list_snapshots(self.dir)
        oldest = segments[0][0] if segments else None
        wanted = 0 if from_offset is None else from_offset
        use_snapshot = bool(snapshots) and (
            (from_offset is None and self.starting_position == "snapshot")
            or oldest is None or oldest > wanted
        )
        if use_snapshot:
            end_offset, name = snapshots[-1]
            if from_offset is not None and end_offset <= from_offset:
                use_snapshot = False  # the snapshot is older than what we have
        if use_snapshot:
            note = None
            if from_offset is not None and oldest is not None and oldest > from_offset:
                note = deleted_unread(from_offset, oldest, name)
            return {"file": name, "position": 0, "next_offset": wanted}, note
        if not segments:
            return {"file": None, "position": 0, "next_offset": wanted}, None
        # The segment holding `wanted`: the newest whose base is <= wanted.
        candidates = [s for s in segments if s[0] <= wanted] or segments[:1]
        base, name = candidates[-1]
        note = None
        if base > wanted and from_offset is not None:
            note = gone(wanted, base)
        elif base > wanted:  # a log that starts mid-history: said as the file readers say it
            note = missing_start(wanted, base)
        # from the segment's base when the note has said what is missing before it
        return {"file": name, "position": 0, "next_offset": max(wanted, base if note else 0)}, note

    # -- the walk
    def walk(self, start: dict, budget: Budget, target: dict | None, commit_end: int | None = None) -> Walk:
        """The ranges from `start` on, within `budget`, up to `target` (AvailableNow) and to
        `commit_end` (batches ending below it only; None: every batch there is)."""
        cur = dict(start)
        walk = Walk(end=cur)
        for _ in range(100_000):  # bounded: each step moves forward or stops
            if target is not None and _at_or_after(cur, target):
                break  # (the target is the log's end when AvailableNow started)
            name = cur["file"]
            last = cur.get("last")
            if last and not batch_stands(self.dir / last[0], *last[1:], cur["position"] if last[0] == name else 0):
                cur = self._realign(cur, walk)
                continue
            if name is None or not (self.dir / name).exists():
                fresh = name is None
                nxt, note = self._start_point(None if fresh and cur["next_offset"] == 0 else cur["next_offset"])
                if nxt["file"] is None:
                    break  # nothing to read yet
                if note:
                    walk.ranges.append(ReadRange(self.path, self.cluster_id, nxt["file"], 0, 0,
                                                 cur["next_offset"], note=note))
                cur = nxt
                continue
            if is_snapshot_source(name):
                path = self.dir / name
                if cur["position"] == 0:
                    size = path.stat().st_size
                    records = _snapshot_records(path)
                    if not budget.allows(records, size):
                        break
                    budget.take(records, size)
                    walk.ranges.append(ReadRange(self.path, self.cluster_id, name, 0, size, 0))
                    cur = {"file": name, "position": size, "next_offset": int(name[:20])}
                    continue
                # snapshot read: go on in the segment that holds its end offset
                nxt, note = self._start_point(cur["next_offset"])
                if nxt["file"] is None or is_snapshot_source(nxt["file"]):
                    break  # no segment yet after the snapshot
                cur = nxt
                continue
            # a segment
            segments = list_segments(self.dir)
            names = [n for _, n in segments]
            if name not in names:
                continue  # deleted since the check above: re-find by offset
            idx = names.index(name)
            active = idx == len(names) - 1
            stop_at = None
            if target is not None and target["file"] == name:
                stop_at = target["position"]
            path = self.dir / name
            scan = scan_batches(
                path, cur["position"], active=active, budget=budget, stop_at=stop_at,
                min_offset=cur["next_offset"], next_offset=cur["next_offset"],
                split_bytes=self.split_bytes, stop_offset=commit_end)
            for s, e in scan.chunks:
                walk.ranges.append(ReadRange(self.path, self.cluster_id, name, s, e, cur["next_offset"]))
            for position, expected, base in scan.gaps:
                walk.ranges.append(ReadRange(self.path, self.cluster_id, name, position, position,
                                             expected, note=missing_before(expected, base, position)))
            next_offset = scan.next_offset
            cur = {"file": name, "position": scan.end, "next_offset": next_offset,
                   "last": [name, *scan.last] if scan.last else cur.get("last"),
                   "epochs": _history(cur.get("epochs"), scan.epochs)}
            if scan.eof and not active and stop_at is None:
                # rolled: continue in the next segment (a segment that starts further on is a
                # hole its first batch's scan reports)
                cur = {**cur, "file": segments[idx + 1][1], "position": 0}
                continue
            break
        # "tail": this walk read all there is (or all the AvailableNow target
        # holds); the reader then adds a LOG_TAIL marker for the operator.
        walk.end = {**cur, "tail": not budget.refused}
        walk.records = budget.records
        walk.bytes = budget.bytes
        return walk

    def _realign(self, cur: dict, walk: Walk) -> dict:
        """The batch the cursor last took is gone or changed: a later leader truncated this
        copy (or retention deleted its segment). Where the copies still agree, go on from
        there; what was read beyond it is said replaced (a quarantine row)."""
        copy = self.commit.copy.refresh()
        ours, ends = cur.get("epochs") or [], cur["next_offset"]
        at = divergence_offset(ours, ends, [r[:2] for r in copy.runs], copy.end)
        if at < ends:
            # at the replaced batch's position: a quarantine row is known by (source, position)
            replaced_file, replaced_at = cur["last"][:2]
            walk.ranges.append(ReadRange(self.path, self.cluster_id, replaced_file, replaced_at, replaced_at, at,
                                         note=rewritten(at, ends, _epoch_at(ours, at), _epoch_at(copy.runs, at))))
        nxt, note = self._start_point(at)
        if note:
            walk.ranges.append(ReadRange(self.path, self.cluster_id, nxt["file"] or "", 0, 0, at, note=note))
        return {**nxt, "epochs": [e for e in ours if e[1] < at]}

    def marker_range(self, end: dict) -> ReadRange:
        return ReadRange(self.path, self.cluster_id, end.get("file") or "", 0, 0, 0, marker=True)

    def newest(self) -> tuple[int, int | None]:
        """(offset, record time) of the newest complete record in the log;
        (-1, None) when there is none. Incremental: it walks only the headers
        appended since the last call."""
        segments = list_segments(self.dir)
        if not segments:
            snaps = list_snapshots(self.dir)
            return (snaps[-1][0] - 1 if snaps else -1), None
        base, name = segments[-1]
        cached = self._tail if self._tail and self._tail[0] == name else (name, 0, base, None)
        scan = scan_batches(self.dir / name, cached[1], active=True, budget=Budget(None, None),
                            stop_at=None, min_offset=0, next_offset=cached[2], split_bytes=1 << 62)
        ts = scan.last_timestamp_ms if scan.last_timestamp_ms is not None else cached[3]
        self._tail = (name, scan.end, scan.next_offset, ts)
        return scan.next_offset - 1, ts


# --------------------------------------------------------------- reading

class LogRangePartition(InputPartition):
    def __init__(self, ranges_json: str):
        super().__init__(ranges_json)
        self.ranges_json = ranges_json


def read_range(r: ReadRange, keys: bool = False) -> Iterator[list | KeyRows]:
    """Decode one planned range into lists of events and quarantined rows; `keys`: the
    chunks the codec reads as `KeyRows` instead (what `read` sends: a record read by its
    key columns, its value decoded by the operator), the odd cases still as lists."""
    if r.note:
        yield [Quarantined(r.cluster_id, r.file, r.start, r.note, b"", r.min_offset)]
        return
    if r.marker:
        yield [event_rows.log_tail_marker(r.cluster_id, r.file)]
        return
    path = str(metadata_dir(r.path) / r.file)
    if not os.path.exists(path):
        yield [Quarantined(r.cluster_id, r.file, r.start,
                           f"{r.file} was deleted before bytes {r.start}..{r.end} were read")]
        return
    pos = r.start
    while pos < r.end:
        rows = KeyRows() if keys else None
        try:
            res = read_segment(path, r.cluster_id, pos, r.end - pos, _READ_CHUNK_RECORDS,
                               keep_values=True,  # the rows carry values, not JSON
                               rows=rows, min_offset=r.min_offset)
        except Exception as exc:  # noqa: BLE001 - a reader bug must not kill the query
            yield [Quarantined(r.cluster_id, r.file, pos,
                               f"reader failed on bytes {pos}..{r.end}: {type(exc).__name__}: {exc}")]
            return
        if rows is not None:
            if rows:
                yield rows
        else:
            items: list = [e for e in res.events if e.offset >= r.min_offset]
            items.extend(res.quarantined)
            if items:
                yield items
        nxt = int(res.next_position)
        if nxt <= pos or (res.waiting and nxt < r.end):
            # Planning saw whole batches up to r.end; anything the reader
            # cannot take here is a truncated batch of a rolled segment.
            if res.torn_tail is not None:
                yield [res.torn_tail]
            else:
                yield [Quarantined(r.cluster_id, r.file, nxt,
                                   f"bytes {nxt}..{r.end} of {r.file} hold no complete batch")]
            return
        pos = nxt


class KraftLogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: dict[str, str]):
        self.options = options
        self.planners = [
            LogDirPlanner(d["path"], d.get("cluster_id"),
                          options.get("startingPosition", "earliest"),
                          int(options.get("splitBytes", 8 << 20)))
            for d in parse_log_dirs(options)
        ]
        self.max_records = _opt_int(options, "maxRecordsPerTrigger")
        self.max_bytes = _opt_int(options, "maxBytesPerTrigger")
        # controller listeners to ask the commit point: then only committed batches are read
        self.controllers = [a for a in options.get("bootstrapControllers", "").split(",") if a]
        self._target: dict | None = None
        self._plans: dict[str, list[ReadRange]] = {}

    def initialOffset(self) -> dict:
        return {"logs": {p.path: p.initial() for p in self.planners}}

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.max_records:
            return ReadMaxRows(self.max_records)
        if self.max_bytes:
            return ReadMaxBytes(self.max_bytes)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        start = self.initialOffset()
        self._target = {"logs": {
            p.path: p.walk(start["logs"][p.path], Budget(None, None), None).end
            for p in self.planners}}

    def _start_for(self, start: dict, planner: LogDirPlanner) -> dict:
        return start.get("logs", {}).get(planner.path) or planner.initial()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        if isinstance(limit, ReadAllAvailable):
            max_records, max_bytes = None, None
        else:
            max_records = limit.max_rows if isinstance(limit, ReadMaxRows) else self.max_records
            max_bytes = limit.max_bytes if isinstance(limit, ReadMaxBytes) else self.max_bytes
        logs, ranges = {}, []
        for p in self.planners:
            s = self._start_for(start, p)
            target = None
            if self._target is not None:
                target = self._target["logs"].get(p.path)
                if target is not None and _at_or_after(s, target):
                    logs[p.path] = {**s, "tail": True}
                    continue
            w = p.walk(s, Budget(max_records, max_bytes), target,
                       p.commit.refresh(self.controllers) if self.controllers else None)
            logs[p.path] = w.end
            ranges.extend(w.ranges)
            if w.end["tail"] and w.end != s:
                ranges.append(p.marker_range(w.end))
        end = {"logs": logs}
        self._plans = {_key(start, end): ranges}  # keep only the latest plan
        return end

    def reportLatestOffset(self):
        return {"newest_offsets": {p.path: p.newest()[0] for p in self.planners}}

    def partitions(self, start: dict, end: dict):
        ranges = self._plans.get(_key(start, end))
        if ranges is None:  # after a restart: re-plan exactly up to `end`
            ranges = []
            for p in self.planners:
                s, e = self._start_for(start, p), end.get("logs", {}).get(p.path)
                if e is None or s == e:
                    continue
                ranges.extend(p.walk(s, Budget(None, None), e).ranges)
                if e.get("tail"):
                    ranges.append(p.marker_range(e))
        return [LogRangePartition(r.to_json()) for r in ranges]

    def read(self, partition: LogRangePartition):
        r = ReadRange(**json.loads(partition.ranges_json))
        # Each chunk framed and made Arrow with the cyclic collector paused (its rows are
        # tuples and bytes, no cycles; as the operator's calls): in a Python worker that also
        # keeps the operator's live auditors, its passes walked them all
        yield from paused_each(
            event_rows.key_record_batch(items) if isinstance(items, KeyRows)
            else event_rows.to_record_batch(items, pack_noops=True, epochs=True)
            for items in read_range(r, keys=True))

    def commit(self, end: dict) -> None:
        pass


def _key(start: dict, end: dict) -> str:
    return json.dumps([start, end], sort_keys=True)


def _opt_int(options: dict[str, str], name: str) -> int | None:
    v = options.get(name)
    return int(v) if v not in (None, "", "0") else None


def parse_log_dirs(options: dict[str, str]) -> list[dict[str, Any]]:
    """Log dirs from options: `path` (+ `clusterId`) or `logDirs` (JSON list
    of {"path", "cluster_id"})."""
    if options.get("logDirs"):
        dirs = json.loads(options["logDirs"])
        return [{"path": d["path"], "cluster_id": d.get("cluster_id")} for d in dirs]
    if options.get("path"):
        return [{"path": options["path"], "cluster_id": options.get("clusterId")}]
    raise ValueError("kraft-log source needs option `path` or `logDirs`")


class KraftLogSource(DataSource):
    """spark.readStream.format("kraft-log").option("path", DIR).load()"""

    @classmethod
    def name(cls) -> str:
        return "kraft-log"

    def schema(self) -> str:
        return event_rows.EVENT_DDL

    def streamReader(self, schema) -> KraftLogStreamReader:
        return KraftLogStreamReader(self.options)  # case-insensitive: keep it so
