"""The stateful step: events keyed by (cluster_id, bucket) → the core's
`Auditor` → output rows, through `applyInPandasWithState`.

Keys. One group per partition would pay Spark's per-group cost (about 0.5 ms
a call here) millions of times, so partitions are hashed into B buckets:
`bucket = crc32("<topic_id>:<partition>") % B`, computed in the JVM. Records
every bucket needs to judge its partitions alone (brokers, topics, configs,
features, ClearElr, transactions, Raft control records, registration and
log-dir events) are copied to every bucket of their cluster. Records no rule
reads (NoOp, ACLs, quotas, SCRAM, tokens), producer ids (a cluster-scoped rule) and quarantined input
go to bucket 0 only: NoOps are 95%+ of a real log, fanning them out would
multiply the work by B. Bucket 0 also emits the cluster-scoped findings, and
gets the sources' BATCH_EPOCHS rows: every batch's Raft epoch, judged there
(`_epoch_headers`).

State. The core's stored form in parts (kraft_audit/core/snapshot.py): meta
(counters, small, every call), topology (topics, brokers, configs: rewritten
only when they changed) and the sharded partition and condition tables, of
which a call pickles again only the shards it wrote, and the held side
inputs as tuples: plain data only, no class named. Binary columns only
(pyspark 4.2 breaks on array types in the state schema), behind a version
number; a checkpoint of another version is refused with a clear error. The
shards live in files beside the checkpoint (shard_files.py), the row holding
only which file holds each (version 5), for the whole row crosses the JVM and
the state store every call. A version 4 row (shards in the row) is restored
and its next write moves them to files.

Live auditors stay in the Python worker between micro-batches (`_LIVE`),
with the token of the state row they wrote: a call whose state row carries
that token goes on with the live object, any other (another worker had the
bucket, the worker restarted, Spark retried a batch, a restart from the
checkpoint) restores from the row, lazily: only the shards the call touches
are unpickled. The cache only saves work; the state row alone is the truth.

Output. A few rows per group call: (table, part, rows), one kind of row per
operator output (`kraft_audit.tables.OUTPUTS`, each a typed row). For the
outputs the sinks write row by row (violations, conditions, partitions,
brokers, quarantine) `rows` is an Arrow IPC stream of the row type's columns
(`tables.output_to_arrow`), built here in the workers, so the driver only
concatenates Arrow tables and adds the sink's columns: unpickling row dicts
and converting them to Arrow in the driver took about 7 s of every
250k-record micro-batch, serially (bench/bench_streaming.py). The small
gauges (`BucketGauges`) and stats (`GroupStats`) rows stay pickled lists of dicts. The Spark schema stays
fixed while output rows evolve; at most OUTPUT_CHUNK rows per Spark row.
Only this package writes and reads these bytes, in the same job.

`audit_group` is a plain function of (key, pandas frames, state): the tests
call it without a query.
"""

from __future__ import annotations

import pickle
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

import numpy as np
import pandas as pd
import pyarrow as pa

from kraft_audit.config import AuditConfig
from kraft_audit.core.collector import collector_paused
from kraft_audit.errors import StoredFormatError
from kraft_audit.core.events import (
    BATCH_HEADER,
    BROKER_LOG_DIRS,
    BROKER_REGISTRATION_REQUEST,
    KIND_BATCH_HEADER,
    KIND_CONTROL,
    KIND_RECORD,
    MetadataEvent,
    NO_OFFSET,
    Quarantined,
    SNAPSHOT_COMPARISON,
    SNAPSHOT_SUFFIX,
    event_from_plain,
    event_to_plain,
    is_snapshot_source,
)
from kraft_audit.core.codec.logdir import SNAPSHOT_RE, skipped, unread_offsets
from kraft_audit.sideinputs.order import interleave
from kraft_audit.core.rows import QuarantineRow
from kraft_audit.spark import event_rows, shard_files
from kraft_audit.tables import OUTPUTS, output_to_arrow, routes
from kraft_audit.tables.rows import BucketGauges, GroupStats, row_dict

STATE_VERSION = 5  # 5: the shards in files, the row names them (shard_files.py)
IN_ROW_VERSION = 4  # 4: the shards in the row (snapshot.FORMAT 4), also written when no shard_dir is set
READABLE_VERSIONS = (IN_ROW_VERSION, STATE_VERSION)
STATE_DDL = "version int, token string, meta binary, topology binary, shards binary, held binary"
OUTPUT_DDL = "table string, part int, rows binary"
OUTPUT_COLUMNS = ["table", "part", "rows"]
OUTPUT_CHUNK = 20_000  # dicts per output row: keeps each binary cell far below Arrow's 2 GiB

