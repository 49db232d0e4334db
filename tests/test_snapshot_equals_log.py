"""kraft.snapshot-equals-log: a snapshot is compared with the image the log builds to its end."""

from __future__ import annotations

import argparse
import json
import shutil

import pytest

from conftest import REAL_FIXTURES

from kraft_audit.cli import check
from kraft_audit.core.codec.logdir import list_snapshots, metadata_dir
from kraft_audit.core.image import verify_snapshots
from kraft_audit.testing.mutate import audit_log, rewrite_snapshot, snapshot_records

WITH_SNAPSHOT = REAL_FIXTURES / "renoagilsaputra__kafka"


def run_check(capsys, *argv) -> dict:
    parser = argparse.ArgumentParser()
    check.add_arguments(parser)
    check.run(parser.parse_args([str(a) for a in argv] + ["--json"]))
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def log_copy(tmp_path):
    target = tmp_path / "log"
    shutil.copytree(WITH_SNAPSHOT, target)
    return target


def mutate_snapshot(log_dir, edit) -> tuple[str, int]:
    """Re-write the log's snapshot with `edit` applied to its records (CRCs valid)."""
    end, _epoch, snap = list_snapshots(metadata_dir(log_dir))[0]
    records, _epoch, _ms = snapshot_records(snap)
    edit(records)
    rewrite_snapshot(snap, snap, records)
    return snap.name, end


def test_the_real_snapshot_equals_its_log(capsys):
    comparisons = list(verify_snapshots(WITH_SNAPSHOT))
    assert [(c.end_offset, c.replayed_from, c.differences) for c in comparisons] == [(7111, "offset 0", [])]
    report = run_check(capsys, WITH_SNAPSHOT)
    assert report["snapshots"] == [{"file": "00000000000000007111-0000000001.checkpoint", "end_offset": 7111,
                                    "replayed_from": "offset 0", "differences": 0}]
    assert report["findings"] == []


def test_a_rewritten_but_equal_snapshot_is_still_equal(log_copy):
    mutate_snapshot(log_copy, lambda records: None)  # framing by our writer changes nothing
    assert [c.differences for c in verify_snapshots(log_copy)] == [[]]


def test_a_partition_that_differs_is_named_with_both_values(log_copy, capsys):
    def edit(records):
        _t, _v, data = next(r for r in records if r[0] == "PARTITION_RECORD" and r[2]["partitionId"] == 7)
        data["leaderEpoch"] += 1
    name, end = mutate_snapshot(log_copy, edit)
    report = run_check(capsys, log_copy)
    [finding] = report["findings"]
    assert finding["rule_id"] == "kraft.snapshot-equals-log" and finding["offset"] == end - 1
    assert finding["topic"] == "__consumer_offsets" and finding["partition"] == 7
    evidence = json.loads(finding["evidence"])
    assert evidence["resource"][0] == "partition" and evidence["resource"][2] == 7
    log_epoch = evidence["log_value"]["leader_epoch"]
    assert evidence["snapshot_value"] == {"leader_epoch": log_epoch + 1}
    assert name in finding["message"] and f"log {{'leader_epoch': {log_epoch}}}" in finding["message"]


def test_a_missing_topic_a_config_and_a_broker_field_are_each_a_finding(log_copy):
    def edit(records):
        records[:] = [r for r in records if r[0] != "TOPIC_RECORD" or r[2]["name"] == "__consumer_offsets"]
        next(r for r in records if r[0] == "CONFIG_RECORD")[2]["value"] = "gzip"
        next(r for r in records if r[0] == "REGISTER_BROKER_RECORD")[2]["rack"] = "rack-x"
    mutate_snapshot(log_copy, edit)
    messages = [v.message for v in audit_log(log_copy)]
    assert len(messages) == 3, messages
    assert any("topic " in m and "snapshot absent" in m for m in messages)
    assert any("config 2/__consumer_offsets/" in m and "snapshot 'gzip'" in m for m in messages)
    assert any("broker 1:" in m and "'rack': 'rack-x'" in m for m in messages)


@pytest.mark.spark
def test_the_streaming_job_compares_the_snapshot_once(spark, log_copy, tmp_path):
    from deltalake import DeltaTable

    from kraft_audit.config import load_config
    from kraft_audit.spark.job import AuditJob

    def edit(records):
        next(r for r in records if r[0] == "PARTITION_RECORD" and r[2]["partitionId"] == 3)[2]["isr"] = []
    name, end = mutate_snapshot(log_copy, edit)
    cfg = load_config(None, {"sources.log_dirs": str(log_copy), "checkpoint": str(tmp_path / "ck"),
                             "tables": str(tmp_path / "tables"), "sources.max_records_per_trigger": 6000,
                             "audit.buckets": 2, "metrics.enabled": False}, environ={})

    def found():
        rows = DeltaTable(str(tmp_path / "tables" / "violations")).to_pyarrow_table().to_pylist()
        return [(r["rule_id"], r["cluster_id"], r["offset"], r["partition"]) for r in rows]

    assert AuditJob(cfg, spark=spark).run(available_now=True)
    assert found() == [("kraft.snapshot-equals-log", "PCbusMznQZi20FQlE8ke6g", end - 1, 3)]
    assert AuditJob(cfg, spark=spark).run(available_now=True)  # a restart compares it no more
    assert len(found()) == 1


