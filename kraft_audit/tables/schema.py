"""Each Delta table kraft-audit writes, declared once (`TABLES`), and what is
derived from the declaration: its Arrow schema, how both sink backends
(delta-rs and Spark's Delta connector) create and write it, the operator
output that feeds it (`OUTPUTS`), and the conversion of row objects into Arrow.

A table is a row dataclass (kraft_audit/core/rows.py, or tables/rows.py for
the shell's own rows) whose fields carry their column type, key flag and
description, plus what the sink adds (`SINK_COLUMNS`: `batch_id`, the
micro-batch that wrote the row; `date`, a partition column derived from the
record time; `app_id`; `ingested_ms`). A new table is a row type and a
`Table` here, and the operator emitting its rows; then `python -m
kraft_audit.tables.docs docs/tables.md` renders its section of the doc.

Plain pyarrow: no Spark, no Delta.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields

import pyarrow as pa

from kraft_audit.errors import MissingColumn  # noqa: F401 (exported here too)
from kraft_audit.core.rows import (BrokerRow, ConditionChange, PartitionRow, QuarantineRow,
                                   Violation)
from kraft_audit.tables.rows import BucketGauges, GroupStats, Progress

APPEND = "append"
MERGE = "merge"
# the app transaction in which a compaction records the source table's version it merged
COMPACTION_APP = "kraft-audit-compaction"

# ------------------------------------------------------------------ types

_SCALARS = {
    "string": pa.string(), "binary": pa.binary(), "bool": pa.bool_(), "int8": pa.int8(),
    "int32": pa.int32(), "int64": pa.int64(), "float64": pa.float64(), "date32": pa.date32(),
}
_LIST = re.compile(r"^list<(.+)>$")
_MAP = re.compile(r"^map<([^,]+),(.+)>$")


def arrow_type(declared) -> pa.DataType:
    """A column type as declared on a row field: a scalar name, `list<T>`,
    `map<K,V>`, or ("list", RowType) for a list of structs."""
    if isinstance(declared, tuple):
        kind, row_type = declared
        assert kind == "list", declared
        return pa.list_(pa.struct(row_fields(row_type)))
    if declared in _SCALARS:
        return _SCALARS[declared]
    if m := _LIST.match(declared):
        return pa.list_(arrow_type(m.group(1).strip()))
    if m := _MAP.match(declared):
        return pa.map_(arrow_type(m.group(1).strip()), arrow_type(m.group(2).strip()))
    raise ValueError(f"unknown column type {declared!r}")


def row_fields(row_type: type) -> list[pa.Field]:
    """The Arrow fields of a row dataclass, in field order (keys NOT NULL)."""
    out = []
    for f in fields(row_type):
        if "type" not in f.metadata:
            raise TypeError(f"{row_type.__name__}.{f.name} declares no column type (rows.column)")
        out.append(pa.field(f.name, arrow_type(f.metadata["type"]),
                            nullable=not f.metadata["key"]))
    return out


def column_docs(row_type: type) -> dict[str, str]:
    return {f.name: f.metadata.get("doc", "") for f in fields(row_type)}


# -------------------------------------------------------------- sink columns

@dataclass(frozen=True)
class SinkColumn:
    """A column the sink adds (or derives) at write time: never part of a row."""

    name: str
    type: pa.DataType
    doc: str

    @property
    def field(self) -> pa.Field:
        return pa.field(self.name, self.type, nullable=False)


SINK = {c.name: c for c in [
    SinkColumn("batch_id", pa.int64(), "the micro-batch that wrote (or last updated) the row"),
    SinkColumn("date", pa.date32(), "the UTC day of `timestamp_ms`, a partition column, so a "
               "filter on `date` skips whole days of files"),
    SinkColumn("app_id", pa.string(), "the writer (streaming query) the batch id belongs to"),
    SinkColumn("ingested_ms", pa.int64(), "wall-clock time the sink wrote it"),
]}
SINK_COLUMNS = tuple(SINK)


# ------------------------------------------------------------ operator outputs

@dataclass(frozen=True)
class Output:
    """One kind of row the streaming operator emits (spark/operator.py): its row
    type, and whether it travels as Arrow IPC of its columns (built in the
    workers) or as pickled row dicts (the small per-group rows)."""

    name: str
    row: type
    arrow: bool

    @property
    def schema(self) -> pa.Schema:
        return _OUTPUT_SCHEMAS[self.name]


OUTPUTS: dict[str, Output] = {o.name: o for o in [
    Output("violations", Violation, arrow=True),
    Output("conditions", ConditionChange, arrow=True),
    Output("partitions", PartitionRow, arrow=True),
    Output("brokers", BrokerRow, arrow=True),
    Output("quarantine", QuarantineRow, arrow=True),
    Output("gauges", BucketGauges, arrow=False),
    Output("stats", GroupStats, arrow=False),  # feeds progress (spark/job.py), no table
]}
_OUTPUT_SCHEMAS = {o.name: pa.schema(row_fields(o.row)) for o in OUTPUTS.values()}


# ------------------------------------------------------------------ tables

@dataclass(frozen=True)
class Table:
    """Everything about one Delta table: its name, its row type, where its
    rows come from, and how both sink backends create and write it.

    `source` is the operator output that feeds it (`OUTPUTS`; one output may
    feed several tables), None for tables the job writes itself (progress).
    `sink` lists the sink's columns, after the row's; `placed` moves a
    column right after another (None: first), so tables already written keep
    their column order. `identity` is what identifies a row (docs; merge
    tables: `keys`).

    Merge tables name the key that identifies a row, the column that orders
    two versions of it (the higher wins, also among duplicates inside one
    batch; without one the later row wins), and the SQL condition under which
    an incoming row `s` replaces the stored row `t` (without one it always
    does).

    A merge table `compacted_from` an append table holding the same rows is
    not merged every micro-batch: the sink only appends to that table, a
    compaction merges what was appended since the last one (the append
    table's Delta version it reached is the app transaction `COMPACTION_APP`
    of its commit), and readers see the newest row per key of both
    (tables/read.py), which are the rows a MERGE per micro-batch would give.
    """

    name: str
    row: type
    mode: str  # APPEND | MERGE
    one_row_per: str
    source: str | None = None
    partition_by: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    order_by: str | None = None
    replace_when: str | None = None
    sink: tuple[str, ...] = ("batch_id",)
    placed: tuple[tuple[str, str | None], ...] = ()
    identity: tuple[str, ...] = ()
    merge_note: str = ""  # docs: how a newer row replaces an older one
    notes: str = ""  # docs: a paragraph after the columns
    compacted_from: str | None = None
    schema: pa.Schema = field(init=False, repr=False, compare=False)
    core_schema: pa.Schema = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        columns = {f.name: f for f in row_fields(self.row)}
        columns.update((name, SINK[name].field) for name in self.sink)
        order = list(columns)
        for name, after in self.placed:
            order.remove(name)
            order.insert(0 if after is None else order.index(after) + 1, name)
        schema = pa.schema([columns[n] for n in order])
        object.__setattr__(self, "schema", schema)
        object.__setattr__(self, "core_schema",
                           pa.schema([f for f in schema if f.name not in SINK]))
        if self.source is not None:
            assert OUTPUTS[self.source].row is self.row, (self.name, self.source)
        # the reader's "newest per key" needs keys and an order, as the MERGE does
        assert not self.compacted_from or (self.mode == MERGE and self.keys and self.order_by), self

    @property
    def path_name(self) -> str:
        """The table's directory under the tables root."""
        return self.name

    def docs(self) -> dict[str, str]:
        """Column -> its description (the row's fields, then the sink's columns)."""
        return {**column_docs(self.row), **{name: SINK[name].doc for name in self.sink}}


