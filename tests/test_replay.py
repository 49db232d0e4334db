"""ClusterState and Partition apply records exactly as Kafka's controller replays them."""

from __future__ import annotations

import pickle

import pytest

from kraft_audit.core.replay import CoreSettings, ClusterState, Partition, ReplayError

TID = "EEEEEEEEEEEEEEEEEEEEEE"


def state_after(log, settings=None) -> ClusterState:
    state = ClusterState(CoreSettings.of(settings))
    for event in log.events:
        state.apply(event)
    return state


def make(**fields) -> Partition:
    data = {"topicId": TID, "partitionId": 0, "replicas": [1, 2, 3], "isr": [1, 2, 3], "leader": 1,
            "leaderEpoch": 4, "partitionEpoch": 7}
    data.update(fields)
    return Partition.from_record(data)


def test_merge_keeps_absent_fields_and_bumps_epochs():
    p = make(eligibleLeaderReplicas=[], lastKnownElr=[2])
    q = p.merged({"topicId": TID, "partitionId": 0, "isr": [1, 2]})
    assert (q.isr, q.replicas, q.leader, q.last_known_elr) == ((1, 2), (1, 2, 3), 1, (2,))
    assert (q.leader_epoch, q.partition_epoch) == (4, 8)
    r = q.merged({"leader": 1})  # re-setting the same leader still bumps the leader epoch
    assert (r.leader_epoch, r.partition_epoch) == (5, 9)
    s = r.merged({"leader": -1, "leaderRecoveryState": -1})
    assert (s.leader, s.leader_epoch, s.leader_recovery_state) == (-1, 6, 0)
    assert p.isr == (1, 2, 3)  # immutable: the state before stays intact


def test_merge_recovery_state_and_elr_fields():
    p = make()
    q = p.merged({"leader": 2, "isr": [2], "leaderRecoveryState": 1,
                  "eligibleLeaderReplicas": [3], "lastKnownElr": []})
    assert (q.leader_recovery_state, q.elr, q.last_known_elr) == (1, (3,), ())
    assert q.merged({"leaderRecoveryState": 5}).leader_recovery_state == 1  # bad value: unchanged


def test_merge_directories_follow_replicas():
    p = make(directories=["d1", "d2", "d3"])
    q = p.merged({"replicas": [3, 1, 4]})
    assert q.directories == ("d3", "d1", "")
    assert p.merged({"directories": ["x", "y", "z"]}).directories == ("x", "y", "z")


def test_clear_elr_bumps_partition_epoch_only_when_it_clears():
    p = make(isr=[1], eligibleLeaderReplicas=[2, 3])
    q = p.with_elr_cleared()
    assert (q.elr, q.last_known_elr, q.partition_epoch, q.leader_epoch) == ((), (), 8, 4)
    assert q.with_elr_cleared() is q


def test_partition_pickles_small_and_equal():
    p = make(eligibleLeaderReplicas=[2])
    blob = pickle.dumps(p, protocol=pickle.HIGHEST_PROTOCOL)
    assert pickle.loads(blob) == p and len(blob) < 200


def test_effective_min_isr_resolution(kraft_log):
    log = kraft_log
    other = "FFFFFFFFFFFFFFFFFFFFFF"
    log.batch(log.topic("t", TID), log.partition(TID, 0, [1, 2, 3]), log.partition(TID, 1, [1, 2]),
              log.topic("u", other), log.partition(other, 0, [1, 2, 3, 4]))
    state = state_after(log, {"min_insync_replicas_default": 2})
    assert state.effective_min_isr(state.partitions[(other, 0)]) == 2
    log.batch(log.config(4, "", "min.insync.replicas", "3"))
    log.batch(log.config(2, "t", "min.insync.replicas", "9"))
    state = state_after(log, {"min_insync_replicas_default": 2})
    # topic value capped by partition 0's replica count, even for a partition with fewer replicas
    assert state.effective_min_isr(state.partitions[(TID, 1)]) == 3
    assert state.effective_min_isr(state.partitions[(other, 0)]) == 3  # cluster default
    log.batch(log.config(4, "", "min.insync.replicas", None))
    state = state_after(log, {"min_insync_replicas_default": 2})
    assert state.effective_min_isr(state.partitions[(other, 0)]) == 2


@pytest.mark.parametrize("features,setting,enabled", [
    ([("metadata.version", 25), ("eligible.leader.replicas.version", 1)], None, True),
    ([("metadata.version", 25)], None, False),
    ([("metadata.version", 23)], True, True),
    ([("metadata.version", 22)], True, False),
    ([("metadata.version", 25), ("eligible.leader.replicas.version", 1)], False, False),
    ([("metadata.version", 25), ("eligible.leader.replicas.version", 1),
      ("eligible.leader.replicas.version", 0)], None, False),
])
def test_elr_gating(kraft_log, features, setting, enabled):
    kraft_log.batch(*[kraft_log.feature(n, v) for n, v in features])
    assert state_after(kraft_log, {"elr_controller_config": setting}).elr_enabled is enabled


