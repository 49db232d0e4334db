"""dump's compiled JSON writers give the bytes json.dumps gives of to_dump_json
(the path every event took before, and text input and control records still take)."""

from __future__ import annotations

import argparse
import json
import math

import pytest
from conftest import REAL_FIXTURE_NAMES, REAL_FIXTURES
from hypothesis import given, settings
from test_codec_records import ALL_METADATA_VERSIONS, any_record, sample_data

from crc32c import crc32c
from test_codec_fast_paths import _log as fast_paths_log
from test_noop_path import noop_log

from kraft_audit.cli import dump
from kraft_audit.cli.log_input import Tally, read_path
from kraft_audit.core.codec.batches import (
    HEADER_SIZE,
    VALUE_ERRORS,
    encode_batch,
    encode_record,
    iter_events,
)
from kraft_audit.core.codec.dumpjson import DATA_WRITERS, LINE_WRITERS, PAYLOAD_HEADS
from kraft_audit.core.codec.dumpread import CHUNK_RECORDS, DumpChunk, iter_dump
from kraft_audit.core.codec.dumplog import to_dump_json
from kraft_audit.core.codec.logdir import LogDirWriter, list_segments, list_snapshots
from kraft_audit.core.codec.records import PREFIX_DECODERS, decode_value, encode_value
from kraft_audit.core.codec.schemas import METADATA_BY_TYPE, default_data, fields_for
from kraft_audit.core.events import KIND_RECORD, MetadataEvent, Quarantined


NOOP = encode_value("NO_OP_RECORD", 0, {})


def reference_lines(path, start="earliest") -> list[str]:
    """What dump printed before the compiled writers: json.dumps of every event's dict."""
    return [
        json.dumps(dump.event_json(e), separators=(",", ":")) + "\n"
        for e in read_path(path, None, start)
        if isinstance(e, MetadataEvent)
    ]


def dumped(capsys, *argv) -> list[str]:
    parser = argparse.ArgumentParser()
    dump.add_arguments(parser)
    assert dump.run(parser.parse_args([str(a) for a in argv])) == 0
    return capsys.readouterr().out.splitlines(keepends=True)


def reference_data(type_name: str, version: int, data: dict) -> str:
    event = MetadataEvent("c", "s", 0, 0, 0, 0, 0, KIND_RECORD, type_name, version, data)
    return json.dumps(to_dump_json(event)["data"], separators=(",", ":"))


def decoded(type_name: str, version: int, data: dict) -> dict:
    return decode_value(encode_value(type_name, version, data))[3]


@pytest.mark.parametrize("name", REAL_FIXTURE_NAMES)
def test_dump_of_real_logs_is_byte_identical_to_json_dumps(capsys, name):
    fixture = REAL_FIXTURES / name
    for start in ("earliest", "snapshot"):
        lines = dumped(capsys, fixture, "--start", start)
        assert lines == reference_lines(fixture, start)
        assert len(lines) > 10


def test_dump_of_every_record_type_with_quarantine_between_is_byte_identical(capsys, tmp_path):
    with LogDirWriter(tmp_path, "c") as writer:
        for type_name, version in ALL_METADATA_VERSIONS:
            writer.append_values([encode_value(type_name, version, sample_data(
                METADATA_BY_TYPE[type_name].fields, version, seed=version))], 1000)
        writer.append_values([b"\x01\x7f\x00junk"], 2000)  # unknown apiKey: UNKNOWN_RECORD
        writer.append_values([b"\x01\x03\x00\xff"], 3000)  # a body that does not decode
    lines = dumped(capsys, tmp_path)
    assert lines == reference_lines(tmp_path)
    assert len(lines) == len(ALL_METADATA_VERSIONS) + 1
    assert any(isinstance(e, Quarantined) for e in read_path(tmp_path, None, "earliest"))