VIOLATIONS = Table(
    "violations", Violation, APPEND, "a broken invariant", "violations",
    partition_by=("cluster_id", "date"), sink=("batch_id", "date"), identity=("violation_id",),
    notes="Rules are described in docs/rules.md.")
# An interval is emitted open, then again closed: only the close updates it,
# and a closed interval is never reopened by a replayed open row.
CONDITIONS = Table(
    "conditions", ConditionChange, MERGE, "an interval of a watched condition", "conditions",
    keys=("interval_id",), order_by="end_offset",
    replace_when="s.end_offset IS NOT NULL AND t.end_offset IS NULL",
    merge_note="a close updates `end_offset`/`end_ms`")
PARTITION_STATE = Table(
    "partition_state", PartitionRow, MERGE, "a partition now", "partitions",
    keys=("cluster_id", "topic_id", "partition"), order_by="offset",
    replace_when="s.`offset` >= t.`offset`", merge_note="highest `offset` wins",
    compacted_from="partition_history",
    notes="Not merged every micro-batch: the job appends to `partition_history` only, and "
          "merges what it appended since the last compaction into this table every "
          "`sink.compact_every` micro-batches and at the end of a run. "
          "Read it through kraft-audit (`tables/read.py`, `query`, the SQL questions), which "
          "adds the rows not compacted yet; the Delta table alone may lag that far behind.")
