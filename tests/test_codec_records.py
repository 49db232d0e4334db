"""Record values: every type and version round-trips; Kafka's framing rules hold."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraft_audit.core.codec import wire
from kraft_audit.core.codec.records import (
    UNKNOWN_TAGGED_FIELDS,
    RecordDecodeError,
    decode_control,
    decode_value,
    encode_control,
    encode_value,
)
from kraft_audit.core.codec.schemas import (
    CONTROL_RECORDS,
    METADATA_BY_TYPE,
    METADATA_RECORDS,
    Field,
    default_data,
    fields_for,
)
from kraft_audit.core.events import UNKNOWN_RECORD

TOPIC_ID = "T6iQO94WQSKp6lhnnRhdRA"
ALL_METADATA_VERSIONS = [(s.type_name, v) for s in METADATA_RECORDS for v in s.versions]
ALL_CONTROL_VERSIONS = [(s.type_name, v) for s in CONTROL_RECORDS for v in s.versions]


def sample_value(fl: Field, version: int, seed: int):
    """A value for the field that differs from its default."""
    t = fl.type
    if t == "bool":
        return not fl.default_value(version)
    if t in ("int8", "int16", "uint16", "int32", "int64"):
        return {"uint16": 9092}.get(t, seed + 3)
    if t == "float64":
        return 1.5 + seed
    if t == "string":
        return f"s{seed}-é"
    if t == "bytes":
        return base64.b64encode(bytes([seed, 1, 2])).decode()
    if t == "uuid":
        return wire.uuid_to_str(bytes(range(seed, seed + 16)))
    if t == "[]int32":
        return [seed, seed + 1, 2**31 - 1]
    if t == "[]uuid":
        return [TOPIC_ID, wire.uuid_to_str(bytes(16 * [seed]))]
    if t == "[]string":
        return ["a", f"b{seed}"]
    if t == "struct":
        return sample_data(fl.fields, version, seed + 1)
    if t == "[]struct":
        return [
            sample_data(fl.fields, version, seed + 1),
            sample_data(fl.fields, version, seed + 2),
        ]
    raise AssertionError(t)


def sample_data(fields: tuple[Field, ...], version: int, seed: int = 0) -> dict:
    return {
        fl.name: sample_value(fl, version, seed + i)
        for i, fl in enumerate(fields_for(fields, version))
    }


@pytest.mark.parametrize("type_name,version", ALL_METADATA_VERSIONS)
def test_every_metadata_record_round_trips_with_every_field_set(type_name, version):
    schema = METADATA_BY_TYPE[type_name]
    data = sample_data(schema.fields, version)
    api_key, decoded_version, decoded_type, decoded = decode_value(
        encode_value(type_name, version, data)
    )
    assert (api_key, decoded_version, decoded_type) == (schema.api_key, version, type_name)
    assert decoded == data
    assert list(decoded) == [fl.name for fl in fields_for(schema.fields, version)]  # schema order


@pytest.mark.parametrize("type_name,version", ALL_METADATA_VERSIONS)
def test_every_metadata_record_round_trips_at_defaults(type_name, version):
    schema = METADATA_BY_TYPE[type_name]
    data = default_data(schema, version)
    assert decode_value(encode_value(type_name, version, data))[3] == data


@pytest.mark.parametrize("type_name,version", ALL_CONTROL_VERSIONS)
def test_every_control_record_round_trips(type_name, version):
    schema = next(s for s in CONTROL_RECORDS if s.type_name == type_name)
    data = {**sample_data(schema.fields, version), "version": version}
    key, value = encode_control(type_name, data)
    assert wire.INT16.unpack_from(key, 2)[0] == schema.control_type
    assert decode_control(schema.control_type, value) == (type_name, version, data)


def test_partition_change_v2_with_elr_lastknownelr_recovery_state_and_directories():
    data = {
        "partitionId": 7,
        "topicId": TOPIC_ID,
        "isr": [1],
        "leader": 1,
        "leaderRecoveryState": 1,
        "directories": [TOPIC_ID],
        "eligibleLeaderReplicas": [2, 3],
        "lastKnownElr": [4],
    }
    value = encode_value("PARTITION_CHANGE_RECORD", 2, data)
    # frame 1, apiKey 5, version 2, int32, uuid, then 6 tagged fields in ascending tag order
    assert value[:3] == b"\x01\x05\x02"
    tags_at = 3 + 4 + 16
    assert value[tags_at] == 6
    _, _, _, decoded = decode_value(value)
    assert decoded == {**data, "replicas": None, "removingReplicas": None, "addingReplicas": None}


def test_partition_record_v2_elr_fields_and_defaults():
    base = {
        "partitionId": 0,
        "topicId": TOPIC_ID,
        "replicas": [1, 2, 3],
        "isr": [1],
        "removingReplicas": [],
        "addingReplicas": [],
        "leader": 1,
        "leaderEpoch": 4,
        "partitionEpoch": 9,
        "directories": [TOPIC_ID] * 3,
    }
    with_elr = {
        **base,
        "leaderRecoveryState": 1,
        "eligibleLeaderReplicas": [2, 3],
        "lastKnownElr": [],
    }
    assert decode_value(encode_value("PARTITION_RECORD", 2, with_elr))[3] == with_elr
    absent = decode_value(encode_value("PARTITION_RECORD", 2, base))[3]
    assert absent["eligibleLeaderReplicas"] is None and absent["lastKnownElr"] is None
    assert absent["leaderRecoveryState"] == 0


def test_tagged_fields_at_default_are_omitted_and_empty_nullable_list_is_written():
    minimal = encode_value("PARTITION_CHANGE_RECORD", 0, {"partitionId": 1, "topicId": TOPIC_ID})
    assert minimal[-1] == 0  # no tagged fields
    empty_isr = encode_value(
        "PARTITION_CHANGE_RECORD", 0, {"partitionId": 1, "topicId": TOPIC_ID, "isr": []}
    )
    assert empty_isr[-4:] == b"\x01\x00\x01\x01"  # one field: tag 0, size 1, compact length 0+1
    assert decode_value(empty_isr)[3]["isr"] == []


def test_partition_change_defaults_match_kafka():
    data = decode_value(
        encode_value("PARTITION_CHANGE_RECORD", 1, {"partitionId": 1, "topicId": TOPIC_ID})
    )[3]
    assert data["leader"] == -2 and data["leaderRecoveryState"] == -1 and data["isr"] is None
    assert data["directories"] is None


def test_unknown_tagged_field_is_kept_and_written_back():
    value = bytearray(encode_value("NO_OP_RECORD", 0, {}))
    value[-1:] = b"\x01\x63\x02\xab\xcd"  # one tagged field: tag 99, 2 bytes
    _, _, type_name, data = decode_value(bytes(value))
    assert type_name == "NO_OP_RECORD"
    assert data == {UNKNOWN_TAGGED_FIELDS: [{"tag": 99, "hex": "abcd"}]}
    assert encode_value("NO_OP_RECORD", 0, data) == bytes(value)


def test_unknown_api_key_or_version_is_unknown_record_not_error():
    assert decode_value(b"\x01\x06\x00\x00")[2] == UNKNOWN_RECORD  # apiKey 6 is unused
    assert decode_value(b"\x01\x05\x09\x00")[2] == UNKNOWN_RECORD  # PartitionChangeRecord v9
    assert decode_value(b"\x01\xc8\x01\x00\x00")[:3] == (200, 0, UNKNOWN_RECORD)


@pytest.mark.parametrize(
    "value,complaint",
    [
        (b"\x00\x14\x00\x00", "frame version 0"),
        (b"\x02\x14\x00\x00", "frame version 2"),
        (b"\x01\x80\x80\x02\x00\x00", "above 32767"),  # apiKey 32768
        (b"\x01\x14\x00\x00\x00", "left over"),  # NoOpRecord plus a trailing byte
        (b"\x01\x14\x00", "malformed"),  # missing tagged-field count
        (
            b"\x01\x02\x00\x05ab",
            "field name claims length 4",
        ),  # TopicRecord name shorter than declared
        (
            b"\x01\x03\x00\x00\x00\x00\x01" + bytes(16) + b"\xff\xff\xff\x0f",
            "more than the record holds",
        ),
    ],
)
def test_bad_values_are_rejected_with_a_reason(value, complaint):
    with pytest.raises(RecordDecodeError, match=complaint):
        decode_value(value)


def test_null_in_non_nullable_field_is_rejected():
    value = b"\x01\x02\x00\x00" + bytes(16) + b"\x00"  # TopicRecord with a null name
    with pytest.raises(RecordDecodeError, match="non-nullable field name"):
        decode_value(value)


def test_encode_rejects_unknown_type_and_version():
    with pytest.raises(ValueError):
        encode_value("NOT_A_RECORD", 0, {})
    with pytest.raises(ValueError):
        encode_value("PARTITION_RECORD", 3, {})


def test_type_names_are_kafka_dump_log_names():
    names = {s.api_key: s.type_name for s in METADATA_RECORDS}
    assert names[21] == "ZK_MIGRATION_STATE_RECORD"
    assert names[17] == "BROKER_REGISTRATION_CHANGE_RECORD"
    assert names[20] == "NO_OP_RECORD"
    assert names[28] == "CLEAR_ELR_RECORD" and names[29] == "UNREGISTER_CONTROLLER_RECORD"
    assert set(names) == set(range(30)) - {6, 13, 16}


# -- property tests: hypothesis values drawn from the schema table


def _strategy(fl: Field, version: int):
    t = fl.type
    ints = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
    if t in ints:
        bits = ints[t]
        base = st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    elif t == "uint16":
        base = st.integers(0, 65535)
    elif t == "bool":
        base = st.booleans()
    elif t == "float64":
        base = st.floats(allow_nan=False)
    elif t == "string":
        base = st.text(max_size=20)
    elif t == "bytes":
        base = st.binary(max_size=20).map(lambda b: base64.b64encode(b).decode())
    elif t == "uuid":
        base = st.binary(min_size=16, max_size=16).map(wire.uuid_to_str)
    elif t == "struct":
        base = _data_strategy(fl.fields, version)
    elif t.startswith("[]"):
        item = (
            Field(fl.name, t[2:], fields=fl.fields)
            if t != "[]struct"
            else Field(fl.name, "struct", fields=fl.fields)
        )
        base = st.lists(_strategy(item, version), max_size=5)
    else:
        raise AssertionError(t)
    return st.one_of(st.none(), base) if fl.nullable_in(version) else base


def _data_strategy(fields: tuple[Field, ...], version: int):
    return st.fixed_dictionaries(
        {fl.name: _strategy(fl, version) for fl in fields_for(fields, version)}
    )


@st.composite
def any_record(draw):
    schema = draw(st.sampled_from(METADATA_RECORDS))
    version = draw(st.sampled_from(schema.versions))
    return schema.type_name, version, draw(_data_strategy(schema.fields, version))


@settings(max_examples=300, deadline=None)
@given(any_record())
def test_property_decode_inverts_encode(record):
    type_name, version, data = record
    value = encode_value(type_name, version, data)
    assert decode_value(value)[2:] == (type_name, data)
    assert encode_value(type_name, version, decode_value(value)[3]) == value


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=80))
def test_property_random_bytes_decode_or_raise_record_decode_error(raw):
    try:
        decode_value(raw)
    except RecordDecodeError:
        pass
