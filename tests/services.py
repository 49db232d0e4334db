"""Real servers for the tests (Prometheus, Alertmanager, Spark standalone):
free loopback ports, polling with a deadline, and processes that are always
stopped, with everything they started."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from pathlib import Path

import pytest

from kraft_audit.testing.realkafka.cluster import wait_until

# The Kafka versions the real-cluster tests run: the newest of the 4 and 3 lines (`make test`
# the first, `make test-variants` the second: kafka_lines_beyond_the_first_as_variants);
# `make test-kafka-matrix` every release line (KRAFT_TEST_KAFKA_VERSIONS, comma-separated;
# not KRAFT_AUDIT_*: those are the job's configuration, and `kraft-audit run` refuses an unknown one).
KAFKA_VERSIONS = os.environ.get("KRAFT_TEST_KAFKA_VERSIONS", "4.4.0,3.9.2").split(",")


def kafka_lines_beyond_the_first_as_variants() -> list:
    """KAFKA_VERSIONS for a real-Kafka test run on more than one line: `make test` runs it on
    the first (the newest line), `make test-variants` (which CI runs) on the others, for the
    suite's 25-minute budget. `make test-kafka-matrix` selects by its own marks and runs
    every line."""
    return KAFKA_VERSIONS[:1] + [pytest.param(v, marks=pytest.mark.variants) for v in KAFKA_VERSIONS[1:]]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what: str, probe, timeout: float = 30.0, interval: float = 0.25):
    """Poll `probe` until it returns something truthy (a refused connection counts as
    not yet); fail the test after `timeout` seconds."""
    def reachable():
        try:
            return probe()
        except OSError:  # not listening yet
            return None
    try:
        return wait_until(what, reachable, timeout, interval)
    except TimeoutError as exc:
        raise AssertionError(str(exc)) from None


class Service:
    """A process in its own process group (so a stop also ends its children,
    e.g. a Spark worker's executor JVMs), its output in a log file."""

    def __init__(self, args: list[str], log: Path, env: dict | None = None, cwd=None):
        self.log = log
        self._out = log.open("w")
        self.process = subprocess.Popen([str(a) for a in args], stdout=self._out,
                                        stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                        start_new_session=True)

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        try:
            os.killpg(self.process.pid, sig)
        except ProcessLookupError:
            pass

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM to the group, SIGKILL if it lingers."""
        if self.running:
            self.kill(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        self.kill(signal.SIGKILL)  # whatever of the group is left
        self.process.wait()
        self._out.close()

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def shipper_topic(cluster, topic: str) -> None:
    """A one-partition topic for the shipper's messages (a whole KRaft batch each)."""
    cluster.tools.create_topic(topic, partitions=1, replication_factor=1,
                               configs={"max.message.bytes": str(9 << 20)})


def produce_shipped(bootstrap: str, topic: str, cluster_id: str, shipped) -> None:
    """Produce `shipped` (kraft-audit ship's messages) to `topic` as the shipper does (keyed by
    cluster id, idempotent, acks=all), every one acknowledged. The producer is gone when
    this returns: none is left to reconnect once the cluster stops."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all"})
    failed: list = []
    for s in shipped:
        producer.produce(topic, key=cluster_id.encode(), value=s.value, headers=s.headers(),
                         on_delivery=lambda err, msg: failed.append(err) if err else None)
        producer.poll(0)
    assert producer.flush(60) == 0 and not failed
