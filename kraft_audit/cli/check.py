"""`kraft-audit check PATH`: audit a metadata log single-process and print the findings,
the conditions still open at the end, and the cluster gauges.

PATH is a log dir, a segment, a snapshot or a kafka-dump-log output file. Broker
registration requests (the controller's kafka.request.logger output or JSON lines)
and log-dir inventories (kafka-log-dirs --describe outputs, or a broker's log dir)
can be added, with the same flags as `run`, to check clean-shutdown handling
(KIP-966) and stray replicas (KIP-550).
Times are ISO-8601 UTC; an open condition's age is given from the wall clock and
from the log's newest record. Problems are grouped by rule, condition, topic and broker.
The metadata log is a Raft log: a controller's tail can hold records the quorum never
committed (kraft_audit/core/raft.py). The audit takes what is proven committed (a quorum of
one voter, a snapshot, a later epoch's metadata, or the high watermark of a live quorum's
DescribeQuorum, `--bootstrap-controller`); the rest is audited as provisional and listed
apart, with how much of the tail is unproven. `--assume-committed` takes the whole log as
committed (a quiesced cluster whose controllers agree).
Exit status: 0 when no rule fired and no partition is offline at the end of the log,
1 when a rule fired or a partition is offline (leaderless) at the end, 2 on a usage
error or when no record of PATH could be used. Provisional findings do not change it.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import sys
from collections import Counter
from dataclasses import asdict
from pathlib import Path

from kraft_audit.core.audit import Auditor
from kraft_audit.cli.log_input import Tally, read_path
from kraft_audit.cli.static_settings import (
    add_static_settings_arguments, min_isr_given, min_isr_line, static_settings,
)
from kraft_audit.cli.views import iso_or_dash as iso, plural, since
from kraft_audit.cli.main import EXIT_FINDINGS, EXIT_OK, UsageError
from kraft_audit.cli.side_inputs import add_side_input_arguments, side_inputs
from kraft_audit.core.codec.batches import NoOpRun
from kraft_audit.core.codec.logdir import log_dir_evidence, metadata_dir, read_meta_properties
from kraft_audit.core.collector import collector_paused
from kraft_audit.core.events import MetadataEvent
from kraft_audit.core.image import verify_snapshots
from kraft_audit.core.replay.conditions import condition_bounds_seconds, past_bound
from kraft_audit.core.replay.state import SOURCE_TEXT
from kraft_audit.core.rules import CatalogError, load_catalog
from kraft_audit.sideinputs.order import by_time, merge_by_time


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="PATH",
                        help="log dir, segment, snapshot or kafka-dump-log output file")
    parser.add_argument("--rules", metavar="DIR", help="rule catalog directory (default: the shipped rules/)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--all", action="store_true",
                        help="list every finding and open condition (default: the first few of each group)")
    add_static_settings_arguments(parser)
    add_side_input_arguments(parser)
    # the flag's earlier name (one file), kept working for scripts
    parser.add_argument("--log-dirs", action="append", dest="log_dir_inventory", help=argparse.SUPPRESS)
    parser.add_argument("--cluster-id", help="cluster id (default: from meta.properties)")
    parser.add_argument("--copy", action="append", default=[], metavar="LOG_DIR",
                        help="another controller's log dir of the same cluster, read after PATH and merged "
                        "with it by offset and Raft epoch (the higher epoch wins at an offset); repeatable")
    parser.add_argument("--bootstrap-controller", action="append", default=[], metavar="HOST:PORT",
                        help="a controller listener to ask the quorum's high watermark (DescribeQuorum), "
                        "repeatable or comma-separated: the log is committed up to it where it is at the "
                        "leader's epoch")
    parser.add_argument("--assume-committed", action="store_true",
                        help="take the whole log as committed (default: what the log and the quorum prove)")


def rule_catalog(args: argparse.Namespace):
    """The catalog named by --rules, with the static config flags checked (check and timeline)."""
    static_settings(args)
    try:
        return load_catalog(args.rules)
    except CatalogError as exc:
        raise UsageError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    catalog = rule_catalog(args)
    settings = {**static_settings(args), "assume_committed": bool(getattr(args, "assume_committed", False))}
    auditor = Auditor(catalog, settings, partition_rows=False)  # the report reads no partition row
    side = list(side_inputs(args, lambda: args.cluster_id or _log_cluster_id(args.path)))
    tally = Tally(args.path)
    first: list = []  # the first record placed in the log: where the input starts
    # Side inputs placed in the log by their time, as the streaming job does: an
    # inventory is judged against the partitions of its time, not of the log's end.
    # Runs of NoOp batches read as one item each, unless side inputs are placed among them
    events = _noting_first(tally.count(read_path(Path(args.path), args.cluster_id, "earliest",
                                                 noop_runs=not side)), first)
    events = itertools.chain(_evidence(Path(args.path), args.cluster_id), events)
    if side:
        events = merge_by_time(events, by_time(side))
    copies = [Path(c) for c in args.copy]
    for copy in copies:  # after PATH: the gate merges what each holds
        if not metadata_dir(copy).is_dir():
            raise UsageError(f"--copy {copy}: not a log dir")
        events = itertools.chain(events, _evidence(copy, args.cluster_id),
                                 read_path(copy, args.cluster_id, "earliest", noop_runs=True))
    # what the audit keeps is no garbage: frozen after it, or the collector's next pass walks
    # every object of it (0.3 s of CPU at 100k partitions)
    with collector_paused(freeze_after=True):
        out = auditor.process(events)
        claimed = _quorum_claim(auditor, args)
        if claimed is not None:
            out.extend(claimed)
    tally.require_records()
    if auditor.last_offset < 0 and auditor.gate.unproven() is None:  # no record found its place
        raise UsageError(f"no record of {args.path} could be applied: all {tally.records} rejected "
                         f"(first: {out.quarantined[0].reason if out.quarantined else '-'})")
    snapshots = _compare_snapshots(auditor, out, Path(args.path), args.cluster_id)
    report = build_report(auditor, out, args.cluster_id, first[0] if first else None, min_isr_given(args))
    report["snapshots"] = snapshots
    report["commit"] = commit_report(auditor)
    report["retractions"] = [asdict(r) for r in out.retractions]
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print_report(report, every=args.all)
    gc.unfreeze()  # a caller that goes on (the tests call run in-process) collects it all again
    return EXIT_FINDINGS if report["findings"] or report["offline_partitions"] else EXIT_OK


def _evidence(path: Path, cluster_id: str | None) -> list:
    """A log dir's own word on its commit point (its newest snapshot, its quorum-state's voters)."""
    if not path.is_dir():
        return []
    meta = read_meta_properties(metadata_dir(path))
    return [log_dir_evidence(path, cluster_id or meta.get("cluster.id", ""), meta.get("node.id", ""))]


def _quorum_claim(auditor: Auditor, args: argparse.Namespace):
    """What the quorum's high watermark releases of what the log held (--bootstrap-controller);
    None when not asked. A quorum that does not answer is said on stderr: the log's own
    proofs stand."""
    addresses = [a for given in args.bootstrap_controller for a in given.split(",") if a]
    if not addresses:
        return None
    from kraft_audit.quorum import QuorumError, commit_claim, leader_status

    try:
        status = leader_status(addresses)
    except QuorumError as e:
        print(f"kraft-audit check: {e}; the log's own proofs of commit only", file=sys.stderr)
        return None
    cluster_id = auditor.cluster_id or args.cluster_id or _log_cluster_id(args.path)
    claim = commit_claim(status, cluster_id, auditor.gate.shape)
    if claim is None:
        print(f"kraft-audit check: the log is not at the quorum's epoch {status.leader_epoch} "
              f"(leader {status.leader_id}): its tail may be a deposed leader's; the log's own "
              "proofs of commit only", file=sys.stderr)
        return None
    return auditor.process([claim])


def commit_report(auditor: Auditor) -> dict:
    """Where the commit point is and what proves it; the tail not proven committed and what
    auditing it would find (provisional: not the verdict)."""
    gate = auditor.gate
    provisional = auditor.provisional()
    unproven = gate.unproven()
    return {"committed_offset": gate.committed_to - 1, "proof": gate.proof,
            "unproven": None if unproven is None else {
                "first_offset": unproven[0], "last_offset": unproven[1], "records": unproven[2]},
            "provisional_findings": [asdict(v) for v in provisional.violations]}


def _compare_snapshots(auditor: Auditor, out, path: Path, cluster_id: str | None) -> list[dict]:
    """Every snapshot of a log dir the log still covers, compared with the log's image at its
    end (kraft.snapshot-equals-log); its findings join the others in log order."""
    if not path.is_dir():
        return []
    compared = []
    for comparison in verify_snapshots(path, cluster_id):
        out.violations.extend(auditor.judge_snapshot(comparison).violations)
        compared.append({"file": comparison.file, "end_offset": comparison.end_offset,
                         "replayed_from": comparison.replayed_from,
                         "differences": len(comparison.differences)})
    out.violations.sort(key=lambda v: v.offset)
    return compared


def _noting_first(events, first: list):
    events = iter(events)
    for event in events:
        yield event
        if type(event) is NoOpRun:
            first.append(event.event(0))
            break
        if isinstance(event, MetadataEvent) and event.offset >= 0:
            first.append(event)
            break
    yield from events


def build_report(auditor: Auditor, out, cluster_id: str | None, first,
                 given: tuple[int | None, str | None] = (None, None)) -> dict:
    cluster_id = auditor.cluster_id or cluster_id or ""
    gauges = auditor.gauges(cluster_id)
    brokers = sorted(auditor.state.brokers.values(), key=lambda b: b.broker_id)
    bounds = condition_bounds_seconds(auditor.state.settings)
    return {
        "cluster_id": cluster_id,
        "records": {"applied": auditor.applied, "duplicates": auditor.duplicates,
                    "quarantined": auditor.quarantined, "retracted": auditor.gate.retracted_total, "last_offset": auditor.last_offset,
                    "first_offset": first.offset if first else None,
                    "first_timestamp_ms": first.timestamp_ms if first else None,
                    "last_timestamp_ms": gauges.last_timestamp_ms},
        # the offset a log that starts mid-history (no snapshot) starts at; None: whole
        "partial_from_offset": auditor.state.history_from,
        "min_isr": {"value": gauges.min_insync_replicas, "source": gauges.min_isr_source,
                    # what the flags gave (a config record in the log overrides it)
                    "given": given[0], "given_by": given[1]},
        "offline_partitions": gauges.leaderless,
        "findings": [asdict(v) for v in out.violations],
        # open until the newest record: the log's time, as `query` measures it
        "open_conditions": [{**asdict(c), "open_seconds": (gauges.last_timestamp_ms - c.start_ms) / 1000,
                             "past_bound": past_bound(c.condition, c.start_ms, gauges.last_timestamp_ms,
                                                      bounds, auditor.controller_changes_ms)}
                            for c in auditor.open_conditions()],
        # how long a correct controller may leave a condition open, where its settings say it
        "condition_bounds_seconds": bounds,
        "brokers": [{"broker_id": b.broker_id, "epoch": b.epoch, "registered": b.registered,
                     "fenced": b.fenced, "in_controlled_shutdown": b.in_controlled_shutdown,
                     "last_shutdown": b.last_shutdown, "last_shutdown_source": b.last_shutdown_source,
                     "offset": b.offset,
                     "timestamp_ms": b.timestamp_ms} for b in brokers],
        "gauges": asdict(gauges),
        "quarantined": [{"source": q.source, "position": q.position, "offset": q.offset,
                         "reason": q.reason} for q in out.quarantined],
    }


def _log_cluster_id(path: str) -> str | None:
    """The log's cluster id (meta.properties): the cluster of side inputs that name none."""
    p = Path(path)
    return read_meta_properties(metadata_dir(p if p.is_dir() else p.parent)).get("cluster.id") or None


