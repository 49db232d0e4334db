"""KRaft partition epochs (PartitionRegistration.merge, PartitionChangeBuilder).

The partition epoch bumps on every change record and the leader epoch whenever
Leader is set, so the epochs themselves are computed by replay; what can go
wrong is the record the controller chose to write.
"""

from __future__ import annotations

from kraft_audit.core.events import SNAPSHOT_SUFFIX
from kraft_audit.core.replay.partition import NO_LEADER_CHANGE
from kraft_audit.core.replay.settings import MV_3_6_IV0, MV_4_0_IV0
from kraft_audit.core.rules.elections import completes_reassignment
from kraft_audit.core.rules.registry import (BATCH_BROKERS, BATCH_RAFT_PROBLEMS, IN_REASSIGNMENT,
                                             SCOPE_CLUSTER, SETS_ASSIGNMENT, SETS_ELR, SETS_ISR,
                                             SETS_LEADER, SETS_RECOVERY_STATE, Finding, rule)

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
    if before.replicas != after.replicas:  # most changes leave them: nothing dropped
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


# (PartitionChangeRecord field, Partition slot) of the fields PartitionChangeBuilder sets only
# when the target differs from the partition (compared as lists: order counts)
_SET_WHEN_DIFFERENT = (("isr", "isr"), ("eligibleLeaderReplicas", "elr"),
                       ("lastKnownElr", "last_known_elr"), ("replicas", "replicas"),
                       ("addingReplicas", "adding_replicas"),
                       ("removingReplicas", "removing_replicas"), ("directories", "directories"))


# not run on a record that sets the ISR alone: re-setting it would change nothing at all
@rule("kraft.change-sets-new-values", on="partition", records=("PARTITION_CHANGE_RECORD",),
      when=SETS_LEADER | SETS_ELR | SETS_ASSIGNMENT | SETS_RECOVERY_STATE)
def change_sets_new_values(c):
    """PartitionChangeBuilder sets each of these fields only when its target differs from
    the partition (build, setAssignmentChanges, maybeUpdateRecordElr, tryElection); a
    record that changes nothing at all is kraft.partition-epoch-bump's."""
    before, data = c.before, c.event.data
    if before is None or before.unknown:
        return None
    same = []
    for name, slot in _SET_WHEN_DIFFERENT:
        value = data.get(name)
        if value is not None and (value or name != "directories") and tuple(value) == getattr(before, slot):
            same.append(name)
    lrs = data.get("leaderRecoveryState", -1)
    if lrs >= 0 and lrs == before.leader_recovery_state:
        same.append("leaderRecoveryState")
    if not same or (data.get("leader", NO_LEADER_CHANGE) == NO_LEADER_CHANGE
                    and _same_state(before, c.after)):
        return None
    return f"sets {', '.join(same)} to the value the partition already had"


@rule("kraft.leader-bump-has-cause", on="partition", records=("PARTITION_CHANGE_RECORD",),
      when=SETS_LEADER)
def leader_bump_has_cause(c):
    """Setting Leader to the current leader only bumps the leader epoch, which Kafka does
    for two causes (triggerLeaderEpochBumpFor{ReplicaReassignment,IsrShrink}IfNeeded): the
    record drops a replica, or it shrinks the ISR while the metadata version is before
    3.6-IV0 (or the 3.x controller migrates from ZooKeeper, which the log may not show:
    granted below 4.0-IV0)."""
    before, after = c.before, c.after
    if before is None or before.unknown or c.event.data.get("leader") != before.leader:
        return None
    if any(b not in after.replicas for b in before.replicas):
        return None
    mv = c.state.metadata_version
    if (mv is None or mv < MV_4_0_IV0) and any(b not in after.isr for b in before.isr):
        return None
    shrink = ("; an ISR shrink bumps it only before MV 3.6-IV0 (or in a ZooKeeper migration)"
              if any(b not in after.isr for b in before.isr) else "")
    return (f"leader {before.leader} re-written (leader epoch bumped to {after.leader_epoch}) "
            f"although the record drops no replica{shrink}")


# The controller writes an operation that is not atomic in batches of at most this many
# records (QuorumController.appendRecords, maxRecordsPerBatch), each chunk in one Raft batch
OPERATION_CHUNK_RECORDS = 10_000


@rule("kraft.leader-leaves-unavailable-broker", on="batch_end", records=(
    "FENCE_BROKER_RECORD", "UNREGISTER_BROKER_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD"),
      when=BATCH_BROKERS)
