"""The real streaming job end to end: a simulated cluster with injected
faults → the kraft-log source and side files → applyInPandasWithState →
Delta tables (delta-rs) and /metrics, on local Spark."""

from __future__ import annotations

import json
import shutil
import time
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
from deltalake import DeltaTable

from kraft_audit.core.audit import Auditor
from kraft_audit.core.codec.logdir import METADATA_DIR, read_log_dir, read_segment, reader_gap
from kraft_audit.config import Config, load_config
from kraft_audit.core.events import MetadataEvent
from kraft_audit.core.rules.catalog import load_catalog
from kraft_audit.questions import count_rows
from kraft_audit.sim.runner import simulate
from kraft_audit.sim.scenario import load_scenario
from kraft_audit.spark import operator as op
from kraft_audit.testing.operator_calls import target_buckets
from kraft_audit.sideinputs import parse_inventory, read_registrations
from kraft_audit.testing.crash_check import comparable_rows, kill_9_in_compaction, run_then_kill_9
from kraft_audit.spark.job import AuditJob
from log_cuts import later_segment, live_half
from services import wait_for

pytestmark = pytest.mark.spark

# a partition-record fault, a broker-fencing (batch end) fault, a registration
# (side input) fault and a log-dir inventory (side input) fault
FAULTS = [("wrong-elr", 0), ("leader-not-in-isr", 2), ("isr-not-shrunk-on-fence", 0),
          ("unclean-shutdown-ignored", 0), ("stray-replica-left", 0)]


def config(work: Path, sim: Path, **overrides):
    values = {"sources.log_dirs": str(sim), "sources.registrations": str(sim / "registrations.jsonl"),
              "sources.log_dir_inventories": str(sim / "log-dirs"), "checkpoint": str(work / "checkpoint"),
              "tables": str(work / "tables"), "sources.max_records_per_trigger": 60,
              "audit.buckets": 4, "metrics.enabled": False, "trigger.interval": "1 second"}
    values.update(overrides)
    return load_config(None, values, environ={})


def table(cfg, name) -> list[dict]:
    from kraft_audit.tables import TABLES
    from kraft_audit.tables.read import read_rows

    if TABLES[name].compacted_from:  # as of now, whether the run compacted it or not
        return read_rows(cfg.tables, name)
    return DeltaTable(str(Path(cfg.tables) / name)).to_pyarrow_table().to_pylist()


def single_process_baseline(sim: Path, cluster_id: str):
    """What the core finds reading the same inputs in one process."""
    side = list(read_registrations(sim / "registrations.jsonl", cluster_id))
    for f in sorted((sim / "log-dirs").iterdir()):
        side.extend(parse_inventory(f.read_text(), cluster_id, f.name, int(f.name.split("-")[0])))
    ordered, _ = op.interleave(list(read_log_dir(sim)), side, 0, release_all=True)
    auditor = Auditor(load_catalog(), {})
    return auditor.process(ordered), auditor, side


def assert_faults_found_once(cfg, faults):
    violations = table(cfg, "violations")
    ids = Counter(v["violation_id"] for v in violations)
    assert not [i for i, n in ids.items() if n > 1], "duplicated violations"
    for fault in faults:
        hits = [v for v in violations if v["rule_id"] == fault["rule_id"] and v["offset"] == fault["offset"]
                and v["partition"] == fault["partition"]
                and (fault["topic_id"] is None or v["topic_id"] == fault["topic_id"])]
        assert len(hits) == 1, (fault, violations)
    return violations


def assert_state_matches_simulator(cfg, sim: Path):
    final = json.loads((sim / "final-state.json").read_text())
    state = {(p["topic_id"], p["partition"]): p for p in table(cfg, "partition_state") if not p["deleted"]}
    assert len(state) == len(final)
    for want in final:
        got = state[(want["topic_id"], want["partition"])]
        for col in ("replicas", "isr", "elr", "last_known_elr", "leader", "leader_epoch", "partition_epoch",
                    "leader_recovery_state"):
            assert got[col] == want[col], (want, col, got[col])