PARTITION_HISTORY = Table(
    "partition_history", PartitionRow, APPEND, "each state a partition went through",
    "partitions", partition_by=("cluster_id", "date"), sink=("batch_id", "date"),
    identity=("cluster_id", "topic_id", "partition", "offset"))
BROKERS = Table(
    "brokers", BrokerRow, MERGE, "a broker now", "brokers",
    keys=("cluster_id", "broker_id"), order_by="offset",
    replace_when="s.`offset` >= t.`offset`", merge_note="highest `offset` wins")
QUARANTINE = Table(
    "quarantine", QuarantineRow, APPEND, "input that could not be used", "quarantine",
    sink=("batch_id", "ingested_ms"), identity=("cluster_id", "source", "position"))
PROGRESS = Table(
    "progress", Progress, APPEND, "a micro-batch",
    sink=("batch_id", "app_id"), placed=(("batch_id", None), ("app_id", "batch_id")),
    identity=("app_id", "batch_id"),
    notes="Counts balance in every row: `records + side_inputs + unreadable = applied + "
          "duplicates + quarantined`. Every log record read (NoOps included, each copy of one "
          "delivered twice) is applied, a duplicate or quarantined; a side input counts when "
          "the log has reached its time and it is taken in (`held` until then).")
# The latest report of a bucket always wins: the sink's transaction check
# already keeps replayed batches out, and batch ids restart with a new
# checkpoint, so they cannot order rows across runs.
GAUGES = Table(
    "gauges", BucketGauges, MERGE, "the latest gauges of one state bucket", "gauges",
    keys=("cluster_id", "bucket"), merge_note="the newest write wins",
    placed=(("bucket", "cluster_id"), ("under_replicated", "last_timestamp_ms")),
    notes="`brokers_active` to `min_isr_source` are cluster-wide (`CLUSTER_WIDE` in "
          "kraft_audit/core/rows.py). Sum the partition fields over buckets for a cluster's "
          "figure; the cluster-wide ones are the same in every bucket (take any, e.g. "
          "bucket 0); `history_from_offset` is the smallest over the buckets. The metrics endpoint does "
          "exactly that, and restores itself from this table after a restart "
          "(docs/operations.md); docs/metrics.md defines each figure.")

TABLES: dict[str, Table] = {t.name: t for t in [
    VIOLATIONS, CONDITIONS, PARTITION_STATE, PARTITION_HISTORY, BROKERS, QUARANTINE, PROGRESS,
    GAUGES]}


def table(name_or_table: str | Table) -> Table:
    """A table's declaration, by itself or by name (ValueError for no such table)."""
    if isinstance(name_or_table, Table):
        return name_or_table
    try:
        return TABLES[name_or_table]
    except KeyError:
        raise ValueError(f"no such table {name_or_table!r}; tables are "
                         f"{', '.join(TABLES)}") from None


