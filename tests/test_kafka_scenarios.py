"""Kafka's own ELR test scenarios (facts section 7) replayed as metadata logs.

Each scenario is the record sequence Kafka's controller writes; the correct
sequence must audit clean, and each mutation (a controller bug) must be
caught by the expected rule at the offset of the faulty record.
"""

from __future__ import annotations

import pytest

from conftest import catalog_for_loaded_states
from kraft_audit.core.audit import Auditor

TID = "AAAAAAAAAAAAAAAAAAAAAA"
CATALOG = catalog_for_loaded_states()  # each scenario starts from a state, not a birth


def audit(log, **settings):
    auditor = Auditor(CATALOG, settings)
    out = auditor.process(log.events)
    return auditor, out


def findings(out) -> list[tuple[str, int]]:
    return sorted((v.rule_id, v.offset) for v in out.violations)


def setup(log, replicas, isr, leader=None, min_isr=None, live=None, elr=True, mv=25,
          unclean_election=False, **partition_fields):
    """Features, brokers (those not in `live` registered fenced), topic t with its config,
    and partition t-0 in the given state."""
    live = set(replicas if live is None else live)
    log.batch(*log.elr_features(elr, mv))
    log.batch(*[log.register(b, epoch=10 + b, fenced=b not in live) for b in sorted(set(replicas))])
    records = [log.topic("t", TID)]
    if min_isr is not None:
        records.append(log.config(2, "t", "min.insync.replicas", str(min_isr)))
    if unclean_election:
        records.append(log.config(2, "t", "unclean.leader.election.enable", "true"))
    records.append(log.partition(TID, 0, replicas, isr, leader, **partition_fields))
    log.batch(*records)


def test_01_isr_shrink_below_min_isr(kraft_log):
    log = kraft_log
    setup(log, [1, 2, 3, 4], [1, 2, 3, 4], min_isr=3)
    log.batch(log.change(TID, 0, isr=[1, 2], elr=[3, 4]))
    auditor, out = audit(log)
    assert findings(out) == []
    p = auditor.state.partitions[(TID, 0)]
    assert (p.isr, p.elr, p.last_known_elr, p.leader, p.leader_epoch, p.partition_epoch) == \
        ((1, 2), (3, 4), (), 1, 0, 1)


@pytest.mark.parametrize("elr,rule", [([3], "kip966.elr-matches-kafka"),
                                      ([3, 4, 1], "kip966.elr-isr-disjoint"),
                                      (None, "kip966.elr-matches-kafka")])
def test_01_mutated_elr(kraft_log, elr, rule):
    log = kraft_log
    setup(log, [1, 2, 3, 4], [1, 2, 3, 4], min_isr=3)
    fields = {"isr": [1, 2]} if elr is None else {"isr": [1, 2], "elr": elr}
    (bad,) = log.batch(log.change(TID, 0, **fields))
    _, out = audit(log)
    assert (rule, bad.offset) in findings(out)


def test_02_isr_expand_above_min_isr_clears_elr_and_lke(kraft_log):
    log = kraft_log
    setup(log, [1, 2, 3, 4], [1, 2], min_isr=3, eligibleLeaderReplicas=[3], lastKnownElr=[4])
    log.batch(log.change(TID, 0, isr=[1, 2, 3], elr=[], lke=[]))
    _, out = audit(log)
    assert findings(out) == []


def test_02_mutated_elr_kept_at_min_isr(kraft_log):
    log = kraft_log
    setup(log, [1, 2, 3, 4], [1, 2], min_isr=3, eligibleLeaderReplicas=[3], lastKnownElr=[4])
    (bad,) = log.batch(log.change(TID, 0, isr=[1, 2, 4], lke=[]))
    _, out = audit(log)
    assert ("kip966.elr-only-below-min-isr", bad.offset) in findings(out)
    assert ("kip966.elr-matches-kafka", bad.offset) in findings(out)


def test_03_isr_add_member_not_in_elr(kraft_log):
    # PCB runs this one with the KIP's LastKnownElr (useLastKnownLeaderInBalancedRecovery=false)
    log = kraft_log
    setup(log, [1, 2, 3, 4], [1], min_isr=3, eligibleLeaderReplicas=[3], lastKnownElr=[2])
    log.batch(log.change(TID, 0, isr=[1, 4]))
    _, out = audit(log, last_known_elr="set")
    assert findings(out) == []


