"""`kraft-audit check PATH`: audit a metadata log single-process and print the findings,
the conditions still open at the end, and the cluster gauges.

PATH is a log dir, a segment, a snapshot or a kafka-dump-log output file. Broker
registration requests (JSON lines) and a `kafka-log-dirs --describe` JSON can be
added to check clean-shutdown handling (KIP-966) and stray replicas (KIP-550).
Exit status: 0 when no rule fired, 1 when one did, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Iterator

from kraft_audit.audit import Auditor
from kraft_audit.cli.dump import read_path
from kraft_audit.cli.main import UsageError
from kraft_audit.events import (BROKER_LOG_DIRS, BROKER_REGISTRATION_REQUEST, KIND_LOG_DIRS,
                                KIND_REGISTRATION, MetadataEvent)
from kraft_audit.rules import CatalogError, load_catalog


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="PATH",
                        help="log dir, segment, snapshot or kafka-dump-log output file")
    parser.add_argument("--rules", metavar="DIR", help="rule catalog directory (default: the shipped rules/)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--min-isr-default", type=int, metavar="N", default=1,
                        help="min.insync.replicas when no topic or cluster config sets it (default 1)")
    parser.add_argument("--registrations", metavar="FILE",
                        help="broker registration requests, JSON lines of {brokerId, incarnationId, "
                             "previousBrokerEpoch, timestampMs[, requestVersion]}")
    parser.add_argument("--log-dirs", metavar="FILE", help="kafka-log-dirs --describe JSON output")
    parser.add_argument("--cluster-id", help="cluster id (default: from meta.properties)")


def run(args: argparse.Namespace) -> int:
    if args.min_isr_default < 1:
        raise UsageError("--min-isr-default must be at least 1")
    try:
        catalog = load_catalog(args.rules)
    except CatalogError as exc:
        raise UsageError(str(exc)) from None
    auditor = Auditor(catalog, {"min_insync_replicas_default": args.min_isr_default})
    out = auditor.process(read_path(Path(args.path), args.cluster_id, "earliest"))
    cluster_id = auditor.cluster_id or args.cluster_id or ""
    side = list(side_inputs(args, cluster_id, auditor.clock_ms))
    if side:
        more = auditor.process(side)
        out.violations += more.violations
        out.quarantined += more.quarantined
    report = {
        "cluster_id": cluster_id,
        "records": {"applied": auditor.applied, "duplicates": auditor.duplicates,
                    "quarantined": auditor.quarantined, "last_offset": auditor.last_offset},
        "findings": [asdict(v) for v in out.violations],
        "open_conditions": [asdict(c) for c in auditor.open_conditions()],
        "gauges": asdict(auditor.gauges(cluster_id)),
        "quarantined": [{"source": q.source, "position": q.position, "offset": q.offset,
                         "reason": q.reason} for q in out.quarantined],
    }
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print_report(report)
    return 1 if out.violations else 0


def side_inputs(args, cluster_id: str, now_ms: int) -> Iterator[MetadataEvent]:
    if args.registrations:
        for number, line in enumerate(_read(args.registrations).splitlines(), 1):
            if line.strip():
                data = _json(line, args.registrations, number)
                yield MetadataEvent(cluster_id, args.registrations, number, -1, -1, -1,
                                    int(data.get("timestampMs") or now_ms), KIND_REGISTRATION,
                                    BROKER_REGISTRATION_REQUEST, 0, data)
    if args.log_dirs:
        doc = _json(_read(args.log_dirs), args.log_dirs, 1)
        for number, broker in enumerate(doc.get("brokers") or [], 1):
            yield MetadataEvent(cluster_id, args.log_dirs, number, -1, -1, -1, now_ms, KIND_LOG_DIRS,
                                BROKER_LOG_DIRS, 0,
                                {"brokerId": broker.get("broker"), "logDirs": broker.get("logDirs") or []})


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None


def _json(text: str, path: str, line: int):
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}:{line}: not JSON: {exc.msg}") from None
    if not isinstance(value, dict):
        raise UsageError(f"{path}:{line}: expected a JSON object")
    return value


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
              f"since offset {c['start_offset']}")
    print("\ngauges:")
    for name, value in report["gauges"].items():
        if name != "cluster_id":
            print(f"  {name:<34} {value}")
    for q in report["quarantined"]:
        print(f"quarantined: {q['source']} position {q['position']}: {q['reason']}", file=sys.stderr)
