"""A liveness promise witnessed on real Kafka: with auto.leader.rebalance.enable (Kafka's
default) the controller elects each partition's preferred replica within
leader.imbalance.check.interval.seconds once that replica could lead. Shortened here to a few
seconds, every `leader_imbalanced` interval the auditor opens on the controller's own log must
be closed by the controller's preferred election within that bound, in the log's time.

A controller that wins an election starts the periodic task's timer again: its first
rebalance comes one interval after it became active. The second round kills the active
controller of a three-controller quorum while an imbalance is open: the interval lasts
longer than one interval, and no longer than one after the new controller's LeaderChange
(what `past_bound` counts: the killed controller's last record came before the deadline).

Then a config change that allows unclean elections on a topic whose partition is leaderless
while a replica out of its ISR (and ELR) is alive: no operation runs an election there, so the
auditor opens unclean_election_overdue at the change. From 3.9 the controller's unclean-election
task (unclean.leader.election.interval.ms, shortened here too) elects that replica within one
interval: the interval closes within the bound `check` counts. 3.7 and 3.8 have no such task:
the partition stays leaderless past the bound, until the next unfence."""

from __future__ import annotations

import pytest

from kraft_audit.cli.describe import replay
from kraft_audit.core.audit import Auditor
from kraft_audit.core.codec.logdir import read_log_dir
from kraft_audit.core.events import KIND_RECORD, MetadataEvent
from kraft_audit.core.replay.conditions import TASK_GRACE_S, condition_bounds_seconds, past_bound
from kraft_audit.core.rules import load_catalog
from kraft_audit.errors import QuorumError
from kraft_audit.quorum import commit_claim, leader_status
from kraft_audit.testing.realkafka.cluster import KafkaCluster, KafkaNode, elr_features, wait_until
from services import kafka_lines_beyond_the_first_as_variants

pytestmark = pytest.mark.kafka

TOPIC = "rebalanced"
INTERVAL_S = 3
SLACK_MS = 3000  # the controller's event queue and a loaded machine, beyond the period
BOUNDS = {"leader_imbalanced": INTERVAL_S}
FAILOVER_ATTEMPTS = 3  # the old controller's own rebalance may come before the kill
UNCLEAN_TOPIC = "unclean-later"  # allows unclean elections only once it is leaderless
UNCLEAN_INTERVAL_MS = 3000  # the controller's unclean.leader.election.interval.ms
UNCLEAN_TIMER_FROM = (3, 9)  # the first line with the unclean-election task
SETTINGS = {"leader_imbalance_check_interval_seconds": INTERVAL_S,
            "unclean_leader_election_interval_ms": UNCLEAN_INTERVAL_MS}


def _audit(node: KafkaNode) -> tuple[Auditor, list, object]:
    """The audit of the node's log as the quorum has committed it: the log's own proofs,
    then the quorum's high watermark (DescribeQuorum), asked until the log has reached the
    leader's epoch (a quorum of three: the log alone proves its newest epoch's records only
    at the next epoch)."""
    addresses = [f"127.0.0.1:{c.port}" for c in node.cluster.controllers if c.running]

    def audited():
        events = list(read_log_dir(node.metadata_log_dir))
        auditor = Auditor(load_catalog(), SETTINGS)
        out = auditor.process(iter(events))
        try:
            status = leader_status(addresses)
        except QuorumError:  # between two leaders (an election after the kill): ask again
            return None
        claim = commit_claim(status, node.cluster.cluster_id, auditor.gate.shape)
        if claim is None:
            return None
        out.extend(auditor.process([claim]))
        return auditor, events, out
    return wait_until(f"{node}'s log at the quorum's epoch", audited, 60)


def _wait(cluster: KafkaCluster, node: KafkaNode, what: str, predicate, timeout: float = 90,
          topic: str = TOPIC):
    """Until partition 0 of `topic`, as `node`'s copy of the log has it, satisfies predicate."""
    def partition():
        state = replay(node.metadata_log_dir, cluster.cluster_id, None)
        tid = state.topic_ids.get(topic)
        return None if tid is None else state.partitions.get((tid, 0))
    return wait_until(f"{topic}-0: {what}", lambda: (p := partition()) is not None and predicate(p) and p,
                      timeout)


