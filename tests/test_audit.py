"""The Auditor: counting, restarts, buckets, conditions, gauges, rows."""

from __future__ import annotations

from kraft_audit.core.audit import Auditor
from kraft_audit.core.events import Quarantined
from kraft_audit.core.rules import load_catalog

TID = "GGGGGGGGGGGGGGGGGGGGGG"
OTHER = "HHHHHHHHHHHHHHHHHHHHHH"
CATALOG = load_catalog()


def cluster(log, min_isr=2, elr=True):
    log.batch(*log.elr_features(elr))
    log.batch(*[log.register(b, epoch=b) for b in (1, 2, 3)])
    log.batch(log.topic("t", TID), log.config(2, "t", "min.insync.replicas", str(min_isr)),
              log.partition(TID, 0, [1, 2, 3]), log.partition(TID, 1, [2, 3, 1]))


def test_every_input_is_applied_duplicate_or_quarantined(kraft_log):
    log = kraft_log
    cluster(log)
    log.batch(log.change(TID, 0, isr=[1, 2]))
    log.batch(log.change(TID, 9, isr=[1]))  # unknown partition: quarantined
    log.batch(("PARTITION_CHANGE_RECORD", {"partitionId": 0}))  # malformed: quarantined
    events = list(log.events)
    bad_bytes = Quarantined("c1", "00000000000000000000.log", 999, "torn batch", b"\x00")
    auditor = Auditor(CATALOG)
    first = auditor.process(events[:5] + [bad_bytes])
    second = auditor.process(events)  # a redelivery after a restart, then new records
    total = len(events) + 6
    assert auditor.applied + auditor.duplicates + auditor.quarantined == total
    assert (first.duplicates, second.duplicates) == (0, 5)
    assert auditor.quarantined == 3 and len(first.quarantined) + len(second.quarantined) == 3


def test_restart_from_bytes_gives_the_same_output(kraft_log):
    log = kraft_log
    cluster(log)
    log.batch(log.change(TID, 0, isr=[1], elr=[3]))  # wrong: ELR lacks 2
    log.batch(log.change(TID, 1, isr=[2, 3]))
    log.registration(3, "inc-3", previous_epoch=-1)
    events = log.events
    whole = Auditor(CATALOG).process(events)

    first = Auditor(CATALOG)
    out_a = first.process(events[:6])
    blob = first.to_bytes()
    restored = Auditor.from_bytes(blob, CATALOG)
    out_b = restored.process(events)
    assert out_a.violations + out_b.violations == whole.violations
    assert out_a.conditions + out_b.conditions == whole.conditions
    assert out_a.partitions + out_b.partitions == whole.partitions
    assert restored.gauges("c1") == Auditor.from_bytes(restored.to_bytes(), CATALOG).gauges("c1")
    assert [v.rule_id for v in whole.violations] == ["kip966.elr-matches-kafka"]


def test_buckets_split_partitions_and_cluster_findings(kraft_log):
    log = kraft_log
    cluster(log)
    log.batch(log.change(TID, 0, isr=[1, 2, 9]))  # partition finding, bucket of partition 0
    log.batch(log.change(TID, 1, isr=[3, 1]))  # leader 2 left the ISR: bucket of partition 1
    log.batch(log.fence(42))  # cluster finding: unknown broker
    log.batch(("FENCE_BROKER_RECORD", {"id": "one", "epoch": None}))  # malformed, cluster-scoped
    log.batch(("PARTITION_CHANGE_RECORD", {"partitionId": 1}))  # malformed, bucket of partition 1

    def owned_by(bucket):
        return [e for e in log.events
                if e.type not in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD")
                or (e.data["partitionId"] % 2) == bucket]

    outs = [Auditor(CATALOG, emit_cluster_findings=(b == 0)).process(owned_by(b)) for b in (0, 1)]
    single = Auditor(CATALOG).process(log.events)
    found = sorted(v.violation_id for out in outs for v in out.violations)
    assert found == sorted(v.violation_id for v in single.violations)
    assert {v.rule_id for v in outs[1].violations} == {"kip966.leader-in-isr"}
    assert outs[1].brokers == [] and outs[0].brokers == single.brokers
    # every bucket sees the shared record, but only bucket 0 quarantines it
    assert [len(out.quarantined) for out in outs] == [2, 1]
    assert sorted(q.offset for out in outs for q in out.quarantined) == sorted(
        q.offset for q in single.quarantined)