PARTITION_SCOPED_TYPES = ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD")
# Records no rule reads, or only cluster-scoped rules (producer ids): kept in bucket 0 only
# (counted and passed to the core once; bucket 0 reports the cluster-scoped findings).
BUCKET0_ONLY_TYPES = (
    "NO_OP_RECORD",
    "PRODUCER_IDS_RECORD",
    "ACCESS_CONTROL_ENTRY_RECORD",
    "REMOVE_ACCESS_CONTROL_ENTRY_RECORD",
    "CLIENT_QUOTA_RECORD",
    "USER_SCRAM_CREDENTIAL_RECORD",
    "REMOVE_USER_SCRAM_CREDENTIAL_RECORD",
    "DELEGATION_TOKEN_RECORD",
    "REMOVE_DELEGATION_TOKEN_RECORD",
    "UNKNOWN_RECORD",
    SNAPSHOT_COMPARISON,  # judged by a cluster-scoped rule
    event_rows.QUARANTINED_TYPE,
    event_rows.NOOP_OFFSETS,
    event_rows.BATCH_EPOCHS,  # the Raft epochs are judged by bucket 0's core
)
# Rows that are log records (they carry a log offset): the rest are side inputs,
# the readers' quarantine rows and markers.
_LOG_KINDS = (KIND_RECORD, KIND_CONTROL)
# Everything else (including these side inputs) is cluster-scoped: fanned out.
CLUSTER_SCOPED_SIDE_TYPES = (BROKER_REGISTRATION_REQUEST, BROKER_LOG_DIRS)

# The outputs the operator emits, declared in kraft_audit/tables/schema.py with
# the tables they feed (the job maps `partitions` to partition_state and
# partition_history; `gauges` and `stats` feed metrics and progress).
T_VIOLATIONS = OUTPUTS["violations"].name
T_CONDITIONS = OUTPUTS["conditions"].name
T_PARTITIONS = OUTPUTS["partitions"].name
T_BROKERS = OUTPUTS["brokers"].name
T_QUARANTINE = OUTPUTS["quarantine"].name
T_GAUGES = OUTPUTS["gauges"].name
T_STATS = OUTPUTS["stats"].name
# Outputs sent as Arrow IPC, and the Delta table (the last one each feeds) whose core columns they carry.
ARROW_TABLES = {o.name: routes()[o.name][-1] for o in OUTPUTS.values() if o.arrow}


@dataclass(frozen=True)
class OperatorConfig:
    """What every group needs to build its Auditor; pickled to the workers. The job
    derives it from the configuration's `audit` section (`of`); its defaults are that
    section's."""

    buckets: int = AuditConfig.buckets
    # The catalog's YAML (file name, text), read on the driver: executors need no rules dir.
    rule_files: tuple[tuple[str, str], ...] = field(default_factory=lambda: catalog_files())  # the shipped catalog
    core_settings: dict[str, Any] = field(default_factory=dict)  # `audit.settings` (CoreSettings)
    timeout_ms: int = int(AuditConfig.timeout_seconds * 1000)  # idle time after which pending matches are settled
    # Where the state shards are kept (shard_files.py; the job: beside the checkpoint);
    # None: in the state row (version 4), for the tests' calls without a query.
    shard_dir: str | None = None

    @classmethod
    def of(cls, audit: AuditConfig, checkpoint: str | None = None) -> OperatorConfig:
        return cls(buckets=audit.buckets, rule_files=catalog_files(audit.rules_dir),
                   core_settings=dict(audit.settings), timeout_ms=int(audit.timeout_seconds * 1000),
                   shard_dir=str(Path(checkpoint) / shard_files.DIR_NAME) if checkpoint else None)


# ------------------------------------------------------------------ keying

def is_partition_scoped(type_: str, topic_id: Any, partition_id: Any) -> bool:
    return type_ in PARTITION_SCOPED_TYPES and isinstance(topic_id, str) and partition_id is not None \
        and partition_id == partition_id  # NaN from pandas is "absent"


