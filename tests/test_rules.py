"""Every rule fires on the fault it describes and stays quiet on the correct record."""

from __future__ import annotations

import json

import pytest

from conftest import catalog_for_loaded_states
from kraft_audit.core.audit import Auditor
from kraft_audit.core.rules import load_catalog

TID = "BBBBBBBBBBBBBBBBBBBBBB"
CATALOG = load_catalog()
LOADED = catalog_for_loaded_states()  # for logs that create a partition in a later state


def run(log, catalog=CATALOG, **settings):
    auditor = Auditor(catalog, settings)
    return auditor, auditor.process(log.events)


def rule_hits(out, rule_id):
    return [v for v in out.violations if v.rule_id == rule_id]


def base(log, replicas=(1, 2, 3), isr=None, min_isr=2, elr=True, live=None, **fields):
    live = set(replicas if live is None else live)
    log.batch(*log.elr_features(elr))
    log.batch(*[log.register(b, epoch=b, fenced=b not in live) for b in replicas])
    log.batch(log.topic("t", TID), log.config(2, "t", "min.insync.replicas", str(min_isr)),
              log.partition(TID, 0, list(replicas), None if isr is None else list(isr), **fields))


# (rule, build the faulty log -> offending event, build the correct log, settings)
def field_range(log, bad):
    base(log)
    return log.batch(log.change(TID, 0, lrs=7 if bad else -1, isr=[1, 2]))[0]


def recovering_only_by_unclean(log, bad):
    base(log, isr=[1], elr=False)
    change = log.change(TID, 0, lrs=1) if bad else log.change(TID, 0, leader=2, isr=[2], lrs=1)
    return log.batch(change, log.fence(1))[0]


def subset_of_replicas(log, bad):
    base(log, elr=False)
    return log.batch(log.change(TID, 0, isr=[1, 2, 9] if bad else [1, 2]))[0]


def last_known_elr(log, bad):
    base(log, live=[1])
    return log.batch(log.change(TID, 0, isr=[], leader=-1, elr=[1, 2, 3], lke=[3] if bad else [1]),
                     log.fence(1))[0]


def elr_enters_from_isr(log, bad):
    base(log, replicas=(1, 2, 3, 4), isr=[1, 2, 3], min_isr=3)
    return log.batch(log.change(TID, 0, isr=[1, 2], elr=[3, 4] if bad else [3]))[0]


def last_known_elr_enters_from_isr(log, bad):
    base(log, isr=[1], live=[1])
    return log.batch(log.change(TID, 0, isr=[], leader=-1, elr=[1], lke=[2] if bad else [1]),
                     log.fence(1))[0]


def replica_placement(log, bad):
    base(log)
    if not bad:
        log.batch(log.register(4, epoch=4, fenced=False))
    return log.batch(log.change(TID, 0, replicas=[1, 2, 3, 4], addingReplicas=[4]))[0]


def new_partition(log, fenced=(3,), **fields):
    log.batch(*log.elr_features(True))
    log.batch(*[log.register(b, epoch=b, fenced=b in fenced) for b in (1, 2, 3)])
    return log.batch(log.topic("t", TID), log.partition(TID, 0, [1, 2, 3], **fields))[-1]


def new_partition_with_fenced_isr(log, bad):
    return new_partition(log, isr=[1, 2, 3] if bad else [1, 2])


def new_partition_with_elr(log, bad):
    return new_partition(log, isr=[1, 2], **({"eligibleLeaderReplicas": [3]} if bad else {}))


def new_partition_leaderless(log, bad):
    return new_partition(log, isr=[1, 2], leader=-1 if bad else None)


def no_elr_when_disabled(log, bad):
    base(log, elr=False, min_isr=3)
    return log.batch(log.change(TID, 0, isr=[1], elr=[2, 3]) if bad else log.change(TID, 0, isr=[1]))[0]


def leader_in_isr(log, bad):
    base(log, elr=False)
    return log.batch(log.change(TID, 0, isr=[2, 3]) if bad else log.change(TID, 0, isr=[1, 2]))[0]