def test_batch_end_rules_run_when_the_batch_end_event_is_elsewhere(kraft_log):
    log = kraft_log
    cluster(log, min_isr=3)
    wrong, _other = log.batch(log.change(TID, 0, isr=[1, 2]), log.change(TID, 1, isr=[2, 3]))
    log.batch(log.feature("group.version", 1))
    events = [e for e in log.events if e is not _other]
    out = Auditor(CATALOG).process(events)
    assert [(v.rule_id, v.offset) for v in out.violations] == [("kip966.elr-matches-kafka", wrong.offset)]


def test_condition_intervals_open_and_close(kraft_log):
    log = kraft_log
    cluster(log, min_isr=2)
    (shrink,) = log.batch(log.change(TID, 0, isr=[1], elr=[2, 3]))
    (grow,) = log.batch(log.change(TID, 0, isr=[1, 2], elr=[]))
    (config,) = log.batch(log.config(2, "t", "min.insync.replicas", "3"), log.clear_elr("t"))[:1]
    (delete,) = log.batch(log.remove_topic(TID))
    auditor = Auditor(CATALOG)
    out = auditor.process(log.events)
    rows = [(c.condition, c.partition, c.start_offset, c.end_offset) for c in out.conditions]
    assert rows == [
        ("under_min_isr", 0, shrink.offset, None), ("elr_in_use", 0, shrink.offset, None),
        ("under_min_isr", 0, shrink.offset, grow.offset), ("elr_in_use", 0, shrink.offset, grow.offset),
        ("under_min_isr", 0, config.offset, None),
        ("under_min_isr", 0, config.offset, delete.offset),
    ]
    assert out.conditions[0].interval_id == f"c1/under_min_isr/{TID}/0/{shrink.offset}"
    assert auditor.open_conditions() == []
    assert out.partitions[-1].deleted and out.partitions[-2].deleted
    assert out.violations == []


def test_gauges(kraft_log):
    log = kraft_log
    cluster(log, min_isr=3)
    log.batch(log.change(TID, 0, isr=[1, 2], elr=[3]), log.change(TID, 1, isr=[2, 1], elr=[3]),
              log.fence(3))
    log.batch(log.change(TID, 0, leader=2, isr=[2], elr=[1, 3]), log.change(TID, 1, isr=[2], elr=[1, 3]),
              log.fence(1))
    log.batch(*[log.change(TID, p, leader=-1, isr=[], elr=[1, 2, 3], lke=[2]) for p in (0, 1)],
              log.fence(2))
    log.batch(log.unfence(3), *[log.change(TID, p, leader=3, isr=[3], elr=[1, 2], lke=[]) for p in (0, 1)])
    auditor = Auditor(CATALOG)
    out = auditor.process(log.events)
    assert out.violations == []
    g = auditor.gauges("c1")
    assert (g.partitions, g.under_min_isr, g.elr_in_use, g.leaderless) == (2, 2, 2, 0)
    assert g.electable_leaders == {"3": 2}
    assert (g.elr_elections_total, g.unclean_elections_total) == (2, 0)
    assert g.last_offset == log.next_offset - 1


