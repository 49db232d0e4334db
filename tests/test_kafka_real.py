"""kraft-audit against a real KRaft cluster: Kafka 4.4.0 (ELR on by default) and 3.9.2 (no
ELR; KIP-704 recovery only), one controller and four brokers per version, the fault
scenarios of issue 8 run in sequence on it with acks=all traffic flowing throughout.

After every scenario Kafka's own views (kafka-topics --describe, the metadata shell) are
compared with `kraft-audit describe` for every partition, and `kraft-audit check` must find
nothing; at the end kafka-dump-log is compared with `kraft-audit dump` record by record
and the controller's and brokers' JMX metrics with the auditor's. Throughout, the real
streaming job tails the live controller log: its condition intervals must open within a few
triggers of the fault and start and end at the offsets Kafka's own dump-log shows. Waiting
uses the auditor's replay of the live log (cheap); every assertion about what the cluster
did uses Kafka's own output.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest

from kraft_audit.testing.realkafka import KafkaCluster, ToolError, wait_until
from kraft_audit.testing.realkafka.cluster import (counts_elr_elections, counts_unclean_elections,
                                           describes_elr, elr_features, has_elr, release)
from kraft_audit.testing.realkafka import oracles
from kraft_audit.testing.realkafka.jmx import BROKER_METRICS, CONTROLLER_METRICS, read_metrics
from kraft_audit.testing.realkafka.live_audit import LiveAudit
from services import kafka_lines_beyond_the_first_as_variants

pytestmark = pytest.mark.kafka

MIN_ISR = {"min.insync.replicas": "2"}

# Controller bugs a release line runs into during the stories, by the rule that reports
# them: there the story expects those findings instead of none (tests/test_kafka_bugs.py
# reproduces each on its own; docs/real-kafka.md has the table).
KNOWN_BUGS = {
    # the last known leader elected while fenced, and so marked RECOVERING although it was in
    # the ELR (an ELR member is a clean candidate once the ISR is empty)
    (4, 0): {"kip966.leader-registered-unfenced", "kip704.recovering-only-by-unclean-election"},
}


class Story:
    """One running cluster and the helpers the scenarios share."""

    def __init__(self, cluster: KafkaCluster):
        self.cluster = cluster
        self.elr = has_elr(cluster.version)  # on 4.0 formatted with the feature on
        self.known_bugs = KNOWN_BUGS.get(release(cluster.version), set())
        self.found: set[str] = set()  # rule ids of the findings so far (known bugs only)
        self.findings: list[dict] = []  # and the findings themselves

    # --- waiting on the live log (the auditor's replay)
    def state(self):
        from kraft_audit.cli.describe import replay

        return replay(self.cluster.metadata_log_dir, self.cluster.cluster_id, None)

    def partition(self, state, topic: str, index: int = 0):
        return state.partitions[(state.topic_ids[topic], index)]

    def wait_partition(self, topic: str, what: str, check, index: int = 0, timeout: float = 60):
        return wait_until(f"{topic}-{index}: {what}",
                          lambda: check(self.partition(self.state(), topic, index)), timeout)

    def wait_fenced(self, broker_id: int, fenced: bool = True, timeout: float = 60) -> None:
        def done():
            broker = self.state().brokers.get(broker_id)
            return broker is not None and broker.fenced == fenced
        wait_until(f"broker {broker_id} {'fenced' if fenced else 'unfenced'}", done, timeout)

    def wait_all_in_sync(self, timeout: float = 90) -> None:
        def done():
            s = self.state()
            return all(set(p.isr) == set(p.replicas) and p.leader >= 0
                       and not p.adding_replicas and not p.removing_replicas
                       for key, p in s.partitions.items() if key[0] in s.topics)
        wait_until("every partition fully in sync", done, timeout)

    def under_min_isr_by_brokers(self) -> int:
        """The sum of the running brokers' UnderMinIsrPartitionCount (JMX)."""
        return int(sum(read_metrics(b, BROKER_METRICS)["under_min_isr"]
                       for b in self.cluster.brokers if b.running))

    # --- Kafka's views vs the auditor's
    def oracles(self, name: str) -> dict[tuple[str, int], dict]:
        """Every partition agrees across kafka-topics, the metadata shell and kraft-audit
        describe, and kraft-audit check finds nothing. Returns kafka-topics' rows."""
        rows, diffs, report = oracles.compare_describe(self.cluster, name)
        assert diffs == [], f"{name}: Kafka and kraft-audit disagree:\n" + "\n".join(diffs)
        found = {f["rule_id"] for f in report["findings"]}
        assert found <= self.known_bugs, f"{name}: findings on real Kafka: {report['findings']}"
        self.found |= found
        self.findings += report["findings"]
        return {(r["topic"], r["partition"]): r for r in rows}


