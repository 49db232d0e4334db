"""The controller's partition state machine, ported from Kafka's
`PartitionChangeBuilder.build()` and `PartitionRegistration.merge()`.

Pure functions over an immutable `PartitionState`: `build_change` returns the
fields a PartitionChangeRecord would carry (only the changed ones, camelCase,
as Kafka's schema names them) or None when Kafka would write nothing;
`apply_change` is the replay of such a record. The order of operations is
Kafka's: complete reassignment, populate target ELR, elect, bump the leader
epoch for a reassignment, write ELR, write ISR, bump for an ISR shrink on old
metadata versions, last known leader, replica changes, recovery state.
"""

from __future__ import annotations

from typing import Callable, Iterable, NamedTuple

from kraft_audit.sim.versions import MV_3_2_IV0, MV_3_6_IV0

NO_LEADER = -1
NO_LEADER_CHANGE = -2
RECOVERED = 0
RECOVERING = 1
NO_RECOVERY_CHANGE = -1

# Election types (PartitionChangeBuilder.Election).
PREFERRED = "preferred"
ONLINE = "online"
UNCLEAN = "unclean"

_EMPTY: tuple[int, ...] = ()


class PartitionState(NamedTuple):
    """One partition as the controller holds it: a tuple, so a million of them
    stay small (replica tuples are interned by the model)."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    elr: tuple[int, ...] = _EMPTY
    last_known_elr: tuple[int, ...] = _EMPTY
    leader: int = NO_LEADER
    leader_recovery_state: int = RECOVERED
    leader_epoch: int = 0
    partition_epoch: int = 0
    removing: tuple[int, ...] = _EMPTY
    adding: tuple[int, ...] = _EMPTY


def new_partition(replicas: Iterable[int], is_active: Callable[[int], bool]) -> PartitionState:
    """A new partition: ISR = the active replicas, leader = ISR[0], epochs 0
    (ReplicationControlManager.createTopic / PartitionRegistration)."""
    replicas = tuple(replicas)
    isr = tuple(r for r in replicas if is_active(r))
    return PartitionState(replicas, isr, leader=isr[0] if isr else NO_LEADER)


def java_hash_set_order(values: Iterable[int]) -> list[int]:
    """The iteration order of a java.util.HashSet<Integer> built by adding
    `values` in order: bucket (h ^ h>>>16) & (capacity-1), insertion order
    within a bucket, capacity 16 doubling past a 0.75 load. Kafka's ELR lists
    come out of such a set, so this is their order on the wire."""
    seen: list[int] = []
    for v in values:
        if v not in seen:
            seen.append(v)
    capacity = 16
    while len(seen) > capacity * 0.75:
        capacity *= 2

    def bucket(v: int) -> int:
        h = v & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(seen, key=bucket)  # sorted() is stable: insertion order within a bucket


def _contains_all(container: Iterable[int], items: Iterable[int]) -> bool:
    have = set(container)
    return all(i in have for i in items)


def build_change(
    p: PartitionState,
    *,
    is_acceptable: Callable[[int], bool],
    min_isr: int,
    elr_enabled: bool,
    metadata_version: int,
    target_isr: Iterable[int] | None = None,
    target_replicas: Iterable[int] | None = None,
    target_removing: Iterable[int] | None = None,
    target_adding: Iterable[int] | None = None,
    target_recovery_state: int | None = None,
    election: str = ONLINE,
    unclean_shutdown_replicas: Iterable[int] = (),
    use_last_known_leader: bool = True,
) -> dict | None:
    """The changed fields Kafka's PartitionChangeBuilder would write, or None.

    Keys are PartitionChangeRecord's JSON names: isr, leader, replicas,
    removingReplicas, addingReplicas, leaderRecoveryState,
    eligibleLeaderReplicas, lastKnownElr (directories are the caller's: they
    follow `replicas`)."""
    t_isr = list(p.isr if target_isr is None else target_isr)
    t_replicas = list(p.replicas if target_replicas is None else target_replicas)
    t_removing = list(p.removing if target_removing is None else target_removing)
    t_adding = list(p.adding if target_adding is None else target_adding)
    t_elr = list(p.elr)
    t_lke = list(p.last_known_elr)
    t_lrs = p.leader_recovery_state if target_recovery_state is None else target_recovery_state
    unclean_shutdown = set(unclean_shutdown_replicas)
    rec: dict = {}

    # completeReassignmentIfNeeded (PartitionReassignmentReplicas.maybeCompleteReassignment):
    # once the adding replicas are in sync, and either every target replica is or the
    # replica set does not shrink; never into an ISR under min ISR from one at or above it
    if t_removing or t_adding:
        new_isr, new_replicas = t_isr, t_replicas
        if t_removing:
            new_isr = [r for r in t_isr if r not in t_removing]
            new_replicas = [r for r in t_replicas if r not in t_removing]
        caught_up = new_isr and _contains_all(new_isr, t_adding)
        due = _contains_all(new_isr, new_replicas) or len(t_adding) >= len(t_removing)
        min_isr_after = min(min_isr, len(new_replicas))  # the effective min ISR it would have
        if caught_up and due and not len(new_isr) < min_isr_after <= len(t_isr):
            t_isr, t_replicas, t_removing, t_adding = new_isr, new_replicas, [], []

    # maybePopulateTargetElr
    if elr_enabled:
        if len(t_isr) >= min_isr:
            t_elr, t_lke = [], []
        else:
            target = set(t_isr)
            candidates = java_hash_set_order([*t_elr, *p.isr])
            t_elr = [r for r in candidates if r not in target and r not in unclean_shutdown]
            candidates = java_hash_set_order([*candidates, *t_lke])
            t_lke = [r for r in candidates if r not in target and r not in t_elr]

    # tryElection
    node, unclean = _elect(
        p, t_isr, t_elr, t_replicas, is_acceptable, election, elr_enabled, use_last_known_leader
    )
    if node != p.leader:
        if node in t_elr:
            t_isr = [node]
            t_elr = [r for r in t_elr if r != node]
        rec["leader"] = node
        if unclean:
            rec["isr"] = [node]
            if p.leader_recovery_state != RECOVERING and metadata_version >= MV_3_2_IV0:
                rec["leaderRecoveryState"] = RECOVERING

    # triggerLeaderEpochBumpForReplicaReassignmentIfNeeded
    if "leader" not in rec and not _contains_all(t_replicas, p.replicas):
        rec["leader"] = p.leader

    # maybeUpdateRecordElr
    if "isr" in rec or not elr_enabled:
        t_elr, t_lke = [], []
    if t_elr != list(p.elr):
        rec["eligibleLeaderReplicas"] = t_elr
    if not use_last_known_leader and t_lke != list(p.last_known_elr):
        rec["lastKnownElr"] = t_lke

    # the ISR: empty only when ELR is on
    if "isr" not in rec and (t_isr or elr_enabled) and t_isr != list(p.isr):
        rec["isr"] = t_isr

    # triggerLeaderEpochBumpForIsrShrinkIfNeeded (KAFKA-15021, MV < 3.6)
    if (
        metadata_version < MV_3_6_IV0
        and "leader" not in rec
        and "isr" in rec
        and not _contains_all(rec["isr"], p.isr)
    ):
        rec["leader"] = p.leader

    # maybeUpdateLastKnownLeader
    if use_last_known_leader and elr_enabled:
        record_leader = rec.get("leader", NO_LEADER_CHANGE)
        if (
            "isr" in rec
            and not rec["isr"]
            and (len(p.last_known_elr) != 1 or p.last_known_elr[0] != p.leader)
        ):
            rec["lastKnownElr"] = [p.leader]
        elif (
            record_leader >= 0 or (p.leader != NO_LEADER and record_leader != NO_LEADER)
        ) and p.last_known_elr:
            rec["lastKnownElr"] = []

    # setAssignmentChanges
    if t_replicas and t_replicas != list(p.replicas):
        rec["replicas"] = t_replicas
    if t_removing != list(p.removing):
        rec["removingReplicas"] = t_removing
    if t_adding != list(p.adding):
        rec["addingReplicas"] = t_adding

    if t_lrs != p.leader_recovery_state:
        rec["leaderRecoveryState"] = t_lrs

    return rec or None


def _elect(
    p, t_isr, t_elr, t_replicas, is_acceptable, election, elr_enabled, use_last_known_leader
):
    """(leader, unclean) as PartitionChangeBuilder.electLeader chooses them."""

    def valid(r: int) -> bool:
        return (r in t_isr or (not t_isr and r in t_elr)) and is_acceptable(r)

    def last_known_leader_electable() -> bool:
        # Kafka 4.0 elects it even when it is not acceptable; trunk checks
        # (KAFKA-19522). The simulator follows trunk: a fenced leader is a bug.
        return (
            elr_enabled
            and use_last_known_leader
            and not t_elr
            and not t_isr
            and len(p.last_known_elr) == 1
            and is_acceptable(p.last_known_elr[0])
        )

    if election == PREFERRED:
        if t_replicas and valid(t_replicas[0]):
            return t_replicas[0], False
        if valid(p.leader):
            return p.leader, False
        for r in t_replicas[1:]:
            if valid(r):
                return r, False
        if last_known_leader_electable():
            return p.last_known_elr[0], True
        return NO_LEADER, False

    if valid(p.leader):
        return p.leader, False
    for r in t_replicas:
        if valid(r):
            return r, False
    if last_known_leader_electable():
        return p.last_known_elr[0], True
    if election == UNCLEAN:
        for r in t_replicas:
            if is_acceptable(r):
                return r, True
    return NO_LEADER, False


def apply_change(p: PartitionState, change: dict) -> PartitionState:
    """Replay of a PartitionChangeRecord (PartitionRegistration.merge): every
    record bumps the partition epoch; setting Leader bumps the leader epoch."""
    get = change.get
    leader = get("leader", NO_LEADER_CHANGE)
    lrs = get("leaderRecoveryState", NO_RECOVERY_CHANGE)
    return _make(
        (  # positional: this runs millions of times
            _tuple_or(get("replicas"), p.replicas),
            _tuple_or(get("isr"), p.isr),
            _tuple_or(get("eligibleLeaderReplicas"), p.elr),
            _tuple_or(get("lastKnownElr"), p.last_known_elr),
            p.leader if leader == NO_LEADER_CHANGE else leader,
            p.leader_recovery_state if lrs == NO_RECOVERY_CHANGE else lrs,
            p.leader_epoch if leader == NO_LEADER_CHANGE else p.leader_epoch + 1,
            p.partition_epoch + 1,
            _tuple_or(get("removingReplicas"), p.removing),
            _tuple_or(get("addingReplicas"), p.adding),
        )
    )


_make = PartitionState._make


def _tuple_or(value, default: tuple[int, ...]) -> tuple[int, ...]:
    return default if value is None else tuple(value)


def clear_elr(p: PartitionState) -> PartitionState:
    """Replay of ClearElrRecord for one partition: the epoch moves only if
    something was cleared."""
    if not p.elr and not p.last_known_elr:
        return p
    return p._replace(elr=_EMPTY, last_known_elr=_EMPTY, partition_epoch=p.partition_epoch + 1)
