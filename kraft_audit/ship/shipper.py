"""`kraft-audit ship`: a controller's metadata log, batch by batch, into a Kafka topic.

The messages are `LogTail`'s shipments, keyed by cluster id (so one cluster's
log stays in one partition, in order) through an idempotent producer (acks=all:
a retry never doubles or reorders a batch). Where to go on after a restart is
read from the topic itself: the newest message with this cluster's key says
the file, position and next offset. A delivery that fails ends the process
(exit 1) so that its supervisor restarts it and it resumes from the topic.

Health on Prometheus (its own endpoint): the next offset to ship, the log's
end, the lag between them, batches and bytes shipped, errors by kind, and
when a batch was last acknowledged.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

from kraft_audit.core.codec.logdir import read_meta_properties
from kraft_audit.ship.tail import LogTail, Resume, Shipment
from kraft_audit.errors import ShipError  # noqa: F401 (exported here too)

log = logging.getLogger("kraft_audit.ship")

# A KRaft batch is at most 8 MiB (the controller's max batch size); the topic needs
# max.message.bytes at least that for the rare big one.
MAX_MESSAGE_BYTES = 8 << 20


class ShipMetrics:
    def __init__(self, cluster_id: str):
        self.registry = CollectorRegistry()
        labels = {"cluster": cluster_id}

        def gauge(name, text):
            return Gauge(f"kraft_audit_ship_{name}", text, ["cluster"], registry=self.registry).labels(**labels)

        def counter(name, text):
            return Counter(f"kraft_audit_ship_{name}", text, ["cluster"], registry=self.registry).labels(**labels)

        self.next_offset = gauge("next_offset", "Next metadata log offset to ship (all below are acknowledged).")
        self.log_end_offset = gauge("log_end_offset", "Offset after the newest whole batch in the log.")
        self.lag_records = gauge("lag_records", "Records in the log not yet acknowledged by Kafka.")
        self.last_shipped = gauge("last_shipped_timestamp_seconds",
                                  "Unix time Kafka last acknowledged a batch.")
        self.batches = counter("batches", "Batches (and runs of bad bytes) acknowledged.")
        self.bytes = counter("bytes", "Bytes acknowledged.")
        self.errors = Counter("kraft_audit_ship_errors", "Errors by kind.", ["cluster", "kind"],
                              registry=self.registry)
        self.standby = gauge("standby", "1 while this shipper stands by (--only-node names another node).")
        self.cluster = cluster_id


def find_resume(consumer_config: dict, topic: str, cluster_id: str, timeout: float = 30.0
                ) -> Resume | None:
    """The newest message of `cluster_id` in `topic` as a resume point (None: never shipped).
    Reads each partition backwards from its end, a window at a time."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({**consumer_config, "group.id": f"kraft-audit-ship-resume-{cluster_id}",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    key = cluster_id.encode()
    try:
        meta = consumer.list_topics(topic, timeout=timeout).topics.get(topic)
        if meta is None or meta.error is not None:
            raise ShipError(f"topic {topic!r} cannot be read: {meta.error if meta else 'absent'}")
        for partition in sorted(meta.partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout)
            end = high
            window = 500
            while end > low:
                start = max(low, end - window)
                newest = _newest_with_key(consumer, TopicPartition(topic, partition, start), end, key, timeout)
                if newest is not None:
                    headers = dict(newest.headers() or [])
                    return Resume.from_headers(headers, len(newest.value()))
                end, window = start, window * 2
        return None
    finally:
        consumer.close()


def _newest_with_key(consumer, tp, end: int, key: bytes, timeout: float):
    from confluent_kafka import KafkaError

    consumer.assign([tp])
    newest = None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        msg = consumer.poll(1.0)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                break
            raise ShipError(f"reading {tp.topic}: {msg.error()}")
        if msg.key() == key:
            newest = msg
        if msg.offset() >= end - 1:
            break
    return newest


