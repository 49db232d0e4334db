"""Record batch v2 (DefaultRecordBatch): framing, CRC-32C, compression,
the records inside, control batches, and the turn from batches into events.

`iter_batches` walks a buffer batch by batch and never raises: a bad batch
becomes a `BatchProblem` saying what and where, and the walk goes on where
it safely can — after a CRC mismatch with a sane length it skips that batch;
after garbage it scans forward for the next plausible header (magic 2, sane
length, valid CRC). A batch cut off by the end of the data is a *torn tail*:
a live segment still being written, or a file truncated by a crash.
"""

from __future__ import annotations

import gzip
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

import cramjam
from crc32c import crc32c

from kraft_audit.core.codec import wire
from kraft_audit.core.codec.records import (
    PREFIX_DECODERS,
    RecordDecodeError,
    decode_control,
    decode_value,
)
from kraft_audit.core.codec.wire import Buffer
from kraft_audit.core.events import KIND_CONTROL, KIND_RECORD, UNKNOWN_RECORD, MetadataEvent, Quarantined
from kraft_audit.errors import FramingProblem

HEADER = struct.Struct(">qiibIhiqqqhii")  # the 61-byte v2 header, field by field
HEADER_SIZE = HEADER.size
LOG_OVERHEAD = 12  # baseOffset + batchLength precede what batchLength counts
CRC_START = 21  # the CRC covers attributes .. end (not epoch, magic or itself)
MAGIC = 2
# KafkaRaftClient caps a batch at 8 MiB; allow headroom for foreign writers
# before calling a length impossible.
MAX_BATCH_BYTES = 64 << 20

COMPRESSION_NONE, COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4, COMPRESSION_ZSTD = range(5)
COMPRESSION_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20

_XERIAL_MAGIC = b"\x82SNAPPY\x00"  # Kafka's snappy codec is xerial's block stream
_RAW_EXCERPT = 64  # bytes of bad input kept in a Quarantined row


@dataclass(slots=True)
class Batch:
    """One record batch whose framing and CRC are valid."""

    position: int  # byte position of the batch in its file
    base_offset: int
    batch_length: int
    leader_epoch: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int
    buf: Buffer  # holds the (decompressed) records section at [records_start:records_end]
    records_start: int
    records_end: int

    @property
    def size(self) -> int:
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def compression(self) -> int:
        return self.attributes & 0x07

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)


# What a BatchProblem is: only TORN and PADDING can be a live segment's tail.
TORN, PADDING, CRC_MISMATCH, GARBAGE, UNREADABLE = "torn", "padding", "crc", "garbage", "unreadable"


@dataclass(slots=True)
class BatchProblem:
    """Bytes that are not a usable batch."""

    position: int
    reason: str
    size: int  # bytes covered by the problem (skipped)
    kind: str  # TORN, PADDING, CRC_MISMATCH, GARBAGE or UNREADABLE
    raw: bytes = b""

    @property
    def at_tail(self) -> bool:
        """The data ends inside this problem: a live writer may still complete it."""
        return self.kind in (TORN, PADDING)


@dataclass(slots=True)
class Record:
    """One record of a batch, before its value is decoded."""

    offset: int
    timestamp_ms: int
    attributes: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[bytes, bytes | None]]


# ---------------------------------------------------------------- framing


def iter_batches(
    buf: Buffer, start: int = 0, end: int | None = None, base_position: int = 0
) -> Iterator[Batch | BatchProblem]:
    """Every batch (or problem) in ``buf[start:end]``, in file order.

    ``base_position`` is the file position of ``buf[0]``, for callers that
    read a file from the middle; reported positions are file positions.
    """
    end = len(buf) if end is None else end
    pos = start
    while pos < end:
        item = batch_at(buf, pos, end, base_position)
        yield item
        if isinstance(item, BatchProblem) and item.at_tail:
            return
        pos += item.size


