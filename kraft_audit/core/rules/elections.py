"""What Kafka's PartitionChangeBuilder would have written, seen from the log.

A change record does not say why it was written, so these helpers read the
signature Kafka leaves: an unclean election writes Leader and Isr=[leader]
(and RECOVERING unless already); an ELR election picks a leader from the
previous ELR; Leader -2 means "unchanged".
"""

from __future__ import annotations

from kraft_audit.core.replay.partition import NO_LEADER, NO_LEADER_CHANGE, RECOVERED, RECOVERING, Partition


def record_leader(data: dict) -> int:
    return data.get("leader", NO_LEADER_CHANGE)


def elected_leader(before: Partition, data: dict) -> int | None:
    """The broker this record made leader, when it changed the leader to a broker."""
    leader = data.get("leader", NO_LEADER_CHANGE)
    return leader if leader >= 0 and leader != before.leader else None


def completes_reassignment(before: Partition, after: Partition) -> bool:
    """The record ends a reassignment: adding or removing replicas were pending, none are now."""
    return bool(before.adding_replicas or before.removing_replicas) and not (
        after.adding_replicas or after.removing_replicas)


def cleanly_electable(before: Partition, after: Partition, leader: int) -> bool:
    """Whether `leader` was a clean candidate for this record: in the previous ISR or ELR,
    or in the ISR the record sets by completing a reassignment (Kafka completes it before
    tryElection, so the AlterPartition that puts an adding replica in the ISR can also make
    it leader)."""
    return (leader in before.isr or leader in before.elr
            or (leader in after.isr and completes_reassignment(before, after)))


def is_unclean_election(recovery_state_before: int | None, recovery_state_after: int) -> bool:
    """THE definition of an unclean election, used by every view (`check`, /metrics,
    `query unclean-elections`; docs/metrics.md): a partition record that turns an
    existing partition from RECOVERED into RECOVERING. It is Kafka's own count
    (trunk's UncleanLeaderElectionsPerSec counts records that write RECOVERING,
    KAFKA-19212), and it reads from the state alone, so a table of partition
    states answers it the same way. An election from outside the ISR and ELR that
    does not set RECOVERING is a controller bug, reported by
    kip704.unclean-election-sets-recovering, not counted here."""
    return recovery_state_before == RECOVERED and recovery_state_after == RECOVERING


def has_unclean_signature(before: Partition, after: Partition, data: dict) -> bool:
    """What the controller's election was, judged by the record (for the rules that
    predict ELR and LastKnownElr): Kafka sets RECOVERING on an unclean election (unless
    already RECOVERING); a leader that was no clean candidate can only come from an
    unclean (or last known leader) election, even when a bug forgot RECOVERING."""
    leader = data.get("leader", NO_LEADER_CHANGE)
    if leader < 0:
        return False
    if before.leader_recovery_state == RECOVERED and after.leader_recovery_state == RECOVERING:
        return True
    return leader != before.leader and not cleanly_electable(before, after, leader)


def is_elr_election(before: Partition, after: Partition, data: dict) -> bool:
    leader = elected_leader(before, data)
    return leader is not None and leader in before.elr and not has_unclean_signature(before, after, data)


def expected_elr(before: Partition, after: Partition, data: dict, min_isr: int) -> set[int]:
    """ELR per PartitionChangeBuilder (ELR on), before removing unclean-shutdown replicas:
    cleared at or above min ISR (judged on the ISR before any ELR election) and on an
    unclean election; otherwise (ELR ∪ old ISR) − new ISR."""
    if has_unclean_signature(before, after, data):
        return set()
    target_isr = () if is_elr_election(before, after, data) else after.isr
    if len(target_isr) >= min_isr:
        return set()
    return (set(before.elr) | set(before.isr)) - set(after.isr)


def expected_last_known_elr(before: Partition, after: Partition, data: dict, min_isr: int,
                            mode: str) -> list[tuple[int, ...] | set[int]]:
    """The LastKnownElr values Kafka may write (ELR on). Mode "leader" (the code) accepts
    Kafka 4.0 and trunk; mode "set" is the KIP's set of last ELR members."""
    if mode == "set":
        if (has_unclean_signature(before, after, data)
                or len(() if is_elr_election(before, after, data) else after.isr) >= min_isr):
            return [set()]
        return [(set(before.elr) | set(before.isr) | set(before.last_known_elr))
                - set(after.isr) - set(after.elr)]
    return [_lke_kafka_4_0(before, data), _lke_trunk(before, data)]


def _lke_kafka_4_0(before: Partition, data: dict) -> tuple[int, ...]:
    # PartitionChangeBuilder.maybeUpdateLastKnownLeader (4.0)
    isr = data.get("isr")
    leader = data.get("leader", NO_LEADER_CHANGE)
    if isr is not None and len(isr) == 0 and before.last_known_elr != (before.leader,):
        return (before.leader,)
    if (leader >= 0 or (before.leader != NO_LEADER and leader != NO_LEADER)) and before.last_known_elr:
        return ()
    return before.last_known_elr


def _lke_trunk(before: Partition, data: dict) -> tuple[int, ...]:
    # trunk (#20629): set when the partition becomes leaderless, cleared when it has a leader
    leader = data.get("leader", NO_LEADER_CHANGE)
    new_leader = before.leader if leader == NO_LEADER_CHANGE else leader
    if new_leader == NO_LEADER and not before.last_known_elr and before.leader >= 0:
        return (before.leader,)
    if new_leader >= 0 and before.last_known_elr:
        return ()
    return before.last_known_elr
