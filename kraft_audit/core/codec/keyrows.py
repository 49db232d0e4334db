"""The Spark sources' event rows straight from a batch's bytes (`KeyRows`).

A source's row of a metadata record carries the record's value bytes (the
operator decodes them) and a few key columns: type, version, apiKey, and
topicId, partitionId, brokerId (Fence/Unfence: id). Those sit at fixed places:
the type in the value's first three bytes, the key fields first in the bodies
of the records that carry them. So the rows need no data dict and no
`MetadataEvent` per record: `KeyRows.add_batch` frames a batch with
`batch_events`' own `record_frames` (same checks, same quarantine reasons), reads the prefix
and the key fields at their positions, and appends one tuple per record.

What it cannot read that way takes `batch_events`' path and is kept as the
object it gives (`KeyRows.items`; spark/event_rows turns it into its row):
control records, a value whose prefix is not one byte each of frame 1, apiKey
and version of a known type, a type whose key field comes after a
variable-width field (TopicRecord), a value too short for its key fields, a
NoOpRecord that is not the 4 bytes every controller writes (the sources pack
NoOps unread: a bad one must not hide among them), and records below
`min_offset` (the source drops them, but a value that does not decode is
quarantined, as it always was). A value read by its keys alone is decoded,
and quarantined if it does not decode, once, by the operator
(`decode_record_value`, with the reason the source would give).

A run of a log's NoOp batches, as `read_segment` frames it (`noop_run_length`: header,
CRC and record bytes checked, no `Batch` built), is one `NoOpBatches` entry, not a tuple
per NoOp: spark/event_rows packs it from the bytes (95%+ of a real log).

Plain Python (no pyarrow): the columns become Arrow in spark/event_rows.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from kraft_audit.core.codec.batches import (
    NOOP_BATCH_SIZE,
    NOOP_RECORDS,
    NOOP_VALUE,
    VALUE_ERRORS,
    Batch,
    Buffer,
    _control_events,
    decode_framed,
    record_frames,
    value_problem,
)
from kraft_audit.core.codec.decodesupport import uuid_text
from kraft_audit.core.codec.records import FRAME_VERSION
from kraft_audit.core.codec.schemas import METADATA_RECORDS, MessageSchema, fields_for
from kraft_audit.core.events import KIND_RECORD, MetadataEvent, Quarantined, is_snapshot_source
from kraft_audit.errors import FramingProblem

# Records that name a broker, and the field that holds its id (else "brokerId").
BROKER_ID_FIELD = {"FENCE_BROKER_RECORD": "id", "UNFENCE_BROKER_RECORD": "id"}

NOOP_TYPE = "NO_OP_RECORD"

# The row of one record: what spark/event_rows' columns hold, in this order
# (kind is "record" and data_json null for every tuple row).
ROW_FIELDS = ("cluster_id", "source", "position", "offset", "batch_base_offset",
              "batch_last_offset", "timestamp_ms", "type", "version", "api_key", "topic_id",
              "partition_id", "broker_id", "raw")
_ROW_TIME = ROW_FIELDS.index("timestamp_ms")

_WIDTH = {"int8": 1, "int16": 2, "uint16": 2, "int32": 4, "int64": 8, "float64": 8, "bool": 1,
          "uuid": 16}
# key column -> the schema type its field must have to be read as-is
_KEY_TYPES = (("topic_id", "uuid", "16s"), ("partition_id", "int32", "i"), ("broker_id", "int32", "i"))


class KeyReader(NamedTuple):
    type_name: str
    api_key: int
    version: int
    need: int  # value bytes the key fields need (prefix included)
    read: Callable | None  # (buf, value_start) -> (topic_id, partition_id, broker_id); None: no keys


def key_layout(schema: MessageSchema, version: int) -> dict[str, int] | None:
    """Where each key field of (schema, version) starts in the body: {column: byte
    position}; None when a key field is tagged, of another type, or follows a
    variable-width field (then only the full decode finds it)."""
    names = {"topic_id": "topicId", "partition_id": "partitionId",
             "broker_id": BROKER_ID_FIELD.get(schema.type_name, "brokerId")}
    wanted = {names[col]: (col, typ) for col, typ, _ in _KEY_TYPES}
    layout: dict[str, int] = {}
    at: int | None = 0  # position of the next untagged field; None once one is variable
    for fl in fields_for(schema.fields, version):
        want = wanted.get(fl.name)
        if want is not None:
            if fl.tag is not None or at is None or fl.type != want[1]:
                return None
            layout[want[0]] = at
        if fl.tag is None and at is not None:
            width = _WIDTH.get(fl.type)
            at = None if width is None else at + width
    return layout


def _reader(layout: dict[str, int]) -> tuple[int, Callable | None]:
    """(bytes needed after the prefix, a function reading the key columns), compiled
    once: one struct unpack at the value's body."""
    if not layout:
        return 0, None
    fmt = {col: f for col, _, f in _KEY_TYPES}
    spec, names, at = ">", [], 0
    for col, pos in sorted(layout.items(), key=lambda kv: kv[1]):
        spec += (f"{pos - at}x" if pos > at else "") + fmt[col]
        names.append(col)
        at = pos + struct.calcsize(">" + fmt[col])
    values = {col: col for col in names}
    if "topic_id" in values:
        values["topic_id"] = "_uuid(topic_id)"
    source = (f"def read(buf, start):\n"
              f"    {', '.join(names)}, = _unpack(buf, start + 3)\n"
              f"    return {values.get('topic_id', 'None')}, {values.get('partition_id', 'None')}, "
              f"{values.get('broker_id', 'None')}\n")
    namespace = {"_unpack": struct.Struct(spec).unpack_from, "_uuid": uuid_text}
    exec(source, namespace)  # noqa: S102 - source generated from our own schema table
    return at, namespace["read"]


