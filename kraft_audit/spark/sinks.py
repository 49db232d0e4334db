"""Exactly-once Delta writes of one micro-batch's output rows.

Every table records the last micro-batch it received as a Delta app
transaction `(app_id, batch_id)`. Before writing a table the sink reads that
version and skips the table when `batch_id` is not newer, so a micro-batch
that Spark replays after a crash (written, but not checkpointed) writes
nothing twice, table by table. delta-rs records the transaction but does not
enforce it (reference: spark-on-this-machine.md §4), hence the explicit check.

The `app_id` must be new whenever the Spark checkpoint is new: batch ids
restart at 0 with a fresh checkpoint, and the sink would skip them as already
written. The job (spark/job.py) appends the query id Spark keeps in the
checkpoint to `sink.app_id`.

Two backends write the same tables:
- "deltalake" (default): delta-rs from the driver, pip only;
- "delta-spark": Spark's Delta connector writes (tests/test_delta_spark.py);
  its jars come from Maven Central through `make delta-spark`
  (spark/session.py puts them on the session's classpath).

Both take everything about a table (schema, partitioning, append or merge,
merge key and condition) from its declaration in kraft_audit/tables/, and the
tables they write are the same Delta tables: either backend reads and
continues what the other wrote.

A table `compacted_from` another (partition_state) is not written per
micro-batch: its rows are appended to the source table with the others, and
`compact` merges what was appended since the last compaction, recording the
source's version it reached as the commit's app transaction `COMPACTION_APP`
(atomic with the rows, so a compaction killed midway left nothing, and one run
twice merges nothing twice). A MERGE rewrites every file a changed key falls
in, which with random changes is most of the table: once per compaction, not
once per micro-batch (README "Scale").
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

from kraft_audit.config import KEYS
from kraft_audit.spark.session import DELTA_SPARK_PACKAGE, delta_spark_jars
from kraft_audit.tables import (
    APPEND,
    PROGRESS,
    TABLES,
    Table,
    core_to_arrow,
    dedupe_latest_arrow,
    stamp_arrow,
)
from kraft_audit.tables.read import read_tail, table_path
from kraft_audit.tables.schema import COMPACTION_APP

BACKENDS = KEYS["sink.backend"].choices  # declared with the configuration's `sink.backend`
DEFAULT_BACKEND = KEYS["sink.backend"].default
__all__ = ["BACKENDS", "DELTA_SPARK_PACKAGE", "DeltaSinks"]


class DeltaSinks:
    """The Delta tables under `tables_root`, one directory per table."""

    def __init__(self, tables_root: str, backend: str = DEFAULT_BACKEND, *, app_id: str, spark=None):
        if backend not in BACKENDS:
            raise ValueError(
                f"unknown Delta backend {backend!r}: choose one of {', '.join(BACKENDS)}"
            )
        if not app_id:
            raise ValueError("app_id must be a non-empty string (it keys the exactly-once writes)")
        self.tables_root = tables_root
        self.app_id = app_id
        self._writer = _DeltaRsWriter() if backend == "deltalake" else _DeltaSparkWriter(spark)
        self._tables: dict[str, DeltaTable] = {}
        self._exist: set[str] = set()
        self.last_write_seconds = 0.0

    def path(self, table: str) -> str:
        return table_path(self.tables_root, table)

    def write_batch(
        self, batch_id: int, rows_by_table: dict[str, list[dict] | pa.Table]
    ) -> dict[str, int]:
        """Write one micro-batch; return the rows written per table (0 for a
        table that already holds this batch). A table's rows are a list of
        row dicts or a pyarrow Table of its core columns (any columns the
        sink adds, such as batch_id and date, are added here either way).
        `progress` is written last, with `write_seconds` filled in from the
        other tables' writes."""
        unknown = set(rows_by_table) - set(TABLES)
        if unknown:
            raise ValueError(
                f"no such table(s): {', '.join(sorted(unknown))}; tables are {', '.join(TABLES)}"
            )
        compacted = {name: TABLES[name].compacted_from for name in rows_by_table
                     if TABLES[name].compacted_from}
        for name, source in compacted.items():
            _check_same_rows(name, rows_by_table[name], source, rows_by_table.get(source))
        started = time.perf_counter()
        self._create_missing_tables()
        names = [name for name in TABLES
                 if name != PROGRESS.name and not TABLES[name].compacted_from]

        def write(name: str) -> int:
            return self._write_table(name, batch_id, rows_by_table.get(name, []))

        if self._writer.concurrent:
            # Each table is its own transaction (and its own txn check), so
            # they can commit side by side: with Spark a commit is a few small
            # jobs, mostly waiting, 2-5 s each on a busy 2-core machine.
            with ThreadPoolExecutor(len(names), thread_name_prefix="delta-sink") as pool:
                written = dict(zip(names, pool.map(write, names)))
        else:
            written = {name: write(name) for name in names}
        for name, spec in TABLES.items():
            if spec.compacted_from:  # its rows went to its source: counted as written there
                written[name] = len(rows_by_table.get(name, [])) if written[spec.compacted_from] else 0
        self.last_write_seconds = time.perf_counter() - started
        progress = [_with_write_seconds(row, self.last_write_seconds)
                    for row in rows_by_table.get(PROGRESS.name, [])]
        written[PROGRESS.name] = self._write_table(PROGRESS.name, batch_id, progress)
        return written

    def compact(self, table: str = "partition_state") -> int:
        """Merge into a compacted table what its source gained since the last
        compaction; return the rows merged (0: nothing new). Safe beside the job
        writing the source, and beside another compaction (a lower recorded
        version only makes readers read more of the source)."""
        spec = TABLES[table]
        if not spec.compacted_from:
            raise ValueError(f"table {table} is not compacted from another table")
        self._create_missing_tables()
        self._table(table)  # brought up to date: its recorded version is read from this snapshot
        rows, version = read_tail(self.tables_root, spec)
        if rows is None:
            return 0
        # in batch order: ties on `order_by` go to the later batch, as readers see them
        data = dedupe_latest_arrow(table, rows)
        self._writer.merge(self._table(table), self.path(table), spec, data, COMPACTION_APP, version)
        return data.num_rows

    def committed_batch(self, table: str) -> int | None:
        """The newest micro-batch `table` holds (None before the first)."""
        return self._table(table).transaction_version(self.app_id)

    def _write_table(self, name: str, batch_id: int, rows: list[dict] | pa.Table) -> int:
        # Nothing to write is nothing to duplicate: no commit for an empty table, and
        # no read of its log for the txn check either (a replay of this batch skips it too).
        if len(rows) == 0:
            return 0
        committed = self.committed_batch(name)
        if committed is not None and batch_id <= committed:
            return 0
        spec = TABLES[name]
        if not isinstance(rows, pa.Table):
            rows = core_to_arrow(name, rows)
        data = stamp_arrow(name, rows, batch_id, self.app_id)
        if spec.mode == APPEND:
            self._writer.append(self._table(name), self.path(name), spec, data, self.app_id, batch_id)
        else:
            data = dedupe_latest_arrow(name, data)
            self._writer.merge(self._table(name), self.path(name), spec, data, self.app_id, batch_id)
        return data.num_rows

    def _table(self, name: str) -> DeltaTable:
        """A handle on the table, brought up to date (another writer, or this
        sink before a restart, may have committed since)."""
        table = self._tables.get(name)
        if table is None:
            table = self._tables[name] = DeltaTable(self.path(name))
        else:
            table.update_incremental()
        return table

    def _create_missing_tables(self) -> None:
        # Every table exists from the first batch on, even with no rows yet,
        # so analysts' queries never fail on a missing table.
        for name, spec in TABLES.items():
            if name not in self._tables and name not in self._exist \
                    and not DeltaTable.is_deltatable(self.path(name)):
                self._writer.create(self.path(name), spec)
            self._exist.add(name)  # a table with no rows yet is not looked up every batch


