"""The analysts' questions over kraft-audit's Delta tables, as plain functions.

Each reads the tables with delta-rs's own query engine (`read_table`) and
returns plain dicts, newest
facts first where that matters. `kraft-audit query` prints them; a notebook
can call them directly. docs/tables.md has the same questions in SQL.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import time

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable, QueryBuilder

RECOVERING = 1


class MissingTable(LookupError):
    """The tables root does not hold the table a question needs."""


def read_table(tables_root: str, table: str, columns: list[str] | None = None) -> pa.Table:
    """A whole Delta table as Arrow, read by delta-rs's DataFusion engine.

    Not `to_pyarrow_dataset`: with deltalake 1.6.6 and pyarrow 26 a process
    that scanned through it aborts at exit ("terminate called without an
    active exception"), and filters pushed into it fail on the string_view
    columns delta-rs merges write. Those columns are cast back to string.
    """
    path = os.path.join(tables_root, table)
    if not DeltaTable.is_deltatable(path):
        raise MissingTable(
            f"no Delta table {table!r} under {tables_root} "
            "(is it the `tables` directory of a kraft-audit run?)"
        )
    selected = ", ".join(f'"{c}"' for c in columns) if columns else "*"
    reader = QueryBuilder().register("t", DeltaTable(path)).execute(f"select {selected} from t")
    result = pa.table(reader.read_all())
    plain = pa.schema(
        f.with_type(pa.string()) if pa.types.is_string_view(f.type) else f for f in result.schema
    )
    return result.cast(plain)


def under_min_isr(
    tables_root: str,
    since_ms: int | None = None,
    cluster: str | None = None,
    now_ms: int | None = None,
) -> list[dict]:
    """Intervals partitions spent under min ISR that overlap [since, now]:
    longest first, with their duration (an open interval lasts until now)."""
    now_ms = _now_ms() if now_ms is None else now_ms
    where = pc.field("condition") == "under_min_isr"
    if since_ms is not None:
        where &= pc.field("end_ms").is_null() | (pc.field("end_ms") >= since_ms)
    if cluster:
        where &= pc.field("cluster_id") == cluster
    rows = read_table(tables_root, "conditions").filter(where).to_pylist()
    for row in rows:
        row["open"] = row["end_offset"] is None
        row["duration_seconds"] = (
            (row["end_ms"] if row["end_ms"] is not None else now_ms) - row["start_ms"]
        ) / 1000
    return sorted(rows, key=lambda r: (-r["duration_seconds"], r["start_offset"]))


def unclean_elections(
    tables_root: str, since_ms: int | None = None, cluster: str | None = None
) -> list[dict]:
    """Every unclean leader election (the partition entering RECOVERING with a
    new leader epoch), newest first, with the partition as it was just before:
    ISR, ELR, LastKnownElr and leader."""
    history = read_table(tables_root, "partition_history")
    where = pc.field("leader_recovery_state") == RECOVERING
    if cluster:
        where &= pc.field("cluster_id") == cluster
    if since_ms is not None:
        where &= pc.field("timestamp_ms") >= since_ms
    recovering = history.filter(where)
    topic_ids = pc.unique(recovering.column("topic_id"))
    if not len(topic_ids):
        return []
    # the full history of only those partitions' topics, to see the row before each election
    where = pc.field("topic_id").isin(topic_ids)
    if cluster:
        where &= pc.field("cluster_id") == cluster
    rows = history.filter(where).to_pylist()
    rows.sort(key=lambda r: (r["cluster_id"], r["topic_id"], r["partition"], r["offset"]))
    elections = []
    before = None
    for row in rows:
        same_partition = before is not None and _partition_key(before) == _partition_key(row)
        previous = before if same_partition else None
        if _is_unclean_election(previous, row) and (
            since_ms is None or row["timestamp_ms"] >= since_ms
        ):
            elections.append(_election(previous, row))
        before = row
    return sorted(elections, key=lambda e: (-e["timestamp_ms"], e["offset"]))


def partition_at(
    tables_root: str,
    topic: str,
    partition: int,
    at_offset: int | None = None,
    cluster: str | None = None,
) -> list[dict]:
    """The partition as it was at `at_offset` (the newest state at or before
    it; the latest without one), one row per cluster. `topic` is a topic name
    or a topic id."""
    where = ((pc.field("topic") == topic) | (pc.field("topic_id") == topic)) & (
        pc.field("partition") == partition
    )
    if at_offset is not None:
        where &= pc.field("offset") <= at_offset
    if cluster:
        where &= pc.field("cluster_id") == cluster
    latest: dict[str, dict] = {}
    for row in read_table(tables_root, "partition_history").filter(where).to_pylist():
        kept = latest.get(row["cluster_id"])
        if kept is None or row["offset"] > kept["offset"]:
            latest[row["cluster_id"]] = row
    return [latest[c] for c in sorted(latest)]


def violations(
    tables_root: str,
    rule: str | None = None,
    since_ms: int | None = None,
    cluster: str | None = None,
    severity: str | None = None,
) -> list[dict]:
    """Violations in log order, optionally of one rule, severity or cluster."""
    where = pc.scalar(True)
    if rule:
        where &= pc.field("rule_id") == rule
    if severity:
        where &= pc.field("severity") == severity
    if cluster:
        where &= pc.field("cluster_id") == cluster
    if since_ms is not None:
        where &= (pc.field("date") >= _utc_date(since_ms)) & (pc.field("timestamp_ms") >= since_ms)
    rows = read_table(tables_root, "violations").filter(where).to_pylist()
    return sorted(rows, key=lambda r: (r["cluster_id"], r["offset"], r["rule_id"]))


_DURATION = re.compile(r"^(\d+)([smhdw])$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_since(text: str, now_ms: int | None = None) -> int:
    """`7d`, `12h`, `30m`, `90s`, `2w` before now, or an ISO date/time
    (UTC unless it says otherwise), as epoch milliseconds."""
    now_ms = _now_ms() if now_ms is None else now_ms
    match = _DURATION.match(text.strip())
    if match:
        return now_ms - int(match.group(1)) * _UNIT_SECONDS[match.group(2)] * 1000
    try:
        moment = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(
            f"--since {text!r}: give a duration like 7d, 12h, 30m "
            "or an ISO date like 2026-11-14 or 2026-11-14T08:00:00Z"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return int(moment.timestamp() * 1000)


def _is_unclean_election(previous: dict | None, row: dict) -> bool:
    if row["leader_recovery_state"] != RECOVERING:
        return False
    return (
        previous is None
        or previous["leader_recovery_state"] != RECOVERING
        or previous["leader_epoch"] != row["leader_epoch"]
    )


def _election(previous: dict | None, row: dict) -> dict:
    before = previous or {}
    electable = set(before.get("isr") or []) | set(before.get("elr") or [])
    return {
        "cluster_id": row["cluster_id"],
        "topic": row["topic"],
        "topic_id": row["topic_id"],
        "partition": row["partition"],
        "offset": row["offset"],
        "timestamp_ms": row["timestamp_ms"],
        "leader": row["leader"],
        "leader_epoch": row["leader_epoch"],
        "isr": row["isr"],
        "leader_before": before.get("leader"),
        "isr_before": before.get("isr"),
        "elr_before": before.get("elr"),
        "last_known_elr_before": before.get("last_known_elr"),
        # an unclean election while a clean candidate existed is worth a second look
        "clean_candidates_before": sorted(electable),
    }


def _partition_key(row: dict) -> tuple:
    return row["cluster_id"], row["topic_id"], row["partition"]


def _utc_date(ms: int) -> pa.Scalar:
    return pa.scalar(dt.datetime.fromtimestamp(ms / 1000, dt.UTC).date(), pa.date32())


def _now_ms() -> int:
    return int(time.time() * 1000)
