"""The one row shape every input takes in Spark, and the conversions to and
from the core's `MetadataEvent` / `Quarantined`.

A few columns are promoted to typed Spark columns because Spark needs them
(keying, ordering, filtering, SQL over the stream); the record's payload stays
one opaque column. Kafka adds record versions and tagged fields regularly
(PartitionRecord v0 → v2 added Directories, ELR, LastKnownElr); an opaque
payload means a new version never changes the Spark schema, never invalidates
a checkpoint and never needs a schema migration of the streaming state.

The payload of a metadata record read from a log (files or the shipper's
topic) is its value bytes in `raw`, `data_json` null: the operator decodes them
with the codec (`from_columns`), which costs less than writing JSON in the
source and parsing it in the operator (a third of the group call on the worst
case, docs/ARCHITECTURE.md). The sources do not decode it either: the codec
reads its key columns from the bytes (`KeyRows`, made Arrow by
`key_record_batch`), so a value that does not decode is quarantined by the
operator. Other rows (control records, side inputs,
kafka-dump-log text) carry `data_json`; `raw` also keeps the bytes of records
we could not decode (UNKNOWN_RECORD, with `data_json` "{}") and of quarantined
input, so nothing is lost.

The batch's Raft epoch (`MetadataEvent.leader_epoch`) is not a column, and rows
come back with -1 (unknown): the rule that reads it (kraft.election-safety) needs
every batch of the log in order, which no bucket sees, partition records going to
their own buckets and most NoOps packed. So the sources send, per chunk they read,
one more row (kind "epochs", `BATCH_EPOCHS`; see `to_record_batch`) listing every
batch of the log in it: its offsets, the time of its last record, its epoch and
whether it is a control batch. It goes to bucket 0, whose operator gives the core
the LeaderChange records' epochs and a header (`KIND_BATCH_HEADER`) for each other
batch whose epoch is to be judged, so the job finds what `check` finds. A snapshot's
batches are left out, as `check` leaves them.

Quarantined input travels in the same stream (kind "quarantine", the reason in
`data_json`) so the counts of what came in and what was judged or quarantined
balance in one place. The sources send most NoOpRecords as one row of their
offsets (kind "noops", `NOOP_OFFSETS`; see `to_record_batch`). Neither shell-only
row is an input record: the NoOps one stands for are counted, the epochs row is not.
"""

from __future__ import annotations

import base64
import itertools
import json
from typing import Any, Iterable

import numpy as np
import pyarrow as pa

from kraft_audit.core.codec.batches import (BASE_TIMESTAMP_AT, NOOP_BATCH_SIZE, VALUE_ERRORS, decode_record_value,
                                            value_problem)
from kraft_audit.core.codec.keyrows import ROW_FIELDS, KeyRows, NoOpBatches, key_columns
from kraft_audit.core.events import (KIND_CONTROL, KIND_RECORD, NO_OFFSET, UNKNOWN_RECORD, MetadataEvent,
                                     Quarantined, is_snapshot_source)

KIND_QUARANTINE = "quarantine"
QUARANTINED_TYPE = "QUARANTINE"  # the event type of a row that carries quarantined input
# A shell-only row a source adds when a micro-batch reaches the end of its
# log: side inputs held back until the log reached their time can go now.
# The operator consumes it; the core never sees it.
KIND_MARKER = "marker"
LOG_TAIL = "LOG_TAIL"
# A shell-only row that stands for NoOpRecords a source read but does not send one
# row each (95%+ of a real log; a row each was most of the job's time on such
# logs): `raw` holds their log offsets as little-endian int64. The newest NoOp of
# a chunk still travels as an event (it moves the auditor's clock); the operator
# counts the rest as it counts the NoOps it thins out itself.
KIND_NOOPS = "noops"
NOOP_OFFSETS = "NOOP_OFFSETS"
_NOOP = "NO_OP_RECORD"
# A shell-only row a source adds per chunk and log file: every batch of the log the
# chunk holds, in log order, as one EPOCH_ENTRY each in `raw` (32 bytes a batch). Bucket 0
# judges the Raft epochs from it (see the module's docstring and operator._epoch_headers).
KIND_EPOCHS = "epochs"
BATCH_EPOCHS = "BATCH_EPOCHS"
EPOCH_ENTRY = np.dtype([("base", "<i8"), ("last", "<i8"), ("timestamp_ms", "<i8"), ("epoch", "<i4"),
                        ("control", "<i4")])