# gauges the sections above already show
_SHOWN_ABOVE = frozenset({"cluster_id", "topics_leaderless", "topics_under_min_isr", "fenced_broker_ids",
                          "min_insync_replicas", "min_isr_source", "last_timestamp_ms"})
SHOWN = 5  # findings or partitions listed per group without --all


def print_report(report: dict, every: bool = False) -> None:
    records, gauges = report["records"], report["gauges"]
    print(f"cluster {report['cluster_id'] or '-'}: {plural(records['applied'], 'record')} applied, "
          f"{plural(records['duplicates'], 'duplicate')}, {records['quarantined']} quarantined; offsets "
          f"{records['first_offset']}..{records['last_offset']}, "
          f"{iso(records['first_timestamp_ms'])} to {iso(records['last_timestamp_ms'])}")
    if report["partial_from_offset"] is not None:
        print(f"partial log: it starts at offset {report['partial_from_offset']} without a snapshot; "
              "brokers, topics and partitions created before that are unknown, not findings")
    m = report["min_isr"]
    print(min_isr_line(m["value"], m["source"], m.get("given"), m.get("given_by")))
    for snap in report.get("snapshots", ()):
        differences = plural(snap["differences"], "difference") if snap["differences"] else "no differences"
        print(f"snapshot {snap['file']}: compared with the log replayed from {snap['replayed_from']}"
              f", {differences}")
    _print_commit(report.get("commit"), every)
    _print_retractions(report.get("retractions") or [], every)
    findings, offline = report["findings"], report["offline_partitions"]
    verdict = [plural(len(findings), "finding") if findings else "no rule broken",
               f"{plural(offline, 'partition')} offline at the end of the log" if offline else "none offline"]
    print("verdict: " + "; ".join(verdict))
    _print_findings(findings, every)
    _print_conditions(report["open_conditions"], records["last_timestamp_ms"], every,
                      report.get("condition_bounds_seconds", {}))
    _print_brokers(report["brokers"], gauges)
    print("\ngauges:")
    for name, value in gauges.items():
        if name not in _SHOWN_ABOVE:
            print(f"  {name:<34} {value}")
    for q in report["quarantined"]:
        print(f"quarantined: {q['source']} position {q['position']}: {q['reason']}", file=sys.stderr)