def batch_at(buf: Buffer, pos: int, end: int, base_position: int) -> Batch | BatchProblem:
    """The batch starting at ``pos``, or what is wrong there."""
    at = base_position + pos
    remaining = end - pos
    if (remaining < HEADER_SIZE or buf[pos + 16] != MAGIC) and buf.count(0, pos, end) == remaining:
        return BatchProblem(
            at,
            f"{remaining} bytes of zero padding from position {at} to the end",
            remaining,
            PADDING,
        )
    if remaining < HEADER_SIZE:
        return _tail_or_garbage(
            buf, pos, end, base_position,
            f"only {remaining} bytes left at position {at}, less than a batch header",
        )  # fmt: skip
    base_offset, batch_length, _epoch, magic, crc = HEADER.unpack_from(buf, pos)[:5]
    size = LOG_OVERHEAD + batch_length
    if (
        magic != MAGIC
        or base_offset < 0
        or not HEADER_SIZE - LOG_OVERHEAD <= batch_length <= MAX_BATCH_BYTES
    ):
        return _garbage(
            buf, pos, end, base_position, _header_complaint(at, base_offset, batch_length, magic)
        )
    if size > remaining:
        return _tail_or_garbage(
            buf, pos, end, base_position,
            f"batch at position {at} declares {size} bytes but only {remaining} remain",
        )  # fmt: skip
    actual_crc = crc32c(memoryview(buf)[pos + CRC_START : pos + size])
    if actual_crc != crc:
        reason = (
            f"CRC mismatch in batch at position {at} (base offset {base_offset}): "
            f"stored {crc:#010x}, computed {actual_crc:#010x}"
        )
        if pos + size == end or _plausible_batch_at(buf, pos + size, end):
            excerpt = bytes(buf[pos : pos + _RAW_EXCERPT])
            return BatchProblem(at, f"{reason}; batch skipped", size, CRC_MISMATCH, excerpt)
        # The length itself may be what is corrupt: do not trust it to skip.
        return _garbage(buf, pos, end, base_position, reason)
    return _parse_header(buf, pos, size, base_position)


def _header_complaint(at: int, base_offset: int, batch_length: int, magic: int) -> str:
    if magic != MAGIC:
        return f"bad magic {magic} (expected {MAGIC}) in batch header at position {at}"
    if base_offset < 0:
        return f"negative base offset {base_offset} in batch header at position {at}"
    return f"impossible batch length {batch_length} in batch header at position {at}"


def _parse_header(buf: Buffer, pos: int, size: int, base_position: int) -> Batch | BatchProblem:
    (
        base_offset,
        batch_length,
        epoch,
        _magic,
        crc,
        attributes,
        last_offset_delta,
        base_ts,
        max_ts,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    ) = HEADER.unpack_from(buf, pos)
    start, stop = pos + HEADER_SIZE, pos + size
    at = base_position + pos
    codec = attributes & 0x07
    if codec != COMPRESSION_NONE:
        try:
            records = decompress(codec, bytes(buf[start:stop]))
        except Exception as exc:  # noqa: BLE001 - any codec failure means the same: unreadable batch
            return BatchProblem(
                at,
                f"cannot decompress {COMPRESSION_NAMES.get(codec, codec)} batch at position "
                f"{at} (base offset {base_offset}): {exc}",
                size,
                UNREADABLE,
                bytes(buf[pos : pos + _RAW_EXCERPT]),
            )
        buf, start, stop = records, 0, len(records)
    return Batch(
        at,
        base_offset,
        batch_length,
        epoch,
        crc,
        attributes,
        last_offset_delta,
        base_ts,
        max_ts,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
        buf,
        start,
        stop,
    )


def _plausible_batch_at(buf: Buffer, pos: int, end: int) -> bool:
    if pos < 0 or end - pos < HEADER_SIZE:
        return False
    base_offset, batch_length, _epoch, magic, crc = HEADER.unpack_from(buf, pos)[:5]
    size = LOG_OVERHEAD + batch_length
    return (
        magic == MAGIC
        and base_offset >= 0
        and HEADER_SIZE - LOG_OVERHEAD <= batch_length <= MAX_BATCH_BYTES
        and pos + size <= end
        and crc32c(memoryview(buf)[pos + CRC_START : pos + size]) == crc
    )


def find_next_batch(buf: Buffer, pos: int, end: int) -> int | None:
    """The next index after ``pos`` where a whole, CRC-valid batch starts."""
    magic_at = pos + 1 + 16
    while True:
        magic_at = buf.find(MAGIC, magic_at, end)
        if magic_at < 0:
            return None
        if _plausible_batch_at(buf, magic_at - 16, end):
            return magic_at - 16
        magic_at += 1


