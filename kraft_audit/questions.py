"""The analysts' questions over kraft-audit's Delta tables, as plain functions.

Each reads the tables with delta-rs's own query engine (`read_table`) and
returns plain dicts, newest facts first where that matters. Time is the log's:
an open interval lasts until its cluster's newest record, and `--since 7d`
means the 7 days before that record. `kraft-audit query` prints them; a notebook
can call them directly. docs/tables.md has the same questions in SQL.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from kraft_audit.core.replay.partition import RECOVERING, recovery_state_name
from kraft_audit.core.rules.elections import is_unclean_election
from kraft_audit.errors import MissingTable, UnknownName  # noqa: F401 (exported here too)
from kraft_audit.tables import CONDITIONS, GAUGES, PARTITION_HISTORY, VIOLATIONS
from kraft_audit.tables.read import count_rows, read_rows, read_table  # noqa: F401 (notebooks)


@dataclass(frozen=True)
class Since:
    """A question's window start: an absolute time, or a look-back from each
    cluster's newest record (the log's time, not the wall clock: a log from last
    year asked about "the last 7 days" means its own last 7 days)."""

    at_ms: int | None = None
    lookback_ms: int | None = None

    def cutoff(self, newest_ms: int | None) -> int | None:
        if self.at_ms is not None:
            return self.at_ms
        return None if newest_ms is None else newest_ms - self.lookback_ms


def partial_logs(tables: str, cluster: str | None = None) -> list[str]:
    """A line per cluster whose log starts mid-history (its gauges say where)."""
    starts: dict[str, int] = {}
    for row in read_rows(tables, GAUGES):
        start = row.get("history_from_offset")
        if start is not None and start >= 0 and cluster in (None, row["cluster_id"]):
            starts[row["cluster_id"]] = min(start, starts.get(row["cluster_id"], start))
    return [f"# partial log: cluster {c}'s log starts at offset {n} without a snapshot; what was "
            "created before it is unknown" for c, n in sorted(starts.items())]


def newest_record_ms(tables_root: str) -> dict[str, int]:
    """Each cluster's newest record time (CreateTime), from the `gauges` table:
    the same `last_timestamp_ms` that `check` and /metrics report."""
    newest: dict[str, int] = {}
    for row in read_table(tables_root, GAUGES, ["cluster_id", "last_timestamp_ms"]).to_pylist():
        if row["last_timestamp_ms"] is not None:
            cluster = row["cluster_id"]
            newest[cluster] = max(newest.get(cluster, row["last_timestamp_ms"]), row["last_timestamp_ms"])
    return newest


def under_min_isr(tables_root: str, since: Since | None = None, cluster: str | None = None) -> list[dict]:
    """Intervals partitions spent under min ISR that overlap the window from
    `since` to the newest record: longest first, with their duration (an open
    interval lasts until its cluster's newest record)."""
    newest = _clusters(tables_root, cluster)
    where = pc.field("condition") == "under_min_isr"
    if cluster:
        where &= pc.field("cluster_id") == cluster
    rows = []
    for row in read_table(tables_root, CONDITIONS).filter(where).to_pylist():
        end_ms = row["end_ms"] if row["end_ms"] is not None else newest.get(row["cluster_id"])
        if not _in_window(end_ms, since, newest.get(row["cluster_id"])):
            continue
        row["open"] = row["end_offset"] is None
        row["duration_seconds"] = None if end_ms is None else (end_ms - row["start_ms"]) / 1000
        rows.append(row)
    return sorted(rows, key=lambda r: (-(r["duration_seconds"] or 0), r["start_offset"],
                                       r["interval_id"]))


def unclean_elections(tables_root: str, since: Since | None = None, cluster: str | None = None) -> list[dict]:
    """Every unclean leader election (`rules.elections.is_unclean_election`: the
    partition turned from RECOVERED into RECOVERING), newest first, with the
    partition as it was just before: ISR, ELR, LastKnownElr and leader."""
    newest = _clusters(tables_root, cluster)
    history = read_table(tables_root, PARTITION_HISTORY)
    where = pc.field("leader_recovery_state") == RECOVERING
    if cluster:
        where &= pc.field("cluster_id") == cluster
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
        if (same_partition
                and is_unclean_election(before["leader_recovery_state"], row["leader_recovery_state"])
                and _in_window(row["timestamp_ms"], since, newest.get(row["cluster_id"]))):
            elections.append(_election(before, row))
        before = row
    return sorted(elections, key=lambda e: (-e["timestamp_ms"], e["offset"], *_partition_key(e)))


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
    where = _topic_is(topic) & (pc.field("partition") == partition)
    if at_offset is not None:
        where &= pc.field("offset") <= at_offset
    if cluster:
        where &= pc.field("cluster_id") == cluster
    _clusters(tables_root, cluster)
    history = read_table(tables_root, PARTITION_HISTORY)
    _require_partition(history, topic, partition, cluster)
    latest: dict[str, dict] = {}
    for row in history.filter(where).to_pylist():
        kept = latest.get(row["cluster_id"])
        if kept is None or row["offset"] > kept["offset"]:
            latest[row["cluster_id"]] = row
    for row in latest.values():
        row["leader_recovery_state"] = recovery_state_name(row["leader_recovery_state"])
    return [latest[c] for c in sorted(latest)]


def violations(
    tables_root: str,
    rule: str | None = None,
    since: Since | None = None,
    cluster: str | None = None,
    severity: str | None = None,
    known_rules: set[str] | frozenset[str] = frozenset(),
) -> list[dict]:
    """Violations in log order, optionally of one rule, severity or cluster. A
    rule id that is neither in `known_rules` (the catalog) nor in the table is
    an UnknownName, not an empty answer."""
    newest = _clusters(tables_root, cluster)
    table = read_table(tables_root, VIOLATIONS)
    where = pc.scalar(True)
    if rule:
        seen = set(pc.unique(table.column("rule_id")).to_pylist())
        if rule not in seen | set(known_rules):
            raise UnknownName(f"no rule {rule!r}" + _did_you_mean(rule, seen | set(known_rules)))
        where &= pc.field("rule_id") == rule
    if severity:
        where &= pc.field("severity") == severity
    if cluster:
        where &= pc.field("cluster_id") == cluster
    rows = [r for r in table.filter(where).to_pylist()
            if _in_window(r["timestamp_ms"], since, newest.get(r["cluster_id"]))]
    return sorted(rows, key=lambda r: (r["cluster_id"], r["offset"], r["rule_id"],
                                       r["violation_id"]))


_DURATION = re.compile(r"^(\d+)([smhdw])$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_since(text: str) -> Since:
    """`7d`, `12h`, `30m`, `90s`, `2w` before the newest record, or an ISO
    date/time (UTC unless it says otherwise)."""
    match = _DURATION.match(text.strip())
    if match:
        return Since(lookback_ms=int(match.group(1)) * _UNIT_SECONDS[match.group(2)] * 1000)
    try:
        moment = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(
            f"--since {text!r}: give a duration like 7d, 12h, 30m "
            "or an ISO date like 2026-11-14 or 2026-11-14T08:00:00Z"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return Since(at_ms=int(moment.timestamp() * 1000))


def _in_window(ms: int | None, since: Since | None, newest_ms: int | None) -> bool:
    """Whether a time (an event, or an interval's end) is at or after the window start."""
    if since is None:
        return True
    cutoff = since.cutoff(newest_ms)
    return cutoff is None or ms is None or ms >= cutoff


def _clusters(tables_root: str, cluster: str | None) -> dict[str, int]:
    """The clusters' newest record times; UnknownName for a cluster the tables do not hold."""
    newest = newest_record_ms(tables_root)
    if cluster and cluster not in newest:
        raise UnknownName(f"no cluster {cluster!r} in the tables" + _did_you_mean(cluster, newest))
    return newest


def _topic_is(topic: str) -> pc.Expression:
    return (pc.field("topic") == topic) | (pc.field("topic_id") == topic)


def _require_partition(history: pa.Table, topic: str, partition: int, cluster: str | None) -> None:
    where = _topic_is(topic)
    if cluster:
        where &= pc.field("cluster_id") == cluster
    indexes = set(pc.unique(history.filter(where).column("partition")).to_pylist())
    if not indexes:
        names = set(pc.unique(history.column("topic")).to_pylist()) - {None}
        raise UnknownName(f"no topic {topic!r} in the tables" + _did_you_mean(topic, names))
    if partition not in indexes:
        raise UnknownName(f"topic {topic!r} has no partition {partition} "
                          f"(it has {min(indexes)}..{max(indexes)})")


def _did_you_mean(name: str, known) -> str:
    near = difflib.get_close_matches(name, sorted(known), n=1)
    return f" (did you mean {near[0]!r}?)" if near else ""


def _election(before: dict, row: dict) -> dict:
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

