"""The analysts' questions (kraft_audit/questions.py, `kraft-audit query`) as
Spark SQL over the Delta tables, read through Spark's Delta connector.

Each question is one SQL text over views named like the tables
(`register_tables`); docs/tables.md shows them. The answers are the same rows,
in the same order, as `kraft_audit.questions` gives (tests/test_delta_spark.py
runs both on the same tables). Names that do not exist give an empty answer
here, not the CLI's error.

Values are inlined as SQL literals, not passed as `spark.sql(args=...)`: with
the Delta session extension loaded, pyspark 4.2 / Delta 4.4.0 reports every
parameter marker (named or positional) as UNBOUND_SQL_PARAMETER.
"""

from __future__ import annotations

from kraft_audit.questions import Since
from kraft_audit.tables import TABLES, table
from kraft_audit.tables.read import spark_frame

# Each cluster's newest record time: "now" for open intervals and --since.
_NEWEST = """newest AS (
  SELECT cluster_id, max(last_timestamp_ms) AS newest_ms FROM gauges GROUP BY cluster_id)"""

UNDER_MIN_ISR = f"""
WITH {_NEWEST},
intervals AS (
  SELECT c.*, coalesce(c.end_ms, n.newest_ms) AS until_ms, n.newest_ms
  FROM conditions c LEFT JOIN newest n ON c.cluster_id = n.cluster_id
  WHERE c.condition = 'under_min_isr' AND ({{cluster}} IS NULL OR c.cluster_id = {{cluster}}))
SELECT interval_id, condition, cluster_id, topic, topic_id, `partition`,
       start_offset, start_ms, end_offset, end_ms, batch_id,
       end_offset IS NULL AS open,
       (until_ms - start_ms) / 1000 AS duration_seconds
FROM intervals
WHERE until_ms IS NULL OR {{cutoff}} IS NULL OR until_ms >= {{cutoff}}
ORDER BY coalesce(duration_seconds, 0) DESC, start_offset, interval_id
"""

# An unclean election: RECOVERED (0) in the partition's previous state, RECOVERING (1) now.
UNCLEAN_ELECTIONS = f"""
WITH {_NEWEST},
h AS (
  SELECT *,
         lag(leader_recovery_state) OVER w AS state_before,
         lag(leader) OVER w AS leader_before,
         lag(isr) OVER w AS isr_before,
         lag(elr) OVER w AS elr_before,
         lag(last_known_elr) OVER w AS last_known_elr_before
  FROM partition_history
  WHERE {{cluster}} IS NULL OR cluster_id = {{cluster}}
  WINDOW w AS (PARTITION BY cluster_id, topic_id, `partition` ORDER BY `offset`))
SELECT h.cluster_id, topic, topic_id, `partition`, `offset`, timestamp_ms, leader, leader_epoch,
       isr, leader_before, isr_before, elr_before, last_known_elr_before,
       array_sort(array_union(coalesce(isr_before, CAST(array() AS array<int>)),
                              coalesce(elr_before, CAST(array() AS array<int>))))
         AS clean_candidates_before
FROM h LEFT JOIN newest n ON h.cluster_id = n.cluster_id
WHERE state_before = 0 AND leader_recovery_state = 1
  AND ({{cutoff}} IS NULL OR timestamp_ms >= {{cutoff}})
ORDER BY timestamp_ms DESC, `offset`, h.cluster_id, topic_id, `partition`
"""

PARTITION_AT = """
WITH ranked AS (
  SELECT *, row_number() OVER (PARTITION BY cluster_id ORDER BY `offset` DESC) AS rank
  FROM partition_history
  WHERE (topic = {topic} OR topic_id = {topic}) AND `partition` = {partition}
    AND ({at_offset} IS NULL OR `offset` <= {at_offset})
    AND ({cluster} IS NULL OR cluster_id = {cluster}))
SELECT cluster_id, topic, topic_id, `partition`, replicas, isr, elr, last_known_elr,
       adding_replicas, removing_replicas, leader, leader_epoch, partition_epoch,
       CASE leader_recovery_state WHEN 0 THEN 'RECOVERED' WHEN 1 THEN 'RECOVERING'
            ELSE CAST(leader_recovery_state AS STRING) END AS leader_recovery_state,
       effective_min_isr, deleted, `offset`, timestamp_ms, record_type, batch_id, date
FROM ranked WHERE rank = 1
ORDER BY cluster_id
"""

VIOLATIONS = f"""
WITH {_NEWEST}
SELECT v.* FROM violations v LEFT JOIN newest n ON v.cluster_id = n.cluster_id
WHERE ({{rule}} IS NULL OR rule_id = {{rule}})
  AND ({{severity}} IS NULL OR severity = {{severity}})
  AND ({{cluster}} IS NULL OR v.cluster_id = {{cluster}})
  AND ({{cutoff}} IS NULL OR timestamp_ms >= {{cutoff}})
ORDER BY v.cluster_id, `offset`, rule_id, violation_id
"""


def register_tables(spark, tables_root: str, names=tuple(TABLES)) -> None:
    """Tables of a run (all by default) as temporary views of the same name."""
    for name in names:
        spark_frame(spark, tables_root, name).createOrReplaceTempView(table(name).name)


def literal(value) -> str:
    """A Python value as a Spark SQL literal (None: NULL)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    text = str(value).replace("\\", "\\\\").replace("'", "\\'")
    return f"'{text}'"


def cutoff(since: Since | None) -> str:
    """The window start as SQL: fixed, or a look-back from the row's cluster's `newest_ms`."""
    if since is None:
        return "NULL"
    if since.at_ms is not None:
        return literal(since.at_ms)
    return f"(newest_ms - {literal(since.lookback_ms)})"


def under_min_isr(spark, tables_root: str, since: Since | None = None,
                  cluster: str | None = None) -> list[dict]:
    return _ask(spark, tables_root, UNDER_MIN_ISR, ("conditions", "gauges"),
                cluster=literal(cluster), cutoff=cutoff(since))


def unclean_elections(spark, tables_root: str, since: Since | None = None,
                      cluster: str | None = None) -> list[dict]:
    return _ask(spark, tables_root, UNCLEAN_ELECTIONS, ("partition_history", "gauges"),
                cluster=literal(cluster), cutoff=cutoff(since))


def partition_at(spark, tables_root: str, topic: str, partition: int,
                 at_offset: int | None = None, cluster: str | None = None) -> list[dict]:
    return _ask(spark, tables_root, PARTITION_AT, ("partition_history",), topic=literal(topic),
                partition=literal(int(partition)), at_offset=literal(at_offset),
                cluster=literal(cluster))


def violations(spark, tables_root: str, rule: str | None = None, since: Since | None = None,
               cluster: str | None = None, severity: str | None = None) -> list[dict]:
    return _ask(spark, tables_root, VIOLATIONS, ("violations", "gauges"), rule=literal(rule),
                severity=literal(severity), cluster=literal(cluster), cutoff=cutoff(since))


def _ask(spark, tables_root: str, sql: str, tables: tuple[str, ...], **values: str) -> list[dict]:
    # only the tables the question reads: each view is a Delta snapshot to load
    register_tables(spark, tables_root, tables)
    return [row.asDict(recursive=True) for row in spark.sql(sql.format(**values)).collect()]
