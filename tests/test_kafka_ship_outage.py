"""`kraft-audit ship` rides out the Kafka cluster it ships to, for real.

On each Kafka version of the suite, the shipper's topic lives on the audited cluster
itself (three brokers, replication 3, acks=all):

1. the leader of the partition the shipper's key goes to is killed (kill -9) just
   before the shipper starts: reading where to resume fails until the controller fences
   the dead broker and elects another leader; the shipper retries and goes on;
2. the new leader is killed while it ships: the idempotent producer waits and goes on;
3. duplicate deliveries are forced: a follower of that partition is paused, so the
   acks=all writes of the shipper stay above the high watermark; the controller is
   paused too (so that nothing takes the follower out of the ISR meanwhile), the third
   broker begins a controlled shutdown (records that are not NoOps in those writes), and
   the shipper is killed. The
   next shipper reads the topic up to the high watermark, resumes before those writes
   and ships them again; once the follower and the controller go on, both copies are in
   the topic.

Then the streaming job reads the topic (Spark's Kafka source), and its counts are
checked message by message against the topic: every record read once, the copies
counted as duplicates, applied + duplicates + quarantined = records.
"""

from __future__ import annotations

import time
from collections import Counter

import pytest

from kraft_audit.config import load_config
from kraft_audit.core.events import MetadataEvent, Quarantined
from kraft_audit.spark.job import AuditJob
from kraft_audit.spark.kafka_input import message_events
from kraft_audit.testing.realkafka.cluster import KafkaCluster, elr_features, wait_until
from kraft_audit.testing.realkafka.ship_process import TOPIC, ShipProcess, key_partition
from services import kafka_lines_beyond_the_first_as_variants

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

# The controller fences a silent broker after this (Kafka's default is 9 s; the harness's
# 3 s would let a paused controller fence every broker as soon as it goes on).
SESSION_TIMEOUT_MS = 12000
KAFKA_TIMEOUT_S = 120  # the shipper's bound: far above the outages below
PARTITIONS = 2


def admin(cluster: KafkaCluster):
    """One admin client for the story (every broker to bootstrap from; quiet in between)."""
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": ",".join(f"127.0.0.1:{b.port}" for b in cluster.brokers),
                        "log_level": 2})


def partition_info(client, partition: int):
    """(leader, isr) of the shipper's partition, as the brokers say now ((-1, []) when they do
    not know it yet: a topic just created)."""
    topic = client.list_topics(TOPIC, timeout=20).topics.get(TOPIC)
    meta = topic.partitions.get(partition) if topic is not None else None
    return (meta.leader, list(meta.isrs)) if meta is not None else (-1, [])


def _known_leader(client, partition: int) -> int | None:
    leader, _ = partition_info(client, partition)
    return leader if leader in (1, 2, 3) else None


def log_end(cluster: KafkaCluster) -> int:
    """Offset after the last whole batch of the controller's log."""
    from kraft_audit.ship.tail import LogTail

    return LogTail(cluster.metadata_log_dir).log_end_offset()


def caught_up(shipper: ShipProcess, offset: int) -> bool:
    return (shipper.metric("kraft_audit_ship_next_offset") or -1) >= offset


