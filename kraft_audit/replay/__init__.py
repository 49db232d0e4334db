"""Replay: the cluster state a KRaft controller's metadata log describes."""

from kraft_audit.replay.partition import Partition
from kraft_audit.replay.settings import AuditSettings
from kraft_audit.replay.state import Broker, Change, ClusterState, ReplayError

__all__ = ["AuditSettings", "Broker", "Change", "ClusterState", "Partition", "ReplayError"]
