"""The analysts' questions (kraft_audit/tables/questions.py, `kraft-audit
query`) as Spark SQL over the Delta tables, read through Spark's Delta
connector: each declared SQL text rendered for Spark (`render`) over views
named like the tables (`register_tables`).

The answers are the same rows, in the same order, as `kraft_audit.questions`
gives with delta-rs (tests/test_delta_spark.py runs both on the same tables).
Names that do not exist give an empty answer here, not the CLI's error.
"""

from __future__ import annotations

from kraft_audit.tables import TABLES, table
from kraft_audit.tables import questions as q
from kraft_audit.tables.questions import Since, cutoff, literal  # noqa: F401 (exported here too)
from kraft_audit.tables.read import spark_frame


def register_tables(spark, tables_root: str, names=tuple(TABLES)) -> None:
    """Tables of a run (all by default; declarations or names) as temporary views of the same name."""
    for name in names:
        spark_frame(spark, tables_root, name).createOrReplaceTempView(table(name).name)


def ask(spark, tables_root: str, question: q.Question, since: Since | None = None,
        **values) -> list[dict]:
    """A declared question's rows, by Spark SQL."""
    # only the tables the question reads: each view is a Delta snapshot to load
    register_tables(spark, tables_root, question.tables)
    text = q.render(question, q.SPARK, since, **values)
    return [row.asDict(recursive=True) for row in spark.sql(text).collect()]


def under_min_isr(spark, tables_root: str, since: Since | None = None,
                  cluster: str | None = None) -> list[dict]:
    return ask(spark, tables_root, q.UNDER_MIN_ISR, since, cluster=cluster)


def offline(spark, tables_root: str, since: Since | None = None,
            cluster: str | None = None) -> list[dict]:
    return ask(spark, tables_root, q.OFFLINE, since, cluster=cluster)


def unclean_elections(spark, tables_root: str, since: Since | None = None,
                      cluster: str | None = None) -> list[dict]:
    return ask(spark, tables_root, q.UNCLEAN_ELECTIONS, since, cluster=cluster)


def partition_at(spark, tables_root: str, topic: str, partition: int,
                 at_offset: int | None = None, cluster: str | None = None) -> list[dict]:
    return ask(spark, tables_root, q.PARTITION_AT, topic=topic, partition=int(partition),
               at_offset=at_offset, cluster=cluster)


def violations(spark, tables_root: str, rule: str | None = None, since: Since | None = None,
               cluster: str | None = None, severity: str | None = None) -> list[dict]:
    return ask(spark, tables_root, q.VIOLATIONS_IN, since, rule=rule, severity=severity,
               cluster=cluster)