def test_04_unclean_shutdown_replica_leaves_elr(kraft_log):
    log = kraft_log
    setup(log, [1, 2, 3, 4], [1], min_isr=3, eligibleLeaderReplicas=[2, 3])
    log.batch(log.change(TID, 0, elr=[2], lke=[3]), log.register(3, "inc-3b", epoch=99, fenced=True))
    _, out = audit(log, last_known_elr="set")
    assert findings(out) == []


def test_04_mutated_elr_member_dropped_without_unclean_shutdown(kraft_log):
    log = kraft_log
    setup(log, [1, 2, 3, 4], [1], min_isr=3, eligibleLeaderReplicas=[2, 3])
    (bad,) = log.batch(log.change(TID, 0, elr=[2], lke=[3]))
    _, out = audit(log, last_known_elr="set")
    assert ("kip966.elr-matches-kafka", bad.offset) in findings(out)


def test_05_elr_member_elected(kraft_log):
    log = kraft_log
    setup(log, [1, 2, 3, 4], [1], min_isr=3, eligibleLeaderReplicas=[3])
    log.batch(log.change(TID, 0, leader=3, isr=[3], elr=[1]), log.fence(1))
    auditor, out = audit(log)
    assert findings(out) == []
    p = auditor.state.partitions[(TID, 0)]
    assert (p.leader, p.isr, p.elr, p.leader_recovery_state, p.leader_epoch) == (3, (3,), (1,), 0, 1)
    assert auditor.gauges().elr_elections_total == 1


def test_05_mutated_fenced_elr_member_elected(kraft_log):
    log = kraft_log
    setup(log, [1, 2, 3, 4], [1], min_isr=3, eligibleLeaderReplicas=[3], live=[1, 2, 4])
    bad, _ = log.batch(log.change(TID, 0, leader=3, isr=[3], elr=[1]), log.fence(1))
    _, out = audit(log)
    assert ("kip966.leader-registered-unfenced", bad.offset) in findings(out)


def test_06_isr_shrinks_to_zero(kraft_log):
    log = kraft_log
    setup(log, [1, 2, 3, 4], [1, 2, 3, 4], min_isr=3, live=[1])
    log.batch(log.change(TID, 0, leader=-1, isr=[], elr=[1, 2, 3, 4], lke=[1]), log.fence(1))
    auditor, out = audit(log)
    assert findings(out) == []
    open_now = {c.condition for c in auditor.open_conditions()}
    assert open_now == {"under_min_isr", "leaderless", "elr_in_use"}


def test_06_mutated_isr_emptied_without_elr(kraft_log):
    log = kraft_log
    setup(log, [1, 2, 3, 4], [1, 2, 3, 4], min_isr=3, live=[1], elr=False)
    bad, _ = log.batch(log.change(TID, 0, leader=-1, isr=[]), log.fence(1))
    _, out = audit(log)
    assert ("kip966.empty-isr-requires-elr", bad.offset) in findings(out)


def test_07_last_known_leader_elected(kraft_log):
    log = kraft_log
    setup(log, [1, 2, 3], [], leader=-1, min_isr=2, live=[1], lastKnownElr=[1])
    log.batch(log.unfence(1), log.change(TID, 0, leader=1, isr=[1], lrs=1, lke=[]))
    auditor, out = audit(log)
    assert findings(out) == []
    assert auditor.gauges().unclean_recovery == 1
    assert auditor.gauges().unclean_elections_total == 1


def test_07_mutated_missed_recovering(kraft_log):
    log = kraft_log
    setup(log, [1, 2, 3], [], leader=-1, min_isr=2, live=[1], lastKnownElr=[1])
    _, bad = log.batch(log.unfence(1), log.change(TID, 0, leader=1, isr=[1], lke=[]))
    _, out = audit(log)
    assert ("kip704.unclean-election-sets-recovering", bad.offset) in findings(out)


def test_07_mutated_other_broker_before_last_known_leader(kraft_log):
    log = kraft_log
    setup(log, [1, 2, 3], [], leader=-1, min_isr=2, live=[1, 2], lastKnownElr=[1])
    (bad,) = log.batch(log.change(TID, 0, leader=2, isr=[2], lrs=1, lke=[]))
    _, out = audit(log)
    assert ("kip966.election-order", bad.offset) in findings(out)


def test_08_last_known_leader_with_unacceptable_elr_writes_nothing(kraft_log):
    log = kraft_log
    setup(log, [1, 2, 3], [], leader=-1, min_isr=2, live=[1], eligibleLeaderReplicas=[3],
          lastKnownElr=[1])
    log.batch(log.unfence(2))
    _, out = audit(log)
    assert findings(out) == []


