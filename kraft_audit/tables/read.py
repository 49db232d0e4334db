"""Reading a table by its declaration: one place that knows where a table
lives under a run's tables directory and how to open it, with delta-rs
(`read_table`, `read_rows`, `count_rows`) or with Spark's Delta connector
(`spark_frame`). Callers pass the declaration (`kraft_audit.tables.GAUGES`);
a table name is accepted too (notebooks)."""

from __future__ import annotations

import os

import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder

from kraft_audit.errors import MissingTable
from kraft_audit.tables.schema import Table, table


def table_path(tables_root: str, which: str | Table) -> str:
    return os.path.join(tables_root, table(which).path_name)


def open_table(tables_root: str, which: str | Table) -> DeltaTable:
    """The Delta table (delta-rs), or MissingTable when the run has not written it."""
    spec = table(which)
    path = table_path(tables_root, spec)
    if not DeltaTable.is_deltatable(path):
        raise MissingTable(
            f"no Delta table {spec.name!r} under {tables_root} "
            "(is it the `tables` directory of a kraft-audit run?)"
        )
    return DeltaTable(path)


def query(tables_root: str, sql: str, tables: tuple[str | Table, ...]) -> pa.Table:
    """A DataFusion SQL query (delta-rs's own engine) over the named tables of a
    run, registered under their names, as Arrow with string_view columns cast
    back to string (see `read_table`)."""
    builder = QueryBuilder()
    for which in tables:
        builder.register(table(which).name, open_table(tables_root, which))
    result = pa.table(builder.execute(sql).read_all())
    return result.cast(_plain(result.schema))


def read_table(tables_root: str, which: str | Table, columns: list[str] | None = None) -> pa.Table:
    """A whole Delta table as Arrow, read by delta-rs's DataFusion engine.

    Not `to_pyarrow_dataset`: with deltalake 1.6.6 and pyarrow 26 a process
    that scanned through it aborts at exit ("terminate called without an
    active exception"), and filters pushed into it fail on the string_view
    columns delta-rs merges write. Those columns are cast back to string.
    """
    spec = table(which)
    selected = ", ".join(f'"{c}"' for c in columns) if columns else "*"
    return query(tables_root, f'select {selected} from "{spec.name}"', (spec,))


def count_rows(tables_root: str, which: str | Table) -> int:
    """How many rows a Delta table holds (MissingTable when there is none)."""
    spec = table(which)
    return query(tables_root, f'select count(*) as n from "{spec.name}"', (spec,))["n"][0].as_py()


def read_rows(tables_root: str, which: str | Table, columns: list[str] | None = None) -> list[dict]:
    """A table's rows as dicts (read_table's), or none when it was not written yet."""
    try:
        return read_table(tables_root, which, columns).to_pylist()
    except MissingTable:
        return []


def spark_frame(spark, tables_root: str, which: str | Table):
    """The table as a Spark DataFrame, through Spark's Delta connector."""
    return spark.read.format("delta").load(table_path(tables_root, which))


def _plain(schema: pa.Schema) -> pa.Schema:
    return pa.schema(
        f.with_type(pa.string()) if pa.types.is_string_view(f.type) else f for f in schema
    )
