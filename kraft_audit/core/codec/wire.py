"""Kafka wire primitives: unsigned varints (message bodies), zig-zag varints
(records inside a batch), big-endian integers and Kafka's uuid text form.

Readers take ``(buf, pos)`` and return ``(value, new_pos)``; they raise
`WireError` on truncated or over-long input so callers can quarantine it.
"""

from __future__ import annotations

import base64
import struct
from typing import TypeAlias

from kraft_audit.errors import WireError  # noqa: F401 (exported here too)

# What the readers are given: a file's bytes or a Kafka message's value (a bytearray from
# pyspark's rows). Said in full for the compiled build: mypyc checks an argument's type,
# and its `bytes` takes no bytearray.
Buffer: TypeAlias = bytes | bytearray

INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")


def _read_unsigned(buf, pos: int, max_shift: int, what: str) -> tuple[int, int]:
    value = 0
    shift = 0
    try:
        while True:
            b = buf[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            if b < 0x80:
                return value, pos
            shift += 7
            if shift > max_shift:
                raise WireError(f"{what} longer than {max_shift // 7 + 1} bytes")
    except IndexError:
        raise WireError(f"{what} runs past the end of the data") from None


def read_uvarint(buf, pos: int) -> tuple[int, int]:
    """An unsigned varint of at most 5 bytes (Kafka's ByteUtils.readUnsignedVarint)."""
    return _read_unsigned(buf, pos, 28, "varint")


def read_uvarlong(buf, pos: int) -> tuple[int, int]:
    """An unsigned varint of at most 10 bytes."""
    return _read_unsigned(buf, pos, 63, "varlong")


def read_varint(buf, pos: int) -> tuple[int, int]:
    """A zig-zag signed 32-bit varint (record fields inside a batch)."""
    raw, pos = read_uvarint(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf, pos: int) -> tuple[int, int]:
    """A zig-zag signed 64-bit varint (timestampDelta)."""
    raw, pos = read_uvarlong(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def write_uvarint(value: int) -> bytes:
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def write_varint(value: int) -> bytes:
    """Zig-zag encode a signed 32-bit value."""
    return write_uvarint(((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def write_varlong(value: int) -> bytes:
    """Zig-zag encode a signed 64-bit value."""
    return write_uvarint(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


def uuid_to_str(raw: bytes) -> str:
    """16 bytes → Kafka's 22-character url-safe base64 (Uuid.toString)."""
    return base64.urlsafe_b64encode(raw)[:22].decode("ascii")


def uuid_from_str(text: str) -> bytes:
    """Kafka's 22-character url-safe base64 → 16 bytes (Uuid.fromString)."""
    if len(text) != 22:
        raise WireError(f"uuid {text!r} is not 22 characters of url-safe base64")
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except ValueError:
        raise WireError(f"uuid {text!r} is not url-safe base64") from None
    if len(raw) != 16:
        raise WireError(f"uuid {text!r} does not hold 16 bytes")
    return raw
