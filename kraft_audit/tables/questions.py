"""The analysts' questions over the Delta tables, each written once: one SQL
text with named parameters, rendered for delta-rs's DataFusion engine
(kraft_audit/questions.py, `kraft-audit query`) and for Spark SQL
(kraft_audit/spark/questions_sql.py); docs/tables.md shows the same texts
(kraft_audit/tables/docs.py). tests/test_delta_spark.py checks that both
engines give the same rows in the same order.

The texts are written in the dialect both engines share, with two rules:
- identifiers that are keywords (`partition`, `offset`) are quoted with
  backticks, which the DataFusion rendering turns into double quotes;
- `{empty_ids}` is the one expression the engines spell differently (an empty
  `list<int32>`: Spark `array()`, DataFusion `make_array()`; `DIALECTS`).
Parameters are `{name}` fields, filled with SQL literals of the engine
(`literal`): with the Delta session extension loaded, pyspark 4.2 / Delta
4.4.0 reports every parameter marker (named or positional) as
UNBOUND_SQL_PARAMETER, so values are inlined. `{cutoff}` is the window start
(`Since`): a fixed time, or a look-back from the row's cluster's newest record.

Time is the log's: an open interval lasts until its cluster's newest record
(`gauges.last_timestamp_ms`), and `--since 7d` means the 7 days before it.
Plain text: no engine is imported here.
"""

from __future__ import annotations

from dataclasses import dataclass

from kraft_audit.core.replay.partition import RECOVERED, RECOVERING
from kraft_audit.tables.schema import CONDITIONS, GAUGES, PARTITION_HISTORY, VIOLATIONS, Table


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


@dataclass(frozen=True)
class Question:
    name: str  # the function (kraft_audit.questions, spark.questions_sql)
    command: str  # kraft-audit query COMMAND
    summary: str
    tables: tuple[Table, ...]  # the tables it reads, registered under their names
    params: tuple[str, ...]  # named parameters (besides `cutoff`)
    sql: str


# Each cluster's newest record time: "now" for open intervals and --since.
_NEWEST = """newest AS (
  SELECT cluster_id, max(last_timestamp_ms) AS newest_ms FROM gauges GROUP BY cluster_id)"""

def _intervals(condition: str, order: str) -> str:
    """Intervals of one condition that overlap the window, with their durations."""
    return f"""
WITH {_NEWEST},
intervals AS (
  SELECT c.*, coalesce(c.end_ms, n.newest_ms) AS until_ms, n.newest_ms
  FROM conditions c LEFT JOIN newest n ON c.cluster_id = n.cluster_id
  WHERE c.condition = '{condition}' AND ({{cluster}} IS NULL OR c.cluster_id = {{cluster}}))
SELECT interval_id, condition, cluster_id, topic, topic_id, `partition`,
       start_offset, start_ms, end_offset, end_ms, batch_id,
       end_offset IS NULL AS open,
       CAST(until_ms - start_ms AS DOUBLE) / 1000 AS duration_seconds
FROM intervals
WHERE until_ms IS NULL OR ({{cutoff}}) IS NULL OR until_ms >= {{cutoff}}
ORDER BY {order}
"""


UNDER_MIN_ISR = Question(
    "under_min_isr", "under-min-isr",
    "Intervals partitions spent under min ISR that overlap the window from `since` to the "
    "newest record, longest first, with their duration (an open interval lasts until its "
    "cluster's newest record).",
    (CONDITIONS, GAUGES), ("cluster",),
    _intervals("under_min_isr", "coalesce(duration_seconds, 0) DESC, start_offset, interval_id"))

OFFLINE = Question(
    "offline", "offline",
    "Intervals partitions spent offline (no leader: `leader -1`, Kafka's "
    "OfflinePartitionsCount) that overlap the window from `since` to the newest record: the "
    "partitions still offline first, then the longest, with their duration (an open interval "
    "lasts until its cluster's newest record).",
    (CONDITIONS, GAUGES), ("cluster",),
    _intervals("leaderless", "open DESC, coalesce(duration_seconds, 0) DESC, start_offset, "
                             "interval_id"))

UNCLEAN_ELECTIONS = Question(
    "unclean_elections", "unclean-elections",
    "Every unclean leader election (the partition turned from RECOVERED into RECOVERING: "
    "`rules.elections.is_unclean_election`, the definition `check` and `/metrics` count), "
    "newest first, with the partition as it was just before: ISR, ELR, LastKnownElr and leader.",
    (PARTITION_HISTORY, GAUGES), ("cluster",), f"""
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
       array_sort(array_union(coalesce(isr_before, {{empty_ids}}),
                              coalesce(elr_before, {{empty_ids}}))) AS clean_candidates_before
FROM h LEFT JOIN newest n ON h.cluster_id = n.cluster_id
WHERE state_before = {RECOVERED} AND leader_recovery_state = {RECOVERING}
  AND (({{cutoff}}) IS NULL OR timestamp_ms >= {{cutoff}})
ORDER BY timestamp_ms DESC, `offset`, h.cluster_id, topic_id, `partition`
""")

