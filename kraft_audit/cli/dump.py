"""`kraft-audit dump PATH`: every record of a metadata log as one JSON object
per line — kafka-dump-log's payload (type, version, data without tagged
defaults) plus where it sits (offset, batch limits, time, file, position).

PATH may be a log dir (a data dir or its `__cluster_metadata-0`), one
segment (.log), one snapshot (.checkpoint, bootstrap.checkpoint included)
or a kafka-dump-log output file. Unusable input inside PATH is reported on
stderr with its position and the reason, and dumping goes on.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path

from kraft_audit.cli.main import UsageError
from kraft_audit.codec.batches import HEADER_SIZE, MAGIC
from kraft_audit.codec.dumplog import parse_dump_log, to_dump_json
from kraft_audit.codec.logdir import (
    list_segments,
    list_snapshots,
    read_file_events,
    read_log_dir,
    read_meta_properties,
)
from kraft_audit.events import MetadataEvent, Quarantined


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path",
        metavar="PATH",
        help="log dir, segment (.log), snapshot (.checkpoint) or kafka-dump-log output file",
    )
    parser.add_argument(
        "--offsets",
        metavar="A:B",
        help="only offsets A..B, both inclusive; either end may be left out (100: or :200)",
    )
    parser.add_argument(
        "--start",
        choices=("earliest", "snapshot"),
        default="earliest",
        help="for a log dir: read from the first segment, or boot from the newest snapshot",
    )
    parser.add_argument(
        "--cluster-id", help="cluster id to stamp on events (default: from meta.properties)"
    )


def run(args: argparse.Namespace) -> int:
    low, high = parse_offsets(args.offsets)
    out = sys.stdout
    for item in read_path(Path(args.path), args.cluster_id, args.start):
        if isinstance(item, Quarantined):
            offset = f" offset {item.offset}" if item.offset >= 0 else ""
            print(
                f"quarantined: {item.source} position {item.position}{offset}: {item.reason}",
                file=sys.stderr,
            )
        elif low <= item.offset <= high:
            out.write(json.dumps(event_json(item), separators=(",", ":")) + "\n")
    return 0


def parse_offsets(spec: str | None) -> tuple[int, int]:
    if not spec:
        return -1 << 63, 1 << 63
    low, sep, high = spec.partition(":")
    try:
        if not sep:
            raise ValueError
        bounds = (int(low) if low else -1 << 63, int(high) if high else 1 << 63)
    except ValueError:
        raise UsageError(f"--offsets wants A:B with integer offsets, not {spec!r}") from None
    if bounds[0] > bounds[1]:
        raise UsageError(f"--offsets {spec}: the first offset is after the last")
    return bounds


def event_json(event: MetadataEvent) -> dict:
    return {
        "offset": event.offset,
        "batchBaseOffset": event.batch_base_offset,
        "batchLastOffset": event.batch_last_offset,
        "timestampMs": event.timestamp_ms,
        **to_dump_json(event),
        "source": event.source,
        "position": event.position,
    }


def read_path(
    path: Path, cluster_id: str | None, start: str
) -> Iterator[MetadataEvent | Quarantined]:
    """Events of whatever PATH is; UsageError when it cannot be read at all."""
    if not path.exists():
        raise UsageError(f"{path} does not exist")
    if path.is_dir():
        if not list_segments(path) and not list_snapshots(path):
            raise UsageError(
                f"{path} holds no metadata log segments (*.log) or snapshots (*.checkpoint)"
            )
        return read_log_dir(path, cluster_id, start)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    if cluster_id is None:
        cluster_id = read_meta_properties(path.parent).get("cluster.id", "")
    if _looks_binary(data):
        return read_file_events(path, cluster_id, data)
    return parse_dump_log(
        data.decode("utf-8", errors="replace").splitlines(), cluster_id, path.name
    )


def _looks_binary(data: bytes) -> bool:
    """A segment or snapshot (even a damaged one), not kafka-dump-log text,
    whatever the file is called: text never holds NUL bytes, and a batch's
    base offset starts with several."""
    return (len(data) >= HEADER_SIZE and data[16] == MAGIC) or b"\0" in data[:4096]
