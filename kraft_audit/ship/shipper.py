"""`kraft-audit ship`: a controller's metadata log, batch by batch, into a Kafka topic.

The messages are `LogTail`'s shipments, keyed by cluster id (so one cluster's
log stays in one partition, in order) through an idempotent producer (acks=all:
a retry never doubles or reorders a batch). Where to go on after a restart is
read from the topic itself: the newest message with this cluster's key and this
node's `kraft.node` header says the file, position and next offset.

It rides out the cluster it ships to: while brokers are down or a partition's
leader moves, every Kafka call (metadata, reading where to resume, producing,
acknowledgements) is retried with backoff (0.5 s doubling to 10 s; librdkafka's
own retries for produce), for at most `kafka_timeout` seconds in a row (default
300). Past that bound, or on an error no retry mends (the topic absent, access
refused, a batch too big, the idempotent producer fenced), it ends with a
`ShipError` (`kraft-audit ship`: one line, exit 3) so that its supervisor
restarts it and it resumes from the topic.

With the controllers (`controllers`, `ship --bootstrap-controller`) it ships only what
the quorum committed (kraft_audit/ship/tail.py), so a deposed leader's sidecar never
puts the tail that a later leader replaced in the topic. Then every controller's sidecar
may ship to the same topic: each resumes from its own messages, the job takes each
offset once (the others are duplicates), committed entries agree on every copy, and
losing any one controller loses no audit.

Health on Prometheus (its own endpoint): the next offset to ship, the log's
end, the lag between them, batches and bytes shipped, errors by kind, and
when a batch was last acknowledged; with the controllers, the commit point and
whether the quorum answered.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections import deque
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

from kraft_audit.core.codec.logdir import read_meta_properties
from kraft_audit.ship.tail import LogTail, Resume, Shipment
from kraft_audit.errors import ConfigError, KafkaUnreachable, ShipError, ShipStopped

log = logging.getLogger("kraft_audit.ship")

# A KRaft batch is at most 8 MiB (the controller's max batch size); the topic needs
# max.message.bytes at least that for the rare big one.
MAX_MESSAGE_BYTES = 8 << 20

# The node whose log dir a message came from (meta.properties' node.id), beside tail.py's headers.
NODE_HEADER = "kraft.node"

# How long Kafka may stay unreachable before the shipper gives up (seconds).
DEFAULT_KAFKA_TIMEOUT = 300.0
BACKOFF_FIRST, BACKOFF_MAX = 0.5, 10.0
# On SIGTERM, how long to wait for Kafka to acknowledge what was handed to it: within a
# pod's default 30 s grace period. What is not acknowledged is shipped again next start.
FLUSH_ON_STOP_S = 20.0


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
        self.committed_offset = gauge("committed_offset", "Offsets below are proven committed "
                                      "(--bootstrap-controller): what may be shipped.")
        self.quorum_unanswered = gauge("quorum_unanswered", "1 while no controller answered "
                                       "DescribeQuorum (--bootstrap-controller), the last time asked.")
        self.cluster = cluster_id


# Errors no retry mends: said at once (anything else is retried within the bound).
_PERMANENT = {"UNKNOWN_TOPIC_OR_PART", "TOPIC_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED",
              "GROUP_AUTHORIZATION_FAILED", "SASL_AUTHENTICATION_FAILED", "_AUTHENTICATION",
              "MSG_SIZE_TOO_LARGE", "_MSG_SIZE_TOO_LARGE", "RECORD_LIST_TOO_LARGE",
              "INVALID_CONFIG", "_INVALID_ARG", "_UNKNOWN_TOPIC", "_UNKNOWN_PARTITION",
              "INVALID_TOPIC_EXCEPTION", "UNSUPPORTED_VERSION", "_FENCED",
              "INVALID_PRODUCER_EPOCH", "OUT_OF_ORDER_SEQUENCE_NUMBER", "PRODUCER_FENCED",
              "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"}


def is_permanent(err) -> bool:
    """A KafkaError that retrying will not mend."""
    return err.fatal() or err.name() in _PERMANENT


class KafkaRetry:
    """Calls retried with backoff while Kafka is unreachable, for at most `bound` seconds
    in a row; then a ShipError that says for how long and the last error. `stop`: an
    Event that ends the waiting (SIGTERM while Kafka is down)."""

    def __init__(self, bound: float, stop: threading.Event, on_retry=None):
        self.bound = bound
        self.stop = stop
        self.on_retry = on_retry or (lambda what, error: None)

    def call(self, what: str, fn, *args, **kwargs):
        from confluent_kafka import KafkaException

        first = time.monotonic()
        delay = BACKOFF_FIRST
        while True:
            try:
                return fn(*args, **kwargs)
            except KafkaException as exc:
                err = exc.args[0]
                if err.name() == "_INVALID_ARG":  # a client setting librdkafka refuses
                    raise ConfigError(err.str()) from None
                if is_permanent(err):
                    raise ShipError(f"{what}: {err.str()} ({err.name()})") from None
                error = f"{err.str()} ({err.name()})"
            except KafkaUnreachable as exc:
                error = str(exc)
            waited = time.monotonic() - first
            if waited + delay > self.bound:
                raise ShipError(f"{what}: Kafka unreachable for {waited:.0f} s (--kafka-timeout "
                                f"{self.bound:g}): {error}") from None
            log.warning("%s: %s; retrying in %.1f s", what, error, delay)
            self.on_retry(what, error)
            if self.stop.wait(delay):
                raise ShipStopped()
            delay = min(delay * 2, BACKOFF_MAX)


def attempt_timeout(bound: float) -> float:
    """How long one attempt may wait for Kafka: a few attempts fit in the bound."""
    return min(10.0, max(1.0, bound / 4))


def find_resume(consumer_config: dict, topic: str, cluster_id: str, timeout: float = 30.0,
                node: int | None = None) -> Resume | None:
    """The newest message of `cluster_id` in `topic` as a resume point (None: never shipped);
    given `node`, the newest that node's shipper sent (header kraft.node: every controller's
    sidecar may ship, each from its own log dir's files and positions).
    Reads each partition backwards from its end, a window at a time. A partition that
    cannot be read to its end (a broker down, a leader moving) raises KafkaUnreachable or a
    KafkaException: "never shipped" is said only of a topic read whole."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer({**consumer_config, "group.id": f"kraft-audit-ship-resume-{cluster_id}",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    key = cluster_id.encode()
    sender = None if node is None else str(node).encode()
    try:
        meta = consumer.list_topics(topic, timeout=timeout).topics.get(topic)
        if meta is None:
            raise KafkaUnreachable(f"no metadata for topic {topic!r}")
        if meta.error is not None:
            if meta.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise ShipError(f"topic {topic!r} does not exist: create it first "
                                "(docs/operations.md)")
            raise KafkaUnreachable(f"topic {topic!r}: {meta.error.str()}")
        for partition in sorted(meta.partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout)
            end = high
            window = 500
            while end > low:
                start = max(low, end - window)
                newest = _newest_with_key(consumer, TopicPartition(topic, partition, start), end, key,
                                          sender, timeout)
                if newest is not None:
                    headers = dict(newest.headers() or [])
                    return Resume.from_headers(headers, len(newest.value()))
                end, window = start, window * 2
        return None
    finally:
        consumer.close()