def _with_write_seconds(row, seconds: float):
    """A progress row (a `Progress` or a dict) with `write_seconds`, unless it has one."""
    if isinstance(row, dict):
        return {**row, "write_seconds": seconds} if row.get("write_seconds") is None else row
    return row if row.write_seconds is not None else replace(row, write_seconds=seconds)


def _check_same_rows(name: str, rows, source: str, source_rows) -> None:
    """A compacted table takes its rows from its source's: rows given for it
    alone would be lost, and different ones would not be what it holds."""
    if source_rows is rows or len(rows) == 0:
        return
    if source_rows is None or len(source_rows) != len(rows) or (
            isinstance(rows, pa.Table) != isinstance(source_rows, pa.Table)) or (
            not rows.equals(source_rows) if isinstance(rows, pa.Table) else rows != source_rows):
        raise ValueError(f"table {name} is compacted from {source}: its rows are {source}'s, "
                         f"so pass the same rows for {source} too")


def _merge_predicate(spec: Table) -> str:
    return " AND ".join(f"t.`{k}` = s.`{k}`" for k in spec.keys)


def _txn(app_id: str, batch_id: int) -> CommitProperties:
    return CommitProperties(app_transactions=[Transaction(app_id, batch_id)])


class _DeltaRsWriter:
    """delta-rs: the driver writes Parquet and commits to `_delta_log` itself."""

    concurrent = False  # ~0.02 s a commit: nothing to gain

    def create(self, path: str, spec: Table) -> None:
        DeltaTable.create(
            path, spec.schema, mode="ignore", partition_by=list(spec.partition_by) or None
        )

    def append(self, table, path, spec, data: pa.Table, app_id, batch_id) -> None:
        write_deltalake(
            table,
            data,
            mode="append",
            # a column a newer release added joins a table an older one created
            schema_mode="merge",
            partition_by=list(spec.partition_by) or None,
            commit_properties=_txn(app_id, batch_id),
        )

    def merge(self, table, path, spec, data: pa.Table, app_id, batch_id) -> None:
        (
            table.merge(
                data,
                _merge_predicate(spec),
                source_alias="s",
                target_alias="t",
                # a column a newer release added joins a table an older one created
                # (without this delta-rs drops it silently)
                merge_schema=True,
                commit_properties=_txn(app_id, batch_id),
            )
            .when_matched_update_all(predicate=spec.replace_when)
            .when_not_matched_insert_all()
            .execute()
        )


