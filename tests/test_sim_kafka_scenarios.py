"""Kafka's own ELR / leader-recovery test scenarios (PartitionChangeBuilderTest,
ReplicationControlManagerTest), driven through the simulator's model: it must
write the ISR / ELR / LastKnownElr / leader / recovery values Kafka expects."""

from __future__ import annotations

import pytest

from kraft_audit.sim import partition_change as pc
from kraft_audit.sim.model import ClusterModel, MemorySink, Settings
from kraft_audit.sim.partition_change import PartitionState, apply_change, build_change

MV_4_0 = 25
MV_3_7 = 19


def accept_only(*ids):
    return lambda r: r in ids


def build(p, acceptable, *, min_isr, elr=True, mv=MV_4_0, **kw):
    return build_change(
        p, is_acceptable=acceptable, min_isr=min_isr, elr_enabled=elr, metadata_version=mv, **kw
    )


# ---------------------------------------------------------------- PartitionChangeBuilderTest


def test_isr_shrink_below_min_isr_moves_members_to_elr():
    p = PartitionState((1, 2, 3, 4), (1, 2, 3, 4), leader=1)
    change = build(p, accept_only(1, 2, 4), min_isr=3, target_isr=[1, 2])
    assert change == {"isr": [1, 2], "eligibleLeaderReplicas": [3, 4]}
    after = apply_change(p, change)
    assert (after.elr, after.last_known_elr, after.leader) == ((3, 4), (), 1)


def test_isr_expand_to_min_isr_clears_elr_and_last_known_elr():
    p = PartitionState((1, 2, 3, 4), (1, 2), elr=(3,), last_known_elr=(4,), leader=1)
    change = build(p, accept_only(1, 2, 3, 4), min_isr=3, target_isr=[1, 2, 3])
    assert change == {"isr": [1, 2, 3], "eligibleLeaderReplicas": [], "lastKnownElr": []}


def test_isr_add_member_not_in_elr_changes_only_isr():
    p = PartitionState((1, 2, 3, 4), (1,), elr=(3,), last_known_elr=(2,), leader=1)
    change = build(
        p, accept_only(1, 2, 3, 4), min_isr=3, target_isr=[1, 4], use_last_known_leader=False
    )
    assert change == {"isr": [1, 4]}


def test_unclean_shutdown_replica_leaves_elr_for_last_known_elr():
    p = PartitionState((1, 2, 3, 4), (1,), elr=(2, 3), leader=1)
    change = build(
        p,
        accept_only(1, 2, 4),
        min_isr=3,
        unclean_shutdown_replicas=[3],
        use_last_known_leader=False,
    )
    assert change == {"eligibleLeaderReplicas": [2], "lastKnownElr": [3]}


def test_elr_member_can_be_elected():
    p = PartitionState((1, 2, 3, 4), (1,), elr=(3,), leader=1)
    change = build(p, accept_only(2, 3, 4), min_isr=3, target_isr=[])
    assert change == {"leader": 3, "isr": [3], "eligibleLeaderReplicas": [1]}
    assert apply_change(p, change).leader_recovery_state == pc.RECOVERED


def test_isr_can_shrink_to_zero():
    p = PartitionState((1, 2, 3, 4), (1, 2, 3, 4), leader=1)
    change = build(p, accept_only(), min_isr=3, target_isr=[])
    assert change == {
        "leader": -1,
        "isr": [],
        "eligibleLeaderReplicas": [1, 2, 3, 4],
        "lastKnownElr": [1],
    }
    without_flag = build(p, accept_only(), min_isr=3, target_isr=[], use_last_known_leader=False)
    assert "lastKnownElr" not in without_flag  # LKE stays [] (KIP-966 set semantics, flag off)


def test_elect_last_known_leader():
    p = PartitionState((1, 2, 3, 4), (), last_known_elr=(1,), leader=-1)
    change = build(p, accept_only(1, 2, 3, 4), min_isr=3)
    assert change == {"leader": 1, "isr": [1], "leaderRecoveryState": 1, "lastKnownElr": []}