def with_buckets(events_df, buckets: int):
    """Add the `bucket` column, copying cluster-scoped rows to every bucket."""
    from pyspark.sql import functions as F

    partition_scoped = (F.col("type").isin(*PARTITION_SCOPED_TYPES)
                        & F.col("topic_id").isNotNull() & F.col("partition_id").isNotNull())
    hashed = F.pmod(F.crc32(F.concat_ws(":", F.col("topic_id"), F.col("partition_id").cast("string"))),
                    F.lit(buckets)).cast("int")
    targets = (F.when(partition_scoped, F.array(hashed))
               .when(F.col("type").isin(*BUCKET0_ONLY_TYPES), F.array(F.lit(0)))
               .otherwise(F.sequence(F.lit(0), F.lit(buckets - 1))))
    return events_df.withColumn("bucket", F.explode(targets))


def audit_stream(events_df, audit: OperatorConfig):
    """events (event_rows schema) → output rows (OUTPUT_DDL), stateful."""
    from pyspark.sql.streaming.state import GroupStateTimeout

    func = make_audit_function(audit)
    return (with_buckets(events_df, audit.buckets)
            .groupBy("cluster_id", "bucket")
            .applyInPandasWithState(func, OUTPUT_DDL, STATE_DDL, "Update",
                                    GroupStateTimeout.ProcessingTimeTimeout))


# ------------------------------------------------------------ the function

def make_audit_function(audit: OperatorConfig):
    def func(key, pdfs, state):
        return audit_group(key, pdfs, state, audit)

    return func


def events_from_pandas(pdf: pd.DataFrame) -> list[MetadataEvent | Quarantined]:
    """Rows of the event schema (sorted) → the core's objects, column by column
    (records read from a log carry their value bytes, decoded here by the codec)."""
    n = len(pdf)
    return event_rows.from_columns({c: pdf[c].to_numpy() if c in pdf.columns else [None] * n
                                    for c in event_rows.EVENT_COLUMNS})


def _frames(pdfs: Iterable[pd.DataFrame]) -> pd.DataFrame:
    frames = [p for p in pdfs if len(p)]
    if not frames:
        return pd.DataFrame(columns=event_rows.EVENT_COLUMNS)
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)


def _partition_scoped_rows(pdf: pd.DataFrame) -> list[bool]:
    return [is_partition_scoped(t, tid, pid)
            for t, tid, pid in zip(pdf["type"], pdf["topic_id"], pdf["partition_id"])]


def _from_snapshot(pdf: pd.DataFrame) -> np.ndarray:
    """Which rows a snapshot file gave (events.is_snapshot_source, a column at a time)."""
    return pdf["source"].astype(str).str.endswith(SNAPSHOT_SUFFIX).to_numpy()


def _log_order(pdf: pd.DataFrame) -> pd.DataFrame:
    """Spark does not keep arrival order inside a group: restore log order.
    A snapshot's records (offsets of their own, from 0) come before the
    segment records that follow it."""
    if pdf.empty:
        return pdf
    keyed = pdf.assign(_segment=~_from_snapshot(pdf))
    return keyed.sort_values(["_segment", "offset", "kind", "source", "position"],
                             kind="stable").drop(columns="_segment")


