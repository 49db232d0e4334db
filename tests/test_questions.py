"""The analysts' questions over real Delta tables written by DeltaSinks."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest
from conftest import T0_MS

from kraft_audit import questions
from kraft_audit.cli import query as query_cli
from kraft_audit.cli.main import UsageError
from kraft_audit.spark.sinks import DeltaSinks

HOUR_MS = 3_600_000
NEWEST_MS = T0_MS + 100_000  # the log's newest record, long before the wall clock's now


@pytest.fixture(scope="module")
def tables(tmp_path_factory, output_rows) -> str:
    """A run in three micro-batches: partition 0 under min ISR 10..20, then all
    replicas lost and an unclean election at 40 (recovered at 45); partition 1
    under min ISR since 30 and still open; the newest record at 100."""
    rows = output_rows
    root = str(tmp_path_factory.mktemp("tables"))
    sinks = DeltaSinks(root, app_id="run-1")
    history = [
        rows.partition(5, isr=[1, 2, 3]),
        rows.partition(10, isr=[1], elr=[2, 3]),
        rows.partition(20, isr=[1, 2], elr=[]),
        rows.partition(30, partition=1, isr=[2], elr=[3]),
        rows.partition(35, leader=-1, isr=[], elr=[], last_known_elr=[1]),
        rows.partition(40, leader=3, isr=[3], elr=[], last_known_elr=[], leader_recovery_state=1),
        rows.partition(45, leader=3, isr=[3], leader_recovery_state=0),
    ]
    sinks.write_batch(
        0,
        {
            "partition_history": history[:3],
            "conditions": [rows.condition(10), rows.condition(10, end=20)],
            "violations": [rows.violation(10, severity="warning", rule_id="isr-below-min")],
        },
    )
    sinks.write_batch(
        1, {"partition_history": history[3:5],
            "conditions": [rows.condition(30, partition=1), rows.condition(35, condition="leaderless"),
                           rows.condition(60, partition=2, condition="leaderless")]}
    )
    sinks.write_batch(
        2,
        {
            "partition_history": history[5:],
            "conditions": [rows.condition(35, end=40, condition="leaderless")],
            "violations": [
                rows.violation(40, rule_id="unclean-election", severity="critical"),
                rows.violation(40, rule_id="elr-not-subset-of-replicas"),
            ],
            "gauges": [rows.gauges(bucket=0, last_offset=100, last_timestamp_ms=NEWEST_MS),
                       rows.gauges(bucket=1, last_offset=90, last_timestamp_ms=NEWEST_MS - 10_000)],
        },
    )
    return root


def test_under_min_isr_intervals_with_durations_in_the_logs_time(tables):
    intervals = questions.under_min_isr(tables)

    assert [
        (i["partition"], i["start_offset"], i["end_offset"], i["open"], i["duration_seconds"])
        for i in intervals
    ] == [(1, 30, None, True, 70.0), (0, 10, 20, False, 10.0)]


def test_under_min_isr_since_keeps_intervals_that_overlap_the_window(tables):
    after_first_closed = questions.Since(at_ms=T0_MS + 25_000)
    assert [i["partition"] for i in questions.under_min_isr(tables, since=after_first_closed)] == [1]
    # 85 s before the newest record (T0+15 s): the interval that closed at 20 s overlaps
    assert [i["partition"] for i in questions.under_min_isr(tables, since=questions.parse_since("85s"))] \
        == [1, 0]
    assert [i["partition"] for i in questions.under_min_isr(tables, since=questions.parse_since("75s"))] \
        == [1]
    with pytest.raises(questions.UnknownName, match="no cluster 'another-cluster'"):
        questions.under_min_isr(tables, cluster="another-cluster")


def test_offline_partitions_still_offline_first_then_the_longest(tables):
    """Partition 0 had no leader from offset 35 to 40; partition 2 has none since 60."""
    rows = [(i["partition"], i["start_offset"], i["end_offset"], i["open"], i["duration_seconds"])
            for i in questions.offline(tables)]
    assert rows == [(2, 60, None, True, 40.0), (0, 35, 40, False, 5.0)]
    assert [i["partition"] for i in questions.offline(tables, since=questions.Since(at_ms=T0_MS + 50_000))] \
        == [2]
    assert all(i["condition"] == "leaderless" for i in questions.offline(tables))


def test_unclean_elections_show_the_elr_just_before(tables):
    [election] = questions.unclean_elections(tables)

    assert (election["partition"], election["offset"], election["leader"]) == (0, 40, 3)
    assert election["leader_before"] == -1
    assert election["isr_before"] == [] and election["elr_before"] == []
    assert election["last_known_elr_before"] == [1]
    assert questions.unclean_elections(tables, since=questions.Since(at_ms=T0_MS + 41_000)) == []
    assert len(questions.unclean_elections(tables, since=questions.parse_since("60s"))) == 1
    assert questions.unclean_elections(tables, since=questions.parse_since("59s")) == []


def test_partition_at_an_offset(tables):
    [at_12] = questions.partition_at(tables, "orders", 0, at_offset=12)
    assert (at_12["offset"], at_12["isr"], at_12["elr"]) == (10, [1], [2, 3])
    [latest] = questions.partition_at(tables, "AAAAAAAAAAAAAAAAAAAAAQ", 0)  # by topic id
    assert (latest["offset"], latest["leader_recovery_state"]) == (45, "RECOVERED")
    [recovering] = questions.partition_at(tables, "orders", 0, at_offset=42)
    assert recovering["leader_recovery_state"] == "RECOVERING"
    assert questions.partition_at(tables, "orders", 0, at_offset=4) == []  # not created yet
    with pytest.raises(questions.UnknownName, match="no topic 'order'.*did you mean 'orders'"):
        questions.partition_at(tables, "order", 0)
    with pytest.raises(questions.UnknownName, match="has no partition 7 .it has 0..1"):
        questions.partition_at(tables, "orders", 7)


def test_violations_by_rule_and_since(tables):
    assert [v["offset"] for v in questions.violations(tables)] == [10, 40, 40]
    assert [v["rule_id"] for v in questions.violations(tables, rule="unclean-election")] == [
        "unclean-election"
    ]
    assert [v["offset"] for v in questions.violations(tables, since=questions.Since(at_ms=T0_MS + 20_000))] \
        == [40, 40]
    assert [v["offset"] for v in questions.violations(tables, since=questions.parse_since("1m"))] == [40, 40]
    assert [v["severity"] for v in questions.violations(tables, severity="warning")] == ["warning"]
    # a catalog rule that never fired is an empty answer; a name nobody knows is an error
    assert questions.violations(tables, rule="kip704.field-range", known_rules={"kip704.field-range"}) == []
    with pytest.raises(questions.UnknownName, match="no rule 'no.such.rule'"):
        questions.violations(tables, rule="no.such.rule")


def test_parse_since():
    newest = T0_MS
    assert questions.parse_since("7d").cutoff(newest) == newest - 7 * 24 * HOUR_MS
    assert questions.parse_since("90s").cutoff(newest) == newest - 90_000
    assert questions.parse_since("2025-11-21").cutoff(newest) == 1_763_683_200_000
    assert questions.parse_since("2025-11-21T01:00:00+01:00").cutoff(None) == 1_763_683_200_000
    with pytest.raises(ValueError, match="duration like 7d"):
        questions.parse_since("last week")


def cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="kraft-audit query")
    query_cli.add_arguments(parser)
    return query_cli.run(parser.parse_args(list(argv)))


def test_cli_prints_a_table(tables, capsys):
    assert (
        cli(tables, "partition", "--topic", "orders", "--partition", "0", "--at-offset", "12") == 0
    )
    header, row = capsys.readouterr().out.splitlines()
    assert header.split()[:4] == ["cluster_id", "topic", "partition", "offset"]
    assert row.split()[:8] == ["cluster-a", "orders", "0", "10", "1", "10", "1,2,3", "1"]


def test_cli_json_lines(tables, capsys):
    assert cli(tables, "unclean-elections", "--json") == 0
    [line] = capsys.readouterr().out.splitlines()
    assert json.loads(line)["elr_before"] == []

    assert cli(tables, "under-min-isr", "--since", "3650d") == 0
    out = capsys.readouterr().out
    assert "0m10s" in out and "2025-11-21T04:40:10Z" in out


def test_cli_user_mistakes(tmp_path, tables):
    with pytest.raises(UsageError, match="no Delta table '(violations|gauges)'"):
        cli(str(tmp_path), "violations")
    with pytest.raises(UsageError, match="duration like 7d"):
        cli(tables, "violations", "--since", "yesterday")
    with pytest.raises(UsageError, match="no rule 'no.such.rule'"):
        cli(tables, "violations", "--rule", "no.such.rule")
    with pytest.raises(UsageError, match="no topic 'nope'"):
        cli(tables, "partition", "--topic", "nope", "--partition", "0")
    with pytest.raises(UsageError, match="no cluster 'elsewhere'"):
        cli(tables, "under-min-isr", "--cluster", "elsewhere")


@pytest.mark.parametrize(
    "question",
    [
        ["violations"],
        ["under-min-isr"],
        ["offline"],
        ["unclean-elections"],
        ["partition", "--topic", "orders", "--partition", "0", "--at-offset", "40"],
    ],
)
def test_query_command_exits_cleanly(tables, question):
    # In a process of its own: a reader that leaves threads behind aborts only
    # at interpreter exit, which an in-process call never reaches.
    done = subprocess.run(
        [sys.executable, "-m", "kraft_audit.cli.main", "query", tables, *question, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "terminate called" not in done.stderr
    assert done.stdout.strip(), f"no rows for {question}"
