"""A hole in the shipper's topic, for real: messages the job had not read yet deleted from a
real Kafka topic (as retention deletes them when the job falls behind) between two runs of
the job. Spark's Kafka source skips to the oldest message left (`failOnDataLoss=false`);
the job finds where the log offsets jump and reports the hole with both offsets, in the
quarantine and conditions tables and on /metrics, and its counts still balance."""

from __future__ import annotations

import shutil
import urllib.request
from pathlib import Path

import pytest

from kraft_audit.config import load_config
from kraft_audit.ship.tail import LogTail
from kraft_audit.spark.job import AuditJob
from kraft_audit.spark.kafka_input import message_events
from kraft_audit.tables import CONDITIONS, PROGRESS, QUARANTINE
from kraft_audit.tables.read import read_rows
from kraft_audit.testing.realkafka.cluster import KafkaCluster
from services import KAFKA_VERSIONS, produce_shipped, shipper_topic

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

FIXTURE = Path(__file__).parent / "fixtures" / "kraft-real" / "subpxl__streamprocessing"
TOPIC = "metadata-with-a-hole"


def test_messages_deleted_before_the_job_read_them_are_a_reported_hole(spark, tmp_path):
    log_dir = tmp_path / "log"
    shutil.copytree(FIXTURE, log_dir)
    cluster_id = next(line.split("=", 1)[1] for line in (log_dir / "meta.properties").read_text().splitlines()
                      if line.startswith("cluster.id="))
    shipped = LogTail(log_dir).poll(max_bytes=1 << 30)
    offsets = [[e.offset for e in message_events(b"c", s.value, dict(s.headers()), "x")] for s in shipped]
    read_first, lost = len(shipped) // 3, 25  # messages read by the first run, then deleted unread
    first_lost, last_lost = offsets[read_first][0], offsets[read_first + lost - 1][-1]
    lost_records = sum(len(o) for o in offsets[read_first:read_first + lost])
    assert offsets[read_first + lost][0] == last_lost + 1  # the log itself has no hole there

    work = tmp_path / "job"
    with KafkaCluster(KAFKA_VERSIONS[0], tmp_path / "kafka", brokers=1) as cluster:
        cluster.start()
        shipper_topic(cluster, TOPIC)
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import AdminClient

        cfg = load_config(None, {
            "checkpoint": str(work / "ck"), "tables": str(work / "tables"), "audit.buckets": 2,
            "metrics.enabled": True, "metrics.port": 0,
            "sources.kafka": [{"bootstrap_servers": cluster.bootstrap, "topic": TOPIC}]}, environ={})
        produce_shipped(cluster.bootstrap, TOPIC, cluster_id, shipped[:read_first])
        assert AuditJob(cfg, spark=spark).run(available_now=True)
        assert not read_rows(cfg.tables, QUARANTINE)

        produce_shipped(cluster.bootstrap, TOPIC, cluster_id, shipped[read_first:])
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        for future in admin.delete_records([TopicPartition(TOPIC, 0, read_first + lost)]).values():
            future.result(timeout=60)
        job = AuditJob(cfg, spark=spark)
        assert job.run(available_now=True)
        scrape = urllib.request.urlopen(f"http://127.0.0.1:{job.metrics_port}/metrics", timeout=10).read().decode()

    quarantine = read_rows(cfg.tables, QUARANTINE)
    assert [(q["offset"], q["reason"]) for q in quarantine] == [(first_lost,
        f"offsets {first_lost}..{last_lost} are missing: the input's next batch starts at offset {last_lost + 1}")]
    [gap] = [c for c in read_rows(cfg.tables, CONDITIONS) if c["condition"] == "input_gap"]
    assert (gap["resource"], gap["start_offset"], gap["end_offset"]) == ("log", first_lost, last_lost + 1)
    assert f'kraft_audit_input_gaps_total{{cluster="{cluster_id}"}} 1.0' in scrape
    progress = read_rows(cfg.tables, PROGRESS)
    assert sum(p["records"] for p in progress) == sum(map(len, offsets)) - lost_records
    for p in progress:
        assert p["records"] + p["side_inputs"] + p["unreadable"] == \
            p["applied"] + p["duplicates"] + p["quarantined"], p
