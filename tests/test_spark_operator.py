"""The stateful function as a plain function (no query): keyed by
(cluster, bucket), fed in micro-batches, state carried as real GroupState
rows. The buckets together must find what one single-process Auditor finds."""

from __future__ import annotations

import gc
import json
import time
from collections import defaultdict
from dataclasses import replace

import pandas as pd
import pytest
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout
from pyspark.sql.types import StructType

from kraft_audit.core.audit import Auditor
from kraft_audit.core.codec.logdir import read_log_dir
from kraft_audit.core.events import KIND_RECORD, MetadataEvent, Quarantined
from kraft_audit.core.rules.catalog import load_catalog
from kraft_audit.errors import StoredFormatError
from kraft_audit.sim.runner import simulate
from kraft_audit.sim.scenario import load_scenario
from kraft_audit.spark import event_rows
from kraft_audit.spark import operator as op
from kraft_audit.testing.collector import passes_inside
from kraft_audit.testing.operator_calls import decode_output, target_buckets
from kraft_audit.sideinputs import parse_inventory, parse_registration_line, read_registrations

FAULTS = [("wrong-elr", 0), ("leader-not-in-isr", 2), ("stray-replica-left", 0)]


def new_state(row=None, timed_out=False) -> GroupState:
    return GroupState(row, int(time.time() * 1000), -1, GroupStateTimeout.ProcessingTimeTimeout, timed_out,
                      False, row is not None, False, False, -1, b"", StructType())


def simulated_inputs(out):
    result = simulate(load_scenario("unclean-shutdown-elr"), out, seed=1, faults=FAULTS)
    cid = result.cluster_id
    log = list(read_log_dir(out))
    side = list(read_registrations(out / "registrations.jsonl", cid))
    for f in sorted((out / "log-dirs").iterdir()):
        ts = int(f.name.split("-")[0])
        side.extend(parse_inventory(f.read_text(), cid, f.name, ts))
    return result, log, side


def frame(items, pack: bool = False) -> pd.DataFrame:
    return event_rows.to_record_batch(items, pack_noops=pack).to_pandas()


def run_buckets(micro_batches, buckets, audit, cold=False, pack=False):
    """Feed each micro-batch to every (cluster, bucket) group it touches, like
    applyInPandasWithState; returns output rows by table. cold: forget the live
    auditors before every call, as a fresh worker or a restart would. pack: each
    chunk's NoOps but the newest as one row, as the sources send them."""
    return run_buckets_from({}, micro_batches, buckets, audit, cold, pack)


def run_buckets_from(states, micro_batches, buckets, audit, cold=True, pack=False):
    """run_buckets from the groups' state rows `states` (a restart from a checkpoint)."""
    states = dict(states)
    out = defaultdict(list)
    for items in micro_batches:
        groups = defaultdict(list)
        for item in items:
            row = event_rows.to_row(item)
            for b in target_buckets(row["type"], row["topic_id"], row["partition_id"], buckets):
                groups[(row["cluster_id"], b)].append(item)
        for key, group in groups.items():
            state = new_state(states.get(key))
            if cold:
                op._LIVE.clear()
            half = len(group) // 2  # two pandas chunks, shuffled: the function must re-sort
            chunks = [frame(group[half:], pack), frame(group[:half], pack)]
            for result in op.audit_group(key, iter(chunks), state, audit):
                for t, rows in decode_output(result["table"], result["rows"]).items():
                    out[t].extend(rows)
            states[key] = state.get
    return out, states


def state_size(row) -> int:
    return sum(len(v) for v in row[2:])


def assert_counts_balance(stats):
    """Per group call: what the bucket took in (its log records, and in bucket 0 the side
    inputs it let go and the unreadable input) = applied + duplicates + quarantined."""
    for s in stats:
        assert s["records"] + s["side_inputs"] + s["unreadable"] == \
            s["applied"] + s["duplicates"] + s["quarantined"], s