def partition_epoch_bump(log, bad):
    base(log, elr=False)
    return log.batch(log.change(TID, 0, isr=[1, 2, 3] if bad else [1, 2]))[0]


def epochs_monotonic(log, bad):
    log.batch(log.topic("t", TID))
    return log.batch(log.partition(TID, 0, [1], leaderEpoch=3 if bad else 0))[0]


def rogue_partition_record_same_epoch(log, bad):
    base(log, elr=False)
    return log.batch(log.partition(TID, 0, [1, 2, 3], [1, 2], partitionEpoch=0 if bad else 1))[0]


def rogue_partition_record_same_leader_epoch(log, bad):
    base(log, elr=False)
    return log.batch(log.partition(TID, 0, [1, 2, 3], [2, 1, 3], leader=2, leaderEpoch=0 if bad else 1,
                                   partitionEpoch=1))[0]


def epoch_regressed(log, bad):
    base(log, elr=False)
    log.batch(log.change(TID, 0, isr=[1, 2]))
    return log.batch(log.partition(TID, 0, [1, 2, 3], [1, 2, 3], partitionEpoch=0 if bad else 2))[0]


def recovering_isr_is_leader(log, bad):
    base(log, isr=[1], elr=False)
    return log.batch(log.change(TID, 0, leader=2, isr=[2, 3] if bad else [2], lrs=1), log.fence(1))[0]


def elr_only_below_min_isr(log, bad):
    base(log, min_isr=2)
    return log.batch(log.change(TID, 0, isr=[1, 2], elr=[3] if bad else None))[0]


def field_set_to_same_value(log, bad):
    base(log, elr=False)
    return log.batch(log.change(TID, 0, isr=[1, 2], replicas=[1, 2, 3] if bad else None))[0]


def recovery_state_set_to_same_value(log, bad):
    base(log, elr=False)
    return log.batch(log.change(TID, 0, isr=[1, 2], lrs=0 if bad else -1))[0]


def leader_bump_without_cause(log, bad):
    base(log, elr=False)
    # an ISR expansion never bumps; dropping replica 3 (reassignment) does
    log.batch(log.change(TID, 0, isr=[1, 2]))
    if bad:
        return log.batch(log.change(TID, 0, isr=[1, 2, 3], leader=1))[0]
    return log.batch(log.change(TID, 0, replicas=[1, 2], leader=1))[0]


def leader_bump_on_isr_shrink_at_new_mv(log, bad):
    log.batch(*log.elr_features(False, mv=22 if bad else 11))
    log.batch(*[log.register(b, epoch=b) for b in (1, 2, 3)])
    log.batch(log.topic("t", TID), log.partition(TID, 0, [1, 2, 3]))
    return log.batch(log.change(TID, 0, isr=[1, 2], leader=1))[0]


CASES = [
    ("kip704.field-range", field_range, {}),
    ("kip704.recovering-only-by-unclean-election", recovering_only_by_unclean, {}),
    ("kip704.recovering-isr-is-leader", recovering_isr_is_leader, {}),
    ("kip966.subset-of-replicas", subset_of_replicas, {}),
    ("kip966.last-known-elr-matches-kafka", last_known_elr, {"catalog": LOADED}),
    ("kip966.elr-enters-from-isr", elr_enters_from_isr, {}),
    ("kip966.last-known-elr-enters-from-isr", last_known_elr_enters_from_isr, {}),
    ("kraft.replica-placement", replica_placement, {}),
    ("kraft.new-partition-isr-live", new_partition_with_fenced_isr, {}),
    ("kraft.new-partition-isr-live", new_partition_with_elr, {}),
    ("kraft.new-partition-isr-live", new_partition_leaderless, {}),
    ("kip966.no-elr-when-disabled", no_elr_when_disabled, {}),
    ("kip966.leader-in-isr", leader_in_isr, {}),
    ("kip966.elr-only-below-min-isr", elr_only_below_min_isr, {}),
    ("kraft.partition-epoch-bump", partition_epoch_bump, {}),
    ("kraft.epochs-monotonic", epochs_monotonic, {}),
    ("kraft.partition-epoch-bump", rogue_partition_record_same_epoch, {}),
    ("kraft.leader-epoch-bump", rogue_partition_record_same_leader_epoch, {}),
    ("kraft.epochs-monotonic", epoch_regressed, {}),
    ("kraft.change-sets-new-values", field_set_to_same_value, {}),
    ("kraft.change-sets-new-values", recovery_state_set_to_same_value, {}),
    ("kraft.leader-bump-has-cause", leader_bump_without_cause, {}),
    ("kraft.leader-bump-has-cause", leader_bump_on_isr_shrink_at_new_mv, {}),
]