@pytest.mark.parametrize("type_name,version", ALL_METADATA_VERSIONS)
def test_every_type_and_version_every_field_set_and_at_defaults(type_name, version):
    schema = METADATA_BY_TYPE[type_name]
    for data in (sample_data(schema.fields, version), default_data(schema, version)):
        data = decoded(type_name, version, data)
        assert DATA_WRITERS[(type_name, version)](data) == reference_data(type_name, version, data)
    assert PAYLOAD_HEADS[(type_name, version)] == f'"type":"{type_name}","version":{version},"data":'


def test_unknown_tagged_fields_non_ascii_and_odd_floats():
    # an unknown tagged field (tag 99) appended to a NoOpRecord body
    data = decode_value(encode_value("NO_OP_RECORD", 0, {})[:-1] + b"\x01\x63\x02\xab\xcd")[3]
    assert DATA_WRITERS[("NO_OP_RECORD", 0)](data) == reference_data("NO_OP_RECORD", 0, data)
    data = decoded("TOPIC_RECORD", 0, {"name": "tøpic-\u2603\n\"", "topicId": "AAAAAAAAAAAAAAAAAAAAAA"})
    assert DATA_WRITERS[("TOPIC_RECORD", 0)](data) == reference_data("TOPIC_RECORD", 0, data)
    float_types = [(t, v) for t, v in ALL_METADATA_VERSIONS
                   if any(f.type == "float64" for f in METADATA_BY_TYPE[t].fields)]
    assert float_types
    for type_name, version in float_types:
        base = sample_data(METADATA_BY_TYPE[type_name].fields, version)
        for value in (math.nan, math.inf, -math.inf, 1e300, -0.0, 0.1):
            data = decoded(type_name, version, {**base, "value": value})
            assert DATA_WRITERS[(type_name, version)](data) == reference_data(type_name, version, data)


@settings(max_examples=300, deadline=None)
@given(any_record())
def test_property_writer_gives_json_dumps_bytes(record):
    type_name, version, data = record
    data = decoded(type_name, version, data)
    assert DATA_WRITERS[(type_name, version)](data) == reference_data(type_name, version, data)


# ---------------------------------------------------------------- from the bytes
# dump reads binary input with iter_dump: DumpChunks of lines written from the value
# bytes by LINE_WRITERS. Held to what it replaces: the writers of the decoded data, the
# decoder's errors, iter_events's events, and dump's stdout, stderr and counts before.

def line_of(value: bytes, tail: bytes = b""):
    """LINE_WRITERS's outcome for a value (in a buffer going on with tail), and the
    decoder's made into the same form: text or the error raised, and where reading stopped."""
    buf, end = value + tail, len(value)
    outcome = []
    for read in (lambda: LINE_WRITERS[value[:3]](buf, 3, end), lambda: _decoded_line(buf, end)):
        try:
            outcome.append(read())
        except VALUE_ERRORS as exc:
            outcome.append((type(exc), str(exc)))
    return outcome


def _decoded_line(buf: bytes, end: int):
    type_name, decode_body, _api_key, version = PREFIX_DECODERS[buf[:3]]
    data, stop = decode_body(buf, 3, end)
    return PAYLOAD_HEADS[(type_name, version)] + DATA_WRITERS[(type_name, version)](data), stop


@pytest.mark.parametrize("type_name,version", ALL_METADATA_VERSIONS)
def test_line_writers_give_the_writers_text_and_the_decoders_errors(type_name, version):
    schema = METADATA_BY_TYPE[type_name]
    values = [encode_value(type_name, version, data)
              for data in (sample_data(schema.fields, version), default_data(schema, version))]
    values.append(values[1][:-1] + b"\x01\x63\x02\xab\xcd")  # + an unknown tagged field
    for value in values:
        mine, reference = line_of(value)
        assert mine == reference and isinstance(mine[0], str) and mine[1] == len(value)
        # damaged: every byte flipped, cut anywhere, bytes after it read as the batch's next
        for i in range(3, len(value)):
            for damaged in (value[:i] + bytes([value[i] ^ 0xA5]) + value[i + 1:], value[:i]):
                mine, reference = line_of(damaged, b"\x07" * 40)
                assert mine == reference, (damaged.hex(), mine, reference)


