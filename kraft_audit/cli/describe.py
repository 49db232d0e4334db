"""`kraft-audit describe PATH`: partition state after replaying a log, printed like
`kafka-topics --describe` with ELR, LastKnownElr, recovery state and epochs."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kraft_audit.cli.log_input import Tally, read_path
from kraft_audit.cli.main import UsageError
from kraft_audit.events import MetadataEvent
from kraft_audit.replay import ClusterState, CoreSettings, ReplayError
from kraft_audit.replay.partition import RECOVERING, recovery_state_name


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="PATH",
                        help="log dir, segment, snapshot or kafka-dump-log output file")
    parser.add_argument("--topic", help="only this topic")
    parser.add_argument("--at-offset", type=int, metavar="N",
                        help="the state after the record at offset N (default: the end of the log)")
    parser.add_argument("--json", action="store_true", help="one JSON object per partition")
    parser.add_argument("--cluster-id", help="cluster id (default: from meta.properties)")


def run(args: argparse.Namespace) -> int:
    state = replay(Path(args.path), args.cluster_id, args.at_offset)
    if args.topic is not None and args.topic not in state.topic_ids:
        raise UsageError(f"topic {args.topic!r} does not exist"
                         + (f" at offset {args.at_offset}" if args.at_offset is not None else ""))
    rows = describe(state, args.topic)
    if args.json:
        for row in rows:
            sys.stdout.write(json.dumps(row, separators=(",", ":")) + "\n")
    else:
        print_table(state, rows)
    return 0


def replay(path: Path, cluster_id: str | None, at_offset: int | None) -> ClusterState:
    """The state after the log (or after `at_offset`); UsageError when no record was usable."""
    state = ClusterState(CoreSettings())
    tally = Tally(path)
    applied = 0
    for event in tally.count(read_path(path, cluster_id, "earliest")):
        if not isinstance(event, MetadataEvent):
            continue
        if at_offset is not None and event.offset > at_offset:
            break
        try:
            state.apply(event)
            applied += 1
        except (ReplayError, KeyError, TypeError, ValueError) as exc:
            print(f"skipped offset {event.offset}: {exc}", file=sys.stderr)
    tally.require_records()
    if not applied:
        raise UsageError(f"no record of {path} could be applied"
                         + (f" up to offset {at_offset}" if at_offset is not None else ""))
    return state


def describe(state: ClusterState, topic: str | None) -> list[dict]:
    rows = []
    for (topic_id, index), p in sorted(state.partitions.items(),
                                       key=lambda kv: (state.topic_name(kv[0][0]) or "", kv[0][1])):
        name = state.topic_name(topic_id)
        if topic is not None and name != topic:
            continue
        rows.append({
            "topic": name, "topic_id": topic_id, "partition": index, "leader": p.leader,
            "replicas": list(p.replicas), "isr": list(p.isr), "elr": list(p.elr),
            "last_known_elr": list(p.last_known_elr), "adding_replicas": list(p.adding_replicas),
            "removing_replicas": list(p.removing_replicas),
            "leader_recovery_state": recovery_state_name(p.leader_recovery_state),
            "leader_epoch": p.leader_epoch, "partition_epoch": p.partition_epoch,
            "effective_min_isr": state.effective_min_isr(p),
        })
    return rows


def print_table(state: ClusterState, rows: list[dict]) -> None:
    def ids(values):
        return ",".join(str(v) for v in values)

    current = None
    for row in rows:
        if row["topic_id"] != current:
            current = row["topic_id"]
            count = sum(1 for r in rows if r["topic_id"] == current)
            print(f"Topic: {row['topic']}\tTopicId: {current}\tPartitionCount: {count}\t"
                  f"ReplicationFactor: {len(row['replicas'])}\tEffectiveMinIsr: {row['effective_min_isr']}")
        reassignment = ""
        if row["adding_replicas"] or row["removing_replicas"]:
            reassignment = (f"\tAdding Replicas: {ids(row['adding_replicas'])}"
                            f"\tRemoving Replicas: {ids(row['removing_replicas'])}")
        leader = row["leader"] if row["leader"] >= 0 else "none"
        print(f"\tTopic: {row['topic']}\tPartition: {row['partition']}\tLeader: {leader}\t"
              f"Replicas: {ids(row['replicas'])}\tIsr: {ids(row['isr'])}{reassignment}\t"
              f"Elr: {ids(row['elr'])}\tLastKnownElr: {ids(row['last_known_elr'])}\t"
              f"LeaderRecoveryState: {row['leader_recovery_state']}\t"
              f"LeaderEpoch: {row['leader_epoch']}\tPartitionEpoch: {row['partition_epoch']}")
    recovering = sum(1 for p in state.partitions.values() if p.leader_recovery_state == RECOVERING)
    if recovering:
        print(f"# {recovering} partition(s) RECOVERING after an unclean election", file=sys.stderr)
