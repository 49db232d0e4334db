"""Record batch v2: header layout, CRC, compression, control batches, events."""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c

from kraft_audit.core.codec.batches import (
    COMPRESSION_NAMES,
    HEADER,
    HEADER_SIZE,
    Batch,
    batch_events,
    encode_batch,
    encode_record,
    iter_batches,
    iter_records,
)
from kraft_audit.core.codec.records import encode_control, encode_value
from kraft_audit.core.events import KIND_CONTROL, UNKNOWN_RECORD, MetadataEvent, Quarantined

TOPIC_ID = "T6iQO94WQSKp6lhnnRhdRA"


def change(partition: int, **fields) -> bytes:
    return encode_value(
        "PARTITION_CHANGE_RECORD", 2, {"partitionId": partition, "topicId": TOPIC_ID, **fields}
    )


def only_batch(buf: bytes) -> Batch:
    (batch,) = list(iter_batches(buf))
    assert isinstance(batch, Batch)
    return batch


def test_header_is_61_bytes_with_kafka_field_layout():
    buf = encode_batch(100, [change(0), change(1, leader=3)], 1_700_000_000_000, 7)
    assert HEADER_SIZE == 61
    base, length, epoch, magic, crc, attrs, last_delta, base_ts, max_ts, pid, pepoch, seq, count = (
        HEADER.unpack_from(buf)
    )
    assert (base, epoch, magic, attrs, last_delta, count) == (100, 7, 2, 0, 1, 2)
    assert length + 12 == len(buf)
    assert base_ts == max_ts == 1_700_000_000_000
    assert (pid, pepoch, seq) == (-1, -1, -1)
    assert crc == crc32c(buf[21:])


def test_events_have_offsets_batch_limits_and_times():
    buf = encode_batch(100, [change(0), change(1, leader=3)], 5000, 7, timestamp_deltas=[0, 3])
    events = batch_events(only_batch(buf), "cluster", "seg.log")
    assert [
        (e.offset, e.batch_base_offset, e.batch_last_offset, e.timestamp_ms) for e in events
    ] == [(100, 100, 101, 5000), (101, 100, 101, 5003)]
    assert events[1].data["leader"] == 3 and events[0].data["leader"] == -2
    assert all(
        e.position == 0 and e.source == "seg.log" and e.cluster_id == "cluster" for e in events
    )
    assert events[1].is_batch_end and not events[0].is_batch_end


@pytest.mark.parametrize("codec", sorted(COMPRESSION_NAMES))
def test_every_compression_codec_round_trips(codec):
    values = [change(i, isr=[1, 2, 3]) for i in range(200)]
    buf = encode_batch(0, values, 1000, 1, compression=codec)
    batch = only_batch(buf)
    assert batch.compression == codec
    assert [r.value for r in iter_records(batch)] == values
    events = batch_events(batch, "c", "s")
    assert [e.data["partitionId"] for e in events] == list(range(200))


def test_control_batch_decodes_leader_change():
    key, value = encode_control(
        "LEADER_CHANGE",
        {
            "version": 0,
            "leaderId": 2,
            "voters": [{"voterId": 1}],
            "grantingVoters": [{"voterId": 2}],
        },
    )
    buf = encode_batch(5, [value], 1000, 3, control=True, keys=[key])
    (event,) = batch_events(only_batch(buf), "c", "s")
    assert (event.kind, event.type, event.offset, event.api_key) == (
        KIND_CONTROL,
        "LEADER_CHANGE",
        5,
        -1,
    )
    assert event.data["leaderId"] == 2


def test_unknown_api_key_becomes_unknown_record_event_with_raw_value():
    unknown = b"\x01\x06\x00\x00"  # apiKey 6 is unused
    events = batch_events(
        only_batch(encode_batch(0, [change(0), unknown, change(1)], 1, 1)), "c", "s"
    )
    assert [e.type for e in events] == [
        "PARTITION_CHANGE_RECORD",
        UNKNOWN_RECORD,
        "PARTITION_CHANGE_RECORD",
    ]
    assert events[1].raw == unknown and events[1].api_key == 6


def test_undecodable_value_is_quarantined_and_the_batch_goes_on():
    events = batch_events(
        only_batch(encode_batch(0, [change(0), b"\x01\x05\x02\x00", change(2)], 1, 1)), "c", "s"
    )
    assert isinstance(events[1], Quarantined) and events[1].offset == 1
    assert "offset 1" in events[1].reason
    assert [e.offset for e in events if isinstance(e, MetadataEvent)] == [0, 2]


def test_record_with_headers_and_key_is_still_read():
    value = change(0)
    record = encode_record(0, value, key=b"k", headers=[(b"h", b"v")])
    records = struct.pack(">hiqqqhii", 0, 0, 1, 1, -1, -1, -1, 1) + record
    buf = struct.pack(">qiibI", 0, HEADER_SIZE - 12 + len(record), 1, 2, crc32c(records)) + records
    batch = only_batch(buf)
    (parsed,) = iter_records(batch)
    assert (parsed.key, parsed.headers) == (b"k", [(b"h", b"v")])
    (event,) = batch_events(batch, "c", "s")
    assert event.data["partitionId"] == 0


def test_multi_byte_varints_in_record_framing():
    values = [encode_value("TOPIC_RECORD", 0, {"name": "t" * 300, "topicId": TOPIC_ID})] * 3
    buf = encode_batch(0, values, 1000, 1, timestamp_deltas=[0, 100_000, 5])
    events = batch_events(only_batch(buf), "c", "s")
    assert [e.timestamp_ms for e in events] == [1000, 101_000, 1005]
    assert events[2].data["name"] == "t" * 300


def test_encode_batch_rejects_empty():
    with pytest.raises(ValueError):
        encode_batch(0, [], 0, 0)
