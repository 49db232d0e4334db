"""The leader_imbalanced condition: a partition led by another broker than its preferred
replica (the first) although that one could lead. Kafka's controller elects it on a timer
(leader.imbalance.check.interval.seconds) when auto.leader.rebalance.enable is on; the
interval opens at the record that makes the preferred replica electable and closes at the
record that elects it or makes it unelectable (a broker record included)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraft_audit.core.audit import Auditor
from kraft_audit.core.codec.logdir import read_log_dir
from kraft_audit.core.events import MetadataEvent
from kraft_audit.core.rules import load_catalog
from kraft_audit.testing.realkafka import oracles

CATALOG = load_catalog()
TID = "LLLLLLLLLLLLLLLLLLLLLA"
DIRS = {b: f"dir{b}xxxxxxxxxxxxxxxxxA" for b in (1, 2, 3, 4)}  # each broker's log directory
OTHER_DIR = "dir9xxxxxxxxxxxxxxxxxA"


def imbalanced(out) -> list[tuple[int, int | None]]:
    return [(c.start_offset, c.end_offset) for c in out.conditions if c.condition == "leader_imbalanced"]


def offset(events) -> int:
    return events[-1].offset


def cluster(log, replicas=(1, 2, 3), directories=None) -> None:
    """Brokers 1-4 up (a directory each); partition 0 on `replicas`, led by the first."""
    log.batch(log.feature("metadata.version", 21))
    for b in (1, 2, 3, 4):
        kind, data = log.register(b, epoch=b * 10)
        log.batch((kind, {**data, "logDirs": [DIRS[b]]}))
    extra = {"directories": list(directories)} if directories else {}
    log.batch(log.topic("t", TID), log.partition(TID, 0, list(replicas), **extra))


def preferred_out_and_back(log) -> tuple[int, int]:
    """Broker 1, the preferred replica, fenced (2 leads), unfenced and back in the ISR; the
    offsets of its return to the ISR and of the periodic preferred election."""
    log.batch(log.change(TID, 0, isr=[2, 3], leader=2), log.fence(1))
    log.batch(log.unfence(1))
    back = offset(log.batch(log.change(TID, 0, isr=[2, 3, 1])))
    log.batch(("NO_OP_RECORD", {}))
    elected = offset(log.batch(log.change(TID, 0, leader=1)))
    return back, elected


def test_open_from_the_preferred_replicas_return_to_the_isr_until_its_election(kraft_log):
    cluster(kraft_log)
    back, elected = preferred_out_and_back(kraft_log)
    auditor = Auditor(CATALOG)
    out = auditor.process(kraft_log.events)
    assert imbalanced(out) == [(back, None), (back, elected)]
    assert auditor.gauges().leader_imbalanced == 0
    assert out.violations == []


def test_counted_in_the_gauge_while_open_and_kept_by_the_stored_form(kraft_log):
    cluster(kraft_log)
    kraft_log.batch(kraft_log.change(TID, 0, isr=[2, 3], leader=2), kraft_log.fence(1))
    kraft_log.batch(kraft_log.unfence(1))
    back = offset(kraft_log.batch(kraft_log.change(TID, 0, isr=[2, 3, 1])))
    auditor = Auditor(CATALOG)
    auditor.process(kraft_log.events)
    assert auditor.gauges().leader_imbalanced == 1
    restored = Auditor.from_bytes(auditor.to_bytes(), CATALOG)
    start = len(kraft_log.events)
    elected = offset(kraft_log.batch(kraft_log.change(TID, 0, leader=1)))
    out = restored.process(kraft_log.events[start:])
    assert imbalanced(out) == [(back, elected)]
    assert restored.gauges().leader_imbalanced == 0


def test_an_unfence_alone_opens_nothing_the_replica_is_out_of_the_isr(kraft_log):
    cluster(kraft_log)
    kraft_log.batch(kraft_log.change(TID, 0, isr=[2, 3], leader=2), kraft_log.fence(1))
    kraft_log.batch(kraft_log.unfence(1))
    assert imbalanced(Auditor(CATALOG).process(kraft_log.events)) == []


def _opened(log) -> int:
    cluster(log)
    log.batch(log.change(TID, 0, isr=[2, 3], leader=2), log.fence(1))
    log.batch(log.unfence(1))
    return offset(log.batch(log.change(TID, 0, isr=[2, 3, 1])))


def test_a_fence_of_the_preferred_replica_closes_it_at_the_broker_record(kraft_log):
    back = _opened(kraft_log)
    fenced = kraft_log.batch(kraft_log.fence(1), kraft_log.change(TID, 0, isr=[2, 3]))
    assert imbalanced(Auditor(CATALOG).process(kraft_log.events)) == [(back, None), (back, fenced[0].offset)]


def test_a_controlled_shutdown_of_the_preferred_replica_closes_it(kraft_log):
    back = _opened(kraft_log)
    shutdown = kraft_log.batch(kraft_log.controlled_shutdown(1), kraft_log.change(TID, 0, isr=[2, 3]))
    assert imbalanced(Auditor(CATALOG).process(kraft_log.events))[-1] == (back, shutdown[0].offset)


def test_the_preferred_replicas_directory_going_offline_closes_it_and_coming_back_opens_it(kraft_log):
    cluster(kraft_log, directories=[DIRS[1], DIRS[2], DIRS[3]])
    kraft_log.batch(kraft_log.change(TID, 0, isr=[2, 3], leader=2), kraft_log.fence(1))
    kraft_log.batch(kraft_log.unfence(1))
    back = offset(kraft_log.batch(kraft_log.change(TID, 0, isr=[2, 3, 1])))
    # broker 1 says only another directory is online: its replica of the partition is in DIRS[1]
    offline = offset(kraft_log.batch(("BROKER_REGISTRATION_CHANGE_RECORD",
                                      {"brokerId": 1, "brokerEpoch": 10, "logDirs": [OTHER_DIR]})))
    online = offset(kraft_log.batch(("BROKER_REGISTRATION_CHANGE_RECORD",
                                     {"brokerId": 1, "brokerEpoch": 10, "logDirs": [DIRS[1], OTHER_DIR]})))
    out = Auditor(CATALOG).process(kraft_log.events)
    assert imbalanced(out) == [(back, None), (back, offline), (online, None)]


def test_a_leaderless_partition_is_not_imbalanced_but_offline(kraft_log):
    cluster(kraft_log)
    kraft_log.batch(kraft_log.change(TID, 0, isr=[1], leader=1))
    kraft_log.batch(kraft_log.change(TID, 0, leader=-1))
    assert imbalanced(Auditor(CATALOG).process(kraft_log.events)) == []


def test_nothing_opens_when_the_controller_does_not_rebalance(kraft_log):
    cluster(kraft_log)
    preferred_out_and_back(kraft_log)
    out = Auditor(CATALOG, settings={"auto_leader_rebalance_enable": False}).process(kraft_log.events)
    assert imbalanced(out) == []


def test_a_reassignment_whose_target_puts_an_in_sync_replica_first_is_due_at_once(kraft_log):
    """[1, 2, 3] -> [2, 1, 4]: the replica set lists the target first ([2, 1, 4, 3]); 2 is in
    the ISR, so Kafka's preferred election would elect it before 4 catches up."""
    cluster(kraft_log)
    started = offset(kraft_log.batch(kraft_log.change(TID, 0, replicas=[2, 1, 4, 3], addingReplicas=[4],
                                                      removingReplicas=[3])))
    assert imbalanced(Auditor(CATALOG).process(kraft_log.events)) == [(started, None)]


