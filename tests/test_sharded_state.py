"""The auditor's incremental state: sharded tables, gauges counted change by
change, and the stored form in parts (the streaming operator's state)."""

from __future__ import annotations

import gc
import io
import pickle
import zlib

import pytest

from kraft_audit.core import snapshot
from kraft_audit.core.audit import Auditor
from kraft_audit.core.codec.logdir import read_log_dir
from kraft_audit.core.events import MetadataEvent
from kraft_audit.core.replay.conditions import (CONDITIONS, ELECTION_OVERDUE, UNCLEAN_ELECTION_OVERDUE,
                                               condition_mask, unclean_candidate,
                                               overdue_candidate)
from kraft_audit.core.replay.sharded import partition_table
from kraft_audit.core.rules.catalog import load_catalog
from kraft_audit.core.watch import GAUGE_OF
from kraft_audit.sim.runner import simulate
from kraft_audit.sim.scenario import load_scenario

CATALOG = load_catalog()


@pytest.fixture(scope="module")
def sim_log(tmp_path_factory):
    out = tmp_path_factory.mktemp("sim")
    simulate(load_scenario("unclean-shutdown-elr"), out, seed=3, faults=[("wrong-elr", 0)])
    return [e for e in read_log_dir(out) if isinstance(e, MetadataEvent)]


def recounted(auditor: Auditor) -> dict:
    """The gauges the slow way: every partition visited."""
    state = auditor.state
    counts = {field: 0 for field in GAUGE_OF.values()}
    electable: dict[str, int] = {}
    for part in state.partitions.values():
        mask = condition_mask(part, state.effective_min_isr(part), state)
        if overdue_candidate(part, state) is not None:  # judged where an operation ends
            mask |= ELECTION_OVERDUE
        elif unclean_candidate(part, state) is not None:
            mask |= UNCLEAN_ELECTION_OVERDUE
        for name, bit in CONDITIONS:
            counts[GAUGE_OF[name]] += bool(mask & bit)
        n = str(len(part.isr) + len(part.elr))
        electable[n] = electable.get(n, 0) + 1
    return {**counts, "partitions": len(state.partitions),
            "electable_leaders": dict(sorted(electable.items(), key=lambda kv: int(kv[0])))}