def _garbage(buf: Buffer, pos: int, end: int, base_position: int, reason: str) -> BatchProblem:
    nxt = find_next_batch(buf, pos, end)
    skipped = (nxt if nxt is not None else end) - pos
    where = (
        f"resumed at position {base_position + nxt}"
        if nxt is not None
        else "no valid batch follows"
    )
    return BatchProblem(
        base_position + pos,
        f"{reason}; skipped {skipped} bytes, {where}",
        skipped,
        GARBAGE,
        bytes(buf[pos : pos + _RAW_EXCERPT]),
    )


def _tail_or_garbage(
    buf: Buffer, pos: int, end: int, base_position: int, reason: str
) -> BatchProblem:
    """An incomplete batch at the end is a torn tail — unless a valid batch
    follows it, which makes it corruption in the middle."""
    if find_next_batch(buf, pos, end) is not None:
        return _garbage(buf, pos, end, base_position, reason)
    return BatchProblem(
        base_position + pos,
        f"{reason}: the data ends inside this batch (torn tail)",
        end - pos,
        TORN,
        bytes(buf[pos : pos + _RAW_EXCERPT]),
    )


# ---------------------------------------------------------------- compression


def decompress(codec: int, data: bytes) -> bytes:
    if codec == COMPRESSION_GZIP:
        return gzip.decompress(data)
    if codec == COMPRESSION_SNAPPY:
        return _xerial_snappy_decompress(data)
    if codec == COMPRESSION_LZ4:
        return bytes(cramjam.lz4.decompress(data))
    if codec == COMPRESSION_ZSTD:
        return bytes(cramjam.zstd.decompress(data))
    raise ValueError(f"unknown compression codec {codec}")


def compress(codec: int, data: bytes) -> bytes:
    if codec == COMPRESSION_NONE:
        return data
    if codec == COMPRESSION_GZIP:
        return gzip.compress(data, mtime=0)
    if codec == COMPRESSION_SNAPPY:
        return _xerial_snappy_compress(data)
    if codec == COMPRESSION_LZ4:
        return bytes(cramjam.lz4.compress(data))
    if codec == COMPRESSION_ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise ValueError(f"unknown compression codec {codec}")


def _xerial_snappy_decompress(data: bytes) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(data))  # a bare snappy block
    out = bytearray()
    pos = 16  # magic (8) + version (4) + compatible version (4)
    while pos < len(data):
        (block_len,) = wire.INT32.unpack_from(data, pos)
        pos += 4
        if block_len < 0 or pos + block_len > len(data):
            raise ValueError(f"snappy block of {block_len} bytes runs past the end")
        out += bytes(cramjam.snappy.decompress_raw(data[pos : pos + block_len]))
        pos += block_len
    return bytes(out)


def _xerial_snappy_compress(data: bytes, block_size: int = 32 * 1024) -> bytes:
    out = bytearray(_XERIAL_MAGIC + wire.INT32.pack(1) + wire.INT32.pack(1))
    for start in range(0, len(data), block_size):
        block = bytes(cramjam.snappy.compress_raw(data[start : start + block_size]))
        out += wire.INT32.pack(len(block)) + block
    return bytes(out)


# ---------------------------------------------------------------- records


def iter_records(batch: Batch) -> Iterator[Record]:
    """The records of a batch, values undecoded. Raises WireError on bad framing."""
    buf, pos, end = batch.buf, batch.records_start, batch.records_end
    for _ in range(batch.records_count):
        length, pos = wire.read_varint(buf, pos)
        record_end = pos + length
        if length < 0 or record_end > end:
            raise wire.WireError(f"record of {length} bytes runs past the end of its batch")
        attributes = buf[pos]
        ts_delta, pos = wire.read_varlong(buf, pos + 1)
        offset_delta, pos = wire.read_varint(buf, pos)
        key, pos = _read_bytes(buf, pos)
        value, pos = _read_bytes(buf, pos)
        header_count, pos = wire.read_varint(buf, pos)
        headers = []
        for _ in range(max(header_count, 0)):
            header_key, pos = _read_bytes(buf, pos)
            header_value, pos = _read_bytes(buf, pos)
            headers.append((header_key or b"", header_value))
        if pos != record_end:
            raise wire.WireError(
                f"record declares {length} bytes but its fields use {length + pos - record_end}"
            )
        yield Record(
            batch.base_offset + offset_delta,
            batch.base_timestamp + ts_delta,
            attributes,
            key,
            value,
            headers,
        )
        pos = record_end
    if pos != end:
        raise wire.WireError(
            f"{end - pos} bytes follow the last of the batch's {batch.records_count} records"
        )


