"""Counts that balance per message, through the shipper's topic for real: a real log's
batches produced to a real Kafka topic as `kraft-audit ship` produces them, some of them
twice (a shipper restarted while acks were pending sends them again after newer ones),
read by the job through Spark's Kafka source. Every copy is a duplicate, NoOps included:
the progress rows say records = distinct records + copies, duplicates = copies, and each
micro-batch balances."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kraft_audit.config import load_config
from kraft_audit.ship.tail import LogTail
from kraft_audit.spark.job import AuditJob
from kraft_audit.spark.kafka_input import message_events
from kraft_audit.tables import PROGRESS, QUARANTINE
from kraft_audit.tables.read import read_rows
from kraft_audit.testing.realkafka.cluster import KafkaCluster
from services import KAFKA_VERSIONS, produce_shipped, shipper_topic

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

FIXTURE = Path(__file__).parent / "fixtures" / "kraft-real" / "subpxl__streamprocessing"
TOPIC = "metadata-twice"


def shipments_with_copies(log_dir: Path):
    """The log as the shipper's messages, and again with runs of them sent a second time:
    (messages, messages in topic order, records in the copies). One run holds only NoOps,
    one a partition change, and the log's last messages come again at the very end."""
    shipped = LogTail(log_dir).poll(max_bytes=1 << 30)
    types = [{e.type for e in message_events(b"c", s.value, dict(s.headers()), "x")} for s in shipped]
    noop_only = next(i for i in range(300, len(shipped))
                     if all(t == {"NO_OP_RECORD"} for t in types[i:i + 4]))
    change = next(i for i in range(noop_only + 10, len(shipped)) if "PARTITION_CHANGE_RECORD" in types[i])
    runs = [(noop_only, noop_only + 4), (change - 1, change + 2), (len(shipped) - 3, len(shipped))]
    order: list = []
    copies = 0
    for i, s in enumerate(shipped):
        order.append(s)
        for start, end in runs:
            if i == min(end + 2, len(shipped) - 1):  # sent again after two newer messages
                order.extend(shipped[start:end])
                copies += sum(x.records for x in shipped[start:end])
    return shipped, order, copies


def test_a_topic_holding_batches_twice_counts_every_copy_as_a_duplicate(spark, tmp_path):
    log_dir = tmp_path / "log"
    shutil.copytree(FIXTURE, log_dir)
    cluster_id = next(line.split("=", 1)[1] for line in (log_dir / "meta.properties").read_text().splitlines()
                      if line.startswith("cluster.id="))
    shipped, order, copies = shipments_with_copies(log_dir)
    records = sum(s.records for s in shipped)
    assert copies and len(order) > len(shipped)

    with KafkaCluster(KAFKA_VERSIONS[0], tmp_path / "kafka", brokers=1) as cluster:
        cluster.start()
        shipper_topic(cluster, TOPIC)
        produce_shipped(cluster.bootstrap, TOPIC, cluster_id, order)

        work = tmp_path / "job"
        cfg = load_config(None, {
            "checkpoint": str(work / "ck"), "tables": str(work / "tables"), "audit.buckets": 2,
            "metrics.enabled": False,
            # a few micro-batches: copies land in the batch of their first or in a later one
            "sources.kafka": [{"bootstrap_servers": cluster.bootstrap, "topic": TOPIC,
                               "max_offsets_per_trigger": 150}]}, environ={})
        assert AuditJob(cfg, spark=spark).run(available_now=True)

    progress = read_rows(cfg.tables, PROGRESS)
    assert len(progress) > 3
    totals = {k: sum(p[k] for p in progress) for k in ("records", "applied", "duplicates", "quarantined")}
    assert totals == {"records": records + copies, "applied": records, "duplicates": copies,
                      "quarantined": 0}
    assert not read_rows(cfg.tables, QUARANTINE)
    for p in progress:
        assert p["records"] + p["side_inputs"] + p["unreadable"] == \
            p["applied"] + p["duplicates"] + p["quarantined"], p