def _print_commit(commit: dict | None, every: bool) -> None:
    if not commit:
        return
    unproven = commit["unproven"]
    if unproven is None:
        print(f"commit: every record is committed ({commit['proof']})")
        return
    proven = (f"offsets up to {commit['committed_offset']} proven committed ({commit['proof']})"
              if commit["committed_offset"] >= 0 else "no offset proven committed")
    found = commit["provisional_findings"]
    print(f"commit: {proven}; {plural(unproven['records'], 'record')} after it (offsets "
          f"{unproven['first_offset']}..{unproven['last_offset']}) unproven: audited as provisional, "
          f"{plural(len(found), 'provisional finding')} (not in the verdict; --assume-committed "
          "takes them as committed)")
    for v in found if every else found[:SHOWN]:
        print(f"  provisional {v['severity']} {v['rule_id']} offset {v['offset']} {_where(v)}: {v['message']}")
    if not every and len(found) > SHOWN:
        print(f"  ... {len(found) - SHOWN} more (--all or --json lists them)")


def _print_retractions(rows: list[dict], every: bool) -> None:
    """What the merge withdrew: records of a log version a later Raft epoch replaced."""
    if not rows:
        return
    print(f"withdrawn: {plural(len(rows), 'record')} of a version of the log a later Raft epoch "
          "replaced (never committed; not audited)")
    for r in rows if every else rows[:SHOWN]:
        print(f"  offset {r['offset']} epoch {r['raft_epoch']} {r['record_type']}: replaced by epoch "
              f"{r['replaced_by_epoch']} from offset {r['replaced_at']}")
    if not every and len(rows) > SHOWN:
        print(f"  ... {len(rows) - SHOWN} more (--all or --json lists them)")