def leader_leaves_unavailable_broker(c):
    """A broker that this batch fenced, unregistered or put into controlled shutdown leads
    none of its partitions at the batch's end: Kafka re-elects each of them in
    the same operation with the broker unacceptable, leaderless when no one else can lead
    (ReplicationControlManager.generateLeaderAndIsrUpdates, from handleBrokerFenced,
    handleBrokerUnregistered and handleBrokerInControlledShutdown). Visits the broker's
    partitions only (the state's index by broker)."""
    state = c.state
    batch = c.batch
    # a re-registration fences too, but moves leaders only after an unclean shutdown
    # (kip966.unclean-shutdown-removed judges that)
    gone = {b for b in batch.fenced if b not in batch.registered and not state.acceptable_leader(b)}
    # Entering controlled shutdown, the registration change comes first and the leader moves
    # after it, in the same operation: judged when the batch holds the whole chunk from it
    shutting = {ch.broker_id for ch in batch.broker_changes
                if ch.acceptable_before and not ch.closes_operation and ch.broker_id not in gone
                and batch.last_offset - ch.offset + 1 < OPERATION_CHUNK_RECORDS
                and _in_controlled_shutdown(state, ch.broker_id)}
    findings = []
    for broker in sorted(gone | shutting):
        why = "entered controlled shutdown" if broker in shutting else "made it unable to lead"
        for key in sorted(state.partitions_of(broker)):
            if state.partitions[key].leader == broker:
                findings.append(Finding(f"broker {broker} still leads at the end of the batch that "
                                        f"{why}", key=key, broker_id=broker))
    return findings or None


def _in_controlled_shutdown(state, broker_id) -> bool:
    broker = state.brokers.get(broker_id)
    return broker is not None and broker.registered and not broker.fenced and broker.in_controlled_shutdown


@rule("kraft.election-safety", on="batch_end", scope=SCOPE_CLUSTER, records=("LEADER_CHANGE",),
      when=BATCH_RAFT_PROBLEMS)
def election_safety(c):
    """The event loop reads each batch's Raft epoch as the batch opens (event_loop._raft_batch);
    this reports what it found, about the batch and not its last record (which the Spark
    shell's bucket 0 may not get): the finding names its offset, so no record is its evidence."""
    batch = c.batch
    evidence = {"batch": {"base_offset": batch.base_offset, "last_offset": batch.last_offset}}
    return [Finding(problem, evidence=evidence, offset=batch.last_offset)
            for problem in batch.raft_problems] or None


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


@rule("kraft.reassignment-keeps-min-isr", on="partition", records=("PARTITION_CHANGE_RECORD",),
      when=IN_REASSIGNMENT)
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


@rule("kraft.replica-placement", on="partition", records=STATE_RECORDS, when=SETS_ASSIGNMENT)
def replica_placement(c):
    """Where a replica may be placed, whatever chose the place (the placer, a manual
    assignment, a reassignment): on a registered broker, and a broker once."""
    if SNAPSHOT_SUFFIX in c.event.source or c.after is None:
        return None  # a snapshot restates placements the log made (or did not show)
    after, state = c.after, c.state
    old = set(c.before.replicas) if c.before is not None else set()
    problems = []
    twice = sorted({b for b in after.replicas if after.replicas.count(b) > 1})
    if twice:
        problems.append(f"brokers {twice} appear more than once in the replicas {list(after.replicas)}")
    if state.brokers:  # a log that shows no broker at all (an excerpt, a model's) cannot tell
        for broker_id in dict.fromkeys((*after.replicas, *after.adding_replicas)):
            broker = state.brokers.get(broker_id)
            if broker_id not in old and not state.unknown_before_history(broker_id) and (
                    broker is None or not broker.registered):
                problems.append(f"replica {broker_id} placed on a broker that is not registered")
    return "; ".join(problems) or None


@rule("kraft.new-partition-isr-live", on="partition", records=("PARTITION_RECORD",))
def new_partition_isr_live(c):
    """A new partition has no data, so its ISR is exactly who can serve it: replicas on
    brokers that could lead when it was created (registered, unfenced, not shutting
    down), at least one of them, one of them its leader; nothing was ever in its ISR, so
    its ELR and LastKnownElr are empty."""
    if c.before is not None or SNAPSHOT_SUFFIX in c.event.source:
        return None  # a snapshot restates partitions whose birth it does not show
    after, state = c.after, c.state
    problems = []
    if not after.isr:
        problems.append("created with an empty ISR")
    elif after.leader < 0:
        problems.append(f"created without a leader although its ISR is {list(after.isr)}")
    if state.brokers:  # a log that shows no broker at all cannot tell who was live
        dead = [b for b in after.isr
                if not state.unknown_before_history(b) and not state.acceptable_leader(b)]
        if dead:
            problems.append(f"created with replicas {dead} in its ISR {list(after.isr)} although they "
                            f"were fenced, shutting down or not registered")
    if after.elr or after.last_known_elr:
        problems.append(f"created with ELR {list(after.elr)} and LastKnownElr "
                        f"{list(after.last_known_elr)}, which only a shrunk ISR fills")
    return "; ".join(problems) or None