def _drop_repeats(pdf: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Take out the second and later copies of a log record in one call (log order):
    the same batch shipped twice to the topic (a shipper restarted while acks were
    pending), or one log read from two places. Returns (frame, the repeats). They are
    duplicates: the core would take a copy after its first for the log going
    backwards, and a repeated NoOp would be thinned out below as if it were new."""
    if pdf.empty:
        return pdf, pdf
    in_log = (pdf["offset"].to_numpy() >= 0) & pdf["kind"].isin(_LOG_KINDS).to_numpy()
    # a snapshot's records carry positions in the file, not log offsets: a place of their own
    place = pd.DataFrame({"snapshot": _from_snapshot(pdf),
                          "offset": pdf["offset"].to_numpy(), "in_log": in_log})
    repeat = in_log & place.duplicated().to_numpy()
    if not repeat.any():
        return pdf, pdf.iloc[:0]
    return pdf[~repeat], pdf[repeat]


def _thin_noops(pdf: pd.DataFrame) -> tuple[pd.DataFrame, list[int]]:
    """Keep only the newest NoOpRecord of a call (it moves the auditor's
    clock and last offset; the others change nothing). A real controller
    writes one every 500 ms: 95-99.7% of its log, and before this a third of
    the operator's time. Returns (frame, offsets of the NoOps dropped)."""
    if pdf.empty:
        return pdf, []
    noop = (pdf["type"] == "NO_OP_RECORD").to_numpy()
    if int(noop.sum()) < 2:
        return pdf, []
    offsets = pdf["offset"].to_numpy()
    drop = noop & (offsets != offsets[noop].max())
    return pdf[~drop], offsets[drop].tolist()


def _split_packed(pdf: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(the event rows, the NOOP_OFFSETS rows a source sent for the NoOps it packed, its
    BATCH_EPOCHS rows)."""
    if pdf.empty:
        return pdf, pdf, pdf
    kind = pdf["kind"]
    packed = (kind == event_rows.KIND_NOOPS).to_numpy()
    epochs = (kind == event_rows.KIND_EPOCHS).to_numpy()
    if not packed.any() and not epochs.any():
        return pdf, pdf.iloc[:0], pdf.iloc[:0]
    return pdf[~(packed | epochs)].reset_index(drop=True), pdf[packed], pdf[epochs]


def _epoch_headers(entries: np.ndarray, sources: np.ndarray, pdf: pd.DataFrame, events: list,
                   cluster_id: str, raft_epoch: int) -> list[MetadataEvent]:
    """Bucket 0's use of the BATCH_EPOCHS rows (`events` are `pdf`'s rows, in log order):
    each control record gets its batch's Raft epoch (a LeaderChange announces the leader
    of its epoch; control batches reach every bucket whole, so the core judges them from
    their records as `check` does), and each other batch whose epoch the core is to judge
    becomes a batch header, in log order: those whose epoch is not the highest before
    them (`raft_epoch`: the core's, then this call's), the only ones `check` judges."""
    control = entries["control"] != 0
    if control.any():
        epoch_of = dict(zip(entries["base"][control].tolist(), entries["epoch"][control].tolist()))
        for i in np.flatnonzero((pdf["kind"] == KIND_CONTROL).to_numpy()):
            e = events[i]
            if isinstance(e, MetadataEvent) and not is_snapshot_source(e.source):
                e.leader_epoch = epoch_of.get(e.batch_base_offset, -1)
    epoch = entries["epoch"].astype(np.int64)
    highest_before = np.maximum.accumulate(np.concatenate(([raft_epoch], epoch)))[:-1]
    judged = np.flatnonzero(~control & (epoch >= 0) & (epoch != highest_before))
    return [MetadataEvent(cluster_id, str(sources[i]), -1, NO_OFFSET, int(entries["base"][i]),
                          int(entries["last"][i]), int(entries["timestamp_ms"][i]), KIND_BATCH_HEADER,
                          BATCH_HEADER, 0, {}, -1, None, int(epoch[i])) for i in judged]


def _epoch_entries(epochs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The batches the BATCH_EPOCHS rows list (EPOCH_ENTRY), by base offset, each once, and
    the log file of each."""
    if epochs.empty:
        return np.empty(0, dtype=event_rows.EPOCH_ENTRY), np.empty(0, dtype=object)
    parts = [event_rows.batch_epochs(r) for r in epochs["raw"]]
    entries = np.concatenate(parts)
    sources = np.repeat(epochs["source"].to_numpy(), [len(p) for p in parts])
    order = np.argsort(entries["base"], kind="stable")
    entries, sources = entries[order], sources[order]
    first = np.ones(len(entries), dtype=bool)  # a batch sent twice counts once
    first[1:] = entries["base"][1:] != entries["base"][:-1]
    return entries[first], sources[first]


def _input_holes(gate, entries: np.ndarray, sources: np.ndarray, pdf: pd.DataFrame, events: list,
                 cluster_id: str) -> list[Quarantined]:
    """Bucket 0's check that the input goes on where it stopped (the shipper's topic above
    all, whose holes no reader reports): a quarantine row (`logdir.skipped`) per hole
    between the batches the BATCH_EPOCHS rows list (`entries`, `sources`), the offsets
    readers said they did not read (a hole, a log's missing start), the records they set
    aside and the snapshots read (a snapshot stands for the offsets before its end).
    `events` are `pdf`'s rows: the snapshots read are found by its columns."""
    extra = []
    quarantined = [i for i, e in enumerate(events) if e.__class__ is Quarantined]
    for i in quarantined:  # offsets a reader said it did not read, or a record it set aside
        q = events[i]
        if (unread := unread_offsets(q.reason)) is not None:
            extra.append(unread)
        elif q.offset >= 0:
            extra.append((q.offset, q.offset))
    if len(pdf):
        read = pdf["offset"].to_numpy() >= 0
        read[quarantined] = False
        for source in pd.unique(pdf["source"].to_numpy()[read]).tolist():
            if is_snapshot_source(source) and (m := SNAPSHOT_RE.match(source)):
                extra.append((-1, int(m.group(1)) - 1))
    spans = np.concatenate((np.column_stack((entries["base"], entries["last"])),
                            np.asarray(extra, dtype=np.int64).reshape(-1, 2)))
    holes = gate.follow_input(spans)
    if not holes:
        return []
    file_at = dict(zip(entries["base"].tolist(), sources.tolist()))  # the batch after each hole's
    return [Quarantined(cluster_id, str(file_at.get(last + 1, "")), -1, skipped(first, last + 1), b"", first)
            for first, last in holes]