def routes() -> dict[str, tuple[str, ...]]:
    """Operator output -> the Delta tables it feeds."""
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
# every 250k-record micro-batch (bench/bench_streaming.py). Schemas are built
# once, at import: a conversion is one pass per column.


def core_schema(name: str | Table) -> pa.Schema:
    """The columns of a table that its rows carry (no sink columns)."""
    return table(name).core_schema


def core_to_arrow(name: str | Table, rows: list, schema: pa.Schema | None = None) -> pa.Table:
    """Rows (dataclass objects or dicts) as an Arrow table of the table's core
    schema (or `schema`), built column by column (several times faster than
    from_pylist over dicts). Unknown attributes are ignored; a missing one is
    a MissingColumn error naming table and column, never a silent null."""
    if schema is None:
        schema = core_schema(name)
    columns = []
    as_dicts = bool(rows) and isinstance(rows[0], dict)
    for f in schema:
        col = f.name
        try:
            values = [r[col] for r in rows] if as_dicts else [getattr(r, col) for r in rows]
        except (KeyError, AttributeError):
            label = name.name if isinstance(name, Table) else name
            raise MissingColumn(f"table {label}: a row has no column {col!r} "
                                f"({type(rows[0]).__name__} rows)") from None
        if pa.types.is_list(f.type) and pa.types.is_struct(f.type.value_type):
            from kraft_audit.tables.rows import row_dict

            values = [v if v is None else [row_dict(x) for x in v] for v in values]
        columns.append(pa.array(values, type=f.type))
    return pa.Table.from_arrays(columns, schema=schema)


def output_to_arrow(output: str, rows: list) -> pa.Table:
    """An operator output's rows as Arrow of its row type's columns."""
    return core_to_arrow(output, rows, OUTPUTS[output].schema)


def stamp_arrow(name: str | Table, data: pa.Table, batch_id: int, app_id: str,
                now_ms: int | None = None) -> pa.Table:
    """Core columns (any superset or subset) → the full schema of the table: the
    sink's columns added (batch_id; date from timestamp_ms; app_id; ingested_ms
    where null), missing nullable columns null. A null in a non-nullable
    column (a key: the row would be unfindable) is an error."""
    import time

    import numpy as np
    import pyarrow.compute as pc

    spec = table(name)
    n = data.num_rows
    have = set(data.column_names)
    arrays = []
    for f in spec.schema:
        col = f.name
        if col == "batch_id":
            column = pa.array(np.full(n, batch_id, dtype=np.int64))
        elif col == "app_id" and col not in have:
            column = pa.array([app_id] * n, type=pa.string())
        elif col == "date" and col not in have:
            ts = data.column("timestamp_ms") if "timestamp_ms" in have else pa.nulls(n, pa.int64())
            if ts.null_count:
                column = pa.array([_utc_day(v) for v in ts.to_pylist()], type=pa.int32())
            else:
                days = np.floor_divide(ts.to_numpy(), _MS_PER_DAY).astype(np.int32)
                column = pa.array(days)
            column = column.cast(pa.date32())
        elif col == "ingested_ms":
            stamp = int(time.time() * 1000) if now_ms is None else now_ms
            column = (pc.fill_null(data.column(col).cast(pa.int64()), stamp) if col in have
                      else pa.array(np.full(n, stamp, dtype=np.int64)))
        elif col in have:
            column = data.column(col)
            if column.type != f.type:
                column = column.cast(f.type)
        else:
            column = pa.nulls(n, f.type)
        if not f.nullable and column.null_count:
            raise ValueError(
                f"table {spec.name}: column {col} is null in {column.null_count} of {n} rows"
            )
        arrays.append(column)
    return pa.Table.from_arrays(arrays, schema=spec.schema)


def dedupe_latest_arrow(name: str | Table, data: pa.Table) -> pa.Table:
    """One row per key of a merge table, as a MERGE accepts one source row per
    target row: the one with the highest `order_by` (null lowest; on ties the
    later row), in input order."""
    import numpy as np
    import pyarrow.compute as pc

    spec = table(name)
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
