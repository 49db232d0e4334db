"""The Delta tables kraft-audit writes: their Arrow schemas, how each is
written, and the conversion of the core's row dicts into Arrow.

Columns mirror the dataclasses of `kraft_audit.core.rows` (one table per row
type) plus what the sink adds: `batch_id` (the micro-batch that wrote the row)
and a `date` partition column derived from the record time where analysts
filter by day. docs/tables.md describes every table for analysts.

This module is plain pyarrow: no Spark, no Delta. `sinks.py` writes what it
describes.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

APPEND = "append"
MERGE = "merge"


def _f(name: str, type_: pa.DataType, nullable: bool = True) -> pa.Field:
    return pa.field(name, type_, nullable=nullable)


def _key(name: str, type_: pa.DataType) -> pa.Field:
    """A column that identifies the row or partitions the table: never null."""
    return pa.field(name, type_, nullable=False)


_INT_LIST = pa.list_(pa.int32())
_BATCH_ID = _key("batch_id", pa.int64())
_DATE = _key("date", pa.date32())  # UTC day of timestamp_ms

VIOLATIONS = pa.schema(
    [
        _key("violation_id", pa.string()),
        _key("rule_id", pa.string()),
        _f("kip", pa.string()),
        _f("severity", pa.string()),
        _key("cluster_id", pa.string()),
        _f("topic", pa.string()),
        _f("topic_id", pa.string()),
        _f("partition", pa.int32()),
        _f("broker_id", pa.int32()),
        _key("offset", pa.int64()),
        _key("timestamp_ms", pa.int64()),
        _f("message", pa.string()),
        _f("evidence", pa.string()),  # JSON
        _BATCH_ID,
        _DATE,
    ]
)

CONDITIONS = pa.schema(
    [
        _key("interval_id", pa.string()),
        _key("condition", pa.string()),
        _key("cluster_id", pa.string()),
        _f("topic", pa.string()),
        _key("topic_id", pa.string()),
        _key("partition", pa.int32()),
        _key("start_offset", pa.int64()),
        _key("start_ms", pa.int64()),
        _f("end_offset", pa.int64()),  # null while the interval is open
        _f("end_ms", pa.int64()),
        _BATCH_ID,
    ]
)

_PARTITION_COLUMNS = [
    _key("cluster_id", pa.string()),
    _f("topic", pa.string()),
    _key("topic_id", pa.string()),
    _key("partition", pa.int32()),
    _f("replicas", _INT_LIST),
    _f("isr", _INT_LIST),
    _f("elr", _INT_LIST),
    _f("last_known_elr", _INT_LIST),
    _f("adding_replicas", _INT_LIST),
    _f("removing_replicas", _INT_LIST),
    _f("leader", pa.int32()),
    _f("leader_epoch", pa.int32()),
    _f("partition_epoch", pa.int32()),
    _f("leader_recovery_state", pa.int8()),  # 0 RECOVERED, 1 RECOVERING
    _f("effective_min_isr", pa.int32()),
    _f("deleted", pa.bool_()),
    _key("offset", pa.int64()),
    _key("timestamp_ms", pa.int64()),
    _f("record_type", pa.string()),
    _BATCH_ID,
]
PARTITION_STATE = pa.schema(_PARTITION_COLUMNS)
PARTITION_HISTORY = pa.schema(_PARTITION_COLUMNS + [_DATE])

BROKERS = pa.schema(
    [
        _key("cluster_id", pa.string()),
        _key("broker_id", pa.int32()),
        _f("broker_epoch", pa.int64()),
        _f("incarnation_id", pa.string()),
        _f("registered", pa.bool_()),
        _f("fenced", pa.bool_()),
        _f("in_controlled_shutdown", pa.bool_()),
        _f("last_shutdown", pa.string()),  # "clean" | "unclean" | null
        _key("offset", pa.int64()),
        _key("timestamp_ms", pa.int64()),
        _BATCH_ID,
    ]
)

QUARANTINE = pa.schema(
    [
        _key("cluster_id", pa.string()),
        _key("source", pa.string()),
        _key("position", pa.int64()),
        _f("offset", pa.int64()),  # -1 when unknown
        _key("reason", pa.string()),
        _f("raw", pa.binary()),
        _BATCH_ID,
        _key("ingested_ms", pa.int64()),  # wall-clock time the sink wrote it
    ]
)

# One row per micro-batch; the per-cluster figures are nested so the row stays
# one per batch however many clusters one job audits.
PROGRESS_CLUSTER = pa.struct(
    [
        # NOT NULL for delta-rs; Spark's connector cannot enforce it inside an
        # array and keeps it unenforced (spark/session.py DELTA_SESSION_CONF)
        _key("cluster_id", pa.string()),
        _f("records", pa.int64()),
        _f("min_offset", pa.int64()),
        _f("max_offset", pa.int64()),
        _f("last_timestamp_ms", pa.int64()),  # time of the newest record applied
        _f("newest_offset", pa.int64()),  # newest offset in the log when the batch was planned
        _f("lag_records", pa.int64()),  # newest_offset - max_offset
        _f("lag_seconds", pa.float64()),  # newest record time - last applied record time
    ]
)
PROGRESS = pa.schema(
    [
        _BATCH_ID,
        _key("app_id", pa.string()),  # the writer (streaming query) the batch id belongs to
        _key("started_ms", pa.int64()),
        _f("records", pa.int64()),  # events read
        _f("applied", pa.int64()),  # events applied to state
        _f("duplicates", pa.int64()),  # events dropped as already applied (replays)
        _f("quarantined", pa.int64()),
        _f("violations", pa.int64()),
        _f("duration_seconds", pa.float64()),  # the whole micro-batch
        _f("process_seconds", pa.float64()),  # the core (decode, replay, rules)
        _f("write_seconds", pa.float64()),  # the Delta writes of the other tables (set by the sink)
        _f("clusters", pa.list_(PROGRESS_CLUSTER)),
    ]
)

GAUGES = pa.schema(
    [
        _key("cluster_id", pa.string()),
        _key("bucket", pa.int32()),
        _f("partitions", pa.int64()),
        _f("under_min_isr", pa.int64()),
        _f("leaderless", pa.int64()),
        _f("unclean_recovery", pa.int64()),
        _f("manual_election_required", pa.int64()),
        _f("elr_in_use", pa.int64()),
        _f("reassignment_stalled", pa.int64()),
        _f("unclean_recovery_finished_total", pa.int64()),
        _f("unclean_elections_total", pa.int64()),
        _f("elr_elections_total", pa.int64()),
        _f("electable_leaders", pa.map_(pa.string(), pa.int64())),  # |ISR|+|ELR| -> partitions
        _f("last_offset", pa.int64()),
        _f("last_timestamp_ms", pa.int64()),
        _f("under_replicated", pa.int64()),
        _f("topics_leaderless", pa.map_(pa.string(), pa.int64())),  # topic -> partitions
        _f("topics_under_min_isr", pa.map_(pa.string(), pa.int64())),
        # cluster-wide: the same in every bucket of a cluster (not summed)
        _f("brokers_active", pa.int64()),
        _f("brokers_fenced", pa.int64()),
        _f("brokers_in_controlled_shutdown", pa.int64()),
        _f("fenced_broker_ids", pa.list_(pa.int32())),
        _f("active_controller", pa.int32()),
        _f("metadata_version", pa.int32()),
        _f("features", pa.map_(pa.string(), pa.int32())),
        _f("min_insync_replicas", pa.int32()),
        _f("min_isr_source", pa.string()),  # log | setting | assumed
        _f("history_from_offset", pa.int64()),  # a log starting mid-history: its first offset; -1
        _BATCH_ID,
    ]
)


@dataclass(frozen=True)
class TableSpec:
    """Everything about one Delta table: its name, schema, where its rows come
    from, and how both sink backends (delta-rs and Spark's Delta connector)
    create and write it. A new table is a schema and a TableSpec here, the
    operator emitting its rows, and its entry in docs/tables.md.

    `source` is the operator output table that feeds it (spark/operator.py
    T_*; one output may feed several tables), None for tables the job writes
    itself (progress).

    Merge tables name the key that identifies a row, the column that orders
    two versions of it (the higher wins, also among duplicates inside one
    batch; without one the later row wins), and the SQL condition under which
    an incoming row `s` replaces the stored row `t` (without one it always
    does).
    """

    name: str
    schema: pa.Schema
    mode: str  # APPEND | MERGE
    source: str | None = None
    partition_by: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    order_by: str | None = None
    replace_when: str | None = None


TABLES: dict[str, TableSpec] = {
    spec.name: spec
    for spec in [
        TableSpec("violations", VIOLATIONS, APPEND, "violations", partition_by=("cluster_id", "date")),
        # An interval is emitted open, then again closed: only the close updates it,
        # and a closed interval is never reopened by a replayed open row.
        TableSpec(
            "conditions",
            CONDITIONS,
            MERGE,
            "conditions",
            keys=("interval_id",),
            order_by="end_offset",
            replace_when="s.end_offset IS NOT NULL AND t.end_offset IS NULL",
        ),
        TableSpec(
            "partition_state",
            PARTITION_STATE,
            MERGE,
            "partitions",
            keys=("cluster_id", "topic_id", "partition"),
            order_by="offset",
            replace_when="s.`offset` >= t.`offset`",
        ),
        TableSpec(
            "partition_history",
            PARTITION_HISTORY,
            APPEND,
            "partitions",
            partition_by=("cluster_id", "date"),
        ),
        TableSpec(
            "brokers",
            BROKERS,
            MERGE,
            "brokers",
            keys=("cluster_id", "broker_id"),
            order_by="offset",
            replace_when="s.`offset` >= t.`offset`",
        ),
        TableSpec("quarantine", QUARANTINE, APPEND, "quarantine"),
        TableSpec("progress", PROGRESS, APPEND),
        # The latest report of a bucket always wins: the sink's transaction
        # check already keeps replayed batches out, and batch ids restart with
        # a new checkpoint, so they cannot order rows across runs.
        TableSpec("gauges", GAUGES, MERGE, "gauges", keys=("cluster_id", "bucket")),
    ]
}


def routes() -> dict[str, tuple[str, ...]]:
    """Operator output table -> the Delta tables it feeds."""
    out: dict[str, tuple[str, ...]] = {}
    for spec in TABLES.values():
        if spec.source is not None:
            out[spec.source] = out.get(spec.source, ()) + (spec.name,)
    return out


_MS_PER_DAY = 86_400_000


def _utc_day(timestamp_ms: int | None) -> int | None:
    """Days since the epoch (Arrow date32) of a millisecond timestamp, in UTC."""
    return None if timestamp_ms is None else timestamp_ms // _MS_PER_DAY


# ------------------------------------------------------- Arrow from the start
#
# The streaming operator builds each table's core columns as Arrow inside the
# Spark workers (in parallel), so the driver only concatenates Arrow tables and
# adds what the sink owns. Converting row dicts in the driver cost about 5 s of
# every 250k-record micro-batch (bench/bench_streaming.py).

# Columns the sink adds (or derives) at write time: never part of a core row.
SINK_COLUMNS = ("batch_id", "date", "app_id", "ingested_ms")


def core_schema(table: str) -> pa.Schema:
    """The columns of `table` that the core's rows carry (no sink columns)."""
    schema = TABLES[table].schema
    return pa.schema([f for f in schema if f.name not in SINK_COLUMNS])


def core_to_arrow(table: str, rows: list) -> pa.Table:
    """Core rows (dataclass objects or dicts) as an Arrow table of
    `core_schema(table)`, built column by column (several times faster than
    from_pylist over dicts). Unknown attributes are ignored, missing ones are null."""
    schema = core_schema(table)
    if rows and isinstance(rows[0], dict):
        columns = [[r.get(f.name) for r in rows] for f in schema]
    else:
        columns = [[getattr(r, f.name, None) for r in rows] for f in schema]
    return pa.Table.from_arrays(
        [pa.array(values, type=f.type) for values, f in zip(columns, schema)], schema=schema
    )


def stamp_arrow(table: str, data: pa.Table, batch_id: int, app_id: str,
                now_ms: int | None = None) -> pa.Table:
    """Core columns (any superset or subset) → the full schema of `table`: the
    sink's columns added (batch_id; date from timestamp_ms; app_id; ingested_ms
    where null), missing nullable columns null. A null in a non-nullable
    column (a key: the row would be unfindable) is an error."""
    import time

    import numpy as np
    import pyarrow.compute as pc

    spec = TABLES[table]
    n = data.num_rows
    have = set(data.column_names)
    arrays = []
    for field in spec.schema:
        name = field.name
        if name == "batch_id":
            column = pa.array(np.full(n, batch_id, dtype=np.int64))
        elif name == "app_id" and name not in have:
            column = pa.array([app_id] * n, type=pa.string())
        elif name == "date" and name not in have:
            ts = data.column("timestamp_ms") if "timestamp_ms" in have else pa.nulls(n, pa.int64())
            if ts.null_count:
                column = pa.array([_utc_day(v) for v in ts.to_pylist()], type=pa.int32())
            else:
                days = np.floor_divide(ts.to_numpy(), _MS_PER_DAY).astype(np.int32)
                column = pa.array(days)
            column = column.cast(pa.date32())
        elif name == "ingested_ms":
            stamp = int(time.time() * 1000) if now_ms is None else now_ms
            column = (pc.fill_null(data.column(name).cast(pa.int64()), stamp) if name in have
                      else pa.array(np.full(n, stamp, dtype=np.int64)))
        elif name in have:
            column = data.column(name)
            if column.type != field.type:
                column = column.cast(field.type)
        else:
            column = pa.nulls(n, field.type)
        if not field.nullable and column.null_count:
            raise ValueError(
                f"table {table}: column {name} is null in {column.null_count} of {n} rows"
            )
        arrays.append(column)
    return pa.Table.from_arrays(arrays, schema=spec.schema)


def dedupe_latest_arrow(table: str, data: pa.Table) -> pa.Table:
    """One row per key of a merge table, as a MERGE accepts one source row per
    target row: the one with the highest `order_by` (null lowest; on ties the
    later row), in input order."""
    import numpy as np
    import pyarrow.compute as pc

    spec = TABLES[table]
    if data.num_rows <= 1 or not spec.keys:
        return data
    ranked = data.select(list(spec.keys)).append_column(
        "__row", pa.array(np.arange(data.num_rows, dtype=np.int64)))
    sort_keys = []
    if spec.order_by:
        ranked = ranked.append_column("__order", data.column(spec.order_by))
        sort_keys.append(("__order", "descending", "at_end"))
    sort_keys.append(("__row", "descending", "at_end"))
    ranked = ranked.take(pc.sort_indices(ranked, sort_keys=sort_keys))
    first = ranked.group_by(list(spec.keys), use_threads=False).aggregate([("__row", "first")])
    keep = pc.sort_indices(first.column("__row_first"))
    return data.take(first.column("__row_first").take(keep))