def test_gauges_counted_change_by_change_equal_a_full_recount(sim_log):
    auditor = Auditor(CATALOG, {})
    step = max(1, len(sim_log) // 7)
    checked = 0
    for i in range(0, len(sim_log), step):
        auditor.process(sim_log[i:i + step])
        g = auditor.gauges()
        assert {k: getattr(g, k) for k in recounted(auditor)} == recounted(auditor)
        checked += g.under_min_isr + g.leaderless + g.elr_in_use
    assert checked  # the log does open conditions


def test_restored_auditor_reads_only_the_shards_it_touches(sim_log):
    auditor = Auditor(CATALOG, {})
    auditor.process(sim_log)
    snap = auditor.snapshot()
    restored = Auditor.from_snapshot(snapshot.Snapshot(snap.meta, snap.topology,
                                                       pickle.loads(pickle.dumps(snap.shards))), CATALOG)
    assert restored.state.partitions.loaded_shards == 0
    key = next(iter(auditor.state.partitions.items()))[0]
    assert restored.state.partitions[key] == auditor.state.partitions[key]
    assert restored.state.partitions.loaded_shards == 1
    assert restored.gauges() == auditor.gauges()  # counts come from meta, no shard read
    assert restored.state.partitions.loaded_shards == 1
    assert restored.state.partitions == auditor.state.partitions
    assert restored.open_conditions() == auditor.open_conditions()


def test_sharded_dict_pickles_again_only_written_shards():
    table = partition_table()
    from kraft_audit.core.replay.partition import Partition

    def part(t, p, epoch=0):
        return Partition(t, p, (1, 2, 3), (1, 2, 3), (), (), 1, 0, epoch, epoch, (), (), ())

    for p in range(500):
        table[("T", p)] = part("T", p)
    first = dict(table.blobs())
    table[("T", 7)] = part("T", 7, epoch=1)
    second = table.blobs()
    assert sum(second[s] is not first[s] for s in first) == 1  # the other shards' bytes are reused
    assert table.pop(("T", 7)).leader_epoch == 1
    assert ("T", 7) not in table and len(table) == 499
    restored = partition_table(table.blobs())
    assert len(restored) == 499 and restored[("T", 8)] == part("T", 8)


class _NoClasses(pickle.Unpickler):
    def find_class(self, module, name):
        raise AssertionError(f"the stored form names a class: {module}.{name}")


def _plain(blob: bytes):
    return _NoClasses(io.BytesIO(blob)).load()


def test_the_stored_form_is_plain_data_and_a_restart_between_any_batches_changes_nothing(sim_log):
    """No part of the stored form names a class (moving one never breaks a stored state),
    held findings and pending matches included; restored, the auditor goes on as if never
    stopped."""
    whole = Auditor(CATALOG, {}).process(sim_log)
    ends = [i + 1 for i, e in enumerate(sim_log) if e.offset == e.batch_last_offset]
    held = 0
    for cut in ends[::max(1, len(ends) // 12)]:
        first = Auditor(CATALOG, {})
        out_a = first.process(sim_log[:cut])
        held += sum(len(r.held) for r in first.registrations.pending_records.values())
        snap = first.snapshot()
        assert snap.meta.startswith(snapshot.MAGIC)
        _plain(snap.meta[len(snapshot.MAGIC) + 2:])
        _plain(snap.topology)
        for table in snap.shards.values():
            for blob in table.values():
                _plain(zlib.decompress(blob))
        _plain(first.to_bytes())
        out_b = Auditor.from_bytes(first.to_bytes(), CATALOG).process(sim_log[cut:])
        for rows in ("violations", "conditions", "partitions", "brokers", "quarantined"):
            assert getattr(out_a, rows) + getattr(out_b, rows) == getattr(whole, rows), (cut, rows)
    assert held  # some cut kept findings waiting for a registration verdict


def test_a_restart_inside_a_snapshot_keeps_its_records_where_it_ends(tmp_path):
    """Where a snapshot's records belong is part of the stored form: an auditor restored
    between two of its batches writes the rest at the same place."""
    from log_cuts import booted_from_snapshot

    from kraft_audit.core.codec.logdir import read_log_dir

    events = list(read_log_dir(booted_from_snapshot(tmp_path / "booted")))[:200]
    whole = Auditor(CATALOG, {}).process(events)
    in_snapshot = [i + 1 for i, e in enumerate(events)
                   if e.source.endswith(".checkpoint") and e.offset == e.batch_last_offset]
    assert len(in_snapshot) == 3  # its header, its records, its footer: a batch each
    for cut in in_snapshot[:-1]:
        first = Auditor(CATALOG, {})
        out_a = first.process(events[:cut])
        out_b = Auditor.from_bytes(first.to_bytes(), CATALOG).process(events[cut:])
        assert out_a.partitions + out_b.partitions == whole.partitions
        assert out_a.brokers + out_b.brokers == whole.brokers


def test_a_state_stored_in_an_older_format_is_refused_before_it_is_read():
    """Format 2 pickled the auditor's objects: refused on its first bytes, no class looked up."""
    # (2, kraft_audit.core.gone.Settings()): an object of a class that has since moved
    old_meta = b"\x80\x02(K\x02ckraft_audit.core.gone\nSettings\n)\x81t."
    with pytest.raises(ModuleNotFoundError):
        pickle.loads(old_meta)
    old = pickle.dumps((old_meta, b"", {"partitions": {}, "masks": {}, "open": {}}))
    with pytest.raises(snapshot.StoredFormatError, match="older format.*new checkpoint location"):
        Auditor.from_bytes(old, CATALOG)
    newer = snapshot.MAGIC + (snapshot.FORMAT + 1).to_bytes(2, "big") + b"\x80"
    with pytest.raises(snapshot.StoredFormatError, match=f"format {snapshot.FORMAT + 1}"):
        Auditor.from_snapshot(snapshot.Snapshot(newer, b"", {}), CATALOG)


def test_an_auditor_is_freed_by_reference_counting(sim_log):
    """No reference cycle between the auditor's parts: else a replaced auditor (a bucket
    rebuilt, the next bench run) waits for the cyclic collector, which then walks its state."""
    gc.collect()
    collecting = gc.isenabled()
    gc.disable()
    try:
        auditor = Auditor(CATALOG, {})
        auditor.process(sim_log)
        Auditor.from_bytes(auditor.to_bytes(), CATALOG).process(sim_log[-5:])
        del auditor
        assert gc.collect() == 0
    finally:
        if collecting:
            gc.enable()


def test_a_partial_logs_partitions_are_stored_with_their_unknown_fields(tmp_path):
    """A real log cut after creation, audited in two halves with the stored form between
    them: the same partitions (unknown fields included), conditions and gauges as one run."""
    from log_cuts import SUBPXL, later_segment

    log, _ = later_segment(tmp_path, SUBPXL, from_offset=300, until_offset=557)
    events = list(read_log_dir(log.parent))
    whole = Auditor(load_catalog())
    whole.process(events)
    # inside the outage's change records (offsets 477..527 set leader -1, one partition each)
    half = next(i for i, e in enumerate(events) if isinstance(e, MetadataEvent) and e.offset >= 500)
    first = Auditor(load_catalog())
    first.process(events[:half])
    restored = Auditor.from_bytes(first.to_bytes(), load_catalog())
    restored.process(events[half:])
    parts = dict(restored.state.partitions.items())
    assert parts == dict(whole.state.partitions.items()) and len(parts) == 51
    assert all(p.unknown for p in parts.values())
    assert restored.gauges() == whole.gauges() and restored.gauges().leaderless == 51


def _rebuilt_index(state) -> dict:
    index: dict[int, set] = {}
    for key, part in state.partitions.items():
        for b in part.replicas:
            index.setdefault(b, set()).add(key)
    return index


def test_the_index_by_broker_follows_every_write_and_survives_the_stored_form(sim_log):
    """The partitions by replica broker, kept up to date record by record from its first use, equal
    the index rebuilt from the table; a restored auditor rebuilds it on first use and
    agrees (it is not part of the stored form)."""
    auditor = Auditor(CATALOG)
    cut = len(sim_log) // 3
    auditor.process(sim_log[:cut])
    brokers = sorted(_rebuilt_index(auditor.state))
    assert brokers, "the log names no broker"
    auditor.state.partitions_of(brokers[0])  # builds it; every later write maintains it
    auditor.process(sim_log[cut:])
    expected = _rebuilt_index(auditor.state)
    assert {b: set(auditor.state.partitions_of(b)) for b in expected} == expected
    assert all(not keys for b, keys in auditor.state._by_broker.items() if b not in expected)
    snap = auditor.snapshot()
    restored = Auditor.from_snapshot(snapshot.Snapshot(snap.meta, snap.topology,
                                                       pickle.loads(pickle.dumps(snap.shards))), CATALOG)
    assert {b: set(restored.state.partitions_of(b)) for b in expected} == expected


def test_a_fence_visits_only_the_fenced_brokers_partitions(kraft_log):
    """kip966.fenced-out-of-isr reads the partitions naming the fenced broker from the index
    (rebuilt after a restore, then moved by the fence's own batch): it finds exactly the
    partition that kept the broker in its ISR."""
    tid = "IIIIIIIIIIIIIIIIIIIIIQ"
    kraft_log.batch(*kraft_log.elr_features(False), *(kraft_log.register(b) for b in (1, 2, 3, 4)))
    kraft_log.batch(kraft_log.topic("t", tid),
                    *(kraft_log.partition(tid, p, [1, 2] if p % 2 else [3, 4]) for p in range(64)))
    auditor = Auditor(CATALOG)
    auditor.process(kraft_log.events)
    snap = auditor.snapshot()
    restored = Auditor.from_snapshot(snapshot.Snapshot(snap.meta, snap.topology,
                                                       pickle.loads(pickle.dumps(snap.shards))), CATALOG)
    assert restored.state.partitions_of(9) == ()  # built from every shard once after a restart
    mine = [kraft_log.change(tid, p, isr=[2], leader=2) for p in range(1, 64, 2)]
    fence = kraft_log.batch(*mine[:-1], kraft_log.fence(1))[-1]  # partition 63 forgotten
    out = restored.process(kraft_log.events[-len(mine):])
    hits = [(v.partition, v.offset) for v in out.violations if v.rule_id == "kip966.fenced-out-of-isr"]
    assert hits == [(63, fence.offset)]
    assert sorted(restored.state.partitions_of(1)) == [(tid, p) for p in range(1, 64, 2)]
    assert sorted(restored.state.partitions_of(3)) == [(tid, p) for p in range(0, 64, 2)]