def _read_bytes(buf: Buffer, pos: int) -> tuple[bytes | None, int]:
    length, pos = wire.read_varint(buf, pos)
    if length < 0:
        return None, pos
    if pos + length > len(buf):
        raise wire.WireError("record field runs past the end of the batch")
    return bytes(buf[pos : pos + length]), pos + length


# What decoding a record value raises on bytes Kafka would reject.
VALUE_ERRORS = (RecordDecodeError, IndexError, struct.error, UnicodeDecodeError, ValueError)


def _unfilled(type_name: str, version: int, value_len: int) -> str:
    return f"{type_name} v{version} does not fill its {value_len}-byte value"


def value_problem(position: int, offset: int, exc: BaseException) -> str:
    """The quarantine reason of a record value that does not decode."""
    return f"batch at position {position}: record at offset {offset} does not decode: {exc}"


def decode_record_value(value: bytes) -> tuple[str, int, int, dict, bytes | None]:
    """One metadata record's value (the bytes `batch_events(keep_values=True)` keeps) as
    `batch_events` decodes it: (type, version, apiKey, data, raw), raw the value for an
    UNKNOWN_RECORD only. Raises one of VALUE_ERRORS, with the same message, but for a
    value that ends before its body (in its batch the body's reads go on past it)."""
    entry = PREFIX_DECODERS.get(value[:3])
    if entry is None:
        api_key, version, type_name, data = decode_value(value)
        return type_name, version, api_key, data, (bytes(value) if type_name == UNKNOWN_RECORD else None)
    type_name, decode_body, api_key, version = entry
    try:
        data, stop = decode_body(value, 3, len(value))
    except (IndexError, struct.error) as exc:
        # read alone, a value cut short ends the buffer: say so (in its batch, the
        # reader ran on into the next record's bytes and said "does not fill")
        raise RecordDecodeError(f"{type_name} v{version} runs past the end of its "
                                f"{len(value)}-byte value ({exc})") from None
    if stop != len(value):
        raise RecordDecodeError(_unfilled(type_name, version, len(value)))
    return type_name, version, api_key, data, None