@settings(max_examples=300, deadline=None)
@given(any_record())
def test_property_line_writers_give_the_writers_text(record):
    value = encode_value(*record)
    mine, reference = line_of(value)
    assert mine == reference and mine[1] == len(value)


def test_line_writers_of_non_ascii_odd_floats_and_nulls():
    values = [encode_value("TOPIC_RECORD", 0, {"name": "tøpic-\u2603\n\"", "topicId": "A" * 22})]
    for type_name, version in ALL_METADATA_VERSIONS:
        schema = METADATA_BY_TYPE[type_name]
        if any(f.type == "float64" for f in schema.fields):
            base = sample_data(schema.fields, version)
            values += [encode_value(type_name, version, {**base, "value": x})
                       for x in (math.nan, math.inf, -math.inf, 1e300, -0.0, 0.1)]
        nullable = {f.name: None for f in fields_for(schema.fields, version) if f.nullable_in(version)}
        if nullable:
            values.append(encode_value(type_name, version, {**sample_data(schema.fields, version),
                                                            **nullable}))
    for value in values:
        mine, reference = line_of(value)
        assert mine == reference and isinstance(mine[0], str)


def expanded(items) -> list:
    return [e for item in items for e in (item.events() if type(item) is DumpChunk else (item,))]


def held_to_iter_events(buf: bytes) -> list:
    """iter_dump's items, checked: expanded they are iter_events's, a chunk's text is the
    lines json.dumps gives of its events, its offsets consecutive from its first."""
    items = list(iter_dump(buf, "c", "x.log"))
    assert expanded(items) == list(iter_events(buf, "c", "x.log"))
    for chunk in (i for i in items if type(i) is DumpChunk):
        events = list(chunk.events())
        assert chunk.text == "".join(json.dumps(dump.event_json(e), separators=(",", ":")) + "\n"
                                     for e in events)
        assert [e.offset for e in events] == list(range(chunk.first_offset, chunk.last_offset + 1))
        last_batch = sum(e.batch_base_offset == events[-1].batch_base_offset for e in events)
        assert 0 <= chunk.count - last_batch < CHUNK_RECORDS  # it ends with the batch reaching it
    return items


@pytest.mark.parametrize("name", REAL_FIXTURE_NAMES)
def test_iter_dump_of_real_segments_and_snapshots(name):
    directory = REAL_FIXTURES / name / "__cluster_metadata-0"
    files = [p for _, p in list_segments(directory)] + [p for *_, p in list_snapshots(directory)]
    chunked = 0
    for path in files:
        items = held_to_iter_events(path.read_bytes())
        chunked += sum(i.count for i in items if type(i) is DumpChunk)
    assert chunked > 1000  # most records come written from their bytes


def odd_log(noops: int = 0) -> bytes:
    """Batches every way a chunk must end or not take, after those test_codec_fast_paths
    sends the general way: a key, a header, offset deltas out of order, a long timestamp
    delta, a gap, an unknown record, a value the decoder rejects; then `noops` NoOp batches."""
    change = encode_value("PARTITION_CHANGE_RECORD", 0, {"partitionId": 1, "topicId": "A" * 22,
                                                         "isr": [1, 2], "leader": 2})
    return fast_paths_log(None) + b"".join([
        encode_batch(11, [change] * 70, 1010, 1),  # two-byte offset deltas
        _raw_batch(81, 2, b"".join(encode_record(i, change) for i in range(3))),
        _raw_batch(84, 1, encode_record(1, change) + encode_record(0, change)),  # out of order
        _raw_batch(86, 0, encode_record(0, change, headers=[(b"h", b"v")])),
        encode_batch(87, [change], 1011, 1, keys=[b"k"]),
        encode_batch(88, [change], 1012, 1, timestamp_deltas=[1 << 20]),
        encode_batch(89, [change, NOOP], 1013, 1),
        encode_batch(100, [change] * 3, 1014, 1),  # a gap
        encode_batch(103, [change, b"\x01\x7f\x00junk"], 1015, 1),  # an unknown record
        encode_batch(105, [change, change[:-3]], 1016, 1),  # values the decoder rejects
        encode_batch(107, [change + b"\x00", change], 1017, 1),
        _raw_batch(109, 0, encode_record(0, change)[:-1] + b"\x02"),  # a header count, no header
        _raw_batch(110, 0, encode_record(0, change) + encode_record(1, change)),  # one too many
        *(encode_batch(111 + i, [NOOP], 1018 + i, 1) for i in range(noops)),
    ])


