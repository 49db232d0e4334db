"""The one-loop reader (`iter_events`, with its NoOp batch recognised from its bytes)
gives exactly the events and quarantine rows of `iter_batches` + `batch_events`."""

from __future__ import annotations

import pytest
from conftest import REAL_FIXTURE_NAMES, REAL_FIXTURES

from kraft_audit.core.codec.batches import (
    COMPRESSION_GZIP,
    COMPRESSION_ZSTD,
    NOOP_RECORDS,
    Batch,
    batch_events,
    encode_batch,
    encode_record,
    iter_batches,
    iter_events,
    problem_to_quarantined,
)
from kraft_audit.core.codec.logdir import LogDirWriter, list_segments, list_snapshots
from kraft_audit.core.codec.records import encode_control, encode_value

NOOP = encode_value("NO_OP_RECORD", 0, {})


def reference(buf: bytes, source: str) -> list:
    out = []
    for item in iter_batches(buf):
        if isinstance(item, Batch):
            out += batch_events(item, "c", source)
        else:
            out.append(problem_to_quarantined(item, "c", source))
    return out


@pytest.mark.parametrize("name", REAL_FIXTURE_NAMES)
def test_real_segments_and_snapshots(name):
    directory = REAL_FIXTURES / name / "__cluster_metadata-0"
    files = [p for _, p in list_segments(directory)] + [p for *_, p in list_snapshots(directory)]
    noops = 0
    for path in files:
        buf = path.read_bytes()
        events = list(iter_events(buf, "c", path.name))
        assert events == reference(buf, path.name)
        noops += sum(getattr(e, "type", "") == "NO_OP_RECORD" for e in events)
    assert noops > 100  # real logs are mostly NoOps: the fast path is what they take


def test_the_noop_template_is_what_the_writer_and_kafka_write():
    assert encode_record(0, NOOP) == NOOP_RECORDS


def _log(tmp_path) -> bytes:
    batches = [
        encode_batch(0, [NOOP], 1000, 1),
        encode_batch(1, [NOOP, NOOP], 1001, 1),  # two NoOps: the general path
        encode_batch(3, [NOOP], 1002, 1, timestamp_deltas=[5]),  # a NoOp with a delta
        encode_batch(4, [NOOP], 1003, 1, compression=COMPRESSION_GZIP),
        encode_batch(5, [NOOP, encode_value("FEATURE_LEVEL_RECORD", 0, {"name": "x", "featureLevel": 1})],
                     1004, 1, compression=COMPRESSION_ZSTD),
        encode_batch(7, [encode_control("LEADER_CHANGE", {"leaderId": 1, "voters": []})[1]], 1005, 1,
                     control=True, keys=[encode_control("LEADER_CHANGE", {})[0]]),
        encode_batch(8, [b"\x01\x14\x00\x01"], 1006, 1),  # a NoOp with a tagged-field count: bad
        encode_batch(9, [NOOP], 1007, 1, keys=[b"k"]),  # a key: the general path
        encode_batch(10, [NOOP], 1008, 1),
    ]
    return b"".join(batches)


def test_odd_batches_damage_and_torn_tails_match_the_general_reader(tmp_path):
    log = _log(tmp_path)
    assert list(iter_events(log, "c", "x.log")) == reference(log, "x.log")
    events = reference(log, "x.log")
    assert len(events) == 11 and sum(not hasattr(e, "type") for e in events) == 1  # one quarantined
    for cut in range(0, len(log), 7):  # torn at every 7th byte
        assert list(iter_events(log[:cut], "c", "x.log")) == reference(log[:cut], "x.log")
    for flip in range(0, len(log), 5):  # one byte damaged anywhere
        damaged = bytearray(log)
        damaged[flip] ^= 0x5A
        assert list(iter_events(bytes(damaged), "c", "x.log")) == reference(bytes(damaged), "x.log")
    padded = log + bytes(300)
    assert list(iter_events(padded, "c", "x.log")) == reference(padded, "x.log")


def test_log_dir_reader_uses_it(tmp_path):
    with LogDirWriter(tmp_path, "c") as writer:
        for i in range(5):
            writer.append([("NO_OP_RECORD", 0, {})], 1000 + i)
    from kraft_audit.core.codec.logdir import read_log_dir

    events = list(read_log_dir(tmp_path))
    assert [(e.offset, e.type, e.api_key, e.timestamp_ms) for e in events] == [
        (i, "NO_OP_RECORD", 20, 1000 + i) for i in range(5)]
