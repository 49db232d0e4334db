"""Replay: the cluster state a KRaft controller's metadata log describes."""

from kraft_audit.core.replay.partition import Partition
from kraft_audit.core.replay.settings import CoreSettings
from kraft_audit.core.replay.state import Broker, Change, ClusterState, ReplayError

__all__ = ["CoreSettings", "Broker", "Change", "ClusterState", "Partition", "ReplayError"]
