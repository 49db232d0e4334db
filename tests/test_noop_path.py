"""NoOpRecords (most of a real log) take a short path through the event loop: counted
applied, offsets advanced, redeliveries counted duplicates; a batch of NoOps alone runs no
rule, and a NoOp in a batch with other records leaves that batch's rules as they were."""

from __future__ import annotations

from kraft_audit.core.audit import Auditor
from kraft_audit.core.rules import load_catalog

CATALOG = load_catalog()
T = "TTTTTTTTTTTTTTTTTTTTTQ"
NOOP = ("NO_OP_RECORD", {})


def setup(log):
    log.batch(*log.elr_features(False), *(log.register(b) for b in (1, 2, 3)),
              log.topic("t", T), log.partition(T, 0, [1, 2, 3]))


def findings(out):
    return [(v.rule_id, v.offset) for v in out.violations]


def test_noops_are_applied_and_redelivered_noops_are_duplicates(kraft_log):
    setup(kraft_log)
    for _ in range(5):
        kraft_log.batch(NOOP)
    kraft_log.batch(NOOP, NOOP, NOOP)
    auditor = Auditor(CATALOG)
    out = auditor.process(kraft_log.events)
    assert out.applied == len(kraft_log.events) and out.duplicates == 0 and not out.quarantined
    assert auditor.last_offset == kraft_log.events[-1].offset
    again = auditor.process(kraft_log.events[-4:])  # redelivered after a restart
    assert (again.applied, again.duplicates) == (0, 4)


def test_a_noop_in_a_fencing_batch_leaves_its_batch_end_rule_firing(kraft_log):
    setup(kraft_log)
    kraft_log.batch(NOOP)
    _, fence, _ = kraft_log.batch(NOOP, kraft_log.fence(2), NOOP)  # 2 stays in the ISR
    for _ in range(3):
        kraft_log.batch(NOOP)
    out = Auditor(CATALOG).process(kraft_log.events)
    assert findings(out).count(("kip966.fenced-out-of-isr", fence.batch_last_offset)) == 1
    assert out.applied == len(kraft_log.events)


def test_noops_between_batches_change_no_finding(kraft_log):
    setup(kraft_log)
    kraft_log.batch(kraft_log.fence(2))
    quiet = Auditor(CATALOG).process(kraft_log.events)
    for _ in range(4):
        kraft_log.batch(NOOP)
    kraft_log.batch(kraft_log.fence(3))
    busy = Auditor(CATALOG).process(kraft_log.events)
    assert findings(busy)[: len(findings(quiet))] == findings(quiet)
    assert [f for f in findings(busy) if 0 < f[1] < kraft_log.events[-1].offset and
            f not in findings(quiet)] == []


def test_a_noop_batch_in_another_raft_epoch_is_still_judged(kraft_log):
    # a batch of one NoOp in the current epoch takes the shortest path (no batch opened);
    # one that opens another epoch must still be judged as any batch is
    setup(kraft_log)
    epochs = [1, 1, 3, 3, 2, 3]
    batches = [kraft_log.batch(NOOP) for _ in epochs]
    for event in kraft_log.events:
        event.leader_epoch = 1
    for (event,), epoch in zip(batches, epochs):
        event.leader_epoch = epoch
    out = Auditor(CATALOG).process(kraft_log.events)
    judged = [f for f in findings(out) if f[0] == "kraft.election-safety"]
    assert judged == [("kraft.election-safety", batches[2][0].offset),
                      ("kraft.election-safety", batches[4][0].offset)], findings(out)
    assert out.applied == len(kraft_log.events) and out.duplicates == 0 and not out.quarantined