class _DeltaSparkWriter:
    """Spark's Delta connector. It enforces the app transaction itself
    (`txnAppId`/`txnVersion` for appends, the session confs for MERGE); the
    sink's own check comes first and reads the same `txn` action."""

    _TXN_CONFS = (
        "spark.databricks.delta.write.txnAppId",
        "spark.databricks.delta.write.txnVersion",
    )
    concurrent = True

    def __init__(self, spark):
        if spark is None:
            raise ValueError(
                'backend "delta-spark" needs the SparkSession: DeltaSinks(..., spark=spark)'
            )
        self.spark = spark
        from py4j.java_gateway import JavaClass

        # py4j resolves names through the thread's context class loader, which
        # holds spark.jars (Class.forName would not see them); an unknown name
        # comes back as a JavaPackage.
        if not isinstance(spark._jvm.io.delta.tables.DeltaTable, JavaClass):
            try:
                delta_spark_jars()
                where = "they are resolved but not on this session's classpath"
            except RuntimeError as missing:
                where = str(missing)
            raise RuntimeError(
                f'backend "delta-spark": no Delta Lake connector ({DELTA_SPARK_PACKAGE}) '
                f"in this SparkSession; {where}. The session needs spark.jars set to "
                "them before it starts (spark/session.py: build_session(delta_spark=True)), "
                'or spark-submit --packages; or use backend "deltalake"'
            )
        try:
            from delta.tables import DeltaTable as SparkDeltaTable
        except ImportError as exc:
            raise RuntimeError(
                'backend "delta-spark" needs the connector\'s Python API: '
                'pip install "kraft-audit[delta-spark]" (make install does)'
            ) from exc
        self._delta_table = SparkDeltaTable
        self._sessions: dict[str, object] = {}
        self._lock = threading.Lock()

    def _session(self, path: str):
        """A session per table: MERGE takes its txn from session confs, which
        tables written side by side must not share."""
        with self._lock:
            if path not in self._sessions:
                session = self._sessions[path] = self.spark.newSession()
                # as delta-rs's merge_schema: MERGE adds a column a newer release declares
                # (without it Spark's MERGE drops the column silently)
                session.conf.set("spark.databricks.delta.schema.autoMerge.enabled", "true")
            return self._sessions[path]

    def create(self, path: str, spec: Table) -> None:
        from pyspark.sql.pandas.types import from_arrow_schema

        # From the spec's Arrow schema, nullability included, as delta-rs
        # creates it: a key column is NOT NULL whichever backend made the table.
        (
            self._delta_table.createIfNotExists(self.spark)
            .location(os.path.abspath(path))
            .addColumns(from_arrow_schema(spec.schema))
            .partitionedBy(*spec.partition_by)
            .execute()
        )

    def append(self, table, path, spec, data: pa.Table, app_id, batch_id) -> None:
        (
            self._frame(self._session(path), spec, data)
            .write.format("delta")
            .mode("append")
            .option("mergeSchema", "true")  # as delta-rs: a newer release's column joins the table
            .option("txnAppId", app_id)
            .option("txnVersion", batch_id)
            .save(path)
        )

    def merge(self, table, path, spec, data: pa.Table, app_id, batch_id) -> None:
        session = self._session(path)
        for conf, value in zip(self._TXN_CONFS, (app_id, str(batch_id)), strict=True):
            session.conf.set(conf, value)
        try:
            (
                self._delta_table.forPath(session, path)
                .alias("t")
                .merge(self._frame(session, spec, data).alias("s"), _merge_predicate(spec))
                .whenMatchedUpdateAll(condition=spec.replace_when)
                .whenNotMatchedInsertAll()
                .execute()
            )
        finally:
            for conf in self._TXN_CONFS:
                session.conf.unset(conf)

    @staticmethod
    def _frame(session, spec: Table, data: pa.Table):
        from pyspark.sql.pandas.types import from_arrow_schema

        # The spec's Spark schema, not the one inferred from Arrow: keeps
        # int8/date/map types and NOT NULL keys exactly as the table has them.
        return session.createDataFrame(data, schema=from_arrow_schema(spec.schema))
