"""Acceptance on metadata logs written by real Kafka clusters."""

from __future__ import annotations

import json
from collections import Counter

from conftest import REAL_FIXTURES

from kraft_audit.core.codec import wire
from kraft_audit.core.codec.batches import Batch, encode_batch, iter_batches, iter_records
from kraft_audit.core.codec.dumplog import format_dump_log, parse_dump_log, to_dump_json
from kraft_audit.core.codec.logdir import list_segments, list_snapshots, read_file_events, read_log_dir
from kraft_audit.core.codec.records import decode_control, decode_value, encode_control, encode_value
from kraft_audit.core.events import MetadataEvent, Quarantined


def _expected(fixture):
    return json.loads((fixture / "EXPECTED.json").read_text())


def test_counts_per_type_and_last_offset_equal_expected(real_fixture):
    expected = _expected(real_fixture)
    items = list(read_log_dir(real_fixture))
    events = [e for e in items if isinstance(e, MetadataEvent)]
    assert not [q for q in items if isinstance(q, Quarantined)]
    assert dict(Counter(e.type for e in events)) == expected["record_types"]
    assert len(events) == expected["records"]
    assert events[-1].offset == expected["last_offset"]
    assert [e.offset for e in events] == list(range(len(events)))  # offset order, no gaps


def test_cluster_id_comes_from_meta_properties(real_fixture):
    props = (real_fixture / "meta.properties").read_text()
    cluster_id = next(
        line.split("=", 1)[1] for line in props.splitlines() if line.startswith("cluster.id=")
    )
    first = next(iter(read_log_dir(real_fixture / "__cluster_metadata-0")))
    assert first.cluster_id == cluster_id


def test_events_carry_batch_limits_and_times(real_fixture):
    events = [e for e in read_log_dir(real_fixture) if isinstance(e, MetadataEvent)]
    for event in events:
        assert event.batch_base_offset <= event.offset <= event.batch_last_offset
        assert event.timestamp_ms > 1_600_000_000_000
    bootstrap = [e for e in events if e.type == "BEGIN_TRANSACTION_RECORD"][0]
    assert bootstrap.data == {"name": "Bootstrap records"}
    assert any(e.kind == "control" and e.type == "LEADER_CHANGE" for e in events)
    assert all(e.data["leader"] >= -2 for e in events if e.type == "PARTITION_CHANGE_RECORD")


def _files(fixture):
    paths = [p for _, p in list_segments(fixture)] + [p for _, _, p in list_snapshots(fixture)]
    return paths + [fixture / "bootstrap.checkpoint"]


def test_reencoding_every_batch_reproduces_its_bytes(real_fixture):
    for path in _files(real_fixture):
        buf = path.read_bytes()
        batches = list(iter_batches(buf))
        assert all(isinstance(b, Batch) for b in batches)
        assert sum(b.size for b in batches) == len(buf)
        for batch in batches:
            records = list(iter_records(batch))
            keys, values = [], []
            for record in records:
                if batch.is_control:
                    control_type = wire.INT16.unpack_from(record.key, 2)[0]
                    type_name, _version, data = decode_control(control_type, record.value)
                    key, value = encode_control(type_name, data)
                    assert key == record.key
                else:
                    _, version, type_name, data = decode_value(record.value)
                    key, value = None, encode_value(type_name, version, data)
                assert value == record.value, (path.name, record.offset)
                keys.append(key)
                values.append(value)
            rebuilt = encode_batch(
                batch.base_offset,
                values,
                batch.base_timestamp,
                batch.leader_epoch,
                control=batch.is_control,
                keys=keys,
                compression=batch.compression,
                max_timestamp_ms=batch.max_timestamp,
                timestamp_deltas=[r.timestamp_ms - batch.base_timestamp for r in records],
                producer_id=batch.producer_id,
                producer_epoch=batch.producer_epoch,
                base_sequence=batch.base_sequence,
                transactional=batch.is_transactional,
            )
            assert rebuilt == buf[batch.position : batch.position + batch.size], (
                path.name,
                batch.position,
            )


def test_snapshot_holds_header_records_footer():
    fixture = REAL_FIXTURES / "renoagilsaputra__kafka"
    end_offset, epoch, path = list_snapshots(fixture)[-1]
    assert (end_offset, epoch) == (7111, 1)
    events = [e for e in read_file_events(path, "c") if isinstance(e, MetadataEvent)]
    assert events[0].type == "SNAPSHOT_HEADER" and events[-1].type == "SNAPSHOT_FOOTER"
    assert Counter(e.type for e in events)["PARTITION_RECORD"] == 51
    from_snapshot = list(read_log_dir(fixture, start="snapshot"))
    offsets = [e.offset for e in from_snapshot if e.source.endswith(".log")]
    assert offsets[0] == end_offset and offsets[-1] == _expected(fixture)["last_offset"]


def test_dump_text_and_payload_json_round_trip(real_fixture):
    events = [e for e in read_log_dir(real_fixture) if isinstance(e, MetadataEvent)]
    as_text = list(parse_dump_log(format_dump_log(events), "c", "dump.txt"))
    payload_lines = [json.dumps(to_dump_json(e)) for e in events]
    as_json = list(parse_dump_log(payload_lines, "c", "payload.jsonl"))

    def same(event):
        return (
            event.offset,
            event.batch_base_offset,
            event.batch_last_offset,
            event.timestamp_ms,
            event.kind,
            event.type,
            event.version,
            event.data,
        )

    assert [same(e) for e in as_text] == [same(e) for e in events]
    assert [(e.type, e.version, e.data) for e in as_json] == [
        (e.type, e.version, e.data) for e in events
    ]
