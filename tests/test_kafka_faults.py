"""A randomised fault loop on a real quorum, the fleet layout end to end (`make test-raft-faults`).

Three controllers and a broker; every controller's `kraft-audit ship` sidecar ships what
the quorum committed to one topic of the broker; `kraft-audit run` reads the topic. For a
bounded time (FAULT_SECONDS, default 240; every kind of fault at least once) a workload
creates and deletes topics while random faults hit the controllers, the shippers and the job: kill -9 and restart,
SIGSTOP and SIGCONT, and the active controller cut off from both followers while it
takes a create (its uncommitted tail is replaced at the failover). At most one
controller is away at a time, but for the cut-off. Then every process comes back, the
job catches up with the quorum's high watermark and stops, and its tables must equal the
audit of the committed log (a controller's final log dir, with the high watermark):
the same partitions, the same findings, nothing quarantined.

FAULT_SEED picks the faults (printed, so that a failure can be run again).
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from kraft_audit.core.audit import Auditor
from kraft_audit.core.codec.logdir import log_dir_evidence, read_log_dir
from kraft_audit.core.events import MetadataEvent
from kraft_audit.core.rules import load_catalog
from kraft_audit.quorum import commit_claim, leader_status
from kraft_audit.tables import PARTITION_STATE, QUARANTINE, VIOLATIONS
from kraft_audit.tables.read import read_rows
from kraft_audit.testing.realkafka.cluster import KafkaCluster, wait_until
from kraft_audit.testing.realkafka.ship_process import TOPIC, ShipProcess, create_topic
from services import KAFKA_VERSIONS, free_port

pytestmark = [pytest.mark.kafka, pytest.mark.faults]

FAULT_SECONDS = float(os.environ.get("FAULT_SECONDS", "240"))
KRAFT_AUDIT = str(Path(sys.executable).parent / "kraft-audit")


class JobProcess:
    """`kraft-audit run` on the shipper's topic, in its own process group (kill -9 takes
    its JVM and Python workers with it)."""

    def __init__(self, bootstrap: str, work: Path):
        self.work, self.bootstrap = work, bootstrap
        self.proc: subprocess.Popen | None = None
        self.starts = 0
        self.port = 0

    def start(self) -> None:
        self.port = free_port()
        self.starts += 1
        log = (self.work / f"job-{self.starts}.log").open("w")
        self.proc = subprocess.Popen(
            [KRAFT_AUDIT, "run", "--kafka", f"{self.bootstrap}/{TOPIC}", "--checkpoint", str(self.work / "ck"),
             "--tables", str(self.work / "tables"), "--buckets", "2", "--trigger", "1 second",
             "--metrics-port", str(self.port)],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def signal(self, sig: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)

    def kill9(self) -> None:
        self.signal(signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait(30)

    def stop(self) -> int:
        """SIGTERM to the driver: it stops at a micro-batch boundary and exits 0."""
        self.signal(signal.SIGCONT)
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(120)

    def last_offset(self) -> float:
        try:
            text = urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=2).read().decode()
        except OSError:
            return -1
        return next((float(line.split()[-1]) for line in text.splitlines()
                     if line.startswith("kraft_audit_last_offset{")), -1)


class Workload(threading.Thread):
    """Topics created and deleted through the broker, about one call a second, errors
    ignored (a quorum without a leader times them out)."""

    def __init__(self, bootstrap: str, rng: random.Random):
        super().__init__(daemon=True)
        from confluent_kafka.admin import AdminClient

        self.admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 2})
        self.rng, self.stopped, self.made = rng, threading.Event(), 0
        self.topics: list[str] = []

    def run(self) -> None:
        from confluent_kafka.admin import NewTopic

        while not self.stopped.wait(1.0):
            try:
                if self.topics and self.rng.random() < 0.3:
                    name = self.topics.pop(self.rng.randrange(len(self.topics)))
                    self.admin.delete_topics([name], request_timeout=5)[name].result(10)
                else:
                    name = f"load-{self.made}"
                    self.made += 1
                    self.admin.create_topics([NewTopic(name, self.rng.randint(1, 3), 1)],
                                             request_timeout=5)[name].result(10)
                    self.topics.append(name)
            except Exception:  # noqa: BLE001 - a fault is under way: the next call tries again
                pass


def _pause(proc: subprocess.Popen | None, seconds: float) -> None:
    if proc is None or proc.poll() is not None:
        return
    os.kill(proc.pid, signal.SIGSTOP)
    time.sleep(seconds)
    os.kill(proc.pid, signal.SIGCONT)


def _leader(addresses: list[str]):
    try:
        return leader_status(addresses, timeout_s=2)
    except Exception:  # noqa: BLE001 - an election under way
        return None


def test_after_random_faults_the_tables_equal_the_committed_log(tmp_path):
    seed = int(os.environ.get("FAULT_SEED") or random.randrange(1 << 30))
    print(f"\nFAULT_SEED={seed} FAULT_SECONDS={FAULT_SECONDS:g}")
    rng = random.Random(seed)
    cluster = KafkaCluster(KAFKA_VERSIONS[0], tmp_path / "kafka", brokers=1, controllers=3)
    addresses = [f"127.0.0.1:{c.port}" for c in cluster.controllers]
    shippers: list[ShipProcess] = []
    job = JobProcess("", tmp_path)
    workload = None
    done: list[str] = []
    try:
        cluster.start()
        create_topic(cluster)
        for c in cluster.controllers:
            shippers.append(ShipProcess(cluster, tmp_path / f"ship-{c.node_id}", log_dir=c.metadata_log_dir,
                                        ask_quorum=True))
            shippers[-1].start()
        job = JobProcess(cluster.bootstrap, tmp_path)
        job.start()
        workload = Workload(cluster.bootstrap, rng)
        workload.start()

        def kill_controller():
            c = rng.choice(cluster.controllers)
            c.kill()
            time.sleep(rng.uniform(2, 8))
            c.start()

        def pause_controller():
            c = rng.choice(cluster.controllers)
            c.pause()
            time.sleep(rng.uniform(2, 6))
            c.resume()

        def cut_off_leader():
            status = _leader(addresses)
            if status is None:
                return
            old = cluster.node(status.leader_id)
            followers = [c for c in cluster.controllers if c is not old]
            for f in followers:
                f.pause()
            time.sleep(rng.uniform(2, 4))  # the workload's calls reach a leader that cannot commit
            old.kill()
            for f in followers:
                f.resume()
            wait_until("a new leader", lambda: (s := _leader(addresses)) and s.leader_id != old.node_id, 60)
            old.start()

        def kill_shipper():
            s = rng.choice(shippers)
            s.kill9()
            time.sleep(rng.uniform(1, 5))
            s.start()

        def pause_shipper():
            _pause(rng.choice(shippers).proc, rng.uniform(2, 6))

        def kill_job():
            job.kill9()
            time.sleep(rng.uniform(1, 5))
            job.start()

        def pause_job():
            job.signal(signal.SIGSTOP)
            time.sleep(rng.uniform(2, 6))
            job.signal(signal.SIGCONT)

        faults = [kill_controller, pause_controller, cut_off_leader, kill_shipper, pause_shipper,
                  kill_job, pause_job]
        deadline = time.monotonic() + FAULT_SECONDS
        first = rng.sample(faults, len(faults))  # each kind once, in a random order, then at random
        while time.monotonic() < deadline or first:
            fault = first.pop() if first else rng.choice(faults)
            fault()
            done.append(fault.__name__)
            time.sleep(rng.uniform(2, 6))
        workload.stopped.set()
        workload.join(30)
        print(f"faults: {len(done)} ({', '.join(sorted(set(done)))}); topics created {workload.made}")

        # everything back; the job catches up with the committed log, then stops
        status = wait_until("a leader", lambda: _leader(addresses), 60)
        for c in cluster.controllers:
            wait_until(f"{c} at the high watermark", lambda c=c: max(
                (e.offset for e in read_log_dir(c.metadata_log_dir) if isinstance(e, MetadataEvent)),
                default=-1) >= status.high_watermark - 1, 120)
        if job.proc is None or job.proc.poll() is not None:
            job.start()
        wait_until("the job at the high watermark", lambda: job.last_offset() >= status.high_watermark - 1, 300)
        assert job.stop() == 0
        for s in shippers:
            assert s.stop() == 0
        final = tmp_path / "final"
        shutil.copytree(cluster.controllers[0].metadata_log_dir.parent, final,
                        ignore=lambda d, names: [n for n in names if n.endswith(".lock")])
        auditor = Auditor(load_catalog(), {})
        expected = auditor.process([log_dir_evidence(final, cluster.cluster_id, "0"),
                                    *read_log_dir(final, cluster.cluster_id)])
        claim = commit_claim(leader_status(addresses), cluster.cluster_id, auditor.gate.shape)
        if claim is not None:
            more = auditor.process([claim])
            expected.violations.extend(more.violations)
    finally:
        if workload is not None:
            workload.stopped.set()
        job.kill9()
        for s in shippers:
            if s.proc is not None and s.proc.poll() is None:
                s.kill9()
        cluster.close()

    tables = str(tmp_path / "tables")
    job_partitions = {(r["topic_id"], r["partition"], r["leader"], r["leader_epoch"], r["partition_epoch"],
                       tuple(r["replicas"]), tuple(r["isr"]))
                      for r in read_rows(tables, PARTITION_STATE) if not r["deleted"]}
    # what the job audited up to the high watermark it caught up with
    released = {(tid, p, s.leader, s.leader_epoch, s.partition_epoch, tuple(s.replicas), tuple(s.isr))
                for (tid, p), s in auditor.state.partitions.items()}
    assert job_partitions == released
    assert read_rows(tables, QUARANTINE) == []
    assert sorted(r["rule_id"] for r in read_rows(tables, VIOLATIONS)) == \
        sorted(v.rule_id for v in expected.violations)
