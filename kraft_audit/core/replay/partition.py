"""One partition's registration, replayed as Kafka's `PartitionRegistration` does.

A `Partition` is immutable: `merged(change)` returns a new one, so the auditor
keeps the state before a change for free (no copying) and rules compare the
two. Lists are tuples; the class is slotted and pickles as one tuple.
"""

from __future__ import annotations

NO_LEADER = -1
NO_LEADER_CHANGE = -2  # PartitionChangeRecord.Leader default: "unchanged"
RECOVERED = 0
RECOVERING = 1
# Kafka's names (LeaderRecoveryState.java), as kafka-metadata-shell prints them: every
# view shows these, never the wire values 0/1
RECOVERY_STATE_NAMES = {RECOVERED: "RECOVERED", RECOVERING: "RECOVERING"}
NO_RECOVERY_CHANGE = -1  # PartitionChangeRecord.LeaderRecoveryState default: "unchanged"

_EMPTY: tuple[int, ...] = ()
# the fields of a Partition a record can leave unknown, in slot order
KNOWABLE = ("replicas", "isr", "removing_replicas", "adding_replicas", "leader",
            "leader_recovery_state", "leader_epoch", "partition_epoch", "elr", "last_known_elr",
            "directories")
# (slot, PartitionChangeRecord field) of the broker id lists
_LIST_FIELDS = (("replicas", "replicas"), ("isr", "isr"), ("removing_replicas", "removingReplicas"),
                ("adding_replicas", "addingReplicas"), ("elr", "eligibleLeaderReplicas"),
                ("last_known_elr", "lastKnownElr"))


def recovery_state_name(value: int) -> str:
    return RECOVERY_STATE_NAMES.get(value, str(value))


def _ints(value) -> tuple[int, ...]:
    """A broker id list as a tuple; TypeError for anything else (the auditor quarantines it)."""
    if not value:
        return _EMPTY
    ids = tuple(value)
    for broker in ids:
        if type(broker) is not int:
            raise TypeError(f"broker id list {value!r} holds {broker!r}")
    return ids


def _int(value) -> int:
    if type(value) is not int:
        raise TypeError(f"expected an integer, not {value!r}")
    return value


def _key(data: dict) -> tuple[str, int]:
    topic_id, partition = data["topicId"], data["partitionId"]
    if not isinstance(topic_id, str) or type(partition) is not int:
        raise TypeError(f"bad partition key {topic_id!r}-{partition!r}")
    return topic_id, partition


# a Partition's fields in order; read from here, not from __slots__, which a compiled
# (mypyc) class does not have
FIELDS = (
    "topic_id", "partition", "replicas", "isr", "removing_replicas", "adding_replicas",
    "leader", "leader_recovery_state", "leader_epoch", "partition_epoch", "elr",
    "last_known_elr", "directories", "unknown",
)