def test_backfill_in_micro_batches_finds_every_fault_once(spark, tmp_path):
    sim = tmp_path / "sim"
    result = simulate(load_scenario("unclean-shutdown-elr"), sim, seed=3, faults=FAULTS)
    assert not result.unfired
    cfg = config(tmp_path, sim, **{"metrics.enabled": True, "metrics.port": 0})
    job = AuditJob(cfg, spark=spark)
    assert job.run(available_now=True)
    assert job.writer.batches >= 4  # maxRecordsPerTrigger=60 over ~250 records

    assert_faults_found_once(cfg, result.faults)
    assert_state_matches_simulator(cfg, sim)
    # Findings, conditions and history equal the single-process core's.
    baseline, auditor, side = single_process_baseline(sim, result.cluster_id)
    assert sorted(v["violation_id"] for v in table(cfg, "violations")) == \
        sorted(v.violation_id for v in baseline.violations)
    final_conditions = {}
    for c in baseline.conditions:
        final_conditions[c.interval_id] = (c.start_offset, c.end_offset)
    assert {c["interval_id"]: (c["start_offset"], c["end_offset"]) for c in table(cfg, "conditions")} == \
        final_conditions
    history = table(cfg, "partition_history")
    assert sorted((p["topic_id"], p["partition"], p["offset"]) for p in history) == \
        sorted((p.topic_id, p.partition, p.offset) for p in baseline.partitions)
    # Every input counted once; /metrics agrees with the progress table.
    progress = sorted(table(cfg, "progress"), key=lambda p: p["batch_id"])
    records = sum(1 for e in read_log_dir(sim) if isinstance(e, MetadataEvent))
    assert sum(p["records"] for p in progress) == records
    assert sum(p["side_inputs"] for p in progress) == len(side)
    assert sum(p["quarantined"] + p["unreadable"] + p["duplicates"] for p in progress) == 0
    for p in progress:  # each micro-batch balances, not only the run
        assert p["records"] + p["side_inputs"] + p["unreadable"] == \
            p["applied"] + p["duplicates"] + p["quarantined"], p
    assert max(c["max_offset"] for p in progress for c in p["clusters"]) == result.last_offset
    assert progress[-1]["clusters"][0]["lag_records"] == 0
    scrape = urllib.request.urlopen(f"http://127.0.0.1:{job.metrics_port}/metrics").read().decode()
    assert f'kraft_audit_records_total{{cluster="{result.cluster_id}"}} {float(records)}' in scrape
    assert f"kraft_audit_side_inputs_total {float(len(side))}" in scrape
    assert f"kraft_audit_applied_total {float(records + len(side))}" in scrape
    assert "kraft_audit_duplicates_total 0.0" in scrape


def test_crash_between_sink_write_and_checkpoint_then_restart(spark, tmp_path):
    sim = tmp_path / "sim"
    result = simulate(load_scenario("unclean-shutdown-elr"), sim, seed=5, faults=FAULTS)
    cfg = config(tmp_path, sim)

    def crash(batch_id):
        if batch_id == 2:
            raise RuntimeError("killed after the Delta write of batch 2, before Spark's commit")

    first = AuditJob(cfg, spark=spark, after_write=crash)
    assert not first.run(available_now=True)  # the query died
    ck = Path(cfg.checkpoint)
    assert (ck / "offsets" / "2").exists() and not (ck / "commits" / "2").exists()
    written_before = len(table(cfg, "partition_history"))

    second = AuditJob(cfg, spark=spark)  # restart: Spark replays batch 2
    assert second.run(available_now=True)
    assert_faults_found_once(cfg, result.faults)
    assert_state_matches_simulator(cfg, sim)
    history = table(cfg, "partition_history")
    assert len(history) > written_before
    keys = Counter((p["topic_id"], p["partition"], p["offset"]) for p in history)
    assert max(keys.values()) == 1, "partition_history has duplicates"
    batches = Counter(p["batch_id"] for p in table(cfg, "progress"))
    assert max(batches.values()) == 1 and sorted(batches) == list(range(len(batches)))


