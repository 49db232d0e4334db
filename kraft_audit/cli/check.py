"""`kraft-audit check PATH`: audit a metadata log single-process and print the findings,
the conditions still open at the end, and the cluster gauges.

PATH is a log dir, a segment, a snapshot or a kafka-dump-log output file. Broker
registration requests (the controller's kafka.request.logger output or JSON lines)
and log-dir inventories (kafka-log-dirs --describe outputs, or a broker's log dir)
can be added, with the same flags as `run`, to check clean-shutdown handling
(KIP-966) and stray replicas (KIP-550).
Open conditions are measured to the newest record of the log, not the wall clock.
Exit status: 0 when no rule fired, 1 when one did, 2 on a usage error or when no
record of PATH could be used.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from kraft_audit.audit import Auditor
from kraft_audit.cli.log_input import Tally, read_path
from kraft_audit.cli.main import EXIT_FINDINGS, EXIT_OK, UsageError
from kraft_audit.cli.side_inputs import add_side_input_arguments, side_inputs
from kraft_audit.codec.logdir import metadata_dir, read_meta_properties
from kraft_audit.rules import CatalogError, load_catalog
from kraft_audit.sideinputs.order import by_time, merge_by_time


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="PATH",
                        help="log dir, segment, snapshot or kafka-dump-log output file")
    parser.add_argument("--rules", metavar="DIR", help="rule catalog directory (default: the shipped rules/)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--min-isr-default", type=int, metavar="N", default=1,
                        help="min.insync.replicas when no topic or cluster config sets it (default 1)")
    add_side_input_arguments(parser)
    # the flag's earlier name (one file), kept working for scripts
    parser.add_argument("--log-dirs", action="append", dest="log_dir_inventory", help=argparse.SUPPRESS)
    parser.add_argument("--cluster-id", help="cluster id (default: from meta.properties)")


def rule_catalog(args: argparse.Namespace):
    """The catalog named by --rules, with --min-isr-default checked (check and timeline)."""
    if args.min_isr_default < 1:
        raise UsageError("--min-isr-default must be at least 1")
    try:
        return load_catalog(args.rules)
    except CatalogError as exc:
        raise UsageError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    catalog = rule_catalog(args)
    auditor = Auditor(catalog, {"min_insync_replicas_default": args.min_isr_default})
    side = list(side_inputs(args, lambda: args.cluster_id or _log_cluster_id(args.path)))
    tally = Tally(args.path)
    # Side inputs placed in the log by their time, as the streaming job does: an
    # inventory is judged against the partitions of its time, not of the log's end.
    out = auditor.process(merge_by_time(tally.count(read_path(Path(args.path), args.cluster_id,
                                                              "earliest")), by_time(side)))
    tally.require_records()
    if auditor.last_offset < 0:  # no record of the log found its place in it
        raise UsageError(f"no record of {args.path} could be applied: all {tally.records} rejected "
                         f"(first: {out.quarantined[0].reason if out.quarantined else '-'})")
    cluster_id = auditor.cluster_id or args.cluster_id or ""
    gauges = auditor.gauges(cluster_id)
    report = {
        "cluster_id": cluster_id,
        "records": {"applied": auditor.applied, "duplicates": auditor.duplicates,
                    "quarantined": auditor.quarantined, "last_offset": auditor.last_offset},
        "findings": [asdict(v) for v in out.violations],
        # open until the newest record: the log's time, as `query` measures it
        "open_conditions": [{**asdict(c), "open_seconds": (gauges.last_timestamp_ms - c.start_ms) / 1000}
                            for c in auditor.open_conditions()],
        "gauges": asdict(gauges),
        "quarantined": [{"source": q.source, "position": q.position, "offset": q.offset,
                         "reason": q.reason} for q in out.quarantined],
    }
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print_report(report)
    return EXIT_FINDINGS if out.violations else EXIT_OK


def _log_cluster_id(path: str) -> str | None:
    """The log's cluster id (meta.properties): the cluster of side inputs that name none."""
    p = Path(path)
    return read_meta_properties(metadata_dir(p if p.is_dir() else p.parent)).get("cluster.id") or None


def duration(seconds: float) -> str:
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


def print_report(report: dict) -> None:
    records = report["records"]
    print(f"cluster {report['cluster_id'] or '-'}: {records['applied']} records applied, "
          f"{records['quarantined']} quarantined, last offset {records['last_offset']}")
    findings = report["findings"]
    print(f"\nfindings ({len(findings)}):")
    for v in findings:
        where = f"{v['topic'] or v['topic_id'] or '-'}-{v['partition']}" if v["partition"] is not None else "-"
        broker = f" broker {v['broker_id']}" if v["broker_id"] is not None else ""
        print(f"  {v['severity']:<8} {v['rule_id']:<42} offset {v['offset']:<8} {where}{broker}: "
              f"{v['message']}")
    conditions = report["open_conditions"]
    print(f"\nopen conditions ({len(conditions)}):")
    for c in conditions:
        print(f"  {c['condition']:<26} {c['topic'] or c['topic_id']}-{c['partition']} "
              f"since offset {c['start_offset']}, {duration(c['open_seconds'])} before the newest record")
    print("\ngauges:")
    for name, value in report["gauges"].items():
        if name != "cluster_id":
            print(f"  {name:<34} {value}")
    for q in report["quarantined"]:
        print(f"quarantined: {q['source']} position {q['position']}: {q['reason']}", file=sys.stderr)
