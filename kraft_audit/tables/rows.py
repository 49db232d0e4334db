"""Rows the Spark shell adds to the core's (kraft_audit/core/rows.py): a
bucket's gauges, a group call's figures, a micro-batch's progress. Declared
the same way, with `column`, so `kraft_audit.tables` derives their Arrow
schema and docs from them. No pyarrow here either."""

from __future__ import annotations

from dataclasses import dataclass, fields

from kraft_audit.core.rows import (BOOL, FLOAT64, INT32, INT64, STRING, ClusterGauges, column)


@dataclass(slots=True)
class BucketGauges(ClusterGauges):
    """The gauges of one state bucket of a cluster (table `gauges`, merge on cluster_id+bucket)."""

    bucket: int = column(INT32, "the state bucket (spark/operator.py)", key=True, default=0)

    @classmethod
    def of(cls, gauges: ClusterGauges, bucket: int) -> BucketGauges:
        return cls(**row_dict(gauges), bucket=bucket)


@dataclass(slots=True)
class GroupStats:
    """What one group call (cluster, bucket) of the operator did: the `stats`
    output, which feeds `progress` and the job's own figures (no table)."""

    cluster_id: str = column(STRING, key=True)
    bucket: int = column(INT32, key=True)
    timed_out: bool = column(BOOL)
    log_caught_up: bool = column(BOOL)
    events_in: int = column(INT64, "including this bucket's copies of shared events")
    # What the bucket accounts for (see Progress): records + side_inputs + unreadable
    # = applied + duplicates + quarantined
    records: int = column(INT64, "log records read, every copy of a repeated one included")
    side_inputs: int = column(INT64, "side inputs taken in (bucket 0)")
    unreadable: int = column(INT64, "input the readers could not decode (bucket 0; a partition "
                                    "record's value that does not decode: its bucket)")
    quarantined: int = column(INT64, "every quarantine row: unreadable or unusable input")
    applied: int = column(INT64)
    duplicates: int = column(INT64)
    held: int = column(INT64, "side inputs held back")
    violations: int = column(INT64)
    min_offset: int | None = column(INT64)
    max_offset: int | None = column(INT64)
    max_timestamp_ms: int | None = column(INT64)
    state_bytes: int = column(INT64)
    rebuilt: bool = column(BOOL, "restored from the state row, not the worker's live auditor")
    shards_loaded: int = column(INT64, "of the partition table, after the call")
    duration_ms: float = column(FLOAT64)


@dataclass(slots=True)
class ProgressCluster:
    """One cluster's figures in a `progress` row."""

    # NOT NULL for delta-rs; Spark's connector cannot enforce it inside an
    # array and keeps it unenforced (spark/session.py DELTA_SESSION_CONF)
    cluster_id: str = column(STRING, key=True)
    records: int = column(INT64, default=0)
    min_offset: int | None = column(INT64, default=None)
    max_offset: int | None = column(INT64, default=None)
    last_timestamp_ms: int | None = column(INT64, "time of the newest record applied",
                                           default=None)
    newest_offset: int | None = column(
        INT64, "the newest offset in the log when the batch was planned", default=None)
    lag_records: int | None = column(INT64, "newest_offset - max_offset", default=None)
    lag_seconds: float | None = column(
        FLOAT64, "record time of the newest record minus that of the last applied one",
        default=None)


@dataclass(slots=True)
class Progress:
    """A micro-batch (table `progress`, append); the job fills it, the sink adds
    `batch_id`, `app_id` and `write_seconds`."""

    started_ms: int = column(INT64, key=True)
    records: int = column(INT64, "log records read (NoOps included; a record delivered "
                          "twice counts twice)")
    applied: int = column(INT64, "records and side inputs applied to state")
    duplicates: int = column(INT64, "records and side inputs already applied, skipped (a "
                             "replay after a restart, a batch shipped twice)")
    quarantined: int = column(INT64, "the quarantine rows this micro-batch wrote: input the "
                              "readers could not decode plus records the auditor could not apply")
    side_inputs: int = column(INT64, "registration requests and log-dir inventories taken in "
                              "(one newer than the log waits, `held`, and counts when taken)")
    unreadable: int = column(INT64, "input the readers could not decode (also in `quarantined`)")
    held: int = column(INT64, "side inputs read from their files and waiting for the log to "
                       "reach their time, after this micro-batch")
    violations: int = column(INT64)
    duration_seconds: float | None = column(FLOAT64, "the whole micro-batch", default=None)
    process_seconds: float | None = column(FLOAT64, "the core (decode, replay, rules)",
                                           default=None)
    write_seconds: float | None = column(FLOAT64, "the Delta writes of the other tables, "
                                         "filled in by the sink", default=None)
    clusters: list[ProgressCluster] = column(("list", ProgressCluster),
                                             "one struct per cluster in the batch",
                                             default_factory=list)


_NAMES: dict[type, tuple[str, ...]] = {}


def field_names(row_type: type) -> tuple[str, ...]:
    names = _NAMES.get(row_type)
    if names is None:
        names = _NAMES[row_type] = tuple(f.name for f in fields(row_type))
    return names


def row_dict(row) -> dict:
    """A row object as a dict, shallowly (`dataclasses.asdict` deep-copies every
    list: too slow for the operator), nested rows as dicts too; a dict as is."""
    if isinstance(row, dict):
        return row
    out = {}
    for name in field_names(type(row)):
        value = getattr(row, name)
        if isinstance(value, list) and value and hasattr(value[0], "__dataclass_fields__"):
            value = [row_dict(v) for v in value]
        out[name] = value
    return out