def test_corrupt_bytes_and_garbage_lines_are_quarantined_and_counts_balance(spark, tmp_path):
    sim = tmp_path / "sim"
    result = simulate(load_scenario("unclean-shutdown-elr"), sim, seed=7, faults=[("wrong-elr", 0)])
    segment = sorted((sim / METADATA_DIR).glob("*.log"))[0]
    data = bytearray(segment.read_bytes())
    batch_starts = sorted({e.position for e in read_log_dir(sim) if isinstance(e, MetadataEvent)
                           and e.source == segment.name})
    data[batch_starts[40] + 70] ^= 0x55  # CRC mismatch: that batch is set aside
    garbage_at = batch_starts[80]
    data[garbage_at:garbage_at] = b"\xde\xad\xbe\xef" * 10  # garbage between two batches
    segment.write_bytes(bytes(data))
    with open(sim / "registrations.jsonl", "a") as f:
        f.write("this is not json\n{\"brokerId\": \"one\"}\n")
    cfg = config(tmp_path, sim)
    job = AuditJob(cfg, spark=spark)
    assert job.run(available_now=True)

    quarantine = table(cfg, "quarantine")
    reasons = sorted(q["reason"] for q in quarantine)
    assert len(quarantine) == 5, reasons
    assert sum("CRC" in r for r in reasons) == 1 and sum("magic" in r or "garbage" in r or "skipped" in r
                                                         for r in reasons) >= 1
    # the CRC-failed batch's offsets are a hole too, as `check` reports them (bucket 0 sees
    # the batches after it start past the offset expected)
    crc_base = next(int(r.split("base offset ")[1].split(")")[0]) for r in reasons if "CRC" in r)
    [hole] = [reader_gap(r) for r in reasons if reader_gap(r)]
    assert hole[0] == crc_base and hole[1] > crc_base
    assert sum("registration" in r for r in reasons) == 2
    # Counts balance: every input row is a record or a quarantine row, once.
    whole = read_segment(segment, result.cluster_id, 0)  # the codec's own reading of it
    assert len(list((sim / METADATA_DIR).glob("*.log"))) == 1
    log_records, log_bad = len(whole.events), len(whole.quarantined)
    assert log_bad == 2
    side = sum(1 for _ in (sim / "registrations.jsonl").read_text().splitlines()) - 2 + \
        len(list((sim / "log-dirs").iterdir()))
    progress = table(cfg, "progress")
    assert sum(p["records"] for p in progress) == log_records
    assert sum(p["side_inputs"] for p in progress) == side
    assert sum(p["unreadable"] for p in progress) == log_bad + 2 + 1  # and the hole
    assert sum(p["quarantined"] for p in progress) == log_bad + 2 + 1 == len(quarantine)
    for p in progress:
        assert p["records"] + p["side_inputs"] + p["unreadable"] == \
            p["applied"] + p["duplicates"] + p["quarantined"], p


def test_record_values_that_do_not_decode_are_quarantined_once_by_the_operator(spark, tmp_path):
    """The source reads a record by its key columns, not decoding it: a value that does
    not decode reaches the operator, which quarantines it once (a partition record in its
    bucket, a shared one in bucket 0) with the reason the full decode gives; counts balance."""
    from kraft_audit.core.codec.logdir import LogDirWriter
    from kraft_audit.core.codec.records import encode_value

    sim = tmp_path / "sim"
    result = simulate(load_scenario("unclean-shutdown-elr"), sim, seed=7, faults=[])
    log = [e for e in read_log_dir(sim) if isinstance(e, MetadataEvent)]
    part = next(e for e in log if e.type == "PARTITION_RECORD")
    change = encode_value("PARTITION_CHANGE_RECORD", 0, {"partitionId": part.data["partitionId"],
                                                         "topicId": part.data["topicId"], "isr": [1]})
    fence = encode_value("FENCE_BROKER_RECORD", 0, {"id": 1, "epoch": 1})
    with LogDirWriter(sim, result.cluster_id) as w:
        w.append_values([change + b"\x00\x00"], log[-1].timestamp_ms + 1)  # two bytes too many
        w.append_values([fence[:-1]], log[-1].timestamp_ms + 2)  # cut short, its broker id whole
        w.append([("NO_OP_RECORD", 0, {})], log[-1].timestamp_ms + 3)
    cfg = config(tmp_path, sim)
    assert AuditJob(cfg, spark=spark).run(available_now=True)

    quarantine = table(cfg, "quarantine")
    reasons = sorted(q["reason"] for q in quarantine)
    assert len(quarantine) == 2, reasons
    assert sum("PARTITION_CHANGE_RECORD v0 does not fill its" in r for r in reasons) == 1
    assert sum(f"FENCE_BROKER_RECORD v0 runs past the end of its {len(fence) - 1}-byte value" in r
               for r in reasons) == 1
    assert all(r.startswith("batch at position ") and " does not decode: " in r for r in reasons)
    segment = sorted((sim / METADATA_DIR).glob("*.log"))[-1]
    whole = [read_segment(s, result.cluster_id, 0) for s in sorted((sim / METADATA_DIR).glob("*.log"))]
    assert sum(len(w.quarantined) for w in whole) == 2  # the full decode quarantines the same two
    assert {q.offset for q in whole[-1].quarantined} == {q["offset"] for q in quarantine}
    assert segment.name in {q["source"] for q in quarantine}
    progress = table(cfg, "progress")
    assert sum(p["records"] for p in progress) == sum(len(w.events) for w in whole)
    assert sum(p["unreadable"] for p in progress) == 2
    assert sum(p["quarantined"] for p in progress) == 2
    for p in progress:
        assert p["records"] + p["side_inputs"] + p["unreadable"] == \
            p["applied"] + p["duplicates"] + p["quarantined"], p