def _imbalance(cluster: KafkaCluster, node: KafkaNode) -> None:
    """Broker 1, the preferred replica, stopped (a controlled shutdown moves the leadership
    to 2) and started again: back in the ISR, its preferred election is due."""
    cluster.broker(1).stop()
    _wait(cluster, node, "led by 2", lambda p: p.leader == 2)
    cluster.broker(1).start()
    _wait(cluster, node, "1 in the ISR again", lambda p: 1 in p.isr)


@pytest.mark.parametrize("version", kafka_lines_beyond_the_first_as_variants())
def test_the_periodic_preferred_election_closes_every_leader_imbalanced_interval(version, tmp_path):
    cluster = KafkaCluster(version, tmp_path / "kafka", brokers=2, controllers=3,
                           features=elr_features(version),
                           controller_config={"leader.imbalance.check.interval.seconds":
                                              str(INTERVAL_S),
                                              "unclean.leader.election.interval.ms":
                                              str(UNCLEAN_INTERVAL_MS)})
    balanced = lambda p: p.leader == 1 and sorted(p.isr) == [1, 2]  # noqa: E731
    try:
        cluster.start()
        first = cluster.controllers[0]
        cluster.tools.create_topic(TOPIC, assignment=[[1, 2]])
        _wait(cluster, first, "led by 1 with ISR [1, 2]", balanced)
        _imbalance(cluster, first)
        _wait(cluster, first, "led by its preferred replica again", balanced, timeout=60)
        live = first
        for _attempt in range(FAILOVER_ATTEMPTS):
            _imbalance(cluster, live)
            active = cluster.node(_audit(live)[0].active_controller)
            active.kill()  # the imbalance open: the next active controller must rebalance it
            live = next(c for c in cluster.controllers if c.proc is not None and c.proc.poll() is None)
            _wait(cluster, live, "led by its preferred replica after the failover", balanced, timeout=60)
            auditor, events, out = _audit(live)
            rows = _intervals(out)
            last = rows[-1]
            if last.end_ms is not None and any(last.start_ms <= started <= last.end_ms
                                               for _, started in auditor.controller_changes_ms):
                break  # a new controller came while it was open, and its rebalance closed it
            cluster.node(active.node_id).start()  # a quorum of three again for the next try
        else:
            pytest.fail(f"the old controller rebalanced before each of {FAILOVER_ATTEMPTS} kills")
        unclean = _unclean_after_config_change(cluster, live, version)
    finally:
        cluster.close()

    assert [(v.rule_id, v.message) for v in out.violations] == []
    assert [r.topic for r in rows] == [TOPIC] * len(rows), rows
    # what closed each: the controller's election of the preferred replica, not a fence
    records = {e.offset: e for e in events if isinstance(e, MetadataEvent) and e.kind == KIND_RECORD}
    for row in rows:
        assert row.end_offset is not None, ("the preferred election did not close it", row)
        closing = records[row.end_offset]
        assert closing.type == "PARTITION_CHANGE_RECORD" and closing.data.get("leader") == 1, closing
    # the first: within one interval; the last lasted longer, across the failover, and within
    # one interval of the new controller (its LeaderChange in the log, inside the interval)
    assert rows[0].end_ms - rows[0].start_ms <= INTERVAL_S * 1000 + SLACK_MS, rows[0]
    changes = auditor.controller_changes_ms
    assert past_bound("leader_imbalanced", last.start_ms, last.end_ms, BOUNDS)
    assert not past_bound("leader_imbalanced", last.start_ms, last.end_ms, BOUNDS, changes), (last, changes)
    _assert_unclean_timer(*unclean, version)