IDS = [f"{c[0]}:{c[1].__name__}" for c in CASES]


@pytest.mark.parametrize("rule_id,build,settings", CASES, ids=IDS)
def test_rule_fires_on_the_fault(kraft_log, rule_id, build, settings):
    bad = build(kraft_log, True)
    _, out = run(kraft_log, **settings)
    hits = rule_hits(out, rule_id)
    assert [v.offset for v in hits] == [bad.offset]
    assert hits[0].topic_id == TID and hits[0].partition == 0 and hits[0].topic == "t"
    assert json.loads(hits[0].evidence)["record"]["offset"] == bad.offset


@pytest.mark.parametrize("rule_id,build,settings", CASES, ids=IDS)
def test_rule_quiet_on_correct_record(kraft_log, rule_id, build, settings):
    build(kraft_log, False)
    _, out = run(kraft_log, **settings)
    assert out.violations == []


def test_violation_ids_are_deterministic(kraft_log):
    bad = leader_in_isr(kraft_log, True)
    first = run(kraft_log)[1].violations
    second = run(kraft_log)[1].violations
    assert [v.violation_id for v in first] == [v.violation_id for v in second] == [
        f"c1/kip966.leader-in-isr/{bad.offset}/{TID}/0/None"]


def test_leader_registered_unfenced_fires_for_controlled_shutdown_leader(kraft_log):
    log = kraft_log
    base(log, elr=False)
    log.batch(log.controlled_shutdown(2))
    (bad,) = log.batch(log.change(TID, 0, leader=2))
    (good,) = log.batch(log.change(TID, 0, leader=1))
    _, out = run(log)
    hits = rule_hits(out, "kip966.leader-registered-unfenced")
    assert [(v.offset, v.broker_id) for v in hits] == [(bad.offset, 2)]
    assert good.offset not in [v.offset for v in out.violations]


# ---------------------------------------------------------------- registrations

def restart(log, clean: bool, removed_from_elr: bool):
    """Broker 3 (epoch 3, in the ELR) restarts; its request says whether it shut down cleanly."""
    base(log, isr=[1], min_isr=3, live=[1, 2], eligibleLeaderReplicas=[2, 3])
    changes = [log.change(TID, 0, elr=[2])] if removed_from_elr else []
    *_, reg = log.batch(*changes, log.register(3, "inc-3b", epoch=100, fenced=True))
    log.registration(3, "inc-3b", previous_epoch=3 if clean else -1)
    return reg


@pytest.mark.parametrize("clean,removed,rule_id,fires", [
    (False, False, "kip966.unclean-shutdown-removed", True),
    (False, True, "kip966.unclean-shutdown-removed", False),
    (True, True, "kip966.clean-shutdown-detection", True),
    (True, False, "kip966.clean-shutdown-detection", False),
])
def test_registration_verdicts(kraft_log, clean, removed, rule_id, fires):
    reg = restart(kraft_log, clean, removed)
    auditor, out = run(kraft_log)
    hits = rule_hits(out, rule_id)
    # an unclean restart is reported at its RegisterBrokerRecord, a clean one treated as
    # unclean at the change that dropped the broker from the ELR (just before it)
    at = reg.offset if not clean else reg.offset - 1
    assert [(v.offset, v.broker_id, v.partition) for v in hits] == ([(at, 3, 0)] if fires else [])
    assert auditor.state.brokers[3].last_shutdown == ("clean" if clean else "unclean")
    assert auditor.state.brokers[3].last_shutdown_source == "request-log"  # read, not inferred


