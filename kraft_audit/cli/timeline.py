"""`kraft-audit timeline PATH --topic T --partition N --out FILE`: a picture of one
partition through the log, for an incident ticket: each replica's role (leader,
ISR, ELR, LastKnownElr, out) over offsets and time, the leader recovery state,
the condition intervals, the violations and the broker events of its replicas.

FILE ends in .png, .svg or .html (one self-contained page: the picture plus the
states, violations and broker events as tables). PATH is what `describe` and
`check` take: a log dir, a segment, a snapshot or a kafka-dump-log output file;
or, with --tables DIR, the Delta tables the streaming job wrote.

--since and --until pick the window drawn: each is a log offset (digits only) or
an ISO-8601 time (UTC unless it names a zone). The window runs from the first
record at or after --since to the last record at or before --until; the whole
log is still replayed, so the first state shown is the one in force then.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kraft_audit.cli.log_input import Tally, read_path
from kraft_audit.cli.main import UsageError
from kraft_audit.cli.static_settings import add_static_settings_arguments, static_settings
from kraft_audit.cli.views import SnapshotPlaces, iso_utc, parse_iso_utc, plural


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="PATH", nargs="?",
                        help="log dir, segment, snapshot or kafka-dump-log output file")
    parser.add_argument("--tables", metavar="DIR",
                        help="instead of PATH: the Delta tables a `kraft-audit run` wrote "
                             "(partition_history, violations, conditions; no broker events)")
    parser.add_argument("--cluster", help="with --tables: the cluster id, when several wrote there")
    parser.add_argument("--topic", required=True, help="the topic's name")
    parser.add_argument("--partition", required=True, type=int, metavar="N", help="partition index")
    parser.add_argument("--out", required=True, metavar="FILE",
                        help="picture to write: .png, .svg or .html (self-contained)")
    parser.add_argument("--rules", metavar="DIR",
                        help="rule catalog directory (default: the shipped rules/)")
    add_static_settings_arguments(parser)
    parser.add_argument("--cluster-id", help="cluster id (default: from meta.properties)")
    parser.add_argument("--since", type=bound, metavar="OFFSET|ISO8601",
                        help="draw from the first record at or after this offset or time "
                             "(e.g. 2026-11-25T09:00:00Z); default: the partition's first state")
    parser.add_argument("--until", type=bound, metavar="OFFSET|ISO8601",
                        help="draw to the last record at or before this offset or time; "
                             "default: the end of the log")


def bound(text: str):
    """--since/--until: digits are a log offset, anything else an ISO-8601 time."""
    from kraft_audit.timeline import Bound

    if text.strip().isdigit():
        return Bound(offset=int(text))
    try:
        return Bound(ms=parse_iso_utc(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{exc}, or a log offset like 7752") from None


def run(args: argparse.Namespace) -> int:
    # matplotlib is imported only here: the other commands do not pay for it
    from kraft_audit.timeline import TimelineError
    from kraft_audit.timeline_draw import FORMATS, render

    if (args.path is None) == (args.tables is None):
        raise UsageError("give either PATH (a metadata log) or --tables DIR, not both or neither")
    out = Path(args.out)
    fmt = out.suffix.lstrip(".").lower()
    if fmt not in FORMATS:
        raise UsageError(f"--out {out}: the file must end in {', '.join('.' + f for f in FORMATS)}")
    if not out.parent.is_dir():
        raise UsageError(f"--out {out}: directory {out.parent} does not exist")
    try:
        timeline = log_timeline(args) if args.tables is None else tables_timeline(args)
    except TimelineError as exc:
        raise UsageError(f"{args.path or args.tables}: {exc}") from None
    render(timeline, out, fmt)
    print(f"{out}: {args.topic}-{args.partition}, offsets {timeline.first_offset}–"
          f"{timeline.end_offset} ({iso_utc(timeline.first_timestamp_ms)} – "
          f"{iso_utc(timeline.end_timestamp_ms)}), {plural(len(timeline.states), 'state')}, "
          f"{plural(len(timeline.violations), 'violation')}, "
          f"{plural(len(timeline.shown_broker_events()), 'broker event')}")
    return 0


def windowed(args: argparse.Namespace) -> bool:
    return args.since is not None or args.until is not None


def log_timeline(args: argparse.Namespace):
    from kraft_audit.cli.check import rule_catalog
    from kraft_audit.timeline import TimelineError, WindowFinder, partition_timeline

    catalog = rule_catalog(args)
    tally = Tally(args.path)
    finder = WindowFinder(args.since, args.until)  # exact: it sees every record of the log
    # a snapshot's records are read at their positions in the file: the auditor writes its
    # rows where the snapshot ends, and the window and the log's end are placed alike
    places = SnapshotPlaces()
    try:
        events = places.watch(tally.count(read_path(Path(args.path), args.cluster_id, "earliest")))
        timeline = partition_timeline(finder.watch(events, places.place), args.topic, args.partition,
                                      catalog, static_settings(args))
        timeline.last_offset, _ = places.place(timeline.last_offset, timeline.last_timestamp_ms)
    except TimelineError:
        tally.require_records()  # nothing usable: the message every command gives
        raise
    if note := tally.partial_note():
        print(note, file=sys.stderr)
    return cut(timeline, finder, args) if windowed(args) else timeline


def tables_timeline(args: argparse.Namespace):
    from kraft_audit.questions import MissingTable
    from kraft_audit.timeline import WindowFinder, timeline_from_tables

    try:
        timeline = timeline_from_tables(args.tables, args.topic, args.partition, args.cluster)
    except MissingTable as exc:
        raise UsageError(str(exc)) from None
    if not windowed(args):
        return timeline
    # the tables hold the partition's records, not every record: the window's ends are
    # the nearest records they know
    finder = WindowFinder(args.since, args.until)
    for offset, ms in timeline.known_times():
        finder.see(offset, ms)
    return cut(timeline, finder, args)


def cut(timeline, finder, args: argparse.Namespace):
    """The timeline inside the window `finder` found; TimelineError when it holds no record."""
    from kraft_audit.timeline import TimelineError

    if finder.first is None:
        raise TimelineError(f"no record at or after --since {_said(args.since)}")
    if finder.last is None:
        raise TimelineError(f"no record at or before --until {_said(args.until)}")
    return timeline.window(finder.first, finder.last)


def _said(bound) -> str:
    return f"offset {bound.offset}" if bound.offset is not None else iso_utc(bound.ms)
