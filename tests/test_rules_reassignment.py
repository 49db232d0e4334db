"""Reassignment completion as Kafka's PartitionChangeBuilder does it: the rules must not
report Kafka's own behaviour (the leader elected from the completed ISR, the leader epoch
bump alongside the end of a recovery, the effective min ISR taken before the change),
and must still report what Kafka never writes."""

from __future__ import annotations

import collections

from kraft_audit.core.audit import Auditor
from kraft_audit.core.rules import load_catalog
from kraft_audit.sim.output import read_output
from kraft_audit.sim.runner import simulate
from kraft_audit.sim.scenario import parse_scenario

TID = "BBBBBBBBBBBBBBBBBBBBBB"
CATALOG = load_catalog()


def simulated(tmp_path, scenario: str):
    """(partition change records of the topic, audit output) of a YAML scenario."""
    simulate(parse_scenario(scenario), tmp_path, seed=0)
    events = list(read_output(tmp_path))
    out = Auditor(CATALOG).process(events)
    changes = [e for e in events if e.type == "PARTITION_CHANGE_RECORD"]
    return changes, out


def found(out):
    return collections.Counter((v.rule_id, v.offset) for v in out.violations)


def hits(out, rule_id):
    return [v.offset for v in out.violations if v.rule_id == rule_id]


def test_leader_elected_from_the_isr_that_completes_the_reassignment(tmp_path):
    changes, out = simulated(tmp_path, """
name: completion-elects-an-added-replica
cluster: {brokers: 5, metadata_version: 4.0-IV3, elr: true, min_insync_replicas: 2}
topics:
  - {name: t, assignment: [[3, 5, 1]], configs: {min.insync.replicas: 2}}
steps:
  - reassign: {topic: t, partition: 0, replicas: [4, 5, 1]}
  - catch_up
""")
    done = changes[-1].data
    # the AlterPartition that adds 4 completes the reassignment; 4 leads (first in replica order)
    assert (done["isr"], done["leader"], done["replicas"]) == ([5, 1, 4], 4, [4, 5, 1])
    assert not out.violations, found(out)


def test_recovery_finished_in_the_record_that_completes_the_reassignment(tmp_path):
    changes, out = simulated(tmp_path, """
name: recovery-ends-with-the-reassignment
cluster: {brokers: 3, metadata_version: 4.0-IV3, elr: false, min_insync_replicas: 1}
topics:
  - {name: t, assignment: [[1, 2]], configs: {unclean.leader.election.enable: "true"}}
steps:
  - controlled_shutdown: 3
  - reassign: {topic: t, partition: 0, replicas: [3]}
  - crash: 1
  - heartbeat_timeout: 1
  - crash: 2
  - heartbeat_timeout: 2
  - restart: 3
  - finish_recovery
""")
    elected, done = changes[-2].data, changes[-1].data
    assert (elected["leader"], elected["leaderRecoveryState"]) == (3, 1)  # unclean election of 3
    # 3 reports RECOVERED; the same record completes the reassignment and bumps 3's epoch
    assert (done["leader"], done["leaderRecoveryState"], done["replicas"]) == (3, 0, [3])
    assert not out.violations, found(out)


def test_effective_min_isr_of_a_completion_is_the_one_before_it(tmp_path):
    changes, out = simulated(tmp_path, """
name: partition-0-completes-below-min-isr
cluster: {brokers: 4, metadata_version: 4.0-IV3, elr: true, min_insync_replicas: 2}
topics:
  - {name: t, assignment: [[1, 2], [1, 2]], configs: {min.insync.replicas: 3}}
steps:
  - reassign: {topic: t, partition: 0, replicas: [3, 4]}
  - catch_up
""")
    start, done = changes[0], changes[-1]
    # built with min ISR min(3, 4 replicas) = 3: ISR [3, 4] is below it, so the ELR is
    # populated, with the removed replicas (Kafka's gap: only subset-of-replicas reports it)
    assert (done.data["isr"], done.data["eligibleLeaderReplicas"]) == ([3, 4], [1, 2])
    assert found(out) == {("kip966.subset-of-replicas", done.offset): 1}
    # conditions follow the state after: partition 1 is under min ISR while partition 0's
    # longer replica list raises the topic's effective min ISR to 3
    p1 = [(c.start_offset, c.end_offset) for c in out.conditions
          if c.partition == 1 and c.condition == "under_min_isr"]
    assert p1 == [(start.offset, None), (start.offset, done.offset)]


# --- hand-built records: what a completion does not excuse

def reassigning(log, **partition):
    """Replicas [1, 2, 3] led by 1, moving to [4, 2, 3] (1 removing, 4 adding)."""
    log.batch(*log.elr_features(False))
    log.batch(*[log.register(b, epoch=b) for b in (1, 2, 3, 4)])
    log.batch(log.topic("t", TID), log.partition(TID, 0, [1, 2, 3], **partition))
    log.batch(log.change(TID, 0, replicas=[4, 2, 3, 1], removingReplicas=[1], addingReplicas=[4]))


def test_completion_electing_an_added_replica_is_clean(kraft_log):
    reassigning(kraft_log)
    kraft_log.batch(kraft_log.change(TID, 0, isr=[2, 3, 4], leader=4, replicas=[4, 2, 3],
                                     removingReplicas=[], addingReplicas=[]))
    out = Auditor(CATALOG).process(kraft_log.events)
    assert not out.violations, found(out)


