"""The one row shape every input takes in Spark, and the conversions to and
from the core's `MetadataEvent` / `Quarantined`.

A few columns are promoted to typed Spark columns because Spark needs them
(keying, ordering, filtering, SQL over the stream); the record's payload stays
one JSON string (`data_json`). Kafka adds record versions and tagged fields
regularly (PartitionRecord v0 → v2 added Directories, ELR, LastKnownElr);
keeping the payload as JSON means a new version never changes the Spark
schema, never invalidates a checkpoint and never needs a schema migration of
the streaming state. `raw` keeps the bytes of records we could not decode
(UNKNOWN_RECORD) and of quarantined input, so nothing is lost.

The batch's Raft epoch (`MetadataEvent.leader_epoch`) is not a column: the
rule that reads it (kraft.election-safety) needs every batch of the log in order,
which no bucket of the Spark shell sees, so rows come back with -1 (unknown) and
the shell leaves that rule to `check` and the single-process audit.

Quarantined input travels in the same stream (kind "quarantine", the reason in
`data_json`) so the counts of what came in and what was judged or quarantined
balance in one place. The sources send most NoOpRecords as one row of their
offsets (kind "noops", `NOOP_OFFSETS`; see `to_record_batch`).
"""

from __future__ import annotations

import base64
import json
from typing import Any, Iterable

import numpy as np
import pyarrow as pa

from kraft_audit.core.events import NO_OFFSET, MetadataEvent, Quarantined

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

# Records that name a broker, and the field that holds its id.
_BROKER_ID_FIELD = {"FENCE_BROKER_RECORD": "id", "UNFENCE_BROKER_RECORD": "id"}

_MAX_RAW = 4096  # quarantined bytes kept per row: enough to diagnose, bounded


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
    broker = data.get(_BROKER_ID_FIELD.get(ev.type, "brokerId"))
    topic_id = data.get("topicId")
    partition = data.get("partitionId")
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
        "topic_id": topic_id if isinstance(topic_id, str) else None,
        "partition_id": partition if isinstance(partition, int) and not isinstance(partition, bool) else None,
        "broker_id": broker if isinstance(broker, int) and not isinstance(broker, bool) else None,
        "data_json": dumps(data),
        "raw": ev.raw,
    }


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


def noop_offsets_row(cluster_id: str, source: str, offsets: list[int]) -> dict[str, Any]:
    return {"cluster_id": cluster_id, "source": source, "position": -1, "offset": NO_OFFSET,
            "batch_base_offset": NO_OFFSET, "batch_last_offset": NO_OFFSET, "timestamp_ms": 0,
            "kind": KIND_NOOPS, "type": NOOP_OFFSETS, "version": 0, "api_key": -1, "topic_id": None,
            "partition_id": None, "broker_id": None, "data_json": None,
            "raw": np.asarray(offsets, dtype="<i8").tobytes()}


def noop_offsets(raw: bytes) -> np.ndarray:
    """The offsets a NOOP_OFFSETS row stands for."""
    return np.frombuffer(bytes(raw), dtype="<i8").astype(np.int64)


def _packed_rows(items: list) -> list[dict[str, Any]]:
    """Rows of `items` with the log's NoOps (not a snapshot's) but the newest of
    each (cluster, file) as one NOOP_OFFSETS row."""
    newest: dict[tuple[str, str], MetadataEvent] = {}
    for i in items:
        if isinstance(i, MetadataEvent) and i.type == _NOOP and i.offset >= 0 \
                and not i.source.endswith(".checkpoint"):
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


def to_record_batch(items: Iterable[MetadataEvent | Quarantined], pack_noops: bool = False
                    ) -> pa.RecordBatch:
    """Events and quarantined input as one Arrow batch of the event schema
    (built column by column: 7x faster than RecordBatch.from_pylist).
    `pack_noops`: the NoOps but the newest as one NOOP_OFFSETS row (the sources)."""
    rows = _packed_rows(list(items)) if pack_noops else [to_row(i) for i in items]
    return pa.RecordBatch.from_arrays(
        [pa.array([r[name] for r in rows], type=typ) for name, typ, _ in _COLUMNS],
        schema=EVENT_ARROW_SCHEMA)


def from_row(row: dict[str, Any]) -> MetadataEvent | Quarantined:
    """The core's object for one row (a dict with the event columns)."""
    data = json.loads(row["data_json"]) if row.get("data_json") else {}
    raw = row.get("raw")
    if raw is not None and not isinstance(raw, bytes):
        raw = bytes(raw)
    if row["kind"] == KIND_QUARANTINE:
        return Quarantined(
            cluster_id=row["cluster_id"],
            source=row["source"],
            position=int(row["position"]),
            reason=data.get("reason", ""),
            raw=raw or b"",
            offset=int(row["offset"]),
        )
    return MetadataEvent(
        cluster_id=row["cluster_id"],
        source=row["source"],
        position=int(row["position"]),
        offset=int(row["offset"]),
        batch_base_offset=int(row["batch_base_offset"]),
        batch_last_offset=int(row["batch_last_offset"]),
        timestamp_ms=int(row["timestamp_ms"]),
        kind=row["kind"],
        type=row["type"],
        version=int(row["version"]),
        data=data,
        api_key=int(row["api_key"]),
        raw=raw,
    )