@pytest.fixture(scope="module", params=kafka_lines_beyond_the_first_as_variants())
def story(request, spark):
    version = request.param
    # its own temp dir, not pytest's: other pytest sessions on the machine prune those, and
    # the logs of a failed run must stay (removed only when every test here passed)
    workdir = Path(tempfile.mkdtemp(prefix=f"kraft-audit-kafka-{version}-"))
    failed_before = request.session.testsfailed
    cluster = KafkaCluster(
        version, workdir, brokers=4, features=elr_features(version),
        # snapshots during the run, so kafka-dump-log and the auditor also read .checkpoints
        controller_config={"metadata.log.max.snapshot.interval.ms": "30000"})
    producer = live = None
    try:
        cluster.start()
        story = Story(cluster)
        # the streaming job tails the controller's log from the start, as next to a real cluster
        live = story.live = LiveAudit(spark, cluster, workdir / "live-audit")
        tools = cluster.tools
        tools.create_topic("orders", partitions=3, replication_factor=3, configs=MIN_ISR)
        for name in ("elr", "unclean", "moving"):
            tools.create_topic(name, assignment=[[1, 2, 3]], configs=MIN_ISR)
        tools.produce("elr", 2000)
        tools.produce("unclean", 2000)
        producer = tools.start_producer("orders", per_second=200)
        story.producer = producer
        yield story
    finally:
        if live is not None:
            live.stop()
        if producer is not None and producer.poll() is None:
            os.killpg(producer.pid, signal.SIGKILL)
            producer.wait(30)
        cluster.close()
        if request.session.testsfailed == failed_before:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"\nKafka {version} logs and log dirs kept in {workdir}")


def test_01_cluster_with_traffic(story):
    rows = story.oracles("start")
    assert len(rows) == 6
    assert all(r["isr"] == r["replicas"] for r in rows.values())
    # kafka-topics prints the Elr and LastKnownElr columns from 3.8 on (DescribeTopicPartitions):
    # empty here, and always on a line without ELR; before 3.8 it has no such columns
    empty = [] if describes_elr(story.cluster.version) else None
    assert all(r["elr"] == empty and r["last_known_elr"] == empty for r in rows.values())


def test_02_controlled_shutdown_and_restart(story):
    broker = story.cluster.broker(1)
    broker.stop()
    story.wait_fenced(1)
    rows = story.oracles("controlled-shutdown")
    assert all(1 not in r["isr"] and r["leader"] != 1 for r in rows.values())
    broker.start()
    story.wait_all_in_sync()


def test_03_kill_and_restart(story):
    broker = story.cluster.broker(2)
    broker.kill()
    story.wait_fenced(2)
    rows = story.oracles("killed")
    assert all(2 not in r["isr"] for r in rows.values())
    broker.start()
    story.wait_all_in_sync()


def test_04_paused_until_fenced_then_resumed(story):
    broker = story.cluster.broker(3)
    broker.pause()
    try:
        story.wait_fenced(3)
        rows = story.oracles("paused-fenced")
        assert all(3 not in r["isr"] and r["leader"] != 3 for r in rows.values())
        # the controller's FencedBrokerCount vs the auditor's broker registry
        fenced = read_metrics(story.cluster.controller, CONTROLLER_METRICS)["fenced_brokers"]
        assert fenced == sum(b.fenced for b in story.state().brokers.values()) == 1
    finally:
        broker.resume()
    story.wait_fenced(3, fenced=False)
    story.wait_all_in_sync()


