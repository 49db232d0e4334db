"""kafka-dump-log output: text and payload JSON read into the same events as bytes."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from kraft_audit.core.codec.batches import Batch, batch_events, encode_batch, iter_batches
from kraft_audit.core.codec.dumplog import format_dump_log, parse_dump_log, to_dump_json
from kraft_audit.core.codec.records import encode_value
from kraft_audit.core.events import UNKNOWN_RECORD, MetadataEvent, Quarantined

TOPIC = "T6iQO94WQSKp6lhnnRhdRA"
BATCH = (
    "baseOffset: {b} lastOffset: {l} count: {c} baseSequence: -1 lastSequence: -1 producerId: -1 "
    "producerEpoch: -1 partitionLeaderEpoch: 1 isTransactional: false isControl: {ctl} "
    "deleteHorizonMs: OptionalLong.empty position: {p} CreateTime: {t} size: 120 magic: 2 "
    "compresscodec: none "
    "crc: 3151234371 isvalid: true"
)
RECORD = (
    "| offset: {o} CreateTime: {t} keySize: -1 valueSize: 40 sequence: -1 headerKeys: [] "
    "payload: {j}"
)

KAFKA_TEXT = [
    "Dumping /var/lib/kafka/__cluster_metadata-0/00000000000000000000.log",
    "Log starting offset: 0",
    BATCH.format(b=0, l=0, c=1, ctl="true", p=0, t=1000),
    "| offset: 0 CreateTime: 1000 keySize: 4 valueSize: 19 sequence: -1 headerKeys: [] "
    "controlType: LEADER_CHANGE(2)",
    BATCH.format(b=1, l=2, c=2, ctl="false", p=91, t=2000),
    RECORD.format(
        o=1,
        t=2000,
        j=json.dumps(
            {
                "type": "PARTITION_RECORD",
                "version": 2,
                "data": {
                    "partitionId": 0,
                    "topicId": TOPIC,
                    "replicas": [1, 2],
                    "isr": [1, 2],
                    "removingReplicas": [],
                    "addingReplicas": [],
                    "leader": 1,
                    "leaderEpoch": 0,
                    "partitionEpoch": 0,
                    "directories": [TOPIC, TOPIC],
                },
            }
        ),
    ),
    RECORD.format(
        o=2,
        t=2000,
        j='{"type":"PARTITION_CHANGE_RECORD","version":2,"data":{"partitionId":0,'
        f'"topicId":"{TOPIC}","isr":[1],"eligibleLeaderReplicas":[2]}}}}',
    ),
    BATCH.format(b=3, l=3, c=1, ctl="false", p=300, t=3000),
    "| offset: 3 CreateTime: 3000 keySize: -1 valueSize: 9 sequence: -1 headerKeys: [] payload: "
    "Error at 3, skipping. Unknown metadata id 99",
    "| offset: 4 CreateTime: 3000 keySize: 4 valueSize: 11 sequence: -1 headerKeys: [] "
    'LeaderChange: {"version":0,"leaderId":1,"voters":[{"voterId":1}],'
    '"grantingVoters":[{"voterId":1}]}',
    "this line is garbage",
]


def test_kafka_text_gives_events_with_batches_defaults_and_quarantine():
    items = list(parse_dump_log(KAFKA_TEXT, "c", "dump.txt"))
    events = [e for e in items if isinstance(e, MetadataEvent)]
    bad = [q for q in items if isinstance(q, Quarantined)]
    assert [
        (e.offset, e.type, e.batch_base_offset, e.batch_last_offset, e.timestamp_ms) for e in events
    ] == [
        (0, "LEADER_CHANGE", 0, 0, 1000),
        (1, "PARTITION_RECORD", 1, 2, 2000),
        (2, "PARTITION_CHANGE_RECORD", 1, 2, 2000),
        (4, "LEADER_CHANGE", 4, 4, 3000),
    ]
    change = events[2].data
    assert (
        change["leader"] == -2
        and change["leaderRecoveryState"] == -1
        and change["replicas"] is None
    )
    assert change["eligibleLeaderReplicas"] == [2] and change["lastKnownElr"] is None
    assert (
        events[1].data["eligibleLeaderReplicas"] is None
        and events[1].data["leaderRecoveryState"] == 0
    )
    assert events[3].data["leaderId"] == 1 and events[0].data == {}
    assert [(q.position, q.offset) for q in bad] == [(9, 3), (11, -1)]
    assert "Unknown metadata id 99" in bad[0].reason and "line 11" in bad[1].reason


def test_same_record_from_bytes_and_from_text_gives_equal_data():
    values = [
        encode_value(
            "PARTITION_CHANGE_RECORD",
            2,
            {"partitionId": 0, "topicId": TOPIC, "isr": [1], "eligibleLeaderReplicas": [2]},
        )
    ]
    (batch,) = [b for b in iter_batches(encode_batch(2, values, 2000, 1)) if isinstance(b, Batch)]
    (from_bytes,) = batch_events(batch, "c", "s")
    from_text = [e for e in parse_dump_log(KAFKA_TEXT, "c", "t") if isinstance(e, MetadataEvent)][2]
    assert from_text.data == from_bytes.data and from_text.version == from_bytes.version


def test_bare_payload_lines_are_numbered_and_each_its_own_batch():
    lines = [
        '{"type":"NO_OP_RECORD","version":0,"data":{}}',
        '{"type":"FENCE_BROKER_RECORD","version":0,"data":{"id":1,"epoch":5}}',
        '{"type":"NO_OP_RECORD","version":0,"data":{},"offset":10,"batchBaseOffset":9,"batchLastOffset":10}',
        '{"type":"NO_OP_RECORD","version":0,"data":{}}',
        '{"type":"SOMETHING_NEW_RECORD","version":0,"data":{"x":1}}',
        '{"type":"PARTITION_RECORD"',
        "[1, 2]",
    ]
    items = list(parse_dump_log(lines, "c", "p.jsonl"))
    events = [e for e in items if isinstance(e, MetadataEvent)]
    assert [(e.offset, e.batch_base_offset, e.batch_last_offset) for e in events] == [
        (0, 0, 0),
        (1, 1, 1),
        (10, 9, 10),
        (11, 11, 11),
        (12, 12, 12),
    ]
    assert events[1].data == {"id": 1, "epoch": 5} and events[1].api_key == 7
    assert events[4].type == UNKNOWN_RECORD
    assert [q.position for q in items if isinstance(q, Quarantined)] == [6, 7]


def test_a_field_an_older_release_spelled_otherwise_is_read():
    """3.7's schemas spell PartitionChangeRecord's lastKnownElr lastKnownELR (the same tagged
    field), and its kafka-dump-log prints that spelling: the value is kept, not defaulted."""
    line = json.dumps({"type": "PARTITION_CHANGE_RECORD", "version": 2, "data": {
        "partitionId": 0, "topicId": TOPIC, "eligibleLeaderReplicas": [2], "lastKnownELR": [3]}})
    [event] = [e for e in parse_dump_log([line], "c", "p.jsonl") if isinstance(e, MetadataEvent)]
    assert event.data["lastKnownElr"] == [3] and "lastKnownELR" not in event.data


def test_to_dump_json_omits_tagged_defaults_like_kafka():
    event = [e for e in parse_dump_log(KAFKA_TEXT, "c", "t") if isinstance(e, MetadataEvent)][2]
    assert to_dump_json(event) == {
        "type": "PARTITION_CHANGE_RECORD",
        "version": 2,
        "data": {"partitionId": 0, "topicId": TOPIC, "isr": [1], "eligibleLeaderReplicas": [2]},
    }
    record = [e for e in parse_dump_log(KAFKA_TEXT, "c", "t") if isinstance(e, MetadataEvent)][1]
    assert "leaderRecoveryState" not in to_dump_json(record)["data"]  # tagged, at its default 0
    assert to_dump_json(record)["data"]["removingReplicas"] == []  # untagged fields always print


def test_format_dump_log_round_trips_through_the_parser():
    events = [e for e in parse_dump_log(KAFKA_TEXT, "c", "t") if isinstance(e, MetadataEvent)]
    again = [
        e
        for e in parse_dump_log(format_dump_log(events), "c", "t2")
        if isinstance(e, MetadataEvent)
    ]
    key = [
        (e.offset, e.batch_base_offset, e.batch_last_offset, e.timestamp_ms, e.type, e.data)
        for e in events
    ]
    assert [
        (e.offset, e.batch_base_offset, e.batch_last_offset, e.timestamp_ms, e.type, e.data)
        for e in again
    ] == key


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=80), st.sampled_from(KAFKA_TEXT)), max_size=12))
def test_property_any_lines_parse_without_raising(lines):
    for item in parse_dump_log(lines, "c", "s"):
        assert isinstance(item, (MetadataEvent, Quarantined))


def test_values_of_the_wrong_type_are_quarantined():
    lines = [
        '{"type":"FENCE_BROKER_RECORD","version":0,"data":{"id":"one","epoch":5}}',
        '{"type":"TOPIC_RECORD","version":0,"data":{"name":"t","topicId":"not-a-uuid"}}',
        '{"type":"PARTITION_CHANGE_RECORD","version":0,"data":{"partitionId":0,"isr":[1.5]}}',
    ]
    items = list(parse_dump_log(lines, "c", "s"))
    assert all(isinstance(q, Quarantined) for q in items)
    assert [q.position for q in items] == [1, 2, 3]