PARTITION_AT = Question(
    "partition_at", "partition",
    "The partition as it was at `at_offset` (the newest state at or before it; the latest "
    "without one), one row per cluster. `topic` is a topic name or a topic id.",
    (PARTITION_HISTORY,), ("topic", "partition", "at_offset", "cluster"), f"""
WITH ranked AS (
  SELECT *, row_number() OVER (PARTITION BY cluster_id ORDER BY `offset` DESC) AS rank
  FROM partition_history
  WHERE (topic = {{topic}} OR topic_id = {{topic}}) AND `partition` = {{partition}}
    AND ({{at_offset}} IS NULL OR `offset` <= {{at_offset}})
    AND ({{cluster}} IS NULL OR cluster_id = {{cluster}}))
SELECT cluster_id, topic, topic_id, `partition`, replicas, isr, elr, last_known_elr,
       adding_replicas, removing_replicas, leader, leader_epoch, partition_epoch,
       CASE leader_recovery_state WHEN {RECOVERED} THEN 'RECOVERED'
            WHEN {RECOVERING} THEN 'RECOVERING'
            ELSE CAST(leader_recovery_state AS STRING) END AS leader_recovery_state,
       effective_min_isr, deleted, `offset`, timestamp_ms, record_type, batch_id, date
FROM ranked WHERE rank = 1
ORDER BY cluster_id
""")

VIOLATIONS_IN = Question(
    "violations", "violations",
    "Violations in log order, optionally of one rule, severity or cluster.",
    (VIOLATIONS, GAUGES), ("rule", "severity", "cluster"), f"""
WITH {_NEWEST}
SELECT v.* FROM violations v LEFT JOIN newest n ON v.cluster_id = n.cluster_id
WHERE ({{rule}} IS NULL OR rule_id = {{rule}})
  AND ({{severity}} IS NULL OR severity = {{severity}})
  AND ({{cluster}} IS NULL OR v.cluster_id = {{cluster}})
  AND (({{cutoff}}) IS NULL OR timestamp_ms >= {{cutoff}})
ORDER BY v.cluster_id, `offset`, rule_id, violation_id
""")

QUESTIONS: dict[str, Question] = {q.name: q for q in [UNDER_MIN_ISR, OFFLINE, UNCLEAN_ELECTIONS,
                                                       PARTITION_AT, VIOLATIONS_IN]}


# ------------------------------------------------------------------ engines

def _spark_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _standard_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@dataclass(frozen=True)
class Dialect:
    """What one engine spells its own way."""

    name: str
    quote: str  # for identifiers written with backticks in the texts
    string: object  # str -> its SQL string literal
    empty_ids: str  # an empty list<int32>


SPARK = Dialect("spark", "`", _spark_string, "CAST(array() AS array<int>)")
DATAFUSION = Dialect("datafusion", '"', _standard_string, "CAST(make_array() AS INT[])")
DIALECTS = {d.name: d for d in (SPARK, DATAFUSION)}


def literal(value, dialect: Dialect = SPARK) -> str:
    """A Python value as an SQL literal of the engine (None: NULL)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    return dialect.string(str(value))


def cutoff(since: Since | None, dialect: Dialect = SPARK) -> str:
    """The window start as SQL: fixed, or a look-back from the row's cluster's `newest_ms`."""
    if since is None:
        return "NULL"
    if since.at_ms is not None:
        return literal(since.at_ms, dialect)
    return f"(newest_ms - {literal(since.lookback_ms, dialect)})"


def render(question: Question, dialect: Dialect | str, since: Since | None = None,
           **values) -> str:
    """The question's SQL for one engine, its parameters filled in (every one it
    declares must be given; None is NULL)."""
    dialect = DIALECTS[dialect] if isinstance(dialect, str) else dialect
    missing = set(question.params) - set(values)
    unknown = set(values) - set(question.params)
    if missing or unknown:
        raise TypeError(f"question {question.name}: parameters {sorted(question.params)}, "
                        f"given {sorted(values)}")
    sql = question.sql.replace("`", dialect.quote)  # before values: a literal keeps its backticks
    return sql.format(cutoff=cutoff(since, dialect), empty_ids=dialect.empty_ids,
                      **{k: literal(v, dialect) for k, v in values.items()})


def docs() -> str:
    """The questions' section of docs/tables.md: each declared text as both engines run it."""
    parts = []
    for q in QUESTIONS.values():
        params = ", ".join(f"`{{{p}}}`" for p in (*q.params, "cutoff"))
        parts.append(f"#### {q.name} (`kraft-audit query TABLES {q.command}`)\n\n{q.summary} "
                     f"Reads {', '.join(f'`{t.name}`' for t in q.tables)}; parameters {params}.\n\n"
                     f"```sql{q.sql.rstrip()}\n```\n\n")
    return "".join(parts)