_LOG_KINDS = (KIND_RECORD, KIND_CONTROL)


def log_tail_marker(cluster_id: str, source: str) -> MetadataEvent:
    return MetadataEvent(cluster_id=cluster_id, source=source, position=-1, offset=NO_OFFSET,
                         batch_base_offset=NO_OFFSET, batch_last_offset=NO_OFFSET, timestamp_ms=0,
                         kind=KIND_MARKER, type=LOG_TAIL, version=0)

# (name, arrow type, spark type); the order is the row order.
_COLUMNS: list[tuple[str, pa.DataType, str]] = [
    ("cluster_id", pa.string(), "string"),
    ("source", pa.string(), "string"),
    ("position", pa.int64(), "bigint"),
    ("offset", pa.int64(), "bigint"),
    ("batch_base_offset", pa.int64(), "bigint"),
    ("batch_last_offset", pa.int64(), "bigint"),
    ("timestamp_ms", pa.int64(), "bigint"),
    ("kind", pa.string(), "string"),
    ("type", pa.string(), "string"),
    ("version", pa.int32(), "int"),
    ("api_key", pa.int32(), "int"),
    ("topic_id", pa.string(), "string"),
    ("partition_id", pa.int32(), "int"),
    ("broker_id", pa.int32(), "int"),
    ("data_json", pa.string(), "string"),
    ("raw", pa.binary(), "binary"),
]

EVENT_COLUMNS = [name for name, _, _ in _COLUMNS]
EVENT_ARROW_SCHEMA = pa.schema([pa.field(name, t) for name, t, _ in _COLUMNS])
EVENT_DDL = ", ".join(f"`{name}` {t}" for name, _, t in _COLUMNS)

_MAX_RAW = 4096  # quarantined bytes kept per row: enough to diagnose, bounded
_ROW_OFFSET = ROW_FIELDS.index("offset")


