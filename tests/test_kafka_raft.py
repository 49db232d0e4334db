"""The metadata log as Raft keeps it, witnessed on a real quorum of three controllers.

The active controller is cut off from both followers (SIGSTOP): it goes on writing records
of its epoch (a topic created through the broker) that no majority acknowledges, then is
killed. The followers come back, one wins the next epoch and writes other records at the
same offsets (another topic); the old leader restarts and truncates its tail.

The audit must take only what the quorum committed:
- `check` on a copy of the old leader's log dir taken before it restarted holds the tail it
  cannot prove committed (the log alone proves offsets before its newest epoch's start),
  audits it as provisional, and the quorum's answer (DescribeQuorum, `--bootstrap-controller`)
  does not rescue it: that copy is not at the quorum's epoch;
- the two copies read together (the old leader's, then a survivor's) withdraw the deposed
  leader's records, each listed with its offset and epoch, and the audit equals the
  survivor's;
- on every final log, with the quorum's high watermark, the uncommitted topic is nowhere,
  the one created after the failover is there, and nothing is found;
- the streaming job, asking the quorum (`sources.bootstrap_controllers`), reads a log dir only
  as far as it is committed: on the deposed leader's copy it takes none of the tail, and
  when that log dir then holds what the old leader has after its restart (truncated, the
  new epoch fetched: as a live tail sees it), it goes on, and its tables equal the audit of
  the survivor's final log;
- the shipper's tail, asking the quorum (`ship --bootstrap-controller`), on that same log
  dir ships none of the deposed tail and then exactly the committed history: what a topic
  the job reads would hold;
- every controller's sidecar shipping to one topic: losing the active controller and its
  sidecar for good loses no audit.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from kraft_audit.config import load_config
from kraft_audit.core.audit import Auditor
from kraft_audit.core.codec.batches import Batch, iter_batches
from kraft_audit.core.codec.logdir import batch_events, log_dir_evidence, read_log_dir
from kraft_audit.core.events import KIND_RECORD, MetadataEvent, is_snapshot_source
from kraft_audit.core.rules import load_catalog
from kraft_audit.quorum import commit_claim, leader_status
from kraft_audit.ship.shipper import find_resume
from kraft_audit.ship.tail import SEGMENT, LogTail
from kraft_audit.spark.job import AuditJob
from kraft_audit.tables import PARTITION_STATE, QUARANTINE
from kraft_audit.tables.read import read_rows
from kraft_audit.testing.realkafka.cluster import KafkaCluster, KafkaNode, wait_until
from kraft_audit.testing.realkafka.ship_process import TOPIC as SHIP_TOPIC, ShipProcess, create_topic
from kraft_audit.testing.realkafka.tools import TOOL_JVM_OPTS, TOPIC_COMMAND, main_class
from services import kafka_lines_beyond_the_first_as_variants

pytestmark = pytest.mark.kafka

BEFORE, LOST, AFTER = "before-failover", "never-committed", "after-failover"


def _topics_written(log_dir: Path) -> dict[str, tuple[int, int, str]]:
    """Topic name → (offset, Raft epoch, topic id) of its TopicRecord, as this log dir holds it now."""
    found = {}
    for e in read_log_dir(log_dir):
        if isinstance(e, MetadataEvent) and e.kind == KIND_RECORD and e.type == "TOPIC_RECORD":
            found[e.data["name"]] = (e.offset, e.leader_epoch, e.data["topicId"])
    return found


def _copy(node: KafkaNode, target: Path) -> Path:
    """The node's log dir as it is now (the metadata directory and meta.properties)."""
    shutil.copytree(node.metadata_log_dir.parent, target,
                    ignore=lambda d, names: [n for n in names if n.endswith(".lock")])
    return target


