"""What the generated record decoders call (codec/generated_decoders.py, and dump's line
writers, which codec/dumpjson.py generates with the same reads): uuids as text, int32 arrays,
base64, the errors of a record Kafka would reject. Kept apart from codec/records.py, which
imports the generated decoders, so that they can import this."""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable
from typing import Any

from kraft_audit.core.codec import wire
from kraft_audit.core.codec.wire import Buffer, read_uvarint  # noqa: F401 (the decoders' names)
from kraft_audit.errors import RecordDecodeError

UNKNOWN_TAGGED_FIELDS = "_unknownTaggedFields"

# A decoder of a value's body: (buffer, where the body starts, where the value ends) ->
# (the record's data, where its reads stopped)
BodyDecoder = Callable[[Buffer, int, int], tuple[dict[str, Any], int]]

UUID_TEXTS: dict[bytes, str] = {}  # a uuid's 16 bytes -> its text: topic ids repeat
UUID_CACHE_LIMIT = 1 << 16


def uuid_text(raw: Buffer) -> str:
    text = UUID_TEXTS.get(raw)  # type: ignore[call-overload]  # a bytearray is unhashable, as before
    if text is None:
        if len(raw) != 16:
            raise RecordDecodeError("uuid runs past the end of the record")
        if len(UUID_TEXTS) >= UUID_CACHE_LIMIT:
            UUID_TEXTS.clear()
        text = UUID_TEXTS[raw] = wire.uuid_to_str(raw)  # type: ignore[index, arg-type]
    return text


Int32Unpacker = Callable[[Buffer, int], tuple[Any, ...]]

# The unpackers of the int32 arrays a record holds (broker lists), by length: the
# generated decoders index this list instead of calling int32s (a call per array)
INT32_ARRAYS: list[Int32Unpacker] = [struct.Struct(f">{count}i").unpack_from for count in range(256)]


def int32s(count: int) -> Int32Unpacker:
    return INT32_ARRAYS[count] if count < len(INT32_ARRAYS) else struct.Struct(f">{count}i").unpack_from


def b64(raw: Buffer) -> str:
    return base64.b64encode(raw).decode("ascii")


def null_in_non_nullable(name: str) -> RecordDecodeError:
    return RecordDecodeError(f"non-nullable field {name} was serialized as null")


def overrun(name: str, count: int) -> RecordDecodeError:
    return RecordDecodeError(f"field {name} claims length {count}, more than the record holds")


# The names the generated source calls these by -> their names here: the generated
# module imports them under these names, the compilers that exec their source get NAMESPACE
NAMES = {
    "_uvarint": "read_uvarint",
    "_uuid": "uuid_text",
    "_int32s": "int32s",
    "_I32": "INT32_ARRAYS",
    "_UUIDS": "UUID_TEXTS",
    "_b64": "b64",
    "_null": "null_in_non_nullable",
    "_overrun": "overrun",
    "RecordDecodeError": "RecordDecodeError",
    "_UNKNOWN": "UNKNOWN_TAGGED_FIELDS",
}
NAMESPACE: dict[str, Any] = {short: globals()[name] for short, name in NAMES.items()}