def test_05_last_isr_member_lost_and_election_from_elr(story):
    """elr-0 on [1,2,3], min ISR 2: 2 and 3 stop cleanly, then 1 (the last ISR member) is
    killed. With ELR (4.x) the ISR empties into the ELR, LastKnownElr holds the last
    leader, and clean 3 is elected from the ELR on its return; 1 comes back unclean and
    leaves the ELR. Without ELR (3.9.2) the ISR keeps [1] and the partition waits for 1."""
    c, tools = story.cluster, story.cluster.tools
    c.broker(2).stop()
    c.broker(3).stop()
    story.wait_partition("elr", "ISR [1]", lambda p: list(p.isr) == [1])

    # a min.insync.replicas change while the ELR is in use: Kafka follows it with
    # ClearElrRecord (4.x), which empties the ELR of that topic only
    tools.alter_config("topics", "orders", add={"min.insync.replicas": "1"})
    wait_until("orders' min ISR 1 applied",
               lambda: story.state().config(story.state().topic_ids["orders"],
                                            "min.insync.replicas") == "1")
    rows = story.oracles("min-isr-changed")
    assert rows[("elr", 0)]["isr"] == [1]
    assert all(r["elr"] in ([], None) for k, r in rows.items() if k[0] == "orders")
    if story.elr:
        assert rows[("elr", 0)]["elr"] == [3]
    story.live.wait_open("under_min_isr", "elr")
    # the brokers' UnderMinIsrPartitionCount (each counts what it leads) vs the job's gauge
    under = story.under_min_isr_by_brokers()
    assert under == 3  # elr-0, unclean-0 and moving-0: ISR [1], min ISR 2; orders went to 1
    wait_until("the job's under-min-ISR gauge at the brokers' count",
               lambda: story.live.metrics().get("global_under_min_isr_partition_count") == under)

    c.broker(1).kill()
    story.wait_fenced(1)
    story.wait_partition("elr", "leaderless", lambda p: p.leader == -1)
    story.live.wait_open("leaderless", "elr")
    rows = story.oracles("elr-last-isr-member-lost")
    row = rows[("elr", 0)]
    assert row["leader"] == -1
    if story.elr:
        assert row["isr"] == [] and sorted(row["elr"]) == [1, 3]
        assert row["last_known_elr"] == [1]
    else:
        assert row["isr"] == [1]  # without ELR Kafka never writes an empty ISR

    c.broker(3).start()
    if story.elr:
        story.wait_partition("elr", "leader 3", lambda p: p.leader == 3)
        row = story.oracles("elr-elected")[("elr", 0)]
        assert row["leader"] == 3 and row["isr"] == [3] and row["elr"] == [1]
        assert row["last_known_elr"] == []
    else:
        story.wait_fenced(3, fenced=False)
        row = story.oracles("no-elr-still-leaderless")[("elr", 0)]
        assert row["leader"] == -1 and row["isr"] == [1]

    c.broker(1).start()  # killed before: an unclean shutdown
    if story.elr:
        story.wait_partition("elr", "1 out of the ELR", lambda p: 1 not in p.elr)
    c.broker(2).start()
    story.wait_all_in_sync()