def test_09a_unclean_election_sets_recovering(kraft_log):
    # PCB gives the builder target ISR [3] with 3 unacceptable; in a log that is a partition
    # whose ISR is down to [3] when 3 is fenced (without ELR the ISR keeps its last member).
    log = kraft_log
    setup(log, [2, 1, 3], [3], leader=3, min_isr=2, elr=False, unclean_election=True)
    log.batch(log.change(TID, 0, leader=2, isr=[2], lrs=1), log.fence(3))
    auditor, out = audit(log)
    assert findings(out) == []
    assert auditor.state.partitions[(TID, 0)].leader_recovery_state == 1


def test_09a_mutated_recovering_on_a_clean_election(kraft_log):
    log = kraft_log
    setup(log, [2, 1, 3], [3, 2], leader=3, min_isr=2, elr=False, unclean_election=True)
    bad, _ = log.batch(log.change(TID, 0, leader=2, isr=[2], lrs=1), log.fence(3))
    _, out = audit(log)
    assert ("kip704.recovering-only-by-unclean-election", bad.offset) in findings(out)


def test_05_mutated_recovering_on_an_elr_election(kraft_log):
    log = kraft_log
    setup(log, [1, 2, 3, 4], [1], min_isr=3, eligibleLeaderReplicas=[3])
    bad, _ = log.batch(log.change(TID, 0, leader=3, isr=[3], elr=[1], lrs=1), log.fence(1))
    _, out = audit(log)
    assert ("kip704.recovering-only-by-unclean-election", bad.offset) in findings(out)


def test_09b_unclean_election_clears_elr(kraft_log):
    log = kraft_log
    setup(log, [1, 2, 3], [], leader=-1, min_isr=2, live=[1], eligibleLeaderReplicas=[3],
          lastKnownElr=[2], unclean_election=True)
    log.batch(log.change(TID, 0, leader=1, isr=[1], lrs=1, elr=[], lke=[]))
    _, out = audit(log)
    assert findings(out) == []


def test_09b_mutated_elr_kept_after_unclean_election(kraft_log):
    log = kraft_log
    setup(log, [1, 2, 3], [], leader=-1, min_isr=2, live=[1], eligibleLeaderReplicas=[3],
          lastKnownElr=[2], unclean_election=True)
    (bad,) = log.batch(log.change(TID, 0, leader=1, isr=[1], lrs=1, lke=[]))
    _, out = audit(log)
    assert ("kip966.elr-matches-kafka", bad.offset) in findings(out)


def test_10_leader_change_keeps_recovering(kraft_log):
    log = kraft_log
    setup(log, [1, 2, 3], [1], min_isr=1, elr=False, leaderRecoveryState=1)
    log.batch(log.change(TID, 0, leader=-1), log.fence(1))
    log.batch(log.unfence(1), log.change(TID, 0, leader=1))
    auditor, out = audit(log)
    assert findings(out) == []
    p = auditor.state.partitions[(TID, 0)]
    assert (p.leader, p.leader_recovery_state, p.leader_epoch, p.partition_epoch) == (1, 1, 2, 2)


def test_10_mutated_leader_change_ends_recovery(kraft_log):
    log = kraft_log
    setup(log, [1, 2, 3], [1], min_isr=1, elr=False, leaderRecoveryState=1)
    log.batch(log.change(TID, 0, leader=-1), log.fence(1))
    _, bad = log.batch(log.unfence(1), log.change(TID, 0, leader=1, lrs=0))
    _, out = audit(log)
    assert ("kip704.leader-change-keeps-recovering", bad.offset) in findings(out)


def test_10_mutated_isr_grows_while_recovering(kraft_log):
    log = kraft_log
    setup(log, [1, 2, 3], [1], min_isr=1, elr=False, leaderRecoveryState=1)
    (bad,) = log.batch(log.change(TID, 0, isr=[1, 2]))
    _, out = audit(log)
    assert ("kip704.no-isr-growth-while-recovering", bad.offset) in findings(out)
    assert ("kip704.recovering-isr-is-leader", bad.offset) in findings(out)


@pytest.mark.parametrize("mv,bumps", [(9, True), (12, False)])
def test_11_isr_shrink_leader_epoch_bump_only_before_3_6(kraft_log, mv, bumps):
    log = kraft_log
    setup(log, [2, 1, 3], [2, 1, 3], min_isr=1, elr=False, mv=mv)
    fields = {"isr": [2, 1], "leader": 2} if bumps else {"isr": [2, 1]}
    log.batch(log.change(TID, 0, **fields))
    log.batch(log.change(TID, 0, isr=[2, 1, 3]))  # expansion never bumps
    log.batch(log.change(TID, 0, replicas=[2, 1], isr=[2, 1], leader=2))  # drop: always bumps
    auditor, out = audit(log)
    assert findings(out) == []
    assert auditor.state.partitions[(TID, 0)].leader_epoch == (2 if bumps else 1)


