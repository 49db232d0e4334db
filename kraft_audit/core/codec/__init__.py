"""The KRaft metadata log format, pure Python.

- `schemas`: every metadata record type and version, and the Raft control records
- `wire`: varints, zig-zag varints, big-endian integers, uuids
- `records`: record values (`decode_value`, `encode_value`, control bodies)
- `batches`: record batch v2, CRC-32C, compression, batches → events
- `keyrows`: the Spark sources' rows from a batch's bytes, values undecoded
- `logdir`: segments, snapshots, meta.properties, the resumable segment read, the writer
- `dumplog`: kafka-dump-log output in and out
"""

from kraft_audit.core.codec.dumplog import format_dump_log, parse_dump_log, to_dump_json
from kraft_audit.core.codec.logdir import (
    LogDirWriter,
    SegmentRead,
    read_log_dir,
    read_meta_properties,
    read_segment,
)
from kraft_audit.core.codec.records import RecordDecodeError, decode_value, encode_value

__all__ = [
    "LogDirWriter",
    "RecordDecodeError",
    "SegmentRead",
    "decode_value",
    "encode_value",
    "format_dump_log",
    "parse_dump_log",
    "read_log_dir",
    "read_meta_properties",
    "read_segment",
    "to_dump_json",
]
