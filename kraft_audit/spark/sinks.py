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
- "delta-spark": Spark's Delta connector; needs its jar on the classpath
  (`--packages io.delta:delta-spark_4.2_2.13:4.4.1`). Untested here: this
  machine cannot fetch the jar.
"""

from __future__ import annotations

import os
import time

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

from kraft_audit.spark.tables import (
    APPEND,
    TABLES,
    TableSpec,
    core_to_arrow,
    dedupe_latest_arrow,
    stamp_arrow,
)

BACKENDS = ("deltalake", "delta-spark")
DELTA_SPARK_PACKAGE = "io.delta:delta-spark_4.2_2.13:4.4.1"


class DeltaSinks:
    """The Delta tables under `tables_root`, one directory per table."""

    def __init__(self, tables_root: str, backend: str = "deltalake", *, app_id: str, spark=None):
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
        self.last_write_seconds = 0.0

    def path(self, table: str) -> str:
        return os.path.join(self.tables_root, table)

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
        started = time.perf_counter()
        self._create_missing_tables()
        written = {}
        for name in TABLES:
            if name == "progress":
                continue
            written[name] = self._write_table(name, batch_id, rows_by_table.get(name, []))
        self.last_write_seconds = time.perf_counter() - started
        progress = [
            {**row, "write_seconds": self.last_write_seconds}
            if row.get("write_seconds") is None
            else row
            for row in rows_by_table.get("progress", [])
        ]
        written["progress"] = self._write_table("progress", batch_id, progress)
        return written

    def committed_batch(self, table: str) -> int | None:
        """The newest micro-batch `table` holds (None before the first)."""
        return self._table(table).transaction_version(self.app_id)

    def _write_table(self, name: str, batch_id: int, rows: list[dict] | pa.Table) -> int:
        committed = self.committed_batch(name)
        # Nothing to write is nothing to duplicate: no commit for an empty table.
        if len(rows) == 0 or (committed is not None and batch_id <= committed):
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
            if name not in self._tables and not DeltaTable.is_deltatable(self.path(name)):
                self._writer.create(self.path(name), spec)


def _merge_predicate(spec: TableSpec) -> str:
    return " AND ".join(f"t.`{k}` = s.`{k}`" for k in spec.keys)


def _txn(app_id: str, batch_id: int) -> CommitProperties:
    return CommitProperties(app_transactions=[Transaction(app_id, batch_id)])


class _DeltaRsWriter:
    """delta-rs: the driver writes Parquet and commits to `_delta_log` itself."""

    def create(self, path: str, spec: TableSpec) -> None:
        DeltaTable.create(
            path, spec.schema, mode="ignore", partition_by=list(spec.partition_by) or None
        )

    def append(self, table, path, spec, data: pa.Table, app_id, batch_id) -> None:
        write_deltalake(
            table,
            data,
            mode="append",
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

    def __init__(self, spark):
        if spark is None:
            raise ValueError(
                'backend "delta-spark" needs the SparkSession: DeltaSinks(..., spark=spark)'
            )
        self.spark = spark
        try:
            spark._jvm.java.lang.Class.forName("io.delta.tables.DeltaTable")
            from delta.tables import DeltaTable as SparkDeltaTable
        except Exception as exc:
            raise RuntimeError(
                'backend "delta-spark" needs the Delta Lake jar on the Spark classpath: '
                f"spark-submit --packages {DELTA_SPARK_PACKAGE} --conf "
                "spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension --conf "
                "spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog "
                '(and pip install "kraft-audit[delta-spark]"); or use backend "deltalake"'
            ) from exc
        self._delta_table = SparkDeltaTable

    def create(self, path: str, spec: TableSpec) -> None:
        (
            self.spark.createDataFrame(spec.schema.empty_table())
            .write.format("delta")
            .partitionBy(*spec.partition_by)
            .mode("ignore")
            .save(path)
        )

    def append(self, table, path, spec, data: pa.Table, app_id, batch_id) -> None:
        (
            self.spark.createDataFrame(data)
            .write.format("delta")
            .mode("append")
            .option("txnAppId", app_id)
            .option("txnVersion", batch_id)
            .partitionBy(*spec.partition_by)
            .save(path)
        )

    def merge(self, table, path, spec, data: pa.Table, app_id, batch_id) -> None:
        for conf, value in zip(self._TXN_CONFS, (app_id, str(batch_id)), strict=True):
            self.spark.conf.set(conf, value)
        try:
            (
                self._delta_table.forPath(self.spark, path)
                .alias("t")
                .merge(self.spark.createDataFrame(data).alias("s"), _merge_predicate(spec))
                .whenMatchedUpdateAll(condition=spec.replace_when)
                .whenNotMatchedInsertAll()
                .execute()
            )
        finally:
            for conf in self._TXN_CONFS:
                self.spark.conf.unset(conf)
