"""Reading a table by its declaration: one place that knows where a table
lives under a run's tables directory and how to open it, with delta-rs
(`read_table`, `read_rows`, `count_rows`) or with Spark's Delta connector
(`spark_frame`). Callers pass the declaration (`kraft_audit.tables.GAUGES`);
a table name is accepted too (notebooks).

A table `compacted_from` another (partition_state, from partition_history)
is read "as of now" by every function here: the newest row per key of the
stored table and of the rows appended to its source since the compaction
that the stored table's snapshot records (`Tail`). "The highest offset wins"
is idempotent, so reading more of the source than needed gives the same rows.
"""

from __future__ import annotations

import os
import re
import zlib
from dataclasses import dataclass

import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder

from kraft_audit.errors import MissingTable
from kraft_audit.tables.schema import COMPACTION_APP, Table, table


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


@dataclass
class Tail:
    """What a compacted table's snapshot lacks: the rows of `source` (the append
    table, at the version its handle holds) in the micro-batches `batch_ids`
    (None: all of them; possibly a few more, which is harmless)."""

    stored: DeltaTable
    source: DeltaTable
    batch_ids: list[int] | None

    @property
    def empty(self) -> bool:
        return self.batch_ids == []

    def where(self) -> str:
        """The SQL condition on the source's rows that selects the tail."""
        if self.batch_ids is None:
            return "TRUE"
        return f"batch_id IN ({', '.join(map(str, self.batch_ids))})" if self.batch_ids else "FALSE"


def tail(tables_root: str, which: str | Table) -> Tail:
    """The stored snapshot of a compacted table and its source's rows not in it.

    The stored snapshot is taken first: the source is append-only, so any later
    snapshot of it holds every version the compaction recorded."""
    spec = table(which)
    stored = open_table(tables_root, spec)
    source = open_table(tables_root, spec.compacted_from)
    compacted = stored.transaction_version(COMPACTION_APP)
    if compacted is None:  # never compacted: the whole source
        return Tail(stored, source, None)
    if compacted >= source.version():
        return Tail(stored, source, [])
    try:
        before = DeltaTable(source.table_uri, version=compacted)
    except Exception:  # noqa: BLE001 - that version's log is gone: read the whole source
        return Tail(stored, source, None)
    old = set(pa.table(before.get_add_actions(flatten=True)).column("path").to_pylist())
    files = pa.table(source.get_add_actions(flatten=True))
    if "min.batch_id" not in files.column_names:  # no statistics: read the whole source
        return Tail(stored, source, None)
    ids: set[int] = set()
    for f in files.select(["path", "min.batch_id", "max.batch_id"]).to_pylist():
        if f["path"] in old:
            continue
        if f["min.batch_id"] is None or f["max.batch_id"] is None:
            return Tail(stored, source, None)
        # a file rewritten by an OPTIMIZE may span batches: more rows, same answer
        ids.update(range(f["min.batch_id"], f["max.batch_id"] + 1))
    return Tail(stored, source, sorted(ids))


def read_tail(tables_root: str, which: str | Table) -> tuple[pa.Table | None, int | None]:
    """The source rows a compacted table lacks (its own columns) and the source
    version they reach; (None, None) when it lacks none."""
    spec = table(which)
    rest = tail(tables_root, spec)
    if rest.empty:
        return None, None
    builder = QueryBuilder()
    builder.register("source", rest.source)
    result = pa.table(builder.execute(
        f"SELECT {_columns(spec, chr(34))} FROM source WHERE {rest.where()} ORDER BY batch_id"
    ).read_all())
    # (nested string_view columns too: pyarrow cannot take rows of those)
    return result.cast(spec.schema), rest.source.version()


def _columns(spec: Table, quote: str, alias: str = "") -> str:
    return ", ".join(f"{alias}{quote}{c}{quote}" for c in spec.schema.names)