def test_11_mutated_missing_leader_epoch_bumps(kraft_log):
    log = kraft_log
    setup(log, [2, 1, 3], [2, 1, 3], min_isr=1, elr=False, mv=9)
    (shrink,) = log.batch(log.change(TID, 0, isr=[2, 1]))
    (drop,) = log.batch(log.change(TID, 0, replicas=[2, 1]))
    _, out = audit(log)
    assert findings(out) == [("kraft.leader-epoch-bump", shrink.offset),
                             ("kraft.leader-epoch-bump", drop.offset)]


def test_12_shrink_and_expand_isr(kraft_log):
    log = kraft_log
    setup(log, [0, 1, 2], [0, 1, 2], min_isr=2)
    log.batch(log.change(TID, 0, isr=[0], elr=[1, 2]))
    log.batch(log.change(TID, 0, isr=[0, 1], elr=[]))
    auditor, out = audit(log)
    assert findings(out) == []
    closed = [c for c in out.conditions if c.condition == "elr_in_use" and c.end_offset is not None]
    assert len(closed) == 1


def fence_batch(log, broker, changes):
    return log.batch(*changes, log.fence(broker))


def test_13_broker_fence(kraft_log):
    log = kraft_log
    setup(log, [0, 1, 2, 3], [0, 1, 2, 3], min_isr=3)
    fence_batch(log, 2, [log.change(TID, 0, isr=[0, 1, 3])])
    fence_batch(log, 3, [log.change(TID, 0, isr=[0, 1], elr=[3])])
    fence_batch(log, 1, [log.change(TID, 0, isr=[0], elr=[1, 3])])
    log.batch(log.unfence(1))
    log.batch(log.unfence(2))
    log.batch(log.unfence(3))
    auditor, out = audit(log)
    assert findings(out) == []
    assert auditor.state.partitions[(TID, 0)].elr == (1, 3)


def test_13_mutated_fenced_broker_left_in_isr(kraft_log):
    log = kraft_log
    setup(log, [0, 1, 2, 3], [0, 1, 2, 3], min_isr=3)
    _, fence = log.batch(log.change(TID, 0, elr=[]), log.fence(2))
    _, out = audit(log)
    assert ("kip966.fenced-out-of-isr", fence.offset) in findings(out)


def test_14_clean_election_from_elr(kraft_log):
    log = kraft_log
    setup(log, [0, 1, 2, 3], [0, 1, 2, 3], min_isr=3)
    fence_batch(log, 1, [log.change(TID, 0, isr=[0, 2, 3])])
    fence_batch(log, 2, [log.change(TID, 0, isr=[0, 3], elr=[2])])
    fence_batch(log, 3, [log.change(TID, 0, isr=[0], elr=[2, 3])])
    log.batch(log.unfence(2))
    fence_batch(log, 0, [log.change(TID, 0, leader=2, isr=[2], elr=[0, 3])])
    auditor, out = audit(log)
    assert findings(out) == []
    p = auditor.state.partitions[(TID, 0)]
    assert (p.leader, p.isr, p.elr) == (2, (2,), (0, 3))


def test_14_mutated_unclean_election_despite_live_elr_member(kraft_log):
    log = kraft_log
    setup(log, [0, 1, 2, 3], [0], min_isr=3, live=[0, 1, 2], eligibleLeaderReplicas=[2, 3])
    bad, _ = fence_batch(log, 0, [log.change(TID, 0, leader=1, isr=[1], lrs=1, elr=[])])
    _, out = audit(log)
    assert ("kip966.election-order", bad.offset) in findings(out)


def test_15_unclean_shutdowns(kraft_log):
    log = kraft_log
    setup(log, [0, 1, 2, 3], [0], min_isr=3, live=[0, 1], eligibleLeaderReplicas=[2, 3])
    log.batch(log.change(TID, 0, elr=[2]), log.register(3, "inc-3b", epoch=50, fenced=True))
    log.batch(log.change(TID, 0, leader=-1, isr=[], lke=[0]),
              log.register(0, "inc-0b", epoch=60, fenced=True))
    auditor, out = audit(log)
    assert findings(out) == []
    p = auditor.state.partitions[(TID, 0)]
    assert (p.leader, p.isr, p.elr, p.last_known_elr) == (-1, (), (2,), (0,))


