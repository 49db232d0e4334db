"""An `Auditor`'s stored form, in parts that change at different rates.

- meta: counters, the event-time clock, pending registration matches and the
  gauge counts: small, written every time;
- topology: topics, brokers, configs, features and each topic's partition
  ids: written again only after a record other than a PartitionChangeRecord
  (the auditor drops its cached bytes then);
- shards: the partition table and the open conditions, per shard
  (replay/sharded.py): only the shards a call wrote are pickled again, and a
  restored auditor unpickles a shard when it first needs it.

So saving after a micro-batch that changed k partitions costs O(k) pickling,
not O(partitions held). Nothing here imports Spark.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import Any, Mapping

from kraft_audit.core.replay.settings import CoreSettings
from kraft_audit.core.replay.sharded import ShardedDict, first_item, partition_table
from kraft_audit.core.replay.state import ClusterState
from kraft_audit.core.watch import Watch

FORMAT = 2
_P = pickle.HIGHEST_PROTOCOL
# Auditor attributes not in meta: stored elsewhere, or rebuilt from the catalog
_NOT_META = frozenset({"state", "_watch", "_topology_blob", "catalog", "_check", "_out"})
# ClusterState attributes not in topology: sharded, or a cache
_NOT_TOPOLOGY = frozenset({"partitions", "settings", "_min_isr_cache"})


@dataclass
class Snapshot:
    meta: bytes
    topology: bytes
    shards: dict[str, dict[int, bytes]]  # table -> shard -> bytes


def take(auditor) -> Snapshot:
    meta = {k: v for k, v in auditor.__dict__.items() if k not in _NOT_META and not k.startswith("_rules")}
    meta["_watch_counts"] = auditor._watch.counts()
    if auditor._topology_blob is None:
        state = auditor.state
        auditor._topology_blob = pickle.dumps(
            {k: v for k, v in state.__dict__.items() if k not in _NOT_TOPOLOGY}, protocol=_P)
    watch = auditor._watch
    return Snapshot(pickle.dumps((FORMAT, meta), protocol=_P), auditor._topology_blob,
                    {"partitions": auditor.state.partitions.blobs(), "masks": watch.masks.blobs(),
                     "open": watch.open.blobs()})


def restore(snap: Snapshot, catalog, settings: CoreSettings | Mapping[str, Any] | None = None):
    from kraft_audit.core.audit import Auditor

    version, meta = pickle.loads(snap.meta)
    if version != FORMAT:
        raise ValueError(f"auditor state format {version} is not {FORMAT}")
    counts = meta.pop("_watch_counts")
    auditor = Auditor.__new__(Auditor)
    auditor.__dict__.update(meta)
    state = ClusterState.__new__(ClusterState)
    state.__dict__.update(pickle.loads(snap.topology))
    state.partitions = partition_table(snap.shards["partitions"])
    state._min_isr_cache = {}
    state.settings = auditor.settings
    auditor.state = state
    auditor._topology_blob = snap.topology
    auditor._watch = Watch(ShardedDict(snap.shards["masks"]),
                           ShardedDict(snap.shards["open"], part=first_item), counts)
    if settings is not None:
        auditor.settings = CoreSettings.of(settings)
    state.reconfigure(auditor.settings)
    auditor._bind(catalog)
    return auditor


def to_bytes(snap: Snapshot) -> bytes:
    return pickle.dumps((snap.meta, snap.topology, snap.shards), protocol=_P)


def from_bytes(data: bytes) -> Snapshot:
    return Snapshot(*pickle.loads(data))
