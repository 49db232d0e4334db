"""The Delta tables kraft-audit writes: their Arrow schemas, how each is
written, and the conversion of the core's row dicts into Arrow.

Columns mirror the dataclasses of `kraft_audit.outputs` (one table per row
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
        _f("unclean_recovery_finished_total", pa.int64()),
        _f("unclean_elections_total", pa.int64()),
        _f("elr_elections_total", pa.int64()),
        _f("electable_leaders", pa.map_(pa.string(), pa.int64())),  # |ISR|+|ELR| -> partitions
        _f("last_offset", pa.int64()),
        _f("last_timestamp_ms", pa.int64()),
        _BATCH_ID,
    ]
)


@dataclass(frozen=True)
class TableSpec:
    """How one table is laid out and written.

    Merge tables name the key that identifies a row, the column that orders
    two versions of it (the higher wins, also among duplicates inside one
    batch; without one the later row wins), and the SQL condition under which
    an incoming row `s` replaces the stored row `t` (without one it always
    does).
    """

    name: str
    schema: pa.Schema
    mode: str  # APPEND | MERGE
    partition_by: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    order_by: str | None = None
    replace_when: str | None = None


TABLES: dict[str, TableSpec] = {
    spec.name: spec
    for spec in [
        TableSpec("violations", VIOLATIONS, APPEND, partition_by=("cluster_id", "date")),
        # An interval is emitted open, then again closed: only the close updates it,
        # and a closed interval is never reopened by a replayed open row.
        TableSpec(
            "conditions",
            CONDITIONS,
            MERGE,
            keys=("interval_id",),
            order_by="end_offset",
            replace_when="s.end_offset IS NOT NULL AND t.end_offset IS NULL",
        ),
        TableSpec(
            "partition_state",
            PARTITION_STATE,
            MERGE,
            keys=("cluster_id", "topic_id", "partition"),
            order_by="offset",
            replace_when="s.`offset` >= t.`offset`",
        ),
        TableSpec(
            "partition_history", PARTITION_HISTORY, APPEND, partition_by=("cluster_id", "date")
        ),
        TableSpec(
            "brokers",
            BROKERS,
            MERGE,
            keys=("cluster_id", "broker_id"),
            order_by="offset",
            replace_when="s.`offset` >= t.`offset`",
        ),
        TableSpec("quarantine", QUARANTINE, APPEND),
        TableSpec("progress", PROGRESS, APPEND),
        # The latest report of a bucket always wins: the sink's transaction
        # check already keeps replayed batches out, and batch ids restart with
        # a new checkpoint, so they cannot order rows across runs.
        TableSpec("gauges", GAUGES, MERGE, keys=("cluster_id", "bucket")),
    ]
}


def rows_to_arrow(table: str, rows: list[dict]) -> pa.Table:
    """The rows of `table` as an Arrow table of its schema.

    Missing nullable columns become null, keys the schema does not know are
    ignored, `date` is derived from `timestamp_ms`; a row without a value for
    a key column is an error (it would be unfindable in the table).
    """
    spec = TABLES[table]
    if "date" in spec.schema.names:
        rows = [{**row, "date": _utc_day(row.get("timestamp_ms"))} for row in rows]
    arrow = pa.Table.from_pylist(rows, schema=spec.schema)
    for field in spec.schema:
        if not field.nullable and arrow.column(field.name).null_count:
            raise ValueError(
                f"table {table}: column {field.name} is null in "
                f"{arrow.column(field.name).null_count} of {len(rows)} rows"
            )
    return arrow


def empty(table: str) -> pa.Table:
    return TABLES[table].schema.empty_table()


def dedupe_latest(table: str, rows: list[dict]) -> list[dict]:
    """One row per key of a merge table: the one with the highest `order_by`
    (null lowest; on ties the later row), as a MERGE accepts one source row per
    target row."""
    spec = TABLES[table]
    latest: dict[tuple, dict] = {}
    for row in rows:
        key = tuple(row.get(k) for k in spec.keys)
        kept = latest.get(key)
        if kept is None or _rank(row, spec.order_by) >= _rank(kept, spec.order_by):
            latest[key] = row
    return list(latest.values())


def _rank(row: dict, column: str | None) -> tuple:
    value = row.get(column) if column else None
    return (value is not None, value if value is not None else 0)


_MS_PER_DAY = 86_400_000


def _utc_day(timestamp_ms: int | None) -> int | None:
    """Days since the epoch (Arrow date32) of a millisecond timestamp, in UTC."""
    return None if timestamp_ms is None else timestamp_ms // _MS_PER_DAY