def record_frames(batch: Batch) -> Iterator[tuple[int, int, int, int]]:
    """Each record of an uncompressed (or decompressed) batch as (offset, timestamp delta,
    value start, value end) in `batch.buf`, read as Kafka frames it; keys are skipped, and
    headers, which the metadata log never has, only checked. Raises `FramingProblem` at the
    first record it cannot frame (the rest of the batch cannot be found), or after the last
    one when bytes follow it. The fast path of every reader of sound batches: the one- and
    two-byte varints, all a real log holds, are inlined."""
    buf, pos, end = batch.buf, batch.records_start, batch.records_end
    base_offset, position = batch.base_offset, batch.position
    read_varint = wire.read_varint
    offset = base_offset
    for index in range(batch.records_count):
        try:
            b = buf[pos]  # varints are zig-zag
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            elif buf[pos + 1] < 0x80:
                b = (b & 0x7F) | (buf[pos + 1] << 7)
                length = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                length, pos = read_varint(buf, pos)
            record_end = pos + length
            if length < 0 or record_end > end:
                raise wire.WireError(f"record {index} of {length} bytes runs past the end of its batch")
            pos += 1  # attributes, unused
            b = buf[pos]
            if b < 0x80:
                ts_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                ts_delta, pos = wire.read_varlong(buf, pos)
            b = buf[pos]
            if b < 0x80:
                offset = base_offset + ((b >> 1) ^ -(b & 1))
                pos += 1
            elif buf[pos + 1] < 0x80:
                b = (b & 0x7F) | (buf[pos + 1] << 7)
                offset = base_offset + ((b >> 1) ^ -(b & 1))
                pos += 2
            else:
                delta, pos = read_varint(buf, pos)
                offset = base_offset + delta
            if buf[pos] == 1:  # null key, as every metadata record has
                pos += 1
            else:
                key_len, pos = read_varint(buf, pos)
                pos += max(key_len, 0)
            b = buf[pos]
            if b < 0x80:
                value_len = (b >> 1) ^ -(b & 1)
                value_start = pos + 1
            elif buf[pos + 1] < 0x80:
                b = (b & 0x7F) | (buf[pos + 1] << 7)
                value_len = (b >> 1) ^ -(b & 1)
                value_start = pos + 2
            else:
                value_len, value_start = read_varint(buf, pos)
            value_end = value_start + value_len
            if value_len < 0 or value_end > record_end:
                raise wire.WireError(f"record {index} has a value of {value_len} bytes that does not fit")
            if value_end + 1 != record_end or buf[value_end] != 0:
                _skip_headers(buf, value_end, record_end)
        except (IndexError, wire.WireError) as exc:
            raise FramingProblem(
                f"batch at position {position} (base offset {base_offset}): record {index} is "
                f"malformed ({exc}); rest of batch skipped",
                bytes(buf[pos : pos + _RAW_EXCERPT]), offset) from None
        yield offset, ts_delta, value_start, value_end
        pos = record_end
    if pos != end:
        raise FramingProblem(f"batch at position {position}: {end - pos} bytes follow "
                             f"its {batch.records_count} records", b"",
                             base_offset + batch.last_offset_delta)


def decode_framed(buf: Buffer, value_start: int, value_end: int
                  ) -> tuple[str, int, int, dict[str, Any]]:
    """The value at buf[value_start:value_end] decoded: (type name, version, apiKey, data).
    Raises one of VALUE_ERRORS on bytes Kafka would reject."""
    # (a bytearray's slice is no key: a TypeError, compiled or not)
    entry = PREFIX_DECODERS.get(buf[value_start : value_start + 3])  # type: ignore[arg-type]
    if entry is None:  # a long prefix, an unknown type or version
        api_key, version, type_name, data = decode_value(buf, value_start, value_end)
        return type_name, version, api_key, data
    type_name, decode_body, api_key, version = entry
    data, stop = decode_body(buf, value_start + 3, value_end)
    if stop != value_end:
        raise RecordDecodeError(_unfilled(type_name, version, value_end - value_start))
    return type_name, version, api_key, data


def batch_events(batch: Batch, cluster_id: str, source: str, keep_values: bool = False
                 ) -> list[MetadataEvent | Quarantined]:
    """Decode every record of a batch into events; bad records become Quarantined.
    `keep_values`: every metadata record's event keeps its value bytes in `raw` (the
    Spark sources send those instead of the decoded data; `decode_record_value` reads
    them back)."""
    if batch.is_control:
        return _control_events(batch, cluster_id, source)
    base_offset, base_ts, position = batch.base_offset, batch.base_timestamp, batch.position
    leader_epoch = batch.leader_epoch
    last_offset = base_offset + batch.last_offset_delta
    buf = batch.buf
    out: list[MetadataEvent | Quarantined] = []
    append = out.append
    try:
        for offset, ts_delta, value_start, value_end in record_frames(batch):
            try:
                type_name, version, api_key, data = decode_framed(buf, value_start, value_end)
            except VALUE_ERRORS as exc:
                append(Quarantined(cluster_id, source, position, value_problem(position, offset, exc),
                                   bytes(buf[value_start:value_end][:256]), offset))
                continue
            raw = (bytes(buf[value_start:value_end])
                   if keep_values or type_name == UNKNOWN_RECORD else None)
            append(MetadataEvent(cluster_id, source, position, offset, base_offset, last_offset,
                                 base_ts + ts_delta, KIND_RECORD, type_name, version, data, api_key,
                                 raw, leader_epoch))
    except FramingProblem as problem:
        append(Quarantined(cluster_id, source, position, problem.reason, problem.raw, problem.offset))
    return out