class Partition:
    __slots__ = FIELDS

    def __init__(self, topic_id: str, partition: int, replicas: tuple[int, ...],
                 isr: tuple[int, ...], removing_replicas: tuple[int, ...],
                 adding_replicas: tuple[int, ...], leader: int, leader_recovery_state: int,
                 leader_epoch: int, partition_epoch: int, elr: tuple[int, ...],
                 last_known_elr: tuple[int, ...], directories: tuple[str, ...],
                 unknown: tuple[str, ...] = ()):
        self.topic_id = topic_id
        self.partition = partition
        self.replicas = replicas
        self.isr = isr
        self.removing_replicas = removing_replicas
        self.adding_replicas = adding_replicas
        self.leader = leader
        self.leader_recovery_state = leader_recovery_state
        self.leader_epoch = leader_epoch
        self.partition_epoch = partition_epoch
        self.elr = elr
        self.last_known_elr = last_known_elr
        self.directories = directories
        # the fields no record has told (a partition known only from change records of a
        # partial log: its creation is before the log's first record); () = all known
        self.unknown = unknown

    @classmethod
    def from_record(cls, data: dict) -> Partition:
        """A PartitionRecord (creation, or full state in a snapshot)."""
        lrs = _int(data.get("leaderRecoveryState", RECOVERED))
        topic_id, partition = _key(data)
        return cls(
            topic_id, partition, _ints(data.get("replicas")),
            _ints(data.get("isr")), _ints(data.get("removingReplicas")),
            _ints(data.get("addingReplicas")), _int(data.get("leader", NO_LEADER)),
            lrs if lrs in (RECOVERED, RECOVERING) else RECOVERED,
            _int(data.get("leaderEpoch", -1)), _int(data.get("partitionEpoch", -1)),
            _ints(data.get("eligibleLeaderReplicas")), _ints(data.get("lastKnownElr")),
            tuple(data.get("directories") or ()),
        )

    @classmethod
    def from_change(cls, data: dict) -> Partition:
        """A partition first seen in a PartitionChangeRecord of a partial log: what the
        record sets, every other field unknown (its epochs stay unknown: a change bumps them
        from values the log does not hold)."""
        topic_id, partition = _key(data)
        blank = cls(topic_id, partition, _EMPTY, _EMPTY, _EMPTY, _EMPTY, NO_LEADER, RECOVERED,
                    -1, -1, _EMPTY, _EMPTY, (), KNOWABLE)
        return blank.merged(data)

    def merged(self, data: dict) -> Partition:
        """`PartitionRegistration.merge(PartitionChangeRecord)`: absent/null fields keep
        their value; the partition epoch always bumps; the leader epoch bumps whenever
        Leader is set (even to the same broker or to -1)."""
        get = data.get
        leader = _int(get("leader", NO_LEADER_CHANGE))
        if leader == NO_LEADER_CHANGE:
            leader, leader_epoch = self.leader, self.leader_epoch
        else:
            leader_epoch = self.leader_epoch + 1
        lrs = _int(get("leaderRecoveryState", NO_RECOVERY_CHANGE))
        if lrs not in (RECOVERED, RECOVERING):  # -1 = unchanged; bad values are a rule's business
            lrs = self.leader_recovery_state
        replicas = get("replicas")
        directories = get("directories")
        if directories:
            directories = tuple(directories)
        elif replicas is not None and self.directories:
            # DirectoryId.createDirectoriesFrom: keep the directory of replicas that stay
            by_replica = dict(zip(self.replicas, self.directories))
            directories = tuple(by_replica.get(r, "") for r in replicas)
        else:
            directories = self.directories
        if self.unknown:
            return self._merged_partly_known(data, leader, leader_epoch, lrs, directories)
        isr = get("isr")
        removing = get("removingReplicas")
        adding = get("addingReplicas")
        elr = get("eligibleLeaderReplicas")
        lke = get("lastKnownElr")
        return Partition(
            self.topic_id, self.partition,
            self.replicas if replicas is None else _ints(replicas),
            self.isr if isr is None else _ints(isr),
            self.removing_replicas if removing is None else _ints(removing),
            self.adding_replicas if adding is None else _ints(adding),
            leader, lrs, leader_epoch, self.partition_epoch + 1,
            self.elr if elr is None else _ints(elr),
            self.last_known_elr if lke is None else _ints(lke),
            directories,
        )

    def _merged_partly_known(self, data: dict, leader: int, leader_epoch: int, lrs: int,
                             directories: tuple) -> Partition:
        """merged() for a partition with unknown fields: what the record sets becomes known."""
        get = data.get
        unknown = set(self.unknown)
        values = {}
        for name, field in _LIST_FIELDS:
            value = get(field)
            values[name] = getattr(self, name) if value is None else _ints(value)
            if value is not None:
                unknown.discard(name)
        if _int(get("leader", NO_LEADER_CHANGE)) != NO_LEADER_CHANGE:
            unknown.discard("leader")
        if _int(get("leaderRecoveryState", NO_RECOVERY_CHANGE)) in (RECOVERED, RECOVERING):
            unknown.discard("leader_recovery_state")
        if get("directories"):
            unknown.discard("directories")
        return Partition(
            self.topic_id, self.partition, values["replicas"], values["isr"],
            values["removing_replicas"], values["adding_replicas"], leader, lrs,
            -1 if "leader_epoch" in unknown else leader_epoch,
            -1 if "partition_epoch" in unknown else self.partition_epoch + 1,
            values["elr"], values["last_known_elr"], directories,
            tuple(n for n in KNOWABLE if n in unknown))

    def with_elr_cleared(self) -> Partition:
        """ClearElrRecord: ELR = LastKnownElr = [], epoch bumped only if something was cleared."""
        if not self.elr and not self.last_known_elr:
            return self
        return Partition(self.topic_id, self.partition, self.replicas, self.isr,
                         self.removing_replicas, self.adding_replicas, self.leader,
                         self.leader_recovery_state, self.leader_epoch,
                         self.partition_epoch + (0 if self.unknown else 1), _EMPTY, _EMPTY,
                         self.directories, tuple(n for n in self.unknown
                                                 if n not in ("elr", "last_known_elr")))

    def as_dict(self) -> dict:
        return {name: getattr(self, name) for name in FIELDS}

    def __reduce__(self):
        return (Partition, tuple(getattr(self, name) for name in FIELDS))

    def __eq__(self, other) -> bool:
        return isinstance(other, Partition) and all(
            getattr(self, n) == getattr(other, n) for n in FIELDS)

    __hash__ = None  # type: ignore[assignment]  # a value compared, never hashed

    def __repr__(self) -> str:
        return (f"Partition({self.topic_id}-{self.partition} replicas={list(self.replicas)} "
                f"isr={list(self.isr)} elr={list(self.elr)} lke={list(self.last_known_elr)} "
                f"leader={self.leader} lrs={self.leader_recovery_state} "
                f"epochs={self.leader_epoch}/{self.partition_epoch})")
