"""`kraft-audit query TABLES QUESTION`: the analysts' questions over the Delta
tables of a run, printed as a table or as JSON lines (--json).

  under-min-isr [--since 7d]         intervals under min ISR and how long they lasted
                                     (an open one: until the log's newest record)
  offline [--since 7d]               intervals partitions spent offline (no leader), those
                                     still offline first
  unclean-elections [--since 7d]     each unclean election and the ISR/ELR just before
  partition --topic T --partition P [--at-offset N]
                                     a partition as it was at an offset
  violations [--rule R] [--severity S] [--since 7d]

--since 7d means the 7 days before the cluster's newest record (the log's time).
A topic, partition, cluster or rule id that the tables do not hold is an error
(exit 2); a question with no answer prints "(none)" and exits 0.
The table output reads like the other views: times in ISO-8601 UTC, no leader
as "none"; --json keeps the tables' values (milliseconds, leader -1).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys

from kraft_audit.cli import views
from kraft_audit.cli.views import duration
from kraft_audit.cli.main import UsageError

# question -> (columns of the table output, function of (questions module, args, since) -> rows).
# kraft_audit.questions (pyarrow, delta-rs) is imported only when a question is asked.
QUESTIONS = {
    "under-min-isr": (
        [
            "cluster_id",
            "topic",
            "partition",
            "start_offset",
            "start_ms",
            "end_offset",
            "end_ms",
            "duration_seconds",
        ],
        lambda q, a, since: q.under_min_isr(a.tables, since=since, cluster=a.cluster),
    ),
    "offline": (
        ["cluster_id", "topic", "partition", "open", "start_offset", "start_ms", "end_offset",
         "end_ms", "duration_seconds"],
        lambda q, a, since: q.offline(a.tables, since=since, cluster=a.cluster),
    ),
    "unclean-elections": (
        [
            "cluster_id",
            "topic",
            "partition",
            "offset",
            "timestamp_ms",
            "leader",
            "leader_epoch",
            "leader_before",
            "isr_before",
            "elr_before",
            "last_known_elr_before",
        ],
        lambda q, a, since: q.unclean_elections(a.tables, since=since, cluster=a.cluster),
    ),
    "partition": (
        [
            "cluster_id",
            "topic",
            "partition",
            "offset",
            "leader",
            "leader_epoch",
            "replicas",
            "isr",
            "elr",
            "last_known_elr",
            "leader_recovery_state",
            "partition_epoch",
            "effective_min_isr",
            "timestamp_ms",  # when the record that made this state was written
        ],
        lambda q, a, since: q.partition_at(a.tables, a.topic, a.partition, a.at_offset, a.cluster),
    ),
    "violations": (
        [
            "cluster_id",
            "offset",
            "timestamp_ms",
            "rule_id",
            "severity",
            "topic",
            "partition",
            "broker_id",
            "message",
        ],
        lambda q, a, since: q.violations(
            a.tables, rule=a.rule, since=since, cluster=a.cluster, severity=a.severity,
            known_rules=_catalog_ids(),
        ),
    ),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "tables", metavar="TABLES", help="the tables directory of a kraft-audit run"
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--cluster", help="only this cluster id")
    common.add_argument("--json", action="store_true", help="one JSON object per line")
    since = argparse.ArgumentParser(add_help=False)
    since.add_argument("--since", help="7d, 12h, 30m before the log's newest record, "
                                       "or an ISO date/time (UTC)")
    questions = parser.add_subparsers(dest="question", required=True, metavar="QUESTION")
    questions.add_parser(
        "under-min-isr",
        parents=[common, since],
        help="intervals partitions spent under min ISR, longest first",
    )
    questions.add_parser(
        "offline",
        parents=[common, since],
        help="intervals partitions spent offline (no leader), those still offline first",
    )
    questions.add_parser(
        "unclean-elections",
        parents=[common, since],
        help="unclean leader elections with the ISR and ELR just before",
    )
    one = questions.add_parser("partition", parents=[common], help="a partition at an offset")
    one.add_argument("--topic", required=True, help="topic name or topic id")
    one.add_argument("--partition", required=True, type=int)
    one.add_argument(
        "--at-offset", type=int, help="metadata log offset (default: the latest state)"
    )
    found = questions.add_parser("violations", parents=[common, since], help="broken invariants")
    found.add_argument("--rule", help="only this rule id")
    found.add_argument("--severity", choices=("critical", "error", "warning", "info"))


def run(args: argparse.Namespace) -> int:
    from kraft_audit import questions

    columns, ask = QUESTIONS[args.question]
    try:
        since = questions.parse_since(args.since) if getattr(args, "since", None) else None
        rows = ask(questions, args, since)
    except (ValueError, questions.MissingTable, questions.UnknownName) as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        for row in rows:
            print(json.dumps(row, default=_json_default))
    else:
        from kraft_audit.questions import partial_logs

        for line in partial_logs(args.tables, getattr(args, "cluster", None)):
            print(line, file=sys.stderr)
        print_table(rows, columns)
    return 0



def _catalog_ids() -> set[str]:
    from kraft_audit.core.rules import load_catalog

    return {spec.rule_id for spec in load_catalog().rules}


def print_table(rows: list[dict], columns: list[str], out=None) -> None:
    views.print_table(rows, columns, out, _cell)


def _cell(column: str, value) -> str:
    """Times in ISO-8601 UTC, no leader as "none", durations as 1h 2m (views.cell)."""
    if column == "duration_seconds" and value is not None:
        return duration(value)
    return views.cell(column, value)


def _json_default(value):
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
