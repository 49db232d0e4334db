"""`kraft-audit describe PATH`: the cluster after replaying a log, printed like
`kafka-topics --describe` with ELR, LastKnownElr, recovery state and epochs.

As of the end of the log, an offset (--at-offset) or a time (--at-time). Views:
partitions (default; narrowed like kafka-topics by --unavailable-partitions,
--under-replicated-partitions or --under-min-isr-partitions), --brokers and
--features. Times print as ISO-8601 UTC, no leader as "none", an empty answer
as "(none)"; --json keeps raw values (milliseconds, leader -1).
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from itertools import takewhile
from pathlib import Path

from kraft_audit.core.audit import Auditor
from kraft_audit.cli.log_input import Tally, read_path
from kraft_audit.cli.main import UsageError
from kraft_audit.cli.static_settings import (
    add_static_settings_arguments, min_isr_given, min_isr_line, static_settings,
)
from kraft_audit.cli.views import (NOTHING, SnapshotPlaces, absolute_offsets, ids, iso_utc,
                                   leader_text, parse_iso_utc, plural, print_table as print_columns)
from kraft_audit.core.events import MetadataEvent, is_snapshot_source
from kraft_audit.core.replay import ClusterState, CoreSettings, ReplayError
from kraft_audit.core.replay.state import UNKNOWN_BEFORE_HISTORY
from kraft_audit.core.replay.conditions import LEADERLESS, UNDER_MIN_ISR, condition_mask
from kraft_audit.core.replay.conditions import under_replicated as is_under_replicated
from kraft_audit.core.replay.partition import RECOVERING, Partition, recovery_state_name
from kraft_audit.core.replay.settings import METADATA_VERSION
from kraft_audit.core.rules.catalog import Catalog

PARTITIONS = "partitions"
BROKERS = "brokers"
FEATURES = "features"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="PATH",
                        help="log dir, segment, snapshot or kafka-dump-log output file")
    parser.add_argument("--topic", help="only this topic")
    when = parser.add_mutually_exclusive_group()
    when.add_argument("--at-offset", type=int, metavar="N",
                      help="the state after the record at offset N (default: the end of the log)")
    when.add_argument("--at-time", type=_iso_time, metavar="ISO8601",
                      help="the state after the last record whose batch time is at or before "
                           "this time, e.g. 2026-11-25T09:12:03Z (UTC unless it names a zone)")
    view = parser.add_mutually_exclusive_group()
    for name, help_text in (
            ("unavailable-partitions", "only partitions without a leader"),
            ("under-replicated-partitions", "only partitions whose ISR is smaller than their "
                                            "replica set (adding replicas not counted)"),
            ("under-min-isr-partitions", "only partitions whose ISR is smaller than their "
                                         "effective min ISR")):
        view.add_argument(f"--{name}", dest="view", action="store_const", const=name,
                          help=help_text)
    view.add_argument("--brokers", dest="view", action="store_const", const=BROKERS,
                      help="each broker: epoch, registered, fenced, controlled shutdown, "
                           "last shutdown, last change")
    view.add_argument("--features", dest="view", action="store_const", const=FEATURES,
                      help="metadata.version and every finalized feature level")
    parser.set_defaults(view=PARTITIONS)
    add_static_settings_arguments(parser)
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.add_argument("--cluster-id", help="cluster id (default: from meta.properties)")


def _iso_time(text: str) -> int:
    try:
        return parse_iso_utc(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    path = Path(args.path)
    if args.topic is not None and args.view in (BROKERS, FEATURES):
        raise UsageError(f"--topic applies to partitions, not to --{args.view}")
    at_offset, point = args.at_offset, _point(args.at_offset)
    if args.at_time is not None:
        at_offset = offset_at_time(path, args.cluster_id, args.at_time)
        point = f" at {iso_utc(args.at_time)} (offset {at_offset})"
    if args.view == BROKERS:
        rows, print_text = audited_brokers(path, args.cluster_id, at_offset), print_brokers
    elif args.view == FEATURES:
        rows, print_text = features(replay(path, args.cluster_id, at_offset)), print_features
    else:
        state = replay(path, args.cluster_id, at_offset,
                       CoreSettings.of(static_settings(args)))
        if args.topic is not None and args.topic not in state.topic_ids:
            raise UsageError(f"topic {args.topic!r} does not exist{point}")
        rows = describe(state, args.topic, PARTITION_FILTERS.get(args.view))
        print_text = partial(print_table, state, given=min_isr_given(args))
    if args.json:
        for row in rows:
            sys.stdout.write(json.dumps(row, separators=(",", ":")) + "\n")
    else:
        print_text(rows)
    return 0


def _point(at_offset: int | None) -> str:
    return f" at offset {at_offset}" if at_offset is not None else ""


# ------------------------------------------------------------------ replay


def events_of(path: Path, cluster_id: str | None, tally: Tally):
    """The log's events in order, snapshot records at their place in the log."""
    return tally.count(absolute_offsets(read_path(path, cluster_id, "earliest")))