@pytest.mark.parametrize("pack", [False, True], ids=["noop-rows", "noops-packed"])
def test_redelivered_micro_batch_counts_as_duplicates_in_every_bucket(sim, pack):
    _result, log, _side = sim
    audit = op.OperatorConfig(buckets=4, timeout_ms=0)
    first = [e for e in log if e.offset <= log[len(log) // 2].batch_last_offset]
    out, _ = run_buckets([first, first], 4, audit, pack=pack)  # the same micro-batch again after a crash
    assert_counts_balance(out["stats"])
    calls = len(out["stats"]) // 2
    replayed = out["stats"][calls:]
    assert sum(s["duplicates"] for s in replayed) == len(first)
    assert sum(s["applied"] for s in replayed) == 0


def test_a_batch_delivered_twice_within_a_micro_batch_counts_as_duplicates_in_every_bucket(sim):
    """The shipper's topic can hold a batch twice (a shipper restarted before Kafka
    acknowledged it): both copies may come in one micro-batch. Each bucket counts the copies
    of its own records as duplicates, not as applied (nor as a log that went backwards)."""
    _result, log, _side = sim
    audit = op.OperatorConfig(buckets=4, timeout_ms=0)
    records = [e for e in log if isinstance(e, MetadataEvent) and e.type != "NO_OP_RECORD"]
    copied = [e for e in records if e.type in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD",
                                                "TOPIC_RECORD")][:40]
    out, _ = run_buckets([log + copied], 4, audit)
    assert_counts_balance(out["stats"])
    assert sum(s["duplicates"] for s in out["stats"]) == len(copied)
    assert not out["quarantine"]


def _with_copies(log, batch_ends):
    """The log with the batches ending at `batch_ends` delivered once more, each right
    after the batch that follows it (a shipper restarted while its acks were pending)."""
    out, pending = [], []
    for e in log:
        if pending and isinstance(e, MetadataEvent) and e.offset > pending[0].batch_last_offset + 1 \
                and e.offset == e.batch_base_offset:
            out.extend(pending)
            pending = []
        out.append(e)
        if isinstance(e, MetadataEvent) and e.batch_last_offset in batch_ends:
            pending.append(e)
    return out + pending


@pytest.mark.parametrize("pack", [False, True], ids=["noop-rows", "noops-packed"])
def test_a_batch_delivered_twice_in_one_micro_batch_is_a_duplicate_noops_included(sim, pack):
    _result, log, _side = sim
    records = [e for e in log if isinstance(e, MetadataEvent)]
    noop_ends = sorted({e.batch_last_offset for e in records if e.type == "NO_OP_RECORD"})
    change_ends = sorted({e.batch_last_offset for e in records if e.type == "PARTITION_CHANGE_RECORD"})
    twice = set(noop_ends[:5] + noop_ends[-1:] + change_ends[:3])  # the newest NoOp too
    copies = [e for e in records if e.batch_last_offset in twice]
    assert any(e.type == "NO_OP_RECORD" for e in copies) and any(e.type != "NO_OP_RECORD" for e in copies)
    for buckets in (1, 4):
        audit = op.OperatorConfig(buckets=buckets, timeout_ms=0)
        out, _ = run_buckets([_with_copies(log, twice)], buckets, audit, pack=pack)
        assert_counts_balance(out["stats"])
        total = {k: sum(s[k] for s in out["stats"]) for k in ("records", "applied", "duplicates")}
        assert total == {"records": len(records) + len(copies), "applied": len(records),
                         "duplicates": len(copies)}, buckets
        assert not out["quarantine"]  # a copy is no "log going backwards"


@pytest.mark.parametrize("pack", [False, True], ids=["noop-rows", "noops-packed"])
def test_copies_split_across_micro_batches_are_duplicates(sim, pack):
    """The copies of the last batches of one micro-batch come at the start of the next."""
    _result, log, _side = sim
    records = [e for e in log if isinstance(e, MetadataEvent)]
    cut = records[len(records) // 2].batch_last_offset
    first = [e for e in log if e.offset <= cut]
    again = [e for e in records if cut - 12 < e.batch_base_offset and e.offset <= cut]
    assert any(e.type == "NO_OP_RECORD" for e in again)
    rest = again + [e for e in log if e.offset > cut]
    audit = op.OperatorConfig(buckets=4, timeout_ms=0)
    out, _ = run_buckets([first, rest], 4, audit, pack=pack)
    assert_counts_balance(out["stats"])
    assert sum(s["duplicates"] for s in out["stats"]) == len(again)
    assert sum(s["applied"] for s in out["stats"]) == len(records)


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    return simulated_inputs(tmp_path_factory.mktemp("sim"))


def test_buckets_together_find_what_one_auditor_finds(sim):
    result, log, side = sim
    ordered, held = op.interleave(log, side, 0, release_all=True)
    assert not held
    baseline = Auditor(load_catalog(), {}).process(ordered)

    audit = op.OperatorConfig(buckets=4, timeout_ms=0)
    records = [e for e in log if isinstance(e, MetadataEvent)]
    # three micro-batches on atomic batch boundaries; the side files all arrive first
    cut1 = next(e.batch_last_offset for e in records if e.offset >= len(records) // 3)
    cut2 = next(e.batch_last_offset for e in records if e.offset >= 2 * len(records) // 3)
    batches = [[e for e in log if e.offset <= cut1] + side,
               [e for e in log if cut1 < e.offset <= cut2],
               [e for e in log if e.offset > cut2] + [event_rows.log_tail_marker(result.cluster_id, "x.log")]]
    out, states = run_buckets(batches, 4, audit)

    assert sorted(v["violation_id"] for v in out["violations"]) == \
        sorted(v.violation_id for v in baseline.violations)
    for fault in result.faults:
        hits = [v for v in out["violations"] if v["rule_id"] == fault["rule_id"]
                and v["offset"] == fault["offset"] and v["partition"] == fault["partition"]]
        assert len(hits) == 1, fault
    # the newest state of every partition equals the baseline's
    latest = {}
    for p in out["partitions"]:
        latest[(p["topic_id"], p["partition"])] = p
    base_latest = {(p.topic_id, p.partition): p for p in baseline.partitions}
    assert {k: (v["leader"], v["isr"], v["elr"], v["partition_epoch"]) for k, v in latest.items()} == \
        {k: (v.leader, v.isr, v.elr, v.partition_epoch) for k, v in base_latest.items()}
    # counts balance: every record counted once over the buckets
    stats = out["stats"]
    assert sum(s["records"] for s in stats) == len(records)
    assert sum(s["side_inputs"] for s in stats) == len(side)  # each taken in once, when let go
    assert_counts_balance(stats)
    assert all(s["held"] == 0 for s in stats if s["log_caught_up"])
    assert any(s["held"] for s in stats if not s["log_caught_up"])  # inventories waited for the log
    # gauges: one row per group call, buckets sum to the baseline's partitions
    last_gauges = {}
    for g in out["gauges"]:
        last_gauges[g["bucket"]] = g
    assert sum(g["partitions"] for g in last_gauges.values()) == result.partitions
    # state is versioned and compact
    assert all(s[0] == op.IN_ROW_VERSION for s in states.values())  # no shard_dir: in the row
    assert max(state_size(s) for s in states.values()) < 200_000


def test_buckets_open_the_liveness_conditions_one_auditor_opens(kraft_log):
    """leader_imbalanced (moved by a broker's records through its partitions in each bucket),
    unclean_election_overdue (judged where an operation ends, from a config too) and
    delegation_token_expired (a token's, not a partition's: bucket 0 alone sees tokens and
    NoOps): the buckets together write the condition rows one auditor writes, each once."""
    log, tid, uid = kraft_log, "TTTTTTTTTTTTTTTTTTTTTA", "UUUUUUUUUUUUUUUUUUUUUA"
    log.batch(log.feature("metadata.version", 21))
    now = log.now_ms
    log.batch(*(("DELEGATION_TOKEN_RECORD", {"tokenId": t, "owner": "User:a", "requester": "User:a",
                                             "renewers": [], "issueTimestamp": now, "maxTimestamp": now + life,
                                             "expirationTimestamp": now + life})
                for t, life in (("tok-a", 300), ("tok-b", 700))))
    for b in (1, 2, 3):
        log.batch(log.register(b, epoch=b))
    replicas = [[1 + (i + j) % 3 for j in range(3)] for i in range(6)]  # [1,2,3], [2,3,1], ...
    log.batch(log.topic("t", tid), *(log.partition(tid, i, r) for i, r in enumerate(replicas)),
              log.topic("u", uid), log.partition(uid, 0, [1, 2, 3], isr=[3]))
    # broker 1 fenced: out of every ISR, its leaderships moved
    log.batch(*(log.change(tid, i, isr=[b for b in r if b != 1], **({"leader": r[1]} if r[0] == 1 else {}))
                for i, r in enumerate(replicas)), log.fence(1))
    log.batch(log.unfence(1))
    log.batch(*(log.change(tid, i, isr=r) for i, r in enumerate(replicas)))  # 1 back: preferred again
    log.batch(log.change(tid, 0, leader=1))  # one preferred election; the other partition stays
    log.batch(log.change(uid, 0, leader=-1), log.fence(3))  # u leaderless, 1 and 2 could lead
    log.batch(log.config(2, "u", "unclean.leader.election.enable", "true"))  # now it is due
    log.batch(log.change(uid, 0, leader=1, isr=[1], lrs=1))
    log.batch(("REMOVE_DELEGATION_TOKEN_RECORD", {"tokenId": "tok-a"}))  # the sweep: tok-b stays
    log.batch(("NO_OP_RECORD", {}))
    baseline = Auditor(load_catalog(), {}).process(log.events)
    rows = sorted((c.interval_id, c.start_offset, c.end_offset or -1) for c in baseline.conditions)
    assert {"leader_imbalanced", "unclean_election_overdue", "delegation_token_expired"} <= {
        c.condition for c in baseline.conditions}
    assert [(c.resource, c.end_offset is None) for c in baseline.conditions
            if c.condition == "delegation_token_expired"] == [("tok-a", True), ("tok-b", True), ("tok-a", False)]
    cut = len(log.events) // 2
    cut = log.events[cut].batch_last_offset
    out, _ = run_buckets([[e for e in log.events if e.offset <= cut], [e for e in log.events if e.offset > cut]],
                         4, op.OperatorConfig(buckets=4, timeout_ms=0))
    assert sorted((c["interval_id"], c["start_offset"], c["end_offset"] or -1) for c in out["conditions"]) == rows


def test_side_inputs_wait_for_the_log_to_reach_their_time(sim):
    result, log, side = sim
    inventories = [e for e in side if e.type == "BROKER_LOG_DIRS"]
    assert inventories
    early = [e for e in log if isinstance(e, MetadataEvent) and e.timestamp_ms < inventories[0].timestamp_ms]
    merged, held = op.interleave(early[:5], inventories, 0, release_all=False)
    assert held == sorted(inventories, key=lambda e: (e.timestamp_ms, e.source, e.position))
    assert merged == early[:5]
    merged, held = op.interleave([], inventories, 0, release_all=True)
    assert not held and len(merged) == len(inventories)


def test_timeout_settles_pending_registrations_without_new_input():
    audit = op.OperatorConfig(buckets=1, timeout_ms=1000, core_settings={"registration_match_timeout_ms": 1})
    request = parse_registration_line(
        json.dumps({"brokerId": 7, "incarnationId": "x" * 22, "previousBrokerEpoch": 5,
                    "requestVersion": 3, "timestampMs": 1_000, "clusterId": "c"}), "c", "r.jsonl", 0)
    state = new_state()
    list(op.audit_group(("c", 0), iter([frame([request])]), state, audit))
    assert state.get[5]  # held: no log record has reached its time yet
    timed_out = new_state(state.get, timed_out=True)
    result = next(op.audit_group(("c", 0), iter([]), timed_out, audit))
    rows = decode_output(result["table"], result["rows"])
    found = rows["violations"]
    assert found and all(v["broker_id"] == 7 for v in found)
    stats = rows["stats"][0]
    assert stats["timed_out"] and stats["held"] == 0


def test_quarantined_rows_pass_through_bucket_zero_with_their_reason():
    q = Quarantined("c", "00000000000000000000.log", 144, "CRC mismatch", b"\x01\x02", 3)
    assert target_buckets("QUARANTINE", None, None, 8) == [0]
    result = next(op.audit_group(("c", 0), iter([frame([q])]), new_state(), op.OperatorConfig(buckets=8)))
    got = decode_output(result["table"], result["rows"])["quarantine"]
    assert got == [{"cluster_id": "c", "source": "00000000000000000000.log", "position": 144, "offset": 3,
                    "reason": "CRC mismatch", "raw": b"\x01\x02"}]


@pytest.mark.parametrize("pack", [False, True], ids=["noop-rows", "noops-packed"])
def test_noops_are_thinned_but_counted(tmp_path, pack):
    from kraft_audit.core.codec.logdir import LogDirWriter

    w = LogDirWriter(tmp_path, "c")
    for i in range(6):
        w.append([("NO_OP_RECORD", 0, {})], 1000 + i)
    w.close()
    events = [e for e in read_log_dir(tmp_path)]
    state = new_state()
    chunks = [frame(events[3:], pack), frame(events[:3], pack)]
    if pack:  # each chunk: its newest NoOp and one row for the others
        assert [len(c) for c in chunks] == [2, 2] and set(chunks[0]["type"]) == {"NO_OP_RECORD", "NOOP_OFFSETS"}
    result = next(op.audit_group(("c", 0), iter(chunks), state, op.OperatorConfig(buckets=2)))
    stats = decode_output(result["table"], result["rows"])["stats"][0]
    assert (stats["records"], stats["applied"], stats["min_offset"], stats["max_offset"]) == (6, 6, 0, 5)
    auditor, _, _, _ = op.resume_bucket(op.OperatorConfig(buckets=2), "c", 0, state.get)
    assert (auditor.last_offset, auditor.clock_ms) == (5, 1005)  # the newest NoOp moved the clock


def test_output_tables_travel_as_arrow_of_their_core_columns(sim):
    """Rows the sinks write go to the driver as Arrow IPC of the table's core
    columns (built in the worker); gauges and stats stay pickled dicts."""
    import pyarrow as pa

    from kraft_audit import tables

    result, log, _side = sim
    state = new_state()
    out = next(op.audit_group((result.cluster_id, 0), iter([frame(log)]), state,
                              op.OperatorConfig(buckets=1, timeout_ms=0)))
    decoded = op.decode_output_arrow(out["table"], out["rows"])
    partitions = decoded["partitions"]
    assert isinstance(partitions, pa.Table) and partitions.num_rows > 0
    assert partitions.schema == tables.core_schema("partition_history")
    assert "batch_id" not in partitions.schema.names and "date" not in partitions.schema.names
    assert isinstance(decoded["violations"], pa.Table) and decoded["violations"].num_rows > 0
    assert isinstance(decoded["gauges"], list) and isinstance(decoded["stats"], list)
    # the same rows as the core's own, field by field
    auditor = Auditor(load_catalog(), op.core_settings(op.OperatorConfig(buckets=1)))
    baseline = auditor.process([e for e in log if isinstance(e, MetadataEvent)])
    first = baseline.partitions[0]
    assert partitions.slice(0, 1).to_pylist()[0] == {
        n: getattr(first, n) for n in partitions.schema.names}
    assert sorted(decoded["violations"].column("violation_id").to_pylist()) == \
        sorted(v.violation_id for v in baseline.violations)


def three_micro_batches(result, log, side):
    records = [e for e in log if isinstance(e, MetadataEvent)]
    cut1 = next(e.batch_last_offset for e in records if e.offset >= len(records) // 3)
    cut2 = next(e.batch_last_offset for e in records if e.offset >= 2 * len(records) // 3)
    return [[e for e in log if e.offset <= cut1] + side,
            [e for e in log if cut1 < e.offset <= cut2],
            [e for e in log if e.offset > cut2] + [event_rows.log_tail_marker(result.cluster_id, "x.log")]]


@pytest.mark.parametrize("in_files", [False, True], ids=["shards-in-row", "shards-in-files"])
def test_a_bucket_rebuilt_from_its_state_row_gives_what_the_live_auditor_gives(sim, tmp_path, in_files):
    """The worker's live auditors only save work: restoring every call from the
    state row (a new worker, a retried batch, a restart) changes no output row."""
    result, log, side = sim
    audit = op.OperatorConfig(buckets=4, timeout_ms=0, shard_dir=str(tmp_path) if in_files else None)
    batches = three_micro_batches(result, log, side)
    live, _ = run_buckets(batches, 4, audit)
    cold, _ = run_buckets(batches, 4, audit, cold=True)
    for table in ("violations", "conditions", "partitions", "brokers", "quarantine", "gauges"):
        assert cold[table] == live[table], table
    own = ("duration_ms", "state_bytes", "rebuilt", "shards_loaded")  # how, not what
    assert [{k: v for k, v in s.items() if k not in own} for s in cold["stats"]] \
        == [{k: v for k, v in s.items() if k not in own} for s in live["stats"]]
    assert not any(s["rebuilt"] for s in live["stats"])
    assert any(s["rebuilt"] for s in cold["stats"])


def test_a_micro_batch_rewrites_only_the_shards_it_changed(sim):
    """State is saved incrementally: one partition change rewrites one shard of the
    partition table; a cluster-scoped record (copied to every bucket) none."""
    import pickle

    result, log, _side = sim
    audit = op.OperatorConfig(buckets=1, timeout_ms=0)
    records = [e for e in log if isinstance(e, MetadataEvent)]
    state = new_state()
    list(op.audit_group((result.cluster_id, 0), iter([frame(records)]), state, audit))
    before = state.get
    auditor, _, _, _ = op.resume_bucket(audit, result.cluster_id, 0, before)
    part = next(iter(auditor.state.partitions.values()))
    broker = next(iter(auditor.state.brokers))
    last = records[-1]

    def event(offset, type_, data):
        return MetadataEvent(result.cluster_id, "x.log", 0, offset, offset, offset, last.timestamp_ms + 1,
                             KIND_RECORD, type_, 0, data)

    change = event(last.offset + 1, "PARTITION_CHANGE_RECORD",
                   {"topicId": part.topic_id, "partitionId": part.partition, "leader": part.leader})
    fence = event(last.offset + 2, "BROKER_REGISTRATION_CHANGE_RECORD",
                  {"brokerId": broker, "brokerEpoch": 1, "inControlledShutdown": 0})
    for item, changed_shards, topology_rewritten in ((change, 1, False), (fence, 0, True)):
        op._LIVE.clear()  # also through a restore from the row
        state = new_state(before)
        list(op.audit_group((result.cluster_id, 0), iter([frame([item])]), state, audit))
        old, new = pickle.loads(before[4]), pickle.loads(state.get[4])
        assert sum(old["partitions"][s] != new["partitions"].get(s) for s in old["partitions"]) \
            == changed_shards
        assert (before[3] != state.get[3]) == topology_rewritten
        before = state.get


def test_state_of_an_older_version_is_refused_with_a_clear_error():
    for old in (1, 2, 3):  # 2: the core's objects pickled (before its stored form of plain data)
        with pytest.raises(StoredFormatError, match="new checkpoint location"):
            op.resume_bucket(op.OperatorConfig(buckets=2), "c", 0, (old, b"old auditor", b""))


def test_packed_noops_shipped_twice_are_duplicates_once_each(tmp_path):
    """The same NoOps packed in two chunks (a batch shipped twice), and one of them also
    sent as a row: each copy after the first is a duplicate, the counts balance."""
    from kraft_audit.core.codec.logdir import LogDirWriter

    w = LogDirWriter(tmp_path, "c")
    for i in range(8):
        w.append([("NO_OP_RECORD", 0, {})], 1000 + i)
    w.close()
    events = list(read_log_dir(tmp_path))
    chunks = [frame(events[:5], True), frame(events[2:6], True), frame(events[6:], True)]
    result = next(op.audit_group(("c", 0), iter(chunks), new_state(), op.OperatorConfig(buckets=1)))
    stats = decode_output(result["table"], result["rows"])["stats"]
    assert_counts_balance(stats)
    (s,) = stats
    assert (s["records"], s["applied"], s["duplicates"]) == (11, 8, 3)
    assert (s["min_offset"], s["max_offset"]) == (0, 7)


def test_a_noop_offsets_row_goes_to_bucket_zero_only():
    row = event_rows.noop_offsets_row("c", "00000000000000000000.log", [1, 2, 3])
    assert target_buckets(row["type"], row["topic_id"], row["partition_id"], 8) == [0]
    assert event_rows.noop_offsets(row["raw"]).tolist() == [1, 2, 3]


def with_values(log, out_dir):
    """The sim's log as the sources read it: each metadata record with its value bytes."""
    from kraft_audit.core.codec.logdir import list_segments, metadata_dir, read_segment

    read = [i for _, seg in list_segments(metadata_dir(out_dir))
            for i in read_segment(seg, log[0].cluster_id, keep_values=True).events]
    assert [(e.offset, e.type) for e in read] == [(e.offset, e.type) for e in log
                                                   if isinstance(e, MetadataEvent)]
    return read


def test_rows_carrying_record_values_give_what_rows_carrying_json_give(tmp_path):
    """The sources send a record's value bytes instead of its JSON; the operator decodes
    them with the codec: the same tables and counts as from the JSON payload."""
    result, log, side = simulated_inputs(tmp_path)
    values = with_values(log, tmp_path)
    assert all(e.raw is not None for e in values if e.kind == KIND_RECORD)
    rows = frame(values)
    carried = rows["data_json"].isna() & rows["raw"].notna()
    assert carried.sum() == sum(1 for e in values if e.kind == KIND_RECORD)
    assert op.events_from_pandas(rows) == [replace(e, raw=None, leader_epoch=-1) for e in values]
    audit = op.OperatorConfig(buckets=4, timeout_ms=0)
    records = [e for e in log if isinstance(e, MetadataEvent)]
    as_json, _ = run_buckets(three_micro_batches(result, records, side), 4, audit, pack=True)
    as_values, _ = run_buckets(three_micro_batches(result, values, side), 4, audit, pack=True)
    assert as_values["violations"], "the sim's faults must be found"
    for table in ("violations", "conditions", "partitions", "brokers", "quarantine", "gauges"):
        assert as_values[table] == as_json[table], table
    assert_counts_balance(as_values["stats"])
    own = ("duration_ms", "state_bytes", "rebuilt", "shards_loaded")
    assert [{k: v for k, v in s.items() if k not in own} for s in as_values["stats"]] \
        == [{k: v for k, v in s.items() if k not in own} for s in as_json["stats"]]


def test_a_record_value_that_does_not_decode_in_the_operator_is_quarantined_as_the_source_would(tmp_path):
    from kraft_audit.core.codec.batches import batch_events, iter_batches
    from kraft_audit.core.codec.logdir import LogDirWriter, list_segments, metadata_dir
    from kraft_audit.core.codec.records import encode_value

    good = encode_value("PARTITION_CHANGE_RECORD", 0, {"partitionId": 0, "topicId": "AAAAAAAAAAAAAAAAAAAAAA",
                                                      "isr": [1, 2]})
    with LogDirWriter(tmp_path, "c") as w:
        w.append_values([good + b"\x00\x00"], 1000)  # two bytes too many
    buf = list_segments(metadata_dir(tmp_path))[0][1].read_bytes()
    (source_says,) = batch_events(next(iter_batches(buf)), "c", "00000000000000000000.log", keep_values=True)
    assert isinstance(source_says, Quarantined)
    # the same bytes reaching the operator as a record's value (another codec read them)
    ev = MetadataEvent("c", "00000000000000000000.log", 0, 0, 0, 0, 1000, KIND_RECORD,
                       "PARTITION_CHANGE_RECORD", 0, {"partitionId": 0, "topicId": "AAAAAAAAAAAAAAAAAAAAAA"},
                       5, good + b"\x00\x00")
    row = frame([ev])
    assert row["data_json"].isna().all()
    result = next(op.audit_group(("c", 0), iter([row]), new_state(), op.OperatorConfig(buckets=1)))
    out = decode_output(result["table"], result["rows"])
    (q,) = out["quarantine"]
    assert (q["reason"], q["offset"], q["position"]) == (source_says.reason, 0, 0)
    assert "does not fill its" in q["reason"]
    assert_counts_balance(out["stats"])
    assert out["stats"][0]["quarantined"] == 1


def test_a_call_that_changes_nothing_leaves_the_state_row_untouched(sim):
    """No state store write for a bucket whose call changed nothing (a timeout with
    nothing to settle, the log-tail marker alone); one that changes something writes
    its row."""
    result, log, _side = sim
    audit = op.OperatorConfig(buckets=1, timeout_ms=1000)
    key = (result.cluster_id, 0)
    first = [e for e in log if e.offset <= log[len(log) // 2].batch_last_offset]
    state = new_state()
    list(op.audit_group(key, iter([frame(first)]), state, audit))
    assert state._updated
    row = state.get
    settles = new_state(row, timed_out=True)  # settles the registration matches still pending
    list(op.audit_group(key, iter([]), settles, audit))
    assert settles._updated
    row = settles.get
    idle = new_state(row, timed_out=True)  # nothing left to settle
    list(op.audit_group(key, iter([]), idle, audit))
    assert not idle._updated and idle.get == row
    # a micro-batch that reached the log's end sends its marker to every bucket: a
    # bucket with no record in it has nothing to write
    marker = new_state(row)
    out = next(op.audit_group(key, iter([frame([event_rows.log_tail_marker(result.cluster_id, "x.log")])]),
                              marker, audit))
    assert decode_output(out["table"], out["rows"])["stats"][0]["log_caught_up"]
    assert not marker._updated
    # a replayed micro-batch counts its copies as duplicates: a change
    replayed = new_state(row)
    out = next(op.audit_group(key, iter([frame(first)]), replayed, audit))
    assert decode_output(out["table"], out["rows"])["stats"][0]["duplicates"] == len(first)
    assert replayed._updated
    row = replayed.get
    # the live auditor still matches the row: the next call goes on with it
    rest = new_state(row)
    out = next(op.audit_group(key, iter([frame([e for e in log if e.offset > first[-1].offset])]), rest, audit))
    assert rest._updated and rest.get[1] != row[1]
    assert not decode_output(out["table"], out["rows"])["stats"][0]["rebuilt"]


def test_values_that_do_not_decode_in_other_buckets_are_counted_once(sim):
    """A partition record whose value does not decode is quarantined by its bucket; a
    shared record's (copied to every bucket) by bucket 0 only; the sums balance."""
    result, log, _side = sim
    records = [e for e in log if isinstance(e, MetadataEvent)]
    part = next(e for e in records if e.type == "PARTITION_CHANGE_RECORD")
    shared = next(e for e in records if e.type == "REGISTER_BROKER_RECORD")
    assert part.offset > shared.offset and target_buckets(part.type, part.topic_id, part.partition_id, 4) != [0]
    assert target_buckets(shared.type, None, None, 4) == [0, 1, 2, 3]
    broken = [replace(e, raw=b"\x01" + bytes([e.api_key, e.version]) + b"\xff") for e in (part, shared)]
    audit = op.OperatorConfig(buckets=4, timeout_ms=0)
    out, _ = run_buckets([records[:shared.offset] + broken], 4, audit)
    assert sorted(q["offset"] for q in out["quarantine"]) == sorted([part.offset, shared.offset])
    assert all("does not decode" in q["reason"] for q in out["quarantine"])
    assert_counts_balance(out["stats"])
    total = {k: sum(s[k] for s in out["stats"]) for k in ("records", "unreadable", "applied", "quarantined")}
    assert total["quarantined"] == total["unreadable"] == 2
    assert total["records"] + total["unreadable"] == total["applied"] + total["quarantined"] \
        + sum(s["duplicates"] for s in out["stats"])


@pytest.mark.parametrize("enabled", [True, False], ids=["collector-on", "collector-off"])
def test_a_call_runs_without_the_cyclic_collector_and_leaves_it_as_it_found_it(sim, enabled):
    """The collector pauses for a whole group call (its passes over the worker's live
    auditors were most of the call outside the core) and is left as the call found it,
    also when the call fails."""
    result, log, _side = sim
    audit = op.OperatorConfig(buckets=1)
    pdf, state = frame(log), new_state()
    old = new_state((op.IN_ROW_VERSION - 1, "t", b"", b"", b"", b""))
    with passes_inside("_audit_call") as passes:
        gc.enable() if enabled else gc.disable()
        out = next(op.audit_group((result.cluster_id, 0), iter([pdf]), state, audit))
        assert passes == [] and gc.isenabled() == enabled
        assert decode_output(out["table"], out["rows"])["stats"][0]["applied"] > 0
        with pytest.raises(StoredFormatError):
            next(op.audit_group((result.cluster_id, 0), iter([pdf]), old, audit))
        assert gc.isenabled() == enabled


def test_shards_in_files_leave_the_row_small_and_a_call_writes_only_what_it_changed(sim, tmp_path):
    """With a shard_dir the state row names the files holding its shards (what crosses the
    JVM every call is that small row): a micro-batch writes one new file holding only the
    shards it changed, and the files a row no longer names go once a later call runs on it."""
    from kraft_audit.spark import shard_files

    result, log, _side = sim
    audit = op.OperatorConfig(buckets=1, timeout_ms=0, shard_dir=str(tmp_path))
    key = (result.cluster_id, 0)
    folder = shard_files.bucket_dir(str(tmp_path), *key)
    records = [e for e in log if isinstance(e, MetadataEvent)]
    in_row = new_state()
    list(op.audit_group(key, iter([frame(records)]), in_row, replace(audit, shard_dir=None)))
    state = new_state()
    list(op.audit_group(key, iter([frame(records)]), state, audit))
    row = state.get
    assert row[0] == op.STATE_VERSION and row[2] == in_row.get[2] and row[3] == b""  # the topology too
    assert len(row[4]) * 10 < len(in_row.get[4])  # the manifest, not the shards
    manifest = shard_files.unpack(row[4])
    assert set(manifest["where"]) == {"partitions", "masks", "open", shard_files.TOPOLOGY}
    assert set(manifest["files"]) == {p.name for p in folder.iterdir()} == {row[1]}
    auditor, _, _, _ = op.resume_bucket(audit, *key, row)
    part = next(iter(auditor.state.partitions.values()))
    last = records[-1]
    for i in range(40):  # one partition changed a call: compaction keeps the files few
        change = MetadataEvent(result.cluster_id, "x.log", 0, last.offset + 1 + i, last.offset + 1 + i,
                               last.offset + 1 + i, last.timestamp_ms + 1, KIND_RECORD, "PARTITION_CHANGE_RECORD",
                               0, {"topicId": part.topic_id, "partitionId": part.partition, "leader": part.leader})
        if i % 2:
            op._LIVE.clear()  # half the calls restore from the row and its files
        state = new_state(row)
        list(op.audit_group(key, iter([frame([change])]), state, audit))
        new = shard_files.unpack(state.get[4])
        written = {t: [s for s, n in where.items() if n == state.get[1]] for t, where in new["where"].items()}
        assert sum(map(len, written.values())) in (1, sum(map(len, new["where"].values()))), written
        assert set(new["garbage"]) == set(manifest["files"]) - set(new["files"])
        on_disk = {p.name for p in folder.iterdir()}
        assert set(new["files"]) <= on_disk and not on_disk & set(manifest["garbage"])
        row, manifest = state.get, new
    assert len(manifest["files"]) <= shard_files.MAX_FILES
    assert len(list(folder.iterdir())) <= len(manifest["files"]) + len(manifest["garbage"])
    op._LIVE.clear()
    restored, _, _, _ = op.resume_bucket(audit, *key, row)
    assert restored.state.partitions[(part.topic_id, part.partition)].partition_epoch \
        == part.partition_epoch + 40


def test_a_row_with_its_shards_inside_is_restored_and_moves_them_to_files(sim, tmp_path):
    """A checkpoint written before the shards went to files (state version 4) goes on:
    restored from its row, its next write puts every shard in a file, and the outputs are
    those of a run that kept them in the row."""
    result, log, side = sim
    batches = three_micro_batches(result, log, side)
    in_row = op.OperatorConfig(buckets=4, timeout_ms=0)
    in_files = replace(in_row, shard_dir=str(tmp_path))
    expected, _ = run_buckets(batches, 4, in_row, cold=True)
    first, states = run_buckets(batches[:1], 4, in_row, cold=True)
    assert {s[0] for s in states.values()} == {op.IN_ROW_VERSION}
    out = defaultdict(list, {t: list(rows) for t, rows in first.items()})
    for items in batches[1:]:
        more, states = run_buckets_from(states, [items], 4, in_files)
        for t, rows in more.items():
            out[t].extend(rows)
    assert {s[0] for s in states.values()} == {op.STATE_VERSION}
    for table in ("violations", "conditions", "partitions", "brokers", "quarantine", "gauges"):
        assert out[table] == expected[table], table


def test_a_failed_attempts_shard_files_go_once_a_committed_row_names_a_newer_file(sim, tmp_path):
    """A shard file no committed row names (a task attempt that failed after writing it, a
    `.partial` a crash left) is deleted by a call on a committed row whose newest file is
    newer than it by the margin; a file newer than the row's files (the attempt running
    now, or one still running) is kept, and every file a row names stays."""
    import os

    from kraft_audit.spark import shard_files

    result, log, _side = sim
    audit = op.OperatorConfig(buckets=1, timeout_ms=0, shard_dir=str(tmp_path))
    key = (result.cluster_id, 0)
    folder = shard_files.bucket_dir(str(tmp_path), *key)
    records = [e for e in log if isinstance(e, MetadataEvent)]
    committed = new_state()
    list(op.audit_group(key, iter([frame(records)]), committed, audit))
    part = next(iter(op.resume_bucket(audit, *key, committed.get)[0].state.partitions.values()))
    last = records[-1]

    def change(i: int) -> MetadataEvent:
        offset = last.offset + 1 + i
        return MetadataEvent(result.cluster_id, "x.log", 0, offset, offset, offset, last.timestamp_ms + 1,
                             KIND_RECORD, "PARTITION_CHANGE_RECORD", 0,
                             {"topicId": part.topic_id, "partitionId": part.partition, "leader": part.leader})

    def age(name: str, seconds_ago: float) -> None:
        when = time.time() - seconds_ago
        os.utime(folder / name, (when, when))

    def call(row, item) -> tuple:
        state = new_state(row)
        list(op.audit_group(key, iter([frame([item])]), state, audit))
        return state.get

    margin = shard_files.ORPHAN_MARGIN_S
    for name in shard_files.unpack(committed.get[4])["files"]:
        age(name, 3 * margin)
    failed = call(committed.get, change(0))  # its batch fails: this row is never committed
    (failed_file,) = set(shard_files.unpack(failed[4])["files"]) - set(shard_files.unpack(committed.get[4])["files"])
    age(failed_file, 2 * margin)
    (folder / "crashed.partial").write_bytes(b"half")
    age("crashed.partial", 2 * margin)
    op._LIVE.clear()  # the batch runs again, maybe in the other worker
    rerun = call(committed.get, change(0))
    assert {failed_file, "crashed.partial"} <= {p.name for p in folder.iterdir()}  # newer than the row's files
    (folder / "running.partial").write_bytes(b"now")  # another attempt writing as this call runs
    after = call(rerun, change(1))
    on_disk = {p.name for p in folder.iterdir()}
    assert failed_file not in on_disk and "crashed.partial" not in on_disk
    assert "running.partial" in on_disk
    assert set(shard_files.unpack(after[4])["files"]) <= on_disk
    op._LIVE.clear()
    restored, _, _, _ = op.resume_bucket(audit, *key, after)
    assert restored.state.partitions[(part.topic_id, part.partition)].partition_epoch == part.partition_epoch + 2