def test_recovery_counts_and_manual_election(kraft_log):
    log = kraft_log
    cluster(log, min_isr=2)
    log.batch(log.change(TID, 0, isr=[1, 2]), log.fence(3))
    log.batch(log.change(TID, 0, isr=[1], elr=[2]), log.fence(2))
    log.batch(log.change(TID, 0, leader=-1, isr=[], elr=[1, 2], lke=[1]), log.fence(1))
    log.batch(log.change(TID, 0, elr=[2]), log.register(1, "inc-1b", epoch=50, fenced=True))
    log.batch(log.change(TID, 0, elr=[]), log.register(2, "inc-2b", epoch=51, fenced=True))
    auditor = Auditor(CATALOG)
    auditor.process(log.events)
    assert auditor.gauges().manual_election_required == 1
    log.batch(log.unfence(3), log.change(TID, 0, leader=3, isr=[3], lrs=1, lke=[]))
    log.batch(log.change(TID, 0, lrs=0))
    out = auditor.process(log.events)
    g = auditor.gauges()
    assert out.violations == []
    assert (g.manual_election_required, g.unclean_elections_total, g.unclean_recovery_finished_total,
            g.unclean_recovery) == (0, 1, 1, 0)
    assert auditor.state.brokers[1].last_shutdown == "unclean"


def test_an_unclean_election_is_counted_when_the_partition_becomes_recovering(kraft_log):
    """One definition (rules/elections.py, docs/metrics.md): RECOVERED -> RECOVERING.
    A leader taken from outside the ISR and ELR without RECOVERING is a finding, not a count."""
    log = kraft_log
    cluster(log, min_isr=1)
    log.batch(log.change(TID, 0, isr=[1]), log.change(TID, 1, isr=[2]))
    log.batch(log.change(TID, 0, leader=3, isr=[3], lrs=1))  # unclean, as Kafka writes it
    log.batch(log.change(TID, 1, leader=3, isr=[3]))  # unclean by its shape, RECOVERING forgotten
    auditor = Auditor(CATALOG)
    out = auditor.process(log.events)
    assert auditor.gauges().unclean_elections_total == 1
    assert [(v.rule_id, v.partition) for v in out.violations
            if v.rule_id == "kip704.unclean-election-sets-recovering"] == [
        ("kip704.unclean-election-sets-recovering", 1)]


def test_partition_rows_follow_every_change(kraft_log):
    log = kraft_log
    cluster(log)
    (change,) = log.batch(log.change(TID, 0, isr=[1, 2]))
    out = Auditor(CATALOG).process(log.events)
    row = out.partitions[-1]
    assert (row.topic, row.partition, row.isr, row.elr, row.partition_epoch, row.effective_min_isr,
            row.offset, row.record_type) == ("t", 0, [1, 2], [], 1, 2, change.offset,
                                             "PARTITION_CHANGE_RECORD")


def test_state_stays_compact(kraft_log):
    log = kraft_log
    log.batch(log.topic("t", TID))
    log.batch(*[log.partition(TID, p, [1, 2, 3]) for p in range(2000)])
    auditor = Auditor(CATALOG)
    auditor.process(log.events)
    assert len(auditor.to_bytes()) < 120 * 2000


def test_unusable_side_inputs_and_rule_failures_never_raise(kraft_log):
    log = kraft_log
    cluster(log)
    log.log_dirs(1, [("t-0", "big")])  # a size the stray rule cannot compare
    log.events.append(log.events[-1].__class__(
        "c1", "x", 0, -1, -1, -1, 0, "log_dirs", "BROKER_LOG_DIRS", 0, {"logDirs": []}))
    log.events.append(log.events[0].__class__(
        "c1", "x", 0, -1, -1, -1, 0, "record", "TOPIC_RECORD", 0, {"name": "u", "topicId": OTHER}))
    auditor = Auditor(CATALOG)
    out = auditor.process(log.events)
    reasons = [q.reason for q in out.quarantined]
    assert reasons[0].startswith("rule kip550.stray-replica failed: TypeError")
    assert reasons[1:] == ["log-dir inventory without brokerId and logDirs",
                           "TOPIC_RECORD without a log offset cannot be placed in the log"]
    assert auditor.applied + auditor.quarantined == len(log.events)


