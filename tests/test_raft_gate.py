"""The Raft gate (kraft_audit/core/raft.py): what it releases, holds, retracts and reports."""

from __future__ import annotations

import numpy as np

from kraft_audit.core.events import (COMMIT_CLAIM, KIND_COMMIT, KIND_CONTROL, KIND_LOG_RUNS, KIND_RECORD,
                                     LOG_RUNS, MetadataEvent, Quarantined, packed_noops)
from kraft_audit.core.raft import GateReport, RaftGate


class Log:
    """Records as a controller's log holds them, each batch in a Raft epoch."""

    def __init__(self, cluster: str = "c1", source: str = "00000000000000000000.log"):
        self.cluster, self.source = cluster, source
        self.next = 0
        self.ms = 1_000

    def leader_change(self, epoch: int, leader: int, voters=(1, 2, 3)) -> MetadataEvent:
        at = self.next
        self.next += 1
        self.ms += 10
        return MetadataEvent(self.cluster, self.source, at, at, at, at, self.ms, KIND_CONTROL,
                             "LEADER_CHANGE", 0, {"leaderId": leader, "voters": [{"voterId": v} for v in voters]},
                             leader_epoch=epoch)

    def batch(self, epoch: int, n: int = 1, type_: str = "NO_OP_RECORD") -> list[MetadataEvent]:
        base = self.next
        self.next += n
        self.ms += 10
        return [MetadataEvent(self.cluster, self.source, base, base + i, base, base + n - 1, self.ms,
                              KIND_RECORD, type_, 0, {}, 20, leader_epoch=epoch) for i in range(n)]

    def at(self, offset: int) -> "Log":
        self.next = offset
        return self


def claim(offset: int, epoch: int, copy: str = "100", voters=None) -> MetadataEvent:
    data = {"copy": copy, "proof": f"hwm {offset + 1}"}
    if voters:
        data["voters"] = list(voters)
    return MetadataEvent("c1", "quorum", -1, offset, -1, -1, 0, KIND_COMMIT, COMMIT_CLAIM, 0, data,
                         leader_epoch=epoch)


def runs(copy: str, *spans: tuple[int, int, int]) -> MetadataEvent:
    return MetadataEvent("c1", copy, -1, -1, -1, -1, 0, KIND_LOG_RUNS, LOG_RUNS, 0,
                         {"copy": copy, "runs": [[a, b, e, 1] for a, b, e in spans]})


def admit(gate: RaftGate, items) -> tuple[list, GateReport]:
    report = GateReport()
    return list(gate.admit(items, report)), report


def offsets(items) -> list[int]:
    return [i.offset for i in items if isinstance(i, MetadataEvent) and i.kind in (KIND_RECORD, KIND_CONTROL)]


def test_a_quorum_of_one_voter_commits_what_it_writes():
    log = Log()
    items = [log.leader_change(1, 1, voters=(1,)), *log.batch(1, 3), *log.batch(1)]
    released, report = admit(RaftGate(), items)
    assert offsets(released) == [0, 1, 2, 3, 4]
    assert not report.retracted and not report.gaps


def test_input_without_voters_or_claims_is_taken_as_committed():
    log = Log()
    gate = RaftGate()
    released, _ = admit(gate, log.batch(-1, 2) + log.batch(-1))
    assert offsets(released) == [0, 1, 2]
    assert "taken as committed" in gate.proof


def test_three_voters_hold_the_tail_until_a_claim_covers_it():
    log = Log()
    gate = RaftGate()
    items = [log.leader_change(1, 1), *log.batch(1, 2), *log.batch(1, 2)]  # offsets 0, 1-2, 3-4
    released, _ = admit(gate, items)
    assert released == []
    assert gate.unproven() == (0, 4, 5)
    released, _ = admit(gate, [claim(2, 1)])  # entry (2, epoch 1) committed: batches to offset 2
    assert offsets(released) == [0, 1, 2]
    assert gate.unproven() == (3, 4, 2)
    assert gate.proof == "hwm 3"


def test_a_claim_about_another_version_of_the_log_releases_nothing():
    log = Log()
    gate = RaftGate()
    admit(gate, [log.leader_change(1, 1), *log.batch(1, 2)])
    released, _ = admit(gate, [claim(2, 2)])  # the leader's entry at 2 is of epoch 2: not ours
    assert released == []