def test_06_unclean_leader_election_recovers(story):
    """unclean-0 on [1,2,3]: all three killed, 2 restarts (unclean, out of ISR and ELR), and
    kafka-leader-election --election-type unclean makes it leader: RECOVERING, then the
    leader reports RECOVERED."""
    c, tools = story.cluster, story.cluster.tools
    c.broker(2).kill()
    c.broker(3).kill()
    story.wait_fenced(2)
    story.wait_fenced(3)
    c.broker(1).kill()
    story.wait_fenced(1)
    story.wait_partition("unclean", "leaderless", lambda p: p.leader == -1)
    c.broker(2).start()
    story.wait_fenced(2, fenced=False)
    tools.elect_leaders("unclean", "unclean", 0)
    # the new leader stays RECOVERING until a follower joins its ISR: the ISR expansion it
    # sends to the controller is what carries RECOVERED (Partition.prepareIsrExpand)
    story.wait_partition("unclean", "leader 2, RECOVERING",
                         lambda p: p.leader == 2 and p.leader_recovery_state == 1)
    story.live.wait_open("recovering", "unclean")
    recovering = sorted(oracles.snapshot_of_log(story.cluster, "recovering").glob("*.log"))
    shell = oracles.shell_partitions(story.cluster, recovering[0])
    row = story.oracles("unclean-elected")[("unclean", 0)]
    # a line that elects a last known leader while it is fenced is caught here (on this
    # partition, or on another whose ELR held it: orders-1 was seen); that line does it only
    # when its race is lost, so the witness is Kafka's own dump of the very log audited
    fenced_elections = oracles.leaders_elected_while_fenced(oracles.parse_kafka_dump(
        tools.dump_log(sorted((c.workdir / "oracle-describe" / "unclean-elected").glob("*.log")))))
    assert {f["offset"] for f in story.findings
            if f["rule_id"] == "kip966.leader-registered-unfenced"} == set(fenced_elections)
    assert not fenced_elections or story.known_bugs, fenced_elections
    assert row["leader"] == 2 and row["isr"] == [2]
    if shell is not None:
        assert shell[("unclean", 0)]["leaderRecoveryState"] == "RECOVERING"
    else:  # a release with no metadata shell of its line: Kafka's dump of the same copy
        dumped = oracles.parse_kafka_dump(tools.dump_log(recovering))
        assert oracles.partition_from_dump(dumped, "unclean")["recovery"] == 1
    if story.elr:
        assert row["elr"] == [] and row["last_known_elr"] == []
    c.broker(1).start()
    c.broker(3).start()
    story.wait_partition("unclean", "RECOVERED", lambda p: p.leader_recovery_state == 0)
    story.live.wait_open("recovering", "unclean", is_open=False)
    story.wait_all_in_sync()
    row = story.oracles("unclean-recovered")[("unclean", 0)]
    assert row["leader"] == 2 and len(row["isr"]) >= 2


def test_07_reassignment_completes_while_removed_replica_offline(story):
    c, tools = story.cluster, story.cluster.tools
    c.broker(3).stop()
    story.wait_fenced(3)
    tools.reassign({("moving", 0): [1, 2, 4]})
    story.wait_partition("moving", "reassigned to [1, 2, 4]",
                         lambda p: list(p.replicas) == [1, 2, 4] and not p.adding_replicas
                         and not p.removing_replicas, timeout=90)
    row = story.oracles("reassigned-offline")[("moving", 0)]
    assert row["replicas"] == [1, 2, 4] and sorted(row["isr"]) == [1, 2, 4]
    c.broker(3).start()  # it still holds moving-0 on disk: KIP-550's stray replica
    story.wait_all_in_sync()


def test_08_topic_deletion(story):
    story.cluster.tools.delete_topic("moving")
    wait_until("moving deleted", lambda: "moving" not in story.state().topic_ids)
    rows = story.oracles("deleted")
    assert not any(t == "moving" for t, _ in rows)


def test_09_elr_feature_off_and_on(story):
    """Downgrading eligible.leader.replicas.version writes only the FeatureLevelRecord: a
    partition keeps the ELR it had (in kafka-topics and in the auditor alike) until its next
    change, which clears it."""
    c, tools = story.cluster, story.cluster.tools
    if not story.elr:
        with pytest.raises(ToolError):  # this line knows no such feature
            tools.features("upgrade", "--feature", "eligible.leader.replicas.version=1")
        return
    c.broker(2).stop()
    c.broker(3).stop()  # 2 left while the ISR was at min ISR: only 3 goes to the ELR
    story.wait_partition("elr", "ISR [1], ELR [3]",
                         lambda p: list(p.isr) == [1] and list(p.elr) == [3])
    tools.features("downgrade", "--feature", "eligible.leader.replicas.version=0")
    wait_until("ELR off", lambda: not story.state().elr_enabled)
    rows = story.oracles("elr-off")
    assert rows[("elr", 0)]["elr"] == [3]  # kept: no record touched the partition
    c.broker(2).start()
    story.wait_partition("elr", "2 back in the ISR", lambda p: sorted(p.isr) == [1, 2])
    rows = story.oracles("elr-off-next-change")
    assert rows[("elr", 0)]["elr"] in ([], None)  # the change Kafka wrote without ELR cleared it
    c.broker(3).start()
    story.wait_all_in_sync()
    tools.features("upgrade", "--feature", "eligible.leader.replicas.version=1")
    wait_until("ELR on", lambda: story.state().elr_enabled)
    story.oracles("elr-on")


