"""NoOpRecords (most of a real log) take a short path through the event loop: counted
applied, offsets advanced, redeliveries counted duplicates; a batch of NoOps alone runs no
rule, and a NoOp in a batch with other records leaves that batch's rules as they were."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from crc32c import crc32c

from kraft_audit.cli.log_input import Tally
from kraft_audit.core.audit import Auditor
from kraft_audit.core.codec.batches import NoOpRun, encode_batch, iter_events
from kraft_audit.core.codec.logdir import read_log_dir
from kraft_audit.core.codec.records import encode_value
from kraft_audit.core.events import Quarantined
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


# ---------------------------------------------------------------- runs of NoOp batches
# `check` reads runs of NoOp batches as one item each (iter_events(noop_runs=True)): expanded,
# a run is the events read without runs, and the event loop gives the same outputs from both

def noop_batch(offset: int, epoch: int, ms: int, last_delta: int = 0, bad_crc: bool = False) -> bytes:
    batch = bytearray(encode_batch(offset, [encode_value("NO_OP_RECORD", 0, {})], ms, epoch))
    if last_delta:  # a one-record batch that claims more offsets: no run takes it
        batch[23:27] = last_delta.to_bytes(4, "big")
        batch[17:21] = crc32c(bytes(batch[21:])).to_bytes(4, "big")
    if bad_crc:
        batch[30] ^= 1
    return bytes(batch)


def segment(log, epochs: list[int]) -> bytes:
    """kraft_log's batches as a segment's bytes, batch i in Raft epoch epochs[i]."""
    batches: dict[int, list] = {}
    for event in log.events:
        batches.setdefault(event.batch_base_offset, []).append(event)
    return b"".join(
        encode_batch(base, [encode_value(e.type, e.version, e.data) for e in events],
                     events[0].timestamp_ms, epoch)
        for (base, events), epoch in zip(batches.items(), epochs))


def expanded(items) -> list:
    return [e for item in items for e in (item.events() if type(item) is NoOpRun else (item,))]


def noop_log(kraft_log, tmp_path) -> Path:
    """A log dir whose NoOp batches come in runs broken every way: by a bad CRC, a batch
    claiming two offsets, a Raft epoch without a LeaderChange (and one going back), a batch of
    two NoOps, a gap in the offsets; a second segment repeats the end of the first."""
    kraft_log.batch(*kraft_log.elr_features(False), kraft_log.topic("t", T), kraft_log.partition(T, 0, [1, 2, 3]),
                    *(kraft_log.register(b, incarnation=f"{'A' * 20}{'BCD'[b - 1]}A") for b in (1, 2, 3)))
    kraft_log.batch(kraft_log.change(T, 0, isr=[1, 2]))
    data, ms = bytearray(segment(kraft_log, [1, 1])), 2_000_000
    offset = kraft_log.next_offset
    for epoch, n, kind in [(1, 5, ""), (1, 1, "bad_crc"), (1, 3, ""), (1, 1, "last_delta"),
                           (2, 3, ""), (2, 1, "two"), (2, 3, ""), (1, 2, ""), (1, 1, "gap"), (1, 4, "")]:
        for _ in range(n):
            ms += 500
            if kind == "two":
                data += encode_batch(offset, [encode_value("NO_OP_RECORD", 0, {})] * 2, ms, epoch)
                offset += 2
                continue
            offset += 3 if kind == "gap" else 0
            data += noop_batch(offset, epoch, ms, last_delta=int(kind == "last_delta"),
                               bad_crc=kind == "bad_crc")
            offset += 2 if kind == "last_delta" else 1
    log_dir = tmp_path / "__cluster_metadata-0"
    log_dir.mkdir()
    (log_dir / "00000000000000000000.log").write_bytes(bytes(data))
    repeat = offset - 6  # the last six offsets again, and two more: a run partly read before
    (log_dir / f"{repeat:020d}.log").write_bytes(
        b"".join(noop_batch(o, 2, ms + o, last_delta=0) for o in range(repeat, offset + 2)))
    return tmp_path


def test_a_run_expanded_is_what_the_reader_gives_without_runs(kraft_log, tmp_path):
    log = noop_log(kraft_log, tmp_path)
    segment_file = log / "__cluster_metadata-0" / "00000000000000000000.log"
    buf = segment_file.read_bytes()
    runs = list(iter_events(buf, "c1", segment_file.name, noop_runs=True))
    plain = list(iter_events(buf, "c1", segment_file.name))
    assert expanded(runs) == plain
    assert [r.count for r in runs if type(r) is NoOpRun] == [5, 3, 3, 3, 2, 5]
    assert sum(isinstance(e, Quarantined) for e in plain) == 1  # the bad CRC


def test_runs_give_the_same_outputs_and_counts_as_noop_events(kraft_log, tmp_path):
    log = noop_log(kraft_log, tmp_path)
    runs, plain = list(read_log_dir(log, "c1", noop_runs=True)), list(read_log_dir(log, "c1"))
    assert any(type(r) is NoOpRun for r in runs) and expanded(runs) == plain
    whole = outputs_of(Auditor(CATALOG), runs)
    assert whole == outputs_of(Auditor(CATALOG), plain)
    # the epochs without a LeaderChange were judged, the second log's start quarantined
    assert "kraft.election-safety" in {v["rule_id"] for v in whole[0]} and whole[3]
    # runs at the log's start and redelivered (duplicates), alone or after the whole log
    start = [r for r in runs if type(r) is NoOpRun]
    for items, same in [(start[:2], expanded(start[:2])), (start + start, expanded(start) * 2),
                        (runs + runs[-3:], plain + expanded(runs[-3:]))]:
        assert outputs_of(Auditor(CATALOG), items) == outputs_of(Auditor(CATALOG), same)
    # what a record is counted as balances: applied + duplicates + quarantined = read
    out = Auditor(CATALOG).process(runs)
    records = sum(r.count if type(r) is NoOpRun else 1 for r in runs)
    assert out.applied + out.duplicates + len(out.quarantined) == records
    tallies = [Tally(log), Tally(log)]
    list(tallies[0].count(runs)), list(tallies[1].count(plain))
    assert vars(tallies[0]) == vars(tallies[1])
    assert tallies[0].records == sum(not isinstance(e, Quarantined) for e in plain)


def outputs_of(auditor: Auditor, items) -> tuple:
    out = auditor.process(items)
    return ([asdict(v) for v in out.violations], [asdict(c) for c in out.conditions],
            [asdict(p) for p in out.partitions], [(q.source, q.position, q.reason) for q in out.quarantined],
            out.applied, out.duplicates, asdict(auditor.gauges()), auditor.snapshot().meta)