# A batch of one NoOpRecord (what an idle controller writes every
# metadata.max.idle.interval.ms, most of a real log), its records section as
# Kafka writes it: length 10, attributes 0, timestamp and offset delta 0, null
# key, a 4-byte value (frame 1, apiKey 20, version 0, no tagged fields), no headers.
NOOP_RECORDS = b"\x14\x00\x00\x00\x01\x08\x01\x14\x00\x00\x00"
NOOP_VALUE = NOOP_RECORDS[6:10]  # frame 1, apiKey 20, version 0, no tagged fields
NOOP_BATCH_SIZE = HEADER_SIZE + len(NOOP_RECORDS)
RECORDS_COUNT_AT = 57  # the records count's place in a batch header
NOOP_COUNT_AND_RECORDS = b"\x00\x00\x00\x01" + NOOP_RECORDS  # from the records count on
# HEADER's first eight fields (to the base timestamp): all iter_events reads of a header
_HEADER_HEAD = struct.Struct(HEADER.format[:9])
_BASE_TIMESTAMP = struct.Struct(">q")
BASE_TIMESTAMP_AT = 27  # its place in the header
_NOOP_API_KEY = 20


@dataclass(slots=True)
class NoOpRun:
    """Batches of one NoOpRecord each, next to each other in a file at consecutive offsets and
    in one Raft epoch: what `iter_events(noop_runs=True)` gives for two or more of them
    instead of an event each (an idle controller writes little else). `events()` gives the
    events the reader gives without runs; `count` records, one a batch, each counted."""

    cluster_id: str
    source: str
    buf: Buffer  # the file's bytes: the run's batches are read from it again only when expanded
    position: int  # of its first batch; the others follow, NOOP_BATCH_SIZE bytes each
    first_offset: int
    count: int
    leader_epoch: int
    max_timestamp_ms: int

    @property
    def last_offset(self) -> int:
        return self.first_offset + self.count - 1

    def event(self, index: int) -> MetadataEvent:
        """The event of its index-th batch."""
        position, offset = self.position + index * NOOP_BATCH_SIZE, self.first_offset + index
        timestamp = _BASE_TIMESTAMP.unpack_from(self.buf, position + BASE_TIMESTAMP_AT)[0]
        return MetadataEvent(self.cluster_id, self.source, position, offset, offset, offset, timestamp,
                             KIND_RECORD, "NO_OP_RECORD", 0, {}, _NOOP_API_KEY, None, self.leader_epoch)

    def events(self) -> Iterator[MetadataEvent]:
        return (self.event(i) for i in range(self.count))


def iter_events(buf: Buffer, cluster_id: str, source: str, noop_runs: bool = False
                ) -> Iterator[MetadataEvent | Quarantined | NoOpRun]:
    """The events of a whole file's bytes: what `iter_batches` and `batch_events` give,
    in one loop. A sound uncompressed batch (magic, length, CRC checked as
    `iter_batches` checks them) needs no Batch walk of its own; a batch of one NoOpRecord
    is recognised from its bytes and gives its event without decoding anything.
    `noop_runs`: two or more such batches in a row (consecutive offsets, one Raft epoch)
    come as one `NoOpRun`, for a reader that counts them without an event each."""
    end = len(buf)
    view = memoryview(buf)
    unpack = _HEADER_HEAD.unpack_from
    pos = 0
    run_count = run_next = run_epoch = run_max = run_pos = 0  # the NoOp run being read
    while pos < end:
        sound = noop = False
        if end - pos >= HEADER_SIZE:
            base_offset, batch_length, epoch, magic, crc, attributes, last_delta, base_ts = unpack(
                buf, pos)
            size = LOG_OVERHEAD + batch_length
            sound = (
                magic == MAGIC
                and base_offset >= 0
                and HEADER_SIZE - LOG_OVERHEAD <= batch_length <= MAX_BATCH_BYTES
                and pos + size <= end
                and not attributes & 0x07  # compressed batches take the general path
                and crc32c(view[pos + CRC_START : pos + size]) == crc
            )
            noop = (sound and size == NOOP_BATCH_SIZE and not attributes & ATTR_CONTROL
                    and buf.startswith(NOOP_COUNT_AND_RECORDS, pos + RECORDS_COUNT_AT))  # count 1, the NoOp
        runs_on = noop and noop_runs and not last_delta
        if runs_on and run_count and base_offset == run_next and epoch == run_epoch:
            run_count += 1
            run_next += 1
            if base_ts > run_max:
                run_max = base_ts
            pos += size
            continue
        if run_count:  # anything else ends the run
            yield _run(cluster_id, source, buf, run_pos, run_next, run_count, run_epoch, run_max)
            run_count = 0
        if runs_on:
            run_count, run_next, run_epoch, run_max, run_pos = 1, base_offset + 1, epoch, base_ts, pos
        elif noop:
            yield MetadataEvent(cluster_id, source, pos, base_offset, base_offset,
                                base_offset + last_delta, base_ts, KIND_RECORD,
                                "NO_OP_RECORD", 0, {}, _NOOP_API_KEY, None, epoch)
        elif sound:
            # sound and uncompressed: its header parses to a Batch
            yield from batch_events(cast(Batch, _parse_header(buf, pos, size, 0)), cluster_id, source)
        else:
            items, size, torn = items_at(buf, pos, cluster_id, source)
            yield from items
            if torn:
                return
        pos += size
    if run_count:
        yield _run(cluster_id, source, buf, run_pos, run_next, run_count, run_epoch, run_max)