def _key_readers() -> dict[bytes, KeyReader]:
    readers = {}
    for schema in METADATA_RECORDS:
        for version in schema.versions:
            if schema.api_key >= 0x80 or version >= 0x80:
                continue  # a two-byte varint: not a three-byte prefix
            layout = key_layout(schema, version)
            if layout is None:
                continue
            need, read = _reader(layout)
            readers[bytes((FRAME_VERSION, schema.api_key, version))] = KeyReader(
                schema.type_name, schema.api_key, version, 3 + need, read)
    return readers


# The first three bytes of a value -> how to read its row without decoding it.
KEY_READERS: dict[bytes, KeyReader] = _key_readers()


def key_columns(type_name: str, data: dict) -> tuple[str | None, int | None, int | None]:
    """(topic_id, partition_id, broker_id) of a decoded record, as its row holds them."""
    topic_id = data.get("topicId")
    partition = data.get("partitionId")
    broker = data.get(BROKER_ID_FIELD.get(type_name, "brokerId"))
    return (topic_id if isinstance(topic_id, str) else None,
            partition if isinstance(partition, int) and not isinstance(partition, bool) else None,
            broker if isinstance(broker, int) and not isinstance(broker, bool) else None)


def noop_row(cluster_id: str, source: str, position: int, offset: int, last_offset: int,
             timestamp_ms: int) -> tuple:
    """The row of a NoOpRecord as controllers write it (its value NOOP_VALUE)."""
    return (cluster_id, source, position, offset, offset, last_offset, timestamp_ms, NOOP_TYPE, 0, 20,
            None, None, None, NOOP_VALUE)


@dataclass(slots=True, frozen=True)
class NoOpBatches:
    """Two or more batches of one NoOpRecord each, next to each other in a log file at
    consecutive offsets (`noop_run_length`): one entry among `KeyRows.rows` for all of them,
    which spark/event_rows packs (their offsets, and their times read from the bytes) but
    for the newest NoOp of the chunk, whose row it makes (`row`)."""

    buf: Buffer  # the bytes read: the batches are at [at, at + count * NOOP_BATCH_SIZE)
    at: int
    position: int  # the first batch's in its file
    first_offset: int
    count: int
    leader_epoch: int

    @property
    def last_offset(self) -> int:
        return self.first_offset + self.count - 1

    def row(self, cluster_id: str, source: str, timestamp_ms: int) -> tuple:
        """The row of its last NoOp (`timestamp_ms`: that batch's)."""
        last = self.count - 1
        return noop_row(cluster_id, source, self.position + last * NOOP_BATCH_SIZE,
                        self.first_offset + last, self.first_offset + last, timestamp_ms)


