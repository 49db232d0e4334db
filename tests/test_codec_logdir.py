"""Log dirs: the writer's layout, ordered reads, snapshots, resumable reads."""

from __future__ import annotations

from kraft_audit.core.codec.logdir import (
    METADATA_DIR,
    LogDirWriter,
    list_segments,
    list_snapshots,
    read_file_events,
    read_log_dir,
    read_meta_properties,
    read_segment,
)
from kraft_audit.core.events import MetadataEvent, Quarantined

TOPIC_ID = "T6iQO94WQSKp6lhnnRhdRA"


def change(partition: int, leader: int = 1):
    return (
        "PARTITION_CHANGE_RECORD",
        2,
        {"partitionId": partition, "topicId": TOPIC_ID, "leader": leader},
    )


def events_of(items):
    return [e for e in items if isinstance(e, MetadataEvent)]


def test_writer_lays_out_a_kafka_data_dir(tmp_path):
    with LogDirWriter(tmp_path, "cluster-1", node_id=3, metadata_version=23) as writer:
        writer.append_leader_change(3, 1000, leader_epoch=1, voters=(3,))
        assert writer.append([change(0), change(1)], 1001) == (1, 2)
    props = read_meta_properties(tmp_path)
    assert (
        props["cluster.id"] == "cluster-1" and props["node.id"] == "3" and props["version"] == "1"
    )
    assert len(props["directory.id"]) == 22
    assert [p.name for _, p in list_segments(tmp_path)] == ["00000000000000000000.log"]
    bootstrap = events_of(read_file_events(tmp_path / "bootstrap.checkpoint", "c"))
    assert [e.type for e in bootstrap] == [
        "SNAPSHOT_HEADER",
        "FEATURE_LEVEL_RECORD",
        "SNAPSHOT_FOOTER",
    ]
    assert bootstrap[1].data == {"name": "metadata.version", "featureLevel": 23}
    events = events_of(read_log_dir(tmp_path))
    assert [(e.offset, e.batch_base_offset, e.batch_last_offset) for e in events] == [
        (0, 0, 0),
        (1, 1, 2),
        (2, 1, 2),
    ]
    assert events[0].cluster_id == "cluster-1"  # from meta.properties
    # the metadata dir itself works as the path, too
    assert events_of(read_log_dir(tmp_path / METADATA_DIR)) == events


def test_segments_roll_and_read_in_offset_order(tmp_path):
    with LogDirWriter(tmp_path, "c", segment_bytes=600) as writer:
        for i in range(40):
            writer.append([change(i)], 1000 + i)
    segments = list_segments(tmp_path)
    assert len(segments) > 3
    assert [base for base, _ in segments] == sorted(base for base, _ in segments)
    assert [e.offset for e in events_of(read_log_dir(tmp_path))] == list(range(40))


def test_reopening_resumes_after_the_last_batch_and_drops_a_torn_tail(tmp_path):
    with LogDirWriter(tmp_path, "c") as writer:
        writer.append([change(0), change(1)], 1000)
    segment = list_segments(tmp_path)[0][1]
    with open(segment, "ab") as fh:
        fh.write(b"\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x01")  # a torn batch header
    with LogDirWriter(tmp_path, "c") as writer:
        assert writer.append([change(2)], 2000) == (2, 2)
    items = list(read_log_dir(tmp_path))
    assert not [q for q in items if isinstance(q, Quarantined)]
    assert [e.offset for e in events_of(items)] == [0, 1, 2]


def test_live_tail_reads_batches_as_they_are_appended(tmp_path):
    writer = LogDirWriter(tmp_path, "c")
    writer.append([change(0)], 1000)
    segment = list_segments(tmp_path)[0][1]
    seen, position = [], 0
    for round_ in range(1, 4):
        result = read_segment(segment, "c", position)
        seen += result.events
        position = result.next_position
        assert not result.waiting and position == segment.stat().st_size
        writer.append([change(round_), change(round_ + 10)], 1000 + round_)
        writer.flush()
    seen += read_segment(segment, "c", position).events
    writer.close()
    assert [e.offset for e in seen] == list(range(7))