def test_a_later_epoch_at_an_offset_retracts_what_was_held_from_there():
    old, new = Log(), Log()
    gate = RaftGate()
    first = [old.leader_change(1, 1), *old.batch(1, 2)]  # 0..2, committed by a claim
    admit(gate, first + [claim(2, 1)])
    tail = old.batch(1, 3)  # 3..5 in epoch 1, never committed
    admit(gate, tail)
    assert gate.unproven() == (3, 5, 3)
    new.at(3)
    rewritten = [new.leader_change(2, 2), *new.batch(2, 2)]  # epoch 2 from offset 3
    released, report = admit(gate, rewritten)
    assert released == []
    assert report.divergences == [(3, 1, 2)]
    assert [r.item.offset for r in report.retracted] == [3, 4, 5]
    assert all(r.held and r.replaced_at == 3 and r.replaced_by_epoch == 2 for r in report.retracted)
    # the new leader's metadata record proves everything before its epoch committed; a claim the rest
    released, _ = admit(gate, [claim(5, 2)])
    assert offsets(released) == [3, 4, 5]
    assert [e.leader_epoch for e in released] == [2, 2, 2]
    assert gate.retracted_total == 3


def test_a_copy_of_the_replaced_version_arriving_later_is_retracted_on_arrival():
    old, new = Log(), Log()
    gate = RaftGate()
    admit(gate, [old.leader_change(1, 1), *old.batch(1), claim(1, 1)])
    late = old.batch(1, 2)  # offsets 2..3, epoch 1
    new.at(2)
    admit(gate, [new.leader_change(2, 2), *new.batch(2)])
    released, report = admit(gate, late)
    assert released == [] and [r.held for r in report.retracted] == [False, False]
    assert gate.unproven() == (2, 3, 2)


def test_lagging_copy_below_a_later_epoch_is_replaced_but_a_copy_that_goes_back_is_judged():
    gate = RaftGate()
    admit(gate, [runs("a", (0, 9, 1), (10, 19, 2))])
    _, report = admit(gate, [runs("b", (0, 9, 1), (10, 25, 1))])  # b never saw epoch 2
    assert not report.divergences
    assert gate.shape.end == 20  # b's 20..25 (epoch 1) is not the log
    admit(gate, [runs("a", (20, 29, 1))])  # a's own epoch went back: its log, for the rules to judge
    assert gate.shape.end == 30 and gate.shape.epochs[-1] == 1


def test_a_hole_holds_everything_after_it_until_it_fills():
    log = Log()
    gate = RaftGate()
    head = [log.leader_change(1, 1, voters=(1,)), *log.batch(1, 2)]  # 0..2
    hole = log.batch(1, 2)  # 3..4
    after = log.batch(1)  # 5
    released, _ = admit(gate, head + after)
    assert offsets(released) == [0, 1, 2]
    assert gate.hole == (3, 4)
    released, report = admit(gate, hole)
    assert offsets(released) == [3, 4, 5]
    assert report.gaps == [(3, 4, "", "filled")]


def test_a_hole_is_skipped_past_its_patience_and_said_so():
    log = Log()
    gate = RaftGate(hole_patience=2)
    head = [log.leader_change(1, 1, voters=(1,))]
    log.batch(1, 3)  # 1..3 never arrive
    after = log.batch(1) + log.batch(1)  # 4, 5
    released, report = admit(gate, head + after)
    assert offsets(released) == [0, 4, 5]
    assert report.gaps == [(1, 3, "", "open"), (1, 3, "", "skipped")]


def test_a_hole_the_reader_reported_is_counted_once_and_passed_on():
    """A reader that skipped offsets quarantines them (logdir.missing_before); the gate
    counts the hole (a gap reported, not waited for) and goes on, its row passing on."""
    from kraft_audit.core.codec.logdir import missing_before

    log = Log()
    gate = RaftGate(hole_patience=0)
    head = [log.leader_change(1, 1, voters=(1,))]
    log.batch(1, 3)  # 1..3 lost
    said = Quarantined("c1", log.source, 900, missing_before(1, 4, 900), offset=1)
    released, report = admit(gate, head + [said] + log.batch(1))
    assert offsets(released) == [0, 4] and said in released
    assert report.gaps == [(1, 3, "", "reported")] and gate.gaps_total == 1
    # other quarantine rows are no hole
    _, report = admit(gate, [Quarantined("c1", log.source, 950, "CRC-32C mismatch", offset=5)])
    assert report.gaps == [] and gate.gaps_total == 1


def test_the_input_followed_from_call_to_call_leaves_a_hole_only_where_it_jumps():
    """follow_input (a Spark bucket's view: batches as a list): a batch sent again, one of an
    older version, a hole a reader reported and a snapshot read all continue the input; a
    batch past the offset after everything before it leaves a hole, found once, kept in the
    stored form."""
    gate = RaftGate()
    assert gate.follow_input([(10, 14), (0, 9)]) == []  # the first batch read starts the input
    assert gate.follow_input([(5, 9), (15, 15), (20, 24)]) == [(16, 19)]  # a copy, then a jump
    assert gate.follow_input([(16, 19)]) == []  # read late: behind the input, no hole
    assert gate.follow_input([(25, 29), (33, 33), (30, 32)]) == []  # a hole a reader reported: (30, 32)
    assert gate.follow_input([(-1, 99), (100, 100)]) == []  # a snapshot up to offset 100
    again = RaftGate()
    again.restore_stored(gate.stored())
    assert again.follow_input([(102, 102)]) == [(101, 101)]
    assert RaftGate().follow_input([]) == [] and RaftGate().input_next == -1