def test_elect_last_known_leader_fails_when_elr_not_empty():
    p = PartitionState((1, 2, 3, 4), (), elr=(3,), last_known_elr=(1,), leader=-1)
    assert build(p, accept_only(1, 2, 4), min_isr=3) is None


def test_unclean_election_sets_recovering():
    p = PartitionState((2, 1, 3), (2, 1, 3), leader=1)
    change = build(p, accept_only(2), min_isr=2, elr=False, target_isr=[3], election=pc.UNCLEAN)
    assert change == {"leader": 2, "isr": [2], "leaderRecoveryState": 1}


def test_unclean_election_clears_elr_and_last_known_elr():
    p = PartitionState((1, 2, 3), (), elr=(3,), last_known_elr=(2,), leader=-1)
    change = build(p, accept_only(1), min_isr=3, election=pc.UNCLEAN)
    assert change == {
        "leader": 1,
        "isr": [1],
        "leaderRecoveryState": 1,
        "eligibleLeaderReplicas": [],
        "lastKnownElr": [],
    }


def test_leadership_change_keeps_recovering():
    p = PartitionState((1, 2, 3), (1,), leader=1, leader_recovery_state=pc.RECOVERING)
    offline = build(p, accept_only(2, 3), min_isr=1, elr=False)
    assert offline == {"leader": -1}
    p = apply_change(p, offline)
    back = build(p, accept_only(1, 2, 3), min_isr=1, elr=False)
    assert back == {"leader": 1}
    assert apply_change(p, back).leader_recovery_state == pc.RECOVERING


@pytest.mark.parametrize("mv, bumps", [(8, True), (11, True), (12, False), (MV_4_0, False)])
def test_isr_shrink_bumps_leader_epoch_only_before_3_6(mv, bumps):
    p = PartitionState((2, 1, 3), (2, 1, 3), leader=2)
    change = build(p, accept_only(1, 2, 3), min_isr=1, elr=False, mv=mv, target_isr=[2, 1])
    assert ("leader" in change) == bumps
    assert apply_change(p, change).leader_epoch == (1 if bumps else 0)


def test_isr_expansion_never_bumps_leader_epoch():
    p = PartitionState((2, 1, 3), (2, 1), leader=2)
    for mv in (8, 12, MV_4_0):
        assert build(
            p, accept_only(1, 2, 3), min_isr=1, elr=False, mv=mv, target_isr=[2, 1, 3]
        ) == {"isr": [2, 1, 3]}


def test_dropping_a_replica_always_bumps_leader_epoch():
    p = PartitionState((2, 1, 3), (2, 1, 3), leader=2)
    change = build(
        p, accept_only(1, 2, 3), min_isr=1, elr=False, target_replicas=[2, 1], target_isr=[2, 1]
    )
    assert change["leader"] == 2 and change["replicas"] == [2, 1]


def test_elr_order_is_java_hash_set_order():
    assert pc.java_hash_set_order([17, 3, 1]) == [
        17,
        1,
        3,
    ]  # 17 & 15 == 1: bucket 1, added before 1
    assert pc.java_hash_set_order([4, 3, 2]) == [2, 3, 4]


# ------------------------------------------------ ReplicationControlManagerTest, via the model


def cluster(brokers, *, mv=MV_4_0, elr=1, min_isr=1, **kw):
    model = ClusterModel(
        Settings(metadata_version=mv, elr_version=elr, min_insync_replicas=min_isr, **kw),
        MemorySink(),
        seed=7,
    )
    model.bootstrap()
    for b in brokers:
        model.register_broker(b)
        model.unfence(b)
    return model


def state(model, topic="foo", pid=0):
    return model.topic(topic).partitions[pid]


