"""`make demo-kafka`: a real three-broker Kafka 4.4.0 cluster on loopback through a short
fault story, audited live by the streaming job while it happens, in the fleet layout:
`kraft-audit ship` beside the controller produces its metadata log to a topic, which
the job reads with Spark's own Kafka source.

The story: acks=all traffic on a topic of replication factor 3 and min.insync.replicas 2;
broker 2 stops cleanly and comes back; broker 3 is killed (-9) and comes back; brokers 2
and 3 are stopped together so the ISR shrinks under min ISR into the ELR; they return. At
each step it prints what Kafka did (kafka-topics --describe) and what the auditor wrote
(its condition intervals, its verdict on each broker's restart), and at the end its
/metrics, the Delta tables and any finding. Exit 0 when the audit of the real cluster is
clean, 3 when it found something or the job failed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from kraft_audit.testing.realkafka.cluster import KafkaCluster, wait_until
from kraft_audit.testing.realkafka.live_audit import LiveAudit

TOPIC = "payments"
SHIP_TOPIC = "kraft-metadata"
VERSION = "4.4.0"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kraft_audit.testing.realkafka.demo",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", default="demo-kafka-out",
                        help="Kafka's dirs and logs, the checkpoint and the Delta tables "
                             "(emptied first; default demo-kafka-out)")
    args = parser.parse_args(argv)
    workdir = Path(args.workdir).resolve()
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from kraft_audit.spark.session import build_session

    spark = build_session("local[2]", app_name="kraft-audit-demo-kafka", kafka_source=True)
    cluster = KafkaCluster(VERSION, workdir / "kafka", brokers=3, request_log_level="TRACE")
    live = producer = None
    try:
        step(f"Kafka {VERSION}: controller 100, brokers 1-3 on 127.0.0.1")
        cluster.start()
        live = LiveAudit(spark, cluster, workdir / "audit", via_topic=SHIP_TOPIC)
        print(f"   kraft-audit ship produces {cluster.metadata_log_dir.name} to topic {SHIP_TOPIC} "
              f"(its /metrics on 127.0.0.1:{live.shipper.port}); the streaming job reads the topic "
              f"and tails the controller's request log; /metrics on 127.0.0.1:{live.job.metrics_port}")
        cluster.tools.create_topic(TOPIC, partitions=3, replication_factor=3,
                                   configs={"min.insync.replicas": "2"})
        producer = cluster.tools.start_producer(TOPIC, per_second=200)
        describe(cluster)

        step("broker 2: controlled shutdown, then restart")
        before = epoch(live, 2)
        cluster.broker(2).stop()
        cluster.broker(2).start()
        verdict(live, 2, before)

        step("broker 3: kill -9 (an unclean shutdown), then restart")
        before = epoch(live, 3)
        cluster.broker(3).kill()
        cluster.broker(3).start()
        verdict(live, 3, before)

        step("brokers 2 and 3 stop: every ISR shrinks to one, under min ISR 2, into the ELR")
        cluster.broker(2).stop()
        cluster.broker(3).stop()
        live.wait_open("under_min_isr", TOPIC)
        describe(cluster)
        conditions(live)

        step("brokers 2 and 3 return: the conditions close")
        cluster.broker(2).start()
        cluster.broker(3).start()
        live.wait_open("under_min_isr", TOPIC, is_open=False, timeout=120)
        describe(cluster)
        conditions(live)
        return summary(live)
    finally:
        if producer is not None and producer.poll() is None:
            producer.kill()
            producer.wait(30)
        if live is not None:
            live.stop()
        cluster.close()
        spark.stop()


def step(text: str) -> None:
    print(f"\n== {text}", flush=True)


def describe(cluster: KafkaCluster) -> None:
    print("   kafka-topics --describe:")
    for r in cluster.tools.describe_topics(TOPIC):
        print(f"     {r['topic']}-{r['partition']}  leader {r['leader']}  isr {r['isr']}  "
              f"elr {r['elr']}  last known elr {r['last_known_elr']}")


def broker_row(live: LiveAudit, broker_id: int) -> dict | None:
    rows = [b for b in live.rows("brokers") if b["broker_id"] == broker_id]
    return rows[0] if rows else None


def epoch(live: LiveAudit, broker_id: int) -> int:
    """The broker's epoch as the auditor has it (waiting for its first registration)."""
    row = wait_until(f"broker {broker_id} in the auditor's brokers table",
                     lambda: broker_row(live, broker_id), timeout=120)
    return row["broker_epoch"]


def verdict(live: LiveAudit, broker_id: int, epoch_before: int) -> None:
    """The auditor's clean/unclean verdict on the broker's restart, once it has seen the new
    registration (from the controller's request log: KIP-966's clean-shutdown detection)."""
    def judged():
        row = broker_row(live, broker_id)
        return row if row and row["broker_epoch"] > epoch_before and row["last_shutdown"] else None
    row = wait_until(f"the auditor's verdict on broker {broker_id}", judged, timeout=120)
    print(f"   the auditor: broker {broker_id} registered again with epoch "
          f"{row['broker_epoch']}; its last shutdown was {row['last_shutdown']}")


def conditions(live: LiveAudit) -> None:
    print("   the auditor's condition intervals (metadata log offsets):")
    for r in sorted(live.rows("conditions"), key=lambda r: (r["start_offset"], r["condition"])):
        end = "open" if r["end_offset"] is None else r["end_offset"]
        print(f"     {r['topic']}-{r['partition']}  {r['condition']:<26} {r['start_offset']} -> {end}")


def summary(live: LiveAudit) -> int:
    metrics = live.metrics()
    step("/metrics (this cluster)")
    for name in ("records_total", "last_offset", "partitions", "global_under_min_isr_partition_count",
                 "elr_in_use_partitions", "unclean_elections_total", "elr_elections_total"):
        print(f"   kraft_audit_{name} {metrics.get(name)}")
    violations, quarantine = live.rows("violations"), live.rows("quarantine")
    step(f"Delta tables under {live.tables}")
    for v in violations:
        print(f"   violation {v['rule_id']} at offset {v['offset']}: {v['message']}")
    failed = live.failed()
    if failed:
        print(f"   the streaming job failed: {failed}")
    print(f"   {len(violations)} violations, {len(quarantine)} quarantined records: "
          + ("real Kafka kept its promises" if not (violations or quarantine or failed)
             else "see above"))
    return 0 if not (violations or quarantine or failed) else 3


if __name__ == "__main__":
    sys.exit(main())
