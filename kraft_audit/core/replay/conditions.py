"""Watched partition conditions: each is a bit, so a partition's conditions are one int.

- under_min_isr: |ISR| < effective min ISR.
- leaderless: leader == -1.
- recovering: LeaderRecoveryState == RECOVERING (an unclean recovery in progress).
- manual_election_required: leaderless with an empty ISR and an empty ELR, so no clean
  election can ever bring it back, and the topic does not allow the controller to elect
  uncleanly by itself (unclean.leader.election.enable false): an operator must run an
  unclean election (kafka-leader-election --election-type unclean), or wait for Kafka's
  last-known-leader election (itself unclean) when that broker returns.
- elr_in_use: the ELR is not empty.
- reassignment_stalled: a reassignment that could complete has not: every adding replica is
  in the ISR, it does not shrink the replica set, and completing it (the ISR less the
  removing replicas) would keep the partition at or above min ISR if it is there now. A
  correct controller completes it in the record that brings the last adding replica into
  the ISR, so any interval of it is time the cluster spends on replicas it meant to drop.
- election_overdue: leaderless past the operation that made it so although a clean candidate
  could lead (judged where the operation ends, by the EventLoop).
- unclean_election_overdue: leaderless at the end of an operation although the topic allows an
  unclean election (unclean.leader.election.enable) and a replica could lead uncleanly, no
  clean candidate being there (that is election_overdue). Kafka's controller elects with its
  unclean election wherever the topic allows it, in every operation that runs an election (a
  fence, an unfence over every leaderless partition, a controlled shutdown, an unregistration,
  a directory going offline, an AlterPartition): what it leaves to its timer
  (unclean.leader.election.interval.ms, 5 minutes; a line without that timer waits for the
  next unfence) is a config change that allows it (judged by the EventLoop too: the interval
  opens at the change, and lasting longer than the timer's bound is what past_bound counts).
- leader_imbalanced: led by another broker than its preferred replica (replicas[0]) although
  the preferred one could lead: in the ISR (or, the ISR empty, the ELR), registered,
  unfenced, not in controlled shutdown, its directory online. A controller that rebalances
  leaders (auto.leader.rebalance.enable) elects it within one
  leader.imbalance.check.interval.seconds; with rebalancing off (the setting
  auto_leader_rebalance_enable) nothing promises it and the condition never opens.
- directory_unassigned: a replica is placed in UNASSIGNED on a broker that can say where it
  put it: registered, unfenced, not in controlled shutdown, with log directories registered.
  The controller writes UNASSIGNED when it cannot pick the directory itself (the broker has
  several); the broker creates the replica in one of them and reports it
  (AssignReplicasToDirs, sent half a second after the replica is made and retried), and the
  controller writes the directory it names. A broker that cannot report is fenced within its
  session timeout, which closes the interval. An interval longer than
  directory_assignment_bound_seconds (the setting, 30 s by default) is a report the
  controller lost or never wrote, and no record of the log will say so otherwise: until it is
  written, an offline directory cannot take that replica's leadership away (the controller
  does not know the replica is there).

One condition is a delegation token's, not a partition's (its interval names the token:
token_key):

- delegation_token_expired: a token the image holds has an expiration (or max) timestamp
  before the log's time (the newest record's append time). A controller with delegation
  tokens enabled removes every such token (a RemoveDelegationTokenRecord) in its sweep, run
  every delegation.token.expiry.check.interval.ms; a renewal past the log's time closes it
  too. Judged by the EventLoop as the log's time passes each token's deadline, at the records
  that are not a partition's (every Spark bucket sees those; a NoOp comes every
  metadata.max.idle.interval.ms).
"""

from __future__ import annotations

from collections.abc import Sequence

from kraft_audit.core.replay.partition import NO_LEADER, RECOVERING, Partition
from kraft_audit.core.replay.state import UNASSIGNED_DIRECTORY_ID, ClusterState

UNDER_MIN_ISR = 1
LEADERLESS = 2
RECOVERING_BIT = 4
MANUAL_ELECTION_REQUIRED = 8
ELR_IN_USE = 16
REASSIGNMENT_STALLED = 32
ELECTION_OVERDUE = 64  # set at the end of an operation (EventLoop), never by condition_mask
LEADER_IMBALANCED = 128
UNCLEAN_ELECTION_OVERDUE = 256  # set at the end of an operation, like ELECTION_OVERDUE
DELEGATION_TOKEN_EXPIRED = 512  # a token's (token_key), set as the log's time passes its deadline
DIRECTORY_UNASSIGNED = 1024

