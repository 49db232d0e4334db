"""The `kraft-log` streaming source: planning (driver) and reading (tasks)
called directly, then once through a real streaming query."""

from __future__ import annotations

import gc
import json
from dataclasses import replace
from pathlib import Path

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable

from kraft_audit.core.codec.logdir import LogDirWriter
from kraft_audit.core.events import MetadataEvent, Quarantined
from kraft_audit.testing.collector import passes_inside
from kraft_audit.spark import event_rows, source
from kraft_audit.core.codec.logdir import METADATA_DIR
from kraft_audit.core.codec.logwalk import Budget
from kraft_audit.spark.source import KraftLogStreamReader, LogDirPlanner, LogRangePartition, ReadRange, read_range

CLUSTER = "src-test-cluster"
T0 = 1_763_700_000_000


def write_noops(path: Path, n: int, segment_bytes: int = 1 << 30, start_ts: int = T0) -> LogDirWriter:
    w = LogDirWriter(path, CLUSTER, segment_bytes=segment_bytes)
    for i in range(n):
        w.append([("NO_OP_RECORD", 0, {})], start_ts + i)
    return w


def reader(path: Path, **options) -> KraftLogStreamReader:
    return KraftLogStreamReader({"path": str(path), **{k: str(v) for k, v in options.items()}})


def read_between(r: KraftLogStreamReader, start: dict, end: dict, markers: list | None = None) -> list:
    """What the tasks of one micro-batch read, LOG_TAIL markers set aside."""
    items = []
    for part in r.partitions(start, end):
        items.extend(i for chunk in read_range(ReadRange(**json.loads(part.ranges_json))) for i in chunk)
    if markers is not None:
        markers.append([i for i in items if getattr(i, "kind", None) == event_rows.KIND_MARKER])
    return [i for i in items if getattr(i, "kind", None) != event_rows.KIND_MARKER]


def drain(r: KraftLogStreamReader, limit=None, start=None, markers=None):
    """Run planning + reading like successive micro-batches; returns
    (items per batch, end offset)."""
    start = start or r.initialOffset()
    batches = []
    while True:
        end = r.latestOffset(start, limit or r.getDefaultReadLimit())
        json.dumps(end)  # offsets must be JSON for the checkpoint
        if end == start:
            return batches, start
        batches.append(read_between(r, start, end, markers))
        start = end


def offsets(items) -> list[int]:
    return [i.offset for i in items if isinstance(i, MetadataEvent)]


def test_offsets_progress_across_segment_rolls_with_bounded_triggers(tmp_path):
    write_noops(tmp_path, 60, segment_bytes=1500).close()
    assert len(list((tmp_path / METADATA_DIR).glob("*.log"))) > 2
    markers: list = []
    batches, end = drain(reader(tmp_path, maxRecordsPerTrigger=7), markers=markers)
    assert [len(b) for b in batches[:-1]] == [7] * (len(batches) - 1)
    # only the micro-batch that reaches the end of the log says so
    assert [len(m) for m in markers] == [0] * (len(batches) - 1) + [1]
    assert [o for b in batches for o in offsets(b)] == list(range(60))
    assert end["logs"][str(tmp_path)]["next_offset"] == 60
    assert all(isinstance(i, MetadataEvent) and i.cluster_id == CLUSTER for b in batches for i in b)


def test_max_bytes_per_trigger_and_read_all_available(tmp_path):
    write_noops(tmp_path, 30).close()
    batch_size = 72  # one NoOp record batch
    r = reader(tmp_path, maxBytesPerTrigger=batch_size * 4)
    batches, _ = drain(r)
    assert [len(b) for b in batches] == [4] * 7 + [2]
    # The engine may still ask for everything (ReadAllAvailable): options are ignored then.
    all_at_once, _ = drain(reader(tmp_path, maxRecordsPerTrigger=3), limit=ReadAllAvailable())
    assert [len(b) for b in all_at_once] == [30]


