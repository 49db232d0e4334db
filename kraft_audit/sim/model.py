"""A model of the KRaft controller: brokers, topics, configs and features, and
the records Kafka's controller writes for each cluster event, in Kafka's
batches and order (ReplicationControlManager, ClusterControlManager,
QuorumController).

The model owns the log's offsets (a broker's epoch is the offset of its
RegisterBrokerRecord) and hands finished batches to a sink (`sim.output`).
Its state is always the state the written log replays to, so a fault that
corrupts one record is carried forward exactly as a buggy controller would.
"""

from __future__ import annotations

import base64
import random
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Protocol

from kraft_audit.sim import partition_change as pc
from kraft_audit.sim.partition_change import NO_LEADER, RECOVERED, RECOVERING, PartitionState
from kraft_audit.sim.versions import (
    MV_3_3_IV2,
    MV_3_3_IV3,
    MV_3_6_IV1,
    directories_supported,
    elr_supported,
    partition_record_version,
    register_broker_record_version,
)

MAX_RECORDS_PER_BATCH = (
    10_000  # QuorumController splits non-atomic results into batches of this many
)
REQUEST_HANDLING_MS = 3  # a request's time to the batch the controller writes for it
NOOP_INTERVAL_MS = 500  # metadata.max.idle.interval.ms: NoOpRecord when the log is idle
RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
MIN_ISR = "min.insync.replicas"
UNCLEAN_ELECTION = "unclean.leader.election.enable"
METADATA_VERSION = "metadata.version"
ELR_VERSION = "eligible.leader.replicas.version"

Record = tuple[str, int, dict]  # (type name, version, camelCase data)


class LogSink(Protocol):
    """Where the model's output goes (sim.output.OutputWriter, or a list in tests)."""

    def append(
        self, records: list[Record], base_offset: int, timestamp_ms: int, epoch: int
    ) -> None: ...

    def append_control(
        self, record: Record, base_offset: int, timestamp_ms: int, epoch: int
    ) -> None: ...

    def registration(self, event: dict) -> None: ...

    def log_dirs(self, broker_id: int, inventory: dict, timestamp_ms: int) -> None: ...


class MemorySink:
    """Keeps everything in lists: for tests and small scenarios."""

    def __init__(self) -> None:
        self.batches: list[
            tuple[int, int, list[Record], bool]
        ] = []  # (base_offset, timestamp, records, control)
        self.registrations: list[dict] = []
        self.inventories: list[tuple[int, dict, int]] = []

    def append(self, records, base_offset, timestamp_ms, epoch):
        self.batches.append((base_offset, timestamp_ms, list(records), False))

    def append_control(self, record, base_offset, timestamp_ms, epoch):
        self.batches.append((base_offset, timestamp_ms, [record], True))

    def registration(self, event):
        self.registrations.append(event)

    def log_dirs(self, broker_id, inventory, timestamp_ms):
        self.inventories.append((broker_id, inventory, timestamp_ms))

    def records(self) -> Iterator[tuple[int, Record]]:
        for base, _ts, records, _control in self.batches:
            for i, record in enumerate(records):
                yield base + i, record


@dataclass(slots=True)
class Broker:
    broker_id: int
    epoch: int
    incarnation_id: str
    log_dir: str
    fenced: bool = True
    in_controlled_shutdown: bool = False
    # Simulation truth, not controller state: is the process up, and did it
    # last stop cleanly (so it sends its old epoch as PreviousBrokerEpoch)?
    alive: bool = True
    stopped_cleanly: bool = False


@dataclass(slots=True)
class Topic:
    name: str
    topic_id: str
    partitions: list[PartitionState]
    configs: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Settings:
    metadata_version: int
    elr_version: int = 0
    min_insync_replicas: int = 1  # the controller's static min.insync.replicas
    use_last_known_leader: bool = (
        True  # PartitionChangeBuilder.useLastKnownLeaderInBalancedRecovery
    )
    controller_ids: tuple[int, ...] = (3000,)


class Injector(Protocol):
    """Fault injection hooks (sim.faults.FaultInjector); NO_FAULTS does nothing."""

    active: bool

    def on_partition_change(
        self,
        model: "ClusterModel",
        topic: Topic,
        pid: int,
        before: PartitionState,
        change: dict,
        reason: str,
    ) -> dict | None: ...

    def on_event(self, model: "ClusterModel", point: str, **context) -> object: ...


class _NoFaults:
    active = False

    def on_partition_change(self, model, topic, pid, before, change, reason):
        return change

    def on_event(self, model, point, **context):
        return None


NO_FAULTS = _NoFaults()