def topic_messages(cluster: KafkaCluster) -> list:
    """Every message of the shipper's topic, partition by partition, in order."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "outage-test",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    out = []
    try:
        for p in range(PARTITIONS):
            low, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=20)
            if high <= low:
                continue
            consumer.assign([TopicPartition(TOPIC, p, low)])
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                msg = consumer.poll(1.0)
                if msg is None or msg.error():
                    continue
                out.append(msg)
                if msg.offset() >= high - 1:
                    break
    finally:
        consumer.close()
    return out


def create_topic(client, name: str, partitions: int, replicas: int, configs: dict | None = None):
    from confluent_kafka.admin import NewTopic

    for future in client.create_topics(
            [NewTopic(name, partitions, replicas, config=configs or {})]).values():
        future.result(30)


@pytest.mark.parametrize("version", kafka_lines_beyond_the_first_as_variants())
def test_the_shipper_rides_out_leader_kills_and_its_duplicates_are_counted(spark, tmp_path, version):
    work = tmp_path / "job"
    with KafkaCluster(version, tmp_path / "kafka", brokers=3, features=elr_features(version),
                      controller_config={"broker.session.timeout.ms": str(SESSION_TIMEOUT_MS)},
                      ) as cluster:
        cluster.start()
        client = admin(cluster)
        create_topic(client, TOPIC, PARTITIONS, 3,
                     {"min.insync.replicas": "1", "max.message.bytes": str(9 << 20)})
        key = cluster.cluster_id.encode()
        partition = key_partition(key, PARTITIONS)
        # the leader the wait saw: a second metadata request may reach a broker that does
        # not know the new topic yet and answer -1
        first_leader = wait_until("a leader for the shipper's partition",
                                  lambda: _known_leader(client, partition), 30)
        shipper = ShipProcess(cluster, tmp_path / "ship-logs", kafka_timeout=KAFKA_TIMEOUT_S)
        all_brokers = ",".join(f"127.0.0.1:{b.port}" for b in cluster.brokers)
        try:
            # 1. the leader dies just before the shipper starts
            cluster.broker(first_leader).kill()
            shipper.start(bootstrap=all_brokers)
            wait_until("the shipper to resume past the dead leader",
                       lambda: "first run: shipping the log from its start" in shipper.log_text(),
                       SESSION_TIMEOUT_MS / 1000 + 60)
            assert "reading where to resume: " in shipper.log_text()  # it retried meanwhile
            target = log_end(cluster)
            wait_until("the log shipped", lambda: caught_up(shipper, target), 90)

            # 2. the next leader dies while it ships
            second_leader = wait_until("a leader other than the dead one",
                                       lambda: _known_leader(client, partition), 30)
            assert second_leader != first_leader
            cluster.broker(second_leader).kill()
            mark = cluster.broker(first_leader).launch()  # back (registers once its session expired)
            time.sleep(2)
            target = log_end(cluster)  # NoOps go on being written meanwhile
            wait_until("the log shipped through the second failover",
                       lambda: caught_up(shipper, target), SESSION_TIMEOUT_MS / 1000 + 90)
            assert shipper.proc.poll() is None, shipper.log_text()[-3000:]
            cluster.broker(second_leader).start()
            cluster.broker(first_leader).wait_ready(mark)
            wait_until("every replica back in the ISR",
                       lambda: len(partition_info(client, partition)[1]) == 3, 90)

            # 3. duplicates: writes held above the high watermark while the shipper dies
            leader = wait_until("the partition's leader", lambda: _known_leader(client, partition), 30)
            isr = partition_info(client, partition)[1]
            follower = cluster.broker(next(b for b in isr if b != leader))
            third = cluster.broker(next(b for b in (1, 2, 3) if b not in (leader, follower.node_id)))
            follower.pause()
            # records that are not NoOps: the third replica's controlled shutdown (moving its
            # leaderships, leaving the ISRs); an admin request could land on the paused broker
            third.begin_stop()
            # the shipper hands them over; the paused follower holds the acks
            time.sleep(3)
            cluster.controller.pause()  # nothing takes the follower out of the ISR now
            held_end = log_end(cluster)
            acked = shipper.metric("kraft_audit_ship_next_offset")
            shipper.kill9()
            assert acked < held_end, (acked, held_end)  # writes were left unacknowledged
            shipper.start()
            wait_until("the next shipper to resume",
                       lambda: "resuming at offset" in shipper.log_text(), 60)
            cluster.controller.resume()
            follower.resume()
            third.stop()  # its shutdown completes
            target = log_end(cluster)
            wait_until("the log shipped after the duplicates", lambda: caught_up(shipper, target), 120)
            assert shipper.stop() == 0, shipper.log_text()[-3000:]  # SIGTERM: flushed, exit 0
        finally:
            if shipper.proc and shipper.proc.poll() is None:
                shipper.kill9()
            cluster.controller.resume()
            for b in cluster.brokers:
                if b.paused:
                    b.resume()
        del client  # (before its brokers go)
        messages = topic_messages(cluster)
        # the job reads the topic (availableNow: what it holds now)
        cfg = load_config(None, {
            "checkpoint": str(work / "ck"), "tables": str(work / "tables"), "audit.buckets": 2,
            "metrics.enabled": False,
            "sources.kafka": [{"bootstrap_servers": cluster.bootstrap, "topic": TOPIC}]}, environ={})
        assert AuditJob(cfg, spark=spark).run(available_now=True)

    logs = [(tmp_path / "ship-logs" / f"ship-{n}.log").read_text() for n in (1, 2)]
    assert not any("Traceback" in text for text in logs), logs
    assert {m.partition() for m in messages} == {partition}  # the key's partition, as computed

    # the topic, message by message: a record whose offset was already read is a copy
    seen: set[int] = set()
    records = duplicates = quarantined = 0
    copies: Counter = Counter()
    for m in messages:
        for item in message_events(m.key(), m.value(), dict(m.headers() or []),
                                   f"kafka {m.topic()}-{m.partition()}@{m.offset()}"):
            if isinstance(item, Quarantined):
                quarantined += 1
                continue
            assert isinstance(item, MetadataEvent)
            records += 1
            if item.offset in seen:
                duplicates += 1
                copies[item.type] += 1
            seen.add(item.offset)
    # the held writes were shipped twice: the shutdown's records, and NoOps only when one was
    # written before the shipper read them (a race: tests/test_kafka_duplicates.py copies
    # NoOps for certain); the job counts whatever copies there are (below)
    assert sum(n for t, n in copies.items() if t != "NO_OP_RECORD") > 0, copies

    # the job's counts, summed over its micro-batches
    from kraft_audit.questions import read_rows

    rows = read_rows(cfg.tables, "progress", ["records", "applied", "duplicates", "quarantined"])
    job_counts = {k: sum(r[k] for r in rows) for k in ("records", "applied", "duplicates", "quarantined")}
    assert job_counts["records"] == records + quarantined, (job_counts, records, quarantined)
    assert job_counts["applied"] + job_counts["duplicates"] + job_counts["quarantined"] \
        == job_counts["records"], job_counts
    assert job_counts["quarantined"] == quarantined
    print(f"{version}: {len(messages)} messages, {records} records, copies {dict(copies)}; "
          f"the job: {job_counts}")
    assert job_counts["duplicates"] == duplicates, (job_counts, duplicates, copies)