def test_a_chunk_is_read_without_the_cyclic_collector(tmp_path, monkeypatch):
    """A task's chunks are framed and made Arrow with the collector paused (its passes
    walked the live auditors a Python worker keeps) and handed to Spark with it on."""
    monkeypatch.setattr(source, "_READ_CHUNK_RECORDS", 10)
    write_noops(tmp_path, 60).close()
    r = reader(tmp_path)
    start = r.initialOffset()
    part = next(iter(r.partitions(start, r.latestOffset(start, ReadAllAvailable()))))
    chunks = r.read(LogRangePartition(part.ranges_json))
    chunks_read = rows = 0
    with passes_inside("read_range", "key_record_batch", "to_record_batch") as passes:
        gc.enable()
        for batch in chunks:
            assert gc.isenabled()  # on whenever the batch is Spark's
            chunks_read, rows = chunks_read + 1, rows + batch.num_rows
    assert passes == [] and chunks_read >= 6 and rows > 6


def test_a_batch_being_written_at_the_tail_is_waited_for_not_quarantined(tmp_path):
    w = write_noops(tmp_path, 5)
    segment = tmp_path / METADATA_DIR / "00000000000000000000.log"
    size = segment.stat().st_size
    w.append([("NO_OP_RECORD", 0, {})], T0 + 5)
    w.close()
    whole = segment.read_bytes()
    segment.write_bytes(whole[: size + 30])  # the last batch is half written
    r = reader(tmp_path)
    start = r.initialOffset()
    end = r.latestOffset(start, ReadAllAvailable())
    items = read_between(r, start, end)
    assert offsets(items) == [0, 1, 2, 3, 4]
    assert not [i for i in items if isinstance(i, Quarantined)]
    assert r.latestOffset(end, ReadAllAvailable()) == end  # still waiting
    segment.write_bytes(whole)  # the writer finishes the batch
    end2 = r.latestOffset(end, ReadAllAvailable())
    assert offsets(read_between(r, end, end2)) == [5]


def test_starts_from_the_newest_snapshot_when_asked(tmp_path):
    w = write_noops(tmp_path, 10)
    w.write_snapshot([("FEATURE_LEVEL_RECORD", 0, {"name": "metadata.version", "featureLevel": 25})],
                     end_offset=8, epoch=1, timestamp_ms=T0)
    w.close()
    batches, _ = drain(reader(tmp_path, startingPosition="snapshot"))
    items = [i for b in batches for i in b]
    snapshot = [i for i in items if i.source.endswith(".checkpoint")]
    assert [i.type for i in snapshot] == ["SNAPSHOT_HEADER", "FEATURE_LEVEL_RECORD", "SNAPSHOT_FOOTER"]
    assert offsets([i for i in items if i.source.endswith(".log")]) == [8, 9]
    # earliest (the default) ignores the snapshot while the log is whole
    batches, _ = drain(reader(tmp_path))
    assert offsets([i for b in batches for i in b]) == list(range(10))


def test_retention_before_start_boots_from_the_snapshot(tmp_path):
    w = write_noops(tmp_path, 40, segment_bytes=800)
    w.write_snapshot([("FEATURE_LEVEL_RECORD", 0, {"name": "metadata.version", "featureLevel": 25})],
                     end_offset=25, epoch=1, timestamp_ms=T0)
    w.close()
    segs = sorted((tmp_path / METADATA_DIR).glob("*.log"))
    for s in segs:
        if int(s.name[:20]) + 11 <= 25 and s != segs[-1]:
            s.unlink()  # retention: segments fully below the snapshot
    assert int(sorted((tmp_path / METADATA_DIR).glob("*.log"))[0].name[:20]) > 0
    batches, _ = drain(reader(tmp_path))
    items = [i for b in batches for i in b]
    assert items[0].type == "SNAPSHOT_HEADER"
    assert offsets([i for i in items if i.source.endswith(".log")]) == list(range(25, 40))
    assert not [i for i in items if isinstance(i, Quarantined)]