def noop_run_length(buf: Buffer, pos: int, end: int, limit: int) -> tuple[int, int, int]:
    """(count, first offset, Raft epoch) of the batches of one NoOpRecord from buf[pos] on,
    at consecutive offsets in one epoch, at most `limit` of them: sound, uncompressed and
    not control, their record the 4 bytes controllers write (what `iter_events` takes for a
    NoOp batch); count 0 when the batch at pos is not one. For the readers that take such a
    run whole, without a Batch for each of its batches."""
    view = memoryview(buf)
    unpack = _HEADER_HEAD.unpack_from
    count = first = run_epoch = 0
    while count < limit and end - pos >= NOOP_BATCH_SIZE:
        base_offset, batch_length, epoch, magic, crc, attributes, last_delta, _ts = unpack(buf, pos)
        if (batch_length != NOOP_BATCH_SIZE - LOG_OVERHEAD or magic != MAGIC or base_offset < 0
                or attributes & (0x07 | ATTR_CONTROL) or last_delta
                or (count and (base_offset != first + count or epoch != run_epoch))
                or not buf.startswith(NOOP_COUNT_AND_RECORDS, pos + RECORDS_COUNT_AT)
                or crc32c(view[pos + CRC_START : pos + NOOP_BATCH_SIZE]) != crc):
            break
        if not count:
            first, run_epoch = base_offset, epoch
        count += 1
        pos += NOOP_BATCH_SIZE
    return count, first, run_epoch


def items_at(buf: Buffer, pos: int, cluster_id: str, source: str
             ) -> tuple[list[MetadataEvent | Quarantined], int, bool]:
    """The batch at buf[pos] read the general way, every framing check made and said: its
    events (or its problem's quarantine row), its size, and whether it is the torn tail
    (nothing after it can be read). Where the fast readers send what they do not take."""
    item = batch_at(buf, pos, len(buf), 0)
    if isinstance(item, Batch):
        return batch_events(item, cluster_id, source), item.size, False
    return [problem_to_quarantined(item, cluster_id, source)], item.size, item.at_tail


def _run(cluster_id: str, source: str, buf: Buffer, position: int, next_offset: int, count: int,
         epoch: int, max_ts: int) -> NoOpRun | MetadataEvent:
    """A run read by iter_events; a run of one is its event."""
    run = NoOpRun(cluster_id, source, buf, position, next_offset - count, count, epoch, max_ts)
    return run if count > 1 else run.event(0)


def _skip_headers(buf: Buffer, pos: int, end: int) -> None:
    count, pos = wire.read_varint(buf, pos)
    for _ in range(max(count, 0)):
        for _part in range(2):
            length, pos = wire.read_varint(buf, pos)
            pos += max(length, 0)
    if pos != end:
        raise wire.WireError("record headers do not fill the record")


