"""A liveness promise witnessed on real Kafka: with auto.leader.rebalance.enable (Kafka's
default) the controller elects each partition's preferred replica within
leader.imbalance.check.interval.seconds once that replica could lead. Shortened here to a few
seconds, every `leader_imbalanced` interval the auditor opens on the controller's own log must
be closed by the controller's preferred election within that bound, in the log's time.

A controller that wins an election starts the periodic task's timer again: its first
rebalance comes one interval after it became active. The second round kills the active
controller of a three-controller quorum while an imbalance is open: the interval lasts
longer than one interval, and no longer than one after the new controller's LeaderChange
(what `past_bound` counts: the killed controller's last record came before the deadline)."""

from __future__ import annotations

import pytest

from kraft_audit.cli.describe import replay
from kraft_audit.core.audit import Auditor
from kraft_audit.core.codec.logdir import read_log_dir
from kraft_audit.core.events import KIND_RECORD, MetadataEvent
from kraft_audit.core.replay.conditions import past_bound
from kraft_audit.core.rules import load_catalog
from kraft_audit.testing.realkafka.cluster import KafkaCluster, KafkaNode, elr_features, wait_until
from services import KAFKA_VERSIONS

pytestmark = pytest.mark.kafka

TOPIC = "rebalanced"
INTERVAL_S = 3
SLACK_MS = 3000  # the controller's event queue and a loaded machine, beyond the period
BOUNDS = {"leader_imbalanced": INTERVAL_S}
FAILOVER_ATTEMPTS = 3  # the old controller's own rebalance may come before the kill


def _audit(node: KafkaNode) -> tuple[Auditor, list, object]:
    events = list(read_log_dir(node.metadata_log_dir))
    auditor = Auditor(load_catalog(), {"leader_imbalance_check_interval_seconds": INTERVAL_S})
    return auditor, events, auditor.process(iter(events))


def _wait(cluster: KafkaCluster, node: KafkaNode, what: str, predicate, timeout: float = 90):
    """Until partition 0 of TOPIC, as `node`'s copy of the log has it, satisfies predicate."""
    def partition():
        state = replay(node.metadata_log_dir, cluster.cluster_id, None)
        tid = state.topic_ids.get(TOPIC)
        return None if tid is None else state.partitions.get((tid, 0))
    return wait_until(f"{TOPIC}-0: {what}", lambda: (p := partition()) is not None and predicate(p) and p,
                      timeout)


def _imbalance(cluster: KafkaCluster, node: KafkaNode) -> None:
    """Broker 1, the preferred replica, stopped (a controlled shutdown moves the leadership
    to 2) and started again: back in the ISR, its preferred election is due."""
    cluster.broker(1).stop()
    _wait(cluster, node, "led by 2", lambda p: p.leader == 2)
    cluster.broker(1).start()
    _wait(cluster, node, "1 in the ISR again", lambda p: 1 in p.isr)


@pytest.mark.parametrize("version", KAFKA_VERSIONS)
def test_the_periodic_preferred_election_closes_every_leader_imbalanced_interval(version, tmp_path):
    cluster = KafkaCluster(version, tmp_path / "kafka", brokers=2, controllers=3,
                           features=elr_features(version),
                           controller_config={"leader.imbalance.check.interval.seconds":
                                              str(INTERVAL_S)})
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


def _intervals(out) -> list:
    """The leader_imbalanced intervals, each as its last row (a closing row replaces the
    opening one), oldest first."""
    rows: dict[str, object] = {}
    for row in out.conditions:
        if row.condition == "leader_imbalanced":
            rows[row.interval_id] = row
    return sorted(rows.values(), key=lambda r: r.start_offset)