def test_unclean_election_config_ends_manual_election_required(kraft_log):
    log = kraft_log
    cluster(log, min_isr=2)
    log.batch(log.change(TID, 0, isr=[1, 2]), log.fence(3))
    log.batch(log.change(TID, 0, isr=[1], elr=[2]), log.fence(2))
    log.batch(log.change(TID, 0, leader=-1, isr=[], elr=[1, 2], lke=[1]), log.fence(1))
    (drop,) = log.batch(log.change(TID, 0, elr=[]), log.register(1, "inc-1b", epoch=50, fenced=True),
                        log.register(2, "inc-2b", epoch=51, fenced=True))[:1]
    (allow,) = log.batch(log.config(2, "t", "unclean.leader.election.enable", "true"))
    auditor = Auditor(CATALOG)
    out = auditor.process(log.events)
    manual = [(c.start_offset, c.end_offset) for c in out.conditions
              if c.condition == "manual_election_required"]
    assert manual == [(drop.offset, None), (drop.offset, allow.offset)]
    assert auditor.gauges().manual_election_required == 0
    assert [v for v in out.violations if v.partition == 0] == []  # partition 1 is left as is


def test_restored_auditor_takes_new_settings(kraft_log):
    log = kraft_log
    log.batch(log.feature("metadata.version", 23))
    log.batch(log.topic("t", TID), log.partition(TID, 0, [1, 2, 3]))
    auditor = Auditor(CATALOG)
    auditor.process(log.events)
    assert not auditor.state.elr_enabled
    restored = Auditor.from_bytes(auditor.to_bytes(), CATALOG,
                                  {"elr_controller_config": True, "min_insync_replicas_default": 2})
    assert restored.state.elr_enabled
    assert restored.state.effective_min_isr(restored.state.partitions[(TID, 0)]) == 2


def _fuzz_events():
    from hypothesis import strategies as st

    from kraft_audit.core.events import MetadataEvent

    ints = st.one_of(st.integers(-3, 5), st.none(), st.text(max_size=2))
    int_lists = st.one_of(st.none(), st.lists(st.integers(-2, 5), max_size=4), st.integers())
    data = st.fixed_dictionaries({}, optional={
        "topicId": st.sampled_from([TID, OTHER, None, 7]), "partitionId": ints, "brokerId": ints,
        "id": ints, "leader": ints, "isr": int_lists, "replicas": int_lists,
        "eligibleLeaderReplicas": int_lists, "lastKnownElr": int_lists, "leaderRecoveryState": ints,
        "name": st.sampled_from(["t", "min.insync.replicas", "metadata.version",
                                 "eligible.leader.replicas.version"]),
        "featureLevel": ints, "brokerEpoch": ints, "requestVersion": ints, "value": st.sampled_from(["2", "x", None, 3]), "resourceType": ints,
        "resourceName": st.sampled_from(["", "t"]), "fenced": ints, "incarnationId": ints,
        "previousBrokerEpoch": ints, "logDirs": st.one_of(st.none(), st.lists(st.dictionaries(
            st.sampled_from(["logDir", "partitions"]), st.just([{"partition": "t-0", "size": 1}]))))})
    kinds = st.sampled_from([
        ("record", t) for t in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD", "TOPIC_RECORD",
                                "REMOVE_TOPIC_RECORD", "CONFIG_RECORD", "FEATURE_LEVEL_RECORD",
                                "REGISTER_BROKER_RECORD", "FENCE_BROKER_RECORD",
                                "BROKER_REGISTRATION_CHANGE_RECORD", "CLEAR_ELR_RECORD")]
        + [("registration", "BROKER_REGISTRATION_REQUEST"), ("log_dirs", "BROKER_LOG_DIRS"),
           ("control", "LEADER_CHANGE")])
    event = st.builds(lambda k, d, off, size: MetadataEvent(
        "c1", "fuzz", 0, off if k[0] in ("record", "control") else -1, off, off + size,
        1000 + max(off, 0), k[0], k[1], 0, d),
        kinds, data, st.integers(-1, 30), st.integers(0, 2))
    return st.lists(event, max_size=40)


def test_arbitrary_input_never_raises_and_every_event_is_counted():
    from hypothesis import given, settings

    @settings(max_examples=150, deadline=None)
    @given(_fuzz_events())
    def check(events):
        auditor = Auditor(CATALOG)
        half = len(events) // 2
        auditor.process(events[:half])
        restored = Auditor.from_bytes(auditor.to_bytes(), CATALOG)
        restored.process(events[half:])
        restored.gauges()
        assert restored.applied + restored.duplicates + restored.quarantined == len(events)

    check()


