"""Record values: the framed metadata record (`uvarint frameVersion=1,
uvarint apiKey, uvarint version, body`) and the bodies of Raft control records.

Decoding is the hot path of the whole auditor, so for every (apiKey,
version) the schema table is written out as a plain Python function with the
field reads unrolled (struct.unpack_from, inline varints): the per-record work
has no per-field dispatch. They live in codec/generated_decoders.py, which
`python -m kraft_audit.core.codec.codegen` writes (codec/codegen.py). Encoders
are compiled from the same table on first use, for the simulator's writer.

`data` dicts hold every field of the version by camelCase name, in schema
order, with absent tagged fields at their default. Unknown tagged fields are
kept (not an error) under ``data["_unknownTaggedFields"]`` as
``[{"tag": n, "hex": "..."}]`` and are written back by the encoder.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable
from typing import Any

from kraft_audit.core.codec import wire
from kraft_audit.core.codec.decodesupport import (
    UNKNOWN_TAGGED_FIELDS,
    UUID_CACHE_LIMIT,
    BodyDecoder,
)
# (apiKey or control type, version) -> (type name, body decoder)
from kraft_audit.core.codec.generated_decoders import CONTROL_DECODERS, METADATA_DECODERS
from kraft_audit.core.codec.schemas import (
    CONTROL_BY_NAME,
    CONTROL_BY_TYPE,
    CONTROL_TYPE_NAMES,
    METADATA_BY_TYPE,
    METADATA_RECORDS,
    MessageSchema,
)
from kraft_audit.core.events import UNKNOWN_RECORD
from kraft_audit.errors import RecordDecodeError  # noqa: F401 (exported here too)

FRAME_VERSION = 1  # AbstractApiMessageSerde: any other frame version is rejected
MAX_API_KEY_OR_VERSION = 32767


# ---------------------------------------------------------------- decoding

# The batch reader's lookup: the first three bytes of a value (frame 1,
# one-byte apiKey, one-byte version) -> (type name, body decoder, apiKey, version).
PREFIX_DECODERS: dict[bytes, tuple[str, BodyDecoder, int, int]] = {
    bytes((FRAME_VERSION, api_key, version)): (type_name, decode_body, api_key, version)
    for (api_key, version), (type_name, decode_body) in METADATA_DECODERS.items()
    if api_key < 0x80 and version < 0x80
}


def decode_value(
    buf: bytes | bytearray, pos: int = 0, end: int | None = None
) -> tuple[int, int, str, dict[str, Any]]:
    """Decode one framed metadata record value.

    Returns ``(api_key, version, type_name, data)``. An apiKey or version this
    build does not know gives ``type_name == "UNKNOWN_RECORD"`` and empty data.
    Raises `RecordDecodeError` for bytes Kafka would reject.
    """
    end = len(buf) if end is None else end
    try:
        frame, pos = wire.read_uvarint(buf, pos)
        if frame != FRAME_VERSION:
            raise RecordDecodeError(f"frame version {frame}, expected {FRAME_VERSION}")
        api_key, pos = wire.read_uvarint(buf, pos)
        version, pos = wire.read_uvarint(buf, pos)
        if api_key > MAX_API_KEY_OR_VERSION or version > MAX_API_KEY_OR_VERSION:
            raise RecordDecodeError(
                f"apiKey {api_key} or version {version} is above {MAX_API_KEY_OR_VERSION}"
            )
        entry = METADATA_DECODERS.get((api_key, version))
        if entry is None:
            return api_key, version, UNKNOWN_RECORD, {}
        type_name, decode_body = entry
        data, pos = decode_body(buf, pos, end)
    except RecordDecodeError:
        raise
    except (IndexError, struct.error, UnicodeDecodeError, ValueError) as exc:
        raise RecordDecodeError(f"body ends early or is malformed ({exc})") from None
    if pos != end:
        raise RecordDecodeError(_length_mismatch(type_name, version, pos, end))
    return api_key, version, type_name, data


def _length_mismatch(type_name: str, version: int, pos: int, end: int) -> str:
    if pos > end:
        return f"{type_name} v{version} runs {pos - end} bytes past the end of the value"
    return f"{end - pos} bytes left over after {type_name} v{version}"


def decode_control(
    control_type: int, buf: bytes, pos: int = 0, end: int | None = None
) -> tuple[str, int, dict[str, Any]]:
    """Decode a control record value. Returns ``(type_name, version, data)``.

    The body starts with its own int16 Version; it is read at that version
    (capped at the newest this build knows). ABORT/COMMIT markers and
    unknown control types come back with empty data.
    """
    end = len(buf) if end is None else end
    schema = CONTROL_BY_TYPE.get(control_type)
    if schema is None:
        return CONTROL_TYPE_NAMES.get(control_type, f"CONTROL_TYPE_{control_type}"), 0, {}
    try:
        (version,) = wire.INT16.unpack_from(buf, pos)
        read_version = min(max(version, schema.min_version), schema.max_version)
        data, pos = CONTROL_DECODERS[(control_type, read_version)][1](buf, pos, end)
    except RecordDecodeError:
        raise
    except (IndexError, struct.error, UnicodeDecodeError, ValueError) as exc:
        raise RecordDecodeError(
            f"{schema.type_name} body ends early or is malformed ({exc})"
        ) from None
    if pos != end:
        raise RecordDecodeError(_length_mismatch(schema.type_name, version, pos, end))
    return schema.type_name, version, data


# ---------------------------------------------------------------- encoding


def _not_nullable(name: str):
    return ValueError(f"field {name} is not nullable")


def _uuid_bytes(text: str) -> bytes:
    raw = _UUID_BYTES_CACHE.get(text)
    if raw is None:
        if len(_UUID_BYTES_CACHE) >= UUID_CACHE_LIMIT:
            _UUID_BYTES_CACHE.clear()
        raw = _UUID_BYTES_CACHE[text] = wire.uuid_from_str(text)
    return raw


_UUID_BYTES_CACHE: dict[str, bytes] = {}

_ENCODE_NAMESPACE: dict[str, Any] = {
    "_uv": wire.write_uvarint,
    "_ub": _uuid_bytes,
    "_b64d": base64.b64decode,
    "_not_null": _not_nullable,
    "_pack": struct.pack,
    "_UNKNOWN": UNKNOWN_TAGGED_FIELDS,
    "_fromhex": bytes.fromhex,
}


_ENCODERS: dict[tuple[str, int], Callable] = {}  # compiled on first use: reading a log encodes nothing


def _encoder(type_name: str, version: int) -> Callable | None:
    if not _ENCODERS:
        from kraft_audit.core.codec.codegen import compile_encoders  # the compilers: only here

        _ENCODERS.update(compile_encoders(METADATA_RECORDS + tuple(CONTROL_BY_TYPE.values()),
                                          _ENCODE_NAMESPACE))
    return _ENCODERS.get((type_name, version))


def encode_body(schema: MessageSchema, version: int, data: dict[str, Any]) -> bytes:
    """The message body alone (no frame); missing fields take their default."""
    encode = _encoder(schema.type_name, version)
    if encode is None:
        raise ValueError(f"{schema.type_name} has no version {version}")
    out = bytearray()
    try:
        encode(data, out)
    except (struct.error, TypeError, AttributeError, KeyError, wire.WireError) as exc:
        raise ValueError(f"{schema.type_name} v{version}: {exc}") from None
    return bytes(out)


def encode_value(type_name: str, version: int, data: dict[str, Any]) -> bytes:
    """A framed metadata record value, as MetadataRecordSerde writes it.

    Tagged fields at their default are omitted and the rest are written in
    ascending tag order, as Kafka's generated code does.
    """
    schema = METADATA_BY_TYPE.get(type_name)
    if schema is None:
        raise ValueError(f"unknown metadata record type {type_name!r}")
    return (
        wire.write_uvarint(FRAME_VERSION)
        + wire.write_uvarint(schema.api_key)
        + wire.write_uvarint(version)
        + encode_body(schema, version, data)
    )


def encode_control(type_name: str, data: dict[str, Any]) -> tuple[bytes, bytes]:
    """A control record's ``(key, value)``: key = int16 version 0 + int16 type."""
    schema = CONTROL_BY_NAME.get(type_name)
    if schema is None:
        raise ValueError(f"unknown control record type {type_name!r}")
    version = data.get("version", schema.min_version)
    key = wire.INT16.pack(0) + wire.INT16.pack(schema.control_type)
    return key, encode_body(schema, min(version, schema.max_version), {**data, "version": version})
