"""Replaying logs that real Kafka clusters wrote reproduces what an independent decoder found,
and no rule fires on them."""

from __future__ import annotations

import json

from conftest import REAL_FIXTURES

from kraft_audit.core.audit import Auditor
from kraft_audit.core.codec.logdir import list_snapshots, metadata_dir, read_file_events, read_log_dir
from kraft_audit.core.rules import load_catalog

CATALOG = load_catalog()


def replay(events) -> tuple[Auditor, object]:
    auditor = Auditor(CATALOG)
    return auditor, auditor.process(events)


def test_replay_matches_expected_and_is_clean(real_fixture):
    expected = json.loads((real_fixture / "EXPECTED.json").read_text())
    auditor, out = replay(read_log_dir(real_fixture))
    state = auditor.state

    assert out.violations == [] and out.quarantined == []
    assert auditor.applied == expected["records"] and auditor.last_offset == expected["last_offset"]
    assert state.features == expected["features"]
    assert {str(b): {"epoch": x.epoch, "fenced": x.fenced} for b, x in state.brokers.items()} == \
        expected["brokers"]
    got = sorted((state.topic_name(tid), tid, p, list(x.replicas), list(x.isr), x.leader,
                  x.leader_epoch, x.partition_epoch) for (tid, p), x in state.partitions.items())
    want = sorted((p["topic"], p["topic_id"], p["partition"], p["replicas"], p["isr"], p["leader"],
                   p["leader_epoch"], p["partition_epoch"]) for p in expected["partitions"])
    assert got == want


def test_logs_ending_in_a_clean_shutdown_leave_every_partition_leaderless(real_fixture):
    auditor, _ = replay(read_log_dir(real_fixture))
    gauges = auditor.gauges()
    assert gauges.partitions == gauges.leaderless > 0
    assert gauges.manual_election_required == 0  # the ISR kept its last member (no ELR)
    assert {b.last_shutdown for b in auditor.state.brokers.values()} <= {None, "clean"}
    assert {c.condition for c in auditor.open_conditions()} == {"leaderless"}


def test_snapshot_equals_segment_replayed_to_its_end_offset():
    fixture = REAL_FIXTURES / "renoagilsaputra__kafka"
    end_offset, _epoch, snapshot = list_snapshots(metadata_dir(fixture))[-1]
    assert end_offset == 7111
    from_segments, _ = replay(e for e in read_log_dir(fixture) if e.offset < end_offset)
    from_snapshot, out = replay(read_file_events(snapshot, "cluster"))
    assert out.violations == []
    a, b = from_segments.state, from_snapshot.state
    assert a.partitions == b.partitions
    assert a.topics == b.topics and a.features == b.features and a.configs == b.configs
    assert {i: (x.epoch, x.fenced, x.incarnation_id) for i, x in a.brokers.items()} == \
        {i: (x.epoch, x.fenced, x.incarnation_id) for i, x in b.brokers.items()}


def test_a_log_booted_from_a_snapshot_writes_its_rows_where_the_snapshot_ends(tmp_path):
    """A snapshot's records are read at their positions in the file; what the audit writes
    about them (partition and broker rows, condition intervals) is placed at the snapshot's
    end offset - 1 and its last record's time, and the segment after it at its own offsets:
    the same final rows as the whole log gives, the snapshot's changes folded into one."""
    from log_cuts import RENO, RENO_SNAPSHOT_END, booted_from_snapshot

    booted = booted_from_snapshot(tmp_path / "booted")
    [header] = [e for e in read_log_dir(booted) if e.type == "SNAPSHOT_HEADER"]
    placed = (RENO_SNAPSHOT_END - 1, header.data["lastContainedLogTimestamp"])
    auditor, out = replay(read_log_dir(booted))
    _, whole = replay(read_log_dir(RENO))
    assert out.violations == whole.violations == []
    from_snapshot = [r for r in out.partitions if r.offset < RENO_SNAPSHOT_END]
    assert from_snapshot and {(r.offset, r.timestamp_ms) for r in from_snapshot} == {placed}
    assert {(b.offset, b.timestamp_ms) for b in out.brokers if b.offset < RENO_SNAPSHOT_END} == {placed}
    assert [r for r in out.partitions if r.offset >= RENO_SNAPSHOT_END] == \
        [r for r in whole.partitions if r.offset >= RENO_SNAPSHOT_END]

    def latest(rows):
        return {(r.topic_id, r.partition): r for r in rows}

    for key, row in latest(whole.partitions).items():
        got = latest(out.partitions)[key]
        if row.offset >= RENO_SNAPSHOT_END:
            assert got == row
        else:  # its last change is inside the snapshot: the same state, at the snapshot's place
            assert (got.isr, got.leader, got.leader_epoch, got.partition_epoch) == (
                row.isr, row.leader, row.leader_epoch, row.partition_epoch)
            assert (got.offset, got.timestamp_ms) == placed
    assert {(c.start_offset, c.start_ms) for c in auditor.open_conditions()
            if c.start_offset < RENO_SNAPSHOT_END} <= {placed}
    # the input is still ordered by what was read: the segment's records follow, none skipped
    assert auditor.last_offset == max(e.offset for e in read_log_dir(RENO)) and auditor.duplicates == 0