def _with_headers(ordered: list, headers: list[MetadataEvent]) -> list:
    """`ordered` with each batch header (in log order) right before the first log record at
    or after its base offset (a snapshot's records, before the log's, never follow one)."""
    out, i, n = [], 0, len(headers)
    for e in ordered:
        if i < n and isinstance(e, MetadataEvent) and e.offset >= 0 and e.kind in _LOG_KINDS \
                and not is_snapshot_source(e.source):
            while i < n and headers[i].batch_base_offset <= e.offset:
                out.append(headers[i])
                i += 1
        out.append(e)
    out.extend(headers[i:])
    return out


def _packed_noops(packed: pd.DataFrame, pdf: pd.DataFrame) -> tuple[list[int], int, int]:
    """(offsets of the packed NoOps new in this call, copies among them, NoOps packed):
    a packed offset seen twice, or also sent as a NoOp row, is a copy, as
    `_drop_repeats` counts copies of rows."""
    if packed.empty:
        return [], 0, 0
    offsets = np.concatenate([event_rows.noop_offsets(r) for r in packed["raw"]])
    unique = np.unique(offsets)
    rows = pdf[(pdf["type"] == "NO_OP_RECORD").to_numpy() & (pdf["offset"].to_numpy() >= 0)
               & ~_from_snapshot(pdf)]
    fresh = unique[~np.isin(unique, rows["offset"].to_numpy())]
    return fresh.tolist(), len(offsets) - len(fresh), len(offsets)


def is_side_input(item) -> bool:
    return isinstance(item, MetadataEvent) and item.type in CLUSTER_SCOPED_SIDE_TYPES


def catalog_files(rules_dir: str | None = None) -> tuple[tuple[str, str], ...]:
    from kraft_audit.core.rules.catalog import read_rule_files

    return tuple(read_rule_files(rules_dir).items())


_CATALOGS: dict[tuple, Any] = {}


def _catalog(rule_files: tuple[tuple[str, str], ...]):
    """The rule catalog, built once per worker process."""
    if rule_files not in _CATALOGS:
        from kraft_audit.core.rules.catalog import catalog_from_files

        _CATALOGS[rule_files] = catalog_from_files(dict(rule_files))
    return _CATALOGS[rule_files]


def core_settings(audit: OperatorConfig) -> dict[str, Any]:
    # A bucket judges only its partitions: it cannot call a replica of a
    # partition it never saw stray. The job takes what it reads as committed: its rows carry
    # no Raft epoch and no commit claim yet (the readers' positions by offset and epoch, and
    # DescribeQuorum claims, come first), so holding a quorum's tail would hold it for ever;
    # the gate still reports holes and rewrites of what was audited (core/raft.py).
    return {**audit.core_settings, "sees_all_partitions": audit.buckets == 1, "assume_committed": True}


def new_auditor(audit: OperatorConfig, bucket: int):
    from kraft_audit.core.audit import Auditor

    return Auditor(_catalog(audit.rule_files), core_settings(audit), emit_cluster_findings=(bucket == 0))


@dataclass
class StoredShards:
    """A bucket's shards as its state row names them (version 5): the manifest, and
    every shard's bytes as of that row (the objects, to tell which a call wrote)."""

    manifest: dict
    blobs: dict


# (cluster, bucket) -> (operator config, token of the state row written, auditor, its
# StoredShards or None): this worker's live auditors, so a micro-batch need not rebuild its bucket.
_LIVE: dict[tuple[str, int], tuple[OperatorConfig, str, Any, StoredShards | None]] = {}


def _shard_folder(audit: OperatorConfig, cluster_id: str, bucket: int) -> Path:
    return shard_files.bucket_dir(audit.shard_dir, cluster_id, bucket)


