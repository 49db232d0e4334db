"""`kraft-audit describe`: partition state after replay, like kafka-topics --describe."""

from __future__ import annotations

import argparse
import json

import pytest

from conftest import REAL_FIXTURES

from kraft_audit.cli import describe
from kraft_audit.cli.main import UsageError

FIXTURE = REAL_FIXTURES / "subpxl__streamprocessing"


def run_describe(*argv) -> int:
    parser = argparse.ArgumentParser()
    describe.add_arguments(parser)
    return describe.run(parser.parse_args([str(a) for a in argv]))


def test_table_at_the_end_of_the_log(capsys):
    assert run_describe(FIXTURE, "--topic", "__consumer_offsets") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("Topic: __consumer_offsets\tTopicId: A1HQPtsjSJmoitW78c4jaA\t"
                               "PartitionCount: 50\tReplicationFactor: 1")
    assert lines[1] == ("\tTopic: __consumer_offsets\tPartition: 0\tLeader: none\tReplicas: 1\tIsr: 1\t"
                        "Elr: \tLastKnownElr: \tLeaderRecoveryState: RECOVERED\tLeaderEpoch: 5\t"
                        "PartitionEpoch: 5")
    assert len(lines) == 51


def test_json_at_an_offset(capsys):
    run_describe(FIXTURE, "--json", "--at-offset", "300", "--topic", "__consumer_offsets")
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 50
    assert (rows[0]["leader"], rows[0]["leader_epoch"], rows[0]["partition_epoch"]) == (1, 0, 0)


def test_unknown_topic_is_a_usage_error():
    with pytest.raises(UsageError, match="does not exist at offset 5"):
        run_describe(FIXTURE, "--topic", "__consumer_offsets", "--at-offset", "5")