def test_a_segment_holding_batches_twice_counts_the_copies_as_duplicates(spark, tmp_path):
    """The file input with the same batches twice in a row (NoOps among them): each copy
    is a duplicate, per micro-batch and in total, none is applied or quarantined, and the
    tables are those of the log without the copies."""
    sim = tmp_path / "sim"
    result = simulate(load_scenario("unclean-shutdown-elr"), sim, seed=3, faults=[("wrong-elr", 0)])
    segment = sorted((sim / METADATA_DIR).glob("*.log"))[0]
    events = [e for e in read_log_dir(sim) if isinstance(e, MetadataEvent)]
    batches: dict[int, list] = {}
    for e in events:
        batches.setdefault(e.position, []).append(e)
    starts = sorted(batches)
    noops = [p for p in starts if all(e.type == "NO_OP_RECORD" for e in batches[p])]
    others = [p for p in starts if p not in noops and p != starts[-1]]
    twice = noops[:6] + noops[-2:-1] + others[5:7]
    data = segment.read_bytes()
    ends = dict(zip(starts, starts[1:] + [len(data)]))
    out = bytearray()
    for p in starts:  # a copy goes after the batch that follows it, as a restarted shipper sends
        out += data[p:ends[p]]
        prev = starts[starts.index(p) - 1] if p != starts[0] else None
        if prev in twice:
            out += data[prev:ends[prev]]
    segment.write_bytes(bytes(out))
    copies = sum(len(batches[p]) for p in twice)
    assert any(batches[p][0].type == "NO_OP_RECORD" for p in twice)

    cfg = config(tmp_path, sim)
    assert AuditJob(cfg, spark=spark).run(available_now=True)
    progress = table(cfg, "progress")
    assert sum(p["records"] for p in progress) == len(events) + copies
    assert sum(p["duplicates"] for p in progress) == copies
    assert sum(p["applied"] for p in progress) == len(events) + sum(p["side_inputs"] for p in progress)
    assert sum(p["quarantined"] for p in progress) == 0 and not table(cfg, "quarantine")
    for p in progress:
        assert p["records"] + p["side_inputs"] + p["unreadable"] == \
            p["applied"] + p["duplicates"] + p["quarantined"], p
    assert_faults_found_once(cfg, result.faults)
    assert_state_matches_simulator(cfg, sim)


