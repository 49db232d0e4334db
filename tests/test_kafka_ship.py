"""The recommended deployment, for real: a KRaft cluster goes through faults while
`kraft-audit ship` beside its controller produces the metadata log into a topic of
that cluster (only what the quorum committed: `--bootstrap-controller`), and the streaming job reads the topic with Spark's own Kafka source.
The shipper is kill -9'd twice and the job restarted once on the way. The Delta
tables must equal those of a file-based run of the same log (nothing lost or
doubled), and the job's staleness gauge must show the shipper's death."""

from __future__ import annotations

import shutil
import time
import urllib.request

import pytest

from kraft_audit.core.codec.logdir import read_log_dir
from kraft_audit.config import load_config
from kraft_audit.core.events import MetadataEvent
from kraft_audit.testing.realkafka.cluster import KafkaCluster, elr_features, wait_until
from kraft_audit.testing.realkafka.ship_process import TOPIC, ShipProcess, create_topic
from kraft_audit.testing.crash_check import comparable_rows
from kraft_audit.spark.job import AuditJob
from services import KAFKA_VERSIONS

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

COMPARED = ("violations", "conditions", "partition_history", "partition_state", "brokers", "quarantine")


def job_metric(job: AuditJob, name: str) -> float | None:
    text = urllib.request.urlopen(f"http://127.0.0.1:{job.metrics_port}/metrics", timeout=5).read().decode()
    return next((float(line.split()[-1]) for line in text.splitlines() if line.startswith(name + "{")), None)


def log_end(cluster: KafkaCluster) -> int:
    return max(e.offset for e in read_log_dir(cluster.metadata_log_dir) if isinstance(e, MetadataEvent))


def caught_up(job: AuditJob, offset: int) -> bool:
    return (job_metric(job, "kraft_audit_last_offset") or -1) >= offset


def test_a_cluster_shipped_through_a_topic_audits_like_its_files(spark, tmp_path):
    version = KAFKA_VERSIONS[0]
    work = tmp_path / "job"
    cfg = load_config(None, {"checkpoint": str(work / "ck"), "tables": str(work / "tables"),
                             "audit.buckets": 2, "trigger.interval": "1 second", "metrics.port": 0,
                             "sources.kafka": ["placeholder:9092/" + TOPIC]}, environ={})
    jobs: list[AuditJob] = []

    def start_job() -> AuditJob:
        job = AuditJob(cfg, spark=spark)
        job.start(available_now=False)
        jobs.append(job)
        return job

    with KafkaCluster(version, tmp_path / "kafka", brokers=3, features=elr_features(version)) as cluster:
        cluster.start()
        cfg = cfg.with_values({"sources.kafka": [{"bootstrap_servers": cluster.bootstrap, "topic": TOPIC}]})
        create_topic(cluster)
        shipper = ShipProcess(cluster, tmp_path / "ship-logs", ask_quorum=True)  # committed only
        shipper.start()
        try:
            job = start_job()
            cluster.tools.create_topic("orders", partitions=3, replication_factor=3)
            target = log_end(cluster)  # (the log moves on: NoOps every 500 ms)
            wait_until("the job to audit the new topic", lambda: caught_up(job, target), 180)

            # kill -9 the shipper; the cluster goes on (a broker stops); the job sees nothing new
            shipper.kill9()
            time.sleep(3)  # what it shipped before dying is read, then nothing more comes
            grew = job_metric(job, "kraft_audit_input_last_grew_timestamp_seconds")
            cluster.broker(3).stop()
            time.sleep(4)
            assert job_metric(job, "kraft_audit_input_last_grew_timestamp_seconds") == grew
            assert log_end(cluster) > job_metric(job, "kraft_audit_last_offset")  # the log went on
            target = log_end(cluster)
            shipper.start()
            wait_until("the backlog shipped and audited", lambda: caught_up(job, target), 180)
            assert job_metric(job, "kraft_audit_input_last_grew_timestamp_seconds") > grew

            # the job restarted from its checkpoint mid-way, the shipper killed again
            job.stop()
            cluster.broker(3).start()
            shipper.kill9()
            job = start_job()
            cluster.tools.elect_leaders("preferred", check=False)
            shipper.start()
            end = log_end(cluster)
            wait_until("the rest audited", lambda: caught_up(job, end), 180)
            # it shipped what the quorum committed, asked every poll (its high watermark)
            assert shipper.metric("kraft_audit_ship_committed_offset") > end
            assert shipper.metric("kraft_audit_ship_quorum_unanswered") == 0
            assert shipper.stop() == 0  # SIGTERM: flushed, exit 0
            final = log_end(cluster)
        finally:
            for job in jobs:
                job.stop()
            if shipper.proc and shipper.proc.poll() is None:
                shipper.kill9()  # (a failed story: do not wait for a flush)
        copy = tmp_path / "files"
        shutil.copytree(cluster.controller.metadata_dir, copy, ignore=shutil.ignore_patterns("*.lock"))

    # the same log, from its files
    files_cfg = load_config(None, {"sources.log_dirs": str(copy), "checkpoint": str(tmp_path / "fck"),
                                   "tables": str(tmp_path / "ftables"), "audit.buckets": 2,
                                   "metrics.enabled": False}, environ={})
    assert AuditJob(files_cfg, spark=spark).run(available_now=True)

    def upto(rows, offset):  # the file run may have read a few NoOps more: they write no row
        return [r for r in rows if r.get("offset", -1) <= offset and (r.get("start_offset") or 0) <= offset]
    for table in COMPARED:
        shipped = upto(comparable_rows(cfg.tables, table), final)
        files = upto(comparable_rows(files_cfg.tables, table), final)
        assert shipped == files, table
    assert comparable_rows(cfg.tables, "partition_history"), "the story wrote partition changes"
    # nothing doubled: every partition change once, every violation once
    history = comparable_rows(cfg.tables, "partition_history")
    assert len({(r["topic_id"], r["partition"], r["offset"]) for r in history}) == len(history)
    assert shipper.starts == 3
