"""The analysts' questions over real Delta tables written by DeltaSinks."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest
from conftest import T0_MS

from kraft_audit import query
from kraft_audit.cli import query as query_cli
from kraft_audit.cli.main import UsageError
from kraft_audit.spark.sinks import DeltaSinks

HOUR_MS = 3_600_000


@pytest.fixture(scope="module")
def tables(tmp_path_factory, output_rows) -> str:
    """A run in three micro-batches: partition 0 under min ISR 10..20, then all
    replicas lost and an unclean election at 40 (recovered at 45); partition 1
    under min ISR since 30 and still open."""
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
        1, {"partition_history": history[3:5], "conditions": [rows.condition(30, partition=1)]}
    )
    sinks.write_batch(
        2,
        {
            "partition_history": history[5:],
            "violations": [
                rows.violation(40, rule_id="unclean-election", severity="critical"),
                rows.violation(40, rule_id="elr-not-subset-of-replicas"),
            ],
        },
    )
    return root


def test_under_min_isr_intervals_with_durations(tables):
    now = T0_MS + 100_000
    intervals = query.under_min_isr(tables, now_ms=now)

    assert [
        (i["partition"], i["start_offset"], i["end_offset"], i["open"], i["duration_seconds"])
        for i in intervals
    ] == [(1, 30, None, True, 70.0), (0, 10, 20, False, 10.0)]


def test_under_min_isr_since_keeps_intervals_that_overlap_the_window(tables):
    after_first_closed = T0_MS + 25_000
    assert [i["partition"] for i in query.under_min_isr(tables, since_ms=after_first_closed)] == [1]
    assert query.under_min_isr(tables, cluster="another-cluster") == []


def test_unclean_elections_show_the_elr_just_before(tables):
    [election] = query.unclean_elections(tables)

    assert (election["partition"], election["offset"], election["leader"]) == (0, 40, 3)
    assert election["leader_before"] == -1
    assert election["isr_before"] == [] and election["elr_before"] == []
    assert election["last_known_elr_before"] == [1]
    assert query.unclean_elections(tables, since_ms=T0_MS + 41_000) == []


def test_partition_at_an_offset(tables):
    [at_12] = query.partition_at(tables, "orders", 0, at_offset=12)
    assert (at_12["offset"], at_12["isr"], at_12["elr"]) == (10, [1], [2, 3])
    [latest] = query.partition_at(tables, "AAAAAAAAAAAAAAAAAAAAAQ", 0)  # by topic id
    assert latest["offset"] == 45
    assert query.partition_at(tables, "orders", 0, at_offset=4) == []


def test_violations_by_rule_and_since(tables):
    assert [v["offset"] for v in query.violations(tables)] == [10, 40, 40]
    assert [v["rule_id"] for v in query.violations(tables, rule="unclean-election")] == [
        "unclean-election"
    ]
    assert [v["offset"] for v in query.violations(tables, since_ms=T0_MS + 20_000)] == [40, 40]
    assert [v["severity"] for v in query.violations(tables, severity="warning")] == ["warning"]


def test_parse_since():
    now = T0_MS
    assert query.parse_since("7d", now) == now - 7 * 24 * HOUR_MS
    assert query.parse_since("90s", now) == now - 90_000
    assert query.parse_since("2025-11-21", now) == 1_763_683_200_000
    assert query.parse_since("2025-11-21T01:00:00+01:00", now) == 1_763_683_200_000
    with pytest.raises(ValueError, match="duration like 7d"):
        query.parse_since("last week", now)


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
    with pytest.raises(UsageError, match="no Delta table 'violations'"):
        cli(str(tmp_path), "violations")
    with pytest.raises(UsageError, match="duration like 7d"):
        cli(tables, "violations", "--since", "yesterday")


@pytest.mark.parametrize(
    "question",
    [
        ["violations"],
        ["under-min-isr"],
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
