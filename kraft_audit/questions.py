"""The analysts' questions over kraft-audit's Delta tables, as plain functions.

Each question is one SQL text (kraft_audit/tables/questions.py), run here by
delta-rs's own query engine (DataFusion) and by Spark SQL in
kraft_audit/spark/questions_sql.py; these functions add what only a person
at a prompt needs: a cluster, topic, partition or rule that the tables do not
hold is an UnknownName (with a "did you mean"), not an empty answer. They
return plain dicts, newest facts first where that matters. Time is the log's:
an open interval lasts until its cluster's newest record, and `--since 7d`
means the 7 days before that record. `kraft-audit query` prints them; a
notebook can call them directly. docs/tables.md shows the SQL.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re

import pyarrow.compute as pc

from kraft_audit.errors import MissingTable, UnknownName  # noqa: F401 (exported here too)
from kraft_audit.tables import GAUGES, PARTITION_HISTORY, VIOLATIONS
from kraft_audit.tables import questions as sql
from kraft_audit.tables.questions import Since
from kraft_audit.tables.read import count_rows, query, read_rows, read_table  # noqa: F401 (notebooks)


def ask(tables_root: str, question: sql.Question, since: Since | None = None, **values) -> list[dict]:
    """A declared question's rows, by delta-rs's DataFusion engine."""
    text = sql.render(question, sql.DATAFUSION, since, **values)
    return query(tables_root, text, question.tables).to_pylist()


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
    _clusters(tables_root, cluster)
    return ask(tables_root, sql.UNDER_MIN_ISR, since, cluster=cluster)


def offline(tables_root: str, since: Since | None = None, cluster: str | None = None) -> list[dict]:
    """Intervals partitions spent offline (leaderless) that overlap the window from
    `since` to the newest record: those still offline first, then the longest."""
    _clusters(tables_root, cluster)
    return ask(tables_root, sql.OFFLINE, since, cluster=cluster)


def unclean_elections(tables_root: str, since: Since | None = None, cluster: str | None = None) -> list[dict]:
    """Every unclean leader election (`rules.elections.is_unclean_election`: the
    partition turned from RECOVERED into RECOVERING), newest first, with the
    partition as it was just before: ISR, ELR, LastKnownElr and leader."""
    _clusters(tables_root, cluster)
    return ask(tables_root, sql.UNCLEAN_ELECTIONS, since, cluster=cluster)


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
    _clusters(tables_root, cluster)
    _require_partition(tables_root, topic, partition, cluster)
    return ask(tables_root, sql.PARTITION_AT, topic=topic, partition=int(partition),
               at_offset=at_offset, cluster=cluster)


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
    _clusters(tables_root, cluster)
    if rule:
        seen = set(pc.unique(read_table(tables_root, VIOLATIONS, ["rule_id"]).column("rule_id"))
                   .to_pylist())
        if rule not in seen | set(known_rules):
            raise UnknownName(f"no rule {rule!r}" + _did_you_mean(rule, seen | set(known_rules)))
    return ask(tables_root, sql.VIOLATIONS_IN, since, rule=rule, severity=severity,
               cluster=cluster)


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


def _clusters(tables_root: str, cluster: str | None) -> dict[str, int]:
    """The clusters' newest record times; UnknownName for a cluster the tables do not hold."""
    newest = newest_record_ms(tables_root)
    if cluster and cluster not in newest:
        raise UnknownName(f"no cluster {cluster!r} in the tables" + _did_you_mean(cluster, newest))
    return newest


def _require_partition(tables_root: str, topic: str, partition: int, cluster: str | None) -> None:
    history = read_table(tables_root, PARTITION_HISTORY,
                         ["cluster_id", "topic", "topic_id", "partition"])
    where = (pc.field("topic") == topic) | (pc.field("topic_id") == topic)
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