class KeyRows:
    """The event rows of what the sources read, in read order: `rows` holds a tuple
    (ROW_FIELDS) per record read by its keys, a `NoOpBatches` for a run of a log's NoOp
    batches, or None where `items` holds the object (an event, decoded in full, or a
    Quarantined) whose row goes there. `noops` lists the rows of the log's NoOpRecords (not
    a snapshot's) and its NoOpBatches per (cluster, file), for the packing spark/event_rows
    does. `epochs` lists, per (cluster, file) of a log (not a snapshot), each batch with a
    record among the rows: (rows so far, base offset, last offset, its last record's time,
    Raft epoch, whether control), or (rows so far, NoOpBatches) for a run of them, for the
    BATCH_EPOCHS row."""

    __slots__ = ("rows", "items", "noops", "epochs")

    def __init__(self) -> None:
        self.rows: list[tuple | NoOpBatches | None] = []
        self.items: dict[int, MetadataEvent | Quarantined] = {}
        self.noops: dict[tuple[str, str], list[int]] = {}
        self.epochs: dict[tuple[str, str], list[tuple]] = {}

    def __len__(self) -> int:
        return len(self.rows)

    def truncate(self, n: int) -> None:
        """Forget every row after the first n (a message that failed half-way)."""
        del self.rows[n:]
        self.items = {i: v for i, v in self.items.items() if i < n}
        for key, rows in list(self.noops.items()):
            kept = [i for i in rows if i < n]
            if kept:
                self.noops[key] = kept
            else:
                del self.noops[key]
        for key, batches in list(self.epochs.items()):
            kept = [b for b in batches if b[0] <= n]
            if kept:
                self.epochs[key] = kept
            else:
                del self.epochs[key]

    def add(self, item: MetadataEvent | Quarantined) -> None:
        """An object's row (a control record, a side input, a quarantined input ...)."""
        n = len(self.rows)
        if isinstance(item, MetadataEvent) and item.type == NOOP_TYPE and item.offset >= 0 \
                and not is_snapshot_source(item.source):
            self.noops.setdefault((item.cluster_id, item.source), []).append(n)
        self.items[n] = item
        self.rows.append(None)

    def add_noop_run(self, run: NoOpBatches, cluster_id: str, source: str) -> None:
        """A log's run of NoOp batches (all at or above the reader's min_offset)."""
        n = len(self.rows)
        self.rows.append(run)
        self.noops.setdefault((cluster_id, source), []).append(n)
        self.epochs.setdefault((cluster_id, source), []).append((n + 1, run))

    def add_batch(self, batch: Batch, cluster_id: str, source: str, min_offset: int = 0) -> None:
        """The rows of one batch: `batch_events(batch, ..., keep_values=True)`'s, with
        events below `min_offset` left out (a value that does not decode below it is
        still quarantined); and a log's batch's entry in `epochs`."""
        start = len(self.rows)
        self._add_batch_rows(batch, cluster_id, source, min_offset)
        if is_snapshot_source(source):
            return
        last_time = self._last_record_time(start)
        if last_time is not None:
            self.epochs.setdefault((cluster_id, source), []).append(
                (len(self.rows), batch.base_offset, batch.base_offset + batch.last_offset_delta,
                 last_time, batch.leader_epoch, batch.is_control))

    def _last_record_time(self, start: int) -> int | None:
        """The time of the last record among the rows from `start` (None: all quarantined)."""
        rows, items = self.rows, self.items
        for i in range(len(rows) - 1, start - 1, -1):
            row = rows[i]
            if row is not None:
                return row[_ROW_TIME]
            item = items[i]
            if item.__class__ is MetadataEvent:
                return item.timestamp_ms
        return None

    def _add_batch_rows(self, batch: Batch, cluster_id: str, source: str, min_offset: int) -> None:
        if batch.is_control:
            for item in _control_events(batch, cluster_id, source):
                if isinstance(item, Quarantined) or item.offset >= min_offset:
                    self.add(item)
            return
        buf, pos, end = batch.buf, batch.records_start, batch.records_end
        base_offset, base_ts, position = batch.base_offset, batch.base_timestamp, batch.position
        last_offset = base_offset + batch.last_offset_delta
        rows = self.rows
        append = rows.append
        noops = None
        if not is_snapshot_source(source):
            noops = self.noops.get((cluster_id, source))
            if noops is None:
                noops = self.noops[(cluster_id, source)] = []
        if (batch.records_count == 1 and end - pos == len(NOOP_RECORDS)
                and buf[pos:end] == NOOP_RECORDS and base_offset >= min_offset):
            # a batch of one NoOpRecord as every controller writes it: most of a real log
            if noops is not None:
                noops.append(len(rows))
            append(noop_row(cluster_id, source, position, base_offset, last_offset, base_ts))
            return
        readers = KEY_READERS
        try:
            for offset, ts_delta, value_start, value_end in record_frames(batch):
                if offset >= min_offset:
                    reader = readers.get(buf[value_start : value_start + 3])
                    if reader is not None and value_end - value_start >= reader.need:
                        raw = bytes(buf[value_start:value_end])
                        if reader.type_name != NOOP_TYPE:
                            topic, partition, broker = (reader.read(buf, value_start) if reader.read
                                                        else (None, None, None))
                            append((cluster_id, source, position, offset, base_offset, last_offset,
                                    base_ts + ts_delta, reader.type_name, reader.version,
                                    reader.api_key, topic, partition, broker, raw))
                            continue
                        if raw == NOOP_VALUE:
                            if noops is not None:
                                noops.append(len(rows))
                            append((cluster_id, source, position, offset, base_offset, last_offset,
                                    base_ts + ts_delta, NOOP_TYPE, 0, 20, None, None, None, raw))
                            continue
                # the full decode, as batch_events does it (a quarantine says why)
                try:
                    type_name, version, api_key, data = decode_framed(buf, value_start, value_end)
                except VALUE_ERRORS as exc:
                    self.add(Quarantined(cluster_id, source, position,
                                         value_problem(position, offset, exc),
                                         bytes(buf[value_start:value_end][:256]), offset))
                    continue
                if offset >= min_offset:
                    self.add(MetadataEvent(cluster_id, source, position, offset, base_offset,
                                           last_offset, base_ts + ts_delta, KIND_RECORD, type_name,
                                           version, data, api_key, bytes(buf[value_start:value_end]),
                                           batch.leader_epoch))
        except FramingProblem as problem:
            self.add(Quarantined(cluster_id, source, position, problem.reason, problem.raw,
                                 problem.offset))

