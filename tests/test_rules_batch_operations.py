"""One Raft batch may hold several controller operations (two brokers sent SIGTERM at the
same moment: two controlled shutdowns milliseconds apart, written together). A record is
judged against the brokers as of that record, not as of the batch's end."""

from __future__ import annotations

import pytest

from kraft_audit.core.audit import Auditor
from kraft_audit.core.rules import load_catalog

CATALOG = load_catalog()
T = "TTTTTTTTTTTTTTTTTTTTTQ"


def cluster(log, elr: bool = True):
    """Brokers 1-4 up; t-0 led by 3 on [3, 4, 1], t-1 led by 4 on [4, 1, 2], t-2 led by 3 on
    [3, 1, 2] with only 3 in ISR."""
    log.batch(*log.elr_features(elr), *(log.register(b) for b in (1, 2, 3, 4)),
              log.topic("t", T), log.partition(T, 0, [3, 4, 1]), log.partition(T, 1, [4, 1, 2]),
              log.partition(T, 2, [3, 1, 2], isr=[3]))


def order_findings(log):
    out = Auditor(CATALOG).process(log.events)
    return [(v.offset, v.message) for v in out.violations if v.rule_id == "kip966.election-order"]


def test_two_controlled_shutdowns_in_one_batch_are_judged_record_by_record(kraft_log):
    cluster(kraft_log)
    kraft_log.batch(
        kraft_log.controlled_shutdown(3),
        kraft_log.change(T, 0, leader=4, isr=[4, 1]),  # 4 is still up here
        kraft_log.controlled_shutdown(4),
        kraft_log.change(T, 1, leader=1, isr=[1, 2]),
    )
    assert order_findings(kraft_log) == []


def test_a_leader_already_shutting_down_in_the_batch_is_still_caught(kraft_log):
    cluster(kraft_log)
    _, _, bad = kraft_log.batch(
        kraft_log.controlled_shutdown(3),
        kraft_log.controlled_shutdown(4),
        kraft_log.change(T, 0, leader=4, isr=[4, 1]),  # 4 entered controlled shutdown before it
    )
    assert [offset for offset, _ in order_findings(kraft_log)] == [bad.offset]


def test_a_fence_closes_the_partition_changes_written_before_it(kraft_log):
    cluster(kraft_log, elr=False)
    kraft_log.batch(
        kraft_log.change(T, 0, leader=4, isr=[4, 1]),
        kraft_log.change(T, 2, leader=-1),  # ISR [3] stays: 3 is being fenced, nobody else is in it
        kraft_log.fence(3),
    )
    assert order_findings(kraft_log) == []


def test_a_fence_later_in_the_batch_does_not_excuse_an_earlier_operation(kraft_log):
    cluster(kraft_log, elr=False)
    _, bad, _, _ = kraft_log.batch(
        kraft_log.controlled_shutdown(1),
        kraft_log.change(T, 2, leader=-1),  # 3 was up and in ISR: it should have stayed leader
        kraft_log.controlled_shutdown(2),
        kraft_log.fence(3),
    )
    assert [offset for offset, _ in order_findings(kraft_log)] == [bad.offset]


@pytest.mark.parametrize("how", ["fence", "unregister"])
@pytest.mark.parametrize("moved", [True, False])
def test_a_fenced_broker_leads_nothing_at_the_batch_end(kraft_log, how, moved):
    """kraft.leader-leaves-unavailable-broker: the batch that fences (or unregisters) broker
    1 moves its leadership; only the partition it keeps is reported."""
    log, tid = kraft_log, "LLLLLLLLLLLLLLLLLLLLLQ"
    log.batch(*log.elr_features(False), *(log.register(b, epoch=b) for b in (1, 2, 3)))
    log.batch(log.topic("t", tid), log.partition(tid, 0, [1, 2, 3]), log.partition(tid, 1, [2, 1, 3]),
              log.partition(tid, 2, [1, 2]))
    moves = [log.change(tid, 0, leader=2, isr=[2, 3])]
    if moved:
        moves.append(log.change(tid, 2, leader=2, isr=[2]))
    gone = log.fence(1) if how == "fence" else ("UNREGISTER_BROKER_RECORD", {"brokerId": 1, "brokerEpoch": 1})
    end = log.batch(*moves, gone)[-1]
    out = Auditor(load_catalog()).process(log.events)
    found = [(v.partition, v.offset) for v in out.violations
             if v.rule_id == "kraft.leader-leaves-unavailable-broker"]
    assert found == ([] if moved else [(2, end.offset)])