UNDER_MIN_ISR_NAME = "under_min_isr"
UNCLEAN_ELECTION_OVERDUE_NAME = "unclean_election_overdue"
DELEGATION_TOKEN_EXPIRED_NAME = "delegation_token_expired"
DIRECTORY_UNASSIGNED_NAME = "directory_unassigned"
CONDITIONS: tuple[tuple[str, int], ...] = (
    (UNDER_MIN_ISR_NAME, UNDER_MIN_ISR),
    ("leaderless", LEADERLESS),
    ("recovering", RECOVERING_BIT),
    ("manual_election_required", MANUAL_ELECTION_REQUIRED),
    ("elr_in_use", ELR_IN_USE),
    ("reassignment_stalled", REASSIGNMENT_STALLED),
    ("election_overdue", ELECTION_OVERDUE),
    ("leader_imbalanced", LEADER_IMBALANCED),
    (UNCLEAN_ELECTION_OVERDUE_NAME, UNCLEAN_ELECTION_OVERDUE),
    (DELEGATION_TOKEN_EXPIRED_NAME, DELEGATION_TOKEN_EXPIRED),
    (DIRECTORY_UNASSIGNED_NAME, DIRECTORY_UNASSIGNED),
)

# A token's conditions are kept under a key shaped like a partition's, which no partition can
# have: a topic id is 22 base64url characters, never with a "/"
TOKEN_KEY_PREFIX = "token/"
# What a periodic task (the token sweep, the unclean election) may take past its interval: it is
# a controller event like any other and waits behind the events queued before it, and its records
# are appended after it read its clock
TASK_GRACE_S = 5
# A controller that wins an election starts its periodic tasks (the leader rebalance, the
# token sweep, the unclean election) one full interval after it becomes active, which is when
# its LeaderChange record has committed and it has replayed the log before it: after the
# record's time, by a quorum round trip and its event queue
CONTROLLER_START_GRACE_S = 5


def token_key(token_id: str) -> tuple[str, int]:
    return (TOKEN_KEY_PREFIX + token_id, -1)


def condition_mask(p: Partition, min_isr: int, state: ClusterState) -> int:
    if p.unknown:
        return _partly_known_mask(p, min_isr)
    mask = 0
    if len(p.isr) < min_isr:
        mask |= UNDER_MIN_ISR
    if p.leader == NO_LEADER:
        mask |= LEADERLESS
        if not p.isr and not p.elr and not state.unclean_election_enabled(p.topic_id):
            mask |= MANUAL_ELECTION_REQUIRED
    if p.leader_recovery_state == RECOVERING:
        mask |= RECOVERING_BIT
    if p.elr:
        mask |= ELR_IN_USE
    if (p.adding_replicas or p.removing_replicas) and reassignment_completable(p, min_isr):
        mask |= REASSIGNMENT_STALLED
    if (p.leader != NO_LEADER and p.replicas and p.leader != p.replicas[0]
            and preferred_could_lead(p, state)):
        mask |= LEADER_IMBALANCED
    if UNASSIGNED_DIRECTORY_ID in p.directories and unassigned_on_a_reporting_broker(p, state):
        mask |= DIRECTORY_UNASSIGNED
    return mask


def unassigned_on_a_reporting_broker(p: Partition, state: ClusterState) -> bool:
    """Whether a replica of the partition is placed in UNASSIGNED on a broker that can report
    its directory: registered, unfenced, not in controlled shutdown, its directories
    registered (a broker that registered none has nothing to report)."""
    for broker_id, directory in zip(p.replicas, p.directories):
        if directory == UNASSIGNED_DIRECTORY_ID:
            broker = state.brokers.get(broker_id)
            if broker is not None and broker.acceptable_leader and broker.log_dirs:
                return True
    return False


def preferred_could_lead(p: Partition, state: ClusterState) -> bool:
    """Whether Kafka's preferred election (PartitionChangeBuilder.electPreferredLeader) would
    elect the partition's first replica: in the ISR, or the ISR empty and in the ELR, and an
    acceptable leader (LeaderAcceptor: registered, unfenced, not in controlled shutdown, its
    directory for the partition online). The first replica is the preferred one during a
    reassignment too: the replica set lists the target first, and completing it keeps that
    order. Always False when the controller does not rebalance leaders (setting
    auto_leader_rebalance_enable)."""
    if not state.settings.auto_leader_rebalance_enable:
        return False
    preferred = p.replicas[0]
    if not (preferred in p.isr or (not p.isr and preferred in p.elr)):
        return False
    return _can_lead(state, preferred, p.directories[0] if p.directories else "")


def overdue_candidate(p: Partition, state: ClusterState) -> int | None:
    """The first broker Kafka's clean election could elect for a leaderless partition (an
    acceptable ISR member, then ELR member), or None. Unclean candidates are left out: only
    a topic that allows it elects them (unclean_candidate)."""
    if p.leader != NO_LEADER:
        return None
    return _first_that_can_lead(p, state, p.isr + p.elr if state.elr_enabled else p.isr)


def unclean_candidate(p: Partition, state: ClusterState) -> int | None:
    """The replica Kafka's unclean election (PartitionChangeBuilder.electAnyLeader with
    Election.UNCLEAN) would elect for a leaderless partition of a topic that allows it: the
    first replica that is an acceptable leader with its directory online, or None. Asked
    where overdue_candidate found no clean candidate (one makes it election_overdue)."""
    if (p.leader != NO_LEADER or p.unknown or not p.replicas
            or not state.unclean_election_enabled(p.topic_id)):
        return None
    return _first_that_can_lead(p, state, p.replicas)


