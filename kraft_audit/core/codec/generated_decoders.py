"""The record decoders: one function per (apiKey or control type, version) from a
value's body to its `data` dict and where the reads stopped. GENERATED from the schema
table by `python -m kraft_audit.core.codec.codegen`, which rewrites this file: do not
edit it (tests/test_codec_generated.py fails when it differs from what the table
gives). codec/codegen.py says how they read."""
# ruff: noqa

from __future__ import annotations

import struct
from typing import Any, Final

from kraft_audit.core.codec import decodesupport
from kraft_audit.core.codec.decodesupport import BodyDecoder, Buffer

_uvarint: Final = decodesupport.read_uvarint
_uuid: Final = decodesupport.uuid_text
_int32s: Final = decodesupport.int32s
_I32: Final = decodesupport.INT32_ARRAYS
_UUIDS: Final = decodesupport.UUID_TEXTS
_b64: Final = decodesupport.b64
_null: Final = decodesupport.null_in_non_nullable
_overrun: Final = decodesupport.overrun
RecordDecodeError: Final = decodesupport.RecordDecodeError
_UNKNOWN: Final = decodesupport.UNKNOWN_TAGGED_FIELDS

_S0: Final = struct.Struct('>i16sq').unpack_from
_S1: Final = struct.Struct('>Hh').unpack_from
_S2: Final = struct.Struct('>hh').unpack_from
_S3: Final = struct.Struct('>?').unpack_from
_S4: Final = struct.Struct('>??').unpack_from
_S5: Final = struct.Struct('>i?16sq').unpack_from
_S6: Final = struct.Struct('>iq').unpack_from
_S7: Final = struct.Struct('>16s').unpack_from
_S8: Final = struct.Struct('>i16s').unpack_from
_S9: Final = struct.Struct('>iii').unpack_from
_S10: Final = struct.Struct('>b').unpack_from
_S11: Final = struct.Struct('>i').unpack_from
_S12: Final = struct.Struct('>qqq').unpack_from
_S13: Final = struct.Struct('>h').unpack_from
_S14: Final = struct.Struct('>d?').unpack_from
_S15: Final = struct.Struct('>iqq').unpack_from
_S16: Final = struct.Struct('>16sb').unpack_from
_S17: Final = struct.Struct('>bb').unpack_from
_S18: Final = struct.Struct('>i16s?').unpack_from
_S19: Final = struct.Struct('>hi').unpack_from
_S20: Final = struct.Struct('>hq').unpack_from
_S21: Final = struct.Struct('>H').unpack_from


