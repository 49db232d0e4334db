"""Waiting on a live cluster through the auditor's replay of its controller's log (cheap);
what the cluster did is asserted from Kafka's own output, not from here."""

from __future__ import annotations

from kraft_audit.cli.describe import replay as replay_log
from kraft_audit.testing.realkafka.cluster import KafkaCluster, wait_until
from kraft_audit.core.replay.state import ClusterState


def replay(cluster: KafkaCluster) -> ClusterState:
    """The controller's metadata log as it is now."""
    return replay_log(cluster.metadata_log_dir, cluster.cluster_id, None)


def partition(cluster: KafkaCluster, topic: str, index: int = 0):
    state = replay(cluster)
    tid = state.topic_ids.get(topic)
    return None if tid is None else state.partitions.get((tid, index))


def wait_partition(cluster: KafkaCluster, what: str, predicate, topic: str,
                   timeout: float = 90.0):
    """Until partition 0 of `topic` satisfies `predicate`; returns it."""
    return wait_until(f"{topic}-0: {what}",
                      lambda: (p := partition(cluster, topic)) is not None and predicate(p) and p,
                      timeout)