def _control_events(
    batch: Batch, cluster_id: str, source: str
) -> list[MetadataEvent | Quarantined]:
    out: list[MetadataEvent | Quarantined] = []
    last_offset = batch.last_offset
    try:
        records = list(iter_records(batch))
    except (IndexError, wire.WireError) as exc:
        return [
            Quarantined(
                cluster_id,
                source,
                batch.position,
                f"control batch at position {batch.position} "
                f"(base offset {batch.base_offset}) is malformed: {exc}",
                b"",
                batch.base_offset,
            )
        ]
    for record in records:
        try:
            if record.key is None or len(record.key) < 4:
                raise RecordDecodeError("control record key is shorter than 4 bytes")
            control_type = wire.INT16.unpack_from(record.key, 2)[0]
            type_name, version, data = decode_control(control_type, record.value or b"")
        except (RecordDecodeError, struct.error) as exc:
            out.append(
                Quarantined(
                    cluster_id,
                    source,
                    batch.position,
                    f"control record at offset {record.offset} "
                    f"(batch at position {batch.position}) does not decode: {exc}",
                    (record.value or b"")[:256],
                    record.offset,
                )
            )
            continue
        out.append(
            MetadataEvent(
                cluster_id,
                source,
                batch.position,
                record.offset,
                batch.base_offset,
                last_offset,
                record.timestamp_ms,
                KIND_CONTROL,
                type_name,
                version,
                data,
                leader_epoch=batch.leader_epoch,
            )
        )
    return out


def problem_to_quarantined(problem: BatchProblem, cluster_id: str, source: str) -> Quarantined:
    return Quarantined(
        cluster_id, source, problem.position, f"{source}: {problem.reason}", problem.raw
    )


# ---------------------------------------------------------------- encoding


def encode_record(
    offset_delta: int,
    value: bytes | None,
    key: bytes | None = None,
    timestamp_delta: int = 0,
    headers: Sequence[tuple[bytes, bytes | None]] = (),
) -> bytes:
    body = bytearray(b"\x00")  # attributes
    body += wire.write_varlong(timestamp_delta)
    body += wire.write_varint(offset_delta)
    for part in (key, value):
        if part is None:
            body += wire.write_varint(-1)
        else:
            body += wire.write_varint(len(part)) + part
    body += wire.write_varint(len(headers))
    for header_key, header_value in headers:
        body += wire.write_varint(len(header_key)) + header_key
        body += (
            wire.write_varint(-1)
            if header_value is None
            else wire.write_varint(len(header_value)) + header_value
        )
    return wire.write_varint(len(body)) + bytes(body)


def encode_batch(
    base_offset: int,
    values: list[bytes],
    timestamp_ms: int,
    leader_epoch: int,
    *,
    control: bool = False,
    keys: list[bytes | None] | None = None,
    compression: int = COMPRESSION_NONE,
    timestamp_deltas: list[int] | None = None,
    max_timestamp_ms: int | None = None,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
) -> bytes:
    """A record batch v2 with a correct CRC-32C.

    The defaults are what Kafka's Raft BatchBuilder writes for the metadata
    log: null keys, no headers, timestampDelta 0, producerId/epoch/sequence
    -1, maxTimestamp = baseTimestamp = the append time.
    """
    if not values:
        raise ValueError("a batch needs at least one record")
    deltas = timestamp_deltas or [0] * len(values)
    record_keys = keys or [None] * len(values)
    records = b"".join(
        encode_record(i, value, record_keys[i], deltas[i]) for i, value in enumerate(values)
    )
    records = compress(compression, records)
    attributes = (
        compression
        | (ATTR_TRANSACTIONAL if transactional else 0)
        | (ATTR_CONTROL if control else 0)
    )
    max_ts = timestamp_ms + max(deltas) if max_timestamp_ms is None else max_timestamp_ms
    after_crc = (
        struct.pack(
            ">hiqqqhii",
            attributes,
            len(values) - 1,
            timestamp_ms,
            max_ts,
            producer_id,
            producer_epoch,
            base_sequence,
            len(values),
        )
        + records
    )
    crc = crc32c(after_crc)
    batch_length = HEADER_SIZE - LOG_OVERHEAD + len(records)
    return struct.pack(">qiibI", base_offset, batch_length, leader_epoch, MAGIC, crc) + after_crc
