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
# record types always run every rule bound to them.
SETS_LEADER = 1
SETS_ISR = 2
SETS_RECOVERY_STATE = 4
SETS_ELR = 8  # EligibleLeaderReplicas or LastKnownElr
SETS_ASSIGNMENT = 16  # Replicas, Adding/RemovingReplicas or Directories
IS_RECOVERING = 32  # not a field: the partition is RECOVERING before or after
ALL_SHAPES = 63

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
    when: int = 0  # shape bits, at least one set (PartitionChangeRecord only); 0: always


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


def change_shape(before, after, data: dict) -> int:
    """The shape bits of a PartitionChangeRecord (see SETS_*)."""
    shape = 0
    if data.get("leader", -2) != -2:
        shape = SETS_LEADER
    if data.get("isr") is not None:
        shape |= SETS_ISR
    if data.get("leaderRecoveryState", -1) != -1:
        shape |= SETS_RECOVERY_STATE
    if data.get("eligibleLeaderReplicas") is not None or data.get("lastKnownElr") is not None:
        shape |= SETS_ELR
    if (data.get("replicas") is not None or data.get("addingReplicas") is not None
            or data.get("removingReplicas") is not None or data.get("directories")):
        shape |= SETS_ASSIGNMENT
    if before.leader_recovery_state or after.leader_recovery_state:
        shape |= IS_RECOVERING
    return shape