@pytest.mark.spark
# the kill after the Delta write (a replayed batch, as tests/test_spark_e2e.py's crash
# between the sink's write and the checkpoint) in `make test-variants`, for make test's budget
@pytest.mark.parametrize("point", ["after_compare", pytest.param("after_write", marks=pytest.mark.variants)])
def test_a_kill_9_around_the_snapshot_write_leaves_one_finding(spark, log_copy, tmp_path, point):
    """Killed between writing the compared list and the Delta write, or between the Delta
    write and Spark's commit: the restarted job writes the snapshot's finding exactly once."""
    from deltalake import DeltaTable

    from kraft_audit.config import load_config
    from kraft_audit.spark.job import AuditJob
    from kraft_audit.testing.crash_check import kill_9_at_snapshot

    def edit(records):
        next(r for r in records if r[0] == "PARTITION_RECORD" and r[2]["partitionId"] == 3)[2]["isr"] = []
    _name, end = mutate_snapshot(log_copy, edit)
    values = {"sources.log_dirs": str(log_copy), "checkpoint": str(tmp_path / "ck"),
              "tables": str(tmp_path / "tables"), "sources.max_records_per_trigger": 6000,
              "audit.buckets": 2, "metrics.enabled": False}
    assert kill_9_at_snapshot(values, point) == -9
    violations = tmp_path / "tables" / "violations"

    def found():
        if not DeltaTable.is_deltatable(str(violations)):
            return []
        rows = DeltaTable(str(violations)).to_pyarrow_table().to_pylist()
        return [(r["rule_id"], r["offset"], r["partition"]) for r in rows]

    assert found() == ([] if point == "after_compare" else [("kraft.snapshot-equals-log", end - 1, 3)])
    assert AuditJob(load_config(None, values, environ={}), spark=spark).run(available_now=True)
    assert found() == [("kraft.snapshot-equals-log", end - 1, 3)]


def shipped_findings(log_dir, restarts: int = 0) -> list:
    """What the topic path finds: the shipper's messages (LogTail, the same messages again as
    a restarted shipper ships them `restarts` times), decoded as the job decodes them, judged
    by one auditor (the job's bucket 0)."""
    from kraft_audit.core.audit import Auditor
    from kraft_audit.core.codec.logdir import read_meta_properties
    from kraft_audit.core.rules.catalog import load_catalog
    from kraft_audit.ship.tail import LogTail
    from kraft_audit.spark.kafka_input import message_events

    key = read_meta_properties(log_dir).get("cluster.id", "").encode()
    auditor = Auditor(load_catalog())
    found = []
    for _ in range(restarts + 1):
        tail = LogTail(log_dir)
        while shipments := tail.poll():
            for n, s in enumerate(shipments):
                out = auditor.process(message_events(key, s.value, dict(s.headers()), f"kafka t-0@{n}"))
                found += out.violations
                assert not out.quarantined
    return found


def comparable(violations) -> list:
    return [(v.rule_id, v.offset, v.timestamp_ms, v.topic, v.partition, v.message, v.evidence)
            for v in violations]


def test_the_shipper_compares_each_snapshot_as_the_file_path_does(log_copy):
    assert shipped_findings(WITH_SNAPSHOT) == []

    def edit(records):
        next(r for r in records if r[0] == "PARTITION_RECORD" and r[2]["partitionId"] == 7)[2]["leaderEpoch"] += 1
        next(r for r in records if r[0] == "CONFIG_RECORD")[2]["value"] = "gzip"
        next(r for r in records if r[0] == "REGISTER_BROKER_RECORD")[2]["rack"] = "rack-x"
    name, end = mutate_snapshot(log_copy, edit)
    by_file = [v for v in audit_log(log_copy) if v.rule_id == "kraft.snapshot-equals-log"]
    assert len(by_file) == 3
    # a restarted shipper compares again: the auditor judges each snapshot once
    shipped = shipped_findings(log_copy, restarts=1)
    assert comparable(shipped) == comparable(by_file)


def test_a_comparison_that_is_not_one_is_quarantined():
    from kraft_audit.core.audit import Auditor
    from kraft_audit.core.rules.catalog import load_catalog
    from kraft_audit.spark.kafka_input import message_events

    headers = {"kraft.file": b"x", "kraft.position": b"0", "kraft.kind": b"comparison"}
    for value in (b"not json", b'{"file": "a.checkpoint"}'):
        out = Auditor(load_catalog()).process(message_events(b"c", value, headers, "kafka t-0@9"))
        [row] = out.quarantined
        assert "kafka t-0@9" in row.reason and out.violations == [] and out.applied == 0