def test_a_copy_that_skips_offsets_is_a_gap_of_that_copy():
    gate = RaftGate()
    admit(gate, [runs("101", (0, 9, 1))])
    _, report = admit(gate, [runs("101", (15, 19, 1))])
    assert report.gaps == [(10, 14, "101", "copy"), (10, 14, "", "open")]  # and no copy has them
    _, report = admit(gate, [runs("102", (0, 19, 1))])  # another copy fills the log
    assert report.gaps == [(10, 14, "", "filled")] and gate.shape.first_hole(0) is None


def test_packed_noops_are_cut_at_the_commit_point():
    log = Log()
    lc = log.leader_change(1, 1)
    noops = packed_noops(log.batch(1)[0], np.arange(1, 11))
    gate = RaftGate()
    admit(gate, [lc, noops])
    released, _ = admit(gate, [claim(4, 1)])
    assert released[0].offset == 0
    rest = released[1]
    assert (rest.batch_base_offset, rest.batch_last_offset) == (1, 4)
    assert gate.unproven() == (5, 10, 6)


def test_side_inputs_wait_behind_what_is_held_before_them():
    log = Log()
    gate = RaftGate()
    side = MetadataEvent("c1", "registrations", 0, -1, -1, -1, 1_500, "registration",
                         "BROKER_REGISTRATION_REQUEST", 0, {})
    bad = Quarantined("c1", "x.log", 7, "CRC-32C mismatch")
    released, _ = admit(gate, [log.leader_change(1, 1), *log.batch(1), side, bad])
    assert released == [bad]
    released, _ = admit(gate, [claim(1, 1)])
    assert offsets(released) == [0, 1] and released[-1] is side


def test_copies_of_released_records_pass_on_and_of_held_ones_are_counted():
    log = Log()
    gate = RaftGate()
    batch = [log.leader_change(1, 1), *log.batch(1, 2)]
    tail = log.batch(1)
    admit(gate, batch + [claim(2, 1)] + tail)
    released, report = admit(gate, batch + tail)  # a second copy of everything
    # the event loop tells a copy of what it applied from a log going back: passed on as read
    assert [e.offset for e in released] == [0, 1, 2]
    assert report.duplicates == 1  # the held record's copy


def test_the_stored_form_round_trips_what_is_held():
    log = Log()
    gate = RaftGate()
    admit(gate, [log.leader_change(1, 1), *log.batch(1, 2),
                 packed_noops(log.batch(1)[0], np.array([3])), runs("100", (0, 3, 1))])
    restored = RaftGate()
    restored.restore_stored(gate.stored())
    assert restored.unproven() == gate.unproven() == (0, 3, 4)
    released, _ = admit(restored, [claim(3, 1)])
    assert offsets(released) == [0, 1, 2] and released[-1].kind == "noops"


def test_a_snapshot_proves_its_end_committed():
    gate = RaftGate()
    snap = MetadataEvent("c1", "00000000000000000010-0000000002.checkpoint", 0, 0, 0, 0, 5,
                         KIND_RECORD, "TOPIC_RECORD", 0, {}, 2)
    log = Log().at(10)
    voters = log.leader_change(3, 1)
    released, _ = admit(gate, [snap, voters, *log.batch(3)])
    assert released[0] is snap and offsets(released[1:]) == []
    assert gate.committed_to == 10 and gate.proof.startswith("snapshot")


def test_beyond_max_held_the_oldest_are_released_unproven():
    log = Log()
    gate = RaftGate(max_held=2)
    released, _ = admit(gate, [log.leader_change(1, 1), *log.batch(1), *log.batch(1), *log.batch(1)])
    assert offsets(released) == [0, 1]
    assert gate.unproven_to == 2 and gate.unproven() == (2, 3, 2)


def test_the_quorums_high_watermark_commits_only_a_copy_at_the_leaders_epoch():
    from kraft_audit.quorum import QuorumStatus, committed_end

    status = QuorumStatus(leader_id=2, leader_epoch=5, high_watermark=120, voters=((1, 120), (2, 130)),
                          observers=(), address="127.0.0.1:9093")
    assert committed_end(status, 5, 100) == 100  # a lagging copy: up to its own end
    assert committed_end(status, 5, 130) == 120  # ahead of the commit point: up to it
    assert committed_end(status, 4, 100) is None  # a deposed leader's copy gets nothing
    assert committed_end(status, None, 0) is None