def _where(row: dict) -> str:
    if row.get("resource"):  # a condition of no partition: a delegation token's
        return f"token {row['resource']}"
    if row.get("partition") is None:
        return "-"
    return f"{row.get('topic') or row.get('topic_id') or '-'}-{row['partition']}"


NAMED = 8  # topics or brokers named on a group's line without --all


def _counts(values, every: bool = False) -> str:
    """'a (3), b (1)': the most frequent first; without `every` the first NAMED and
    'and K more' (a group line once named 63 topics in 4,089 characters)."""
    counted = Counter(values).most_common()
    shown = counted if every else counted[:NAMED]
    more = f", and {len(counted) - len(shown)} more" if len(shown) < len(counted) else ""
    return ", ".join(f"{v} ({n})" for v, n in shown) + more


def _print_findings(findings: list[dict], every: bool) -> None:
    print(f"\nfindings ({len(findings)}):")
    by_rule: dict[str, list[dict]] = {}
    for v in findings:
        by_rule.setdefault(v["rule_id"], []).append(v)
    for rule_id, rows in sorted(by_rule.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        topics = [v["topic"] or v["topic_id"] for v in rows if v["partition"] is not None]
        brokers = [v["broker_id"] for v in rows if v["broker_id"] is not None]
        print(f"  {rows[0]['severity']:<8} {rule_id} x{len(rows)}"
              + (f"; topics {_counts(topics, every)}" if topics else "")
              + (f"; brokers {_counts(brokers, every)}" if brokers else ""))
        for v in rows if every else rows[:SHOWN]:
            broker = f" broker {v['broker_id']}" if v["broker_id"] is not None else ""
            print(f"    offset {v['offset']} {iso(v['timestamp_ms'])} {_where(v)}{broker}: {v['message']}")
        if not every and len(rows) > SHOWN:
            print(f"    ... {len(rows) - SHOWN} more (--all or --json lists them)")


def _print_conditions(conditions: list[dict], log_now_ms: int, every: bool,
                      bounds: dict[str, int]) -> None:
    print(f"\nopen conditions at the end of the log ({len(conditions)}):")
    by_condition: dict[str, list[dict]] = {}
    for c in conditions:
        by_condition.setdefault(c["condition"], []).append(c)
    for name, rows in sorted(by_condition.items()):
        oldest = min(rows, key=lambda c: c["start_ms"])
        bound = bounds.get(name)
        past = "" if bound is None else (
            f"; {sum(c['past_bound'] for c in rows)} open longer than the controller's bound "
            f"({bound} s; a new active controller starts it again)")
        what = (f"tokens {_counts((c['resource'] for c in rows), every)}" if rows[0].get("resource")
                else f"topics {_counts((c['topic'] or c['topic_id'] for c in rows), every)}")
        print(f"  {name} x{len(rows)}; {what}; oldest {since(oldest['start_ms'], log_now_ms)}{past}")
        for c in rows if every else rows[:SHOWN]:
            print(f"    {_where(c)} since offset {c['start_offset']} {iso(c['start_ms'])}")
        if not every and len(rows) > SHOWN:
            print(f"    ... {len(rows) - SHOWN} more (--all or --json lists them)")


def _print_brokers(brokers: list[dict], gauges: dict) -> None:
    controller = gauges["active_controller"]
    print(f"\nbrokers ({len(brokers)}): {gauges['brokers_active']} active, {gauges['brokers_fenced']} "
          f"fenced, {gauges['brokers_in_controlled_shutdown']} in controlled shutdown; active "
          f"controller {controller if controller >= 0 else 'unknown'}")
    for b in brokers:
        status = ("unregistered" if not b["registered"] else "fenced" if b["fenced"]
                  else "in controlled shutdown" if b["in_controlled_shutdown"] else "active")
        restart = (f", last restart {b['last_shutdown']} "
                   f"({SOURCE_TEXT.get(b['last_shutdown_source'], b['last_shutdown_source'])})"
                   if b["last_shutdown"] else "")
        print(f"  broker {b['broker_id']:<5} epoch {b['epoch']:<8} {status} since offset "
              f"{b['offset']} {iso(b['timestamp_ms'])}{restart}")

