"""kraft.election-safety in the Spark shell (issue 21): the sources send every batch's Raft
epoch in a BATCH_EPOCHS row, bucket 0 judges the epochs with the core's own code, and the
job finds what `check` finds on the same log. The log is a real one with its epochs broken
four ways: a batch of partition changes and a NoOp written by an older leader (bucket 0 gets
none or only some of their records), a second leader announced in one epoch, an epoch no
LeaderChange announced. The file source and the shipper's topic path (kafka_input over
LogTail's messages) are judged alike, without and with Spark; the real logs give nothing."""

from __future__ import annotations

import json
import shutil
import time
from collections import Counter, defaultdict
from dataclasses import asdict, fields
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout
from pyspark.sql.types import StructType

from kraft_audit.core.audit import Auditor
from kraft_audit.core.codec.logdir import METADATA_DIR, read_log_dir
from kraft_audit.core.codec.records import encode_control
from kraft_audit.core.events import BATCH_HEADER, KIND_BATCH_HEADER, MetadataEvent
from kraft_audit.core.rows import Violation
from kraft_audit.core.rules.catalog import load_catalog
from kraft_audit.core.snapshot import Snapshot, pack_meta, unpack_meta
from kraft_audit.ship.tail import LogTail
from kraft_audit.spark import event_rows
from kraft_audit.spark import operator as op
from kraft_audit.spark.kafka_input import _decode
from kraft_audit.spark.source import KraftLogStreamReader, LogRangePartition, cluster_id_of
from kraft_audit.testing.mutate import Frame, Rec, read_frames, write_log
from kraft_audit.testing.operator_calls import decode_output, target_buckets

RULE = "kraft.election-safety"
REAL = Path(__file__).parent / "fixtures" / "kraft-real"
SUBPXL = REAL / "subpxl__streamprocessing"
STORY = Path(__file__).parent / "fixtures" / "kraft-story"
PARTITION_TYPES = ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD")
COLUMNS = [f.name for f in fields(Violation)]