def new_uuid(rng: random.Random) -> str:
    """A random UUID in Kafka's printed form (22-char url-safe base64); never
    one of Kafka's reserved ids (zero, one)."""
    while True:
        raw = rng.getrandbits(128).to_bytes(16, "big")
        if int.from_bytes(raw, "big") > 100:
            return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


class ClusterModel:
    """The active controller. Each public method is one cluster event and
    writes the batches Kafka would write for it."""

    def __init__(
        self,
        settings: Settings,
        sink: LogSink,
        *,
        cluster_id: str | None = None,
        seed: int = 0,
        start_ms: int = 1_750_000_000_000,
        injector: Injector = NO_FAULTS,
    ) -> None:
        self.settings = settings
        self.sink = sink
        self.rng = random.Random(seed)
        self.cluster_id = cluster_id or new_uuid(self.rng)
        self.injector = injector
        self.now_ms = start_ms
        self._last_write_ms = start_ms
        self.next_offset = 0
        self.raft_epoch = 0
        self.raft_leader = settings.controller_ids[0]
        self.features: dict[str, int] = {}
        self.brokers: dict[int, Broker] = {}
        self.topics: dict[str, Topic] = {}  # by topic id, in creation order
        self.topic_ids: dict[str, str] = {}  # name -> id
        self.cluster_configs: dict[str, str] = {}
        self.step = 0  # index of the scenario step being run (fault scheduling)
        self._replica_tuples: dict[tuple[int, ...], tuple[int, ...]] = {}
        self._pending: list[Record] = []
        self.records_written = 0
        self.leaving: set[int] = set()
        # (topic, partition, broker) of replicas removed by reassignment or topic deletion
        self.former_replicas: list[tuple[Topic, int, int]] = []

    # ------------------------------------------------------------------ state

    @property
    def metadata_version(self) -> int:
        return self.features.get(METADATA_VERSION, self.settings.metadata_version)

    @property
    def elr_enabled(self) -> bool:
        # trunk (KAFKA-16540): the eligible.leader.replicas.version feature (needs MV >= 4.0-IV1)
        return elr_supported(self.metadata_version) and self.features.get(ELR_VERSION, 0) >= 1

    def is_active(self, broker_id: int) -> bool:
        b = self.brokers.get(broker_id)
        return b is not None and not b.fenced and not b.in_controlled_shutdown

    def topic(self, name: str) -> Topic:
        if name not in self.topic_ids:
            raise ValueError(f"there is no topic named {name!r}")
        return self.topics[self.topic_ids[name]]

    def effective_min_isr(self, topic: Topic, replicas_of_0: int | None = None) -> int:
        """min(resolved min.insync.replicas, replica count of partition 0), or of
        `replicas_of_0` when given (what it will be once partition 0 has that many)."""
        value = (
            topic.configs.get(MIN_ISR)
            or self.cluster_configs.get(MIN_ISR)
            or self.settings.min_insync_replicas
        )
        if replicas_of_0 is None:
            replicas_of_0 = len(topic.partitions[0].replicas) if topic.partitions else 1
        return min(int(value), replicas_of_0)

    def unclean_election_enabled(self, topic: Topic) -> bool:
        value = (
            topic.configs.get(UNCLEAN_ELECTION)
            or self.cluster_configs.get(UNCLEAN_ELECTION)
            or "false"
        )
        return value.lower() == "true"

    def partitions(self) -> Iterator[tuple[Topic, int, PartitionState]]:
        for topic in list(self.topics.values()):
            for pid, p in enumerate(topic.partitions):
                yield topic, pid, p

    def intern(self, replicas: Iterable[int]) -> tuple[int, ...]:
        t = tuple(replicas)
        return self._replica_tuples.setdefault(t, t)

    # ------------------------------------------------------------------ log

    def emit(self, rtype: str, version: int, data: dict) -> int:
        """Add a record to the open batch; returns its offset."""
        offset = self.next_offset + len(self._pending)
        self._pending.append((rtype, version, data))
        return offset

    def flush(self, atomic: bool = False) -> None:
        """Close the open batch: atomic results go as one batch, others in
        batches of at most MAX_RECORDS_PER_BATCH records."""
        records, self._pending = self._pending, []
        if not records:
            return
        step = len(records) if atomic else MAX_RECORDS_PER_BATCH
        for start in range(0, len(records), step):
            chunk = records[start : start + step]
            self.sink.append(chunk, self.next_offset, self.now_ms, self.raft_epoch)
            self.next_offset += len(chunk)
            self.records_written += len(chunk)
        self._last_write_ms = self.now_ms

    def advance(self, ms: int) -> None:
        """Let time pass; an idle controller writes a NoOpRecord every 500 ms."""
        assert not self._pending, "advance() inside an open batch"
        end = self.now_ms + ms
        while self._last_write_ms + NOOP_INTERVAL_MS <= end:
            self.now_ms = self._last_write_ms + NOOP_INTERVAL_MS
            self.emit("NO_OP_RECORD", 0, {})
            self.flush()
        self.now_ms = end

    def leader_change(self, leader_id: int | None = None) -> None:
        """A new Raft epoch: the new leader's first batch is a LeaderChange control record."""
        assert not self._pending
        ids = self.settings.controller_ids
        if leader_id is None:
            leader_id = (
                ids[(ids.index(self.raft_leader) + 1) % len(ids)] if self.raft_epoch else ids[0]
            )
        self.raft_epoch += 1
        self.raft_leader = leader_id
        data = {
            "version": 0,
            "leaderId": leader_id,
            "voters": [{"voterId": v} for v in ids],
            "grantingVoters": [{"voterId": v} for v in ids],
        }
        self.sink.append_control(
            ("LEADER_CHANGE", 0, data), self.next_offset, self.now_ms, self.raft_epoch
        )
        self.next_offset += 1
        self.records_written += 1
        self._last_write_ms = self.now_ms

    # ------------------------------------------------------------------ bootstrap and features

    def bootstrap(self) -> None:
        """Raft's first epoch, then the bootstrap metadata (a transaction from MV 3.6-IV1)."""
        self.leader_change()
        mv = self.settings.metadata_version
        transactional = mv >= MV_3_6_IV1
        if transactional:
            self.emit("BEGIN_TRANSACTION_RECORD", 0, {"name": "Bootstrap records"})
        self._set_feature(METADATA_VERSION, mv)
        if self.settings.elr_version:
            self._set_feature(ELR_VERSION, self.settings.elr_version)
            self._elr_safety_records()
        if transactional:
            self.emit("END_TRANSACTION_RECORD", 0, {})
        self.flush(atomic=True)

    def _set_feature(self, name: str, level: int) -> None:
        self.emit("FEATURE_LEVEL_RECORD", 0, {"name": name, "featureLevel": level})
        self.features[name] = level

    def _elr_safety_records(self) -> None:
        # Turning ELR on writes a cluster-level min.insync.replicas if none exists
        # (ConfigurationControlManager.maybeGenerateElrSafetyRecords).
        if MIN_ISR not in self.cluster_configs:
            self._config(RESOURCE_BROKER, "", MIN_ISR, str(self.settings.min_insync_replicas))

    def update_feature(self, name: str, level: int) -> None:
        if name == ELR_VERSION and level >= 1 and not elr_supported(self.metadata_version):
            raise ValueError(f"{ELR_VERSION}={level} needs metadata.version >= 23 (4.0-IV1)")
        if name == ELR_VERSION and level >= 1 and not self.elr_enabled:
            self._elr_safety_records()  # written before the feature, in the same atomic batch
        self._set_feature(name, level)
        self.flush(atomic=True)

    # ------------------------------------------------------------------ configs

    def _config(self, resource_type: int, resource_name: str, name: str, value: str | None) -> int:
        offset = self.emit(
            "CONFIG_RECORD",
            0,
            {
                "resourceType": resource_type,
                "resourceName": resource_name,
                "name": name,
                "value": value,
            },
        )
        configs = (
            self.cluster_configs
            if resource_type == RESOURCE_BROKER
            else self.topic(resource_name).configs
        )
        if value is None:
            configs.pop(name, None)
        else:
            configs[name] = value
        return offset

    def set_config(self, topic_name: str | None, name: str, value: str | None) -> None:
        """incrementalAlterConfigs on a topic, or cluster-wide (broker "") when topic_name is None.
        A min.insync.replicas change with ELR on is followed by ClearElrRecord."""
        resource = (RESOURCE_BROKER, "") if topic_name is None else (RESOURCE_TOPIC, topic_name)
        offset = self._config(*resource, name, value)
        if name == MIN_ISR and self.elr_enabled:
            skip = self.injector.active and self.injector.on_event(
                self, "min_isr_change", topic_name=topic_name, offset=offset
            )
            if not skip:
                self.emit("CLEAR_ELR_RECORD", 0, {"topicName": topic_name or ""})
                for topic in [self.topic(topic_name)] if topic_name else list(self.topics.values()):
                    topic.partitions = [pc.clear_elr(p) for p in topic.partitions]
        self.flush(atomic=True)

    # ------------------------------------------------------------------ brokers

    def register_broker(self, broker_id: int, *, rack: str | None = None) -> int:
        """A BrokerRegistration request: unclean-shutdown removals (same atomic
        batch) then RegisterBrokerRecord, fenced, epoch = its offset. Also the
        request itself, as a registration event. Returns the new epoch."""
        existing = self.brokers.get(broker_id)
        mv = self.metadata_version
        request_version = 4 if elr_supported(mv) else 2
        previous_epoch = existing.epoch if existing is not None and existing.stopped_cleanly else -1
        incarnation = new_uuid(self.rng)
        self.sink.registration(
            {
                "brokerId": broker_id,
                "incarnationId": incarnation,
                "previousBrokerEpoch": previous_epoch if request_version >= 3 else -1,
                "requestVersion": request_version,
                "timestampMs": self.now_ms,
                "clusterId": self.cluster_id,
            }
        )
        self.now_ms += (
            REQUEST_HANDLING_MS  # the record is written a moment after the request arrives
        )
        if existing is not None:
            # trunk (KAFKA-18635): clean only if the request proves it with the stored epoch
            clean = request_version >= 3 and previous_epoch == existing.epoch
            verdict = "clean" if clean or not self.elr_enabled else "unclean"
            if self.injector.active:
                verdict = (
                    self.injector.on_event(
                        self, "registration", broker_id=broker_id, verdict=verdict
                    )
                    or verdict
                )
            if verdict == "unclean":
                self._unclean_shutdown_updates(broker_id)
            elif verdict == "clean":
                self._leader_and_isr_updates(
                    self._with_broker_in_isr(broker_id), "restart", remove=broker_id
                )
        log_dir = existing.log_dir if existing is not None else new_uuid(self.rng)
        epoch = self.next_offset + len(self._pending)
        version = register_broker_record_version(mv)
        data = {"brokerId": broker_id}
        if version >= 2:
            data["isMigratingZkBroker"] = False
        data.update(
            {
                "incarnationId": incarnation,
                "brokerEpoch": epoch,
                "endPoints": [
                    {
                        "name": "PLAINTEXT",
                        "host": f"broker-{broker_id}",
                        "port": 9092,
                        "securityProtocol": 0,
                    }
                ],
                "features": [
                    {"name": METADATA_VERSION, "minSupportedVersion": 1, "maxSupportedVersion": 27}
                ],
                "rack": rack,
                "fenced": True,
            }
        )
        if version >= 1:
            data["inControlledShutdown"] = False
        if version >= 3:
            data["logDirs"] = [log_dir]
        self.emit("REGISTER_BROKER_RECORD", version, data)
        self.brokers[broker_id] = Broker(broker_id, epoch, incarnation, log_dir)
        self.flush(atomic=True)
        return epoch

    def unfence(self, broker_id: int) -> None:
        """The broker caught up: unfence it, then elect leaders for leaderless partitions."""
        b = self.brokers[broker_id]
        if self.metadata_version >= MV_3_3_IV2:
            self.emit(
                "BROKER_REGISTRATION_CHANGE_RECORD",
                0,
                {"brokerId": broker_id, "brokerEpoch": b.epoch, "fenced": -1},
            )
        else:
            self.emit("UNFENCE_BROKER_RECORD", 0, {"id": broker_id, "epoch": b.epoch})
        b.fenced = False
        leaderless = [(t, i) for t, i, p in self.partitions() if p.leader == NO_LEADER]
        self._leader_and_isr_updates(leaderless, "unfence", add=broker_id)
        self.flush()

    def fence(self, broker_id: int, reason: str = "fence") -> None:
        """Heartbeat timeout (or the end of a controlled shutdown): out of every
        ISR, no longer a leader; the change records precede the fence record."""
        b = self.brokers[broker_id]
        if b.fenced:
            return
        self._leader_and_isr_updates(self._with_broker_in_isr(broker_id), reason, remove=broker_id)
        if self.metadata_version >= MV_3_3_IV2:
            offset = self.emit(
                "BROKER_REGISTRATION_CHANGE_RECORD",
                0,
                {"brokerId": broker_id, "brokerEpoch": b.epoch, "fenced": 1},
            )
        else:
            offset = self.emit("FENCE_BROKER_RECORD", 0, {"id": broker_id, "epoch": b.epoch})
        b.fenced = True
        if self.injector.active:
            self.injector.on_event(self, "fenced", broker_id=broker_id, offset=offset)
        self.flush()

    def begin_controlled_shutdown(self, broker_id: int) -> None:
        """The broker asks to shut down: in controlled shutdown, out of ISRs and leadership."""
        b = self.brokers[broker_id]
        if self.metadata_version >= MV_3_3_IV3 and not b.in_controlled_shutdown:
            self.emit(
                "BROKER_REGISTRATION_CHANGE_RECORD",
                1,
                {"brokerId": broker_id, "brokerEpoch": b.epoch, "inControlledShutdown": 1},
            )
        b.in_controlled_shutdown = True
        self._leader_and_isr_updates(
            self._with_broker_in_isr(broker_id), "controlled_shutdown", remove=broker_id
        )
        self.flush()

    def controlled_shutdown(self, broker_id: int, gap_ms: int = 1000) -> None:
        """A clean stop: controlled shutdown, then fenced when it says SHUTDOWN_NOW."""
        self.begin_controlled_shutdown(broker_id)
        self.advance(gap_ms)
        self.fence(broker_id, "shutdown_now")
        b = self.brokers[broker_id]
        b.alive = False
        b.stopped_cleanly = True

    def crash(self, broker_id: int) -> None:
        """The process dies: nothing is written until its heartbeats time out."""
        b = self.brokers[broker_id]
        b.alive = False
        b.stopped_cleanly = False

    def restart(self, broker_id: int, gap_ms: int = 1000) -> None:
        """Register (again), catch up, get unfenced, rejoin ISRs as a follower."""
        self.register_broker(broker_id)
        self.advance(gap_ms)
        self.unfence(broker_id)
        self.advance(gap_ms)
        self.catch_up(broker_id)

    def _unclean_shutdown_updates(self, broker_id: int) -> None:
        """handleBrokerUncleanShutdown: out of every ISR and ELR."""
        self._leader_and_isr_updates(
            self._with_broker_in_isr(broker_id), "unclean_shutdown", unclean_shutdown=broker_id
        )
        in_elr = [(t, i) for t, i, p in self.partitions() if broker_id in p.elr]
        self._leader_and_isr_updates(in_elr, "unclean_shutdown", unclean_shutdown=broker_id)

    def _with_broker_in_isr(self, broker_id: int) -> list[tuple[Topic, int]]:
        return [(t, i) for t, i, p in self.partitions() if broker_id in p.isr]

    def _leader_and_isr_updates(
        self,
        targets: Iterable[tuple[Topic, int]],
        reason: str,
        *,
        remove: int = NO_LEADER,
        add: int = NO_LEADER,
        unclean_shutdown: int = NO_LEADER,
    ) -> None:
        """ReplicationControlManager.generateLeaderAndIsrUpdates."""
        # who may lead, fixed for the whole event (a set lookup per candidate, not a call)
        eligible = {
            b
            for b in self.brokers
            if b not in (remove, unclean_shutdown) and (b == add or self.is_active(b))
        }
        acceptable = eligible.__contains__
        excluded = {remove, unclean_shutdown}
        self.leaving = (
            excluded  # brokers this event takes away (the fault hooks must not pick them)
        )
        elr_enabled, mv = self.elr_enabled, self.metadata_version
        unclean = () if unclean_shutdown == NO_LEADER else (unclean_shutdown,)
        per_topic: dict[
            str, tuple[int, str]
        ] = {}  # topic id -> (min ISR, election): fixed for the event
        for topic, pid in targets:
            p = topic.partitions[pid]
            if topic.topic_id not in per_topic:
                per_topic[topic.topic_id] = (
                    self.effective_min_isr(topic),
                    pc.UNCLEAN if self.unclean_election_enabled(topic) else pc.ONLINE,
                )
            min_isr, election = per_topic[topic.topic_id]
            change = pc.build_change(
                p,
                is_acceptable=acceptable,
                min_isr=min_isr,
                elr_enabled=elr_enabled,
                metadata_version=mv,
                target_isr=[r for r in p.isr if r not in excluded],
                election=election,
                unclean_shutdown_replicas=unclean,
                use_last_known_leader=self.settings.use_last_known_leader,
            )
            self.change_partition(topic, pid, change, reason)
        self.leaving = set()

    def change_partition(
        self, topic: Topic, pid: int, change: dict | None, reason: str
    ) -> int | None:
        """Write one PartitionChangeRecord (None: nothing to write) and apply it.
        Returns its offset. The fault hooks see every change here."""
        before = topic.partitions[pid]
        if self.injector.active:
            change = self.injector.on_partition_change(self, topic, pid, before, change, reason)
        if not change:
            return None
        mv = self.metadata_version
        data = {"partitionId": pid, "topicId": topic.topic_id}
        data.update(change)
        if "replicas" in change and directories_supported(mv) and "directories" not in change:
            data["directories"] = [self._log_dir(r) for r in change["replicas"]]
        offset = self.emit("PARTITION_CHANGE_RECORD", partition_record_version(mv), data)
        if "replicas" in change:  # replicas that leave: where a stray copy could stay behind
            for r in set(before.replicas) - set(change["replicas"]):
                self.former_replicas.append((topic, pid, r))
        after = pc.apply_change(before, change)
        if "replicas" in change or "isr" in change:  # share the tuples between partitions
            after = after._replace(replicas=self.intern(after.replicas), isr=self.intern(after.isr))
        topic.partitions[pid] = after
        return offset

    def _log_dir(self, broker_id: int) -> str:
        b = self.brokers.get(broker_id)
        # DirectoryId.MIGRATING: no directory known
        return b.log_dir if b is not None else "AAAAAAAAAAAAAAAAAAAAAA"

    # ------------------------------------------------------------------ topics

    def create_topic(
        self,
        name: str,
        partitions: int,
        replication_factor: int,
        configs: dict[str, str] | None = None,
        assignment: list[list[int]] | None = None,
    ) -> str:
        """CreateTopics: TopicRecord, ConfigRecords, PartitionRecords, one atomic batch
        (split into transactions of MAX_RECORDS_PER_BATCH when huge, as Kafka cannot
        append an atomic batch that large)."""
        if name in self.topic_ids:
            raise ValueError(f"topic {name!r} already exists")
        if assignment is None:
            assignment = self._place_replicas(partitions, replication_factor)
        topic_id = new_uuid(self.rng)
        topic = Topic(name, topic_id, [])
        self.topics[topic_id] = topic
        self.topic_ids[name] = topic_id
        huge = len(assignment) + 2 > MAX_RECORDS_PER_BATCH
        if huge and self.metadata_version >= MV_3_6_IV1:
            self.emit("BEGIN_TRANSACTION_RECORD", 0, {"name": f"create topic {name}"})
        self.emit("TOPIC_RECORD", 0, {"name": name, "topicId": topic_id})
        for key, value in (configs or {}).items():
            self._config(RESOURCE_TOPIC, name, key, str(value))
        mv = self.metadata_version
        version = partition_record_version(mv)
        for pid, replicas in enumerate(assignment):
            p = pc.new_partition(replicas, self.is_active)
            p = p._replace(replicas=self.intern(p.replicas), isr=self.intern(p.isr))
            topic.partitions.append(p)
            self.emit("PARTITION_RECORD", version, self.partition_record(topic, pid, p, version))
            if huge and len(self._pending) >= MAX_RECORDS_PER_BATCH:
                self.flush(atomic=True)
        if huge and self.metadata_version >= MV_3_6_IV1:
            self.emit("END_TRANSACTION_RECORD", 0, {})
        self.flush(atomic=True)
        return topic_id

    def partition_record(self, topic: Topic, pid: int, p: PartitionState, version: int) -> dict:
        """PartitionRegistration.toRecord: ELR fields only when non-empty."""
        data = {
            "partitionId": pid,
            "topicId": topic.topic_id,
            "replicas": list(p.replicas),
            "isr": list(p.isr),
            "removingReplicas": list(p.removing),
            "addingReplicas": list(p.adding),
            "leader": p.leader,
            "leaderRecoveryState": p.leader_recovery_state,
            "leaderEpoch": p.leader_epoch,
            "partitionEpoch": p.partition_epoch,
        }
        if version >= 1:
            data["directories"] = [self._log_dir(r) for r in p.replicas]
        if version >= 2:
            if p.elr:
                data["eligibleLeaderReplicas"] = list(p.elr)
            if p.last_known_elr:
                data["lastKnownElr"] = list(p.last_known_elr)
        return data

    def _place_replicas(self, partitions: int, replication_factor: int) -> list[list[int]]:
        """Round-robin over unfenced brokers from a random start."""
        usable = sorted(
            b
            for b, reg in self.brokers.items()
            if not reg.fenced and not reg.in_controlled_shutdown
        )
        if len(usable) < replication_factor:
            raise ValueError(
                f"replication factor {replication_factor} needs {replication_factor} unfenced "
                f"brokers, have {len(usable)}"
            )
        # Kafka's classic rack-unaware assignment (AdminUtils.assignReplicasToBrokers)
        n = len(usable)
        start = self.rng.randrange(n)
        shift = self.rng.randrange(n)
        out = []
        for pid in range(partitions):
            if pid > 0 and pid % n == 0:
                shift += 1
            first = (start + pid) % n
            replicas = [usable[first]]
            for j in range(replication_factor - 1):
                replicas.append(usable[(first + 1 + (shift + j) % (n - 1)) % n])
            out.append(replicas)
        return out

    def delete_topic(self, name: str) -> None:
        topic_id = self.topic(name).topic_id
        del self.topic_ids[name]
        self.emit("REMOVE_TOPIC_RECORD", 0, {"topicId": topic_id})
        for pid, p in enumerate(self.topics[topic_id].partitions):
            self.former_replicas.extend((self.topics[topic_id], pid, r) for r in p.replicas)
        del self.topics[topic_id]
        self.flush(atomic=True)

    # ------------------------------------------------------------------ partitions

    def alter_partition(
        self,
        topic_name: str,
        pid: int,
        isr: Iterable[int],
        recovery_state: int | None = None,
        *,
        flush: bool = True,
    ) -> bool:
        """AlterPartition from the leader. Rejected (nothing written, False) when
        a new ISR member is ineligible, or RECOVERING with more than the leader."""
        topic = self.topic(topic_name)
        p = topic.partitions[pid]
        isr = list(isr)
        if p.leader == NO_LEADER or not self.is_active(p.leader):
            return False
        if any(r not in p.replicas for r in isr):
            return False  # INVALID_REQUEST: only replicas can be in the ISR
        if any(not self.is_active(r) for r in isr if r not in p.isr):
            return False  # INELIGIBLE_REPLICA
        state = p.leader_recovery_state if recovery_state is None else recovery_state
        if state == RECOVERING and len(isr) > 1:
            return False  # INVALID_REQUEST
        if p.leader_recovery_state == RECOVERED and state == RECOVERING:
            return False
        change = pc.build_change(
            p,
            is_acceptable=self.is_active,
            min_isr=self.effective_min_isr(topic),
            elr_enabled=self.elr_enabled,
            metadata_version=self.metadata_version,
            target_isr=isr,
            target_recovery_state=recovery_state,
            use_last_known_leader=self.settings.use_last_known_leader,
        )
        self.change_partition(topic, pid, change, "alter_partition")
        if flush:
            self.flush()
        return True

    def shrink_isr(self, topic_name: str, pid: int, broker_id: int) -> bool:
        """The leader drops a lagging follower."""
        p = self.topic(topic_name).partitions[pid]
        if broker_id not in p.isr or broker_id == p.leader:
            return False
        return self.alter_partition(topic_name, pid, [r for r in p.isr if r != broker_id])

    def expand_isr(self, topic_name: str, pid: int, broker_id: int, *, flush: bool = True) -> bool:
        """The follower caught up; a RECOVERING leader first finishes its recovery."""
        p = self.topic(topic_name).partitions[pid]
        if broker_id in p.isr or broker_id not in p.replicas:
            return False
        if p.leader_recovery_state == RECOVERING and not self.finish_recovery(
            topic_name, pid, flush=flush
        ):
            return False
        p = self.topic(topic_name).partitions[pid]
        return self.alter_partition(topic_name, pid, [*p.isr, broker_id], flush=flush)

    def finish_recovery(self, topic_name: str, pid: int, *, flush: bool = True) -> bool:
        """The leader of a RECOVERING partition reports RECOVERED (KIP-704)."""
        p = self.topic(topic_name).partitions[pid]
        if p.leader_recovery_state != RECOVERING:
            return False
        return self.alter_partition(
            topic_name, pid, list(p.isr), recovery_state=RECOVERED, flush=flush
        )

    def catch_up(self, broker_id: int | None = None) -> None:
        """Followers that are alive and unfenced rejoin the ISR of every partition
        they replicate (AlterPartition requests, written together)."""
        for topic, pid, p in self.partitions():
            if p.leader == NO_LEADER or not self.is_active(p.leader):
                continue
            for r in list(p.replicas):
                now = topic.partitions[pid]  # an expansion may complete a reassignment
                if (
                    (broker_id is None or r == broker_id)
                    and r in now.replicas
                    and r not in now.isr
                    and self.is_active(r)
                    and self.brokers[r].alive
                ):
                    self.expand_isr(topic.name, pid, r, flush=False)
        self.flush()

    def elect_leaders(self, election: str = pc.PREFERRED, topic_name: str | None = None) -> None:
        """ElectLeaders (or the periodic rebalance / unclean election for leaderless partitions)."""
        for topic, pid, p in self.partitions():
            if topic_name is not None and topic.name != topic_name:
                continue
            if election == pc.PREFERRED and p.leader == p.replicas[0]:
                continue
            if election == pc.UNCLEAN and p.leader != NO_LEADER:
                continue
            change = pc.build_change(
                p,
                is_acceptable=self.is_active,
                min_isr=self.effective_min_isr(topic),
                elr_enabled=self.elr_enabled,
                metadata_version=self.metadata_version,
                election=election,
                use_last_known_leader=self.settings.use_last_known_leader,
            )
            self.change_partition(topic, pid, change, f"elect_{election}")
        self.flush()

    def unclean_elections(self) -> None:
        """The periodic unclean election for leaderless partitions of topics that allow it."""
        for topic in list(self.topics.values()):
            if self.unclean_election_enabled(topic):
                self.elect_leaders(pc.UNCLEAN, topic.name)

    def reassign(self, topic_name: str, pid: int, target: list[int]) -> None:
        """AlterPartitionReassignments: adding replicas join the replica list first."""
        topic = self.topic(topic_name)
        p = topic.partitions[pid]
        current = list(p.replicas)
        removing = [r for r in current if r not in target]
        adding = [r for r in target if r not in current]
        merged = list(target) + [r for r in current if r not in target]
        change = pc.build_change(
            p,
            is_acceptable=self.is_active,
            min_isr=self.effective_min_isr(topic),
            elr_enabled=self.elr_enabled,
            metadata_version=self.metadata_version,
            target_replicas=merged if merged != current else None,
            target_removing=removing or None,
            target_adding=adding or None,
            use_last_known_leader=self.settings.use_last_known_leader,
        )
        self.change_partition(topic, pid, change, "reassign")
        self.flush(atomic=True)

    # ------------------------------------------------------------------ side inputs

    def log_dir_inventories(self) -> None:
        """Each live broker's `kafka-log-dirs --describe` output: the replicas it hosts."""
        extra = self.injector.on_event(self, "log_dirs") if self.injector.active else None
        held: dict[int, list[dict]] = {b: [] for b, reg in self.brokers.items() if reg.alive}
        for topic, pid, p in self.partitions():
            for r in dict.fromkeys((*p.replicas, *p.adding)):
                if r in held:
                    held[r].append(
                        {
                            "partition": f"{topic.name}-{pid}",
                            "size": 1024 * (1 + (pid * 7 + r) % 97),
                            "offsetLag": 0 if r in p.isr else 100 + pid % 50,
                            "isFuture": False,
                        }
                    )
        for broker_id, stray in (extra or {}).items():
            for name, pid in stray:
                if broker_id in held:
                    held[broker_id].append(
                        {
                            "partition": f"{name}-{pid}",
                            "size": 4096,
                            "offsetLag": 0,
                            "isFuture": False,
                        }
                    )
        for broker_id, parts in sorted(held.items()):
            inventory = {
                "version": 1,
                "brokers": [
                    {
                        "broker": broker_id,
                        "logDirs": [
                            {"logDir": "/var/lib/kafka/data", "error": None, "partitions": parts}
                        ],
                    }
                ],
            }
            self.sink.log_dirs(broker_id, inventory, self.now_ms)
        self.now_ms += 1  # what is written next comes after the inventory

    # ------------------------------------------------------------------ images

    def image_records(self) -> list[Record]:
        """The current state as a snapshot's records (what MetadataImage writes)."""
        mv = self.metadata_version
        out: list[Record] = []
        for name, level in self.features.items():
            out.append(("FEATURE_LEVEL_RECORD", 0, {"name": name, "featureLevel": level}))
        version = register_broker_record_version(mv)
        for b in self.brokers.values():
            data = {"brokerId": b.broker_id}
            if version >= 2:
                data["isMigratingZkBroker"] = False
            data.update(
                {
                    "incarnationId": b.incarnation_id,
                    "brokerEpoch": b.epoch,
                    "endPoints": [
                        {
                            "name": "PLAINTEXT",
                            "host": f"broker-{b.broker_id}",
                            "port": 9092,
                            "securityProtocol": 0,
                        }
                    ],
                    "features": [
                        {
                            "name": METADATA_VERSION,
                            "minSupportedVersion": 1,
                            "maxSupportedVersion": 27,
                        }
                    ],
                    "rack": None,
                    "fenced": b.fenced,
                }
            )
            if version >= 1:
                data["inControlledShutdown"] = b.in_controlled_shutdown
            if version >= 3:
                data["logDirs"] = [b.log_dir]
            out.append(("REGISTER_BROKER_RECORD", version, data))
        for key, value in self.cluster_configs.items():
            out.append(
                (
                    "CONFIG_RECORD",
                    0,
                    {
                        "resourceType": RESOURCE_BROKER,
                        "resourceName": "",
                        "name": key,
                        "value": value,
                    },
                )
            )
        pversion = partition_record_version(mv)
        for topic in self.topics.values():
            out.append(("TOPIC_RECORD", 0, {"name": topic.name, "topicId": topic.topic_id}))
            for key, value in topic.configs.items():
                out.append(
                    (
                        "CONFIG_RECORD",
                        0,
                        {
                            "resourceType": RESOURCE_TOPIC,
                            "resourceName": topic.name,
                            "name": key,
                            "value": value,
                        },
                    )
                )
            for pid, p in enumerate(topic.partitions):
                out.append(
                    ("PARTITION_RECORD", pversion, self.partition_record(topic, pid, p, pversion))
                )
        return out

    def final_state(self) -> Iterator[dict]:
        for topic, pid, p in self.partitions():
            yield {
                "topic": topic.name,
                "topic_id": topic.topic_id,
                "partition": pid,
                "replicas": list(p.replicas),
                "isr": list(p.isr),
                "elr": list(p.elr),
                "last_known_elr": list(p.last_known_elr),
                "leader": p.leader,
                "leader_epoch": p.leader_epoch,
                "partition_epoch": p.partition_epoch,
                "leader_recovery_state": p.leader_recovery_state,
            }