def test_broker_lifecycle(kraft_log):
    log = kraft_log
    log.batch(log.register(1, "a", epoch=5, fenced=True))
    log.batch(log.unfence(1))
    state = state_after(log)
    assert state.acceptable_leader(1)
    log.batch(log.controlled_shutdown(1))
    log.batch(log.fence(1))
    log.batch(("UNREGISTER_BROKER_RECORD", {"brokerId": 1, "brokerEpoch": 5}))
    b = state_after(log).brokers[1]
    assert (b.fenced, b.in_controlled_shutdown, b.registered, b.epoch) == (True, True, False, 5)
    log.batch(("UNFENCE_BROKER_RECORD", {"id": 1, "epoch": 5}))
    assert state_after(log).brokers[1].fenced is False


def test_topic_deletion_and_clear_elr(kraft_log):
    log = kraft_log
    log.batch(log.topic("t", TID), log.partition(TID, 0, [1, 2], [1], eligibleLeaderReplicas=[2]))
    log.batch(log.clear_elr(""))
    state = state_after(log)
    assert state.partitions[(TID, 0)].elr == ()
    change = state.apply(log.batch(log.remove_topic(TID))[0])
    assert [after for _, after in change.partitions] == [None]
    assert state.partitions == {} and state.deleted_topics == {TID: "t"} and state.topic_ids == {}


@pytest.mark.parametrize("record,code", [
    (("PARTITION_CHANGE_RECORD", {"topicId": TID, "partitionId": 0, "isr": [1]}), "unknown-partition"),
    (("REMOVE_TOPIC_RECORD", {"topicId": TID}), "unknown-topic"),
    (("CLEAR_ELR_RECORD", {"topicName": "nope"}), "unknown-topic"),
    (("FENCE_BROKER_RECORD", {"id": 3, "epoch": 1}), "unknown-broker"),
])
def test_records_that_cannot_be_applied(kraft_log, record, code):
    state = ClusterState(CoreSettings())
    with pytest.raises(ReplayError) as info:
        state.apply(kraft_log.batch(record)[0])
    assert info.value.code == code


def test_partition_record_for_unknown_topic_is_applied_and_flagged(kraft_log):
    state = ClusterState(CoreSettings())
    change = state.apply(kraft_log.batch(kraft_log.partition(TID, 0, [1]))[0])
    assert change.problem.code == "unknown-topic" and (TID, 0) in state.partitions


def test_settings_are_validated():
    with pytest.raises(ValueError, match="unknown audit settings"):
        CoreSettings.of({"min_isr": 2})
    with pytest.raises(ValueError, match="clean_shutdown_detection"):
        CoreSettings.of({"clean_shutdown_detection": "maybe"})


def test_a_partial_logs_change_record_tracks_a_partition_as_far_as_it_says(kraft_log):
    """A log that starts mid-history: a change record for a partition created before it is
    state (what it sets), the rest unknown until a record sets it; epochs stay unknown."""
    from kraft_audit.core.replay.conditions import LEADERLESS, UNDER_MIN_ISR, condition_mask

    state = ClusterState(CoreSettings())
    state.history_from = 500
    before, p = state.change_partition({"topicId": TID, "partitionId": 3, "leader": -1})
    assert before is None and p.leader == -1 and state.topic_partitions == {TID: [3]}
    assert {"replicas", "isr", "leader_epoch", "partition_epoch"} <= set(p.unknown)
    assert "leader" not in p.unknown
    assert condition_mask(p, 2, state) == LEADERLESS  # under min ISR needs the ISR: not claimed
    assert state.topic_label(TID) == TID  # no TopicRecord named it yet
    before, p = state.change_partition({"topicId": TID, "partitionId": 3, "leader": 2,
                                        "isr": [2], "replicas": [1, 2, 3]})
    assert before.leader == -1 and (p.leader, p.isr, p.replicas) == (2, (2,), (1, 2, 3))
    assert {"replicas", "isr", "leader"}.isdisjoint(p.unknown)
    assert (p.leader_epoch, p.partition_epoch) == (-1, -1) and "leader_epoch" in p.unknown
    assert condition_mask(p, state.effective_min_isr(p), state) == 0  # min ISR 1 assumed
    assert condition_mask(p, 2, state) == UNDER_MIN_ISR
    # stored and restored with its unknown fields
    assert pickle.loads(pickle.dumps(p)) == p
    # a whole log: the same record is an input problem, never state
    with pytest.raises(ReplayError):
        ClusterState(CoreSettings()).change_partition({"topicId": TID, "partitionId": 3, "leader": -1})
