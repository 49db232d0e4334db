"""`ClusterState`: the controller's view of a cluster, rebuilt record by record.

`apply(event)` mutates the state as Kafka's controller replays the record
(ReplicationControlManager, ClusterControlManager, ConfigurationControlManager,
FeatureControlManager) and returns a `Change` saying what moved. Records that
cannot be applied (a change for a partition never created, a fence for a
broker never registered) raise `ReplayError`; the auditor turns those into
quarantine rows and `input.*` findings.

Everything here is plain data (dicts, tuples, slotted classes) so a Spark
bucket can pickle it cheaply; the partition table is sharded (sharded.py).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from kraft_audit.errors import ReplayError  # noqa: F401 (exported here too)
from kraft_audit.core.events import MetadataEvent
from kraft_audit.core.native import mypyc_attr
from kraft_audit.core.replay.partition import Partition
from kraft_audit.core.replay.sharded import partition_table
from kraft_audit.core.replay.settings import (ELR_FEATURE, METADATA_VERSION, MV_4_0_IV1,
                                         CoreSettings)

TOPIC_RESOURCE = 2  # ConfigResource.Type.TOPIC
BROKER_RESOURCE = 4  # ConfigResource.Type.BROKER; name "" = cluster-wide default
MIN_ISR = "min.insync.replicas"
UNCLEAN_ELECTION = "unclean.leader.election.enable"

PartitionKey = tuple[str, int]


# where a broker's last-shutdown verdict comes from
SOURCE_REQUEST_LOG = "request-log"  # the broker's registration request in the controller's request log
SOURCE_INFERRED = "inferred"  # from the metadata log alone
SOURCE_TEXT = {SOURCE_REQUEST_LOG: "read from the registration request",
               SOURCE_INFERRED: "inferred from the metadata log"}


# ReplayError codes that only mean "created before a partial log starts"
UNKNOWN_BEFORE_HISTORY = frozenset({"unknown-broker", "unknown-topic", "unknown-partition"})


# DirectoryId.MIGRATING (Uuid 0, 0), UNASSIGNED (0, 1) and LOST (0, 2), as Uuid.toString writes them
MIGRATING_DIRECTORY_ID = "AAAAAAAAAAAAAAAAAAAAAA"
UNASSIGNED_DIRECTORY_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
LOST_DIRECTORY_ID = "AAAAAAAAAAAAAAAAAAAAAg"
ONLINE_DIRECTORY_IDS = frozenset({MIGRATING_DIRECTORY_ID, UNASSIGNED_DIRECTORY_ID, ""})


# a Broker's fields in order (a compiled class has no __slots__ to read them from)
BROKER_FIELDS = ("broker_id", "epoch", "incarnation_id", "fenced", "in_controlled_shutdown",
                 "registered", "last_shutdown", "offset", "timestamp_ms", "last_shutdown_source",
                 "led_when_fenced", "log_dirs")


class Broker:
    __slots__ = BROKER_FIELDS

    def __init__(self, broker_id: int, epoch: int, incarnation_id: str | None, fenced: bool,
                 in_controlled_shutdown: bool, registered: bool, last_shutdown: str | None,
                 offset: int, timestamp_ms: int, last_shutdown_source: str | None = None,
                 led_when_fenced: bool = False, log_dirs: tuple[str, ...] = ()):
        self.broker_id = broker_id
        self.epoch = epoch
        self.incarnation_id = incarnation_id
        self.fenced = fenced
        self.in_controlled_shutdown = in_controlled_shutdown
        self.registered = registered
        self.last_shutdown = last_shutdown
        self.offset = offset
        self.timestamp_ms = timestamp_ms
        # where last_shutdown comes from: SOURCE_REQUEST_LOG or SOURCE_INFERRED; None before it
        self.last_shutdown_source = last_shutdown_source
        # whether its leaderships moved in the batch that last fenced it
        self.led_when_fenced = led_when_fenced
        # the directories the registration says are online; () when the log has not said
        # (a stored state from before they were kept, or a version without directories)
        self.log_dirs = log_dirs

    @property
    def acceptable_leader(self) -> bool:
        """Kafka's `isAcceptableLeader`: registered, unfenced, not shutting down."""
        return self.registered and not self.fenced and not self.in_controlled_shutdown

    def has_online_dir(self, directory: str) -> bool:
        """Kafka's `DirectoryId.isOnline`: an unassigned or migrating replica counts as online,
        a lost one never; with no directories registered every directory counts as online."""
        if directory in ONLINE_DIRECTORY_IDS:
            return True
        if directory == LOST_DIRECTORY_ID:
            return False
        return not self.log_dirs or directory in self.log_dirs

    def __reduce__(self):
        return (Broker, tuple(getattr(self, n) for n in BROKER_FIELDS))