def resume_bucket(audit: OperatorConfig, cluster_id: str, bucket: int, state_row: tuple | None):
    """(auditor, held side inputs, rebuilt, stored shards) from the group's state row: the
    live auditor when it wrote that row, else rebuilt from it (rebuilt True). The entry leaves
    the cache until `save`, so a call that fails half-way leaves no half-applied auditor."""
    live = _LIVE.pop((cluster_id, bucket), None)
    if state_row is None:
        return new_auditor(audit, bucket), [], False, None
    version = state_row[0]
    if version not in READABLE_VERSIONS:
        raise StoredFormatError(f"the checkpoint holds streaming state version {version}; this "
                                f"kraft-audit reads versions {IN_ROW_VERSION} and {STATE_VERSION} only: "
                                "start with a new checkpoint location (the job re-reads the log from its start)")
    token, meta, topology, shards, held = state_row[1:6]
    held = [event_from_plain(e) for e in pickle.loads(bytes(held))] if held else []
    stored = None
    if version == STATE_VERSION:
        if audit.shard_dir is None:
            raise StoredFormatError("the state row names shard files but no shard_dir is set")
        folder = _shard_folder(audit, cluster_id, bucket)
        manifest = shard_files.unpack(shards)
        # the row is committed (Spark runs a call on it only then): what it dropped can go
        shard_files.collect_garbage(folder, manifest)
    if live is not None and live[0] == audit and live[1] == token:
        return live[2], held, False, live[3]
    from kraft_audit.core.audit import Auditor
    from kraft_audit.core.snapshot import Snapshot

    if version == STATE_VERSION:
        blobs = shard_files.load(folder, manifest)
        stored = StoredShards(manifest, {t: dict(b) for t, b in blobs.items()})
        topology = blobs.pop(shard_files.TOPOLOGY)[0]
    else:
        blobs = pickle.loads(bytes(shards))
    snap = Snapshot(bytes(meta), bytes(topology), blobs)
    return Auditor.from_snapshot(snap, _catalog(audit.rule_files), core_settings(audit)), held, True, stored


def save(audit: OperatorConfig, cluster_id: str, bucket: int, auditor, held: list, state,
         stored: StoredShards | None) -> int:
    """Write the state row and keep the auditor live; returns the state's size in bytes
    (the shard files' live bytes included). A call that changed nothing (a timeout with
    nothing to settle, a bucket that got only the log-tail marker) leaves the row as it
    is: no state store write for it."""
    snap = auditor.snapshot()
    held_blob = pickle.dumps([event_to_plain(e) for e in held], protocol=pickle.HIGHEST_PROTOCOL) \
        if held else b""
    old = state.get if state.exists else None
    token = uuid.uuid4().hex
    if audit.shard_dir is None:
        version, topology = IN_ROW_VERSION, snap.topology
        shards = pickle.dumps(snap.shards, protocol=pickle.HIGHEST_PROTOCOL)
        file_bytes = 0
    else:  # what this call wrote goes to a new file (all of it after a version 4 row)
        version, topology = STATE_VERSION, b""  # the topology too: up to ~1 MB a bucket at 1M
        blobs = {**snap.shards, shard_files.TOPOLOGY: {0: snap.topology}}
        before = stored.manifest if stored else shard_files.empty_manifest()
        manifest = shard_files.save(_shard_folder(audit, cluster_id, bucket), token, before,
                                    blobs, stored.blobs if stored else None)
        if manifest is None and old is not None and old[0] == STATE_VERSION:
            shards = bytes(old[4])  # nothing written: the row's own bytes
        else:
            shards = shard_files.pack(manifest or before)
        stored = StoredShards(manifest or before, {t: dict(b) for t, b in blobs.items()})
        file_bytes = sum(len(b) for t in blobs.values() for b in t.values())
    if old is not None and old[0] == version and old[2] == snap.meta and old[3] == topology \
            and old[4] == shards and (old[5] or b"") == held_blob:
        token = old[1]  # the row already holds this auditor
    else:
        state.update((version, token, snap.meta, topology, shards, held_blob))
    _LIVE[(cluster_id, bucket)] = (audit, token, auditor, stored)
    return len(snap.meta) + len(topology) + len(shards) + file_bytes + len(held_blob)


def _quarantine_row(q: Any) -> QuarantineRow:
    return QuarantineRow.from_quarantined(q) if isinstance(q, Quarantined) else q


