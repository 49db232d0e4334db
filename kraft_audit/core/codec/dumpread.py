"""`kraft-audit dump`'s reader of a segment's or snapshot's bytes: `iter_dump` gives
what `iter_events` gives, but a run of batches whose records are all what Kafka writes
comes as one `DumpChunk` holding dump's lines, written straight from the value bytes by
the line writers (codec/dumpjson.py: no dict, no event). Every other batch (control,
compressed, damaged, torn, with a key or headers, an unknown record, a value the decoder
rejects) gives the events iter_events gives, from the same functions. A chunk expanded
gives iter_events's events; tests hold the two, and a chunk's text to the lines
json.dumps gives of its events.

Apart from dumpjson so that a reader that takes no chunks (`check`, the Spark sources)
does not compile dump's writers: they are imported on the first file read.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from dataclasses import dataclass

from crc32c import crc32c

from kraft_audit.core.codec.batches import (
    ATTR_CONTROL,
    CRC_START,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    MAX_BATCH_BYTES,
    NOOP_BATCH_SIZE,
    NOOP_COUNT_AND_RECORDS,
    NOOP_VALUE,
    RECORDS_COUNT_AT,
    VALUE_ERRORS,
    batch_events,
    items_at,
    iter_batches,
)
from kraft_audit.core.events import MetadataEvent, Quarantined

CHUNK_RECORDS = 512  # a DumpChunk ends with the batch that brings it to this many records
_COUNT = struct.Struct(">i")


@dataclass(slots=True)
class DumpChunk:
    """Batches next to each other in a file whose records all take dump's line writers,
    at consecutive offsets (a batch's records at its base offset + 0, 1, ...): what
    `iter_dump` gives for them instead of their events, with `dump`'s lines already
    written. `events()` gives the events `iter_events` gives for the same bytes."""

    cluster_id: str
    source: str
    buf: bytes  # the file's bytes: the batches are read again only when expanded
    position: int  # of the first batch
    end: int  # after the last
    first_offset: int
    count: int  # records, one line each
    text: str  # the lines

    @property
    def last_offset(self) -> int:
        return self.first_offset + self.count - 1

    def events(self) -> Iterator[MetadataEvent]:
        for batch in iter_batches(self.buf, self.position, self.end):
            yield from batch_events(batch, self.cluster_id, self.source)  # type: ignore[arg-type,misc]


def _record_lines(buf: bytes, pos: int, end: int, count: int, base_offset: int, base_ts: int,
                  mid: str, tail: str, writers: dict) -> list[str] | None:
    """The lines of a sound uncompressed batch's records (its records section at
    buf[pos:end]), or None when anything in it is not what Kafka writes (a key, headers, an
    offset delta out of order, a long varint, an unknown record, bytes the decoder rejects):
    the batch is then read by `batch_events`, which says what is wrong."""
    out = []
    try:
        for index in range(count):
            # record_frames' framing, stricter: anything but the one- and two-byte varints
            # a real log holds sends the batch to batch_events
            b = buf[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            elif buf[pos + 1] < 0x80:
                b = (b & 0x7F) | (buf[pos + 1] << 7)
                length = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                return None
            record_end = pos + length
            if length < 0 or record_end > end:
                return None
            b = buf[pos + 1]  # after the attributes: the timestamp delta
            if b >= 0x80:
                return None
            ts = base_ts + ((b >> 1) ^ -(b & 1))
            b = buf[pos + 2]  # the offset delta: the record's index
            if b < 0x80:
                delta = (b >> 1) ^ -(b & 1)
                pos += 3
            elif buf[pos + 3] < 0x80:
                b = (b & 0x7F) | (buf[pos + 3] << 7)
                delta = (b >> 1) ^ -(b & 1)
                pos += 4
            else:
                return None
            if delta != index or buf[pos] != 1:  # 1: a null key
                return None
            b = buf[pos + 1]
            if b < 0x80:
                value_len = (b >> 1) ^ -(b & 1)
                value_start = pos + 2
            elif buf[pos + 2] < 0x80:
                b = (b & 0x7F) | (buf[pos + 2] << 7)
                value_len = (b >> 1) ^ -(b & 1)
                value_start = pos + 3
            else:
                return None
            value_end = value_start + value_len
            if value_len < 0 or value_end + 1 != record_end or buf[value_end] != 0:  # 0: no headers
                return None
            write = writers.get(buf[value_start : value_start + 3])
            if write is None:
                return None
            text, stop = write(buf, value_start + 3, value_end)
            if stop != value_end:
                return None
            out.append(f'{{"offset":{base_offset + index}{mid}{ts},{text}{tail}')
            pos = record_end
    except VALUE_ERRORS:
        return None
    return out if pos == end else None


def iter_dump(buf: bytes, cluster_id: str, source: str
              ) -> Iterator[DumpChunk | MetadataEvent | Quarantined]:
    """What `iter_events` gives for a whole file's bytes, but runs of batches whose records
    all take the line writers come as `DumpChunk`s (their events expanded: exactly
    iter_events's). Every other batch (control, compressed, damaged, torn, with a record
    the writers do not take) gives what iter_events gives, from the same functions."""
    from kraft_audit.core.codec.dumpjson import LINE_WRITERS as writers

    noop_text = writers[NOOP_VALUE[:3]](NOOP_VALUE, 3, len(NOOP_VALUE))[0]
    end = len(buf)
    view = memoryview(buf)
    unpack = HEADER.unpack_from
    src = f',"source":{json.dumps(source)},"position":'
    lines: list[str] = []
    chunk_pos = chunk_first = next_offset = 0
    pos = 0
    while pos < end:
        if end - pos >= HEADER_SIZE:
            base_offset, batch_length, _epoch, magic, crc, attributes, last_delta, base_ts = unpack(
                buf, pos)[:8]
            size = LOG_OVERHEAD + batch_length
            if (
                magic == MAGIC
                and base_offset >= 0
                and HEADER_SIZE - LOG_OVERHEAD <= batch_length <= MAX_BATCH_BYTES
                and pos + size <= end
                and not attributes & (0x07 | ATTR_CONTROL)  # compressed, control: iter_events's
                and crc32c(view[pos + CRC_START : pos + size]) == crc
            ):
                mid = (f',"batchBaseOffset":{base_offset},'
                       f'"batchLastOffset":{base_offset + last_delta},"timestampMs":')
                tail = f'{src}{pos}}}\n'
                if size == NOOP_BATCH_SIZE and buf.startswith(NOOP_COUNT_AND_RECORDS,
                                                               pos + RECORDS_COUNT_AT):
                    batch_lines: list[str] | None = [
                        f'{{"offset":{base_offset}{mid}{base_ts},{noop_text}{tail}']
                else:
                    batch_lines = _record_lines(buf, pos + HEADER_SIZE, pos + size,
                                                _COUNT.unpack_from(buf, pos + RECORDS_COUNT_AT)[0],
                                                base_offset, base_ts, mid, tail, writers)
                if batch_lines:
                    if lines and (base_offset != next_offset or len(lines) >= CHUNK_RECORDS):
                        yield DumpChunk(cluster_id, source, buf, chunk_pos, pos, chunk_first,
                                        len(lines), "".join(lines))
                        lines = []
                    if not lines:
                        chunk_pos, chunk_first = pos, base_offset
                    lines += batch_lines
                    next_offset = base_offset + len(batch_lines)
                    pos += size
                    continue
        if lines:
            yield DumpChunk(cluster_id, source, buf, chunk_pos, pos, chunk_first, len(lines),
                            "".join(lines))
            lines = []
        items, size, torn = items_at(buf, pos, cluster_id, source)  # as iter_events takes it
        yield from items
        if torn:
            return
        pos += size
    if lines:
        yield DumpChunk(cluster_id, source, buf, chunk_pos, pos, chunk_first, len(lines),
                        "".join(lines))