def test_registration_request_may_arrive_first(kraft_log):
    log = kraft_log
    base(log, isr=[1], min_isr=3, live=[1, 2], eligibleLeaderReplicas=[2, 3])
    log.registration(3, "inc-3b", previous_epoch=-1)
    (reg,) = log.batch(log.register(3, "inc-3b", epoch=100, fenced=True))
    _, out = run(log)
    assert [v.offset for v in rule_hits(out, "kip966.unclean-shutdown-removed")] == [reg.offset]


def test_kafka_4_0_judges_every_new_incarnation_unclean(kraft_log):
    restart(kraft_log, clean=True, removed_from_elr=True)
    _, out = run(kraft_log, LOADED, clean_shutdown_detection="incarnation")
    assert out.violations == []


def test_unmatched_registration_becomes_unverifiable(kraft_log):
    log = kraft_log
    base(log)
    request = log.registration(7, "never", previous_epoch=-1)
    log.now_ms += 600_000
    log.batch(log.feature("group.version", 1))
    _, out = run(log)
    hits = rule_hits(out, "kip966.registration-unverifiable")
    assert [(v.broker_id, v.offset, v.timestamp_ms) for v in hits] == [(7, -1, request.timestamp_ms)]


def test_pending_registration_within_timeout_is_quiet(kraft_log):
    log = kraft_log
    base(log)
    log.registration(7, "soon", previous_epoch=-1)
    auditor, out = run(log)
    assert out.violations == []
    assert auditor.expire(kraft_log.now_ms + 10**9).violations[0].rule_id == \
        "kip966.registration-unverifiable"


# ---------------------------------------------------------------- stray replicas (KIP-550)

def test_stray_replicas(kraft_log):
    log = kraft_log
    base(log, elr=False)
    gone = "CCCCCCCCCCCCCCCCCCCCCC"
    log.batch(log.topic("old-topic", gone), log.partition(gone, 0, [1]))
    log.batch(log.remove_topic(gone))
    log.log_dirs(1, [("t-0", 10), ("old-topic-0", 20), ("never-seen-0", 30),
                     ("__cluster_metadata-0", 5)])
    log.log_dirs(9, [("t-0", 40)])
    log.log_dirs(2, [("t-0", 50), ("t-7", 60)])
    _, out = run(log)
    hits = sorted((v.broker_id, str(v.topic), v.partition or 0, json.loads(v.evidence)["size"])
                  for v in rule_hits(out, "kip550.stray-replica"))
    assert hits == [(1, "None", 0, 30), (1, "old-topic", 0, 20), (2, "t", 7, 60), (9, "t", 0, 40)]