def test_segment_deleted_under_the_reader_resumes_from_snapshot_and_says_what_was_missed(tmp_path):
    w = write_noops(tmp_path, 30, segment_bytes=800)
    r = reader(tmp_path, maxRecordsPerTrigger=5)
    start = r.initialOffset()
    end = r.latestOffset(start, r.getDefaultReadLimit())
    assert offsets(read_between(r, start, end)) == list(range(5))
    # The auditor falls behind; the controller snapshots at 22 and retention deletes old segments.
    w.write_snapshot([("FEATURE_LEVEL_RECORD", 0, {"name": "metadata.version", "featureLevel": 25})],
                     end_offset=22, epoch=1, timestamp_ms=T0)
    w.close()
    segs = sorted((tmp_path / METADATA_DIR).glob("*.log"))
    for s in segs[:-1]:
        if int(s.name[:20]) < 22 and int(segs[segs.index(s) + 1].name[:20]) <= 22:
            s.unlink()
    batches, _ = drain(r, start=end)
    items = [i for b in batches for i in b]
    gap = [i for i in items if isinstance(i, Quarantined)]
    assert len(gap) == 1 and "deleted by retention" in gap[0].reason and "offsets 5.." in gap[0].reason
    events = [i for i in items if isinstance(i, MetadataEvent)]
    assert [i.type for i in events if i.source.endswith(".checkpoint")][0] == "SNAPSHOT_HEADER"
    assert offsets([i for i in events if i.source.endswith(".log")]) == list(range(22, 30))


def _epochs(path: Path, *runs: tuple[int, int], segment_bytes: int = 1 << 30) -> None:
    """Append NoOp batches, `count` of each Raft `epoch` in turn: runs of (epoch, count)."""
    w = LogDirWriter(path, CLUSTER, segment_bytes=segment_bytes)
    for epoch, count in runs:
        for _ in range(count):
            w.append([("NO_OP_RECORD", 0, {})], T0 + w.next_offset, leader_epoch=epoch)
    w.close()


def _truncate_to(path: Path, offset: int) -> None:
    """What Kafka does to a deposed leader's copy: every batch from `offset` on removed
    (later segments deleted, the one holding it cut there)."""
    d = path / METADATA_DIR
    for seg in sorted(d.glob("*.log"), reverse=True):
        base = int(seg.name[:20])
        if base >= offset:
            seg.unlink()
            continue
        seg.write_bytes(seg.read_bytes()[:72 * (offset - base)])  # a NoOp batch: 72 bytes
        return


def _epochs_read(items) -> list[tuple[int, int]]:
    return [(i.offset, i.leader_epoch) for i in items if isinstance(i, MetadataEvent)]