def test_a_record_naming_a_broker_by_no_integer_is_no_finding_about_such_a_broker():
    """A broker id that is no integer (a hand-written or damaged record) names no broker:
    no rule reports it as one (a finding's broker column is an integer), and the audit goes on."""
    from kraft_audit.core.events import MetadataEvent

    events = [MetadataEvent("c1", "fuzz", 0, off, off, off, 1000 + off, "record", t, 0, d)
              for off, (t, d) in enumerate([
                  ("REGISTER_BROKER_RECORD", {"brokerId": "", "brokerEpoch": -1}),
                  ("REGISTER_BROKER_RECORD", {"brokerId": "1", "brokerEpoch": 3}),
                  ("FENCE_BROKER_RECORD", {"id": "", "epoch": 0}),
                  ("PRODUCER_IDS_RECORD", {"brokerId": "", "brokerEpoch": 1, "nextProducerId": 1000})])]
    auditor = Auditor(CATALOG)
    out = auditor.process(events)
    assert auditor.applied + auditor.duplicates + auditor.quarantined == len(events)
    assert all(v.broker_id is None or type(v.broker_id) is int for v in out.violations)
    assert not [v for v in out.violations if v.rule_id in ("kraft.broker-epoch", "kraft.producer-ids-increase")]


def test_an_under_min_isr_interval_keeps_the_min_isr_source_it_opened_with(kraft_log):
    log = kraft_log
    log.batch(*log.elr_features(True))
    log.batch(*[log.register(b, epoch=b) for b in (1, 2, 3)])
    log.batch(log.config(4, "", "min.insync.replicas", "2"),  # the cluster's: source "log"
              log.topic("t", TID), log.partition(TID, 0, [1, 2, 3]))
    (shrink,) = log.batch(log.change(TID, 0, isr=[1], elr=[2, 3]))
    log.batch(log.config(2, "t", "min.insync.replicas", "3"))  # now the topic's, still under it
    first = Auditor(CATALOG)
    out = first.process(log.events)
    opened = [c for c in out.conditions if c.condition == "under_min_isr"]
    assert [(c.start_offset, c.end_offset, c.min_isr_source) for c in opened] == [(shrink.offset, None, "log")]
    assert {c.min_isr_source for c in out.conditions if c.condition != "under_min_isr"} == {None}
    assert first.state.min_isr_source(TID) == "topic"  # the source now (partition rows and views)
    # kept in the stored form; the close row says the source the interval opened with
    restored = Auditor.from_bytes(first.to_bytes(), CATALOG)
    assert [c.min_isr_source for c in restored.open_conditions() if c.condition == "under_min_isr"] == ["log"]
    (grow,) = log.batch(log.change(TID, 0, isr=[1, 2, 3], elr=[]))
    closed = [c for c in restored.process([grow]).conditions if c.condition == "under_min_isr"]
    assert [(c.start_offset, c.end_offset, c.min_isr_source) for c in closed] == [(shrink.offset, grow.offset, "log")]


def test_a_malformed_partition_record_that_goes_back_is_quarantined_not_raised():
    """An offset regression on a partition record without topicId or partitionId (found by
    the fuzz test above): reported cluster-wide, counted, never an exception."""
    from kraft_audit.core.events import KIND_RECORD, MetadataEvent

    def event(offset, data):
        return MetadataEvent("c1", "fuzz", 0, offset, offset, offset, 1000 + offset, KIND_RECORD,
                             "PARTITION_RECORD", 0, data)

    auditor = Auditor(CATALOG)
    auditor.process([event(0, {"topicId": "GGGGGGGGGGGGGGGGGGGGGG", "partitionId": 0})])
    restored = Auditor.from_bytes(auditor.to_bytes(), CATALOG)
    out = restored.process([event(1, {}), event(0, {}), event(0, {"topicId": "x", "partitionId": "0"})])
    assert [v.rule_id for v in out.violations].count("input.offset-regression") == 2
    assert restored.applied + restored.duplicates + restored.quarantined == 4