def test_15_mutated_unclean_shutdown_broker_left_in_elr(kraft_log):
    log = kraft_log
    setup(log, [0, 1, 2, 3], [0], min_isr=3, live=[0, 1], eligibleLeaderReplicas=[2, 3])
    _, reg = log.batch(log.change(TID, 0, lke=[]), log.register(3, "inc-3b", epoch=50, fenced=True))
    log.registration(3, "inc-3b", previous_epoch=-1)
    _, out = audit(log)
    assert ("kip966.unclean-shutdown-removed", reg.offset) in findings(out)


def test_16_clean_shutdown_empties_isr(kraft_log):
    log = kraft_log
    setup(log, [0, 1, 2], [0], min_isr=3, live=[0], eligibleLeaderReplicas=[1, 2])
    # the heartbeat asking to shut down: the registration change, then the partition change
    # that drops 0 from the ISR and the leadership, in one operation; fenced once it leads nothing
    log.batch(log.controlled_shutdown(0), log.change(TID, 0, leader=-1, isr=[], elr=[0, 1, 2], lke=[0]))
    log.batch(log.fence(0))
    auditor, out = audit(log)
    assert findings(out) == []
    assert auditor.gauges().manual_election_required == 0


def test_16_mutated_controlled_shutdown_keeps_the_leadership(kraft_log):
    log = kraft_log
    setup(log, [0, 1, 2], [0], min_isr=3, live=[0], eligibleLeaderReplicas=[1, 2])
    (shutdown,) = log.batch(log.controlled_shutdown(0))
    _, out = audit(log)
    assert findings(out) == [("kraft.leader-leaves-unavailable-broker", shutdown.offset)]


def test_17_elr_cleared_on_min_isr_update(kraft_log):
    log = kraft_log
    setup(log, [1, 2, 4], [1, 2, 4], min_isr=2)
    fence_batch(log, 4, [log.change(TID, 0, isr=[1, 2])])
    fence_batch(log, 1, [log.change(TID, 0, leader=2, isr=[2], elr=[1])])
    log.batch(log.config(2, "t", "min.insync.replicas", "1"), log.clear_elr("t"))
    auditor, out = audit(log)
    assert findings(out) == []
    p = auditor.state.partitions[(TID, 0)]
    assert (p.elr, p.partition_epoch) == ((), 3)


def test_17_mutated_no_clear_elr_after_cluster_min_isr_change(kraft_log):
    log = kraft_log
    setup(log, [1, 2, 4], [1, 2, 4], min_isr=2)
    fence_batch(log, 4, [log.change(TID, 0, isr=[1, 2])])
    fence_batch(log, 1, [log.change(TID, 0, leader=2, isr=[2], elr=[1])])
    (bad,) = log.batch(log.config(4, "", "min.insync.replicas", "3"))
    _, out = audit(log)
    assert findings(out) == [("kip966.elr-cleared-on-min-isr-change", bad.offset)]


def test_18_effective_min_isr_is_capped_by_replication_factor(kraft_log):
    log = kraft_log
    setup(log, [1, 2, 3], [1, 2, 3], min_isr=5)
    fence_batch(log, 3, [log.change(TID, 0, isr=[1, 2], elr=[3])])
    auditor, out = audit(log)
    assert findings(out) == []
    p = auditor.state.partitions[(TID, 0)]
    assert auditor.state.effective_min_isr(p) == 3


def test_19_unclean_election_for_leaderless_partition_without_elr(kraft_log):
    log = kraft_log
    setup(log, [4, 2, 3], [4], leader=-1, live=[], elr=False, unclean_election=True)
    log.batch(log.unfence(2), log.change(TID, 0, leader=2, isr=[2], lrs=1))
    auditor, out = audit(log)
    assert findings(out) == []
    assert auditor.state.partitions[(TID, 0)].leader == 2


def test_19_without_unclean_election_nothing_changes(kraft_log):
    log = kraft_log
    setup(log, [4, 2, 3], [4], leader=-1, live=[], elr=False)
    log.batch(log.unfence(2))
    auditor, out = audit(log)
    assert findings(out) == []
    assert auditor.gauges().leaderless == 1


def test_06_mutated_elr_wiped_with_the_isr(kraft_log):
    log = kraft_log
    setup(log, [1, 2, 3, 4], [1, 2, 3, 4], min_isr=3, live=[1])
    bad, _ = log.batch(log.change(TID, 0, leader=-1, isr=[], elr=[], lke=[1]), log.fence(1))
    _, out = audit(log)
    assert ("kip966.empty-isr-requires-elr", bad.offset) in findings(out)
    assert ("kip966.elr-matches-kafka", bad.offset) in findings(out)