def output_rows(out) -> Iterator[tuple[str, Any]]:
    """(output, row) for every row of one AuditOutput: typed row objects
    (the Arrow outputs are converted column by column)."""
    for v in out.violations:
        yield T_VIOLATIONS, v
    for c in out.conditions:
        yield T_CONDITIONS, c
    for p in out.partitions:
        yield T_PARTITIONS, p
    for b in out.brokers:
        yield T_BROKERS, b
    for q in out.quarantined:
        yield T_QUARANTINE, _quarantine_row(q)


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def encode_output(rows: Iterable[tuple[str, Any]]) -> pd.DataFrame:
    """Output rows → the OUTPUT_DDL frame: per output, chunks of Arrow IPC
    (ARROW_TABLES) or of pickled lists of dicts (the rest)."""
    by_table: dict[str, list] = {}
    for table, row in rows:
        by_table.setdefault(table, []).append(row)
    frame = []
    for table, items in by_table.items():
        if table in ARROW_TABLES:
            arrow = output_to_arrow(table, items)
            frame.extend((table, part, _ipc(arrow.slice(i, OUTPUT_CHUNK)))
                         for part, i in enumerate(range(0, len(items), OUTPUT_CHUNK)))
        else:
            items = [row_dict(r) for r in items]
            frame.extend((table, part, pickle.dumps(items[i:i + OUTPUT_CHUNK],
                                                    protocol=pickle.HIGHEST_PROTOCOL))
                         for part, i in enumerate(range(0, len(items), OUTPUT_CHUNK)))
    return pd.DataFrame(frame, columns=OUTPUT_COLUMNS)


def decode_output_arrow(table_names: Iterable[str], blobs: Iterable[bytes]
                        ) -> dict[str, pa.Table | list[dict]]:
    """The OUTPUT_DDL columns back by table: a pyarrow Table for ARROW_TABLES,
    a list of row dicts for the others."""
    batches: dict[str, list[pa.Table]] = {}
    by_table: dict[str, Any] = {}
    for table, blob in zip(table_names, blobs):
        if table in ARROW_TABLES:
            batches.setdefault(table, []).append(pa.ipc.open_stream(blob).read_all())
        else:
            by_table.setdefault(table, []).extend(pickle.loads(blob))
    for table, parts in batches.items():
        by_table[table] = parts[0] if len(parts) == 1 else pa.concat_tables(parts)
    return by_table


def audit_group(key: tuple, pdfs: Iterable[pd.DataFrame], state, audit: OperatorConfig
                ) -> Iterator[pd.DataFrame]:
    """applyInPandasWithState function: one (cluster, bucket) group."""
    # The cyclic collector paused for the call, as Auditor.process pauses it: a call's
    # events, rows and frames (hundreds of thousands of objects, dead when it returns)
    # otherwise reach the oldest generation and set off full passes over every live
    # auditor this worker keeps (most of the call's time outside the core on a 100k
    # partition log). The worker goes on with the collector as it found it.
    with collector_paused():
        frame = _audit_call(key, pdfs, state, audit)
    yield frame


