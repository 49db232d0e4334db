"""Snapshots equal to the log on the shipper's path, for real: a controller that writes a
snapshot every few seconds, its log shipped by `kraft-audit ship` beside it and audited
from the topic: each snapshot compared, nothing found. A copy of that log with one
snapshot rewritten, shipped to another topic: the job finds through the topic exactly
what a file-based run of the copy finds."""

from __future__ import annotations

import json
import shutil

import pytest

from kraft_audit.config import load_config
from kraft_audit.core.codec.logdir import list_snapshots, metadata_dir
from kraft_audit.spark.job import AuditJob
from kraft_audit.testing.crash_check import comparable_rows
from kraft_audit.testing.mutate import rewrite_snapshot, snapshot_records
from kraft_audit.testing.realkafka.cluster import KafkaCluster, wait_until
from kraft_audit.testing.realkafka.ship_process import ShipProcess, create_topic
from services import KAFKA_VERSIONS

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

RULE = "kraft.snapshot-equals-log"


def comparisons_in(cluster: KafkaCluster, topic: str) -> list[dict]:
    """The comparison messages the shipper produced to `topic`, read back from Kafka."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"read-{topic}",
                         "auto.offset.reset": "earliest", "enable.partition.eof": True})
    consumer.subscribe([topic])
    found, eofs, idle = [], set(), 0
    try:
        while idle < 20 and len(eofs) < 2:  # the topic has two partitions
            msg = consumer.poll(1.0)
            if msg is None:
                idle += 1
                continue
            if msg.error():
                eofs.add(msg.partition())
                continue
            if dict(msg.headers() or []).get("kraft.kind") == b"comparison":
                found.append(json.loads(msg.value()))
    finally:
        consumer.close()
    return found


def shipped_through(shipper: ShipProcess, offset: int) -> bool:
    return (shipper.metric("kraft_audit_ship_next_offset") or -1) >= offset


def job_on(tmp_path, name: str, values: dict):
    cfg = load_config(None, {"checkpoint": str(tmp_path / name / "ck"), "tables": str(tmp_path / name / "tables"),
                             "audit.buckets": 2, "metrics.enabled": False, **values}, environ={})
    return cfg


def test_snapshots_are_compared_through_the_shippers_topic(spark, tmp_path):
    version = KAFKA_VERSIONS[0]
    copy = tmp_path / "copy"
    with KafkaCluster(version, tmp_path / "kafka", brokers=1,
                      controller_config={"metadata.log.max.snapshot.interval.ms": "2000"}) as cluster:
        cluster.start()
        create_topic(cluster)
        create_topic(cluster, "mutated")
        cluster.tools.create_topic("orders", partitions=3, replication_factor=1)
        log_dir = cluster.metadata_log_dir
        wait_until("the controller's snapshots", lambda: len(list_snapshots(metadata_dir(log_dir))) >= 2, 90)
        newest = list_snapshots(metadata_dir(log_dir))[-1][0]
        shipper = ShipProcess(cluster, tmp_path / "ship-logs", log_dir=log_dir)
        shipper.start()
        try:
            wait_until("the log shipped past a snapshot", lambda: shipped_through(shipper, newest), 120)
            shutil.copytree(cluster.controller.metadata_dir, copy, ignore=shutil.ignore_patterns("*.lock"))
        finally:
            assert shipper.stop() == 0
        # the copy's newest snapshot rewritten: one partition's leader epoch bumped
        end, _epoch, snap = list_snapshots(metadata_dir(copy))[-1]
        records, _epoch, _ms = snapshot_records(snap)
        next(r for r in records if r[0] == "PARTITION_RECORD")[2]["leaderEpoch"] += 1
        rewrite_snapshot(snap, snap, records)
        mutated = ShipProcess(cluster, tmp_path / "ship-copy-logs", topic="mutated", log_dir=copy)
        mutated.start()
        try:
            copy_end = max(e for e, _x, _p in list_snapshots(metadata_dir(copy)))
            wait_until("the copy shipped", lambda: shipped_through(mutated, copy_end), 120)
        finally:
            assert mutated.stop() == 0

        shipped = comparisons_in(cluster, "kraft-metadata")
        assert len(shipped) >= 2 and all(c["differences"] == [] for c in shipped), shipped
        clean = job_on(tmp_path, "clean", {"sources.kafka": [{"bootstrap_servers": cluster.bootstrap,
                                                               "topic": "kraft-metadata"}]})
        assert AuditJob(clean, spark=spark).run(available_now=True)
        topic = job_on(tmp_path, "topic", {"sources.kafka": [{"bootstrap_servers": cluster.bootstrap,
                                                               "topic": "mutated"}]})
        assert AuditJob(topic, spark=spark).run(available_now=True)

    files = job_on(tmp_path, "files", {"sources.log_dirs": str(copy)})
    assert AuditJob(files, spark=spark).run(available_now=True)

    def found(cfg):
        return [r for r in comparable_rows(cfg.tables, "violations") if r["rule_id"] == RULE]
    assert found(clean) == []
    by_topic, by_files = found(topic), found(files)
    assert len(by_files) == 1 and by_files[0]["offset"] == end - 1, by_files
    assert by_topic == by_files
    assert "leader_epoch" in by_topic[0]["message"]