def test_a_completed_reassignment_whose_new_first_replica_is_in_sync_opens_it(kraft_log):
    """[1, 2, 3] -> [4, 1, 2]: while 4 catches up it is out of the ISR (nothing due); the record
    that brings it in completes the reassignment and keeps leader 1, so 4 is now due."""
    cluster(kraft_log)
    kraft_log.batch(kraft_log.change(TID, 0, replicas=[4, 1, 2, 3], addingReplicas=[4],
                                     removingReplicas=[3]))
    completed = offset(kraft_log.batch(kraft_log.change(TID, 0, replicas=[4, 1, 2], isr=[1, 2, 4],
                                                        addingReplicas=[], removingReplicas=[])))
    elected = offset(kraft_log.batch(kraft_log.change(TID, 0, leader=4)))
    out = Auditor(CATALOG).process(kraft_log.events)
    assert imbalanced(out) == [(completed, None), (completed, elected)]


STORY = Path(__file__).parent / "fixtures" / "kraft-story"


@pytest.mark.parametrize("version", sorted(p.name for p in STORY.iterdir() if p.is_dir()))
def test_real_logs_intervals_equal_an_independent_fold_of_the_records(version):
    """On the story's real logs (a reassignment, restarts, controlled shutdowns) every
    leader_imbalanced interval the core opens is the one the real-Kafka oracle folds from the
    records alone (test_kafka_real compares it with the streaming job); no finding."""
    events = [e for e in read_log_dir(STORY / version / "__cluster_metadata-0")
              if isinstance(e, MetadataEvent)]
    dump: dict[str, list[dict]] = {}
    for e in events:
        if e.source.endswith(".log"):
            dump.setdefault(e.source, []).append({"offset": e.offset, "type": e.type, "data": e.data})
    out = Auditor(CATALOG).process(events)
    assert out.violations == []
    deleted = {e.data["topicId"] for e in events if e.type == "REMOVE_TOPIC_RECORD"}  # not folded
    names = {e.data["topicId"]: e.data["name"] for e in events if e.type == "TOPIC_RECORD"}
    partitions = {(e.data["topicId"], e.data["partitionId"]) for e in events
                  if e.type == "PARTITION_RECORD" and e.data["topicId"] not in deleted}
    compared = 0
    for topic_id, partition in sorted(partitions):
        core = sorted({c.start_offset: c.end_offset for c in out.conditions
                       if c.condition == "leader_imbalanced" and c.topic_id == topic_id
                       and c.partition == partition}.items())
        folded = [(start, end) for name, start, end in
                  oracles.condition_intervals(dump, names[topic_id], 1, partition)
                  if name == "leader_imbalanced"]
        assert core == folded, (names[topic_id], partition)
        compared += len(core)
    assert compared  # the story does leave partitions imbalanced