def _decode_2(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('name')
    n -= 1
    if pos + n > end:
        raise _overrun('name', n)
    v0 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('host')
    n -= 1
    if pos + n > end:
        raise _overrun('host', n)
    v1 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    v2, v3, = _S1(buf, pos)
    pos += 4
    d: dict[str, Any] = {'name': v0, 'host': v1, 'port': v2, 'securityProtocol': v3}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_3(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('name')
    n -= 1
    if pos + n > end:
        raise _overrun('name', n)
    v0 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    v1, v2, = _S2(buf, pos)
    pos += 4
    d: dict[str, Any] = {'name': v0, 'minSupportedVersion': v1, 'maxSupportedVersion': v2}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_1(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, v1, v2, = _S0(buf, pos)
    pos += 28
    v1 = _UUIDS.get(v1) or _uuid(v1)
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('endPoints')
    n -= 1
    if n > end - pos:
        raise _overrun('endPoints', n)
    items_endPoints: list[Any] = []
    for _ in range(n):
        item, pos = _decode_2(buf, pos, end)
        items_endPoints.append(item)
    v3 = items_endPoints
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('features')
    n -= 1
    if n > end - pos:
        raise _overrun('features', n)
    items_features: list[Any] = []
    for _ in range(n):
        item, pos = _decode_3(buf, pos, end)
        items_features.append(item)
    v4 = items_features
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        v5 = None
    else:
        n -= 1
        if pos + n > end:
            raise _overrun('rack', n)
        v5 = bytes(buf[pos:pos + n]).decode('utf-8')
        pos += n
    v6, = _S3(buf, pos)
    pos += 1
    d: dict[str, Any] = {'brokerId': v0, 'incarnationId': v1, 'brokerEpoch': v2, 'endPoints': v3, 'features': v4, 'rack': v5, 'fenced': v6}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_5(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('name')
    n -= 1
    if pos + n > end:
        raise _overrun('name', n)
    v0 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('host')
    n -= 1
    if pos + n > end:
        raise _overrun('host', n)
    v1 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    v2, v3, = _S1(buf, pos)
    pos += 4
    d: dict[str, Any] = {'name': v0, 'host': v1, 'port': v2, 'securityProtocol': v3}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_6(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('name')
    n -= 1
    if pos + n > end:
        raise _overrun('name', n)
    v0 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    v1, v2, = _S2(buf, pos)
    pos += 4
    d: dict[str, Any] = {'name': v0, 'minSupportedVersion': v1, 'maxSupportedVersion': v2}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_4(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, v1, v2, = _S0(buf, pos)
    pos += 28
    v1 = _UUIDS.get(v1) or _uuid(v1)
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('endPoints')
    n -= 1
    if n > end - pos:
        raise _overrun('endPoints', n)
    items_endPoints: list[Any] = []
    for _ in range(n):
        item, pos = _decode_5(buf, pos, end)
        items_endPoints.append(item)
    v3 = items_endPoints
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('features')
    n -= 1
    if n > end - pos:
        raise _overrun('features', n)
    items_features: list[Any] = []
    for _ in range(n):
        item, pos = _decode_6(buf, pos, end)
        items_features.append(item)
    v4 = items_features
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        v5 = None
    else:
        n -= 1
        if pos + n > end:
            raise _overrun('rack', n)
        v5 = bytes(buf[pos:pos + n]).decode('utf-8')
        pos += n
    v6, v7, = _S4(buf, pos)
    pos += 2
    d: dict[str, Any] = {'brokerId': v0, 'incarnationId': v1, 'brokerEpoch': v2, 'endPoints': v3, 'features': v4, 'rack': v5, 'fenced': v6, 'inControlledShutdown': v7}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_8(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('name')
    n -= 1
    if pos + n > end:
        raise _overrun('name', n)
    v0 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('host')
    n -= 1
    if pos + n > end:
        raise _overrun('host', n)
    v1 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    v2, v3, = _S1(buf, pos)
    pos += 4
    d: dict[str, Any] = {'name': v0, 'host': v1, 'port': v2, 'securityProtocol': v3}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_9(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('name')
    n -= 1
    if pos + n > end:
        raise _overrun('name', n)
    v0 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    v1, v2, = _S2(buf, pos)
    pos += 4
    d: dict[str, Any] = {'name': v0, 'minSupportedVersion': v1, 'maxSupportedVersion': v2}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_7(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, v1, v2, v3, = _S5(buf, pos)
    pos += 29
    v2 = _UUIDS.get(v2) or _uuid(v2)
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('endPoints')
    n -= 1
    if n > end - pos:
        raise _overrun('endPoints', n)
    items_endPoints: list[Any] = []
    for _ in range(n):
        item, pos = _decode_8(buf, pos, end)
        items_endPoints.append(item)
    v4 = items_endPoints
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('features')
    n -= 1
    if n > end - pos:
        raise _overrun('features', n)
    items_features: list[Any] = []
    for _ in range(n):
        item, pos = _decode_9(buf, pos, end)
        items_features.append(item)
    v5 = items_features
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        v6 = None
    else:
        n -= 1
        if pos + n > end:
            raise _overrun('rack', n)
        v6 = bytes(buf[pos:pos + n]).decode('utf-8')
        pos += n
    v7, v8, = _S4(buf, pos)
    pos += 2
    d: dict[str, Any] = {'brokerId': v0, 'isMigratingZkBroker': v1, 'incarnationId': v2, 'brokerEpoch': v3, 'endPoints': v4, 'features': v5, 'rack': v6, 'fenced': v7, 'inControlledShutdown': v8}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_11(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('name')
    n -= 1
    if pos + n > end:
        raise _overrun('name', n)
    v0 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('host')
    n -= 1
    if pos + n > end:
        raise _overrun('host', n)
    v1 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    v2, v3, = _S1(buf, pos)
    pos += 4
    d: dict[str, Any] = {'name': v0, 'host': v1, 'port': v2, 'securityProtocol': v3}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_12(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('name')
    n -= 1
    if pos + n > end:
        raise _overrun('name', n)
    v0 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    v1, v2, = _S2(buf, pos)
    pos += 4
    d: dict[str, Any] = {'name': v0, 'minSupportedVersion': v1, 'maxSupportedVersion': v2}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_10(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, v1, v2, v3, = _S5(buf, pos)
    pos += 29
    v2 = _UUIDS.get(v2) or _uuid(v2)
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('endPoints')
    n -= 1
    if n > end - pos:
        raise _overrun('endPoints', n)
    items_endPoints: list[Any] = []
    for _ in range(n):
        item, pos = _decode_11(buf, pos, end)
        items_endPoints.append(item)
    v4 = items_endPoints
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('features')
    n -= 1
    if n > end - pos:
        raise _overrun('features', n)
    items_features: list[Any] = []
    for _ in range(n):
        item, pos = _decode_12(buf, pos, end)
        items_features.append(item)
    v5 = items_features
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        v6 = None
    else:
        n -= 1
        if pos + n > end:
            raise _overrun('rack', n)
        v6 = bytes(buf[pos:pos + n]).decode('utf-8')
        pos += n
    v7, v8, = _S4(buf, pos)
    pos += 2
    d: dict[str, Any] = {'brokerId': v0, 'isMigratingZkBroker': v1, 'incarnationId': v2, 'brokerEpoch': v3, 'endPoints': v4, 'features': v5, 'rack': v6, 'fenced': v7, 'inControlledShutdown': v8, 'logDirs': []}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        if tag == 0:
            n = buf[pos]
            if n < 128:
                pos += 1
            else:
                n, pos = _uvarint(buf, pos)
            if n == 0:
                raise _null('logDirs')
            n -= 1
            if n > (end - pos) >> 4:
                raise _overrun('logDirs', n)
            d['logDirs'] = [_uuid(buf[p:p + 16]) for p in range(pos, pos + 16 * n, 16)]
            pos += 16 * n
        else:
            d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
            pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_14(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('name')
    n -= 1
    if pos + n > end:
        raise _overrun('name', n)
    v0 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('host')
    n -= 1
    if pos + n > end:
        raise _overrun('host', n)
    v1 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    v2, v3, = _S1(buf, pos)
    pos += 4
    d: dict[str, Any] = {'name': v0, 'host': v1, 'port': v2, 'securityProtocol': v3}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_15(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('name')
    n -= 1
    if pos + n > end:
        raise _overrun('name', n)
    v0 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    v1, v2, = _S2(buf, pos)
    pos += 4
    d: dict[str, Any] = {'name': v0, 'minSupportedVersion': v1, 'maxSupportedVersion': v2}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_13(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, v1, v2, v3, = _S5(buf, pos)
    pos += 29
    v2 = _UUIDS.get(v2) or _uuid(v2)
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('endPoints')
    n -= 1
    if n > end - pos:
        raise _overrun('endPoints', n)
    items_endPoints: list[Any] = []
    for _ in range(n):
        item, pos = _decode_14(buf, pos, end)
        items_endPoints.append(item)
    v4 = items_endPoints
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('features')
    n -= 1
    if n > end - pos:
        raise _overrun('features', n)
    items_features: list[Any] = []
    for _ in range(n):
        item, pos = _decode_15(buf, pos, end)
        items_features.append(item)
    v5 = items_features
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        v6 = None
    else:
        n -= 1
        if pos + n > end:
            raise _overrun('rack', n)
        v6 = bytes(buf[pos:pos + n]).decode('utf-8')
        pos += n
    v7, v8, = _S4(buf, pos)
    pos += 2
    d: dict[str, Any] = {'brokerId': v0, 'isMigratingZkBroker': v1, 'incarnationId': v2, 'brokerEpoch': v3, 'endPoints': v4, 'features': v5, 'rack': v6, 'fenced': v7, 'inControlledShutdown': v8, 'logDirs': [], 'cordonedLogDirs': None}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        if tag == 0:
            n = buf[pos]
            if n < 128:
                pos += 1
            else:
                n, pos = _uvarint(buf, pos)
            if n == 0:
                raise _null('logDirs')
            n -= 1
            if n > (end - pos) >> 4:
                raise _overrun('logDirs', n)
            d['logDirs'] = [_uuid(buf[p:p + 16]) for p in range(pos, pos + 16 * n, 16)]
            pos += 16 * n
        elif tag == 1:
            n = buf[pos]
            if n < 128:
                pos += 1
            else:
                n, pos = _uvarint(buf, pos)
            if n == 0:
                d['cordonedLogDirs'] = None
            else:
                n -= 1
                if n > (end - pos) >> 4:
                    raise _overrun('cordonedLogDirs', n)
                d['cordonedLogDirs'] = [_uuid(buf[p:p + 16]) for p in range(pos, pos + 16 * n, 16)]
                pos += 16 * n
        else:
            d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
            pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_16(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, v1, = _S6(buf, pos)
    pos += 12
    d: dict[str, Any] = {'brokerId': v0, 'brokerEpoch': v1}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_17(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('name')
    n -= 1
    if pos + n > end:
        raise _overrun('name', n)
    v0 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    v1, = _S7(buf, pos)
    pos += 16
    v1 = _UUIDS.get(v1) or _uuid(v1)
    d: dict[str, Any] = {'name': v0, 'topicId': v1}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_18(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, v1, = _S8(buf, pos)
    pos += 20
    v1 = _UUIDS.get(v1) or _uuid(v1)
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('replicas')
    n -= 1
    if n > (end - pos) >> 2:
        raise _overrun('replicas', n)
    v2 = list((_I32[n] if n < 256 else _int32s(n))(buf, pos))
    pos += 4 * n
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('isr')
    n -= 1
    if n > (end - pos) >> 2:
        raise _overrun('isr', n)
    v3 = list((_I32[n] if n < 256 else _int32s(n))(buf, pos))
    pos += 4 * n
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('removingReplicas')
    n -= 1
    if n > (end - pos) >> 2:
        raise _overrun('removingReplicas', n)
    v4 = list((_I32[n] if n < 256 else _int32s(n))(buf, pos))
    pos += 4 * n
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('addingReplicas')
    n -= 1
    if n > (end - pos) >> 2:
        raise _overrun('addingReplicas', n)
    v5 = list((_I32[n] if n < 256 else _int32s(n))(buf, pos))
    pos += 4 * n
    v6, v8, v9, = _S9(buf, pos)
    pos += 12
    d: dict[str, Any] = {'partitionId': v0, 'topicId': v1, 'replicas': v2, 'isr': v3, 'removingReplicas': v4, 'addingReplicas': v5, 'leader': v6, 'leaderRecoveryState': 0, 'leaderEpoch': v8, 'partitionEpoch': v9}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        if tag == 0:
            d['leaderRecoveryState'], = _S10(buf, pos)
            pos += 1
        else:
            d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
            pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_19(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, v1, = _S8(buf, pos)
    pos += 20
    v1 = _UUIDS.get(v1) or _uuid(v1)
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('replicas')
    n -= 1
    if n > (end - pos) >> 2:
        raise _overrun('replicas', n)
    v2 = list((_I32[n] if n < 256 else _int32s(n))(buf, pos))
    pos += 4 * n
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('isr')
    n -= 1
    if n > (end - pos) >> 2:
        raise _overrun('isr', n)
    v3 = list((_I32[n] if n < 256 else _int32s(n))(buf, pos))
    pos += 4 * n
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('removingReplicas')
    n -= 1
    if n > (end - pos) >> 2:
        raise _overrun('removingReplicas', n)
    v4 = list((_I32[n] if n < 256 else _int32s(n))(buf, pos))
    pos += 4 * n
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('addingReplicas')
    n -= 1
    if n > (end - pos) >> 2:
        raise _overrun('addingReplicas', n)
    v5 = list((_I32[n] if n < 256 else _int32s(n))(buf, pos))
    pos += 4 * n
    v6, v8, v9, = _S9(buf, pos)
    pos += 12
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('directories')
    n -= 1
    if n > (end - pos) >> 4:
        raise _overrun('directories', n)
    v10 = [_uuid(buf[p:p + 16]) for p in range(pos, pos + 16 * n, 16)]
    pos += 16 * n
    d: dict[str, Any] = {'partitionId': v0, 'topicId': v1, 'replicas': v2, 'isr': v3, 'removingReplicas': v4, 'addingReplicas': v5, 'leader': v6, 'leaderRecoveryState': 0, 'leaderEpoch': v8, 'partitionEpoch': v9, 'directories': v10}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        if tag == 0:
            d['leaderRecoveryState'], = _S10(buf, pos)
            pos += 1
        else:
            d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
            pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_20(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, v1, = _S8(buf, pos)
    pos += 20
    v1 = _UUIDS.get(v1) or _uuid(v1)
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('replicas')
    n -= 1
    if n > (end - pos) >> 2:
        raise _overrun('replicas', n)
    v2 = list((_I32[n] if n < 256 else _int32s(n))(buf, pos))
    pos += 4 * n
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('isr')
    n -= 1
    if n > (end - pos) >> 2:
        raise _overrun('isr', n)
    v3 = list((_I32[n] if n < 256 else _int32s(n))(buf, pos))
    pos += 4 * n
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('removingReplicas')
    n -= 1
    if n > (end - pos) >> 2:
        raise _overrun('removingReplicas', n)
    v4 = list((_I32[n] if n < 256 else _int32s(n))(buf, pos))
    pos += 4 * n
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('addingReplicas')
    n -= 1
    if n > (end - pos) >> 2:
        raise _overrun('addingReplicas', n)
    v5 = list((_I32[n] if n < 256 else _int32s(n))(buf, pos))
    pos += 4 * n
    v6, v8, v9, = _S9(buf, pos)
    pos += 12
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('directories')
    n -= 1
    if n > (end - pos) >> 4:
        raise _overrun('directories', n)
    v10 = [_uuid(buf[p:p + 16]) for p in range(pos, pos + 16 * n, 16)]
    pos += 16 * n
    d: dict[str, Any] = {'partitionId': v0, 'topicId': v1, 'replicas': v2, 'isr': v3, 'removingReplicas': v4, 'addingReplicas': v5, 'leader': v6, 'leaderRecoveryState': 0, 'leaderEpoch': v8, 'partitionEpoch': v9, 'directories': v10, 'eligibleLeaderReplicas': None, 'lastKnownElr': None}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        if tag == 0:
            d['leaderRecoveryState'], = _S10(buf, pos)
            pos += 1
        elif tag == 1:
            n = buf[pos]
            if n < 128:
                pos += 1
            else:
                n, pos = _uvarint(buf, pos)
            if n == 0:
                d['eligibleLeaderReplicas'] = None
            else:
                n -= 1
                if n > (end - pos) >> 2:
                    raise _overrun('eligibleLeaderReplicas', n)
                d['eligibleLeaderReplicas'] = list((_I32[n] if n < 256 else _int32s(n))(buf, pos))
                pos += 4 * n
        elif tag == 2:
            n = buf[pos]
            if n < 128:
                pos += 1
            else:
                n, pos = _uvarint(buf, pos)
            if n == 0:
                d['lastKnownElr'] = None
            else:
                n -= 1
                if n > (end - pos) >> 2:
                    raise _overrun('lastKnownElr', n)
                d['lastKnownElr'] = list((_I32[n] if n < 256 else _int32s(n))(buf, pos))
                pos += 4 * n
        else:
            d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
            pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_21(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, = _S10(buf, pos)
    pos += 1
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('resourceName')
    n -= 1
    if pos + n > end:
        raise _overrun('resourceName', n)
    v1 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('name')
    n -= 1
    if pos + n > end:
        raise _overrun('name', n)
    v2 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        v3 = None
    else:
        n -= 1
        if pos + n > end:
            raise _overrun('value', n)
        v3 = bytes(buf[pos:pos + n]).decode('utf-8')
        pos += n
    d: dict[str, Any] = {'resourceType': v0, 'resourceName': v1, 'name': v2, 'value': v3}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_22(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, v1, = _S8(buf, pos)
    pos += 20
    v1 = _UUIDS.get(v1) or _uuid(v1)
    d: dict[str, Any] = {'partitionId': v0, 'topicId': v1, 'isr': None, 'leader': -2, 'replicas': None, 'removingReplicas': None, 'addingReplicas': None, 'leaderRecoveryState': -1}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        if tag == 0:
            n = buf[pos]
            if n < 128:
                pos += 1
            else:
                n, pos = _uvarint(buf, pos)
            if n == 0:
                d['isr'] = None
            else:
                n -= 1
                if n > (end - pos) >> 2:
                    raise _overrun('isr', n)
                d['isr'] = list((_I32[n] if n < 256 else _int32s(n))(buf, pos))
                pos += 4 * n
        elif tag == 1:
            d['leader'], = _S11(buf, pos)
            pos += 4
        elif tag == 2:
            n = buf[pos]
            if n < 128:
                pos += 1
            else:
                n, pos = _uvarint(buf, pos)
            if n == 0:
                d['replicas'] = None
            else:
                n -= 1
                if n > (end - pos) >> 2:
                    raise _overrun('replicas', n)
                d['replicas'] = list((_I32[n] if n < 256 else _int32s(n))(buf, pos))
                pos += 4 * n
        elif tag == 3:
            n = buf[pos]
            if n < 128:
                pos += 1
            else:
                n, pos = _uvarint(buf, pos)
            if n == 0:
                d['removingReplicas'] = None
            else:
                n -= 1
                if n > (end - pos) >> 2:
                    raise _overrun('removingReplicas', n)
                d['removingReplicas'] = list((_I32[n] if n < 256 else _int32s(n))(buf, pos))
                pos += 4 * n
        elif tag == 4:
            n = buf[pos]
            if n < 128:
                pos += 1
            else:
                n, pos = _uvarint(buf, pos)
            if n == 0:
                d['addingReplicas'] = None
            else:
                n -= 1
                if n > (end - pos) >> 2:
                    raise _overrun('addingReplicas', n)
                d['addingReplicas'] = list((_I32[n] if n < 256 else _int32s(n))(buf, pos))
                pos += 4 * n
        elif tag == 5:
            d['leaderRecoveryState'], = _S10(buf, pos)
            pos += 1
        else:
            d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
            pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_23(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, v1, = _S8(buf, pos)
    pos += 20
    v1 = _UUIDS.get(v1) or _uuid(v1)
    d: dict[str, Any] = {'partitionId': v0, 'topicId': v1, 'isr': None, 'leader': -2, 'replicas': None, 'removingReplicas': None, 'addingReplicas': None, 'leaderRecoveryState': -1, 'directories': None}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        if tag == 0:
            n = buf[pos]
            if n < 128:
                pos += 1
            else:
                n, pos = _uvarint(buf, pos)
            if n == 0:
                d['isr'] = None
            else:
                n -= 1
                if n > (end - pos) >> 2:
                    raise _overrun('isr', n)
                d['isr'] = list((_I32[n] if n < 256 else _int32s(n))(buf, pos))
                pos += 4 * n
        elif tag == 1:
            d['leader'], = _S11(buf, pos)
            pos += 4
        elif tag == 2:
            n = buf[pos]
            if n < 128:
                pos += 1
            else:
                n, pos = _uvarint(buf, pos)
            if n == 0:
                d['replicas'] = None
            else:
                n -= 1
                if n > (end - pos) >> 2:
                    raise _overrun('replicas', n)
                d['replicas'] = list((_I32[n] if n < 256 else _int32s(n))(buf, pos))
                pos += 4 * n
        elif tag == 3:
            n = buf[pos]
            if n < 128:
                pos += 1
            else:
                n, pos = _uvarint(buf, pos)
            if n == 0:
                d['removingReplicas'] = None
            else:
                n -= 1
                if n > (end - pos) >> 2:
                    raise _overrun('removingReplicas', n)
                d['removingReplicas'] = list((_I32[n] if n < 256 else _int32s(n))(buf, pos))
                pos += 4 * n
        elif tag == 4:
            n = buf[pos]
            if n < 128:
                pos += 1
            else:
                n, pos = _uvarint(buf, pos)
            if n == 0:
                d['addingReplicas'] = None
            else:
                n -= 1
                if n > (end - pos) >> 2:
                    raise _overrun('addingReplicas', n)
                d['addingReplicas'] = list((_I32[n] if n < 256 else _int32s(n))(buf, pos))
                pos += 4 * n
        elif tag == 5:
            d['leaderRecoveryState'], = _S10(buf, pos)
            pos += 1
        elif tag == 8:
            n = buf[pos]
            if n < 128:
                pos += 1
            else:
                n, pos = _uvarint(buf, pos)
            if n == 0:
                d['directories'] = None
            else:
                n -= 1
                if n > (end - pos) >> 4:
                    raise _overrun('directories', n)
                d['directories'] = [_uuid(buf[p:p + 16]) for p in range(pos, pos + 16 * n, 16)]
                pos += 16 * n
        else:
            d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
            pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_24(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, v1, = _S8(buf, pos)
    pos += 20
    v1 = _UUIDS.get(v1) or _uuid(v1)
    d: dict[str, Any] = {'partitionId': v0, 'topicId': v1, 'isr': None, 'leader': -2, 'replicas': None, 'removingReplicas': None, 'addingReplicas': None, 'leaderRecoveryState': -1, 'directories': None, 'eligibleLeaderReplicas': None, 'lastKnownElr': None}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        if tag == 0:
            n = buf[pos]
            if n < 128:
                pos += 1
            else:
                n, pos = _uvarint(buf, pos)
            if n == 0:
                d['isr'] = None
            else:
                n -= 1
                if n > (end - pos) >> 2:
                    raise _overrun('isr', n)
                d['isr'] = list((_I32[n] if n < 256 else _int32s(n))(buf, pos))
                pos += 4 * n
        elif tag == 1:
            d['leader'], = _S11(buf, pos)
            pos += 4
        elif tag == 2:
            n = buf[pos]
            if n < 128:
                pos += 1
            else:
                n, pos = _uvarint(buf, pos)
            if n == 0:
                d['replicas'] = None
            else:
                n -= 1
                if n > (end - pos) >> 2:
                    raise _overrun('replicas', n)
                d['replicas'] = list((_I32[n] if n < 256 else _int32s(n))(buf, pos))
                pos += 4 * n
        elif tag == 3:
            n = buf[pos]
            if n < 128:
                pos += 1
            else:
                n, pos = _uvarint(buf, pos)
            if n == 0:
                d['removingReplicas'] = None
            else:
                n -= 1
                if n > (end - pos) >> 2:
                    raise _overrun('removingReplicas', n)
                d['removingReplicas'] = list((_I32[n] if n < 256 else _int32s(n))(buf, pos))
                pos += 4 * n
        elif tag == 4:
            n = buf[pos]
            if n < 128:
                pos += 1
            else:
                n, pos = _uvarint(buf, pos)
            if n == 0:
                d['addingReplicas'] = None
            else:
                n -= 1
                if n > (end - pos) >> 2:
                    raise _overrun('addingReplicas', n)
                d['addingReplicas'] = list((_I32[n] if n < 256 else _int32s(n))(buf, pos))
                pos += 4 * n
        elif tag == 5:
            d['leaderRecoveryState'], = _S10(buf, pos)
            pos += 1
        elif tag == 6:
            n = buf[pos]
            if n < 128:
                pos += 1
            else:
                n, pos = _uvarint(buf, pos)
            if n == 0:
                d['eligibleLeaderReplicas'] = None
            else:
                n -= 1
                if n > (end - pos) >> 2:
                    raise _overrun('eligibleLeaderReplicas', n)
                d['eligibleLeaderReplicas'] = list((_I32[n] if n < 256 else _int32s(n))(buf, pos))
                pos += 4 * n
        elif tag == 7:
            n = buf[pos]
            if n < 128:
                pos += 1
            else:
                n, pos = _uvarint(buf, pos)
            if n == 0:
                d['lastKnownElr'] = None
            else:
                n -= 1
                if n > (end - pos) >> 2:
                    raise _overrun('lastKnownElr', n)
                d['lastKnownElr'] = list((_I32[n] if n < 256 else _int32s(n))(buf, pos))
                pos += 4 * n
        elif tag == 8:
            n = buf[pos]
            if n < 128:
                pos += 1
            else:
                n, pos = _uvarint(buf, pos)
            if n == 0:
                d['directories'] = None
            else:
                n -= 1
                if n > (end - pos) >> 4:
                    raise _overrun('directories', n)
                d['directories'] = [_uuid(buf[p:p + 16]) for p in range(pos, pos + 16 * n, 16)]
                pos += 16 * n
        else:
            d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
            pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_25(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, v1, = _S6(buf, pos)
    pos += 12
    d: dict[str, Any] = {'id': v0, 'epoch': v1}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_26(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, v1, = _S6(buf, pos)
    pos += 12
    d: dict[str, Any] = {'id': v0, 'epoch': v1}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_27(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, = _S7(buf, pos)
    pos += 16
    v0 = _UUIDS.get(v0) or _uuid(v0)
    d: dict[str, Any] = {'topicId': v0}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_28(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('owner')
    n -= 1
    if pos + n > end:
        raise _overrun('owner', n)
    v0 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('requester')
    n -= 1
    if pos + n > end:
        raise _overrun('requester', n)
    v1 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('renewers')
    n -= 1
    if n > end - pos:
        raise _overrun('renewers', n)
    items_renewers: list[str] = []
    for _ in range(n):
        k = buf[pos]
        if k < 128:
            pos += 1
        else:
            k, pos = _uvarint(buf, pos)
        if k == 0:
            raise _null('renewers')
        k -= 1
        items_renewers.append(bytes(buf[pos:pos + k]).decode('utf-8'))
        pos += k
    v2 = items_renewers
    v3, v4, v5, = _S12(buf, pos)
    pos += 24
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('tokenId')
    n -= 1
    if pos + n > end:
        raise _overrun('tokenId', n)
    v6 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    d: dict[str, Any] = {'owner': v0, 'requester': v1, 'renewers': v2, 'issueTimestamp': v3, 'maxTimestamp': v4, 'expirationTimestamp': v5, 'tokenId': v6}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_29(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('name')
    n -= 1
    if pos + n > end:
        raise _overrun('name', n)
    v0 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    v1, = _S10(buf, pos)
    pos += 1
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('salt')
    n -= 1
    if pos + n > end:
        raise _overrun('salt', n)
    v2 = _b64(buf[pos:pos + n])
    pos += n
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('storedKey')
    n -= 1
    if pos + n > end:
        raise _overrun('storedKey', n)
    v3 = _b64(buf[pos:pos + n])
    pos += n
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('serverKey')
    n -= 1
    if pos + n > end:
        raise _overrun('serverKey', n)
    v4 = _b64(buf[pos:pos + n])
    pos += n
    v5, = _S11(buf, pos)
    pos += 4
    d: dict[str, Any] = {'name': v0, 'mechanism': v1, 'salt': v2, 'storedKey': v3, 'serverKey': v4, 'iterations': v5}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_30(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('name')
    n -= 1
    if pos + n > end:
        raise _overrun('name', n)
    v0 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    v1, = _S13(buf, pos)
    pos += 2
    d: dict[str, Any] = {'name': v0, 'featureLevel': v1}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_32(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('entityType')
    n -= 1
    if pos + n > end:
        raise _overrun('entityType', n)
    v0 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        v1 = None
    else:
        n -= 1
        if pos + n > end:
            raise _overrun('entityName', n)
        v1 = bytes(buf[pos:pos + n]).decode('utf-8')
        pos += n
    d: dict[str, Any] = {'entityType': v0, 'entityName': v1}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_31(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('entity')
    n -= 1
    if n > end - pos:
        raise _overrun('entity', n)
    items_entity: list[Any] = []
    for _ in range(n):
        item, pos = _decode_32(buf, pos, end)
        items_entity.append(item)
    v0 = items_entity
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('key')
    n -= 1
    if pos + n > end:
        raise _overrun('key', n)
    v1 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    v2, v3, = _S14(buf, pos)
    pos += 9
    d: dict[str, Any] = {'entity': v0, 'key': v1, 'value': v2, 'remove': v3}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_33(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, v1, v2, = _S15(buf, pos)
    pos += 20
    d: dict[str, Any] = {'brokerId': v0, 'brokerEpoch': v1, 'nextProducerId': v2}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_34(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, v1, = _S6(buf, pos)
    pos += 12
    d: dict[str, Any] = {'brokerId': v0, 'brokerEpoch': v1, 'fenced': 0}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        if tag == 0:
            d['fenced'], = _S10(buf, pos)
            pos += 1
        else:
            d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
            pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_35(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, v1, = _S6(buf, pos)
    pos += 12
    d: dict[str, Any] = {'brokerId': v0, 'brokerEpoch': v1, 'fenced': 0, 'inControlledShutdown': 0}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        if tag == 0:
            d['fenced'], = _S10(buf, pos)
            pos += 1
        elif tag == 1:
            d['inControlledShutdown'], = _S10(buf, pos)
            pos += 1
        else:
            d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
            pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_36(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, v1, = _S6(buf, pos)
    pos += 12
    d: dict[str, Any] = {'brokerId': v0, 'brokerEpoch': v1, 'fenced': 0, 'inControlledShutdown': 0, 'logDirs': []}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        if tag == 0:
            d['fenced'], = _S10(buf, pos)
            pos += 1
        elif tag == 1:
            d['inControlledShutdown'], = _S10(buf, pos)
            pos += 1
        elif tag == 2:
            n = buf[pos]
            if n < 128:
                pos += 1
            else:
                n, pos = _uvarint(buf, pos)
            if n == 0:
                raise _null('logDirs')
            n -= 1
            if n > (end - pos) >> 4:
                raise _overrun('logDirs', n)
            d['logDirs'] = [_uuid(buf[p:p + 16]) for p in range(pos, pos + 16 * n, 16)]
            pos += 16 * n
        else:
            d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
            pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_37(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, v1, = _S6(buf, pos)
    pos += 12
    d: dict[str, Any] = {'brokerId': v0, 'brokerEpoch': v1, 'fenced': 0, 'inControlledShutdown': 0, 'logDirs': [], 'cordonedLogDirs': None}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        if tag == 0:
            d['fenced'], = _S10(buf, pos)
            pos += 1
        elif tag == 1:
            d['inControlledShutdown'], = _S10(buf, pos)
            pos += 1
        elif tag == 2:
            n = buf[pos]
            if n < 128:
                pos += 1
            else:
                n, pos = _uvarint(buf, pos)
            if n == 0:
                raise _null('logDirs')
            n -= 1
            if n > (end - pos) >> 4:
                raise _overrun('logDirs', n)
            d['logDirs'] = [_uuid(buf[p:p + 16]) for p in range(pos, pos + 16 * n, 16)]
            pos += 16 * n
        elif tag == 3:
            n = buf[pos]
            if n < 128:
                pos += 1
            else:
                n, pos = _uvarint(buf, pos)
            if n == 0:
                d['cordonedLogDirs'] = None
            else:
                n -= 1
                if n > (end - pos) >> 4:
                    raise _overrun('cordonedLogDirs', n)
                d['cordonedLogDirs'] = [_uuid(buf[p:p + 16]) for p in range(pos, pos + 16 * n, 16)]
                pos += 16 * n
        else:
            d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
            pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_38(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, v1, = _S16(buf, pos)
    pos += 17
    v0 = _UUIDS.get(v0) or _uuid(v0)
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('resourceName')
    n -= 1
    if pos + n > end:
        raise _overrun('resourceName', n)
    v2 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    v3, = _S10(buf, pos)
    pos += 1
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('principal')
    n -= 1
    if pos + n > end:
        raise _overrun('principal', n)
    v4 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('host')
    n -= 1
    if pos + n > end:
        raise _overrun('host', n)
    v5 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    v6, v7, = _S17(buf, pos)
    pos += 2
    d: dict[str, Any] = {'id': v0, 'resourceType': v1, 'resourceName': v2, 'patternType': v3, 'principal': v4, 'host': v5, 'operation': v6, 'permissionType': v7}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_39(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, = _S7(buf, pos)
    pos += 16
    v0 = _UUIDS.get(v0) or _uuid(v0)
    d: dict[str, Any] = {'id': v0}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_40(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    d: dict[str, Any] = {}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_41(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, = _S10(buf, pos)
    pos += 1
    d: dict[str, Any] = {'zkMigrationState': v0}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_42(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('name')
    n -= 1
    if pos + n > end:
        raise _overrun('name', n)
    v0 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    v1, = _S10(buf, pos)
    pos += 1
    d: dict[str, Any] = {'name': v0, 'mechanism': v1}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_43(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    d: dict[str, Any] = {'name': None}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        if tag == 0:
            n = buf[pos]
            if n < 128:
                pos += 1
            else:
                n, pos = _uvarint(buf, pos)
            if n == 0:
                d['name'] = None
            else:
                n -= 1
                if pos + n > end:
                    raise _overrun('name', n)
                d['name'] = bytes(buf[pos:pos + n]).decode('utf-8')
                pos += n
        else:
            d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
            pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_44(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    d: dict[str, Any] = {}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_45(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    d: dict[str, Any] = {'reason': None}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        if tag == 0:
            n = buf[pos]
            if n < 128:
                pos += 1
            else:
                n, pos = _uvarint(buf, pos)
            if n == 0:
                d['reason'] = None
            else:
                n -= 1
                if pos + n > end:
                    raise _overrun('reason', n)
                d['reason'] = bytes(buf[pos:pos + n]).decode('utf-8')
                pos += n
        else:
            d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
            pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_46(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('tokenId')
    n -= 1
    if pos + n > end:
        raise _overrun('tokenId', n)
    v0 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    d: dict[str, Any] = {'tokenId': v0}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_48(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('name')
    n -= 1
    if pos + n > end:
        raise _overrun('name', n)
    v0 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('host')
    n -= 1
    if pos + n > end:
        raise _overrun('host', n)
    v1 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    v2, v3, = _S1(buf, pos)
    pos += 4
    d: dict[str, Any] = {'name': v0, 'host': v1, 'port': v2, 'securityProtocol': v3}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_49(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('name')
    n -= 1
    if pos + n > end:
        raise _overrun('name', n)
    v0 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    v1, v2, = _S2(buf, pos)
    pos += 4
    d: dict[str, Any] = {'name': v0, 'minSupportedVersion': v1, 'maxSupportedVersion': v2}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_47(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, v1, v2, = _S18(buf, pos)
    pos += 21
    v1 = _UUIDS.get(v1) or _uuid(v1)
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('endPoints')
    n -= 1
    if n > end - pos:
        raise _overrun('endPoints', n)
    items_endPoints: list[Any] = []
    for _ in range(n):
        item, pos = _decode_48(buf, pos, end)
        items_endPoints.append(item)
    v3 = items_endPoints
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('features')
    n -= 1
    if n > end - pos:
        raise _overrun('features', n)
    items_features: list[Any] = []
    for _ in range(n):
        item, pos = _decode_49(buf, pos, end)
        items_features.append(item)
    v4 = items_features
    d: dict[str, Any] = {'controllerId': v0, 'incarnationId': v1, 'zkMigrationReady': v2, 'endPoints': v3, 'features': v4}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_50(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('topicName')
    n -= 1
    if pos + n > end:
        raise _overrun('topicName', n)
    v0 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    d: dict[str, Any] = {'topicName': v0}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_51(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, = _S11(buf, pos)
    pos += 4
    d: dict[str, Any] = {'controllerId': v0}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_53(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, = _S11(buf, pos)
    pos += 4
    d: dict[str, Any] = {'voterId': v0}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_54(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, = _S11(buf, pos)
    pos += 4
    d: dict[str, Any] = {'voterId': v0}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_52(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, v1, = _S19(buf, pos)
    pos += 6
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('voters')
    n -= 1
    if n > end - pos:
        raise _overrun('voters', n)
    items_voters: list[Any] = []
    for _ in range(n):
        item, pos = _decode_53(buf, pos, end)
        items_voters.append(item)
    v2 = items_voters
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('grantingVoters')
    n -= 1
    if n > end - pos:
        raise _overrun('grantingVoters', n)
    items_grantingVoters: list[Any] = []
    for _ in range(n):
        item, pos = _decode_54(buf, pos, end)
        items_grantingVoters.append(item)
    v3 = items_grantingVoters
    d: dict[str, Any] = {'version': v0, 'leaderId': v1, 'voters': v2, 'grantingVoters': v3}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_56(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, v1, = _S8(buf, pos)
    pos += 20
    v1 = _UUIDS.get(v1) or _uuid(v1)
    d: dict[str, Any] = {'voterId': v0, 'voterDirectoryId': v1}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_57(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, v1, = _S8(buf, pos)
    pos += 20
    v1 = _UUIDS.get(v1) or _uuid(v1)
    d: dict[str, Any] = {'voterId': v0, 'voterDirectoryId': v1}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_55(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, v1, = _S19(buf, pos)
    pos += 6
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('voters')
    n -= 1
    if n > end - pos:
        raise _overrun('voters', n)
    items_voters: list[Any] = []
    for _ in range(n):
        item, pos = _decode_56(buf, pos, end)
        items_voters.append(item)
    v2 = items_voters
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('grantingVoters')
    n -= 1
    if n > end - pos:
        raise _overrun('grantingVoters', n)
    items_grantingVoters: list[Any] = []
    for _ in range(n):
        item, pos = _decode_57(buf, pos, end)
        items_grantingVoters.append(item)
    v3 = items_grantingVoters
    d: dict[str, Any] = {'version': v0, 'leaderId': v1, 'voters': v2, 'grantingVoters': v3}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_58(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, v1, = _S20(buf, pos)
    pos += 10
    d: dict[str, Any] = {'version': v0, 'lastContainedLogTimestamp': v1}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_59(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, = _S13(buf, pos)
    pos += 2
    d: dict[str, Any] = {'version': v0}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_60(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, v1, = _S2(buf, pos)
    pos += 4
    d: dict[str, Any] = {'version': v0, 'kRaftVersion': v1}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_63(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('name')
    n -= 1
    if pos + n > end:
        raise _overrun('name', n)
    v0 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('host')
    n -= 1
    if pos + n > end:
        raise _overrun('host', n)
    v1 = bytes(buf[pos:pos + n]).decode('utf-8')
    pos += n
    v2, = _S21(buf, pos)
    pos += 2
    d: dict[str, Any] = {'name': v0, 'host': v1, 'port': v2}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_64(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, v1, = _S2(buf, pos)
    pos += 4
    d: dict[str, Any] = {'minSupportedVersion': v0, 'maxSupportedVersion': v1}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_62(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, v1, = _S8(buf, pos)
    pos += 20
    v1 = _UUIDS.get(v1) or _uuid(v1)
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('endpoints')
    n -= 1
    if n > end - pos:
        raise _overrun('endpoints', n)
    items_endpoints: list[Any] = []
    for _ in range(n):
        item, pos = _decode_63(buf, pos, end)
        items_endpoints.append(item)
    v2 = items_endpoints
    v3, pos = _decode_64(buf, pos, end)
    d: dict[str, Any] = {'voterId': v0, 'voterDirectoryId': v1, 'endpoints': v2, 'kRaftVersionFeature': v3}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


def _decode_61(buf: Buffer, pos: int, end: int) -> tuple[dict[str, Any], int]:
    v0, = _S13(buf, pos)
    pos += 2
    n = buf[pos]
    if n < 128:
        pos += 1
    else:
        n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _null('voters')
    n -= 1
    if n > end - pos:
        raise _overrun('voters', n)
    items_voters: list[Any] = []
    for _ in range(n):
        item, pos = _decode_62(buf, pos, end)
        items_voters.append(item)
    v1 = items_voters
    d: dict[str, Any] = {'version': v0, 'voters': v1}
    tags = buf[pos]
    if tags < 128:
        pos += 1
    else:
        tags, pos = _uvarint(buf, pos)
    for _ in range(tags):
        tag = buf[pos]
        size = buf[pos + 1]
        if tag < 128 and size < 128:
            pos += 2
        else:
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
        fend = pos + size
        if fend > end:
            raise RecordDecodeError(
                f'tagged field {tag} of size {size} runs past the end')
        d.setdefault(_UNKNOWN, []).append({'tag': tag, 'hex': bytes(buf[pos:fend]).hex()})
        pos = fend
        if pos != fend:
            raise RecordDecodeError(
                f'tagged field {tag} declared {size} bytes but held a different amount')
    return d, pos


METADATA_DECODERS: dict[tuple[int, int], tuple[str, BodyDecoder]] = {
    (0, 0): ('REGISTER_BROKER_RECORD', _decode_1),
    (0, 1): ('REGISTER_BROKER_RECORD', _decode_4),
    (0, 2): ('REGISTER_BROKER_RECORD', _decode_7),
    (0, 3): ('REGISTER_BROKER_RECORD', _decode_10),
    (0, 4): ('REGISTER_BROKER_RECORD', _decode_13),
    (1, 0): ('UNREGISTER_BROKER_RECORD', _decode_16),
    (2, 0): ('TOPIC_RECORD', _decode_17),
    (3, 0): ('PARTITION_RECORD', _decode_18),
    (3, 1): ('PARTITION_RECORD', _decode_19),
    (3, 2): ('PARTITION_RECORD', _decode_20),
    (4, 0): ('CONFIG_RECORD', _decode_21),
    (5, 0): ('PARTITION_CHANGE_RECORD', _decode_22),
    (5, 1): ('PARTITION_CHANGE_RECORD', _decode_23),
    (5, 2): ('PARTITION_CHANGE_RECORD', _decode_24),
    (7, 0): ('FENCE_BROKER_RECORD', _decode_25),
    (8, 0): ('UNFENCE_BROKER_RECORD', _decode_26),
    (9, 0): ('REMOVE_TOPIC_RECORD', _decode_27),
    (10, 0): ('DELEGATION_TOKEN_RECORD', _decode_28),
    (11, 0): ('USER_SCRAM_CREDENTIAL_RECORD', _decode_29),
    (12, 0): ('FEATURE_LEVEL_RECORD', _decode_30),
    (14, 0): ('CLIENT_QUOTA_RECORD', _decode_31),
    (15, 0): ('PRODUCER_IDS_RECORD', _decode_33),
    (17, 0): ('BROKER_REGISTRATION_CHANGE_RECORD', _decode_34),
    (17, 1): ('BROKER_REGISTRATION_CHANGE_RECORD', _decode_35),
    (17, 2): ('BROKER_REGISTRATION_CHANGE_RECORD', _decode_36),
    (17, 3): ('BROKER_REGISTRATION_CHANGE_RECORD', _decode_37),
    (18, 0): ('ACCESS_CONTROL_ENTRY_RECORD', _decode_38),
    (19, 0): ('REMOVE_ACCESS_CONTROL_ENTRY_RECORD', _decode_39),
    (20, 0): ('NO_OP_RECORD', _decode_40),
    (21, 0): ('ZK_MIGRATION_STATE_RECORD', _decode_41),
    (22, 0): ('REMOVE_USER_SCRAM_CREDENTIAL_RECORD', _decode_42),
    (23, 0): ('BEGIN_TRANSACTION_RECORD', _decode_43),
    (24, 0): ('END_TRANSACTION_RECORD', _decode_44),
    (25, 0): ('ABORT_TRANSACTION_RECORD', _decode_45),
    (26, 0): ('REMOVE_DELEGATION_TOKEN_RECORD', _decode_46),
    (27, 0): ('REGISTER_CONTROLLER_RECORD', _decode_47),
    (28, 0): ('CLEAR_ELR_RECORD', _decode_50),
    (29, 0): ('UNREGISTER_CONTROLLER_RECORD', _decode_51),
}


CONTROL_DECODERS: dict[tuple[int, int], tuple[str, BodyDecoder]] = {
    (2, 0): ('LEADER_CHANGE', _decode_52),
    (2, 1): ('LEADER_CHANGE', _decode_55),
    (3, 0): ('SNAPSHOT_HEADER', _decode_58),
    (4, 0): ('SNAPSHOT_FOOTER', _decode_59),
    (5, 0): ('KRAFT_VERSION', _decode_60),
    (6, 0): ('KRAFT_VOTERS', _decode_61),
}