def test_rcm_shrink_and_expand_isr():
    m = cluster([0, 1, 2])
    m.create_topic("foo", 1, 3, {"min.insync.replicas": "2"}, assignment=[[0, 1, 2]])
    assert m.alter_partition("foo", 0, [0])
    assert state(m).elr == (1, 2)
    assert m.alter_partition("foo", 0, [0, 1])
    assert state(m).elr == ()


def test_rcm_broker_fence():
    m = cluster([0, 1, 2, 3])
    m.create_topic("foo", 1, 4, {"min.insync.replicas": "3"}, assignment=[[0, 1, 2, 3]])
    m.fence(2)
    m.fence(3)
    assert state(m).elr == (3,)
    m.fence(1)
    assert state(m).elr == (1, 3)
    before = state(m)
    for b in (1, 2, 3):
        m.unfence(b)
    assert state(m) == before


def test_rcm_clean_election_from_elr():
    m = cluster([0, 1, 2, 3])
    m.create_topic("foo", 1, 4, {"min.insync.replicas": "3"}, assignment=[[0, 1, 2, 3]])
    for b in (1, 2, 3):
        m.fence(b)
    assert (state(m).isr, state(m).elr) == ((0,), (2, 3))
    m.unfence(2)
    m.fence(0)
    m.fence(1)
    p = state(m)
    assert (p.leader, p.isr, p.elr, p.leader_recovery_state) == (2, (2,), (0, 3), 0)


def test_rcm_unclean_shutdown_removes_from_isr_and_elr():
    m = cluster([0, 1, 2, 3])
    m.create_topic("foo", 1, 4, {"min.insync.replicas": "3"}, assignment=[[0, 1, 2, 3]])
    for b in (1, 2, 3):
        m.crash(b)
        m.fence(b)
    m.register_broker(3)  # crashed: PreviousBrokerEpoch -1, so unclean
    assert (state(m).isr, state(m).elr) == ((0,), (2,))
    m.crash(0)
    m.register_broker(0)
    p = state(m)
    assert (p.isr, p.leader, p.elr, p.last_known_elr) == ((), -1, (2,), (0,))
    batch = m.sink.batches[-1][2]
    assert [r[0] for r in batch] == ["PARTITION_CHANGE_RECORD", "REGISTER_BROKER_RECORD"]


def test_rcm_clean_shutdown_to_empty_isr():
    m = cluster([0, 1, 2])
    m.create_topic("foo", 1, 3, {"min.insync.replicas": "3"}, assignment=[[0, 1, 2]])
    m.fence(1)
    m.fence(2)
    assert (state(m).isr, state(m).elr) == ((0,), (1, 2))
    m.controlled_shutdown(0)
    p = state(m)
    assert (p.isr, p.elr, p.last_known_elr, p.leader) == ((), (0, 1, 2), (0,), -1)
    old_epoch = m.brokers[0].epoch
    m.register_broker(0)  # clean restart: PreviousBrokerEpoch matches, ELR untouched
    assert state(m).elr == (0, 1, 2)
    assert m.sink.registrations[-1]["previousBrokerEpoch"] == old_epoch


def test_rcm_elr_removed_on_min_isr_update():
    m = cluster([1, 2, 4], min_isr=2)
    m.create_topic("foo", 1, 3, {"min.insync.replicas": "2"}, assignment=[[1, 2, 4]])
    m.create_topic("bar", 1, 3, {"min.insync.replicas": "2"}, assignment=[[1, 2, 4]])
    m.fence(4)
    m.fence(1)
    assert state(m, "foo").elr == (1,) and state(m, "bar").elr == (1,)
    m.set_config("foo", "min.insync.replicas", "1")
    assert state(m, "foo").elr == () and state(m, "bar").elr == (1,)
    types = [r[0] for r in m.sink.batches[-1][2]]
    assert types == ["CONFIG_RECORD", "CLEAR_ELR_RECORD"]
    assert m.sink.batches[-1][2][1][2] == {"topicName": "foo"}
    m.set_config(None, "min.insync.replicas", "2")
    assert state(m, "bar").elr == ()
    assert m.sink.batches[-1][2][1][2] == {"topicName": ""}


