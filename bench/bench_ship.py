"""The shipper path's throughput, beside the files path's.

A generated partition-heavy log (bench_decode's writer) is
1. read by the shipper's LogTail alone (no Kafka): batches, records/s, MB/s;
2. shipped by `Shipper` into a topic of a real one-broker KRaft cluster (Kafka's
   jars from `make kafka`): records/s and MB/s until Kafka acknowledged the last batch;
3. audited by the streaming job from that topic (Spark's Kafka source, jars from
   `make spark-kafka`) and from the files, each a backfill (AvailableNow):
   records/s of each.
Run: python bench/bench_ship.py [--records N]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_decode import write_partition_heavy_log  # noqa: E402

from kraft_audit.core.codec.logdir import list_segments  # noqa: E402
from kraft_audit.ship.tail import LogTail  # noqa: E402

TOPIC = "kraft-metadata"
KAFKA_VERSION = "4.4.0"


def read_alone(log: Path) -> tuple[int, int]:
    tail = LogTail(log)
    started = time.perf_counter()
    batches = records = size = 0
    while shipped := tail.poll():
        batches += len(shipped)
        records += sum(s.records for s in shipped)
        size += sum(len(s.value) for s in shipped)
    seconds = time.perf_counter() - started
    print(f"LogTail alone: {batches:,} batches, {records:,} records, {size / 1e6:.1f} MB in "
          f"{seconds:.2f} s: {records / seconds / 1e3:.0f}k records/s, {size / seconds / 1e6:.0f} MB/s")
    return records, size


def ship(log: Path, bootstrap: str, records: int, size: int) -> None:
    from kraft_audit.ship.shipper import Shipper

    shipper = Shipper(str(log), bootstrap, TOPIC, cluster_id="bench-cluster")
    end = LogTail(log).log_end_offset()
    thread = threading.Thread(target=shipper.run, daemon=True)
    started = time.perf_counter()
    thread.start()
    while shipper.metrics.next_offset._value.get() < end:
        time.sleep(0.05)
    seconds = time.perf_counter() - started
    shipper.stop()
    thread.join(60)
    print(f"shipper into Kafka (acks=all, idempotent): {records:,} records in {seconds:.2f} s: "
          f"{records / seconds / 1e3:.0f}k records/s, {size / seconds / 1e6:.1f} MB/s "
          "(the resume lookup in the topic included)")


def audit(spark, overrides: dict, work: Path, label: str, records: int) -> None:
    from kraft_audit.config import load_config
    from kraft_audit.spark.job import AuditJob

    cfg = load_config(None, {"checkpoint": str(work / "ck"), "tables": str(work / "tables"),
                             "audit.buckets": 4, "metrics.enabled": False, **overrides}, environ={})
    started = time.perf_counter()
    assert AuditJob(cfg, spark=spark).run(available_now=True)
    seconds = time.perf_counter() - started
    print(f"job from {label}: {records:,} records in {seconds:.1f} s: {records / seconds / 1e3:.1f}k records/s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--messages-per-trigger", type=int, default=500,
                        help="sources.kafka max_offsets_per_trigger (one message = one batch)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-ship-"))
    try:
        log = root / "log"
        write_partition_heavy_log(log, args.records)
        (log / "meta.properties").write_text("cluster.id=bench-cluster\nnode.id=1\nversion=1\n")
        print(f"log: {sum(p.stat().st_size for _, p in list_segments(log)) / 1e6:.1f} MB")
        records, size = read_alone(log)

        from kraft_audit.testing.realkafka.cluster import KafkaCluster
        from kraft_audit.spark.session import build_session

        with KafkaCluster(KAFKA_VERSION, root / "kafka", brokers=1) as cluster:
            cluster.start()
            cluster.tools.create_topic(TOPIC, partitions=1, replication_factor=1,
                                       configs={"max.message.bytes": str(9 << 20)})
            ship(log, cluster.bootstrap, records, size)
            spark = build_session("local[2]", shuffle_partitions=2, kafka_source=True,
                                  extra_conf={"spark.driver.memory": "4g"})
            audit(spark, {"sources.log_dirs": str(log)}, root / "from-files", "the files", records)
            audit(spark, {"sources.kafka": [{"bootstrap_servers": cluster.bootstrap, "topic": TOPIC,
                                             "max_offsets_per_trigger": args.messages_per_trigger}]},
                  root / "from-topic", "the topic (Spark's Kafka source)", records)
            spark.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