def _check(*argv) -> dict:
    result = subprocess.run([sys.executable, "-m", "kraft_audit.cli.main", "check", "--json", *map(str, argv)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode in (0, 1), result.stderr[-2000:]
    return json.loads(result.stdout)


def _audit(cluster_id: str, *log_dirs: Path, addresses: list[str] | None = None) -> tuple[Auditor, list]:
    """One audit of every copy given, read one after the other (each with its own evidence),
    then the quorum's high watermark claimed about what it holds; (auditor, retractions)."""
    auditor = Auditor(load_catalog(), {})
    retractions = []
    for i, log_dir in enumerate(log_dirs):
        out = auditor.process([log_dir_evidence(log_dir, cluster_id, str(i)), *read_log_dir(log_dir, cluster_id)])
        assert [v.rule_id for v in out.violations] == []
        retractions += out.retractions
    if addresses:
        claim = commit_claim(leader_status(addresses), cluster_id, auditor.gate.shape)
        if claim is not None:
            out = auditor.process([claim])
            assert [v.rule_id for v in out.violations] == []
            retractions += out.retractions
    return auditor, retractions


def _shipped(tail: LogTail) -> list[tuple[int, str]]:
    """(offset, type) of every log record the tail ships now."""
    out = []
    while shipments := tail.poll():
        for s in shipments:
            if s.kind == SEGMENT:
                out += [(e.offset, e.type) for item in iter_batches(s.value, base_position=s.position)
                        if isinstance(item, Batch) for e in batch_events(item, "c", s.file)
                        if isinstance(e, MetadataEvent) and e.kind == KIND_RECORD]
    return out


def _ids(topics: dict) -> set[str]:
    return {t[2] for t in topics.values()}


def _names(auditor: Auditor) -> set[str]:
    return set(auditor.state.topic_ids)


def _partitions(auditor: Auditor) -> set[tuple]:
    return {(tid, p, s.leader, s.leader_epoch, s.partition_epoch, tuple(s.replicas), tuple(s.isr))
            for (tid, p), s in auditor.state.partitions.items()}


def _job_partitions(tables: str) -> set[tuple]:
    return {(r["topic_id"], r["partition"], r["leader"], r["leader_epoch"], r["partition_epoch"],
             tuple(r["replicas"]), tuple(r["isr"])) for r in read_rows(tables, PARTITION_STATE) if not r["deleted"]}


@pytest.mark.spark
@pytest.mark.parametrize("version", kafka_lines_beyond_the_first_as_variants())
def test_a_deposed_leaders_uncommitted_tail_is_withdrawn_and_the_new_epoch_is_audited(version, tmp_path, spark):
    cluster = KafkaCluster(version, tmp_path / "kafka", brokers=1, controllers=3)
    addresses = [f"127.0.0.1:{c.port}" for c in cluster.controllers]
    try:
        cluster.start()
        cluster.tools.create_topic(BEFORE, partitions=2, replication_factor=1)
        status = leader_status(addresses)
        old = cluster.node(status.leader_id)
        followers = [c for c in cluster.controllers if c is not old]
        wait_until(f"{BEFORE} committed on every controller",
                   lambda: all(BEFORE in _topics_written(c.metadata_log_dir) for c in cluster.controllers), 60)
        for f in followers:
            f.pause()
        # the create waits for a commit that cannot come: its records are in the leader's log
        # only; killed before the failover (the broker's forwarding may still retry it, creating the
        # topic anew, under another id, in the new epoch: as Kafka does)
        creating = subprocess.Popen(
            ["java", *TOOL_JVM_OPTS, "-cp", f"{cluster.jars}/*", main_class(cluster.jars, TOPIC_COMMAND),
             "--bootstrap-server", cluster.bootstrap, "--create", "--topic", LOST, "--partitions", "6",
             "--replication-factor", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        lost_at = wait_until(f"{LOST} in the cut-off leader's log",
                             lambda: _topics_written(old.metadata_log_dir).get(LOST), 30)
        time.sleep(1)  # a few NoOps of the epoch after it
        creating.kill()
        creating.wait(30)
        deposed = _copy(old, tmp_path / "deposed")
        old.kill()
        for f in followers:
            f.resume()
        new = wait_until("a new leader", lambda: _leader_of(addresses, old.node_id), 60)
        assert new.leader_epoch > status.leader_epoch
        cluster.tools.create_topic(AFTER, partitions=1, replication_factor=1)
        old.start()
        wait_until(f"{AFTER} on the old leader's log too",
                   lambda: AFTER in _topics_written(old.metadata_log_dir), 90)
        survivor = cluster.node(new.leader_id)
        finals = {c.node_id: _copy(c, tmp_path / f"final-{c.node_id}") for c in cluster.controllers}
        lost_id = lost_at[2]
        lost_anywhere = [n for n, d in finals.items() if lost_id in _ids(_topics_written(d))]
        deposed_report = _check(deposed, "--cluster-id", cluster.cluster_id)
        asked_report = _check(deposed, "--cluster-id", cluster.cluster_id,
                              "--bootstrap-controller", ",".join(addresses))
        merged, withdrawn = _audit(cluster.cluster_id, deposed, finals[survivor.node_id])
        merged_report = _check(deposed, "--cluster-id", cluster.cluster_id, "--copy", finals[survivor.node_id])
        survivor_alone, _ = _audit(cluster.cluster_id, finals[survivor.node_id], addresses=addresses)
        final_audits = {n: _audit(cluster.cluster_id, d, addresses=addresses)[0] for n, d in finals.items()}
        final_reports = {n: _check(d, "--cluster-id", cluster.cluster_id, "--bootstrap-controller",
                                   ",".join(addresses)) for n, d in finals.items()}
        # the job on one log dir that first holds the deposed copy, then the old leader's final one
        live = tmp_path / "live"
        shutil.copytree(deposed, live)
        job = load_config(None, {
            "checkpoint": str(tmp_path / "job" / "ck"), "tables": str(tmp_path / "job" / "tables"),
            "audit.buckets": 2, "metrics.enabled": False, "sources.log_dirs": [str(live)],
            "sources.bootstrap_controllers": addresses}, environ={})
        tail = LogTail(live, controllers=addresses)
        shipped_deposed = _shipped(tail)
        assert AuditJob(job, spark=spark).run(available_now=True)
        job_topics_deposed = {r["topic_id"] for r in read_rows(job.tables, PARTITION_STATE)}
        shutil.rmtree(live)
        shutil.copytree(finals[old.node_id], live)
        shipped = shipped_deposed + _shipped(tail)
        shipped_to = tail.commit.end
        assert AuditJob(job, spark=spark).run(available_now=True)
    finally:
        cluster.close()

    # Kafka's own verdict: the tail was truncated everywhere
    assert lost_anywhere == [], lost_anywhere
    lost_offset, lost_epoch, _ = lost_at
    assert lost_epoch == status.leader_epoch
    # check on the deposed leader's copy: the tail unproven, provisional, not in the verdict
    for report in (deposed_report, asked_report):
        commit = report["commit"]
        assert commit["unproven"] is not None, commit
        assert commit["committed_offset"] < lost_offset <= commit["unproven"]["last_offset"], commit
        assert report["findings"] == []
    # read together with a survivor's copy: the deposed records are withdrawn, with offsets
    # and epochs, and the audit is the survivor's
    lost_rows = [r for r in withdrawn if r.kind == "record" and r.record_type == "TOPIC_RECORD"]
    assert [(r.offset, r.raft_epoch) for r in lost_rows] == [(lost_offset, lost_epoch)], withdrawn
    assert all(r.replaced_by_epoch > lost_epoch and r.replaced_at <= r.offset for r in withdrawn)
    assert lost_id not in set(merged.state.topic_ids.values())
    # and check says so, the same rows: `check PATH --copy OTHER`
    assert merged_report["findings"] == []
    # (check reads runs of NoOps as one item: one row a run)
    assert [(r["offset"], r["raft_epoch"], r["record_type"]) for r in merged_report["retractions"]
            if r["record_type"] != "NO_OP_RECORD"] == \
        [(r.offset, r.raft_epoch, r.record_type) for r in withdrawn if r.record_type != "NO_OP_RECORD"]
    assert merged_report["records"]["retracted"] == len(withdrawn)
    # every final log, with the quorum's high watermark: the committed history, the same on each
    for node_id, auditor in final_audits.items():
        assert {BEFORE, AFTER} <= _names(auditor) and lost_id not in set(auditor.state.topic_ids.values())
        assert auditor.state.topic_ids == survivor_alone.state.topic_ids, node_id
        report = final_reports[node_id]
        assert report["findings"] == [], report["findings"]
        assert "high watermark" in report["commit"]["proof"], report["commit"]
    # the merged audit agrees with the survivor's wherever both have released
    assert merged.state.topic_ids.items() <= survivor_alone.state.topic_ids.items()
    # the job: none of the deposed tail, then the committed history, as the survivor's audit has it
    assert lost_id not in job_topics_deposed
    assert job_topics_deposed <= set(survivor_alone.state.topic_ids.values())
    assert _job_partitions(job.tables) == _partitions(survivor_alone)
    assert read_rows(job.tables, QUARANTINE) == []
    # the shipper's tail: none of the deposed tail, then the committed log exactly, in order
    assert all(o < lost_offset for o, _ in shipped_deposed)  # (the copy may prove nothing)
    final_records = [(e.offset, e.type) for e in read_log_dir(finals[old.node_id])
                     if isinstance(e, MetadataEvent) and e.kind == KIND_RECORD
                     and not is_snapshot_source(e.source)]
    assert shipped_to > lost_offset
    assert shipped == [r for r in final_records if r[0] < shipped_to]


def _leader_of(addresses: list[str], not_id: int):
    try:
        status = leader_status(addresses, timeout_s=2)
    except Exception:  # noqa: BLE001 - no leader yet
        return None
    return status if status.leader_id != not_id else None


def _log_end(log_dir: Path) -> int:
    return max(e.offset for e in read_log_dir(log_dir) if isinstance(e, MetadataEvent) and e.offset >= 0)


def _job_figure(job: AuditJob, name: str) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{job.metrics_port}/metrics", timeout=5).read().decode()
    return next((float(line.split()[-1]) for line in text.splitlines()
                 if line.startswith((name + "{", name + " "))), -1)


@pytest.mark.spark
@pytest.mark.parametrize("version", kafka_lines_beyond_the_first_as_variants())
def test_every_controller_ships_and_losing_the_active_one_for_good_loses_no_audit(version, tmp_path, spark):
    """Every controller's sidecar ships to one topic, asking the quorum: the job gets each
    committed batch from each of them and takes it once. The active controller and its
    sidecar are then lost for good (kill -9): the others' shipping carries the audit on, a
    topic created after it is audited, and the job's tables equal the audit of a survivor's
    final log, with nothing quarantined."""
    cluster = KafkaCluster(version, tmp_path / "kafka", brokers=1, controllers=3)
    addresses = [f"127.0.0.1:{c.port}" for c in cluster.controllers]
    cfg = load_config(None, {"checkpoint": str(tmp_path / "job" / "ck"), "tables": str(tmp_path / "job" / "tables"),
                             "audit.buckets": 2, "trigger.interval": "1 second", "metrics.port": 0,
                             "sources.kafka": ["placeholder:9092/" + SHIP_TOPIC]}, environ={})
    shippers: list[ShipProcess] = []
    job = None
    try:
        cluster.start()
        create_topic(cluster)
        cfg = cfg.with_values({"sources.kafka": [{"bootstrap_servers": cluster.bootstrap, "topic": SHIP_TOPIC}]})
        for c in cluster.controllers:
            shippers.append(ShipProcess(cluster, tmp_path / f"ship-{c.node_id}", log_dir=c.metadata_log_dir,
                                        ask_quorum=True))
            shippers[-1].start()
        job = AuditJob(cfg, spark=spark)
        job.start(available_now=False)
        cluster.tools.create_topic(BEFORE, partitions=2, replication_factor=1)
        old = cluster.node(leader_status(addresses).leader_id)
        target = _log_end(old.metadata_log_dir)
        wait_until(f"the job to audit {BEFORE}", lambda: _job_figure(job, "kraft_audit_last_offset") >= target, 180)
        assert _job_figure(job, "kraft_audit_duplicates_total") > 0  # the same batches, from each sidecar
        assert [s.proc.poll() for s in shippers] == [None] * 3, [s.log_text()[-500:] for s in shippers]

        lost = shippers[cluster.controllers.index(old)]
        lost.kill9()
        old.kill()
        new = wait_until("a new leader", lambda: _leader_of(addresses, old.node_id), 60)
        cluster.tools.create_topic(AFTER, partitions=3, replication_factor=1)
        survivor = cluster.node(new.leader_id)
        target = _log_end(survivor.metadata_log_dir)
        created = time.monotonic()
        wait_until(f"the job to audit {AFTER}", lambda: _job_figure(job, "kraft_audit_last_offset") >= target, 180)
        print(f"\n{AFTER} audited {time.monotonic() - created:.1f} s after its create returned, "
              f"the active controller and its sidecar lost")
        for s in shippers:
            if s is not lost:
                assert s.stop() == 0
        # each sidecar resumes from its own messages (kraft.node), not the newest of another
        resumes = {c.node_id: find_resume({"bootstrap.servers": cluster.bootstrap}, SHIP_TOPIC, cluster.cluster_id,
                                          node=c.node_id) for c in cluster.controllers}
        job.stop()
        job = None
        final = _copy(survivor, tmp_path / "final")
        survivor_alone, _ = _audit(cluster.cluster_id, final, addresses=addresses)
    finally:
        if job is not None:
            job.stop()
        for s in shippers:
            if s.proc is not None and s.proc.poll() is None:
                s.kill9()
        cluster.close()

    assert {BEFORE, AFTER} <= _names(survivor_alone)
    assert all(r is not None for r in resumes.values())
    assert resumes[old.node_id].next_offset < min(r.next_offset for n, r in resumes.items() if n != old.node_id)
    assert _job_partitions(cfg.tables) == _partitions(survivor_alone)
    assert read_rows(cfg.tables, QUARANTINE) == []