def _newest_with_key(consumer, tp, end: int, key: bytes, sender: bytes | None, timeout: float):
    from confluent_kafka import KafkaError, KafkaException

    consumer.assign([tp])
    newest = None
    deadline = time.monotonic() + timeout  # without a message: a big window may take longer
    while time.monotonic() < deadline:
        msg = consumer.poll(1.0)
        if msg is None:
            continue
        deadline = time.monotonic() + timeout
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                return newest
            raise KafkaException(msg.error())
        if msg.key() == key and (sender is None or dict(msg.headers() or []).get(NODE_HEADER) == sender):
            newest = msg
        if msg.offset() >= end - 1:
            return newest
    raise KafkaUnreachable(f"{tp.topic} partition {tp.partition}: nothing read for {timeout:g} s "
                           f"(before offset {end})")


class Shipper:
    def __init__(self, log_dir: str, bootstrap_servers: str, topic: str,
                 cluster_id: str | None = None, producer_config: dict | None = None,
                 poll_interval: float = 0.2, max_in_flight_bytes: int = 32 << 20,
                 kafka_timeout: float = DEFAULT_KAFKA_TIMEOUT, controllers: list[str] | None = None):
        self.log_dir = Path(log_dir)
        self.controllers = list(controllers or [])  # given: ship only what the quorum committed
        self.node = self.node_id()
        self.cluster_id = cluster_id or read_meta_properties(self.log_dir).get("cluster.id") \
            or read_meta_properties(self.log_dir.parent).get("cluster.id")
        if not self.cluster_id:
            raise ShipError(f"no cluster id: {log_dir} has no meta.properties; give --cluster-id")
        self.topic = topic
        # librdkafka's own log says every failed connection (thousands while a broker is
        # down): only its critical lines; the retries and the client's errors are ours.
        self.client_config = {"bootstrap.servers": bootstrap_servers, "log_level": 2,
                              **(producer_config or {})}
        self.poll_interval = poll_interval
        self.max_in_flight_bytes = max_in_flight_bytes
        self.kafka_timeout = kafka_timeout
        self.metrics = ShipMetrics(self.cluster_id)
        self._stop = threading.Event()
        self._failed: str | None = None
        self._said: tuple[str, float] = ("", 0.0)  # the kind of client error logged last, when
        self.retry = KafkaRetry(kafka_timeout, self._stop, self._count_retry)

    def _count_retry(self, _what: str, _error: str) -> None:
        self.metrics.errors.labels(cluster=self.cluster_id, kind="kafka_retry").inc()

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
        """Ship until stopped (SIGTERM/SIGINT: what was handed to Kafka is flushed first,
        for at most FLUSH_ON_STOP_S). ShipError when Kafka stays unreachable past
        `kafka_timeout` or refuses a batch for good."""
        from confluent_kafka import KafkaException, Producer

        try:
            resume = self.retry.call("reading where to resume", find_resume,
                                     self.client_config, self.topic, self.cluster_id,
                                     timeout=attempt_timeout(self.kafka_timeout), node=self.node)
        except ShipStopped:
            return
        tail = LogTail(self.log_dir, resume, self.controllers)
        log.info("cluster %s: %s", self.cluster_id,
                 f"resuming at offset {resume.next_offset} ({resume.file} byte {resume.position})"
                 if resume else "first run: shipping the log from its start")
        # An idempotent producer retries a batch itself (no doubling, no reordering) while
        # its partition has no leader or the brokers are down, until message.timeout.ms:
        # the same bound as the other calls.
        try:
            producer = Producer({**self.client_config, "enable.idempotence": True, "acks": "all",
                                 "linger.ms": 20, "message.max.bytes": MAX_MESSAGE_BYTES + (1 << 20),
                                 "partitioner": "murmur2_random",  # the Java client's: same partition
                                 "queue.buffering.max.kbytes": self.max_in_flight_bytes >> 10,
                                 "message.timeout.ms": int(self.kafka_timeout * 1000),
                                 "error_cb": self._client_error})
        except KafkaException as exc:
            raise ConfigError(exc.args[0].str()) from None
        acked = {"next_offset": tail.next_offset}
        sent_by = [] if self.node is None else [(NODE_HEADER, str(self.node).encode())]
        self.metrics.next_offset.set(tail.next_offset)
        key = self.cluster_id.encode()

        def delivered(err, msg, shipment: Shipment):
            if err is not None:
                self.metrics.errors.labels(cluster=self.cluster_id, kind="delivery").inc()
                if self._failed is None:
                    self._failed = (f"the batch at {shipment.file} byte {shipment.position} was not "
                                    f"acknowledged: {err.str()} ({err.name()})"
                                    + (f" within --kafka-timeout {self.kafka_timeout:g} s"
                                       if err.name() == "_MSG_TIMED_OUT" else ""))
                self._stop.set()
                return
            acked["next_offset"] = shipment.next_offset
            self.metrics.next_offset.set(shipment.next_offset)
            self.metrics.batches.inc()
            self.metrics.bytes.inc(len(shipment.value))
            self.metrics.last_shipped.set(time.time())

        pending: deque[Shipment] = deque()  # read from the log, not yet handed to the producer
        try:
            while not self._stop.is_set():
                if not pending:  # memory stays bounded: the tail is read only when all went out
                    pending.extend(tail.poll(max_bytes=self.max_in_flight_bytes // 4))
                handed = 0
                while pending:
                    s = pending[0]
                    try:
                        producer.produce(self.topic, key=key, value=s.value, headers=s.headers() + sent_by,
                                         on_delivery=lambda err, msg, s=s: delivered(err, msg, s))
                    except BufferError:
                        break  # the producer's queue is full (Kafka slow or down): later
                    except KafkaException as exc:
                        err = exc.args[0]
                        raise ShipError(f"the batch at {s.file} byte {s.position} cannot be "
                                        f"produced: {err.str()} ({err.name()})") from None
                    if s.records == 0:
                        self.metrics.errors.labels(cluster=self.cluster_id, kind="bad_bytes").inc()
                    pending.popleft()
                    handed += 1
                    producer.poll(0)
                end = tail.log_end_offset()
                self.metrics.log_end_offset.set(end)
                if tail.commit is not None:
                    self.metrics.committed_offset.set(tail.commit.end)
                    self.metrics.quorum_unanswered.set(int(tail.commit.quorum_error is not None))
                self.metrics.lag_records.set(max(end - acked["next_offset"], 0))
                producer.poll(self.poll_interval if not handed else 0)
        finally:
            left = producer.flush(FLUSH_ON_STOP_S if self._failed is None else 0)
            if left and self._failed is None:
                log.warning("%d messages not acknowledged within %g s: the next start ships them "
                            "again (the job skips what it already has)", left, FLUSH_ON_STOP_S)
        if self._failed:
            raise ShipError(self._failed)

    def _client_error(self, err) -> None:
        """librdkafka's client-level errors: all brokers down is waited out (its produce
        retries, within message.timeout.ms); a fatal one ends the shipper."""
        self.metrics.errors.labels(cluster=self.cluster_id, kind="client").inc()
        if err.fatal():
            if self._failed is None:
                self._failed = f"the Kafka producer failed: {err.str()} ({err.name()})"
            self._stop.set()
        else:
            now = time.monotonic()
            if err.name() != self._said[0] or now - self._said[1] > 30:  # not per reconnection
                log.warning("kafka: %s (%s); retrying (at most --kafka-timeout %g s)", err.str(),
                            err.name(), self.kafka_timeout)
                self._said = (err.name(), now)


def install_signal_handlers(shipper: Shipper) -> None:
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, shipper.stop)
