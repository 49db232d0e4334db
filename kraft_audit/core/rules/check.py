"""`Check`: everything a rule function may look at, in one reusable object.

The auditor fills the fields that matter for the trigger and calls each rule
with the same object (no allocation per rule call on the hot path).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from kraft_audit.core.events import MetadataEvent
    from kraft_audit.core.replay.partition import Partition


class Site(NamedTuple):
    """Where a finding is: the record judged (offset, time, event), the partition and its
    states around the change, or the broker. A tuple: one is built per partition change."""

    offset: int
    timestamp_ms: int
    key: tuple[str, int] | None = None
    event: MetadataEvent | None = None
    before: Partition | None = None
    after: Partition | None = None
    broker_id: int | None = None


class Check:
    __slots__ = (
        "event",  # the MetadataEvent being judged
        "before",  # Partition before the change (None: created)
        "after",  # Partition after the change (None: deleted)
        "state",  # the ClusterState (brokers, topics, configs, features) now
        "settings",  # CoreSettings
        "elr_enabled",  # whether ELR was on when the record was applied
        "min_isr",  # the effective min ISR Kafka judged the change by (before it was applied)
        "params",  # this rule's parameters
        "batch",  # BatchInfo of the atomic batch (batch-end triggers)
        "match",  # RegistrationMatch (registration triggers)
        "problem",  # ReplayError (input trigger)
        "snapshot",  # SnapshotComparison (snapshot trigger, image.py)
    )

    def __init__(self, state, settings):
        self.state = state
        self.settings = settings
        self.event = self.before = self.after = self.batch = self.match = self.problem = None
        self.snapshot = None
        self.elr_enabled = False
        self.min_isr = 1
        self.params = {}


class BatchInfo:
    """One atomic batch as the batch-end rules see it."""

    __slots__ = ("base_offset", "last_offset", "timestamp_ms", "changes", "registered", "fenced",
                 "elr_before_min_isr_change", "broker_changes", "raft_problems", "features_before")

    def __init__(self, base_offset: int, last_offset: int):
        self.base_offset = base_offset
        self.last_offset = last_offset
        self.timestamp_ms = 0
        self.changes: list[BatchChange] = []  # partition changes with batch-end rules, in order
        self.registered: dict[int, Registered] = {}  # RegisterBrokerRecords in this batch
        self.fenced: set[int] = set()  # brokers fenced by this batch
        # partitions that had an ELR or LastKnownElr when a min.insync.replicas config in
        # scope of them was written in this batch
        self.elr_before_min_isr_change: set[tuple[str, int]] = set()
        self.broker_changes: list[BrokerChange] = []  # broker records of this batch, in order
        self.raft_problems: list[str] = []  # what its Raft epoch breaks (event_loop._raft_batch)
        # the finalized feature levels before this batch's first FeatureLevelRecord (None: it has none)
        self.features_before: dict[str, int] | None = None

    def acceptable_leader_at(self, offset: int, broker_id: int, at_batch_end: bool) -> bool:
        """Whether `broker_id` could lead as of the record at `offset`, not as of the batch's
        end: one Raft batch may hold several controller operations (two brokers shutting
        down at once). A record sees the broker records before it, and also the broker record
        right after it when that one closes the operation the record belongs to: Kafka writes
        a fence, an unregistration or a re-registration after the partition changes it causes,
        but a controlled shutdown or an unfence before them."""
        changes = self.broker_changes
        if not changes:
            return at_batch_end
        following = next((b for b in changes if b.offset > offset), None)
        seen_up_to = following.offset if following is not None and following.closes_operation \
            else offset
        acceptable = at_batch_end
        for b in reversed(changes):  # the first of its changes after the cut gives its value
            if b.broker_id == broker_id and b.offset > seen_up_to:
                acceptable = b.acceptable_before
        return acceptable

    def unclean_shutdown_candidates(self) -> set[int]:
        """Brokers that came back with a new incarnation in this batch: Kafka removes an
        unclean-shutdown replica from ISR and ELR in the same batch as its registration."""
        return {b for b, r in self.registered.items() if r.new_incarnation}


class BatchChange(NamedTuple):
    """A partition change of the batch, kept for the batch-end rules: where it is (the
    record, the partition before and after it) and how it was judged when applied."""

    site: Site  # the Site its partition rules ran with, reused at batch end
    elr_enabled: bool
    min_isr: int
    shape: int  # change_shape bits


class BrokerChange(NamedTuple):
    """A broker record of the batch: whether the broker could lead before it, and whether it
    closes a controller operation (written after the partition changes it causes)."""

    offset: int
    broker_id: int
    acceptable_before: bool
    closes_operation: bool


class Registered:
    """A RegisterBrokerRecord, kept until its registration request is matched."""

    __slots__ = ("broker_id", "incarnation_id", "offset", "timestamp_ms", "stored_epoch",
                 "new_incarnation", "elr_enabled", "metadata_version", "still_in",
                 "removed_from_elr", "held")

    def __init__(self, broker_id: int, incarnation_id: str | None, offset: int, timestamp_ms: int,
                 stored_epoch: int, new_incarnation: bool, elr_enabled: bool,
                 metadata_version: int | None):
        self.broker_id = broker_id
        self.incarnation_id = incarnation_id
        self.offset = offset
        self.timestamp_ms = timestamp_ms
        self.stored_epoch = stored_epoch  # the broker's epoch before this record; -2 if unregistered
        self.new_incarnation = new_incarnation
        self.elr_enabled = elr_enabled
        self.metadata_version = metadata_version
        # filled at batch end: partitions whose ISR or ELR still holds the broker, and
        # (partition, offset of the change) where this batch removed it from the ELR
        self.still_in: list[tuple[str, int]] = []
        self.removed_from_elr: list[tuple[tuple[str, int], int]] = []
        # findings an unclean shutdown of this broker would explain, emitted if it was clean
        self.held: list = []  # HeldFinding (findings.py)


class RegistrationMatch:
    """A registration request and the RegisterBrokerRecord it led to (record None: timed out)."""

    __slots__ = ("broker_id", "incarnation_id", "request", "request_ms", "record", "unclean")

    def __init__(self, broker_id: int, incarnation_id: str, request: dict, request_ms: int,
                 record: Registered | None, unclean: bool | None):
        self.broker_id = broker_id
        self.incarnation_id = incarnation_id
        self.request = request
        self.request_ms = request_ms
        self.record = record
        self.unclean = unclean
