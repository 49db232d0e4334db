"""A liveness promise witnessed on real Kafka: with auto.leader.rebalance.enable (Kafka's
default) the controller elects each partition's preferred replica within
leader.imbalance.check.interval.seconds once that replica could lead. Shortened here to a few
seconds, every `leader_imbalanced` interval the auditor opens on the controller's own log must
be closed by the controller's preferred election within that bound, in the log's time."""

from __future__ import annotations

import functools

import pytest

from kraft_audit.core.audit import Auditor
from kraft_audit.core.codec.logdir import read_log_dir
from kraft_audit.core.events import KIND_RECORD, MetadataEvent
from kraft_audit.core.rules import load_catalog
from kraft_audit.testing.realkafka.cluster import KafkaCluster, elr_features
import kafka_waits
from services import KAFKA_VERSIONS

pytestmark = pytest.mark.kafka

TOPIC = "rebalanced"
INTERVAL_S = 3
SLACK_MS = 3000  # the controller's event queue and a loaded machine, beyond the period

wait_partition = functools.partial(kafka_waits.wait_partition, topic=TOPIC)


@pytest.mark.parametrize("version", KAFKA_VERSIONS)
def test_the_periodic_preferred_election_closes_every_leader_imbalanced_interval(version, tmp_path):
    cluster = KafkaCluster(version, tmp_path / "kafka", brokers=2, features=elr_features(version),
                           controller_config={"leader.imbalance.check.interval.seconds":
                                              str(INTERVAL_S)})
    try:
        cluster.start()
        cluster.tools.create_topic(TOPIC, assignment=[[1, 2]])
        wait_partition(cluster, "led by 1 with ISR [1, 2]",
                       lambda p: p.leader == 1 and sorted(p.isr) == [1, 2])
        cluster.broker(1).stop()  # controlled shutdown: the leadership moves to 2
        wait_partition(cluster, "led by 2", lambda p: p.leader == 2)
        cluster.broker(1).start()  # back in the ISR: its preferred election is due
        wait_partition(cluster, "led by its preferred replica again",
                       lambda p: p.leader == 1 and sorted(p.isr) == [1, 2], timeout=60)
    finally:
        cluster.close()

    events = list(read_log_dir(cluster.metadata_log_dir))
    auditor = Auditor(load_catalog(), {"leader_imbalance_check_interval_seconds": INTERVAL_S})
    out = auditor.process(iter(events))
    assert [(v.rule_id, v.message) for v in out.violations] == []

    intervals: dict[str, object] = {}
    for row in out.conditions:
        if row.condition == "leader_imbalanced":
            intervals[row.interval_id] = row  # the closing row replaces the opening one
    assert [r.topic for r in intervals.values()] == [TOPIC], intervals  # one, on our topic
    [row] = intervals.values()
    assert row.end_offset is not None, "the preferred election did not close the interval"
    assert row.end_ms - row.start_ms <= INTERVAL_S * 1000 + SLACK_MS, row
    # what closed it: the controller's election of the preferred replica, not a fence
    [closing] = [e for e in events if isinstance(e, MetadataEvent) and e.kind == KIND_RECORD
                 and e.offset == row.end_offset]
    assert closing.type == "PARTITION_CHANGE_RECORD" and closing.data.get("leader") == 1, closing
