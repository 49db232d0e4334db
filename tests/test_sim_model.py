"""The controller model writes Kafka's records, in Kafka's batches and order."""

from __future__ import annotations

from kraft_audit.sim.model import MAX_RECORDS_PER_BATCH, ClusterModel, MemorySink, Settings


def cluster(brokers=(1, 2, 3), *, mv=25, elr=1, min_isr=2, **kw):
    m = ClusterModel(
        Settings(metadata_version=mv, elr_version=elr, min_insync_replicas=min_isr, **kw),
        MemorySink(),
        seed=3,
    )
    m.bootstrap()
    for b in brokers:
        m.register_broker(b)
    for b in brokers:
        m.unfence(b)
    return m


def batches(m, since=0):
    return [
        (base, [r[0] for r in records], control)
        for base, _ts, records, control in m.sink.batches[since:]
    ]


def records(m, rtype):
    return [(off, data) for off, (t, _v, data) in m.sink.records() if t == rtype]


def test_log_starts_with_leader_change_then_bootstrap_transaction():
    m = cluster()
    first, second = m.sink.batches[0], m.sink.batches[1]
    assert first[3] and first[2][0][0] == "LEADER_CHANGE" and first[0] == 0
    assert [r[0] for r in second[2]] == [
        "BEGIN_TRANSACTION_RECORD",
        "FEATURE_LEVEL_RECORD",
        "FEATURE_LEVEL_RECORD",
        "CONFIG_RECORD",
        "END_TRANSACTION_RECORD",
    ]
    assert second[2][1][2] == {"name": "metadata.version", "featureLevel": 25}
    old = cluster(mv=12, elr=0)  # before metadata transactions (3.6-IV1): no Begin/End
    assert [r[0] for r in old.sink.batches[1][2]] == ["FEATURE_LEVEL_RECORD"]


def test_broker_epoch_is_the_offset_of_its_register_broker_record():
    m = cluster()
    for off, data in records(m, "REGISTER_BROKER_RECORD"):
        assert data["brokerEpoch"] == off == m.brokers[data["brokerId"]].epoch
        assert data["fenced"] is True


def test_record_versions_follow_metadata_version():
    for mv, version in ((14, 0), (17, 1), (22, 1), (23, 2), (26, 2)):
        m = cluster(mv=mv, elr=0)
        m.create_topic("t", 1, 3)
        m.fence(m.topic("t").partitions[0].leader)
        ((_, v, data),) = [r for _, r in m.sink.records() if r[0] == "PARTITION_RECORD"]
        assert v == version
        assert ("directories" in data) == (version >= 1)
        assert (
            "eligibleLeaderReplicas" not in data and "lastKnownElr" not in data
        )  # absent when empty
        assert {r[1] for _, r in m.sink.records() if r[0] == "PARTITION_CHANGE_RECORD"} == {version}


def test_old_metadata_versions_fence_with_fence_broker_record():
    m = cluster(mv=5, elr=0, min_isr=1)
    m.fence(2)
    assert records(m, "FENCE_BROKER_RECORD")[0][1] == {"id": 2, "epoch": m.brokers[2].epoch}
    assert records(m, "UNFENCE_BROKER_RECORD")


def test_fence_writes_partition_changes_before_the_fence_record():
    m = cluster()
    m.create_topic("t", 6, 3)
    since = len(m.sink.batches)
    m.fence(1)
    ((_, types, _),) = batches(m, since)
    assert types[-1] == "BROKER_REGISTRATION_CHANGE_RECORD"
    assert (
        set(types[:-1]) == {"PARTITION_CHANGE_RECORD"} and len(types) == 7
    )  # RF 3 of 3 brokers: all 6
    assert m.sink.batches[-1][2][-1][2] == {
        "brokerId": 1,
        "brokerEpoch": m.brokers[1].epoch,
        "fenced": 1,
    }
    assert all(1 not in p.isr and p.leader != 1 for p in m.topic("t").partitions)


def test_controlled_shutdown_pattern():
    m = cluster(elr=0, min_isr=1)
    m.create_topic("t", 3, 1, assignment=[[2], [2], [3]])
    since = len(m.sink.batches)
    m.controlled_shutdown(2)
    shutdown = [types for _, types, _ in batches(m, since) if "NO_OP_RECORD" not in types]
    assert shutdown[0] == [
        "BROKER_REGISTRATION_CHANGE_RECORD",
        "PARTITION_CHANGE_RECORD",
        "PARTITION_CHANGE_RECORD",
    ]
    assert shutdown[1] == ["BROKER_REGISTRATION_CHANGE_RECORD"]
    changes = [d for _, d in records(m, "PARTITION_CHANGE_RECORD")]
    # the only ISR member leaves leadership but, without ELR, never an empty ISR
    assert all(d.get("leader") == -1 and "isr" not in d for d in changes)
    assert m.topic("t").partitions[0].isr == (2,)


def test_unclean_restart_removals_share_the_batch_of_the_new_registration():
    m = cluster(min_isr=3)
    m.create_topic("t", 2, 3)
    m.crash(2)
    m.register_broker(2)  # before the session timed out: still in every ISR
    base, _ts, recs, _control = m.sink.batches[-1]
    types = [r[0] for r in recs]
    assert types[-1] == "REGISTER_BROKER_RECORD" and types[:-1] == ["PARTITION_CHANGE_RECORD"] * 2
    assert recs[-1][2]["brokerEpoch"] == base + len(recs) - 1
    assert all(2 not in p.isr and 2 not in p.elr for p in m.topic("t").partitions)
    event = m.sink.registrations[-1]
    assert event["previousBrokerEpoch"] == -1 and event["requestVersion"] >= 3
    assert set(event) == {
        "brokerId",
        "incarnationId",
        "previousBrokerEpoch",
        "requestVersion",
        "timestampMs",
        "clusterId",
    }