def _audit_call(key: tuple, pdfs: Iterable[pd.DataFrame], state, audit: OperatorConfig) -> pd.DataFrame:
    started = time.perf_counter()
    cluster_id, bucket = str(key[0]), int(key[1])
    auditor, held, rebuilt, stored = resume_bucket(audit, cluster_id, bucket,
                                                   state.get if state.exists else None)
    timed_out = bool(state.hasTimedOut)
    pdf, packed, epochs = _split_packed(_frames(pdfs))
    pdf, repeats = _drop_repeats(_log_order(pdf))
    packed_fresh, packed_repeats, packed_in = _packed_noops(packed, pdf)
    pdf, dropped_noops = _thin_noops(pdf)
    dropped_noops += packed_fresh
    events = events_from_pandas(pdf)
    # the Raft epochs: bucket 0 judges them (other buckets get no such rows from Spark)
    headers = []
    if bucket == 0:
        entries, sources = _epoch_entries(epochs)
        if len(entries):
            headers = _epoch_headers(entries, sources, pdf, events, cluster_id, auditor.raft_epoch)
        events = _input_holes(auditor.gate, entries, sources, pdf, events, cluster_id) + events
    elif any(isinstance(e, Quarantined) for e in events):
        # A record value that does not decode here: a partition record's bucket reports it,
        # a shared record's copies leave that to bucket 0 (as the source's quarantine rows).
        scoped = _partition_scoped_rows(pdf)
        bad_own = sum(1 for e, s in zip(events, scoped) if s and isinstance(e, Quarantined))
        events = [e for e, s in zip(events, scoped) if s or not isinstance(e, Quarantined)]
    else:
        bad_own = 0
    log_caught_up = any(getattr(e, "kind", None) == event_rows.KIND_MARKER for e in events)
    events = [e for e in events if getattr(e, "kind", None) != event_rows.KIND_MARKER]
    records = [e for e in events if not is_side_input(e)]
    side = [e for e in events if is_side_input(e)]
    held_before = len(held)
    # Held side inputs go when the log has reached its end (nothing older can
    # still come) or when the group has been idle for the timeout.
    ordered, held = interleave(records, held + side, auditor.clock_ms,
                               release_all=timed_out or log_caught_up)
    if headers:  # not records: counted nowhere below
        ordered = _with_headers(ordered, headers)
    last_applied_before = auditor.last_offset
    if last_applied_before < 0 and dropped_noops and not auditor.log_start_known:
        # the input's first record may be a NoOp dropped above: the log starts there
        first = min((e for e in records if isinstance(e, MetadataEvent) and e.offset >= 0),
                    key=lambda e: e.offset, default=None)
        if first is None or min(dropped_noops) < first.offset:
            auditor.note_log_start(min(dropped_noops), first.source if first else "")
    out = auditor.process(ordered)
    if timed_out:
        # No input for a while: settle what waits for input that is not coming.
        late = auditor.expire(int(time.time() * 1000))
        for name in ("violations", "conditions", "partitions", "brokers", "quarantined"):
            getattr(out, name).extend(getattr(late, name))

    rows: list[tuple[str, Any]] = list(output_rows(out))
    state_bytes = save(audit, cluster_id, bucket, auditor, held, state, stored)
    if audit.timeout_ms > 0:
        state.setTimeoutDuration(audit.timeout_ms)

    # What this bucket alone accounts for, so sums over buckets count each
    # input once: its own partition records; bucket 0 also the shared ones and
    # the side inputs (taken in when they leave the hold: one held is not yet read).
    def owns(e) -> bool:
        return bucket == 0 or (isinstance(e, MetadataEvent)
                               and is_partition_scoped(e.type, e.topic_id, e.partition_id))

    owned_records = [e for e in records if isinstance(e, MetadataEvent) and owns(e)]
    unreadable = sum(1 for e in records if isinstance(e, Quarantined)) if bucket == 0 else bad_own
    repeated = packed_repeats + sum(1 for t, tid, pid in zip(repeats["type"], repeats["topic_id"],
                                                             repeats["partition_id"])
                                    if bucket == 0 or is_partition_scoped(t, tid, pid))
    side_taken = len(side) + held_before - len(held) if bucket == 0 else 0
    # Quarantine rows: outside bucket 0 the core reports only its own partition records.
    quarantined = len(out.quarantined)
    if bucket == 0:  # NoOps dropped before the core are counted as it would have
        noop_duplicates = sum(1 for o in dropped_noops if o <= last_applied_before)
        applied = out.applied + len(dropped_noops) - noop_duplicates
        duplicates = out.duplicates + noop_duplicates + repeated
    else:  # the core's counts include the copies of shared records: count the bucket's own
        duplicates = sum(1 for e in owned_records if 0 <= e.offset <= last_applied_before)
        applied = len(owned_records) + bad_own - duplicates - quarantined
        duplicates += repeated
    offsets = [e.offset for e in owned_records if e.offset >= 0] + dropped_noops
    rows.append((T_GAUGES, BucketGauges.of(auditor.gauges(cluster_id), bucket)))
    rows.append((T_STATS, GroupStats(
        cluster_id=cluster_id,
        bucket=bucket,
        timed_out=timed_out,
        log_caught_up=log_caught_up,
        events_in=len(events) + len(repeats) + packed_in,
        records=len(owned_records) + len(dropped_noops) + repeated,
        side_inputs=side_taken,
        unreadable=unreadable,
        quarantined=quarantined,
        applied=applied,
        duplicates=duplicates,
        held=len(held),
        violations=len(out.violations),
        min_offset=min(offsets) if offsets else None,
        max_offset=max(offsets) if offsets else None,
        max_timestamp_ms=max((e.timestamp_ms for e in owned_records), default=None),
        state_bytes=state_bytes,
        rebuilt=rebuilt,
        shards_loaded=auditor.state.partitions.loaded_shards,
        duration_ms=round((time.perf_counter() - started) * 1000, 3),
    )))
    return encode_output(rows)
