"""Typed records that cross module boundaries: what the readers produce and
what replay, rules and the Spark shell consume.

Every input — a record in a binary segment or snapshot, a line of
kafka-dump-log output, a broker registration event, a log-dir inventory —
becomes either a `MetadataEvent` or a `Quarantined` row. Nothing else (but for
a reader asked for runs of NoOp batches: codec.batches.NoOpRun stands for their
events, one a batch, and gives them back).

Payloads keep Kafka's own vocabulary: `type` is the upper-snake name that
`kafka-dump-log --cluster-metadata-decoder` prints ("PARTITION_CHANGE_RECORD",
"LEADER_CHANGE"), and `data` holds every field of that record version by its
camelCase JSON name with defaults filled in for absent tagged fields (so a
PartitionChangeRecord without a Leader has ``data["leader"] == -2``). UUIDs are
Kafka's 22-character url-safe base64 strings, as Kafka's tools print them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# What an event is.
KIND_RECORD = "record"  # a metadata record (apiKey known or not)
KIND_CONTROL = "control"  # a Raft control record: LEADER_CHANGE, SNAPSHOT_HEADER, ...
KIND_REGISTRATION = "registration"  # a BrokerRegistration request as the controller saw it
KIND_LOG_DIRS = "log_dirs"  # one broker's log-dir inventory (kafka-log-dirs --describe)
# A snapshot compared with its log by `kraft-audit ship` (image.comparison_to_plain in `data`)
KIND_SNAPSHOT_COMPARISON = "snapshot_comparison"

# A batch of the log known by its header alone: the Spark shell's bucket 0 gets one for a
# batch whose records went to other buckets (or were packed), with the batch's offsets, the
# time of its last record and its Raft epoch (`leader_epoch`); `offset` is NO_OFFSET, for it
# is no record: the event loop judges the batch's epoch as it judges a batch's first record.
KIND_BATCH_HEADER = "batch_header"
BATCH_HEADER = "BATCH_HEADER"

# What the readers say of the log besides its records (kraft_audit/core/raft.py reads them):
# LOG_RUNS: every batch a reader read, as runs of one Raft epoch (`data`: {"copy": the log's
# copy, e.g. a controller's node id, "runs": [[first offset, last offset, epoch, metadata
# batches], ...]}); COMMIT: entry (`offset`, `leader_epoch`) of that copy's log is committed
# (`data`: {"copy", "proof": how it is known, "voters": the voter set, when the reader knows it})
KIND_LOG_RUNS = "log_runs"
LOG_RUNS = "LOG_RUNS"
KIND_COMMIT = "commit"
COMMIT_CLAIM = "COMMIT_CLAIM"
# NoOpRecords read but not sent one event each (95%+ of a real log): `raw` holds their
# offsets as little-endian int64, `batch_base_offset` and `batch_last_offset` the lowest and
# highest, `leader_epoch` their Raft epoch; counted, never replayed (they change nothing)
KIND_NOOPS = "noops"
NOOP_OFFSETS = "NOOP_OFFSETS"

# Type names of the side inputs (not Kafka records).
BROKER_REGISTRATION_REQUEST = "BROKER_REGISTRATION_REQUEST"
BROKER_LOG_DIRS = "BROKER_LOG_DIRS"
SNAPSHOT_COMPARISON = "SNAPSHOT_COMPARISON"
# A metadata record whose apiKey or version this build does not know.
UNKNOWN_RECORD = "UNKNOWN_RECORD"

NO_OFFSET = -1

# How a snapshot's file is named (<endOffset>-<epoch>.checkpoint, bootstrap.checkpoint): its
# records are an image of the state as of its end offset, not changes the controller made.
SNAPSHOT_SUFFIX = ".checkpoint"


def is_snapshot_source(source: str | None) -> bool:
    """Whether an event's `source` is a snapshot file."""
    return source is not None and source.endswith(SNAPSHOT_SUFFIX)