class Shipper:
    def __init__(self, log_dir: str, bootstrap_servers: str, topic: str,
                 cluster_id: str | None = None, producer_config: dict | None = None,
                 poll_interval: float = 0.2, max_in_flight_bytes: int = 32 << 20):
        self.log_dir = Path(log_dir)
        self.cluster_id = cluster_id or read_meta_properties(self.log_dir).get("cluster.id") \
            or read_meta_properties(self.log_dir.parent).get("cluster.id")
        if not self.cluster_id:
            raise ShipError(f"no cluster id: {log_dir} has no meta.properties; give --cluster-id")
        self.topic = topic
        self.client_config = {"bootstrap.servers": bootstrap_servers, **(producer_config or {})}
        self.poll_interval = poll_interval
        self.max_in_flight_bytes = max_in_flight_bytes
        self.metrics = ShipMetrics(self.cluster_id)
        self._stop = threading.Event()
        self._failed: str | None = None

    def stop(self, *_signal) -> None:
        self._stop.set()

    def node_id(self) -> int | None:
        """The node whose log dir this is (meta.properties beside __cluster_metadata-0)."""
        for d in (self.log_dir, self.log_dir.parent):
            value = read_meta_properties(d).get("node.id")
            if value is not None:
                return int(value)
        return None

    def stand_by(self) -> None:
        """Serve /metrics (standby 1) until stopped, shipping nothing."""
        self.metrics.standby.set(1)
        self._stop.wait()

    def serve_metrics(self, host: str, port: int) -> int:
        server, _thread = start_http_server(port, addr=host, registry=self.metrics.registry)
        return server.server_port

    def run(self) -> None:
        """Ship until stopped (SIGTERM/SIGINT: what was handed to Kafka is flushed first)."""
        from confluent_kafka import Producer

        resume = find_resume(self.client_config, self.topic, self.cluster_id)
        tail = LogTail(self.log_dir, resume)
        log.info("cluster %s: %s", self.cluster_id,
                 f"resuming at offset {resume.next_offset} ({resume.file} byte {resume.position})"
                 if resume else "first run: shipping the log from its start")
        producer = Producer({**self.client_config, "enable.idempotence": True, "acks": "all",
                             "linger.ms": 20, "message.max.bytes": MAX_MESSAGE_BYTES + (1 << 20),
                             "partitioner": "murmur2_random",  # the Java client's: same partition
                             "queue.buffering.max.kbytes": self.max_in_flight_bytes >> 10})
        acked = {"next_offset": tail.next_offset}
        self.metrics.next_offset.set(tail.next_offset)
        key = self.cluster_id.encode()

        def delivered(err, msg, shipment: Shipment):
            if err is not None:
                self.metrics.errors.labels(cluster=self.cluster_id, kind="delivery").inc()
                self._failed = f"Kafka refused the batch at {shipment.file} byte {shipment.position}: {err}"
                self._stop.set()
                return
            acked["next_offset"] = shipment.next_offset
            self.metrics.next_offset.set(shipment.next_offset)
            self.metrics.batches.inc()
            self.metrics.bytes.inc(len(shipment.value))
            self.metrics.last_shipped.set(time.time())

        try:
            while not self._stop.is_set():
                shipments = tail.poll(max_bytes=self.max_in_flight_bytes // 4)
                for s in shipments:
                    if s.records == 0:
                        self.metrics.errors.labels(cluster=self.cluster_id, kind="bad_bytes").inc()
                    producer.produce(self.topic, key=key, value=s.value, headers=s.headers(),
                                     on_delivery=lambda err, msg, s=s: delivered(err, msg, s))
                    producer.poll(0)
                end = tail.log_end_offset()
                self.metrics.log_end_offset.set(end)
                self.metrics.lag_records.set(max(end - acked["next_offset"], 0))
                producer.poll(self.poll_interval if not shipments else 0)
        finally:
            producer.flush(30)
        if self._failed:
            raise ShipError(self._failed)


def install_signal_handlers(shipper: Shipper) -> None:
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, shipper.stop)