def replay(path: Path, cluster_id: str | None, at_offset: int | None,
           settings: CoreSettings | None = None) -> ClusterState:
    """The state after the log (or after `at_offset`); UsageError when no record was usable."""
    state = ClusterState(settings or CoreSettings())
    tally = Tally(path)
    applied = unknown = 0
    for event in events_of(path, cluster_id, tally):
        if not isinstance(event, MetadataEvent):
            continue
        if at_offset is not None and event.offset > at_offset:
            break
        if not applied and event.offset > 0 and not is_snapshot_source(event.source):
            state.history_from = event.offset  # the log starts mid-history
        try:
            state.apply(event)
            applied += 1
        except ReplayError as exc:
            if state.history_from is not None and exc.code in UNKNOWN_BEFORE_HISTORY:
                unknown += 1  # created before the log's first record: not a broken log
            else:
                print(f"skipped offset {event.offset}: {exc}", file=sys.stderr)
        except (KeyError, TypeError, ValueError) as exc:
            print(f"skipped offset {event.offset}: {exc}", file=sys.stderr)
    _require_applied(path, tally, applied, at_offset)
    if state.history_from is not None:
        print(f"# partial log: it starts at offset {state.history_from} without a snapshot; "
              f"{plural(unknown, 'record')} about brokers and topics created before it "
              f"{'was' if unknown == 1 else 'were'} skipped (unknown, not wrong)", file=sys.stderr)
    return state


def _require_applied(path: Path, tally: Tally, applied: int, at_offset: int | None) -> None:
    tally.require_records()
    if not applied:
        # e.g. an offset before the snapshot a log dir starts from
        up_to = f" up to offset {at_offset}" if at_offset is not None else ""
        raise UsageError(f"no record of {path} could be applied{up_to}"
                         f" (its first record is at offset {tally.first_offset})")


def audited_brokers(path: Path, cluster_id: str | None, at_offset: int | None) -> list[dict]:
    """The brokers after the log (or `at_offset`) as the auditor holds them: the replay
    plus its verdict on each restart (clean after a controlled shutdown, else unclean).
    The auditor places a snapshot's records where it ends; `at_offset` is compared alike."""
    auditor = Auditor(Catalog([], ""))  # no rule: the verdicts need none
    tally, places = Tally(path), SnapshotPlaces()
    events = places.watch(tally.count(read_path(path, cluster_id, "earliest")))

    def in_range(event) -> bool:
        return (at_offset is None or not isinstance(event, MetadataEvent)
                or places.place(event.offset, event.timestamp_ms)[0] <= at_offset)

    auditor.process(takewhile(in_range, events))
    first = tally.first_offset
    tally.first_offset = None if first is None else places.place(first, 0)[0]
    _require_applied(path, tally, auditor.applied, at_offset)
    return brokers(auditor.state)


def offset_at_time(path: Path, cluster_id: str | None, at_ms: int) -> int:
    """The offset of the last record whose batch time is at or before `at_ms`
    (record times may step back, so the whole log is read)."""
    tally = Tally(path)
    found, first_ms = None, None
    for event in events_of(path, cluster_id, tally):
        if not isinstance(event, MetadataEvent):
            continue
        first_ms = event.timestamp_ms if first_ms is None else first_ms
        if event.timestamp_ms <= at_ms:
            found = event.offset
    tally.require_records()
    if found is None:
        raise UsageError(f"no record of {path} is at or before {iso_utc(at_ms)}"
                         f" (its first record is at {iso_utc(first_ms)})")
    return found


# ------------------------------------------------------------------ partitions


def unavailable(state: ClusterState, p: Partition) -> bool:
    return bool(condition_mask(p, state.effective_min_isr(p), state) & LEADERLESS)


def under_replicated(state: ClusterState, p: Partition) -> bool:
    # the core's definition (as kafka-topics counts it), so describe and the gauge agree
    return is_under_replicated(p)


def under_min_isr(state: ClusterState, p: Partition) -> bool:
    # the core's definition (the under_min_isr condition), so describe and check agree
    return bool(condition_mask(p, state.effective_min_isr(p), state) & UNDER_MIN_ISR)


PARTITION_FILTERS = {
    "unavailable-partitions": unavailable,
    "under-replicated-partitions": under_replicated,
    "under-min-isr-partitions": under_min_isr,
}


def describe(state: ClusterState, topic: str | None, keep=None) -> list[dict]:
    """One row per partition (of `topic`), in topic-name order; `keep(state, p)` narrows."""
    rows = []
    for (topic_id, index), p in sorted(state.partitions.items(),
                                       key=lambda kv: (state.topic_label(kv[0][0]) or "", kv[0][1])):
        name = state.topic_label(topic_id)
        if topic is not None and name != topic or keep is not None and not keep(state, p):
            continue
        rows.append({
            "topic": name, "topic_id": topic_id, "partition": index, "leader": p.leader,
            "replicas": list(p.replicas), "isr": list(p.isr), "elr": list(p.elr),
            "last_known_elr": list(p.last_known_elr), "adding_replicas": list(p.adding_replicas),
            "removing_replicas": list(p.removing_replicas),
            "leader_recovery_state": recovery_state_name(p.leader_recovery_state),
            "leader_epoch": p.leader_epoch, "partition_epoch": p.partition_epoch,
            "effective_min_isr": state.effective_min_isr(p),
            "min_isr_source": state.min_isr_source(topic_id),
        })
        for field in p.unknown:  # created before a partial log: what no record told is unknown
            if field in rows[-1]:
                rows[-1][field] = None
    return rows