# init=False: the __init__ below is the dataclass's own, written out, for the compiled build
# compiles a written one (one per record read) but runs a generated one as Python
@dataclass(slots=True, init=False)
class MetadataEvent:
    """One input event, in log order when it comes from a metadata log."""

    cluster_id: str
    source: str  # file name or input name the event was read from
    position: int  # byte position of its batch in the file, or line number
    offset: int  # log offset; NO_OFFSET for side inputs (registration, log dirs)
    batch_base_offset: int  # atomic batch limits; NO_OFFSET for side inputs
    batch_last_offset: int
    timestamp_ms: int  # batch CreateTime, or the side event's time
    kind: str
    type: str
    version: int
    data: dict[str, Any] = field(default_factory=dict)
    api_key: int = -1  # -1 for control records and side inputs
    raw: bytes | None = None  # the record value, kept only for UNKNOWN_RECORD
    # the batch's partitionLeaderEpoch: the Raft epoch whose leader wrote it; -1 when the
    # input does not say (side inputs, dump lines without it, the Spark shell's rows: the
    # epochs travel in a row of their own there, spark/event_rows.py)
    leader_epoch: int = -1

    def __init__(self, cluster_id: str, source: str, position: int, offset: int,
                 batch_base_offset: int, batch_last_offset: int, timestamp_ms: int, kind: str,
                 type: str, version: int, data: dict[str, Any] | None = None,  # noqa: A002
                 api_key: int = -1, raw: bytes | None = None, leader_epoch: int = -1) -> None:
        self.cluster_id = cluster_id
        self.source = source
        self.position = position
        self.offset = offset
        self.batch_base_offset = batch_base_offset
        self.batch_last_offset = batch_last_offset
        self.timestamp_ms = timestamp_ms
        self.kind = kind
        self.type = type
        self.version = version
        self.data = {} if data is None else data  # the field's default_factory
        self.api_key = api_key
        self.raw = raw
        self.leader_epoch = leader_epoch

    @property
    def topic_id(self) -> str | None:
        return self.data.get("topicId")

    @property
    def partition_id(self) -> int | None:
        return self.data.get("partitionId")

    @property
    def is_batch_end(self) -> bool:
        return self.offset == self.batch_last_offset


@dataclass(slots=True)
class Quarantined:
    """Input that could not be used, with where it was and why."""

    cluster_id: str
    source: str
    position: int  # byte position or line number of the bad input
    reason: str  # a sentence a human can act on
    raw: bytes = b""  # the offending bytes or line (truncated to a sane size)
    offset: int = NO_OFFSET  # the log offset, when it is known


def event_to_plain(e: MetadataEvent) -> tuple:
    """The event's fields as a tuple, for stored states that must not name classes."""
    return (e.cluster_id, e.source, e.position, e.offset, e.batch_base_offset, e.batch_last_offset,
            e.timestamp_ms, e.kind, e.type, e.version, e.data, e.api_key, e.raw, e.leader_epoch)


def event_from_plain(fields: tuple) -> MetadataEvent:
    return MetadataEvent(*fields)  # 13 fields when stored before leader_epoch was kept: -1


def noop_offsets(raw: bytes | None):
    """The offsets a packed NoOps event stands for (numpy int64)."""
    import numpy as np

    return np.frombuffer(bytes(raw or b""), dtype="<i8").astype(np.int64)


def packed_noops(like: MetadataEvent, offsets, timestamp_ms: int | None = None) -> MetadataEvent:
    """A packed NoOps event (KIND_NOOPS) of `offsets` (ascending), from the cluster, source,
    time and epoch of `like`."""
    import numpy as np

    offsets = np.asarray(offsets, dtype="<i8")
    return MetadataEvent(like.cluster_id, like.source, -1, NO_OFFSET, int(offsets[0]), int(offsets[-1]),
                         like.timestamp_ms if timestamp_ms is None else timestamp_ms, KIND_NOOPS,
                         NOOP_OFFSETS, 0, {}, -1, offsets.tobytes(), like.leader_epoch)