def now_ctes(spec: Table, stored: str, source: str, where: str, quote: str = '"') -> str:
    """SQL common table expressions (DataFusion's and Spark's dialect) ending in
    one named like the table: the newest row per key of `stored` ∪ the rows of
    `source` under `where`, as the MERGE decides (`replace_when`: an incoming
    row with an equal or higher order wins; among incoming rows the higher
    order, then the later batch)."""
    q = quote
    cols = _columns(spec, q)
    keys = ", ".join(f"{q}{k}{q}" for k in spec.keys)
    order = f"{q}{spec.order_by}{q}"
    on = " AND ".join(f"s.{q}{k}{q} = t.{q}{k}{q}" for k in spec.keys)
    latest = f"{q}__{spec.name}_latest{q}"
    return (
        f"{latest} AS (SELECT {cols} FROM (SELECT {cols}, row_number() OVER (PARTITION BY "
        f"{keys} ORDER BY {order} DESC, batch_id DESC) AS __rank FROM {source} WHERE {where}) "
        f"WHERE __rank = 1), "
        f"{q}{spec.name}{q} AS (SELECT {_columns(spec, q, 's.')} FROM {stored} s LEFT ANTI JOIN "
        f"{latest} t ON {on} AND t.{order} >= s.{order} UNION ALL SELECT {_columns(spec, q, 't.')} "
        f"FROM {latest} t LEFT ANTI JOIN {stored} s ON {on} AND s.{order} > t.{order})"
    )


_WITH = re.compile(r"^\s*with\s", re.IGNORECASE)


def query(tables_root: str, sql: str, tables: tuple[str | Table, ...]) -> pa.Table:
    """A DataFusion SQL query (delta-rs's own engine) over the named tables of a
    run, registered under their names, as Arrow with string_view columns cast
    back to string (see `read_table`). A compacted table is a common table
    expression of that name (`now_ctes`) placed before the query's own."""
    builder = QueryBuilder()
    ctes = []
    for which in tables:
        spec = table(which)
        if not spec.compacted_from:
            builder.register(spec.name, open_table(tables_root, spec))
            continue
        rest = tail(tables_root, spec)
        if rest.empty:
            builder.register(spec.name, rest.stored)
            continue
        stored, source = f"__{spec.name}_stored", f"__{spec.name}_source"
        builder.register(stored, rest.stored)
        builder.register(source, rest.source)
        ctes.append(now_ctes(spec, f'"{stored}"', f'"{source}"', rest.where()))
    if ctes:
        sql = (f"WITH {', '.join(ctes)}, {_WITH.sub('', sql, count=1)}" if _WITH.match(sql)
               else f"WITH {', '.join(ctes)} {sql}")
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
    """The table as a Spark DataFrame, through Spark's Delta connector (a
    compacted table as of now, from the same snapshots `query` reads)."""
    spec = table(which)
    if not spec.compacted_from:
        return spark.read.format("delta").load(table_path(tables_root, spec))
    rest = tail(tables_root, spec)

    def snapshot(t: DeltaTable):
        return spark.read.format("delta").option("versionAsOf", t.version()).load(t.table_uri)

    stored = snapshot(rest.stored)
    if rest.empty:
        return stored
    views = {}
    for role, t in (("stored", rest.stored), ("source", rest.source)):
        # Spark resolves the views as it parses the SQL below: a name per table and version
        views[role] = f"__kraft_audit_{spec.name}_{role}_{zlib.crc32(t.table_uri.encode())}_v{t.version()}"
        snapshot(t).createOrReplaceTempView(views[role])
    sql = f"WITH {now_ctes(spec, views['stored'], views['source'], rest.where(), '`')} " \
          f"SELECT * FROM `{spec.name}`"
    return spark.sql(sql)


def _plain(schema: pa.Schema) -> pa.Schema:
    return pa.schema(
        f.with_type(pa.string()) if pa.types.is_string_view(f.type) else f for f in schema
    )