UNKNOWN = "unknown"  # a field of a partition created before a partial log that no record set


def _ids(values) -> str:
    return UNKNOWN if values is None else ids(values)


def _number(value) -> str:
    return UNKNOWN if value is None else str(value)


def print_table(state: ClusterState, rows: list[dict],
                given: tuple[int | None, str | None] = (None, None)) -> None:
    """kafka-topics' layout: a line per topic, then a tab-indented line per partition.
    The topic line counts all its partitions, also when a filter shows only some. Which min
    ISR the effective ones come from goes to stderr, keeping stdout kafka-topics' layout."""
    print("# " + min_isr_line(*state.cluster_min_isr(), *given), file=sys.stderr)
    if not rows:
        print(NOTHING)
    current = None
    for row in rows:
        if row["topic_id"] != current:
            current = row["topic_id"]
            count = len(state.topic_partitions.get(current, ()))
            factor = UNKNOWN if row["replicas"] is None else len(row["replicas"])
            print(f"Topic: {row['topic']}\tTopicId: {current}\tPartitionCount: {count}\t"
                  f"ReplicationFactor: {factor}\tEffectiveMinIsr: {row['effective_min_isr']}")
        reassignment = ""
        if row["adding_replicas"] or row["removing_replicas"]:
            reassignment = (f"\tAdding Replicas: {_ids(row['adding_replicas'])}"
                            f"\tRemoving Replicas: {_ids(row['removing_replicas'])}")
        leader = UNKNOWN if row["leader"] is None else leader_text(row["leader"])
        print(f"\tTopic: {row['topic']}\tPartition: {row['partition']}\tLeader: {leader}\t"
              f"Replicas: {_ids(row['replicas'])}\tIsr: {_ids(row['isr'])}{reassignment}\t"
              f"Elr: {_ids(row['elr'])}\tLastKnownElr: {_ids(row['last_known_elr'])}\t"
              f"LeaderRecoveryState: {_number(row['leader_recovery_state'])}\t"
              f"LeaderEpoch: {_number(row['leader_epoch'])}\tPartitionEpoch: {_number(row['partition_epoch'])}")
    recovering = sum(1 for p in state.partitions.values() if p.leader_recovery_state == RECOVERING)
    if recovering:
        print(f"# {recovering} partition(s) RECOVERING after an unclean election", file=sys.stderr)


# ------------------------------------------------------------------ brokers


BROKER_COLUMNS = ["broker", "epoch", "registered", "fenced", "controlled_shutdown",
                  "last_shutdown", "last_shutdown_source", "last_change_offset", "last_change_time"]


def brokers(state: ClusterState) -> list[dict]:
    """Each broker the log registered, as the controller holds it."""
    return [{"broker_id": b.broker_id, "epoch": b.epoch, "incarnation_id": b.incarnation_id,
             "registered": b.registered, "fenced": b.fenced,
             "in_controlled_shutdown": b.in_controlled_shutdown,
             "last_shutdown": b.last_shutdown, "last_shutdown_source": b.last_shutdown_source,
             "offset": b.offset, "timestamp_ms": b.timestamp_ms}
            for b in sorted(state.brokers.values(), key=lambda b: b.broker_id)]


def print_brokers(rows: list[dict]) -> None:
    def yes_no(flag: bool) -> str:
        return "yes" if flag else "no"

    print_columns([{
        "broker": str(r["broker_id"]), "epoch": str(r["epoch"]),
        "registered": yes_no(r["registered"]), "fenced": yes_no(r["fenced"]),
        "controlled_shutdown": yes_no(r["in_controlled_shutdown"]),
        # None: no restart seen, so no verdict on how it last stopped
        "last_shutdown": r["last_shutdown"] or "-",
        "last_shutdown_source": r["last_shutdown_source"] or "-",
        "last_change_offset": str(r["offset"]), "last_change_time": iso_utc(r["timestamp_ms"]),
    } for r in rows], BROKER_COLUMNS, format_cell=lambda _column, value: value)


# ------------------------------------------------------------------ features


def features(state: ClusterState) -> list[dict]:
    """metadata.version first, then every other finalized feature by name."""
    names = sorted(state.features, key=lambda name: (name != METADATA_VERSION, name))
    return [{"feature": name, "level": state.features[name]} for name in names]


def print_features(rows: list[dict]) -> None:
    from kraft_audit.sim.versions import METADATA_VERSIONS  # the release names of MV levels

    release = {level: name for name, level in METADATA_VERSIONS.items()}

    def level(row: dict) -> str:
        name = release.get(row["level"]) if row["feature"] == METADATA_VERSION else None
        return f"{row['level']} ({name})" if name else str(row["level"])

    print_columns([{"feature": r["feature"], "level": level(r)} for r in rows],
                  ["feature", "level"], format_cell=lambda _column, value: value)
