"""Binding between rule ids (rules/*.yaml) and the functions that judge them.

A rule is a plain function of a `Check` (what it may look at) that returns
nothing when all is well, or a message, a `Finding` or a list of them. The
`@rule` decorator records when it runs (`on`), for which records, its
parameters with their defaults, and whether its findings are about one
partition or the whole cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple

# When a rule runs.
ON_PARTITION = "partition"  # right after a partition changes (record types in `records`)
ON_PARTITION_BATCH_END = "partition_batch_end"  # each partition change, once its atomic batch ended
ON_BATCH_END = "batch_end"  # once per atomic batch
ON_REGISTRATION = "registration"  # a registration request matched its RegisterBrokerRecord
ON_REGISTRATION_TIMEOUT = "registration_timeout"  # a request never matched in time
ON_LOG_DIRS = "log_dirs"  # a broker's log-dir inventory
ON_INPUT = "input"  # a record the replay could not use as is
ON_SNAPSHOT = "snapshot"  # a snapshot compared with the log replayed to its end (image.py)
ON_RECORD = "record"  # a cluster record (not a partition's), before it is applied
TRIGGERS = (ON_PARTITION, ON_PARTITION_BATCH_END, ON_BATCH_END, ON_REGISTRATION,
            ON_REGISTRATION_TIMEOUT, ON_LOG_DIRS, ON_INPUT, ON_SNAPSHOT, ON_RECORD)

PARTITION_RECORDS = ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD", "CLEAR_ELR_RECORD")

# What a PartitionChangeRecord sets, as bits of its "shape": a rule declares with `when`
# the bits of which at least one must be set for it to run (0: always run). Other
# record types always run every rule bound to them. A record that sets none of the fields a
# rule names leaves them as that rule judged them before: it is not judged again.
SETS_LEADER = 1
SETS_ISR = 2
SETS_RECOVERY_STATE = 4
SETS_ELR = 8  # EligibleLeaderReplicas or LastKnownElr
SETS_ASSIGNMENT = 16  # Replicas, Adding/RemovingReplicas or Directories
# The other bits only save calls: a rule that declares one finds nothing on a change
# without it (tests/test_core_fast_paths.py runs every rule with them all set and compares)
IS_RECOVERING = 32  # the partition is RECOVERING before or after
HAS_ELR = 64  # the partition has an ELR after the change
IN_REASSIGNMENT = 128  # the partition had adding or removing replicas before the change
ELR_ENABLED = 256  # ELR was enabled when the record was applied
EMPTIES_ISR = 512  # the record sets the ISR to []
ONLY_SAVE_CALLS = IS_RECOVERING | HAS_ELR | IN_REASSIGNMENT | ELR_ENABLED | EMPTIES_ISR
ALL_SHAPES = 1023

# What an atomic batch holds, as bits for the `when` of a batch-end rule (0: always run);
# like the bits above, they only save calls: most batches hold one partition change and give
# the batch-end rules nothing to judge
# it changed a broker (BatchInfo.broker_changes): a fence, an unregistration, a controlled shutdown
BATCH_BROKERS = 1
BATCH_MIN_ISR_CONFIG = 2  # a min.insync.replicas config reached partitions with an ELR or LastKnownElr
BATCH_RAFT_PROBLEMS = 4  # its Raft epoch breaks something (BatchInfo.raft_problems)

SCOPE_PARTITION = "partition"  # judged by whichever auditor holds the partition
SCOPE_CLUSTER = "cluster"  # emitted once per cluster (bucket 0 of the Spark shell)


class Finding(NamedTuple):
    message: str
    key: tuple[str, int] | None = None  # (topic id, partition) when not the checked partition
    broker_id: int | None = None
    evidence: dict | None = None
    cluster_scoped: bool | None = None  # None: the rule's scope decides
    offset: int | None = None  # where the fault is, when not at the record judged (then no evidence)
    # Brokers re-registering in this batch whose unclean shutdown would explain the finding:
    # it is held until their registration request says the shutdown was clean.
    unless_unclean: tuple[int, ...] = ()


@dataclass(frozen=True)
class RuleImpl:
    rule_id: str
    fn: Callable[[Any], Any]
    on: str
    records: tuple[str, ...]
    params: dict[str, Any] = field(default_factory=dict)  # name -> default (its type is the type)
    scope: str = SCOPE_PARTITION
    # bits of which at least one must be set for the rule to run, 0: always: a
    # PartitionChangeRecord's shape (partition triggers) or a batch's BATCH_* (batch end)
    when: int = 0


IMPLEMENTATIONS: dict[str, RuleImpl] = {}


def rule(rule_id: str, on: str, records: tuple[str, ...] = (), params: dict[str, Any] | None = None,
         scope: str = SCOPE_PARTITION, when: int = 0):
    if on not in TRIGGERS:
        raise ValueError(f"rule {rule_id}: unknown trigger {on!r}")

    def register(fn):
        if rule_id in IMPLEMENTATIONS:
            raise ValueError(f"rule {rule_id} implemented twice")
        IMPLEMENTATIONS[rule_id] = RuleImpl(rule_id, fn, on, records, dict(params or {}), scope, when)
        return fn

    return register


def change_shape(before, after, data: dict, elr_enabled: bool) -> int:
    """The shape bits of a PartitionChangeRecord (see SETS_*)."""
    shape = ELR_ENABLED if elr_enabled else 0
    if data.get("leader", -2) != -2:
        shape |= SETS_LEADER
    isr = data.get("isr")
    if isr is not None:
        shape |= SETS_ISR if isr else SETS_ISR | EMPTIES_ISR
    if data.get("leaderRecoveryState", -1) != -1:
        shape |= SETS_RECOVERY_STATE
    if data.get("eligibleLeaderReplicas") is not None or data.get("lastKnownElr") is not None:
        shape |= SETS_ELR
    if (data.get("replicas") is not None or data.get("addingReplicas") is not None
            or data.get("removingReplicas") is not None or data.get("directories")):
        shape |= SETS_ASSIGNMENT
    if before.leader_recovery_state or after.leader_recovery_state:
        shape |= IS_RECOVERING
    if after.elr:
        shape |= HAS_ELR
    if before.adding_replicas or before.removing_replicas:
        shape |= IN_REASSIGNMENT
    return shape


def batch_shape(batch) -> int:
    """The BATCH_* bits of an atomic batch (a BatchInfo) at its end."""
    shape = BATCH_BROKERS if batch.broker_changes else 0  # a fence is a broker change too
    if batch.elr_before_min_isr_change:
        shape |= BATCH_MIN_ISR_CONFIG
    if batch.raft_problems:
        shape |= BATCH_RAFT_PROBLEMS
    return shape