@pytest.mark.parametrize("segment_bytes", [1 << 30, 72 * 5], ids=["one segment", "segments deleted"])
def test_a_tail_a_later_leader_rewrote_is_read_again_from_where_the_copies_agree(tmp_path, segment_bytes):
    """A deposed leader's copy, truncated under the reader and rewritten in a later epoch at
    the same offsets (the same length, so that a byte position still falls on a batch): the
    reader, standing on offset 19's batch of epoch 2, finds it gone, says what it had read of
    the replaced version, and reads epoch 3 from where the copies agree (offset 15 of
    epoch 2's, or 8 of epoch 1's when the truncation reached into it)."""
    _epochs(tmp_path, (1, 10), (2, 10), segment_bytes=segment_bytes)
    r = reader(tmp_path)
    batches, end = drain(r)
    assert _epochs_read(b for batch in batches for b in batch) == [(o, 1 + o // 10) for o in range(20)]
    agree = 15 if segment_bytes > 72 * 5 else 8
    _truncate_to(tmp_path, agree)
    _epochs(tmp_path, (3, 20 - agree + 3), segment_bytes=segment_bytes)
    batches, _ = drain(r, start=end)
    items = [i for batch in batches for i in batch]
    rows = [i for i in items if isinstance(i, Quarantined)]
    assert [(q.offset, q.reason) for q in rows] == [(agree, (
        f"offsets {agree}..19, read from Raft epoch {1 + agree // 10} on, were replaced by a later leader "
        f"(epoch 3 from offset {agree}): the log was truncated there and is read again from it"))]
    assert _epochs_read(items) == [(o, 3) for o in range(agree, 23)]


def test_a_truncation_with_nothing_rewritten_yet_waits_at_the_new_end(tmp_path):
    _epochs(tmp_path, (1, 10), (2, 5))
    r = reader(tmp_path)
    _, end = drain(r)
    _truncate_to(tmp_path, 12)
    batches, end = drain(r, start=end)
    assert [(q.offset, "offsets 12..14, read from Raft epoch 2 on" in q.reason)
            for b in batches for q in b if isinstance(q, Quarantined)] == [(12, True)]
    assert next(iter(end["logs"].values()))["next_offset"] == 12
    _epochs(tmp_path, (3, 2))
    batches, _ = drain(r, start=end)
    assert _epochs_read(i for b in batches for i in b) == [(12, 3), (13, 3)]


def test_retention_is_no_rewrite(tmp_path):
    """Segments deleted from the start of the log under a reader that read them: nothing said."""
    _epochs(tmp_path, (1, 12), (2, 6), segment_bytes=72 * 5)
    r = reader(tmp_path)
    _, end = drain(r)
    for seg in sorted((tmp_path / METADATA_DIR).glob("*.log"))[:2]:
        seg.unlink()
    _epochs(tmp_path, (2, 2), segment_bytes=72 * 5)
    batches, _ = drain(r, start=end)
    assert _epochs_read(i for b in batches for i in b) == [(18, 2), (19, 2)]
    assert not [q for b in batches for q in b if isinstance(q, Quarantined)]


def test_the_commit_point_from_the_log_bounds_the_walk(tmp_path):
    """Without the quorum's word, a copy proves committed what precedes its newest epoch
    with metadata in it (its leader wrote metadata only once that was committed), and what a
    snapshot holds; a walk bounded there stops before epoch 2's batches."""
    _epochs(tmp_path, (1, 10), (2, 5))
    planner = LogDirPlanner(str(tmp_path), CLUSTER)
    assert planner.commit.refresh([]) == 10
    walk = planner.walk(planner.initial(), Budget(None, None), None, commit_end=10)
    assert walk.end["next_offset"] == 10 and walk.end["epochs"] == [[1, 0]]
    LogDirWriter(tmp_path, CLUSTER).write_snapshot(
        [("FEATURE_LEVEL_RECORD", 0, {"name": "metadata.version", "featureLevel": 25})],
        end_offset=13, epoch=2, timestamp_ms=T0)
    assert planner.commit.refresh([]) == 13
    _truncate_to(tmp_path, 11)  # a proof never goes back
    assert planner.commit.refresh([]) == 13


def test_corrupt_bytes_become_quarantine_rows_and_reading_goes_on(tmp_path):
    write_noops(tmp_path, 10).close()
    segment = tmp_path / METADATA_DIR / "00000000000000000000.log"
    data = bytearray(segment.read_bytes())
    data[72 * 3 + 65] ^= 0xFF  # a byte inside batch 3: CRC mismatch
    data[72 * 6 + 16] = 7  # batch 6's magic: garbage until batch 7
    segment.write_bytes(bytes(data))
    batches, _ = drain(reader(tmp_path))
    items = [i for b in batches for i in b]
    assert offsets(items) == [0, 1, 2, 4, 5, 7, 8, 9]
    reasons = [i.reason for i in items if isinstance(i, Quarantined)]
    assert len(reasons) == 3 and "CRC" in reasons[0] and "magic" in reasons[1]
    # the garbage took a whole batch with it: the hole it left is said too, as `check` says it
    # (a batch whose header stands but whose CRC fails is its own row: `check` adds a hole row)
    assert reasons[2] == "offsets 6..6 are missing before the batch at position 504"


def test_several_log_dirs_each_with_its_cluster_id(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    LogDirWriter(a, "cluster-a").append([("NO_OP_RECORD", 0, {})], T0)
    wb = LogDirWriter(b, "cluster-b")
    wb.append([("NO_OP_RECORD", 0, {})], T0)
    wb.append([("NO_OP_RECORD", 0, {})], T0)
    wb.close()
    r = KraftLogStreamReader({"logDirs": json.dumps([{"path": str(a)}, {"path": str(b), "cluster_id": "b!"}])})
    batches, end = drain(r)
    items = [i for b_ in batches for i in b_]
    assert sorted((i.cluster_id, i.offset) for i in items) == [("b!", 0), ("b!", 1), ("cluster-a", 0)]
    assert set(end["logs"]) == {str(a), str(b)}


def test_rows_round_trip_through_the_arrow_schema(tmp_path):
    write_noops(tmp_path, 2).close()
    planner = LogDirPlanner(str(tmp_path), None)
    assert planner.newest() == (1, T0 + 1)
    batches, _ = drain(reader(tmp_path))
    items = batches[0] + [Quarantined(CLUSTER, "x.log", 5, "why", b"\x00\xff", 3)]
    batch = event_rows.to_record_batch(items)
    assert batch.schema == event_rows.EVENT_ARROW_SCHEMA
    # the source's rows carry a record's value bytes, not its JSON
    assert [r["data_json"] for r in batch.to_pylist()][:2] == [None, None]
    back = [event_rows.from_row(r) for r in batch.to_pylist()]
    # every field but the batch's Raft epoch, which rows do not carry (event_rows says why),
    # and the value bytes, decoded back into the event the codec gives
    assert back == [replace(i, leader_epoch=-1, raw=None) if isinstance(i, MetadataEvent) else i
                    for i in items]
    assert all(isinstance(i, Quarantined) or i.raw == b"\x01\x14\x00\x00" for i in items)


@pytest.mark.spark
def test_available_now_query_reads_everything_once_in_bounded_micro_batches(spark, tmp_path):
    write_noops(tmp_path / "log", 45, segment_bytes=1000).close()
    seen: list[tuple[int, list[int]]] = []

    def sink(df, batch_id):
        rows = (df.filter(f"kind NOT IN ('marker', '{event_rows.KIND_EPOCHS}')")  # no records
                .select("kind", "offset", "raw").collect())
        # a chunk's NoOps but the newest come as one row of their offsets
        seen.append((batch_id, sorted(
            [r.offset for r in rows if r.kind != event_rows.KIND_NOOPS]
            + [int(o) for r in rows if r.kind == event_rows.KIND_NOOPS for o in event_rows.noop_offsets(r.raw)])))

    def run():
        q = (spark.readStream.format("kraft-log").option("path", str(tmp_path / "log"))
             .option("maxRecordsPerTrigger", 20).load()
             .writeStream.foreachBatch(sink).option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(availableNow=True).start())
        q.awaitTermination()

    run()
    assert [n for n, _ in seen] == [0, 1, 2]
    assert [o for _, offs in seen for o in offs] == list(range(45))
    # Restart from the checkpoint after more appends: only the new records.
    w = LogDirWriter(tmp_path / "log", CLUSTER, segment_bytes=1000)
    for i in range(5):
        w.append([("NO_OP_RECORD", 0, {})], T0 + 100 + i)
    w.close()
    run()
    assert seen[3:] == [(3, [45, 46, 47, 48, 49])]