class Change(NamedTuple):
    """What one record changed: partitions as (before, after) pairs (before None =
    created, after None = deleted) and, for broker records, the broker before."""

    partitions: tuple[tuple[Partition | None, Partition | None], ...] = ()
    broker_before: Broker | None = None
    problem: ReplayError | None = None  # applied, but also an input problem


NO_CHANGE = Change()


# subclassed in Python by tests/test_core_fast_paths.py (a state without its caches)
@mypyc_attr(allow_interpreted_subclasses=True)
class ClusterState:
    def __init__(self, settings: CoreSettings):
        self.settings = settings
        # The offset the log started at when it starts mid-history (after offset 0, without a
        # snapshot): what happened before is unknown. None: the whole history is here.
        self.history_from: int | None = None
        self.topics: dict[str, str] = {}  # topic id -> name
        self.topic_ids: dict[str, str] = {}  # name -> topic id
        self.deleted_topics: dict[str, str] = {}  # topic id -> name, for stray replicas
        self.topic_partitions: dict[str, list[int]] = {}  # topic id -> partitions seen here
        # PartitionKey -> Partition, stored in shards so a micro-batch re-saves only what it changed
        self.partitions = partition_table()
        self.brokers: dict[int, Broker] = {}
        self.configs: dict[tuple[int, str], dict[str, str]] = {}
        self.features: dict[str, int] = {}
        self.elr_enabled = False
        self._min_isr_cache: dict[str, int] = {}  # topic id -> effective min ISR
        # topic id -> min_isr_source (every partition row names it); cleared when a topic,
        # a min.insync.replicas config or the settings change
        self._min_isr_sources: dict[str, str] = {}
        self.next_producer_id: int | None = None  # the newest ProducerIdsRecord's
        # broker id -> the partitions it is a replica of (or, for a partition whose replicas
        # a partial log has not shown, whose ISR, ELR or leader names it), so a broker event
        # visits its own partitions only; an ISR, ELR or leader outside the replicas is
        # kip966.subset-of-replicas's finding. Not stored: built from the table on first use
        # (also after a restore), then kept up to date by every partition write.
        self._by_broker: dict[int, set[PartitionKey]] | None = None
        # Security records, for the rules on their ids and removals (bucket 0 only sees them)
        self.acls: dict[str, tuple] = {}  # ACL id -> its binding
        self.acl_bindings: set[tuple] = set()
        self.scram: set[tuple[str, int]] = set()  # (user, mechanism)
        self.tokens: dict[str, tuple] = {}  # token id -> what a renewal keeps
        self.token_deadlines: dict[str, int] = {}  # token id -> when it expires (token_deadline)
        self.quotas: set[tuple] = set()  # (entity, key) of every client quota set
        # a metadata transaction is open (the event loop keeps it; the rules read it)
        self.transaction_open = False
        # ("broker" | "controller", id) -> feature -> (min, max) its registration declares
        # (kind, id) -> features; an unregistration pops its id unchecked, whatever its type
        self.supported: dict[tuple[str, Any], dict[str, tuple[int, int]]] = {}
        # log directory id -> the broker that registered it last, kept after the broker drops
        # it: a replica may still be placed in a directory its broker reported offline
        self.dir_owner: dict[str, int] = {}
        # the newest KRaftVersion control record's level; None until the input shows one
        self.kraft_version: int | None = None

    # ------------------------------------------------------------------ stored form

    def topology(self) -> dict:
        """Everything but the partition table, as plain data (no class named): the
        stored form's topology part. elr_enabled and the min ISR cache are recomputed."""
        return {"topics": self.topics, "topic_ids": self.topic_ids, "deleted_topics": self.deleted_topics,
                "topic_partitions": self.topic_partitions,
                "brokers": [tuple([getattr(b, n) for n in BROKER_FIELDS]) for b in self.brokers.values()],
                "configs": self.configs, "features": self.features, "history_from": self.history_from,
                "next_producer_id": self.next_producer_id, "acls": self.acls, "scram": sorted(self.scram),
                "tokens": self.tokens, "token_deadlines": self.token_deadlines,
                "supported": self.supported,
                "quotas": list(self.quotas), "dir_owner": self.dir_owner,
                "kraft_version": self.kraft_version}

    @classmethod
    def restored(cls, settings: CoreSettings, topology: dict, partition_blobs: dict[int, bytes]) -> ClusterState:
        """A state from its stored topology and partition shards (unpickled when first read)."""
        state = cls(settings)
        state.topics = topology["topics"]
        state.topic_ids = topology["topic_ids"]
        state.deleted_topics = topology["deleted_topics"]
        state.topic_partitions = topology["topic_partitions"]
        state.brokers = {fields[0]: Broker(*fields) for fields in topology["brokers"]}
        state.configs = topology["configs"]
        state.features = topology["features"]
        state.history_from = topology["history_from"]
        state.next_producer_id = topology.get("next_producer_id")
        state.acls = topology.get("acls", {})
        state.acl_bindings = set(state.acls.values())
        state.scram = set(topology.get("scram", ()))
        state.tokens = topology.get("tokens", {})
        state.token_deadlines = topology.get("token_deadlines", {})  # absent before it was kept
        state.quotas = {(tuple(map(tuple, e)), k) for e, k in topology.get("quotas", ())}
        state.supported = topology.get("supported", {})
        state.dir_owner = topology.get("dir_owner", {})
        state.kraft_version = topology.get("kraft_version")
        state.partitions = partition_table(partition_blobs)
        state.reconfigure(settings)
        return state

    def reconfigure(self, settings: CoreSettings) -> None:
        """New settings for a restored state: recompute what depends on them."""
        self.settings = settings
        self.elr_enabled = self._elr_enabled()
        self._min_isr_cache.clear()
        self._min_isr_sources.clear()

    # ------------------------------------------------------------------ queries

    @property
    def metadata_version(self) -> int | None:
        return self.features.get(METADATA_VERSION)

    def topic_name(self, topic_id: str) -> str | None:
        return self.topics.get(topic_id) or self.deleted_topics.get(topic_id)

    def topic_label(self, topic_id: str) -> str | None:
        """The topic's name; in a partial log, its id while no record has named it."""
        name = self.topic_name(topic_id)
        return topic_id if name is None and self.history_from is not None else name

    def config(self, topic_id: str, name: str) -> str | None:
        """A topic config resolved as the controller does: topic, then cluster default."""
        topic = self.topics.get(topic_id)
        value = self.configs.get((TOPIC_RESOURCE, topic), {}).get(name) if topic else None
        if value is None:
            value = self.configs.get((BROKER_RESOURCE, ""), {}).get(name)
        return value

    def effective_min_isr(self, partition: Partition) -> int:
        """min(resolved min.insync.replicas, replica count of partition 0)
        (ReplicationControlManager.getTopicEffectiveMinIsr). When partition 0 lives
        in another bucket this partition's own replica count stands in for it."""
        topic_id = partition.topic_id
        cached = self._min_isr_cache.get(topic_id)
        if cached is not None:
            return cached
        first = self.partitions.get((topic_id, 0), partition)
        if "replicas" in first.unknown:  # the replica count is not known: the configured value
            first = partition if "replicas" not in partition.unknown else None
        value = self._configured_min_isr(topic_id)
        if first is not None:
            value = min(value, len(first.replicas))
        self._min_isr_cache[topic_id] = value
        return value

    def _configured_min_isr(self, topic_id: str) -> int:
        return _int_or(self.config(topic_id, MIN_ISR), self.cluster_min_isr()[0])

    def min_isr_source(self, topic_id: str) -> str:
        """Where a topic's min.insync.replicas comes from: "topic" (its ConfigRecord), else
        the cluster's source (cluster_min_isr)."""
        source = self._min_isr_sources.get(topic_id)
        if source is None:
            source = self._min_isr_sources[topic_id] = self._min_isr_source(topic_id)
        return source

    def _min_isr_source(self, topic_id: str) -> str:
        topic = self.topics.get(topic_id)
        if topic and self.configs.get((TOPIC_RESOURCE, topic), {}).get(MIN_ISR) is not None:
            return "topic"
        return self.cluster_min_isr()[1]

    def cluster_min_isr(self) -> tuple[int, str]:
        """The cluster's min.insync.replicas and its source: "log" (the cluster-level
        ConfigRecord), "setting" (the controller's static config, given to the auditor) or
        "assumed" (neither: Kafka's default 1)."""
        logged = self.configs.get((BROKER_RESOURCE, ""), {}).get(MIN_ISR)
        if logged is not None:
            return _int_or(logged, 1), "log"
        if self.settings.min_insync_replicas_default is not None:
            return self.settings.min_insync_replicas_default, "setting"
        return 1, "assumed"

    def effective_min_isr_before(self, before: Partition | None, after: Partition) -> int:
        """The topic's effective min ISR before the partition went from before to after
        (the state already holds after): it differs only when partition 0's replica count
        changed, as when a reassignment of partition 0 starts or completes."""
        if before is None or after.partition != 0 or before.replicas == after.replicas or before.unknown:
            return self.effective_min_isr(after)
        return min(self._configured_min_isr(after.topic_id), len(before.replicas))

    def unclean_election_enabled(self, topic_id: str) -> bool:
        value = self.config(topic_id, UNCLEAN_ELECTION)
        if value is None:
            return self.settings.unclean_leader_election_default
        return value.strip().lower() == "true"

    def unknown_before_history(self, broker_id: int) -> bool:
        """A broker this partial log has not shown: its registration is before the log's
        first offset, so whether it may lead cannot be judged."""
        return self.history_from is not None and broker_id not in self.brokers

    def partitions_of(self, broker_id: int) -> set[PartitionKey] | tuple:
        """The keys of the partitions the broker is a replica of (see _by_broker). The first
        call reads the whole table (every shard); later ones are lookups."""
        if self._by_broker is None:
            index: dict[int, set[PartitionKey]] = {}
            for key, part in self.partitions.items():
                for b in _named(part):
                    index.setdefault(b, set()).add(key)
            self._by_broker = index
        return self._by_broker.get(broker_id, ())

    def _reindex(self, key: PartitionKey, before: Partition | None, after: Partition | None) -> None:
        index = self._by_broker
        if index is None:  # not built yet: built whole when first read
            return
        if before is None and after is not None:  # created (most calls): its brokers only gain it
            for b in _named(after):
                keys = index.get(b)
                if keys is None:
                    index[b] = {key}
                else:
                    keys.add(key)
            return
        old = _named(before) if before is not None else frozenset()
        new = _named(after) if after is not None else frozenset()
        for b in old - new:
            keys = index.get(b)
            if keys is not None:
                keys.discard(key)
        for b in new - old:
            index.setdefault(b, set()).add(key)

    def acceptable_leader(self, broker_id: int) -> bool:
        broker = self.brokers.get(broker_id)
        return broker is not None and broker.acceptable_leader

    # ------------------------------------------------------------------ replay

    def apply(self, event: MetadataEvent) -> Change:
        handler = _HANDLERS.get(event.type)
        return handler(self, event) if handler else NO_CHANGE

    def _partition_record(self, event: MetadataEvent) -> Change:
        after = Partition.from_record(event.data)
        key = (after.topic_id, after.partition)
        before = self.partitions.get(key)
        self.partitions[key] = after
        if self._by_broker is not None:
            self._reindex(key, before, after)
        if before is None:
            self.topic_partitions.setdefault(after.topic_id, []).append(after.partition)
        if after.partition == 0:
            self._min_isr_cache.pop(after.topic_id, None)
        problem = None
        if after.topic_id not in self.topics:  # applied anyway: the state stays useful
            problem = ReplayError(
                "unknown-topic", f"PartitionRecord for unknown topic id {after.topic_id}", key)
        return Change(((before, after),), None, problem)

    def _partition_change(self, event: MetadataEvent) -> Change:
        return Change((self.change_partition(event.data),))

    def change_partition(self, data: dict) -> tuple[Partition | None, Partition]:
        """Apply a PartitionChangeRecord's data; (before, after), before None for a partition
        a partial log had not shown (after then holds unknown fields). The auditor's hot path."""
        key = (data["topicId"], data["partitionId"])
        if type(key[1]) is not int:
            raise TypeError(f"partitionId {key[1]!r} is not an integer")
        before = self.partitions.get(key)
        if before is None and self.history_from is not None:
            # created before this partial log: its state is still state (is it offline?), so
            # it is tracked from what the record says, the rest unknown
            after = Partition.from_change(data)
            self.partitions[key] = after
            if self._by_broker is not None:
                self._reindex(key, None, after)
            self.topic_partitions.setdefault(key[0], []).append(key[1])
            self._min_isr_cache.pop(key[0], None)
            return None, after
        if before is None:
            raise ReplayError("unknown-partition",
                              f"PartitionChangeRecord for partition {key[0]}-{key[1]} "
                              "that no PartitionRecord created", key)
        after = before.merged(data)
        self.partitions[key] = after
        # merged() keeps the replicas tuple when a record leaves them alone
        if self._by_broker is not None and (after.replicas is not before.replicas or before.unknown):
            self._reindex(key, before, after)
        if key[1] == 0 and after.replicas != before.replicas:
            self._min_isr_cache.pop(key[0], None)
        return before, after

    def _clear_elr(self, event: MetadataEvent) -> Change:
        name = event.data.get("topicName") or ""
        if name:
            topic_id = self.topic_ids.get(name)
            if topic_id is None:
                raise ReplayError("unknown-topic", f"ClearElrRecord for unknown topic {name!r}")
            topic_ids = [topic_id]
        else:
            topic_ids = list(self.topic_partitions)
        changed = []
        for topic_id in topic_ids:
            for p in self.topic_partitions.get(topic_id, ()):
                key = (topic_id, p)
                before = self.partitions[key]
                after = before.with_elr_cleared()
                if after is not before:
                    self.partitions[key] = after
                    if self._by_broker is not None:
                        self._reindex(key, before, after)
                    changed.append((before, after))
        return Change(tuple(changed))

    def _topic(self, event: MetadataEvent) -> Change:
        data = event.data
        _check_types(data, name=str, topicId=str)
        self._min_isr_sources.clear()
        self.topics[data["topicId"]] = data["name"]
        self.topic_ids[data["name"]] = data["topicId"]
        return NO_CHANGE

    def _remove_topic(self, event: MetadataEvent) -> Change:
        topic_id = event.data["topicId"]
        name = self.topics.pop(topic_id, None)
        if name is None and self.history_from is not None and topic_id in self.topic_partitions:
            name = topic_id  # created before a partial log, known by its partitions' changes
        if name is None:
            raise ReplayError("unknown-topic", f"RemoveTopicRecord for unknown topic id {topic_id}")
        self.topic_ids.pop(name, None)
        self.deleted_topics[topic_id] = name
        self._min_isr_cache.pop(topic_id, None)
        self._min_isr_sources.clear()
        removed = tuple((self.partitions.pop((topic_id, p)), None)
                        for p in self.topic_partitions.pop(topic_id, ()))
        if self._by_broker is not None:
            for before, _ in removed:
                self._reindex((topic_id, before.partition), before, None)
        return Change(removed)

    def _config(self, event: MetadataEvent) -> Change:
        data = event.data
        _check_types(data, resourceType=int, name=str)
        if not isinstance(data.get("value"), (str, type(None))):
            raise TypeError(f"config value {data.get('value')!r} is not a string")
        scope = (data["resourceType"], data.get("resourceName") or "")
        values = self.configs.setdefault(scope, {})
        if data.get("value") is None:
            values.pop(data["name"], None)
        else:
            values[data["name"]] = data["value"]
        if data["name"] == MIN_ISR:
            self._min_isr_cache.clear()
            self._min_isr_sources.clear()
        return NO_CHANGE

    def _feature(self, event: MetadataEvent) -> Change:
        data = event.data
        _check_types(data, name=str, featureLevel=int)
        if data.get("featureLevel", 0) == 0:
            self.features.pop(data["name"], None)
        else:
            self.features[data["name"]] = data["featureLevel"]
        self.elr_enabled = self._elr_enabled()
        return NO_CHANGE

    def _elr_enabled(self) -> bool:
        configured = self.settings.elr_controller_config
        if configured is None:  # trunk: the feature decides (it requires MV 4.0-IV1)
            return self.features.get(ELR_FEATURE, 0) >= 1
        return configured and (self.metadata_version or 0) >= MV_4_0_IV1

    def _kraft_version(self, event: MetadataEvent) -> Change:
        level = event.data.get("kRaftVersion")
        if type(level) is int:
            self.kraft_version = level
        return NO_CHANGE

    def _producer_ids(self, event: MetadataEvent) -> Change:
        _check_types(event.data, nextProducerId=int)
        self.next_producer_id = event.data["nextProducerId"]
        return NO_CHANGE

    def _client_quota(self, event: MetadataEvent) -> Change:
        if event.data.get("remove"):
            self.quotas.discard(quota_key(event.data))
        else:
            self.quotas.add(quota_key(event.data))
        return NO_CHANGE

    def _acl(self, event: MetadataEvent) -> Change:
        binding = acl_binding(event.data)
        self.acls[event.data["id"]] = binding
        self.acl_bindings.add(binding)
        return NO_CHANGE

    def _remove_acl(self, event: MetadataEvent) -> Change:
        self.acl_bindings.discard(self.acls.pop(event.data["id"], None))
        return NO_CHANGE

    def _scram(self, event: MetadataEvent) -> Change:
        self.scram.add((event.data["name"], event.data["mechanism"]))
        return NO_CHANGE

    def _remove_scram(self, event: MetadataEvent) -> Change:
        self.scram.discard((event.data["name"], event.data["mechanism"]))
        return NO_CHANGE

    def _token(self, event: MetadataEvent) -> Change:
        self.tokens[event.data["tokenId"]] = token_kept(event.data)
        deadline = token_deadline(event.data)
        if deadline is None:
            self.token_deadlines.pop(event.data["tokenId"], None)
        else:
            self.token_deadlines[event.data["tokenId"]] = deadline
        return NO_CHANGE

    def _remove_token(self, event: MetadataEvent) -> Change:
        self.tokens.pop(event.data["tokenId"], None)
        self.token_deadlines.pop(event.data["tokenId"], None)
        return NO_CHANGE

    def _register_broker(self, event: MetadataEvent) -> Change:
        data = event.data
        _check_types(data, brokerId=int)
        broker_id = data["brokerId"]
        before = self.brokers.get(broker_id)
        self.brokers[broker_id] = Broker(
            broker_id, data.get("brokerEpoch", -1), data.get("incarnationId"),
            bool(data.get("fenced", True)), bool(data.get("inControlledShutdown", False)),
            True, before.last_shutdown if before else None, event.offset, event.timestamp_ms,
            before.last_shutdown_source if before else None, before.led_when_fenced if before else False,
            tuple(data.get("logDirs") or ()))
        for directory in data.get("logDirs") or ():
            self.dir_owner[directory] = broker_id
        self.supported[("broker", broker_id)] = feature_ranges(data)
        return Change((), before)

    def _register_controller(self, event: MetadataEvent) -> Change:
        _check_types(event.data, controllerId=int)
        self.supported[("controller", event.data["controllerId"])] = feature_ranges(event.data)
        return NO_CHANGE

    def _unregister_controller(self, event: MetadataEvent) -> Change:
        self.supported.pop(("controller", event.data.get("controllerId")), None)
        return NO_CHANGE

    def _known_broker(self, broker_id: int, event: MetadataEvent) -> Broker:
        if type(broker_id) is not int:
            raise TypeError(f"broker id {broker_id!r} is not an integer")
        broker = self.brokers.get(broker_id)
        if broker is None:
            raise ReplayError("unknown-broker",
                              f"{event.type} for broker {broker_id} that never registered",
                              broker_id=broker_id)
        return broker

    def _broker_update(self, broker_id: int, event: MetadataEvent, **changes) -> Change:
        broker = self._known_broker(broker_id, event)
        before = Broker(*(getattr(broker, n) for n in BROKER_FIELDS))
        for name, value in changes.items():
            setattr(broker, name, value)
        broker.offset, broker.timestamp_ms = event.offset, event.timestamp_ms
        return Change((), before)

    def _unregister_broker(self, event: MetadataEvent) -> Change:
        self.supported.pop(("broker", event.data.get("brokerId")), None)
        return self._broker_update(event.data["brokerId"], event, registered=False, fenced=True)

    def _fence_broker(self, event: MetadataEvent) -> Change:
        return self._broker_update(event.data["id"], event, fenced=True)

    def _unfence_broker(self, event: MetadataEvent) -> Change:
        return self._broker_update(event.data["id"], event, fenced=False)

    def _broker_registration_change(self, event: MetadataEvent) -> Change:
        data = event.data
        changes: dict[str, Any] = {}
        fenced = data.get("fenced", 0)  # BrokerRegistrationFencingChange: 1 fence, -1 unfence
        if fenced == 1:
            changes["fenced"] = True
        elif fenced == -1:
            changes["fenced"] = False
        if data.get("inControlledShutdown", 0) == 1:
            changes["in_controlled_shutdown"] = True
        if data.get("logDirs"):  # absent or empty: the directories did not change
            changes["log_dirs"] = tuple(data["logDirs"])
        return self._broker_update(data["brokerId"], event, **changes)


