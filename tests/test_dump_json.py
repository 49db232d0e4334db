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

from kraft_audit.cli import dump
from kraft_audit.cli.log_input import read_path
from kraft_audit.core.codec.dumpjson import DATA_WRITERS, PAYLOAD_HEADS
from kraft_audit.core.codec.dumplog import to_dump_json
from kraft_audit.core.codec.logdir import LogDirWriter
from kraft_audit.core.codec.records import decode_value, encode_value
from kraft_audit.core.codec.schemas import METADATA_BY_TYPE, default_data
from kraft_audit.core.events import KIND_RECORD, MetadataEvent, Quarantined


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