def _json_default(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


# One encoder for every row: json.dumps with arguments builds a new
# JSONEncoder per call, a quarter of the cost of encoding a small payload.
_ENCODER = json.JSONEncoder(separators=(",", ":"), default=_json_default)


def dumps(data: Any) -> str:
    return _ENCODER.encode(data)


def event_row(ev: MetadataEvent) -> dict[str, Any]:
    data = ev.data or {}
    topic_id, partition, broker = key_columns(ev.type, data)
    return {
        "cluster_id": ev.cluster_id,
        "source": ev.source,
        "position": int(ev.position),
        "offset": int(ev.offset),
        "batch_base_offset": int(ev.batch_base_offset),
        "batch_last_offset": int(ev.batch_last_offset),
        "timestamp_ms": int(ev.timestamp_ms),
        "kind": ev.kind,
        "type": ev.type,
        "version": int(ev.version),
        "api_key": int(ev.api_key),
        "topic_id": topic_id,
        "partition_id": partition,
        "broker_id": broker,
        # a record's value bytes (batch_events(keep_values=True)) travel instead of its JSON
        "data_json": None if carries_value(ev) else dumps(data),
        "raw": ev.raw,
    }


def carries_value(ev: MetadataEvent) -> bool:
    """Whether `ev.raw` holds the value bytes its data decodes from."""
    return ev.raw is not None and ev.kind == KIND_RECORD and ev.type != UNKNOWN_RECORD


def quarantine_row(q: Quarantined) -> dict[str, Any]:
    return {
        "cluster_id": q.cluster_id,
        "source": q.source,
        "position": int(q.position),
        "offset": int(q.offset),
        "batch_base_offset": NO_OFFSET,
        "batch_last_offset": NO_OFFSET,
        "timestamp_ms": 0,
        "kind": KIND_QUARANTINE,
        "type": QUARANTINED_TYPE,
        "version": 0,
        "api_key": -1,
        "topic_id": None,
        "partition_id": None,
        "broker_id": None,
        "data_json": dumps({"reason": q.reason}),
        "raw": bytes(q.raw or b"")[:_MAX_RAW],
    }


def to_row(item: MetadataEvent | Quarantined) -> dict[str, Any]:
    return quarantine_row(item) if isinstance(item, Quarantined) else event_row(item)


def _shell_row(cluster_id: str, source: str, kind: str, type_: str, raw: bytes) -> dict[str, Any]:
    """A row only the shell reads (no record, no log offset), its content packed in `raw`."""
    return {"cluster_id": cluster_id, "source": source, "position": -1, "offset": NO_OFFSET,
            "batch_base_offset": NO_OFFSET, "batch_last_offset": NO_OFFSET, "timestamp_ms": 0,
            "kind": kind, "type": type_, "version": 0, "api_key": -1, "topic_id": None,
            "partition_id": None, "broker_id": None, "data_json": None, "raw": raw}


def noop_offsets_row(cluster_id: str, source: str, offsets: list[int]) -> dict[str, Any]:
    return _shell_row(cluster_id, source, KIND_NOOPS, NOOP_OFFSETS,
                      np.asarray(offsets, dtype="<i8").tobytes())


def noop_offsets(raw: bytes) -> np.ndarray:
    """The offsets a NOOP_OFFSETS row stands for."""
    return np.frombuffer(bytes(raw), dtype="<i8").astype(np.int64)


def batch_epochs_row(cluster_id: str, source: str, columns: tuple) -> dict[str, Any]:
    """The BATCH_EPOCHS row of batches given as EPOCH_ENTRY's columns (base offsets, last
    offsets, their last records' times, Raft epochs, whether control), in log order."""
    entries = np.empty(len(columns[0]), dtype=EPOCH_ENTRY)
    for name, values in zip(EPOCH_ENTRY.names, columns):  # field by field: no tuple per batch
        entries[name] = values
    return _shell_row(cluster_id, source, KIND_EPOCHS, BATCH_EPOCHS, entries.tobytes())


def batch_epochs(raw: bytes) -> np.ndarray:
    """The entries of a BATCH_EPOCHS row (fields of EPOCH_ENTRY)."""
    return np.frombuffer(bytes(raw), dtype=EPOCH_ENTRY)


def _epochs_rows(items: list) -> list[dict[str, Any]]:
    """A BATCH_EPOCHS row per (cluster, log file) of the batches whose records are in
    `items` (read in log order), a snapshot's left out."""
    groups: dict[tuple[str, str], tuple[list, ...]] = {}
    columns = None  # the current (cluster, file)'s; None for a snapshot's
    cluster = source = base = None
    for i in items:
        if i.__class__ is not MetadataEvent or i.offset < 0:  # quarantined, markers, side inputs
            continue
        if i.source != source or i.cluster_id != cluster:
            cluster, source, base = i.cluster_id, i.source, None
            columns = None if is_snapshot_source(source) else \
                groups.setdefault((cluster, source), ([], [], [], [], []))
            if columns is not None:
                bases, lasts, times, epochs, controls = columns
        if columns is None or i.kind not in _LOG_KINDS:
            continue
        if i.batch_base_offset == base:
            times[-1] = i.timestamp_ms  # a later record of the batch
            continue
        base = i.batch_base_offset
        bases.append(base)
        lasts.append(i.batch_last_offset)
        times.append(i.timestamp_ms)
        epochs.append(i.leader_epoch)
        controls.append(i.kind == KIND_CONTROL)
    return [batch_epochs_row(c, s, cols) for (c, s), cols in groups.items() if cols[0]]


def _packed_rows(items: list) -> list[dict[str, Any]]:
    """Rows of `items` with the log's NoOps (not a snapshot's) but the newest of
    each (cluster, file) as one NOOP_OFFSETS row."""
    newest: dict[tuple[str, str], MetadataEvent] = {}
    for i in items:
        if isinstance(i, MetadataEvent) and i.type == _NOOP and i.offset >= 0 \
                and not is_snapshot_source(i.source):
            held = newest.get((i.cluster_id, i.source))
            if held is None or i.offset > held.offset:
                newest[(i.cluster_id, i.source)] = i
    if not newest:
        return [to_row(i) for i in items]
    rows, packed = [], {}
    for i in items:
        if isinstance(i, MetadataEvent) and i.type == _NOOP and newest.get((i.cluster_id, i.source)) is not None \
                and i is not newest[(i.cluster_id, i.source)] and i.offset >= 0:
            packed.setdefault((i.cluster_id, i.source), []).append(i.offset)
        else:
            rows.append(to_row(i))
    rows.extend(noop_offsets_row(c, s, o) for (c, s), o in packed.items())
    return rows


def to_record_batch(items: Iterable[MetadataEvent | Quarantined], pack_noops: bool = False,
                    epochs: bool = False) -> pa.RecordBatch:
    """Events and quarantined input as one Arrow batch of the event schema
    (built column by column: 7x faster than RecordBatch.from_pylist).
    `pack_noops`: the NoOps but the newest as one NOOP_OFFSETS row (the sources).
    `epochs`: and the batches' Raft epochs as BATCH_EPOCHS rows (the sources)."""
    items = list(items)
    rows = _packed_rows(items) if pack_noops else [to_row(i) for i in items]
    if epochs:
        rows.extend(_epochs_rows(items))
    return pa.RecordBatch.from_arrays(
        [pa.array([r[name] for r in rows], type=typ) for name, typ, _ in _COLUMNS],
        schema=EVENT_ARROW_SCHEMA)


def key_record_batch(rows: KeyRows) -> pa.RecordBatch:
    """What `to_record_batch(items, pack_noops=True, epochs=True)` gives for the items a source read,
    from the rows the codec read by their keys (`KeyRows`: a record's value travels
    undecoded, the operator decodes it; a run of NoOp batches is packed from its bytes)
    and the objects among them."""
    n = len(rows.rows)

    def offset_of(i: int) -> int:  # a NoOp's offset, or a run's last
        row = rows.rows[i]
        return rows.items[i].offset if row is None else \
            row.last_offset if row.__class__ is NoOpBatches else row[_ROW_OFFSET]

    keep, packed, newest_rows = None, [], {}
    for (cluster_id, source), at in rows.noops.items():
        entries = [rows.rows[i] for i in at]  # a NoOp's row (None: its object's), or a NoOpBatches
        if not at or (len(at) < 2 and entries[0].__class__ is not NoOpBatches):
            continue
        lasts = [offset_of(i) for i in at]
        newest = lasts.index(max(lasts))  # the first of the newest, as _packed_rows
        if keep is None:
            keep = bytearray(b"\x01") * n
        offsets: list = []  # runs' as arrays, the rows' between them as lists
        for k, (i, e) in enumerate(zip(at, entries)):
            if e.__class__ is NoOpBatches:
                if k == newest:  # its last NoOp goes as a row, the others packed
                    newest_rows[i] = e.row(cluster_id, source, int(_run_times(e)[-1]))
                offsets.append(np.arange(e.first_offset, e.last_offset + (k != newest), dtype=np.int64))
            elif k != newest:
                if not offsets or offsets[-1].__class__ is not list:
                    offsets.append([])
                offsets[-1].append(lasts[k])
            keep[i] = i in newest_rows or (k == newest and e.__class__ is not NoOpBatches)
        first_packed = at[1] if newest == 0 and entries[0].__class__ is not NoOpBatches else at[0]
        packed.append((first_packed, noop_offsets_row(cluster_id, source, np.concatenate(
            [np.asarray(o, dtype=np.int64) for o in offsets]))))
    if keep is None:
        kept, items = rows.rows, rows.items
    else:  # the packed NoOps leave before any column is built (most of a real log)
        index = list(itertools.compress(range(n), keep))
        kept = [newest_rows.get(i, rows.rows[i]) for i in index]
        items = {j: rows.items[i] for j, i in enumerate(index) if rows.rows[i] is None}
    n = len(kept)
    blank = (None,) * len(ROW_FIELDS)
    cols = ({name: list(c) for name, c in zip(ROW_FIELDS, zip(*(blank if r is None else r for r in kept)))}
            if n else {name: [] for name in ROW_FIELDS})
    cols["kind"] = [KIND_RECORD] * n
    cols["data_json"] = [None] * n
    for i, item in items.items():
        for name, value in to_row(item).items():
            cols[name][i] = value
    # as _packed_rows: the NOOP_OFFSETS rows after the others, in the order of their first NoOp;
    # then, as _epochs_rows, a BATCH_EPOCHS row per log file
    extra = [row for _, row in sorted(packed, key=lambda p: p[0])]
    extra.extend(batch_epochs_row(c, s, _epoch_columns(batches)) for (c, s), batches in rows.epochs.items())
    for row in extra:
        for name, value in row.items():
            cols[name].append(value)
    return pa.RecordBatch.from_arrays([pa.array(cols[name], type=typ) for name, typ, _ in _COLUMNS],
                                      schema=EVENT_ARROW_SCHEMA)


def _run_times(run: NoOpBatches) -> np.ndarray:
    """The times of a run's batches, read from their headers where they lie in its bytes."""
    return np.ndarray((run.count,), dtype=">i8", buffer=run.buf, offset=run.at + BASE_TIMESTAMP_AT,
                      strides=(NOOP_BATCH_SIZE,))


def _epoch_columns(batches: list[tuple]) -> tuple:
    """EPOCH_ENTRY's columns of `KeyRows.epochs`' entries of one log file, in their order:
    a batch's entry as it is, a run of NoOp batches' from its bytes."""
    parts: list[tuple] = []
    plain: list[tuple] = []
    for entry in batches:
        run = entry[1]
        if run.__class__ is not NoOpBatches:
            plain.append(entry)
            continue
        if plain:
            parts.append(tuple(zip(*plain))[1:])
            plain = []
        bases = np.arange(run.first_offset, run.last_offset + 1, dtype=np.int64)
        parts.append((bases, bases, _run_times(run), np.full(run.count, run.leader_epoch),
                      np.zeros(run.count, dtype=bool)))
    if plain:
        parts.append(tuple(zip(*plain))[1:])
    if len(parts) == 1:
        return parts[0]
    return tuple(np.concatenate([np.asarray(p[c]) for p in parts]) for c in range(len(EPOCH_ENTRY.names)))


def from_row(row: dict[str, Any]) -> MetadataEvent | Quarantined:
    """The core's object for one row (a dict with the event columns)."""
    return from_columns({name: [row.get(name)] for name in EVENT_COLUMNS})[0]


def _plain(values) -> list:
    """A column as Python objects (numpy ints → int; NaN/None stay as they are)."""
    return values.tolist() if hasattr(values, "tolist") else list(values)


def from_columns(cols: dict[str, Any]) -> list[MetadataEvent | Quarantined]:
    """The core's objects for rows given column-wise (lists, numpy arrays or pandas
    Series of the event columns, equal lengths): one loop over the columns, no dict
    per row. A row whose `raw` is its record's value is decoded by the codec as the
    source decoded it; should it not decode, it is quarantined with the reason the
    source gives."""
    cluster = _plain(cols["cluster_id"])
    source = _plain(cols["source"])
    position = _plain(cols["position"])
    offset = _plain(cols["offset"])
    base = _plain(cols["batch_base_offset"])
    last = _plain(cols["batch_last_offset"])
    ts = _plain(cols["timestamp_ms"])
    kind = _plain(cols["kind"])
    type_ = _plain(cols["type"])
    version = _plain(cols["version"])
    api_key = _plain(cols["api_key"])
    data_json = _plain(cols["data_json"])
    raw = _plain(cols["raw"])
    loads = json.loads
    out: list[MetadataEvent | Quarantined] = []
    append = out.append
    for i in range(len(kind)):
        r, dj, k = raw[i], data_json[i], kind[i]
        if r is not None and not isinstance(r, bytes):
            r = None if r != r else bytes(r)  # NaN: pandas' "absent"
        if dj is not None and not isinstance(dj, str):
            dj = None  # NaN
        if dj is None and r is not None and k == KIND_RECORD:
            try:
                name, ver, key, data, r = decode_record_value(r)
            except VALUE_ERRORS as exc:
                append(Quarantined(cluster[i], source[i], int(position[i]),
                                   value_problem(int(position[i]), int(offset[i]), exc), r[:256],
                                   int(offset[i])))
                continue
            append(MetadataEvent(cluster[i], source[i], int(position[i]), int(offset[i]), int(base[i]),
                                 int(last[i]), int(ts[i]), k, name, ver, data, key, r))
            continue
        data = loads(dj) if dj else {}
        if k == KIND_QUARANTINE:
            append(Quarantined(cluster[i], source[i], int(position[i]), data.get("reason", ""),
                               r or b"", int(offset[i])))
            continue
        append(MetadataEvent(cluster[i], source[i], int(position[i]), int(offset[i]), int(base[i]),
                             int(last[i]), int(ts[i]), k, type_[i], int(version[i]), data,
                             int(api_key[i]), r))
    return out
