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
    messages as big as a KRaft batch can be."""
    cluster.tools.create_topic(topic, partitions=2, replication_factor=min(3, len(cluster.brokers)),
                               configs={"min.insync.replicas": "1", "max.message.bytes": str(9 << 20)})


class ShipProcess:
    def __init__(self, cluster: KafkaCluster, logs: Path, topic: str = TOPIC):
        self.cluster, self.logs, self.topic = cluster, logs, topic
        self.proc: subprocess.Popen | None = None
        self.starts = 0
        self.port = 0

    def start(self) -> None:
        self.port = free_port()
        self.starts += 1
        self.logs.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [str(Path(sys.executable).parent / "kraft-audit"), "ship",
             "--log-dir", str(self.cluster.metadata_log_dir), "--bootstrap-servers",
             self.cluster.bootstrap, "--topic", self.topic, "--metrics-port", str(self.port)],
            stdout=subprocess.DEVNULL, stderr=(self.logs / f"ship-{self.starts}.log").open("w"))
        wait_until("the shipper's /metrics", lambda: self.metric("kraft_audit_ship_next_offset") is not None,
                   60)

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