def test_check_says_how_many_are_open_longer_than_the_controllers_interval(kraft_log, capsys):
    from kraft_audit.cli.check import build_report, print_report

    _opened(kraft_log)
    kraft_log.now_ms += 400_000  # 400 s later, nothing elected
    kraft_log.batch(("NO_OP_RECORD", {}))
    for interval, past in ((300, 1), (600, 0)):
        auditor = Auditor(CATALOG, settings={"leader_imbalance_check_interval_seconds": interval})
        out = auditor.process(kraft_log.events)
        report = build_report(auditor, out, None, None)
        assert report["condition_bounds_seconds"]["leader_imbalanced"] == interval
        print_report(report)
        assert f"{past} open longer than the controller's bound ({interval} s;" in capsys.readouterr().out
    auditor = Auditor(CATALOG, settings={"auto_leader_rebalance_enable": False})
    assert "leader_imbalanced" not in build_report(auditor, auditor.process(kraft_log.events), None,
                                                   None)["condition_bounds_seconds"]


def test_a_new_active_controller_starts_the_interval_again(kraft_log, capsys):
    """A controller that wins an election runs its first leader rebalance one interval after
    it became active: an imbalance older than the interval is not overdue while the new
    controller's own interval runs, and is once that has passed too."""
    from kraft_audit.cli.check import build_report, print_report

    _opened(kraft_log)
    opened_ms = kraft_log.now_ms
    kraft_log.now_ms = opened_ms + 200_000  # the controller before it last wrote at the opening
    started = kraft_log.leader_change(7).timestamp_ms
    for later_s, past in ((400, 0), (300 + 5 + 1, 1)):  # since the opening; since the new controller
        kraft_log.now_ms = (opened_ms if past == 0 else started) + later_s * 1000 - 100
        kraft_log.batch(("NO_OP_RECORD", {}))
        auditor = Auditor(CATALOG, settings={"leader_imbalance_check_interval_seconds": 300})
        report = build_report(auditor, auditor.process(kraft_log.events), None, None)
        assert auditor.controller_changes_ms == [(opened_ms, started)]
        (opened,) = [c for c in report["open_conditions"] if c["condition"] == "leader_imbalanced"]
        assert opened["past_bound"] is bool(past)
        print_report(report)
        assert f"{past} open longer than the controller's bound (300 s;" in capsys.readouterr().out


