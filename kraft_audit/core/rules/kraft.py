"""KRaft partition epochs (PartitionRegistration.merge, PartitionChangeBuilder).

The partition epoch bumps on every change record and the leader epoch whenever
Leader is set, so the epochs themselves are computed by replay; what can go
wrong is the record the controller chose to write.
"""

from __future__ import annotations

from kraft_audit.core.replay.partition import NO_LEADER_CHANGE
from kraft_audit.core.replay.settings import MV_3_6_IV0
from kraft_audit.core.rules.elections import completes_reassignment
from kraft_audit.core.rules.registry import SETS_ASSIGNMENT, SETS_ISR, rule

SNAPSHOT_SUFFIX = ".checkpoint"
STATE_RECORDS = ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD")


def _same_state(before, after) -> bool:
    """Equal apart from the epochs."""
    return (before.replicas == after.replicas and before.isr == after.isr
            and before.elr == after.elr and before.last_known_elr == after.last_known_elr
            and before.adding_replicas == after.adding_replicas
            and before.removing_replicas == after.removing_replicas
            and before.leader == after.leader
            and before.leader_recovery_state == after.leader_recovery_state
            and before.directories == after.directories)


@rule("kraft.partition-epoch-bump", on="partition", records=STATE_RECORDS)
def partition_epoch_bump(c):
    """Every change bumps the partition epoch exactly once: Kafka writes no change record for
    a change that changes nothing, and a PartitionRecord that rewrites a known partition with
    a different state must carry a higher partition epoch."""
    before, after = c.before, c.after
    if before is None:
        return None
    if c.event.type == "PARTITION_RECORD":
        if after.partition_epoch <= before.partition_epoch and not _same_state(before, after):
            return (f"partition state changed without a partition epoch bump (still "
                    f"{after.partition_epoch})")
        return None
    if c.event.data.get("leader", NO_LEADER_CHANGE) == NO_LEADER_CHANGE and _same_state(before, after):
        return (f"change record changes nothing but bumps the partition epoch to "
                f"{after.partition_epoch}; Kafka writes no record for a no-op change")
    return None


@rule("kraft.leader-epoch-bump", on="partition", records=STATE_RECORDS,
      when=SETS_ASSIGNMENT | SETS_ISR)
def leader_epoch_bump(c):
    """Kafka bumps the leader epoch with every leader change, and re-writes the leader to bump
    it when a replica is dropped and on an ISR shrink before MV 3.6-IV0 (KAFKA-15021)."""
    before, after, data = c.before, c.after, c.event.data
    if before is None:
        return None
    if c.event.type == "PARTITION_RECORD":
        if after.leader != before.leader and after.leader_epoch <= before.leader_epoch:
            return (f"leader changed from {before.leader} to {after.leader} without a leader "
                    f"epoch bump (still {after.leader_epoch})")
        return None
    if data.get("leader", NO_LEADER_CHANGE) != NO_LEADER_CHANGE:
        return None
    dropped = [b for b in before.replicas if b not in after.replicas]
    if dropped:
        return f"replicas {dropped} dropped without a leader epoch bump"
    mv = c.state.metadata_version
    if mv is not None and mv < MV_3_6_IV0:
        shrunk = [b for b in before.isr if b not in after.isr]
        if shrunk:
            return (f"ISR shrank by {shrunk} without a leader epoch bump, which brokers before "
                    "MV 3.6-IV0 need")
    return None


@rule("kraft.epochs-monotonic", on="partition", records=("PARTITION_RECORD",))
def epochs_monotonic(c):
    before, after, event = c.before, c.after, c.event
    if before is None:
        if SNAPSHOT_SUFFIX in event.source or (after.leader_epoch, after.partition_epoch) == (0, 0):
            return None
        return (f"new partition starts at leader epoch {after.leader_epoch} and partition epoch "
                f"{after.partition_epoch}; Kafka starts both at 0")
    if after.leader_epoch < before.leader_epoch or after.partition_epoch < before.partition_epoch:
        return (f"epochs went back from {before.leader_epoch}/{before.partition_epoch} to "
                f"{after.leader_epoch}/{after.partition_epoch} (leader/partition)")
    return None


@rule("kraft.reassignment-keeps-min-isr", on="partition", records=("PARTITION_CHANGE_RECORD",))
def reassignment_keeps_min_isr(c):
    """Completing a reassignment drops the removing replicas from the ISR; that must not take
    the partition under min ISR. The record that completes it often also brings the last
    adding replica into the ISR, so the ISR it would have had is the one it sets plus the
    removing replicas that were in sync. A cancellation (back to the original replicas) is
    not judged."""
    before, after = c.before, c.after
    if not completes_reassignment(before, after):
        return None
    removing = set(before.removing_replicas)
    if sorted(after.replicas) != sorted(r for r in before.replicas if r not in removing):
        return None  # cancelled
    min_isr = c.state.effective_min_isr(after)
    dropped = sorted(removing & set(before.isr))
    if len(after.isr) < min_isr <= len(after.isr) + len(dropped):
        return (f"reassignment to {list(after.replicas)} completed with ISR {list(after.isr)}, "
                f"under min ISR {min_isr}, by dropping in-sync replicas {dropped}")
    return None