def test_read_segment_limits_never_split_a_batch(tmp_path):
    with LogDirWriter(tmp_path, "c") as writer:
        for i in range(5):
            writer.append([change(i * 3 + j) for j in range(3)], 1000)
    segment = list_segments(tmp_path)[0][1]
    by_records = read_segment(segment, "c", max_records=4)
    assert [e.offset for e in by_records.events] == list(range(6)) and by_records.next_offset == 6
    tiny = read_segment(segment, "c", max_bytes=10)  # smaller than one batch: still one whole batch
    assert [e.offset for e in tiny.events] == [0, 1, 2] and not tiny.waiting
    batch_size = tiny.next_position
    two = read_segment(segment, "c", position=batch_size, max_bytes=2 * batch_size + 5)
    assert [e.offset for e in two.events] == list(range(3, 9)) and not two.waiting
    assert two.next_position == 3 * batch_size


def test_read_segment_positions_are_file_positions(tmp_path):
    with LogDirWriter(tmp_path, "c") as writer:
        for i in range(3):
            writer.append([change(i)], 1000)
    segment = list_segments(tmp_path)[0][1]
    data = bytearray(segment.read_bytes())
    first = read_segment(segment, "c", max_records=1)
    data[first.next_position * 2 + 70] ^= 1  # corrupt the third batch
    segment.write_bytes(bytes(data))
    rest = read_segment(segment, "c", position=first.next_position)
    assert [e.position for e in rest.events] == [first.next_position]
    (bad,) = rest.quarantined
    assert bad.position == first.next_position * 2 and f"position {bad.position}" in bad.reason
    assert rest.next_position == len(data)


def test_snapshot_bootstrap_when_older_segments_are_gone(tmp_path):
    writer = LogDirWriter(tmp_path, "c", segment_bytes=400)
    for i in range(30):
        writer.append([change(i)], 1000 + i)
    writer.write_snapshot(
        [("TOPIC_RECORD", 0, {"name": "t", "topicId": TOPIC_ID})] + [change(i) for i in range(3)],
        end_offset=20,
        epoch=1,
        timestamp_ms=5000,
    )
    writer.close()
    assert [(end, epoch) for end, epoch, _ in list_snapshots(tmp_path)] == [(20, 1)]
    # all segments present: earliest reads the log only
    assert [e.offset for e in events_of(read_log_dir(tmp_path))] == list(range(30))
    # start="snapshot": snapshot, then only records from its end offset on
    from_snapshot = events_of(read_log_dir(tmp_path, start="snapshot"))
    assert [e.type for e in from_snapshot[:2]] == ["SNAPSHOT_HEADER", "TOPIC_RECORD"]
    assert [e.offset for e in from_snapshot if e.source.endswith(".log")] == list(range(20, 30))
    # drop the segments that the snapshot covers wholly: earliest must boot from it
    for base, path in list_segments(tmp_path):
        nxt = [b for b, _ in list_segments(tmp_path) if b > base]
        if nxt and nxt[0] <= 20:
            path.unlink()
    items = list(read_log_dir(tmp_path))
    assert not [q for q in items if isinstance(q, Quarantined)]
    log_offsets = [e.offset for e in events_of(items) if e.source.endswith(".log")]
    assert log_offsets == list(range(20, 30))


def test_missing_prefix_without_snapshot_is_reported(tmp_path):
    writer = LogDirWriter(tmp_path, "c", segment_bytes=300)
    for i in range(10):
        writer.append([change(i)], 1000)
    writer.close()
    list_segments(tmp_path)[0][1].unlink()
    items = list(read_log_dir(tmp_path))
    assert isinstance(items[0], Quarantined) and "missing" in items[0].reason
    assert all(isinstance(e, MetadataEvent) for e in items[1:])


def test_gap_between_batches_is_reported(tmp_path):
    with LogDirWriter(tmp_path, "c") as writer:
        writer.append([change(0)], 1000)
        writer.next_offset = 5  # a writer that skipped offsets 1..4
        writer.append([change(5)], 1000)
    items = list(read_log_dir(tmp_path))
    assert [type(i).__name__ for i in items] == ["MetadataEvent", "Quarantined", "MetadataEvent"]
    assert "offsets 1..4 are missing" in items[1].reason and items[1].offset == 1
