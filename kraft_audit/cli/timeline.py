"""`kraft-audit timeline PATH --topic T --partition N --out FILE`: a picture of one
partition through the log, for an incident ticket: each replica's role (leader,
ISR, ELR, LastKnownElr, out) over offsets and time, the leader recovery state,
the condition intervals, the violations and the broker events of its replicas.

FILE ends in .png, .svg or .html (one self-contained page: the picture plus the
states, violations and broker events as tables). PATH is what `describe` and
`check` take: a log dir, a segment, a snapshot or a kafka-dump-log output file;
or, with --tables DIR, the Delta tables the streaming job wrote.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from kraft_audit.cli.log_input import Tally, read_path
from kraft_audit.cli.main import UsageError


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
    parser.add_argument("--min-isr-default", type=int, metavar="N", default=1,
                        help="min.insync.replicas when no topic or cluster config sets it "
                             "(default 1)")
    parser.add_argument("--cluster-id", help="cluster id (default: from meta.properties)")


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
    print(f"{out}: {args.topic}-{args.partition}, {len(timeline.states)} states, "
          f"{len(timeline.violations)} violations, {len(timeline.broker_events)} broker events")
    return 0


def log_timeline(args: argparse.Namespace):
    from kraft_audit.cli.check import rule_catalog
    from kraft_audit.timeline import TimelineError, partition_timeline

    catalog = rule_catalog(args)
    tally = Tally(args.path)
    try:
        events = tally.count(read_path(Path(args.path), args.cluster_id, "earliest"))
        return partition_timeline(events, args.topic, args.partition, catalog,
                                  {"min_insync_replicas_default": args.min_isr_default})
    except TimelineError:
        tally.require_records()  # nothing usable: the message every command gives
        raise


def tables_timeline(args: argparse.Namespace):
    from kraft_audit.questions import MissingTable
    from kraft_audit.timeline import timeline_from_tables

    try:
        return timeline_from_tables(args.tables, args.topic, args.partition, args.cluster)
    except MissingTable as exc:
        raise UsageError(str(exc)) from None