LIVENESS = Path(__file__).parent / "fixtures" / "kraft-liveness"


@pytest.mark.parametrize("version", sorted(p.name for p in LIVENESS.iterdir() if p.is_dir()))
def test_real_periodic_elections_close_every_interval_within_the_clusters_bound(version, tmp_path):
    """A real controller with a 3 s check interval (its settings kept beside the log): every
    interval closes within it, at the controller's own preferred election; each log left
    without one of those elections holds its interval open past the bound (the mutation
    class missing-liveness), seen only with the cluster's bound, not with Kafka's default."""
    from kraft_audit.testing.mutate import SETTINGS_FILE, audit, flagged, generate, log_settings, write_log

    log = LIVENESS / version
    assert log_settings(log)["leader_imbalance_check_interval_seconds"] == 3
    unmutated = audit(log)
    assert unmutated.violations == [] and unmutated.bounds["leader_imbalanced"] == 3
    closed = [c for c in unmutated.intervals if c.condition == "leader_imbalanced"]
    assert len(closed) >= 4, closed
    assert all(c.end_ms is not None and c.end_ms - c.start_ms <= 3000 for c in closed), closed
    assert unmutated.overdue() == []
    mutants = [m for m in generate(log) if m.liveness and m.liveness[0] == "leader_imbalanced"]
    assert len(mutants) >= 2  # two periodic elections at least
    for n, mutant in enumerate(mutants):
        target = write_log(log, mutant.frames, tmp_path / str(n))
        assert flagged(mutant, target, audit(target)), mutant.what
        (target / SETTINGS_FILE).unlink()  # Kafka's default bound (300 s): nothing overdue
        assert not flagged(mutant, target, audit(target)), mutant.what