def _first_that_can_lead(p: Partition, state: ClusterState, candidates: tuple[int, ...]) -> int | None:
    directory_of = dict(zip(p.replicas, p.directories)) if p.directories else {}
    for r in candidates:
        if r in p.replicas and _can_lead(state, r, directory_of.get(r, "")):
            return r
    return None


def _can_lead(state: ClusterState, broker_id: int, directory: str) -> bool:
    """Kafka's LeaderAcceptor: registered, unfenced, not in controlled shutdown, and its
    directory for the partition online."""
    broker = state.brokers.get(broker_id)
    return broker is not None and broker.acceptable_leader and broker.has_online_dir(directory)


def under_replicated(p: Partition) -> bool:
    """Fewer in sync than the replication factor, adding replicas of a reassignment not
    counted (Kafka's UnderReplicatedPartitions and kafka-topics --under-replicated-partitions)."""
    if p.unknown and ("isr" in p.unknown or "replicas" in p.unknown):
        return False  # not known: not claimed
    return len(p.isr) < len(p.replicas) - len(p.adding_replicas)


def reassignment_completable(p: Partition, min_isr: int) -> bool:
    """Whether completing the partition's reassignment now is safe and due: it does not
    shrink the replica set, every adding replica has caught up (is in the ISR), and the ISR
    it would leave (less the removing replicas) is not empty and not under min ISR unless
    the partition is under min ISR already."""
    adding, removing, isr = p.adding_replicas, p.removing_replicas, p.isr
    if len(adding) < len(removing) or any(r not in isr for r in adding):
        return False
    kept = sum(1 for r in isr if r not in removing)
    min_isr_after = min(min_isr, len(p.replicas) - len(removing))  # with the target's count
    return kept > 0 and not (len(isr) >= min_isr_after > kept)


def _partly_known_mask(p: Partition, min_isr: int) -> int:
    """The conditions a partition known only from change records (a partial log) shows by
    what is known of it; a condition that needs an unknown field is not claimed."""
    unknown = p.unknown
    mask = 0
    if "isr" not in unknown and len(p.isr) < min_isr:
        mask |= UNDER_MIN_ISR
    if "leader" not in unknown and p.leader == NO_LEADER:
        mask |= LEADERLESS
    if "leader_recovery_state" not in unknown and p.leader_recovery_state == RECOVERING:
        mask |= RECOVERING_BIT
    if "elr" not in unknown and p.elr:
        mask |= ELR_IN_USE
    return mask


def condition_bounds_seconds(settings) -> dict[str, int]:
    """How long a correct controller may leave a liveness condition open, where its settings
    say it: leader_imbalanced, one leader.imbalance.check.interval.seconds (the setting), when
    it rebalances leaders; delegation_token_expired, one delegation.token.expiry.check.interval.ms
    (rounded up to seconds) and TASK_GRACE_S, when it sweeps expired tokens;
    unclean_election_overdue, one unclean.leader.election.interval.ms and TASK_GRACE_S (what a
    config change that allows an unclean election waits for; an operation that runs an election
    leaves none open); directory_unassigned, the setting directory_assignment_bound_seconds (a
    broker's report and its retries)."""
    bounds = {}
    if settings.auto_leader_rebalance_enable:
        bounds["leader_imbalanced"] = settings.leader_imbalance_check_interval_seconds
    if settings.delegation_token_expiry_sweep:
        bounds[DELEGATION_TOKEN_EXPIRED_NAME] = (
            _seconds(settings.delegation_token_expiry_check_interval_ms) + TASK_GRACE_S)
    bounds[UNCLEAN_ELECTION_OVERDUE_NAME] = (
        _seconds(settings.unclean_leader_election_interval_ms) + TASK_GRACE_S)
    bounds[DIRECTORY_UNASSIGNED_NAME] = settings.directory_assignment_bound_seconds
    return bounds


def _seconds(ms: int) -> int:
    return -(-ms // 1000)  # rounded up


def past_bound(condition: str, start_ms: int, until_ms: int, bounds: dict[str, int],
               controller_changes_ms: Sequence[tuple[int, int]] = ()) -> bool:
    """Whether an interval of `condition` open from start_ms until until_ms (its end, or the
    log's newest record while it is open) lasted longer than its bound, in the log's time.
    A new active controller restarts the periodic task's timer: controller_changes_ms holds,
    for each, the newest record time before its epoch (when the controller before it was last
    seen alive) and its LeaderChange's time, in log order. Unless the controller before it was
    seen alive past the deadline, the deadline moves to one bound after the new one started."""
    bound = bounds.get(condition)
    if bound is None:
        return False
    deadline = start_ms + bound * 1000
    for last_seen, started in controller_changes_ms:
        if started > until_ms or last_seen > deadline:
            break
        deadline = max(deadline, started + (CONTROLLER_START_GRACE_S + bound) * 1000)
    return until_ms > deadline