def test_clean_restart_sends_the_stored_epoch_and_keeps_elr():
    m = cluster(min_isr=3)
    m.create_topic("t", 1, 3, assignment=[[1, 2, 3]])
    m.controlled_shutdown(3)
    assert m.topic("t").partitions[0].elr == (3,)
    epoch = m.brokers[3].epoch
    m.register_broker(3)
    assert m.sink.registrations[-1]["previousBrokerEpoch"] == epoch
    assert m.topic("t").partitions[0].elr == (3,)


def test_noop_every_500_ms_when_idle():
    m = cluster()
    start = m.now_ms
    since = len(m.sink.batches)
    m.advance(2600)
    noops = [(ts, recs) for _b, ts, recs, _c in m.sink.batches[since:]]
    assert [ts - start for ts, _ in noops] == [500, 1000, 1500, 2000, 2500]
    assert all(recs == [("NO_OP_RECORD", 0, {})] for _, recs in noops)


def test_leader_change_is_a_control_batch_and_bumps_the_raft_epoch():
    m = cluster(controller_ids=(3000, 3001, 3002))
    m.leader_change()
    base, _ts, recs, control = m.sink.batches[-1]
    assert control and recs[0][0] == "LEADER_CHANGE" and recs[0][2]["leaderId"] == 3001
    assert m.raft_epoch == 2


def test_min_isr_change_clears_elr_only_when_elr_is_on():
    m = cluster(elr=0)
    m.set_config(None, "min.insync.replicas", "2")
    assert [r[0] for r in m.sink.batches[-1][2]] == ["CONFIG_RECORD"]
    m = cluster(elr=1)
    m.set_config(None, "min.insync.replicas", "2")
    assert [r[0] for r in m.sink.batches[-1][2]] == ["CONFIG_RECORD", "CLEAR_ELR_RECORD"]


def test_enabling_elr_writes_the_cluster_min_isr_it_needs():
    m = cluster(mv=25, elr=0, min_isr=2)
    assert "min.insync.replicas" not in m.cluster_configs
    m.update_feature("eligible.leader.replicas.version", 1)
    assert [r[0] for r in m.sink.batches[-1][2]] == ["CONFIG_RECORD", "FEATURE_LEVEL_RECORD"]
    assert m.elr_enabled and m.cluster_configs["min.insync.replicas"] == "2"


def test_elr_needs_metadata_version_4_0_iv1():
    m = cluster(mv=22, elr=0)
    try:
        m.update_feature("eligible.leader.replicas.version", 1)
    except ValueError as exc:
        assert "23" in str(exc)
    else:
        raise AssertionError("ELR accepted on MV 22")


def test_big_non_atomic_results_are_split_into_batches_of_10000():
    m = cluster(brokers=(1, 2), elr=0, min_isr=1)
    m.create_topic("t", MAX_RECORDS_PER_BATCH + 5, 2)
    since = len(m.sink.batches)
    m.fence(1)
    sizes = [len(types) for _, types, _ in batches(m, since)]
    assert sizes == [MAX_RECORDS_PER_BATCH, 6]


def test_huge_topic_creation_is_a_transaction():
    m = cluster(brokers=(1,), elr=0, min_isr=1)
    since = len(m.sink.batches)
    m.create_topic("t", MAX_RECORDS_PER_BATCH + 10, 1)
    created = batches(m, since)
    assert created[0][1][:2] == ["BEGIN_TRANSACTION_RECORD", "TOPIC_RECORD"]
    assert created[-1][1][-1] == "END_TRANSACTION_RECORD"
    assert all(len(types) <= MAX_RECORDS_PER_BATCH for _, types, _ in created)


def test_reassignment_adds_then_completes_and_bumps_leader_epoch():
    m = cluster(brokers=(1, 2, 3, 4), min_isr=1)
    m.create_topic("t", 1, 3, assignment=[[1, 2, 3]])
    m.reassign("t", 0, [2, 3, 4])
    p = m.topic("t").partitions[0]
    assert (p.replicas, p.adding, p.removing) == ((2, 3, 4, 1), (4,), (1,))
    m.catch_up(4)
    p = m.topic("t").partitions[0]
    assert (p.replicas, p.isr, p.adding, p.removing, p.leader) == ((2, 3, 4), (2, 3, 4), (), (), 2)
    assert p.leader_epoch == 1


def test_alter_partition_rejects_ineligible_and_recovering_growth():
    m = cluster(elr=0, min_isr=1)
    m.create_topic("t", 1, 3, assignment=[[1, 2, 3]])
    m.shrink_isr("t", 0, 3)
    m.fence(3)
    assert not m.expand_isr("t", 0, 3)  # fenced: INELIGIBLE_REPLICA
    assert not m.alter_partition("t", 0, [1, 2, 9])  # not a replica


def test_replica_tuples_are_shared_between_partitions():
    m = cluster()
    m.create_topic("t", 300, 3)
    parts = m.topic("t").partitions
    same = [p for p in parts if p.replicas == parts[0].replicas]
    assert len(same) > 1 and all(p.replicas is parts[0].replicas for p in same)