def _raw_batch(base_offset: int, last_delta: int, records: bytes) -> bytes:
    """A batch of last_delta + 1 records given as bytes (encode_batch numbers its records)."""
    header = bytearray(encode_batch(base_offset, [NOOP], 1000, 1)[:HEADER_SIZE])
    header[8:12] = (HEADER_SIZE - 12 + len(records)).to_bytes(4, "big")
    header[23:27] = last_delta.to_bytes(4, "big")
    header[57:61] = (last_delta + 1).to_bytes(4, "big")
    body = bytes(header[21:]) + records
    return bytes(header[:17]) + crc32c(body).to_bytes(4, "big") + body


def test_iter_dump_of_odd_damaged_and_torn_logs_is_iter_events():
    items = held_to_iter_events(odd_log(CHUNK_RECORDS + 5))
    assert [i.count for i in items if type(i) is DumpChunk][-2:] == [CHUNK_RECORDS, 5]
    assert sum(type(i) is DumpChunk for i in items) >= 6
    assert sum(isinstance(i, Quarantined) for i in items) >= 2
    log = odd_log(3)
    for cut in range(0, len(log), 11):  # torn anywhere
        held_to_iter_events(log[:cut])
    for flip in range(0, len(log), 7):  # one byte damaged anywhere
        damaged = bytearray(log)
        damaged[flip] ^= 0x5A
        held_to_iter_events(bytes(damaged))
    held_to_iter_events(log + bytes(300))  # zero padding


def dump_streams(capsys, *argv) -> tuple[str, str]:
    parser = argparse.ArgumentParser()
    dump.add_arguments(parser)
    assert dump.run(parser.parse_args([str(a) for a in argv])) == 0
    return capsys.readouterr()


def reference_streams(path, start="earliest", low=-1 << 63, high=1 << 63) -> tuple[str, str]:
    """dump's stdout and stderr before iter_dump: every event read without chunks."""
    out, err = [], []
    for e in read_path(path, None, start):
        if isinstance(e, Quarantined):
            offset = f" offset {e.offset}" if e.offset >= 0 else ""
            err.append(f"quarantined: {e.source} position {e.position}{offset}: {e.reason}\n")
        elif low <= e.offset <= high:
            out.append(json.dumps(dump.event_json(e), separators=(",", ":")) + "\n")
    return "".join(out), "".join(err)


def test_dump_of_an_odd_log_dir_same_stdout_stderr_and_counts(capsys, tmp_path, kraft_log):
    log_dir = noop_log(kraft_log, tmp_path)  # runs broken every way; a segment repeating another
    segment = tmp_path / "__cluster_metadata-0" / "00000000000000000000.log"
    odd = tmp_path / "odd.log"
    odd.write_bytes(odd_log(CHUNK_RECORDS + 5))
    for path in (log_dir, segment, odd):
        stdout, stderr = dump_streams(capsys, path)
        assert (stdout, stderr) == reference_streams(path)
        assert stdout.count("\n") > 30 and "quarantined" in stderr
        chunks, plain = Tally(path), Tally(path)
        items = list(chunks.count(read_path(path, None, "earliest", dump_chunks=True)))
        list(plain.count(read_path(path, None, "earliest")))
        assert vars(chunks) == vars(plain) and any(type(i) is DumpChunk for i in items)
    # --offsets cutting chunks anywhere: a chunk partly in them comes as its events
    last = json.loads(stdout.splitlines()[-1])["offset"]  # of the odd log
    for low, high in [(3, 9), (0, 600), (20, 21), (40, last - 3), (last - 500, last), (1, 1)]:
        stdout, stderr = dump_streams(capsys, path, "--offsets", f"{low}:{high}")
        assert (stdout, stderr) == reference_streams(path, low=low, high=high)
