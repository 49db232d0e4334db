"""`kraft-audit ship` as a sidecar runs it, beside a harness cluster's controller: its own
process and /metrics, killed or stopped like one (the fleet-layout tests and demo)."""

from __future__ import annotations

import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

from kraft_audit.testing.realkafka.cluster import KafkaCluster, free_port, wait_until

TOPIC = "kraft-metadata"


def create_topic(cluster: KafkaCluster, topic: str = TOPIC) -> None:
    """The shipper's topic on the cluster itself: replicated, writable with a broker down,
    messages as big as a KRaft batch can be; returns once every broker's metadata has it,
    each partition with a leader (a shipper started before that is told the topic does not
    exist, and exits 3 for its supervisor to restart it)."""
    from confluent_kafka.admin import AdminClient

    cluster.tools.create_topic(topic, partitions=2, replication_factor=min(3, len(cluster.brokers)),
                               configs={"min.insync.replicas": "1", "max.message.bytes": str(9 << 20)})
    for broker in cluster.brokers:
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{broker.port}", "log_level": 2})

        def known(admin=admin) -> bool:
            meta = admin.list_topics(topic, timeout=5).topics.get(topic)
            return (meta is not None and meta.error is None and len(meta.partitions) == 2
                    and all(p.leader >= 0 for p in meta.partitions.values()))
        wait_until(f"topic {topic} in {broker}'s metadata", known, 60)


def key_partition(key: bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner (and the shipper's murmur2_random) gives
    a keyed message: murmur2 of the key, made positive, modulo the partitions."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def murmur2(key: bytes) -> int:
    """Kafka's Utils.murmur2, as an unsigned 32-bit number."""
    m, seed = 0x5bd1e995, 0x9747b28c
    length = len(key)
    h = (seed ^ length) & 0xFFFFFFFF
    for i in range(0, length - length % 4, 4):
        k = int.from_bytes(key[i:i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    tail = key[length - length % 4:]
    if len(tail) == 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h ^= tail[0]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h


class ShipProcess:
    def __init__(self, cluster: KafkaCluster, logs: Path, topic: str = TOPIC,
                 kafka_timeout: float | None = None, log_dir: Path | None = None,
                 ask_quorum: bool = False):
        self.cluster, self.logs, self.topic = cluster, logs, topic
        self.ask_quorum = ask_quorum  # --bootstrap-controller: ship only what the quorum committed
        self.log_dir = log_dir or cluster.metadata_log_dir  # the controller's, or a copy of it
        self.kafka_timeout = kafka_timeout
        self.proc: subprocess.Popen | None = None
        self.starts = 0
        self.port = 0

    def start(self, bootstrap: str | None = None) -> None:
        """Start it and wait for its /metrics (served before it reads where to resume).
        `bootstrap`: the brokers to name (default: those not paused)."""
        self.port = free_port()
        self.starts += 1
        self.logs.mkdir(parents=True, exist_ok=True)
        options = [] if self.kafka_timeout is None else ["--kafka-timeout", str(self.kafka_timeout)]
        if self.ask_quorum:
            options += ["--bootstrap-controller", ",".join(f"127.0.0.1:{c.port}" for c in self.cluster.controllers)]
        self.proc = subprocess.Popen(
            [str(Path(sys.executable).parent / "kraft-audit"), "ship",
             "--log-dir", str(self.log_dir), "--bootstrap-servers",
             bootstrap or self.cluster.bootstrap, "--topic", self.topic, "--metrics-port",
             str(self.port), *options],
            stdout=subprocess.DEVNULL, stderr=self.log_path.open("w"))
        wait_until("the shipper's /metrics", lambda: self.metric("kraft_audit_ship_next_offset") is not None,
                   60)

    @property
    def log_path(self) -> Path:
        """This start's stderr."""
        return self.logs / f"ship-{self.starts}.log"

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def metric(self, name: str) -> float | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=2) as r:
                text = r.read().decode()
        except OSError:
            return None
        return next((float(line.split()[-1]) for line in text.splitlines() if line.startswith(name + "{")),
                    None)

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> int:
        """SIGTERM: what was handed to Kafka is flushed; the exit status."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(30)
