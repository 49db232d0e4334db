"""`kraft-audit dump PATH`: every record of a metadata log as one JSON object
per line — kafka-dump-log's payload (type, version, data without tagged
defaults) plus where it sits (offset, batch limits, time, file, position).

PATH may be a log dir (a data dir or its `__cluster_metadata-0`), one
segment (.log), one snapshot (.checkpoint, bootstrap.checkpoint included)
or a kafka-dump-log output file. Unusable input inside PATH is reported on
stderr with its position and the reason, and dumping goes on; when no record
at all could be read (or none lies in --offsets) it exits 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from kraft_audit.cli.log_input import Tally, is_binary, read_path
from kraft_audit.cli.main import UsageError
from kraft_audit.config import KEYS
from kraft_audit.core.codec.dumpjson import DATA_WRITERS, PAYLOAD_HEADS
from kraft_audit.core.codec.dumpread import DumpChunk
from kraft_audit.core.codec.dumplog import to_dump_json
from kraft_audit.core.collector import collector_paused
from kraft_audit.core.events import KIND_RECORD, MetadataEvent, Quarantined

_CHUNK = 512  # lines written to stdout at once


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
        choices=KEYS["sources.starting_position"].choices,
        default=KEYS["sources.starting_position"].default,
        help="for a log dir: read from the first segment, or boot from the newest snapshot",
    )
    parser.add_argument(
        "--cluster-id", help="cluster id to stamp on events (default: from meta.properties)"
    )


def run(args: argparse.Namespace) -> int:
    # every record's objects are freed as its line is written: the collector would only walk them
    with collector_paused():
        return _dump(args)


def _dump(args: argparse.Namespace) -> int:
    low, high = parse_offsets(args.offsets)
    out = sys.stdout
    tally = Tally(args.path)
    written = 0
    # Runs of batches read from bytes whose records the line writers all take come as
    # their lines, written from the bytes (DumpChunk: no event, no dict; codec/dumpjson.py).
    events = read_path(Path(args.path), args.cluster_id, args.start, dump_chunks=True)
    # Records decoded from bytes hold exactly the schema's types: their line is
    # written by the compiled writers; anything else by json.dumps (same bytes).
    writers = DATA_WRITERS if is_binary(Path(args.path)) else {}
    sources: dict[str, str] = {}
    lines: list[str] = []
    for item in _within(tally.count(events), low, high):
        if type(item) is DumpChunk:
            out.write("".join(lines))
            lines.clear()
            out.write(item.text)
            written += item.count
            continue
        if isinstance(item, Quarantined):
            out.write("".join(lines))
            lines.clear()
            out.flush()
            offset = f" offset {item.offset}" if item.offset >= 0 else ""
            print(
                f"quarantined: {item.source} position {item.position}{offset}: {item.reason}",
                file=sys.stderr,
            )
            continue
        if not low <= item.offset <= high:
            continue
        key = (item.type, item.version)
        write = writers.get(key) if item.kind == KIND_RECORD else None
        if write is None:
            lines.append(json.dumps(event_json(item), separators=(",", ":")) + "\n")
        else:
            source = sources.get(item.source)
            if source is None:
                source = sources[item.source] = json.dumps(item.source)
            lines.append(
                f'{{"offset":{item.offset},"batchBaseOffset":{item.batch_base_offset},'
                f'"batchLastOffset":{item.batch_last_offset},"timestampMs":{item.timestamp_ms},'
                f'{PAYLOAD_HEADS[key]}{write(item.data)},"source":{source},'
                f'"position":{item.position}}}\n'
            )
        written += 1
        if len(lines) >= _CHUNK:
            out.write("".join(lines))
            lines.clear()
    out.write("".join(lines))
    tally.require_records()
    if not written:
        raise UsageError(f"no record in offsets {args.offsets} (the log holds "
                         f"{tally.first_offset}..{tally.last_offset})")
    return 0


def _within(items: Iterable[MetadataEvent | Quarantined | DumpChunk], low: int, high: int
            ) -> Iterator[MetadataEvent | Quarantined | DumpChunk]:
    """The items, a DumpChunk only when all its offsets are in low..high: one partly in
    them as its events, one outside them not at all."""
    for item in items:
        if type(item) is DumpChunk and not (low <= item.first_offset and item.last_offset <= high):
            if item.last_offset >= low and item.first_offset <= high:
                yield from item.events()
            continue
        yield item


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