def _check_types(data: dict, **types) -> None:
    """TypeError (quarantined by the auditor) when a field the replay keys on is mistyped."""
    for name, expected in types.items():
        value = data[name]
        if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            raise TypeError(f"{name} {value!r} is not {expected.__name__}")


def _named(part: Partition) -> set[int]:
    if not part.unknown:
        return set(part.replicas)
    named = {*part.replicas, *part.isr, *part.elr}
    if part.leader >= 0:
        named.add(part.leader)
    return named


def _int_or(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def feature_ranges(data: dict) -> dict[str, tuple[int, int]]:
    """The feature ranges a broker or controller registration declares."""
    return {f.get("name"): (f.get("minSupportedVersion", 0), f.get("maxSupportedVersion", 0))
            for f in data.get("features") or ()}


def acl_binding(data: dict) -> tuple:
    """What makes two ACLs the same (all but the id)."""
    return (data.get("resourceType"), data.get("resourceName"), data.get("patternType"), data.get("principal"),
            data.get("host"), data.get("operation"), data.get("permissionType"))


def quota_key(data: dict) -> tuple:
    """A client quota's identity: its entity ((type, name) pairs) and its key."""
    return (tuple((e.get("entityType"), e.get("entityName")) for e in data.get("entity") or ()),
            data.get("key"))


def token_kept(data: dict) -> tuple:
    """The fields of a delegation token that a renewal leaves as they are."""
    return (data.get("owner"), data.get("requester"), tuple(data.get("renewers") or ()),
            data.get("issueTimestamp"), data.get("maxTimestamp"))


def token_deadline(data: dict) -> int | None:
    """When a DelegationTokenRecord's token expires: the earlier of its expiration and max
    timestamps (Kafka's sweep removes it once either is before its clock); None when the
    record gives neither as an integer."""
    times = [t for t in (data.get("expirationTimestamp"), data.get("maxTimestamp")) if type(t) is int]
    return min(times) if times else None


_HANDLERS = {
    "KRAFT_VERSION": ClusterState._kraft_version,
    "ACCESS_CONTROL_ENTRY_RECORD": ClusterState._acl,
    "REGISTER_CONTROLLER_RECORD": ClusterState._register_controller,
    "UNREGISTER_CONTROLLER_RECORD": ClusterState._unregister_controller,
    "REMOVE_ACCESS_CONTROL_ENTRY_RECORD": ClusterState._remove_acl,
    "USER_SCRAM_CREDENTIAL_RECORD": ClusterState._scram,
    "REMOVE_USER_SCRAM_CREDENTIAL_RECORD": ClusterState._remove_scram,
    "DELEGATION_TOKEN_RECORD": ClusterState._token,
    "REMOVE_DELEGATION_TOKEN_RECORD": ClusterState._remove_token,
    "PARTITION_RECORD": ClusterState._partition_record,
    "PARTITION_CHANGE_RECORD": ClusterState._partition_change,
    "CLEAR_ELR_RECORD": ClusterState._clear_elr,
    "TOPIC_RECORD": ClusterState._topic,
    "REMOVE_TOPIC_RECORD": ClusterState._remove_topic,
    "CONFIG_RECORD": ClusterState._config,
    "FEATURE_LEVEL_RECORD": ClusterState._feature,
    "REGISTER_BROKER_RECORD": ClusterState._register_broker,
    "PRODUCER_IDS_RECORD": ClusterState._producer_ids,
    "CLIENT_QUOTA_RECORD": ClusterState._client_quota,
    "UNREGISTER_BROKER_RECORD": ClusterState._unregister_broker,
    "FENCE_BROKER_RECORD": ClusterState._fence_broker,
    "UNFENCE_BROKER_RECORD": ClusterState._unfence_broker,
    "BROKER_REGISTRATION_CHANGE_RECORD": ClusterState._broker_registration_change,
}