def test_rcm_effective_min_isr_is_capped_by_replication_factor():
    m = cluster([1, 2, 3])
    m.create_topic("foo", 1, 3, {"min.insync.replicas": "5"})
    assert m.effective_min_isr(m.topic("foo")) == 3


@pytest.mark.parametrize("unclean", [True, False])
def test_rcm_unclean_election_for_leaderless_partitions_without_elr(unclean):
    m = cluster([1, 2, 3, 4], mv=MV_3_7, elr=0)
    m.create_topic(
        "foo",
        1,
        3,
        {"unclean.leader.election.enable": str(unclean).lower()},
        assignment=[[2, 3, 4]],
    )
    for b in (1, 2, 3, 4):
        m.fence(b)
    assert (state(m).isr, state(m).leader) == ((4,), -1)
    m.unfence(2)
    p = state(m)
    if unclean:
        assert (p.leader, p.isr, p.leader_recovery_state) == (2, (2,), 1)
    else:
        assert (p.leader, p.isr) == (-1, (4,))


# ------------------------------------------------ the same scenarios as YAML, through simulate()


def final_partition(text: str, topic: str = "foo") -> dict:
    from kraft_audit.sim import parse_scenario, simulate

    result = simulate(parse_scenario(text, "kafka-test.yaml"), seed=1)
    return next(
        r for r in result.model.final_state() if r["topic"] == topic and r["partition"] == 0
    )


def test_yaml_clean_election_from_elr():  # RCM testEligibleLeaderReplicas_CleanElection
    row = final_partition("""
cluster: {brokers: [0, 1, 2, 3], metadata_version: 4.0-IV3, elr: true}
topics: [{name: foo, assignment: [[0, 1, 2, 3]], configs: {min.insync.replicas: 3}}]
steps:
  - {crash: 1}
  - {heartbeat_timeout: 1}
  - {crash: 2}
  - {heartbeat_timeout: 2}
  - {crash: 3}
  - {heartbeat_timeout: 3}
  - {register: 2}
  - {unfence: 2}
  - {crash: 0}
  - {heartbeat_timeout: 0}
""")
    # broker 2 re-registered after a crash: unclean, so it left the ELR; 3 is still in it
    assert (row["isr"], row["elr"], row["leader"]) == ([], [0, 3], -1)
    assert row["last_known_elr"] == [0]


def test_yaml_shrink_to_empty_isr_by_clean_shutdown():
    # RCM testEligibleLeaderReplicas_ShrinkToEmptyIsr (trunk)
    row = final_partition("""
cluster: {brokers: [0, 1, 2], metadata_version: 4.1-IV0, elr: true}
topics: [{name: foo, assignment: [[0, 1, 2]], configs: {min.insync.replicas: 3}}]
steps:
  - controlled_shutdown: 1
  - controlled_shutdown: 2
  - controlled_shutdown: 0
""")
    assert (row["isr"], row["elr"], row["last_known_elr"], row["leader"]) == (
        [],
        [0, 1, 2],
        [0],
        -1,
    )


def test_yaml_unclean_election_without_elr():  # RCM ...UncleanLeaderElectionForLeaderlessPartitions
    row = final_partition("""
cluster: {brokers: [1, 2, 3, 4], metadata_version: 3.7-IV4}
topics: [{name: foo, assignment: [[2, 3, 4]], configs: {unclean.leader.election.enable: true}}]
steps:
  - controlled_shutdown: 2
  - controlled_shutdown: 3
  - controlled_shutdown: 4
  - register: 2
  - unfence: 2
""")
    assert (row["leader"], row["isr"], row["leader_recovery_state"]) == (2, [2], 1)