def _unclean_after_config_change(cluster: KafkaCluster, live: KafkaNode, version: str) -> tuple:
    """UNCLEAN_TOPIC's partition on [1, 2] leaderless (both brokers stopped, 1 last), broker 2
    back, then unclean elections allowed on the topic; what the log holds after the
    controller's timer had time to elect: the auditor (as of the log's end), the events, the
    config change's offset and the unclean_election_overdue interval of the partition."""
    cluster.tools.create_topic(UNCLEAN_TOPIC, assignment=[[1, 2]])
    led_by_1 = lambda p: p.leader == 1 and sorted(p.isr) == [1, 2]  # noqa: E731
    _wait(cluster, live, "led by 1, in sync", led_by_1, topic=UNCLEAN_TOPIC)
    cluster.broker(2).stop()
    _wait(cluster, live, "in sync on 1 alone", lambda p: list(p.isr) == [1], topic=UNCLEAN_TOPIC)
    cluster.broker(1).stop()  # the last ISR member's controlled shutdown: leaderless
    _wait(cluster, live, "leaderless", lambda p: p.leader == -1, topic=UNCLEAN_TOPIC)
    cluster.broker(2).start()  # out of the ISR: its unfence elects nothing here
    wait_until("broker 2 unfenced", lambda: replay(live.metadata_log_dir, cluster.cluster_id,
                                                     None).brokers[2].acceptable_leader, 60)
    cluster.tools.alter_config("topics", UNCLEAN_TOPIC, {"unclean.leader.election.enable": "true"})
    if _version(version) >= UNCLEAN_TIMER_FROM:
        _wait(cluster, live, "led by 2 (elected uncleanly)", lambda p: p.leader == 2, timeout=60,
              topic=UNCLEAN_TOPIC)
    else:  # no task: still leaderless two bounds later
        def two_bounds_later() -> bool:
            auditor, events, _ = _audit(live)
            change = _config_change(events)
            return change is not None and (auditor.last_timestamp_ms
                                           > change.timestamp_ms + 2 * (UNCLEAN_INTERVAL_MS + SLACK_MS))
        wait_until("a record two bounds after the change", two_bounds_later, 60)
    auditor, events, out = _audit(live)
    change = _config_change(events)
    assert change is not None
    topic_id = auditor.state.topic_ids[UNCLEAN_TOPIC]
    rows = [r for r in _intervals(out, "unclean_election_overdue") if r.topic_id == topic_id]
    return auditor, events, change, rows


def _assert_unclean_timer(auditor: Auditor, events: list, change: MetadataEvent, rows: list,
                          version: str) -> None:
    assert len(rows) == 1, rows
    row = rows[0]
    assert row.start_offset >= change.offset and row.start_ms == change.timestamp_ms, (row, change)
    bounds = condition_bounds_seconds(auditor.settings)
    assert bounds["unclean_election_overdue"] == UNCLEAN_INTERVAL_MS // 1000 + TASK_GRACE_S
    if _version(version) >= UNCLEAN_TIMER_FROM:
        assert row.end_offset is not None, row
        records = {e.offset: e for e in events if isinstance(e, MetadataEvent)}
        election = records[row.end_offset]
        assert election.type == "PARTITION_CHANGE_RECORD" and election.data.get("leader") == 2
        assert row.end_ms - row.start_ms <= UNCLEAN_INTERVAL_MS + SLACK_MS, row
        assert not past_bound(row.condition, row.start_ms, row.end_ms, bounds,
                              auditor.controller_changes_ms)
    else:
        assert row.end_offset is None, row
        assert past_bound(row.condition, row.start_ms, auditor.last_timestamp_ms, bounds,
                          auditor.controller_changes_ms)


def _config_change(events: list) -> MetadataEvent | None:
    """The newest ConfigRecord of UNCLEAN_TOPIC among the events, if the log holds one yet."""
    return next((e for e in reversed(events) if isinstance(e, MetadataEvent)
                 and e.type == "CONFIG_RECORD" and e.data.get("resourceName") == UNCLEAN_TOPIC), None)


def _version(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def _intervals(out, condition: str = "leader_imbalanced") -> list:
    """The intervals of `condition`, each as its last row (a closing row replaces the opening
    one), oldest first."""
    rows: dict[str, object] = {}
    for row in out.conditions:
        if row.condition == condition:
            rows[row.interval_id] = row
    return sorted(rows.values(), key=lambda r: r.start_offset)