def test_leader_outside_the_completed_isr_is_still_unclean(kraft_log):
    reassigning(kraft_log)
    bad = kraft_log.batch(kraft_log.change(TID, 0, isr=[2, 3], leader=4, replicas=[4, 2, 3],
                                           removingReplicas=[], addingReplicas=[]))[0]
    out = Auditor(CATALOG).process(kraft_log.events)
    assert hits(out, "kip704.unclean-election-sets-recovering") == [bad.offset]
    assert hits(out, "kip966.election-order") == [bad.offset]


def test_adding_replica_led_before_completion_is_unclean(kraft_log):
    reassigning(kraft_log)
    bad = kraft_log.batch(kraft_log.change(TID, 0, isr=[4], leader=4))[0]  # still reassigning
    out = Auditor(CATALOG).process(kraft_log.events)
    assert hits(out, "kip704.unclean-election-sets-recovering") == [bad.offset]


def recovering(log):
    log.batch(*log.elr_features(False))
    log.batch(*[log.register(b, epoch=b) for b in (1, 2, 3)])
    log.batch(log.topic("t", TID), log.partition(TID, 0, [1, 2, 3], [1], leaderRecoveryState=1))


def test_recovered_with_the_same_leader_rewritten_is_no_leader_change(kraft_log):
    recovering(kraft_log)
    kraft_log.batch(kraft_log.change(TID, 0, leader=1, lrs=0))
    out = Auditor(CATALOG).process(kraft_log.events)
    # Kafka would not re-write the leader here: that needless bump is all that is reported
    assert [v.rule_id for v in out.violations] == ["kraft.leader-bump-has-cause"], found(out)


def test_recovered_with_a_new_leader_is_reported(kraft_log):
    recovering(kraft_log)
    bad = kraft_log.batch(kraft_log.change(TID, 0, leader=2, isr=[2], lrs=0))[0]
    out = Auditor(CATALOG).process(kraft_log.events)
    assert hits(out, "kip704.leader-change-keeps-recovering") == [bad.offset]


# ------------------------------------------- completing a reassignment and min ISR, hand-built
# [1, 2, 3] -> [2, 3, 4] at min ISR 2: 2 and 3 out of sync, 1 to be removed, 4 added.
T = "RRRRRRRRRRRRRRRRRRRRRQ"


def moving(log, isr):
    log.batch(*log.elr_features(False), *(log.register(b) for b in (1, 2, 3, 4)),
              log.topic("t", T), log.config(2, "t", "min.insync.replicas", "2"),
              log.partition(T, 0, [1, 2, 3], isr=isr, leader=isr[0]))
    log.batch(log.change(T, 0, replicas=[2, 3, 4, 1], addingReplicas=[4], removingReplicas=[1]))


def audited(log):
    """(offsets of the rule's findings, reassignment_stalled intervals, the gauges' count)."""
    auditor = Auditor(CATALOG)
    out = auditor.process(log.events)
    intervals = {r.interval_id: (r.start_offset, r.end_offset) for r in out.conditions
                 if r.condition == "reassignment_stalled"}  # the last row of each interval
    stalled_now = auditor.gauges().reassignment_stalled
    return hits(out, "kraft.reassignment-keeps-min-isr"), sorted(intervals.values()), stalled_now


def test_completing_with_the_kept_replicas_out_of_sync_under_min_isr_is_caught(kraft_log):
    moving(kraft_log, isr=[1])
    # the AlterPartition that brings 4 into the ISR also completes: 1 (in sync) is dropped
    (bad,) = kraft_log.batch(kraft_log.change(T, 0, replicas=[2, 3, 4], isr=[4], leader=4,
                                              addingReplicas=[], removingReplicas=[]))
    found, stalled, now = audited(kraft_log)
    assert found == [bad.offset] and stalled == [] and now == 0


def test_waiting_until_completing_keeps_min_isr_is_right(kraft_log):
    moving(kraft_log, isr=[1])
    kraft_log.batch(kraft_log.change(T, 0, isr=[1, 4]))  # 4 caught up; completing would leave [4]
    found, stalled, now = audited(kraft_log)
    assert found == [] and stalled == [] and now == 0


def test_a_reassignment_that_could_complete_and_does_not_is_a_stalled_interval(kraft_log):
    moving(kraft_log, isr=[1, 2])  # 3 out of sync: a kept replica, not one being added
    (caught_up,) = kraft_log.batch(kraft_log.change(T, 0, isr=[1, 2, 4]))
    found, stalled, now = audited(kraft_log)
    assert found == [] and stalled == [(caught_up.offset, None)]  # [2, 4] would keep min ISR 2
    assert now == 1
    (done,) = kraft_log.batch(kraft_log.change(T, 0, replicas=[2, 3, 4], isr=[2, 4], leader=2,
                                               addingReplicas=[], removingReplicas=[]))
    found, stalled, now = audited(kraft_log)
    assert found == [] and stalled == [(caught_up.offset, done.offset)] and now == 0


def test_a_cancelled_reassignment_is_not_judged_as_a_completion(kraft_log):
    moving(kraft_log, isr=[1])
    kraft_log.batch(kraft_log.change(T, 0, isr=[1, 4]))
    kraft_log.batch(kraft_log.change(T, 0, replicas=[1, 2, 3], isr=[1], addingReplicas=[],
                                     removingReplicas=[]))
    found, stalled, _ = audited(kraft_log)
    assert found == [] and stalled == []