@pytest.mark.parametrize("version", sorted(p.name for p in LIVENESS.iterdir() if p.is_dir()))
def test_real_unclean_election_at_the_unfence_and_the_log_left_without_it(version, tmp_path):
    """The same real logs end with the controller's own unclean election: a topic that allows
    it, its last ISR member shut down, a replica out of the ISR unfenced. The controller elects
    it in the unfence's own batch, so unclean_election_overdue never opens; the log left
    without that election (class missing-liveness) opens it at the unfence's end, where a
    correct controller would have elected."""
    from kraft_audit.core.codec.logdir import metadata_dir
    from kraft_audit.testing.mutate import audit, batch_of, flagged, generate, read_frames, write_log

    log = LIVENESS / version
    events = [e for e in read_log_dir(log, "") if isinstance(e, MetadataEvent)]
    auditor = Auditor(CATALOG)
    out = auditor.process(events)
    assert out.violations == [] and auditor.gauges().unclean_elections_total == 1
    elected = next(e for e in events if e.type == "PARTITION_CHANGE_RECORD"
                   and e.data.get("leaderRecoveryState") == 1)
    batch = [e for e in events if e.batch_last_offset == elected.batch_last_offset]
    assert any(e.type == "BROKER_REGISTRATION_CHANGE_RECORD" and e.data.get("fenced") == -1
               and e.data["brokerId"] == elected.data["leader"] for e in batch)
    key = (elected.data["topicId"], elected.data["partitionId"])
    before = [e.data for e in events[:events.index(elected)] if e.type.startswith("PARTITION")
              and (e.data["topicId"], e.data["partitionId"]) == key]
    isr = next(d["isr"] for d in reversed(before) if d.get("isr") is not None)
    elr = next((d["eligibleLeaderReplicas"] for d in reversed(before)
                if d.get("eligibleLeaderReplicas") is not None), [])
    assert elected.data["leader"] not in isr + elr  # out of the ISR and the ELR: unclean
    unmutated = audit(log)
    assert [c for c in unmutated.intervals if c.condition == "unclean_election_overdue"] == []
    recovered = next(e.offset for e in events if e.offset > elected.offset
                     and e.data.get("leaderRecoveryState") == 0)  # the leader's ISR expansion
    assert [(c.start_offset, c.end_offset) for c in unmutated.intervals
            if c.condition == "recovering"] == [(elected.offset, recovered)]
    mutants = [m for m in generate(log) if m.liveness and m.liveness[0] == "unclean_election_overdue"]
    assert [m.offset for m in mutants] == [batch[0].offset]
    target = write_log(log, mutants[0].frames, tmp_path / "mutant")
    mutated = audit(target)
    assert flagged(mutants[0], target, mutated)
    _first, end = batch_of(target, mutants[0].offset)
    opened = [c.start_offset for c in mutated.intervals if c.condition == "unclean_election_overdue"]
    assert opened == [end]  # at the unfence's end, where the controller elects
    # where the topic does not allow it, no controller promises that election: no such mutant
    frames = read_frames(metadata_dir(log))
    config = next(r for f in frames for r in f.records if r.type == "CONFIG_RECORD"
                  and r.data["name"] == "unclean.leader.election.enable")
    config.data["value"] = "false"
    disallowed = write_log(log, frames, tmp_path / "disallowed")
    assert [m.what for m in generate(disallowed)
            if m.liveness and m.liveness[0] == "unclean_election_overdue"] == []


def _as_kafka_dump(events) -> dict[str, list[dict]]:
    return {"00000000000000000000.log": [{"offset": e.offset, "type": e.type, "data": e.data}
                                         for e in events if isinstance(e, MetadataEvent)]}


def test_the_fenced_election_oracle_sees_what_the_rule_sees(kraft_log):
    """test_kafka_real expects the known fenced-leader election exactly when this fold of
    Kafka's dump shows one: it must agree with the rule on a log with and without it."""
    cluster(kraft_log)
    kraft_log.batch(kraft_log.change(TID, 0, isr=[2, 3], leader=2), kraft_log.fence(1))
    assert oracles.leaders_elected_while_fenced(_as_kafka_dump(kraft_log.events), "t") == []
    wrong = offset(kraft_log.batch(kraft_log.change(TID, 0, isr=[1], leader=1)))
    out = Auditor(CATALOG).process(kraft_log.events)
    assert "kip966.leader-registered-unfenced" in {v.rule_id for v in out.violations}
    assert oracles.leaders_elected_while_fenced(_as_kafka_dump(kraft_log.events), "t") == [wrong]
    # every partition's (the form test_kafka_real compares with the rule's findings)
    assert oracles.leaders_elected_while_fenced(_as_kafka_dump(kraft_log.events)) == \
        [v.offset for v in out.violations if v.rule_id == "kip966.leader-registered-unfenced"] == [wrong]