def epoch_mutant(out: Path) -> Path:
    """SUBPXL (three leaders, epochs 1-3) with its Raft epochs broken four ways."""
    frames = read_frames(SUBPXL)
    changes = [i for i, f in enumerate(frames) if f.control]
    second, third = changes[1], changes[2]
    # during epoch 2, a batch of partition changes (with the broker record that caused them)
    # written by the leader of epoch 1: its partition records go to buckets of their own
    mixed = next(i for i in range(second + 1, third) if not frames[i].control
                 and any(r.type in PARTITION_TYPES for r in frames[i].records))
    frames[mixed].leader_epoch -= 1
    # during epoch 3, a NoOp written by the leader of epoch 2 (the sources pack it)
    noops = [i for i in range(third + 1, len(frames) - 1)
             if [r.type for r in frames[i].records] == ["NO_OP_RECORD"]]
    frames[noops[len(noops) // 2]].leader_epoch -= 1
    # the last batch, in an epoch no LeaderChange announced
    frames[-1].leader_epoch += 1
    # a second leader announced for epoch 3, right after the first
    other = {"voterId": 2}
    key, value = encode_control("LEADER_CHANGE", {"version": 0, "leaderId": 2, "voters": [other],
                                                  "grantingVoters": [other]})
    frames.insert(third + 1, Frame(True, frames[third].leader_epoch, frames[third].timestamp_ms,
                                   [Rec("LEADER_CHANGE", 0, None, key, value)]))
    return write_log(SUBPXL, frames, out)


def checked(log: Path) -> list[dict]:
    """The rule's findings as `check` makes them: the core over the whole log."""
    out = Auditor(load_catalog()).process(read_log_dir(log))
    return sorted((asdict(v) for v in out.violations if v.rule_id == RULE), key=lambda v: v["offset"])


def rule_rows(rows) -> list[dict]:
    return sorted(({c: r[c] for c in COLUMNS} for r in rows if r["rule_id"] == RULE),
                  key=lambda v: v["offset"])


def the_four_breaks(found: list[dict]) -> None:
    """What the mutant holds, as `check` reports it (so the comparisons below compare something)."""
    says = Counter("went back" if "went back" in f["message"] else
                   "two leaders" if "already had leader" in f["message"] else
                   "unannounced" if "no LeaderChange announced" in f["message"] else f["message"]
                   for f in found)
    assert says == {"went back": 2, "two leaders": 1, "unannounced": 1}, found
    assert len({f["offset"] for f in found}) == 4


# ------------------------------------------------------------ the operator, without a query

def group_state(row) -> GroupState:
    return GroupState(row, int(time.time() * 1000), -1, GroupStateTimeout.NoTimeout, False,
                      False, row is not None, False, False, -1, b"", StructType())


def operator_run(micro_batches: list[list[pa.RecordBatch]], buckets: int, states: dict | None = None):
    """Each micro-batch's rows routed to (cluster, bucket) groups as Spark routes them, each
    group called with the state row it left last time; returns (output rows by table, states)."""
    states = {} if states is None else states
    audit = op.OperatorConfig(buckets=buckets, timeout_ms=0)
    out = defaultdict(list)
    for arrow in micro_batches:
        pdf = pa.Table.from_batches(arrow, schema=event_rows.EVENT_ARROW_SCHEMA).to_pandas()
        groups = defaultdict(list)
        for i, (c, t, tid, pid) in enumerate(zip(pdf["cluster_id"], pdf["type"], pdf["topic_id"],
                                                 pdf["partition_id"])):
            for b in target_buckets(t, tid, pid, buckets):
                groups[(c, b)].append(i)
        for key, rows in groups.items():
            state = group_state(states.get(key))
            half = len(rows) // 2  # two pandas chunks, the second first: the operator re-sorts
            chunks = [pdf.iloc[rows[half:]].reset_index(drop=True),
                      pdf.iloc[rows[:half]].reset_index(drop=True)]
            for result in op.audit_group(key, iter(chunks), state, audit):
                for table, got in decode_output(result["table"], result["rows"]).items():
                    out[table].extend(got)
            states[key] = state.get
    return out, states


def file_source_batches(log: Path, max_records: int) -> list[list[pa.RecordBatch]]:
    """What the kraft-log source's read() gives, micro-batch by micro-batch."""
    reader = KraftLogStreamReader({"path": str(log), "maxRecordsPerTrigger": str(max_records)})
    start, batches = reader.initialOffset(), []
    while (end := reader.latestOffset(start, reader.getDefaultReadLimit())) != start:
        batches.append([b for p in reader.partitions(start, end)
                        for b in reader.read(LogRangePartition(p.ranges_json))])
        start = end
    return batches


def topic_batches(log: Path, per_micro_batch: int, resent: int = 0) -> list[list[pa.RecordBatch]]:
    """The shipper's messages of `log` through kafka_input's decoding, `per_micro_batch`
    messages a micro-batch; `resent`: each micro-batch after the first starts with the last
    messages of the one before again (a shipper restarted before Kafka acknowledged them)."""
    shipped = LogTail(log).poll(max_bytes=1 << 30)
    cluster = cluster_id_of(log).encode()  # the shipper keys its messages by the cluster's id
    messages = [{"key": cluster, "value": s.value, "topic": "t", "partition": 0, "offset": n,
                 "headers": [{"key": k, "value": v} for k, v in s.headers()]}
                for n, s in enumerate(shipped)]
    out = []
    for start in range(0, len(messages), per_micro_batch):
        part = messages[max(0, start - resent) if start else 0:start + per_micro_batch]
        out.append(list(_decode([pa.RecordBatch.from_pylist(part)])))
    return out


def assert_counts_balance(stats, records: int) -> None:
    for s in stats:
        assert s["records"] + s["side_inputs"] + s["unreadable"] == \
            s["applied"] + s["duplicates"] + s["quarantined"], s
    assert sum(s["applied"] for s in stats) == records


@pytest.fixture(scope="module")
def mutant(tmp_path_factory) -> Path:
    return epoch_mutant(tmp_path_factory.mktemp("mutant") / "log")


def test_the_sources_rows_carry_every_batch_of_the_log_and_its_epoch(mutant):
    events = [e for e in read_log_dir(mutant) if isinstance(e, MetadataEvent)]
    batches = {(e.batch_base_offset, e.batch_last_offset, e.leader_epoch, e.kind == "control")
               for e in events if not e.source.endswith(".checkpoint")}
    rows = [r for chunk in file_source_batches(mutant, 400) for b in chunk for r in b.to_pylist()
            if r["kind"] == event_rows.KIND_EPOCHS]
    assert rows and all(r["type"] == event_rows.BATCH_EPOCHS and r["offset"] == -1 for r in rows)
    sent = [(int(e["base"]), int(e["last"]), int(e["epoch"]), bool(e["control"]))
            for r in rows for e in event_rows.batch_epochs(r["raw"])]
    assert len(sent) == len(batches) and set(sent) == batches
    assert [s[0] for s in sent] == sorted(s[0] for s in sent)  # in log order
    # only bucket 0 gets them, as the NoOps' row
    assert target_buckets(event_rows.BATCH_EPOCHS, None, None, 4) == [0]


@pytest.mark.parametrize("buckets", [1, 4])
def test_the_file_sources_rows_give_checks_findings(mutant, buckets):
    expected = checked(mutant)
    the_four_breaks(expected)
    micro_batches = file_source_batches(mutant, 150)
    assert len(micro_batches) > 5  # the epochs are carried from one micro-batch to the next
    out, _ = operator_run(micro_batches, buckets)
    assert rule_rows(out["violations"]) == expected
    records = sum(1 for e in read_log_dir(mutant) if isinstance(e, MetadataEvent))
    assert_counts_balance(out["stats"], records)  # the epochs rows are no input records


def test_a_restart_from_the_state_rows_judges_the_rest_of_the_log_alike(mutant):
    """Each micro-batch's groups rebuilt from their state rows (a restart from the checkpoint),
    the stale batches in micro-batches of their own after the epochs they go back from."""
    expected = checked(mutant)
    states: dict = {}
    found = []
    for micro_batch in file_source_batches(mutant, 100):
        op._LIVE.clear()
        out, states = operator_run([micro_batch], 4, states)
        found.extend(out["violations"])
    assert rule_rows(found) == expected


def test_the_topic_path_gives_checks_findings_batches_sent_twice_included(mutant):
    expected = checked(mutant)
    out, _ = operator_run(topic_batches(mutant, 120, resent=7), 4)
    assert rule_rows(out["violations"]) == expected
    records = sum(1 for e in read_log_dir(mutant) if isinstance(e, MetadataEvent))
    assert_counts_balance(out["stats"], records)
    assert sum(s["duplicates"] for s in out["stats"]) > 0


def test_kafka_dump_log_text_gives_checks_findings(mutant):
    """A dump of the mutant's segment as a `sources.dump_logs` file, and through `check`."""
    from kraft_audit.core.codec.dumplog import format_dump_log, parse_dump_log
    from kraft_audit.spark.inputs import _arrow_mapper, _parse_dump_file

    cluster = cluster_id_of(mutant)
    segment = [e for e in read_log_dir(mutant) if not e.source.endswith(".checkpoint")]
    text = "\n".join(format_dump_log(segment))
    dumped = Auditor(load_catalog()).process(parse_dump_log(text.splitlines(), cluster, "dump.txt"))
    expected = sorted((asdict(v) for v in dumped.violations if v.rule_id == RULE), key=lambda v: v["offset"])
    the_four_breaks(expected)
    files = pa.RecordBatch.from_pylist([{"value": text, "file_path": "file:/in/dump.txt", "mtime": 0}])
    out, _ = operator_run([list(_arrow_mapper(_parse_dump_file, cluster)([files]))], 4)
    assert rule_rows(out["violations"]) == expected


@pytest.mark.parametrize("log", sorted(p for p in [*REAL.iterdir(), *STORY.iterdir()] if p.is_dir()),
                         ids=lambda p: p.name)
def test_real_logs_give_no_finding_through_either_path(log):
    assert checked(log) == []
    for micro_batches in (file_source_batches(log, 2000), topic_batches(log, 500)):
        out, _ = operator_run(micro_batches, 4)
        assert rule_rows(out["violations"]) == []


def test_a_batch_known_by_its_header_alone_is_judged_once_across_a_restart(mutant):
    """Bucket 0 may get none of a batch's records (partition records of other buckets), nor
    any record after it before the micro-batch ends; the batch sent again (a shipper's copy)
    after a restart is no new finding."""
    events = [e for e in read_log_dir(mutant) if isinstance(e, MetadataEvent)]
    third = [e for e in events if e.type == "LEADER_CHANGE" and not e.source.endswith(".checkpoint")][2]
    auditor = Auditor(load_catalog())
    auditor.process([e for e in events if e.offset <= third.offset])
    assert auditor.raft_epoch == third.leader_epoch
    at = third.offset + 1
    header = MetadataEvent(auditor.cluster_id, "x.log", -1, -1, at, at + 2, 1_000, KIND_BATCH_HEADER,
                           BATCH_HEADER, 0, {}, -1, None, third.leader_epoch - 1)
    found = [v for v in auditor.process([header]).violations if v.rule_id == RULE]
    assert [(v.offset, v.timestamp_ms) for v in found] == [(at + 2, 1_000)]
    assert "went back" in found[0].message
    assert json.loads(found[0].evidence) == {"batch": {"base_offset": at, "last_offset": at + 2}}
    again = Auditor.from_snapshot(auditor.snapshot(), load_catalog())
    assert again.last_offset == third.offset  # no record after the batch: its header alone remembers it
    out = again.process([header])
    assert [v for v in out.violations if v.rule_id == RULE] == [] and out.applied == out.duplicates == 0


def test_a_state_stored_before_the_epochs_travelled_still_loads(mutant):
    """An old checkpoint's state rows lack what the epochs rows added: they load, and the
    epochs are judged from there on (the first one seen counts as announced)."""
    auditor = Auditor(load_catalog())
    events = list(read_log_dir(mutant))
    auditor.process(events[:50])
    snap = auditor.snapshot()
    meta = unpack_meta(snap.meta)
    del meta["event_loop"]["raft_headers_to"]
    old = Snapshot(pack_meta(meta), snap.topology, snap.shards)
    again = Auditor.from_snapshot(old, load_catalog())
    assert again.raft_epoch == auditor.raft_epoch and again.last_offset == auditor.last_offset


# ------------------------------------------------------------ the streaming job

def job_config(tmp_path: Path, logs, **overrides):
    from kraft_audit.config import load_config

    values = {"sources.log_dirs": [str(p) for p in logs], "checkpoint": str(tmp_path / "ck"),
              "tables": str(tmp_path / "tables"), "audit.buckets": 4, "metrics.enabled": False,
              "trigger.interval": "1 second"}
    values.update(overrides)
    return load_config(None, values, environ={})


def table(cfg, name: str) -> list[dict]:
    from kraft_audit.tables.read import read_rows

    return read_rows(cfg.tables, name)


@pytest.mark.spark
def test_the_job_finds_what_check_finds_across_micro_batches_and_a_restart(spark, tmp_path, capsys):
    from kraft_audit.cli.main import main
    from kraft_audit.spark.job import AuditJob

    log = epoch_mutant(tmp_path / "log")
    assert main(["check", str(log), "--json"]) == 1
    expected = rule_rows(json.loads(capsys.readouterr().out)["findings"])
    the_four_breaks(expected)
    # the first run stops before the NoOp of an older leader; the second goes on from the
    # checkpoint, the newest epoch known only from the state it left
    [segment] = (log / METADATA_DIR).glob("*.log")
    whole = segment.read_bytes()
    stale = next(e for e in read_log_dir(log) if isinstance(e, MetadataEvent) and e.type == "NO_OP_RECORD"
                 and any(f["offset"] == e.batch_last_offset for f in expected))
    segment.write_bytes(whole[:stale.position])
    cfg = job_config(tmp_path, [log], **{"sources.max_records_per_trigger": 150})
    assert AuditJob(cfg, spark=spark).run(available_now=True)
    first_run = rule_rows(table(cfg, "violations"))
    assert first_run and first_run == [f for f in expected if f["offset"] < stale.offset]
    segment.write_bytes(whole)
    job = AuditJob(cfg, spark=spark)
    assert job.run(available_now=True)
    violations = table(cfg, "violations")
    assert rule_rows(violations) == expected
    assert not [i for i, n in Counter(v["violation_id"] for v in violations).items() if n > 1]
    progress = table(cfg, "progress")
    records = sum(1 for e in read_log_dir(log) if isinstance(e, MetadataEvent))
    assert sum(p["records"] for p in progress) == records  # the epochs rows counted nowhere
    for p in progress:
        assert p["records"] + p["side_inputs"] + p["unreadable"] == \
            p["applied"] + p["duplicates"] + p["quarantined"], p


@pytest.mark.spark
def test_the_job_finds_nothing_on_the_real_logs(spark, tmp_path):
    from kraft_audit.spark.job import AuditJob

    logs = []
    for source in sorted(p for p in [*REAL.iterdir(), *STORY.iterdir()] if p.is_dir()):
        logs.append(tmp_path / "logs" / f"{source.parent.name}-{source.name}")
        shutil.copytree(source, logs[-1])
        assert checked(logs[-1]) == []
    cfg = job_config(tmp_path, logs)
    assert AuditJob(cfg, spark=spark).run(available_now=True)
    assert rule_rows(table(cfg, "violations")) == []
    progress = table(cfg, "progress")
    assert sum(p["records"] for p in progress) == sum(
        1 for log in logs for e in read_log_dir(log) if isinstance(e, MetadataEvent))