def test_live_tailing_audits_new_records_within_a_few_triggers(spark, tmp_path):
    """The log grows while the query runs: first a part of it, cut in the middle of a batch
    (as a controller mid-write leaves it), then the rest. The query audits the part, then
    reaches the new end within a few triggers (counted in micro-batches, not seconds)."""
    full = tmp_path / "full"
    result = simulate(load_scenario("unclean-shutdown-elr"), full, seed=11,
                      faults=[("wrong-elr", 0), ("leader-not-in-isr", 2)])
    sim = tmp_path / "sim"
    shutil.copytree(full, sim, ignore=shutil.ignore_patterns("*.log"))
    [segment] = sorted((full / METADATA_DIR).glob("*.log"))
    data = segment.read_bytes()
    live = sim / METADATA_DIR / segment.name
    live.write_bytes(data[: len(data) // 2])
    last = result.last_offset

    def audited_up_to() -> int:
        p = job.writer.last_progress
        return max((c["max_offset"] or -1) for c in p["clusters"]) if p else -1

    def wait(what: str, done) -> None:
        deadline = time.monotonic() + 180
        while not done():
            assert time.monotonic() < deadline, what
            assert job.query.exception() is None
            time.sleep(0.2)

    cfg = config(tmp_path, sim, **{"sources.registrations": [], "sources.log_dir_inventories": [],
                                    "sources.max_records_per_trigger": None})
    job = AuditJob(cfg, spark=spark)
    job.start(available_now=False)
    try:
        wait("the first half audited", lambda: 0 <= audited_up_to() < last)
        with live.open("ab") as f:
            f.write(data[len(data) // 2:])
        batches_when_written = job.writer.batches
        wait("the query never reached the end of the live log", lambda: audited_up_to() >= last)
        assert job.writer.batches - batches_when_written <= 3
    finally:
        job.query.stop()
    assert job.query.exception() is None
    assert_faults_found_once(cfg, result.faults)
    assert_state_matches_simulator(cfg, sim)


def test_spark_bucketing_matches_the_python_routing(spark):
    from kraft_audit.spark import event_rows

    rows = [("c", "PARTITION_CHANGE_RECORD", f"topic{t}", p) for t in range(3) for p in range(20)]
    rows += [("c", "REGISTER_BROKER_RECORD", None, None), ("c", "NO_OP_RECORD", None, None),
             ("c", event_rows.QUARANTINED_TYPE, None, None), ("c", "TOPIC_RECORD", "topic1", None)]
    df = spark.createDataFrame(rows, "cluster_id string, type string, topic_id string, partition_id int")
    got = sorted(tuple(r) for r in op.with_buckets(df, 5).collect())
    want = sorted((c, t, tid, pid, b) for c, t, tid, pid in rows
                  for b in target_buckets(t, tid, pid, 5))
    assert got == want


def test_kraft_audit_run_once_from_the_command_line(spark, tmp_path, capsys):
    from kraft_audit.cli.main import main

    sim = tmp_path / "sim"
    result = simulate(load_scenario("min-isr-change"), sim, seed=4, faults=[("wrong-elr", 0)])
    argv = ["run", "--once", "--log-dir", str(sim), "--registrations", str(sim / "registrations.jsonl"),
            "--checkpoint", str(tmp_path / "ck"), "--tables", str(tmp_path / "tables"), "--no-metrics",
            "--set", "audit.buckets=2", "--max-records-per-trigger", "40"]
    code = main(argv)
    assert code == 0
    first = capsys.readouterr().out
    cfg = Config(tables=str(tmp_path / "tables"))  # where the run above wrote
    assert_faults_found_once(cfg, result.faults)
    # a second run over the same checkpoint: nothing new, and the summary still tells what
    # the tables hold (a merge table holds a row per key, fewer than were written)
    assert main(argv) == 0
    second = capsys.readouterr().out
    for out in (first, second):
        held = summary_counts(out)
        assert held and held == {t: count_rows(cfg.tables, t) for t in held}
    assert second.startswith("micro-batches this run: 0\n")
    assert summary_counts(first, column=1)["partition_state"] > held["partition_state"]


def summary_counts(out: str, column: int = 2) -> dict[str, int]:
    """{table: rows} from run's closing summary (column 1: written, 2: in table)."""
    rows = [line.split() for line in out.splitlines() if line.startswith("  ") and "/" in line]
    return {r[0]: int(r[column]) for r in rows}


# in `make test-variants`, for make test's budget: make test kills -9 mid-stream in the
# bootstrap below, whose tables are held to an uninterrupted run's
@pytest.mark.variants
def test_process_killed_mid_stream_then_restarted_loses_and_duplicates_nothing(spark, tmp_path):
    sim = tmp_path / "sim"
    result = simulate(load_scenario("unclean-shutdown-elr"), sim, seed=9, faults=FAULTS)
    cfg = config(tmp_path, sim)
    committed = run_then_kill_9({
        "sources.log_dirs": str(sim), "sources.registrations": str(sim / "registrations.jsonl"),
        "sources.log_dir_inventories": str(sim / "log-dirs"), "checkpoint": cfg.checkpoint,
        "tables": cfg.tables, "sources.max_records_per_trigger": 25, "audit.buckets": 4,
        "metrics.enabled": False})
    assert 3 <= committed < 10, "the kill should land in the middle of the stream"

    assert AuditJob(cfg, spark=spark).run(available_now=True)
    assert_faults_found_once(cfg, result.faults)
    assert_state_matches_simulator(cfg, sim)
    keys = Counter((p["topic_id"], p["partition"], p["offset"]) for p in table(cfg, "partition_history"))
    assert max(keys.values()) == 1
    batches = sorted(p["batch_id"] for p in table(cfg, "progress"))
    assert batches == list(range(len(batches)))  # every micro-batch recorded once, none lost


def comparable(cfg, name: str) -> list[dict]:
    return comparable_rows(cfg.tables, name)


def test_kill_9_in_the_middle_of_a_bootstrap_then_restart_gives_an_uninterrupted_runs_tables(spark, tmp_path):
    """A creation of 3,000 partitions (a bootstrap, as after a snapshot) with
    state saved shard by shard: killed after a few micro-batches and resumed
    from the checkpoint (in another process, so no live auditor survives), the
    tables equal those of an uninterrupted run and every record is counted once."""
    from kraft_audit.testing.bulk import BulkLog

    log = BulkLog(tmp_path / "log", 3000, fault_every=250, batch=100)
    bootstrap = log.bootstrap()
    records = bootstrap + log.changes(600, per_batch=20)
    log.close()

    def values(name):
        return {"sources.log_dirs": str(tmp_path / "log"), "checkpoint": str(tmp_path / name / "checkpoint"),
                "tables": str(tmp_path / name / "tables"), "sources.max_records_per_trigger": 300,
                "audit.buckets": 4, "metrics.enabled": False}

    committed = run_then_kill_9(values("killed"))
    assert 3 <= committed < bootstrap // 300, "the kill should land in the middle of the bootstrap"
    killed = load_config(None, values("killed"), environ={})
    assert AuditJob(killed, spark=spark).run(available_now=True)
    whole = load_config(None, values("whole"), environ={})
    assert AuditJob(whole, spark=spark).run(available_now=True)

    assert len(comparable(whole, "violations")) == 3000 // 250  # the faults, each once
    for name in ("violations", "conditions", "partition_state", "partition_history", "brokers", "quarantine"):
        assert comparable(killed, name) == comparable(whole, name), name
    for cfg in (killed, whole):
        progress = table(cfg, "progress")
        assert sorted(p["batch_id"] for p in progress) == list(range(len(progress)))
        assert sum(p["records"] for p in progress) == records
        assert sum(p["applied"] + p["duplicates"] + p["quarantined"] for p in progress) == records


# the kill just after the commit in `make test-variants` (CI runs both), for make test's budget
@pytest.mark.parametrize("point", ["in_merge", pytest.param("after_merge", marks=pytest.mark.variants)])
def test_kill_9_during_a_compaction_then_restart_gives_an_uninterrupted_runs_tables(spark, tmp_path,
                                                                                   point):
    """partition_state compacted after every micro-batch, the process killed -9 in
    its second compaction (in the MERGE, or just after its commit): resumed from
    the checkpoint, partition_state as read and as stored at the end equals an
    uninterrupted run's, and the compaction's recorded history version holds."""
    from deltalake import DeltaTable

    from kraft_audit.tables.read import read_rows, read_tail
    from kraft_audit.tables.schema import COMPACTION_APP
    from kraft_audit.testing.bulk import BulkLog

    log = BulkLog(tmp_path / "log", 400, fault_every=100, batch=50)
    log.bootstrap()
    log.changes(300, per_batch=20)
    log.close()

    def values(name):
        return {"sources.log_dirs": str(tmp_path / "log"), "checkpoint": str(tmp_path / name / "checkpoint"),
                "tables": str(tmp_path / name / "tables"), "sources.max_records_per_trigger": 150,
                "audit.buckets": 2, "metrics.enabled": False, "sink.compact_every": 1}

    assert kill_9_in_compaction(values("killed"), point) == -9
    killed = load_config(None, values("killed"), environ={})
    state = DeltaTable(str(Path(killed.tables) / "partition_state"))
    assert state.transaction_version(COMPACTION_APP) is not None  # the first one's, or the second's
    assert AuditJob(killed, spark=spark).run(available_now=True)
    whole = load_config(None, values("whole"), environ={})
    assert AuditJob(whole, spark=spark).run(available_now=True)

    for name in ("violations", "conditions", "partition_state", "partition_history", "brokers", "quarantine"):
        assert comparable(killed, name) == comparable(whole, name), name
    for cfg in (killed, whole):  # compacted at the end: the Delta table alone holds the rows
        assert read_tail(cfg.tables, "partition_state") == (None, None)
        stored = DeltaTable(str(Path(cfg.tables) / "partition_state")).to_pyarrow_table().to_pylist()
        assert sorted(stored, key=repr) == sorted(read_rows(cfg.tables, "partition_state"), key=repr)


def test_check_and_run_quarantine_the_same_rows(spark, tmp_path, capsys):
    """The same input through `check` and the streaming job: the same quarantine rows. The
    input starts mid-history (a later segment of a real log, alone) and ends in garbage."""
    from kraft_audit.cli.main import main

    log, start = later_segment(tmp_path / "later")
    [segment] = log.glob("*.log")
    with segment.open("ab") as f:
        f.write(bytes(range(256)) + b"x" * 44)  # 300 bytes appended by something that is not Kafka
    (log.parent / "meta.properties").write_text("cluster.id=later\nversion=1\nnode.id=1\n")

    assert main(["check", str(log.parent), "--json"]) == 1
    checked = json.loads(capsys.readouterr().out)["quarantined"]
    assert main(["run", "--once", "--log-dir", str(log.parent), "--checkpoint", str(tmp_path / "ck"),
                 "--tables", str(tmp_path / "tables"), "--no-metrics", "--set", "audit.buckets=3"]) == 0
    ran = table(Config(tables=str(tmp_path / "tables")), "quarantine")
    # every view says the log is partial: run's summary, query
    partial = f"# partial log: cluster later's log starts at offset {start} without a snapshot"
    assert partial in capsys.readouterr().out
    assert main(["query", str(tmp_path / "tables"), "violations"]) == 0
    assert partial in capsys.readouterr().err

    def rows(qs):
        return sorted((q["source"], q["position"], q["offset"], q["reason"]) for q in qs)
    assert len(checked) > 1 and rows(ran) == rows(checked)


def test_garbage_appended_to_the_live_segment_is_quarantined_and_the_job_goes_on(spark, tmp_path):
    """Bytes no Kafka writer can complete (a bad batch header) at the end of the segment the
    job tails: quarantined at once, counted on /metrics, and the batches the controller
    appends after them are audited as if the garbage had not been there."""
    staged, live = tmp_path / "staged", tmp_path / "live"
    result = simulate(load_scenario("unclean-shutdown-elr"), staged, seed=3)
    live_segment, data, cut = live_half(staged, live, result.last_offset // 2)
    cfg = load_config(None, {"sources.log_dirs": str(live), "checkpoint": str(tmp_path / "ck"),
                             "tables": str(tmp_path / "tables"), "audit.buckets": 2,
                             "trigger.interval": "1 second", "metrics.port": 0}, environ={})
    garbage = b"\x7f" * 300
    job = AuditJob(cfg, spark=spark)
    try:
        job.start(available_now=False)

        def scraped(name: str) -> float:
            text = urllib.request.urlopen(f"http://127.0.0.1:{job.metrics_port}/metrics").read().decode()
            return next((float(line.split()[-1]) for line in text.splitlines()
                         if line.startswith(name + " ") or line.startswith(name + "{")), -1.0)

        wait_for("the clean half", lambda: scraped("kraft_audit_last_offset") >= 0, timeout=180)
        with live_segment.open("ab") as f:
            f.write(garbage)
        wait_for("the garbage quarantined", lambda: scraped("kraft_audit_quarantined_total") == 1,
                 timeout=120)
        with live_segment.open("ab") as f:
            f.write(data[cut:])  # the controller goes on writing after the garbage
        wait_for("the rest audited", lambda: scraped("kraft_audit_last_offset") == result.last_offset,
                 timeout=180)
    finally:
        job.stop()
    [row] = table(cfg, "quarantine")
    assert (row["position"], row["reason"]) == (cut, (
        f"{live_segment.name}: bad magic 127 (expected 2) in batch header at position {cut}; "
        "skipped 300 bytes, no valid batch follows"))
    assert_state_matches_simulator(cfg, staged)


def test_a_log_booted_from_a_snapshot_is_written_where_the_snapshot_ends(spark, tmp_path):
    """The job reads a snapshot's records at their positions in the file (several
    micro-batches of it here) and writes them where the snapshot ends, as the core in one
    process does: the tables never show a file position as a log offset."""
    from log_cuts import RENO_SNAPSHOT_END, booted_from_snapshot

    booted = booted_from_snapshot(tmp_path / "booted")
    # the snapshot and the segment's first batches only: twenty records a micro-batch
    [segment] = (booted / METADATA_DIR).glob("*.log")
    cut = next(e for e in read_log_dir(booted) if e.offset >= RENO_SNAPSHOT_END + 150
               and e.offset == e.batch_base_offset and not e.source.endswith(".checkpoint"))
    segment.write_bytes(segment.read_bytes()[:cut.position])
    cfg = load_config(None, {"sources.log_dirs": str(booted), "checkpoint": str(tmp_path / "ck"),
                             "tables": str(tmp_path / "tables"), "sources.max_records_per_trigger": 20,
                             "audit.buckets": 3, "metrics.enabled": False}, environ={})
    assert AuditJob(cfg).run(available_now=True)
    auditor = Auditor(load_catalog(), {})
    out = auditor.process(read_log_dir(booted))

    def rows(found, *columns):
        return sorted(tuple(r[c] if isinstance(r, dict) else getattr(r, c) for c in columns) for r in found)

    history = table(cfg, "partition_history")
    assert min(r["offset"] for r in history) == RENO_SNAPSHOT_END - 1
    columns = ("topic_id", "partition", "offset", "timestamp_ms", "isr", "leader", "leader_epoch")
    assert rows(history, *columns) == rows(out.partitions, *columns)
    assert rows(table(cfg, "brokers"), "broker_id", "offset", "timestamp_ms") == \
        rows({b.broker_id: b for b in out.brokers}.values(), "broker_id", "offset", "timestamp_ms")


def test_a_log_kept_by_retention_shows_its_offline_partitions_in_the_tables(spark, tmp_path, capsys):
    """A real log cut after its topics were created, ending during an outage: the job's
    partition_state and conditions hold the partitions its change records set leaderless
    (named by topic id, their unknown fields listed), as `check` reports them."""
    from kraft_audit.cli.main import main
    from log_cuts import SUBPXL

    log, _start = later_segment(tmp_path / "cut", SUBPXL, from_offset=300, until_offset=557)
    (log.parent / "meta.properties").write_text("cluster.id=cut\nversion=1\nnode.id=1\n")
    assert main(["check", str(log.parent), "--json", "--all"]) == 1
    checked = {(c["topic_id"], c["partition"]) for c in json.loads(capsys.readouterr().out)["open_conditions"]
               if c["condition"] == "leaderless"}
    assert len(checked) == 51
    assert main(["run", "--once", "--log-dir", str(log.parent), "--checkpoint", str(tmp_path / "ck"),
                 "--tables", str(tmp_path / "tables"), "--no-metrics", "--set", "audit.buckets=3"]) == 0
    cfg = Config(tables=str(tmp_path / "tables"))
    open_leaderless = {(c["topic_id"], c["partition"]) for c in table(cfg, "conditions")
                       if c["condition"] == "leaderless" and c["end_offset"] is None}
    assert open_leaderless == checked
    states = {(r["topic_id"], r["partition"]): r for r in table(cfg, "partition_state")}
    offline = {k for k, r in states.items() if r["leader"] == -1}
    assert offline == checked
    for key in offline:
        row = states[key]
        assert row["topic"] == row["topic_id"]
        assert "replicas" in row["unknown_fields"] and "leader" not in row["unknown_fields"]
        assert row["min_isr_source"] == "assumed"  # no min ISR given or logged: said so
    assert not [q for q in table(cfg, "quarantine") if "PartitionChangeRecord" in q["reason"]]
    # the whole log: its broker restarts, judged from the log alone, say they are inferred
    whole = tmp_path / "whole"
    shutil.copytree(SUBPXL, whole)
    assert main(["run", "--once", "--log-dir", str(whole), "--checkpoint", str(tmp_path / "ck2"),
                 "--tables", str(tmp_path / "tables2"), "--no-metrics", "--set", "audit.buckets=3"]) == 0
    [broker] = table(Config(tables=str(tmp_path / "tables2")), "brokers")
    assert (broker["last_shutdown"], broker["last_shutdown_source"]) == ("clean", "inferred")


@pytest.mark.parametrize("buckets,where", [(1, "batch"), (4, "batch"), (4, "segment")])
def test_a_hole_in_the_log_is_a_quarantine_row_a_condition_and_a_metric(spark, tmp_path, buckets, where):
    """A batch cut out of the middle of a segment, or a whole segment gone from between two
    (what a disk, a copy or a reader that skipped leaves): the job reports the hole where it
    is, with both offsets, in the quarantine and conditions tables and on /metrics, as
    `check` does, and audits the rest."""
    sim = tmp_path / "sim"
    simulate(load_scenario("unclean-shutdown-elr"), sim, seed=3)
    segment = sorted((sim / METADATA_DIR).glob("*.log"))[0]
    events = [e for e in read_log_dir(sim) if isinstance(e, MetadataEvent)]
    starts = sorted({e.position for e in events})
    data = segment.read_bytes()
    ends = dict(zip(starts, starts[1:] + [len(data)]))
    noops = [p for p in starts if all(e.type == "NO_OP_RECORD" for e in events if e.position == p)]
    cut = noops[len(noops) // 2]  # a NoOp batch: the state does not depend on it
    lost = sorted(e.offset for e in events if e.position == cut)
    segment.write_bytes(data[:cut] + data[ends[cut]:])
    source, position = segment.name, cut
    if where == "segment":  # the log rolled before and after the lost batch
        segment.write_bytes(data[:cut])
        source, position = f"{lost[-1] + 1:020d}.log", 0
        (segment.parent / source).write_bytes(data[ends[cut]:])

    cfg = config(tmp_path, sim, **{"audit.buckets": buckets, "metrics.enabled": True, "metrics.port": 0})
    job = AuditJob(cfg, spark=spark)
    assert job.run(available_now=True)
    quarantine = table(cfg, "quarantine")
    assert [(q["source"], q["offset"], q["reason"]) for q in quarantine] == [(source, lost[0],
        f"offsets {lost[0]}..{lost[-1]} are missing before the batch at position {position}")], quarantine
    [gap] = [c for c in table(cfg, "conditions") if c["condition"] == "input_gap"]
    assert (gap["resource"], gap["start_offset"]) == ("log", lost[0])
    scrape = urllib.request.urlopen(f"http://127.0.0.1:{job.metrics_port}/metrics", timeout=10).read().decode()
    assert f'kraft_audit_input_gaps_total{{cluster="{events[0].cluster_id}"}} 1.0' in scrape
    progress = table(cfg, "progress")
    assert sum(p["records"] for p in progress) == len(events) - len(lost)
    for p in progress:
        assert p["records"] + p["side_inputs"] + p["unreadable"] == \
            p["applied"] + p["duplicates"] + p["quarantined"], p
    assert_state_matches_simulator(cfg, sim)
