"""kraft.election-safety: the batches' Raft epochs (partitionLeaderEpoch) read from a real
binary log: one leader per epoch, epochs never go back, every epoch announced."""

from __future__ import annotations

import pytest

from kraft_audit.core.audit import Auditor
from kraft_audit.core.codec.dumplog import format_dump_log, parse_dump_log
from kraft_audit.core.codec.logdir import LogDirWriter, read_log_dir
from kraft_audit.core.events import MetadataEvent
from kraft_audit.core.rules import load_catalog

CATALOG = load_catalog()
RULE = "kraft.election-safety"
NOOP = [("NO_OP_RECORD", 0, {})]
TOPIC = [("TOPIC_RECORD", 0, {"name": "t", "topicId": "EEEEEEEEEEEEEEEEEEEEEQ"})]


def write(tmp_path, steps) -> list:
    """steps: ("leader", leader, epoch) | ("records", records, epoch); returns the offsets."""
    offsets = []
    with LogDirWriter(tmp_path / "log", "c1", leader_epoch=1) as w:
        w.append_leader_change(1, 1_000, 1)
        for i, (what, arg, epoch) in enumerate(steps):
            ms = 2_000 + i
            if what == "leader":
                offsets.append(w.append_leader_change(arg, ms, epoch))
            else:
                offsets.append(w.append(arg, ms, epoch)[1])
    return offsets


def hits(events):
    out = Auditor(CATALOG).process(events)
    return [(v.offset, v.message) for v in out.violations if v.rule_id == RULE], out


def events_of(tmp_path):
    return [e for e in read_log_dir(tmp_path / "log") if isinstance(e, MetadataEvent)]


def test_a_correct_succession_of_leaders_is_clean(tmp_path):
    write(tmp_path, [("records", TOPIC, 1), ("leader", 2, 2), ("records", NOOP, 2),
                     ("leader", 1, 4), ("records", NOOP, 4)])
    events = events_of(tmp_path)
    assert {e.leader_epoch for e in events if not e.source.endswith(".checkpoint")} == {1, 2, 4}
    found, out = hits(events)
    assert found == [] and out.violations == []


@pytest.mark.parametrize("steps, bad_step, says", [
    ([("leader", 2, 2), ("leader", 3, 2)], 1, "already had leader 2"),
    ([("leader", 2, 3), ("records", NOOP, 2)], 1, "went back"),
    ([("records", TOPIC, 1), ("records", NOOP, 2), ("records", NOOP, 2)], 1, "no LeaderChange announced"),
], ids=["two-leaders-one-epoch", "epoch-goes-back", "epoch-never-announced"])
def test_a_broken_succession_is_flagged_once_at_its_batch(tmp_path, steps, bad_step, says):
    offsets = write(tmp_path, steps)
    found, _ = hits(events_of(tmp_path))
    assert [o for o, _ in found] == [offsets[bad_step]]
    assert says in found[0][1]


def test_the_epoch_survives_the_dump_text_and_a_restart(tmp_path):
    offsets = write(tmp_path, [("leader", 2, 3), ("records", NOOP, 3), ("records", NOOP, 2)])
    events = events_of(tmp_path)
    lines = "\n".join(format_dump_log(events)).splitlines()
    parsed = [e for e in parse_dump_log(lines, "c1", "dump.txt") if isinstance(e, MetadataEvent)]
    assert [e.leader_epoch for e in parsed] == [e.leader_epoch for e in events]
    assert [o for o, _ in hits(parsed)[0]] == [offsets[2]]
    # stored between the leader change and the stale batch, the auditor still knows epoch 3
    first = Auditor(CATALOG)
    first.process(events[:-1])
    restored = Auditor.from_snapshot(first.snapshot(), CATALOG)
    out = restored.process(events[-1:])
    assert [v.offset for v in out.violations if v.rule_id == RULE] == [offsets[2]]