def test_10_dump_log_and_controller_metrics(story):
    c = story.cluster
    compared, diffs = oracles.compare_dump(c)
    assert diffs == [], "kafka-dump-log and kraft-audit dump differ:\n" + "\n".join(diffs[:50])
    assert compared > 200  # the whole story's records (NoOps every 500 ms among them)
    files = oracles.metadata_files(c.workdir / "oracle-dump")
    assert any(f.suffix == ".checkpoint" for f in files), "no snapshot was compared"
    kafka = oracles.parse_kafka_dump(c.tools.dump_log(
        sorted((c.workdir / "oracle-dump").glob("*.log"))[:1]))
    types = {r["type"] for recs in kafka.values() for r in recs}
    assert {"REMOVE_TOPIC_RECORD", "PARTITION_CHANGE_RECORD"} <= types
    assert ("CLEAR_ELR_RECORD" in types) == story.elr

    # the controller's own counters since it started vs the auditor's over the whole log
    report = oracles.kraft_audit_check(c.workdir / "oracle-dump", c.cluster_id)
    metrics = read_metrics(c.controller, CONTROLLER_METRICS)
    gauges = report["gauges"]
    # a meter the line lacks reads None: the story says so instead of comparing
    unclean_meter = counts_unclean_elections(c.version)
    elr_meter = counts_elr_elections(c.version)
    # a record that marks RECOVERING without an unclean election (a finding, on a line with
    # a known bug) is an unclean election for the log, not for a meter that judges an
    # election by the ISR and ELR it came from
    recovering_not_unclean = sum(1 for f in report["findings"]
                                 if f["rule_id"] == "kip704.recovering-only-by-unclean-election")
    if unclean_meter:
        assert metrics["unclean_elections"] == \
            gauges["unclean_elections_total"] - recovering_not_unclean >= 1
    else:
        assert metrics["unclean_elections"] is None and gauges["unclean_elections_total"] >= 1
    if elr_meter:
        assert metrics["elr_elections"] == gauges["elr_elections_total"] >= 1
    else:
        assert metrics["elr_elections"] is None
        assert (gauges["elr_elections_total"] >= 1) == story.elr
    assert metrics["offline_partitions"] == gauges["leaderless"] == 0

    # the streaming job, which tailed the log all along: caught up, its counters agree with
    # the controller's, and every condition interval of the two fixed-min-ISR partitions
    # starts and ends at the offsets Kafka's own dump-log shows
    last = max(r["offset"] for recs in kafka.values() for r in recs)
    live = story.live
    wait_until("the streaming job at the end of the copied log",
               lambda: live.metrics().get("last_offset", -1) >= last)
    assert live.failed() is None
    scraped = live.metrics()
    assert scraped["unclean_elections_total"] == gauges["unclean_elections_total"]
    assert scraped["elr_elections_total"] == gauges["elr_elections_total"]
    for topic in ("elr", "unclean"):
        streamed = [(r["condition"], r["start_offset"], r["end_offset"])
                    for r in live.intervals(topic) if r["start_offset"] <= last]
        streamed = [(c, s, e if e is None or e <= last else None) for c, s, e in streamed]
        assert streamed == oracles.condition_intervals(kafka, topic, min_isr=2), topic
        assert streamed, f"{topic}-0 never had a condition: the scenario did not happen"
    assert {v["rule_id"] for v in live.rows("violations")} <= story.known_bugs
    # a correct controller elects in the operation that makes a candidate acceptable
    assert [r for r in live.rows("conditions") if r["condition"] == "election_overdue"] == []
    assert live.rows("quarantine") == []