def test_strays_are_told_by_topic_id_after_a_topic_is_created_again(kraft_log, tmp_path):
    """Deleted and created again under the same name while broker 1 was away: its old
    replicas keep the old id in partition.metadata, the name alone would pass them."""
    from kraft_audit.sideinputs.inventories import scan_log_dir

    log = kraft_log
    base(log, elr=False)
    log.batch(log.remove_topic(TID))
    new_id = "NNNNNNNNNNNNNNNNNNNNNQ"
    log.batch(log.topic("t", new_id), log.partition(new_id, 0, [1, 2, 3]),
              log.partition(new_id, 1, [2, 3, 4]))
    data = tmp_path / "data"
    for name, topic_id in (("t-0", new_id), ("t-0.0a1b2c3d4e5f-stray", TID),
                           ("t-1.1a1b2c3d4e5f-stray", TID), ("t-2", None)):
        (data / name).mkdir(parents=True)
        if topic_id:
            (data / name / "partition.metadata").write_text(f"version: 0\ntopic_id: {topic_id}\n")
    (data / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=c1\n")
    log.events.extend(scan_log_dir(data, "c1", now_ms=log.now_ms))
    _, out = run(log)
    hits = sorted((v.partition, v.topic_id, "deleted" in v.message)
                  for v in rule_hits(out, "kip550.stray-replica"))
    # both -stray copies belong to the deleted topic; t-2 (no partition.metadata) is judged by
    # name: the new topic has no partition 2
    assert hits == [(0, TID, True), (1, TID, True), (2, new_id, False)]


def test_stray_replica_size_threshold(kraft_log):
    log = kraft_log
    base(log, elr=False)
    log.log_dirs(9, [("t-0", 40)])
    catalog = load_catalog()
    spec = catalog.get("kip550.stray-replica")
    spec.parameters["min_size_bytes"] = 100
    out = Auditor(catalog).process(log.events)
    assert out.violations == []


# ---------------------------------------------------------------- input rules

def test_input_unknown_partition_is_quarantined(kraft_log):
    log = kraft_log
    log.batch(log.topic("t", TID))
    (bad,) = log.batch(log.change(TID, 5, isr=[1]))
    auditor, out = run(log)
    assert [(v.rule_id, v.offset) for v in out.violations] == [("input.unknown-partition", bad.offset)]
    assert [q.offset for q in out.quarantined] == [bad.offset]
    assert (auditor.applied, auditor.quarantined) == (1, 1)


def test_input_unknown_topic_partition_still_applied(kraft_log):
    log = kraft_log
    (bad,) = log.batch(log.partition(TID, 0, [1]))
    auditor, out = run(log)
    assert [(v.rule_id, v.offset) for v in out.violations] == [("input.unknown-topic", bad.offset)]
    assert (TID, 0) in auditor.state.partitions and out.quarantined == []


def test_input_unknown_broker(kraft_log):
    log = kraft_log
    (bad,) = log.batch(log.fence(42))
    auditor, out = run(log)
    assert [(v.rule_id, v.broker_id) for v in out.violations] == [("input.unknown-broker", 42)]
    assert auditor.quarantined == 1


def test_input_offset_regression_after_progress(kraft_log):
    log = kraft_log
    log.batch(log.topic("t", TID))
    log.batch(log.topic("u", "DDDDDDDDDDDDDDDDDDDDDD"))
    log.events.append(log.events[0])  # offset 0 again, after offset 1 was applied
    auditor, out = run(log)
    assert [(v.rule_id, v.offset) for v in out.violations] == [("input.offset-regression", 0)]
    assert (auditor.applied, auditor.duplicates, auditor.quarantined) == (2, 0, 1)


def test_a_batch_delivered_twice_in_one_call_is_a_duplicate_not_a_regression(kraft_log):
    """The shipper's topic may hold a batch twice (it was restarted before Kafka acknowledged
    the first copy); read in one micro-batch, in offset order, each copy follows its original."""
    log = kraft_log
    log.batch(log.topic("t", TID))
    log.batch(*[log.register(b) for b in (1, 2, 3)])
    log.batch(log.partition(TID, 0, [1, 2, 3]), log.partition(TID, 1, [2, 3, 1]))
    events = list(log.events)
    doubled = [copy for e in events for copy in (e, e)]
    log.events[:] = doubled
    auditor, out = run(log)
    assert out.violations == [] and auditor.quarantined == 0
    assert (auditor.applied, auditor.duplicates) == (len(events), len(events))


def test_a_registration_request_delivered_twice_is_a_duplicate(kraft_log):
    reg = restart(kraft_log, clean=False, removed_from_elr=False)
    kraft_log.events.append(kraft_log.events[-1])
    kraft_log.now_ms += 10**9
    kraft_log.batch(kraft_log.feature("group.version", 1))
    auditor, out = run(kraft_log, LOADED)
    assert [v.rule_id for v in out.violations] == ["kip966.unclean-shutdown-removed"]
    assert out.violations[0].offset == reg.offset and auditor.duplicates == 1


@pytest.mark.parametrize("clean", [True, False])
def test_elr_findings_explained_only_by_an_unclean_shutdown_wait_for_the_verdict(kraft_log, clean):
    reg = restart(kraft_log, clean=clean, removed_from_elr=True)
    _, out = run(kraft_log)
    held = [(v.offset, v.partition) for v in rule_hits(out, "kip966.elr-matches-kafka")]
    assert held == ([(reg.offset - 1, 0)] if clean else [])
