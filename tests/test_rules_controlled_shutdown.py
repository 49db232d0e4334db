"""kraft.leader-leaves-unavailable-broker for a controlled shutdown: the heartbeat that asks
to shut down writes the broker's BrokerRegistrationChangeRecord (InControlledShutdown) and
then moves every leadership of the broker, in one operation (Kafka's
ReplicationControlManagerTest.testProcessBrokerHeartbeatInControlledShutdown). At the end of
that batch the broker leads nothing; the real story logs' controlled shutdowns pass, and the
same log without one of its leader moves fires."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraft_audit.core.audit import Auditor
from kraft_audit.core.rules import load_catalog
from kraft_audit.core.rules.kraft import OPERATION_CHUNK_RECORDS
from kraft_audit.testing.mutate import audit_log, read_frames, write_log

CATALOG = load_catalog()
RULE = "kraft.leader-leaves-unavailable-broker"
T = "TTTTTTTTTTTTTTTTTTTTTQ"
STORY = Path(__file__).parent / "fixtures" / "kraft-story"


def cluster(log, elr: bool = False):
    """Brokers 0-2 up; t-0 led by 0 on [0, 1, 2], t-1 led by 1 on [1, 2, 0], t-2 led by 0 on
    [0, 1] with only 0 in its ISR."""
    log.batch(*log.elr_features(elr), *(log.register(b) for b in (0, 1, 2)),
              log.topic("t", T), log.partition(T, 0, [0, 1, 2]), log.partition(T, 1, [1, 2, 0]),
              log.partition(T, 2, [0, 1], isr=[0]))


def findings(log, rule=RULE):
    out = Auditor(CATALOG).process(log.events)
    return [(v.partition, v.broker_id, v.offset) for v in out.violations if rule is None or v.rule_id == rule]


def test_the_controlled_shutdown_kafka_writes_passes_every_rule(kraft_log):
    cluster(kraft_log)
    kraft_log.batch(
        kraft_log.controlled_shutdown(0),
        kraft_log.change(T, 0, isr=[1, 2], leader=1),
        kraft_log.change(T, 1, isr=[1, 2]),
        kraft_log.change(T, 2, leader=-1),  # no one else can lead: leaderless (ISR [0] stays without ELR)
    )
    assert findings(kraft_log, rule=None) == []


@pytest.mark.parametrize("kept", [0, 2])
def test_a_leadership_kept_through_the_controlled_shutdown_is_a_finding(kraft_log, kept):
    cluster(kraft_log)
    moves = {0: kraft_log.change(T, 0, isr=[1, 2], leader=1), 2: kraft_log.change(T, 2, leader=-1)}
    batch = kraft_log.batch(kraft_log.controlled_shutdown(0), kraft_log.change(T, 1, isr=[1, 2]),
                            *(m for p, m in moves.items() if p != kept))
    assert findings(kraft_log) == [(kept, 0, batch[-1].offset)]


def test_a_broker_that_leads_nothing_may_enter_controlled_shutdown_alone(kraft_log):
    cluster(kraft_log)
    kraft_log.batch(kraft_log.controlled_shutdown(2), kraft_log.change(T, 0, isr=[0, 1]),
                    kraft_log.change(T, 1, isr=[1, 0]))
    assert findings(kraft_log, rule=None) == []


def test_two_controlled_shutdowns_in_one_batch_each_move_their_leaders(kraft_log):
    cluster(kraft_log)
    kraft_log.batch(
        kraft_log.controlled_shutdown(0),
        kraft_log.change(T, 0, isr=[1, 2], leader=1),
        kraft_log.change(T, 1, isr=[1, 2]),
        kraft_log.change(T, 2, leader=-1),
        kraft_log.controlled_shutdown(1),
        kraft_log.change(T, 0, isr=[2], leader=2),
        kraft_log.change(T, 1, isr=[2], leader=2),
    )
    assert findings(kraft_log) == []
    assert findings(kraft_log, rule="kip966.election-order") == []


@pytest.mark.parametrize("after", [OPERATION_CHUNK_RECORDS - 2, OPERATION_CHUNK_RECORDS - 1])
def test_a_shutdown_whose_operation_may_go_on_in_the_next_batch_is_not_judged(kraft_log, after):
    """The operation's first chunk is at most OPERATION_CHUNK_RECORDS records: with that many
    from the registration change to the batch's end, its leader moves may follow in the next."""
    cluster(kraft_log)
    batch = kraft_log.batch(kraft_log.controlled_shutdown(0),
                            *(("NO_OP_RECORD", {}) for _ in range(after)))
    expected = [(0, 0, batch[-1].offset), (2, 0, batch[-1].offset)]
    assert findings(kraft_log) == (expected if after + 1 < OPERATION_CHUNK_RECORDS else [])


def test_the_fence_that_ends_a_controlled_shutdown_is_still_judged_as_a_fence(kraft_log):
    cluster(kraft_log)
    kraft_log.batch(kraft_log.controlled_shutdown(2), kraft_log.change(T, 0, isr=[0, 1]),
                    kraft_log.change(T, 1, isr=[1, 0]))
    kraft_log.batch(kraft_log.fence(2))  # led nothing: shut down at once
    assert findings(kraft_log) == []
    end = kraft_log.batch(kraft_log.controlled_shutdown(1), kraft_log.fence(1))
    assert findings(kraft_log) == [(1, 1, end[-1].offset)]


@pytest.mark.parametrize("version", ["3.9.2", "4.0.2", "4.3.1"])
def test_the_story_logs_controlled_shutdown_passes_and_fires_without_a_leader_move(tmp_path, version):
    log = STORY / version
    frames = read_frames(log / "__cluster_metadata-0")
    assert [f for f in audit_log(write_log(log, frames, tmp_path / "kept")) if f.rule_id == RULE] == []
    fi, ri, broker = next((fi, ri, r.data["brokerId"]) for fi, f in enumerate(frames)
                          for ri, r in enumerate(f.records)
                          if r.type == "BROKER_REGISTRATION_CHANGE_RECORD" and r.data
                          and r.data.get("inControlledShutdown") == 1)
    records = frames[fi].records
    move = next(j for j in range(ri + 1, len(records)) if records[j].type == "PARTITION_CHANGE_RECORD"
                and records[j].data.get("leader", -2) not in (-2, broker))
    del records[move]
    end = sum(len(f.records) for f in frames[:fi + 1]) - 1  # the shutdown batch's last offset
    fired = [f for f in audit_log(write_log(log, frames, tmp_path / "mutant")) if f.rule_id == RULE]
    # and again when it is fenced, still leading
    assert [(f.offset, f.broker_id) for f in fired if "entered controlled shutdown" in f.message] == \
        [(end, broker)]
