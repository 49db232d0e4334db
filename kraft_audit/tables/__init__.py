"""The Delta tables kraft-audit writes, each declared once (`schema.TABLES`):
schema, partitioning, merge keys, write mode, the operator output that feeds
it, its reader (`read`), its docs section (`docs`) and the analysts'
questions over them (`questions`). Plain pyarrow; only `read` imports
deltalake."""

from kraft_audit.tables.schema import (APPEND, BROKERS, CONDITIONS, GAUGES, MERGE, OUTPUTS,
                                       PARTITION_HISTORY, PARTITION_STATE, PROGRESS, QUARANTINE,
                                       SINK_COLUMNS, TABLES, VIOLATIONS, MissingColumn, Output,
                                       Table, core_schema, core_to_arrow, dedupe_latest_arrow,
                                       output_to_arrow, routes, stamp_arrow, table)

__all__ = ["APPEND", "BROKERS", "CONDITIONS", "GAUGES", "MERGE", "OUTPUTS", "PARTITION_HISTORY",
           "PARTITION_STATE", "PROGRESS", "QUARANTINE", "SINK_COLUMNS", "TABLES", "VIOLATIONS",
           "MissingColumn", "Output", "Table", "core_schema", "core_to_arrow",
           "dedupe_latest_arrow", "output_to_arrow", "routes", "stamp_arrow", "table"]
