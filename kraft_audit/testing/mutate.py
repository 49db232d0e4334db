"""Mutation testing over real metadata logs: mutants of a catalog of controller mistakes.

From a real `__cluster_metadata-0` log dir (tests/fixtures/kraft-real, kraft-story: a real
cluster's log holding every record type a cluster writes, and kraft-liveness: a real
controller's periodic preferred elections, its own unclean election and its sweep of an
expired delegation token, its settings beside it), each mutant is the
same log with one controller mistake in it, written back as Kafka lays a log out: the
records are changed at the record level and every batch is re-framed (offsets, CRC-32C), so
the codec reads each mutant as a well-formed log. Every class below states why no correct
controller could write its mutants; a generator only emits a mutant when that holds in the
log at hand (the record it breaks has what makes it wrong: a later dependent, a partition
that exists, ...).

The score of a class is the share of its mutants the auditor flags (the core,
single-process, as `kraft-audit check` runs it, with the settings kept beside the log:
`audit`) with a finding at the mutated place: an offset of the atomic batch holding the first
record that makes the log impossible (or, for a snapshot, the snapshot's end offset - 1); a
liveness mutant, with its condition open on its partition (or token) there and for longer than the
controller's bound (`flagged`). Every mutant names the record type it
mutates, and the score is also given per record type and class.

    python -m kraft_audit.testing.mutate [LOG_DIR ...]   # the score per class and per type
"""

from __future__ import annotations

import itertools
import random
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kraft_audit.core.audit import Auditor
from kraft_audit.core.codec.batches import Batch, batch_events, encode_batch, iter_batches, iter_records
from kraft_audit.core.codec.logdir import (BOOTSTRAP_CHECKPOINT, META_PROPERTIES, METADATA_DIR,
                                           LogDirWriter, list_segments, list_snapshots, metadata_dir,
                                           read_file_events, read_log_dir, read_meta_properties,
                                           segment_name)
from kraft_audit.core.codec.records import decode_control, encode_control, encode_value
from kraft_audit.core.codec.schemas import CONTROL_BY_NAME
from kraft_audit.core.codec.schemas import upper_snake
from kraft_audit.core.events import KIND_RECORD, MetadataEvent
from kraft_audit.core.image import verify_snapshots
from kraft_audit.core.replay.conditions import (DELEGATION_TOKEN_EXPIRED_NAME, condition_bounds_seconds,
                                               past_bound, token_key)
from kraft_audit.core.replay.settings import CoreSettings
from kraft_audit.core.replay.state import token_deadline
from kraft_audit.core.rows import ConditionChange
from kraft_audit.core.rules.catalog import Catalog, load_catalog
from kraft_audit.sideinputs.server_properties import settings_from_properties
from kraft_audit.core.rules.cluster_records import FEATURE_DEPENDENCIES, feature_needs
from kraft_audit.core.rules.docs import MUTATION_CLASSES
from kraft_audit.core.rules.directories import LOST as LOST_DIR
from kraft_audit.core.rules.directories import UNASSIGNED as UNASSIGNED_DIR

CONTROL_BIT = 0x20
INT32_MAX = 2**31 - 1
# beside a fixture's log: the auditor's settings (CoreSettings keys) that match its cluster's own
SETTINGS_FILE = "server.properties"  # the controller's static configs the audit needs


# ---------------------------------------------------------------- the log as records


@dataclass
class Rec:
    """One record of the log: its type, version and fields (None for a control record,
    kept as its key and value bytes)."""

    type: str
    version: int
    data: dict[str, Any] | None
    key: bytes | None = None
    value: bytes | None = None

    def encoded(self) -> bytes:
        if self.data is None:
            return self.value
        return encode_value(self.type, self.version, self.data)


@dataclass
class Frame:
    """One batch: control or not, its leader epoch and time, its records."""

    control: bool
    leader_epoch: int
    timestamp_ms: int
    records: list[Rec] = field(default_factory=list)


def read_frames(log_dir: Path) -> list[Frame]:
    """Every batch of a log dir's segments, records decoded (control records kept as bytes)."""
    frames = []
    for _base, segment in list_segments(log_dir):
        for item in iter_batches(segment.read_bytes()):
            if not isinstance(item, Batch):
                raise ValueError(f"{segment}: {item.reason}")
            control = bool(item.attributes & CONTROL_BIT)
            events = batch_events(item, "", segment.name)
            raw = list(iter_records(item))
            frame = Frame(control, item.leader_epoch, item.base_timestamp)
            for event, record in zip(events, raw):
                if control or not isinstance(event, MetadataEvent):
                    frame.records.append(Rec(getattr(event, "type", "?"), 0, None, record.key, record.value))
                else:
                    frame.records.append(Rec(event.type, event.version, dict(event.data)))
            frames.append(frame)
    return frames


def write_log(source: Path, frames: list[Frame], target: Path,
              snapshots: dict[str, list[tuple[str, int, dict]]] | None = None) -> Path:
    """A log dir at `target`: meta.properties and bootstrap.checkpoint of `source`, one
    segment re-framed from `frames` (offsets renumbered, CRCs computed), and `source`'s
    snapshots (or, for a name in `snapshots`, that snapshot re-written from its records)."""
    src = metadata_dir(source)
    data_dir = src.parent if src.name == METADATA_DIR else src
    out = target / METADATA_DIR
    out.mkdir(parents=True, exist_ok=True)
    for name in (META_PROPERTIES, BOOTSTRAP_CHECKPOINT, SETTINGS_FILE):
        if (data_dir / name).exists():
            shutil.copy(data_dir / name, target / name)
    parts, offset = [], 0
    for frame in frames:
        if not frame.records:
            continue
        values = [r.encoded() for r in frame.records]
        keys = [r.key for r in frame.records] if frame.control else None
        parts.append(encode_batch(offset, values, frame.timestamp_ms, frame.leader_epoch,
                                  control=frame.control, keys=keys))
        offset += len(values)
    (out / segment_name(0)).write_bytes(b"".join(parts))
    for _end, _epoch, snap in list_snapshots(src):
        if snapshots and isinstance(snapshots.get(snap.name), bytes):  # the file as it is to be
            (out / snap.name).write_bytes(snapshots[snap.name])
        elif snapshots and snap.name in snapshots:
            rewrite_snapshot(snap, out / snap.name, snapshots[snap.name])
        else:
            shutil.copy(snap, out / snap.name)
    return target


def snapshot_records(path: Path) -> tuple[list[tuple[str, int, dict]], int, int]:
    """A snapshot's metadata records as (type, version, data), its epoch and its header time."""
    records, epoch, ms = [], 0, 0
    for event in read_file_events(path, ""):
        if not isinstance(event, MetadataEvent):
            continue
        if event.type == "SNAPSHOT_HEADER":
            ms = event.data.get("lastContainedLogTimestamp") or event.timestamp_ms
        elif event.kind == KIND_RECORD:
            records.append((event.type, event.version, dict(event.data)))
    m = path.name.split("-")
    if len(m) == 2:
        epoch = int(m[1].split(".")[0])
    return records, epoch, ms


def rewrite_snapshot(source: Path, target: Path, records: list[tuple[str, int, dict]]) -> None:
    """`source`'s snapshot written to `target` with `records` instead of its own (framed as
    Kafka's snapshot writer frames them: header, records, footer; CRCs valid)."""
    _old, epoch, ms = snapshot_records(source)
    LogDirWriter._write_snapshot_file(target, records, epoch, ms)


# ---------------------------------------------------------------- the catalog


@dataclass
class Mutant:
    cls: str
    what: str  # the mistake, in one line
    frames: list[Frame]
    offset: int  # the first offset (renumbered) where the log became impossible
    snapshots: dict[str, list] | None = None
    rtype: str = ""  # the record type mutated (filled from `what` when a generator leaves it)
    # a liveness mutant: (condition, topic id, partition) that must stay open past its bound
    # (a delegation token's: its token_key in place of the partition)
    liveness: tuple[str, str, int] | None = None


# class -> why no correct controller writes any of its mutants (docs/rules.md renders it)
CLASSES = MUTATION_CLASSES


def _positions(frames: list[Frame]) -> list[tuple[int, int, int]]:
    """(frame index, record index, offset) of every record."""
    out, offset = [], 0
    for fi, frame in enumerate(frames):
        for ri in range(len(frame.records)):
            out.append((fi, ri, offset))
            offset += 1
    return out


def _copy(frames: list[Frame]) -> list[Frame]:
    return [Frame(f.control, f.leader_epoch, f.timestamp_ms,
                  [Rec(r.type, r.version, None if r.data is None else dict(r.data), r.key, r.value)
                   for r in f.records]) for f in frames]


def _of_type(frames, positions, type_name: str, pick: Callable[[Rec], bool] = lambda r: True):
    return [(fi, ri, off) for fi, ri, off in positions
            if frames[fi].records[ri].type == type_name and pick(frames[fi].records[ri])]


def _first_after(frames, positions, off: int, pick: Callable[[Rec], bool]) -> tuple | None:
    for fi, ri, o in positions:
        if o > off and frames[fi].records[ri].data is not None and pick(frames[fi].records[ri]):
            return fi, ri, o
    return None


def _sample(items: list, n: int, rng: random.Random) -> list:
    return items if len(items) <= n else rng.sample(items, n)


def generate(log_dir: Path, per_kind: int = 4, seed: int = 7) -> Iterator[Mutant]:
    """Mutants of every class from one real log dir (a few per kind of mistake), each named
    with the record type it mutates."""
    rng = random.Random(seed)
    frames = read_frames(metadata_dir(log_dir))
    pos = _positions(frames)
    kept: dict[tuple[str, str, str], int] = {}
    for mutant in itertools.chain(_generate_partitions(log_dir, frames, pos, per_kind, rng),
                                  _generate_kinds(log_dir, frames, pos, per_kind, rng)):
        if not mutant.rtype:
            mutant.rtype = _type_of(mutant.what)
        # at most per_kind of each kind of mistake (its description without offsets, ids and
        # names) on each record type: a log with many snapshots or records stays within budget
        key = (mutant.rtype, mutant.cls, re.sub(r"'[^']*'|[0-9]+", "", mutant.what))
        kept[key] = kept.get(key, 0) + 1
        if kept[key] <= per_kind:
            yield mutant


_SNAPSHOT_TYPES = {"partition record": "PARTITION_RECORD", "topic record": "TOPIC_RECORD",
                   "config record": "CONFIG_RECORD"}


def _type_of(what: str) -> str:
    """The record type a mutant's one-line description names first."""
    for words, name in _SNAPSHOT_TYPES.items():
        if words in what:
            return name
    m = re.search(r"\b([A-Z][a-z]+(?:[A-Z][a-z]+)*Record)\b|\b([A-Z]+(?:_[A-Z]+)*_RECORD)\b", what)
    if m:
        return m.group(2) or upper_snake(m.group(1))
    if "live topic" in what:
        return "TOPIC_RECORD"
    if "the change at" in what:
        return "PARTITION_CHANGE_RECORD"
    return "?"


def _generate_partitions(log_dir: Path, frames: list[Frame], pos, per_kind: int,
                         rng: random.Random) -> Iterator[Mutant]:
    """Topics, partitions, brokers, producer ids, configs and snapshots."""

    def rec(p):
        return frames[p[0]].records[p[1]]

    brokers = {r.data["brokerId"] for f in frames for r in f.records if r.type == "REGISTER_BROKER_RECORD"}
    changes_with_leader = _of_type(frames, pos, "PARTITION_CHANGE_RECORD",
                                   lambda r: r.data.get("leader", -2) >= 0)
    creations = _of_type(frames, pos, "PARTITION_RECORD", lambda r: r.data.get("leader", -1) >= 0)

    # -- wrong value
    for p in _sample(creations, per_kind, rng):
        m = _copy(frames)
        r = m[p[0]].records[p[1]]
        stranger = max(r.data["replicas"] + list(brokers)) + 1
        r.data["leader"] = stranger
        yield Mutant("wrong-value", f"PartitionRecord at {p[2]}: leader {stranger} not a replica", m, p[2])
    for p in _sample(creations, per_kind, rng):
        m = _copy(frames)
        r = m[p[0]].records[p[1]]
        stranger = max(r.data["replicas"] + list(brokers)) + 1
        r.data["isr"] = list(r.data["isr"]) + [stranger]
        yield Mutant("wrong-value", f"PartitionRecord at {p[2]}: ISR member {stranger} not a replica", m, p[2])
    for p in _sample(creations, per_kind, rng):
        m = _copy(frames)
        m[p[0]].records[p[1]].data["leaderEpoch"] = 3
        yield Mutant("wrong-value", f"PartitionRecord at {p[2]}: a new partition at leader epoch 3", m, p[2])
    for p in _sample(changes_with_leader, per_kind, rng):
        m = _copy(frames)
        r = m[p[0]].records[p[1]]
        before = _partition_before(frames, pos, p[2], r.data["topicId"], r.data["partitionId"])
        if before is None:
            continue
        stranger = max(list(before["replicas"]) + list(brokers)) + 1
        r.data["leader"] = stranger
        yield Mutant("wrong-value", f"PartitionChangeRecord at {p[2]}: leader {stranger} not a replica", m, p[2])

    registrations = _of_type(frames, pos, "REGISTER_BROKER_RECORD")
    later_regs = [p for p in registrations if _first_registration(frames, pos, rec(p).data["brokerId"]) != p[2]]
    for p in _sample(later_regs, per_kind, rng):
        m = _copy(frames)
        r = m[p[0]].records[p[1]]
        previous = _previous_epoch(frames, pos, p[2], r.data["brokerId"])
        r.data["brokerEpoch"] = previous - 1
        yield Mutant("wrong-value", f"RegisterBrokerRecord at {p[2]}: broker epoch {previous - 1} below "
                     f"the previous registration's {previous}", m, p[2])
    about_broker = [p for p in pos if rec(p).data is not None and rec(p).type in (
        "BROKER_REGISTRATION_CHANGE_RECORD", "FENCE_BROKER_RECORD", "UNFENCE_BROKER_RECORD",
        "UNREGISTER_BROKER_RECORD")]
    for p in _sample(about_broker, per_kind, rng):
        m = _copy(frames)
        d = m[p[0]].records[p[1]].data
        name = "epoch" if "epoch" in d else "brokerEpoch"
        d[name] += 1
        yield Mutant("wrong-value", f"{rec(p).type} at {p[2]}: broker epoch not the registration's", m, p[2])
    pids = _of_type(frames, pos, "PRODUCER_IDS_RECORD")
    for p in _sample(pids[1:], per_kind, rng):
        m = _copy(frames)
        i = pids.index(p)
        m[p[0]].records[p[1]].data["nextProducerId"] = rec(pids[i - 1]).data["nextProducerId"]
        yield Mutant("wrong-value", f"ProducerIdsRecord at {p[2]}: the previous block handed out again", m, p[2])
    for p in _sample(creations, per_kind, rng):
        m = _copy(frames)
        r = m[p[0]].records[p[1]]
        r.data["replicas"] = list(r.data["replicas"]) + [r.data["replicas"][0]]
        if r.data.get("directories"):
            r.data["directories"] = list(r.data["directories"]) + [r.data["directories"][0]]
        yield Mutant("wrong-value", f"PartitionRecord at {p[2]}: a replica named twice", m, p[2])

    # -- missing record: remove what a later record needs
    for type_name, needs in (("TOPIC_RECORD", lambda d: lambda r: r.data.get("topicId") == d["topicId"]
                              and r.type in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD")),
                             ("PARTITION_RECORD", lambda d: lambda r: r.type == "PARTITION_CHANGE_RECORD"
                              and r.data.get("topicId") == d["topicId"]
                              and r.data.get("partitionId") == d["partitionId"]),
                             ("REGISTER_BROKER_RECORD", lambda d: lambda r: r.type in (
                                 "UNFENCE_BROKER_RECORD", "FENCE_BROKER_RECORD",
                                 "BROKER_REGISTRATION_CHANGE_RECORD")
                              and r.data.get("id", r.data.get("brokerId")) == d["brokerId"])):
        candidates = []
        for p in _of_type(frames, pos, type_name):
            dependent = _first_after(frames, pos, p[2], needs(rec(p).data))
            # a broker's record needs the registration before it: its first, with no other in between
            if dependent is not None and (type_name != "REGISTER_BROKER_RECORD" or (
                    _first_registration(frames, pos, rec(p).data["brokerId"]) == p[2]
                    and _previous_epoch(frames, pos, dependent[2], rec(p).data["brokerId"])
                    == rec(p).data["brokerEpoch"])):
                candidates.append((p, dependent))
        for p, dep in _sample(candidates, per_kind, rng):
            m = _copy(frames)
            del m[p[0]].records[p[1]]
            yield Mutant("missing-record", f"{type_name} at {p[2]} left out (used at {dep[2]})", m, dep[2] - 1)

    # -- extra record: a no-op change; a second creation of a partition
    for p in _sample(creations, per_kind, rng):
        m = _copy(frames)
        d = rec(p).data
        m[p[0]].records.insert(p[1] + 1, Rec("PARTITION_CHANGE_RECORD", 0,
                                             {"topicId": d["topicId"], "partitionId": d["partitionId"]}))
        yield Mutant("extra-record", f"a PartitionChangeRecord that changes nothing after {p[2]}", m, p[2] + 1)
    for p in _sample(creations, per_kind, rng):
        m = _copy(frames)
        m[p[0]].records.insert(p[1] + 1, Rec("PARTITION_RECORD", rec(p).version, dict(rec(p).data)))
        later = _first_after(frames, pos, p[2], lambda r, d=rec(p).data: r.type == "PARTITION_CHANGE_RECORD"
                             and r.data.get("topicId") == d["topicId"] and r.data.get("partitionId") == d["partitionId"])
        if later is None:
            continue
        # a second creation at the partition's creation: it changes nothing, so instead re-create
        # it after its first change, with the creation's (older) epochs
        m = _copy(frames)
        m[later[0]].records.insert(later[1] + 1, Rec("PARTITION_RECORD", rec(p).version, dict(rec(p).data)))
        yield Mutant("extra-record", f"the PartitionRecord of {p[2]} written again after {later[2]}", m, later[2] + 1)

    for p in _sample(_of_type(frames, pos, "TOPIC_RECORD"), per_kind, rng):
        later = _first_after(frames, pos, p[2], lambda r: r.type == "TOPIC_RECORD")
        if later is None:
            continue
        m = _copy(frames)
        m[later[0]].records.insert(later[1] + 1, Rec("TOPIC_RECORD", 0, {
            "name": rec(p).data["name"], "topicId": "MutantTopicIdAAAAAAAAA"}))
        yield Mutant("extra-record", f"a second live topic named {rec(p).data['name']!r} after {later[2]}",
                     m, later[2] + 1)

    # -- reordered: a change moved before its partition's creation; a partition before its topic
    firsts = []
    for p in creations:
        d = rec(p).data
        dep = _first_after(frames, pos, p[2], lambda r, d=d: r.type == "PARTITION_CHANGE_RECORD"
                           and r.data.get("topicId") == d["topicId"] and r.data.get("partitionId") == d["partitionId"])
        if dep is not None:
            firsts.append((p, dep))
    for p, dep in _sample(firsts, per_kind, rng):
        m = _copy(frames)
        moved = m[dep[0]].records.pop(dep[1])
        m[p[0]].records.insert(p[1], moved)
        yield Mutant("reordered-record", f"the change at {dep[2]} moved before the creation at {p[2]}", m, p[2])
    topics = _of_type(frames, pos, "TOPIC_RECORD")
    tfirst = []
    for p in topics:
        d = rec(p).data
        dep = _first_after(frames, pos, p[2], lambda r, d=d: r.type == "PARTITION_RECORD"
                           and r.data.get("topicId") == d["topicId"])
        if dep is not None and dep[0] == p[0]:
            tfirst.append((p, dep))
    for p, dep in _sample(tfirst, per_kind, rng):
        m = _copy(frames)
        topic = m[p[0]].records.pop(p[1])
        m[p[0]].records.append(topic)  # after its partitions, in the same batch
        yield Mutant("reordered-record", f"TopicRecord at {p[2]} moved after its partitions", m, p[2])

    # -- wrong type
    for p in _sample(changes_with_leader, per_kind, rng):
        m = _copy(frames)
        r = m[p[0]].records[p[1]]
        m[p[0]].records[p[1]] = Rec("PARTITION_RECORD", 0, {k: v for k, v in r.data.items()
                                                            if v is not None and k in (
                                                                "topicId", "partitionId", "isr", "leader",
                                                                "replicas")})
        yield Mutant("wrong-type", f"PartitionChangeRecord at {p[2]} written as a PartitionRecord", m, p[2])
    for p in _sample([t for t, _ in tfirst], per_kind, rng):
        m = _copy(frames)
        r = m[p[0]].records[p[1]]
        m[p[0]].records[p[1]] = Rec("REMOVE_TOPIC_RECORD", 0, {"topicId": r.data["topicId"]})
        yield Mutant("wrong-type", f"TopicRecord at {p[2]} written as a RemoveTopicRecord", m, p[2])

    # -- overflow
    for p in _sample(creations, per_kind, rng):
        m = _copy(frames)
        m[p[0]].records[p[1]].data["partitionId"] = -(2**31)
        yield Mutant("overflow", f"PartitionRecord at {p[2]}: partition id -2^31", m, p[2])
    for p in _sample(creations, per_kind, rng):
        m = _copy(frames)
        r = m[p[0]].records[p[1]]
        r.data["replicas"] = [-(2**31) if b == r.data["leader"] else b for b in r.data["replicas"]]
        r.data["isr"] = [-(2**31) if b == r.data["leader"] else b for b in r.data["isr"]]
        r.data["leader"] = -(2**31)
        yield Mutant("overflow", f"PartitionRecord at {p[2]}: its leader's broker id wrapped to -2^31", m, p[2])
    for p in _sample(creations, per_kind, rng):
        m = _copy(frames)
        r = m[p[0]].records[p[1]]
        r.data["leaderEpoch"] = -(2**31)
        yield Mutant("overflow", f"PartitionRecord at {p[2]}: leader epoch wrapped to -2^31", m, p[2])

    for p in _sample(pids, per_kind, rng):
        m = _copy(frames)
        m[p[0]].records[p[1]].data["nextProducerId"] = -(2**63) + 1000
        yield Mutant("overflow", f"ProducerIdsRecord at {p[2]}: next producer id wrapped negative", m, p[2])
    for p in _sample(registrations, per_kind, rng):
        m = _copy(frames)
        m[p[0]].records[p[1]].data["brokerEpoch"] = -(2**63)
        yield Mutant("overflow", f"RegisterBrokerRecord at {p[2]}: broker epoch wrapped to -2^63", m, p[2])

    # -- unparseable string: a topic id that names no topic
    for p in _sample(creations, per_kind, rng):
        m = _copy(frames)
        m[p[0]].records[p[1]].data["topicId"] = "AAAAAAAAAAAAAAAAAAAAAA"
        yield Mutant("unparseable-string", f"PartitionRecord at {p[2]}: topic id of no topic", m, p[2])

    for p in _sample(_of_type(frames, pos, "TOPIC_RECORD"), per_kind, rng):
        m = _copy(frames)
        m[p[0]].records[p[1]].data["name"] = rec(p).data["name"] + "/../x y"
        yield Mutant("unparseable-string", f"TopicRecord at {p[2]}: an illegal topic name", m, p[2])
    configs = _of_type(frames, pos, "CONFIG_RECORD", lambda r: r.data.get("value") is not None
                       and r.data.get("name") in _TYPED_CONFIGS)
    for p in _sample(configs, per_kind, rng):
        m = _copy(frames)
        d = m[p[0]].records[p[1]].data
        d["value"] = _TYPED_CONFIGS[d["name"]]
        yield Mutant("unparseable-string", f"ConfigRecord at {p[2]}: {d['name']} = {d['value']!r}", m, p[2])

    # -- snapshot differs from its log
    src = metadata_dir(log_dir)
    for end, _epoch, snap in _sample(list_snapshots(src), per_kind, rng):
        # the writer's frame broken: the header's batch or the footer's batch left out
        raw = snap.read_bytes()
        batches = [b for b in iter_batches(raw) if isinstance(b, Batch)]
        if len(batches) > 2:
            head, foot = batches[0], batches[-1]
            cut = {"without its SnapshotHeader": raw[head.position + head.size:],
                   "cut before its SnapshotFooter": raw[:foot.position]}
            for what, body in cut.items():
                yield Mutant("snapshot-differs", f"{snap.name} {what}", _copy(frames), end - 1, {snap.name: body},
                             rtype="SNAPSHOT_HEADER" if "Header" in what else "SNAPSHOT_FOOTER")
    for end, _epoch, snap in list_snapshots(src):
        records, _e, _ms = snapshot_records(snap)
        parts = [i for i, (t, _v, _d) in enumerate(records) if t == "PARTITION_RECORD"]
        edits = []
        for i in _sample(parts, per_kind, rng):
            edits.append((f"partition record {i}: leader epoch + 1", i, "leaderEpoch", lambda v: v + 1))
            edits.append((f"partition record {i}: ISR without its last member", i, "isr", lambda v: v[:-1]))
        for i, (t, _v, d) in enumerate(records):
            if t == "TOPIC_RECORD":
                edits.append((f"topic record {i}: renamed", i, "name", lambda v: v + "-x"))
            if t == "CONFIG_RECORD" and d.get("value") is not None:
                edits.append((f"config record {i}: value changed", i, "value", lambda v: v + "0"))
        for what, i, name, change in edits:
            new = [(t, v, dict(d)) for t, v, d in records]
            new[i][2][name] = change(new[i][2][name])
            if new[i][2] == records[i][2]:
                continue
            yield Mutant("snapshot-differs", f"{snap.name} {what}", _copy(frames), end - 1, {snap.name: new})
        for i in _sample(parts, per_kind, rng):
            new = [r for j, r in enumerate(records) if j != i]
            yield Mutant("snapshot-differs", f"{snap.name}: partition record {i} left out",
                         _copy(frames), end - 1, {snap.name: new})


def _generate_kinds(log_dir: Path, frames: list[Frame], pos, per_kind: int,
                    rng: random.Random) -> Iterator[Mutant]:
    """ACLs, SCRAM credentials, client quotas, delegation tokens, features, controller
    registrations, producer-id blocks, configs, topic removals and transactions: for each
    record type, the mistakes no correct controller makes (the class's catalog text says why)."""

    def rec(p):
        return frames[p[0]].records[p[1]]

    def of(type_name, pick=lambda r: True):
        return _sample(_of_type(frames, pos, type_name, pick), per_kind, rng)

    def edit(cls, p, what, **fields):
        m = _copy(frames)
        m[p[0]].records[p[1]].data.update(fields)
        return Mutant(cls, f"{rec(p).type} at {p[2]}: {what}", m, p[2], rtype=rec(p).type)

    def insert_after(cls, p, what, new: Rec):
        m = _copy(frames)
        m[p[0]].records.insert(p[1] + 1, new)
        return Mutant(cls, f"{new.type} after {p[2]}: {what}", m, p[2] + 1, rtype=new.type)

    def drop(cls, p, dep, what):
        m = _copy(frames)
        del m[p[0]].records[p[1]]
        return Mutant(cls, f"{rec(p).type} at {p[2]} left out: {what} at {dep[2]}", m, dep[2] - 1,
                      rtype=rec(p).type)

    def move_before(cls, later, earlier, what):
        m = _copy(frames)
        moved = m[later[0]].records.pop(later[1])
        m[earlier[0]].records.insert(earlier[1], moved)
        return Mutant(cls, f"{rec(later).type} at {later[2]} moved before {earlier[2]}: {what}", m,
                      earlier[2], rtype=rec(later).type)

    def removal_mistakes(made, gone, before_what):
        """A removal without the record it removes, moved before it, or written twice."""
        yield drop("missing-record", made, gone, "its removal")
        yield move_before("reordered-record", gone, made, f"removed before it was {before_what}")
        yield insert_after("extra-record", gone, "removed twice", Rec(rec(gone).type, 0, dict(rec(gone).data)))

    def pairs(create_type, remove_type, key):
        """(creation, the removal of what it created) pairs."""
        out = []
        for p in _of_type(frames, pos, remove_type):
            k = key(rec(p).data)
            before = [q for q in _of_type(frames, pos, create_type) if q[2] < p[2] and key(rec(q).data) == k]
            if before:
                out.append((before[-1], p))
        return _sample(out, per_kind, rng)

    # -- ACLs: Kafka's authorizer takes only concrete enum codes, a "type:name" principal, and
    # an id once (AclControlManager validates a new ACL and refuses a second one with its id)
    for p in of("ACCESS_CONTROL_ENTRY_RECORD"):
        yield edit("wrong-value", p, "operation ANY (a filter's code, never a binding's)", operation=1)
        yield edit("wrong-value", p, "permission type ANY", permissionType=1)
        yield edit("overflow", p, "resource type 127 (no such type)", resourceType=127)
        yield edit("unparseable-string", p, "a principal without its type", principal="alice")
        yield insert_after("extra-record", p, "the same ACL id again", Rec(rec(p).type, rec(p).version, dict(rec(p).data)))
        yield Mutant("wrong-type", f"ACCESS_CONTROL_ENTRY_RECORD at {p[2]} written as its removal",
                     _replaced(frames, p, Rec("REMOVE_ACCESS_CONTROL_ENTRY_RECORD", 0, {"id": rec(p).data["id"]})),
                     p[2], rtype=rec(p).type)
    for made, gone in pairs("ACCESS_CONTROL_ENTRY_RECORD", "REMOVE_ACCESS_CONTROL_ENTRY_RECORD", lambda d: d["id"]):
        yield from removal_mistakes(made, gone, "created")
    for p in of("REMOVE_ACCESS_CONTROL_ENTRY_RECORD"):
        yield edit("wrong-value", p, "the id of no ACL", id="MutantAclIdAAAAAAAAAAA")

    # -- SCRAM: iterations within the mechanism's bounds (4096..16384 for SCRAM-SHA-256/512),
    # a known mechanism, a user name; a removal only of a credential that exists
    for p in of("USER_SCRAM_CREDENTIAL_RECORD"):
        yield edit("wrong-value", p, "100 iterations (below the mechanism's minimum)", iterations=100)
        yield edit("overflow", p, "iterations wrapped to -2^31", iterations=-(2**31))
        yield edit("overflow", p, "mechanism 127 (no such mechanism)", mechanism=127)
        yield edit("unparseable-string", p, "an empty user name", name="")
    for made, gone in pairs("USER_SCRAM_CREDENTIAL_RECORD", "REMOVE_USER_SCRAM_CREDENTIAL_RECORD",
                            lambda d: (d["name"], d["mechanism"])):
        yield from removal_mistakes(made, gone, "created")
    firsts = [p for p in _of_type(frames, pos, "USER_SCRAM_CREDENTIAL_RECORD")
              if not any(q[2] < p[2] and (rec(q).data["name"], rec(q).data["mechanism"]) ==
                         (rec(p).data["name"], rec(p).data["mechanism"])
                         for q in _of_type(frames, pos, "USER_SCRAM_CREDENTIAL_RECORD"))]
    for p in _sample(firsts, per_kind, rng):
        yield Mutant("wrong-type", f"USER_SCRAM_CREDENTIAL_RECORD at {p[2]} written as a removal",
                     _replaced(frames, p, Rec("REMOVE_USER_SCRAM_CREDENTIAL_RECORD", 0, {
                         "name": rec(p).data["name"], "mechanism": rec(p).data["mechanism"]})), p[2],
                     rtype=rec(p).type)

    # -- client quotas: a known entity type and key, a positive value a long holds where the
    # key is a rate in bytes or a count; a removal only of a quota that is set
    for p in of("CLIENT_QUOTA_RECORD", lambda r: not r.data.get("remove")):
        yield edit("wrong-value", p, "a negative quota", value=-1.0)
        if rec(p).data["key"] in ("producer_byte_rate", "consumer_byte_rate", "connection_creation_rate"):
            yield edit("overflow", p, "a quota beyond a long", value=1e30)  # a whole-number quota
        yield edit("unparseable-string", p, "an unknown quota key", key=rec(p).data["key"] + "_x")
        entity = [dict(e) for e in rec(p).data["entity"]]
        entity[0]["entityType"] += "s"
        yield edit("unparseable-string", p, f"entity type {entity[0]['entityType']!r}", entity=entity)
    quota_key = lambda d: (tuple((e["entityType"], e["entityName"]) for e in d["entity"]), d["key"])  # noqa: E731
    for made, gone in pairs("CLIENT_QUOTA_RECORD", "CLIENT_QUOTA_RECORD", quota_key):
        if not rec(gone).data.get("remove") or rec(made).data.get("remove"):
            continue
        yield from removal_mistakes(made, gone, "set")

    # -- delegation tokens: issued <= expires <= max life; a "type:name" owner; a removal only
    # of a token that exists
    for p in of("DELEGATION_TOKEN_RECORD"):
        d = rec(p).data
        yield edit("wrong-value", p, "expires after its maximum life", expirationTimestamp=d["maxTimestamp"] + 1000)
        yield edit("wrong-value", p, "issued after it expires", issueTimestamp=d["expirationTimestamp"] + 1000)
        yield edit("overflow", p, "maximum life wrapped negative", maxTimestamp=-(2**63) + 1)
        yield edit("unparseable-string", p, "an owner without its type", owner="admin")
    for made, gone in pairs("DELEGATION_TOKEN_RECORD", "REMOVE_DELEGATION_TOKEN_RECORD", lambda d: d["tokenId"]):
        yield from removal_mistakes(made, gone, "created")
    for p in of("REMOVE_DELEGATION_TOKEN_RECORD"):
        yield edit("wrong-value", p, "the id of no token", tokenId="MutantTokenIdAAAAAAAAA")

    # -- features: a level is never negative, metadata.version never 0 (every KRaft log has
    # one), the name is a feature's; metadata.version comes first
    for p in of("FEATURE_LEVEL_RECORD"):
        yield edit("overflow", p, "level -1", featureLevel=-1)
        yield edit("unparseable-string", p, "an empty feature name", name="")
    mv = _of_type(frames, pos, "FEATURE_LEVEL_RECORD", lambda r: r.data.get("name") == "metadata.version")
    for p in _sample(mv, per_kind, rng):
        yield edit("wrong-value", p, "metadata.version 0", featureLevel=0)
    # (no mutant drops the log's first metadata.version: a log bootstrapped before that record
    # existed has none, and its controller read it as the lowest level, correctly)

    # -- controller registrations: an id is never negative, a supported range is min <= max
    for p in of("REGISTER_CONTROLLER_RECORD"):
        yield edit("overflow", p, "controller id -2^31", controllerId=-(2**31))
        features = [dict(f) for f in rec(p).data.get("features") or []]
        if features:
            features[0]["minSupportedVersion"] = features[0]["maxSupportedVersion"] + 1
            yield edit("wrong-value", p, "a feature range with min above max", features=features)

    # -- producer-id blocks: to a registered broker at its epoch; blocks only go up
    pids = _of_type(frames, pos, "PRODUCER_IDS_RECORD")
    for p in _sample(pids, per_kind, rng):
        yield edit("wrong-value", p, "a block for a broker never registered", brokerId=9999)
    for a, b in _sample(list(zip(pids, pids[1:])), per_kind, rng):
        yield move_before("reordered-record", b, a, "the later block handed out first")

    # -- configs: for a topic that exists, of a resource type that exists
    for p in of("CONFIG_RECORD"):
        yield edit("overflow", p, "resource type 127 (no such type)", resourceType=127)
    for p in of("CONFIG_RECORD", lambda r: r.data.get("resourceType") == 2):
        yield edit("wrong-value", p, "a config of no topic", resourceName="no-such-topic")
        # deleting a topic drops its configs without a record; a removal names a live topic
        yield edit("wrong-value", p, "a config of no topic removed", resourceName="no-such-topic", value=None)

    # -- controller unregistrations: of a registered controller
    for p in of("UNREGISTER_CONTROLLER_RECORD"):
        yield edit("wrong-value", p, "a controller never registered", controllerId=9999)
    for p in of("REGISTER_CONTROLLER_RECORD"):
        yield insert_after("extra-record", p, "UnregisterControllerRecord of a controller never registered",
                           Rec("UNREGISTER_CONTROLLER_RECORD", 0, {"controllerId": 9999}))

    # -- a broker whose registration is gone: nothing more is written about it until it registers
    for p in of("UNREGISTER_BROKER_RECORD"):
        d = rec(p).data
        yield insert_after("extra-record", p, "the broker unregistered twice", Rec(rec(p).type, 0, dict(d)))
        yield insert_after("extra-record", p, "FenceBrokerRecord of a broker no longer registered",
                           Rec("FENCE_BROKER_RECORD", 0, {"id": d["brokerId"], "epoch": d["brokerEpoch"]}))

    # -- Raft control records: kraft.version never goes down; a voter set names each voter once
    def control(type_name, data):
        key, value = encode_control(type_name, {"version": 0, **data})
        return Rec(type_name, 0, None, key, value)
    for p in _sample(_of_type(frames, pos, "KRAFT_VERSION"), per_kind, rng):
        level = decode_control(CONTROL_BY_NAME["KRAFT_VERSION"].control_type, rec(p).value)[2].get("kRaftVersion")
        if level:
            yield insert_after("extra-record", p, "KRaftVersion 0 after a higher level (a downgrade)",
                               control("KRAFT_VERSION", {"kRaftVersion": 0}))
    for p in _sample(_of_type(frames, pos, "KRAFT_VOTERS"), per_kind, rng):
        data = decode_control(CONTROL_BY_NAME["KRAFT_VOTERS"].control_type, rec(p).value)[2]
        voters = data.get("voters") or []
        if voters:
            m = _copy(frames)
            m[p[0]].records[p[1]] = control("KRAFT_VOTERS", {**data, "voters": voters + voters[:1]})
            yield Mutant("wrong-value", f"KRAFT_VOTERS at {p[2]}: a voter named twice", m, p[2], rtype="KRAFT_VOTERS")

    # -- metadata.version goes down only across levels that changed no metadata format:
    # lowered to 7 right after a level at 8 or above (8, 3.4-IV0, changed it)
    for p in of("FEATURE_LEVEL_RECORD", lambda r: r.data.get("name") == "metadata.version"
                and 8 <= r.data.get("featureLevel", 0) <= 30):
        yield insert_after("wrong-value", p, "FeatureLevelRecord lowering metadata.version across a format change",
                           Rec(rec(p).type, rec(p).version, {**rec(p).data, "featureLevel": 7}))

    # -- log directories: a registration names its own directories once, none reserved; a
    # replica is placed in a directory of its broker, one entry per replica
    owners: dict[str, int] = {}
    first_dirs: dict[int, int] = {}  # broker -> offset of its first registration with directories
    for p in _of_type(frames, pos, "REGISTER_BROKER_RECORD", lambda r: bool(r.data.get("logDirs"))):
        for directory in rec(p).data["logDirs"]:
            owners.setdefault(directory, rec(p).data["brokerId"])
        first_dirs.setdefault(rec(p).data["brokerId"], p[2])
    for p in of("REGISTER_BROKER_RECORD", lambda r: bool(r.data.get("logDirs"))):
        dirs = list(rec(p).data["logDirs"])
        yield edit("wrong-value", p, "a reserved directory id (UNASSIGNED)", logDirs=dirs + [UNASSIGNED_DIR])
        yield edit("wrong-value", p, "a directory twice", logDirs=dirs + dirs[:1])

    def placed(r, off):
        """A partition record whose replicas' brokers all registered directories before it."""
        reps = r.data.get("replicas")
        return (bool(r.data.get("directories")) and reps is not None and len(reps) == len(r.data["directories"])
                and all(first_dirs.get(b, off) < off for b in reps))
    for type_name in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD"):
        for p in of(type_name, lambda r: r.data.get("directories") and r.data.get("replicas") is not None):
            if not placed(rec(p), p[2]):
                continue
            dirs = list(rec(p).data["directories"])
            yield edit("wrong-value", p, "a replica placed in LOST", directories=[LOST_DIR] + dirs[1:])
            if len(dirs) > 1:  # an empty list is no list (a record without directories)
                yield edit("wrong-value", p, "a directory left out", directories=dirs[:-1])
            broker = rec(p).data["replicas"][0]
            other = next((dr for dr, b in owners.items() if b != broker), None)
            if other is not None:
                yield edit("wrong-value", p, "a replica placed in another broker's directory",
                           directories=[other] + dirs[1:])

    # -- topic removals: of a topic that exists, once
    for p in of("REMOVE_TOPIC_RECORD"):
        yield edit("wrong-value", p, "the id of no topic", topicId="MutantTopicIdBBBBBBBBB")
        yield insert_after("extra-record", p, "the topic removed twice", Rec(rec(p).type, 0, dict(rec(p).data)))

    # -- transactions: never nested, never ended when none is open
    for p in of("BEGIN_TRANSACTION_RECORD"):
        yield insert_after("extra-record", p, "a transaction begun inside another",
                           Rec(rec(p).type, 0, dict(rec(p).data)))
    for p in of("END_TRANSACTION_RECORD"):
        yield insert_after("extra-record", p, "a transaction ended twice", Rec(rec(p).type, 0, {}))

    # -- snapshots: the records of these types in a snapshot differ from the log's image
    src = metadata_dir(log_dir)
    changes = {"ACCESS_CONTROL_ENTRY_RECORD": ("principal", lambda v: v + "-x"),
               "USER_SCRAM_CREDENTIAL_RECORD": ("iterations", lambda v: v + 1),
               "CLIENT_QUOTA_RECORD": ("value", lambda v: v + 1),
               "DELEGATION_TOKEN_RECORD": ("expirationTimestamp", lambda v: v + 1),
               "FEATURE_LEVEL_RECORD": ("featureLevel", lambda v: v + 1),
               "PRODUCER_IDS_RECORD": ("nextProducerId", lambda v: v + 1000),
               "REGISTER_BROKER_RECORD": ("brokerEpoch", lambda v: v + 1)}
    for end, _epoch, snap in list_snapshots(src):
        records, _e, _ms = snapshot_records(snap)
        for type_name, (name, change) in changes.items():
            found = [i for i, (t, _v, d) in enumerate(records) if t == type_name and d.get(name) is not None]
            for i in _sample(found, 1, rng):
                new = [(t, v, dict(d)) for t, v, d in records]
                new[i][2][name] = change(new[i][2][name])
                yield Mutant("snapshot-differs", f"{snap.name} {type_name} {i}: {name} changed",
                             _copy(frames), end - 1, {snap.name: new}, rtype=type_name)

    # (below: generators added after the others, so the samples above stay as they were)
    yield from _feature_dependency_mutants(frames, pos, per_kind, rng)
    yield from _controlled_shutdown_mutants(frames, pos, per_kind, rng)
    yield from _missing_election_mutants(log_dir, frames, pos, per_kind, rng)
    yield from _missing_sweep_mutants(log_dir, frames, pos, per_kind, rng)


_FEATURE = "FEATURE_LEVEL_RECORD"
_MV = "metadata.version"


def _feature_dependency_mutants(frames, pos, per_kind: int, rng: random.Random) -> Iterator[Mutant]:
    """A feature level finalized without the levels it depends on (Kafka validates them
    against what the update leaves): its metadata.version upgrade left out, the level moved to
    a batch before that upgrade, metadata.version lowered right after it; or the level written
    after an upgrade that stays below what it needs. The first metadata.version (the bootstrap)
    is never the one mutated: the operation that sets it is not judged."""
    features = [(fi, ri, off) for fi, ri, off in pos if frames[fi].records[ri].type == _FEATURE
                and frames[fi].records[ri].data is not None]
    history: dict[str, list[tuple[tuple, int]]] = {}  # feature -> (position, level) in log order
    dependents = []  # (level's position, feature it needs, lowest level, the record that met it)
    for p in features:
        d = frames[p[0]].records[p[1]].data
        name, level = d.get("name"), d.get("featureLevel")
        if type(level) is not int:
            continue
        history.setdefault(name, []).append((p, level))
        for needed, lowest in feature_needs(name, level).items():
            setters = [(q, v) for q, v in history.get(needed, []) if q[2] < p[2]]
            # met by an upgrade that is not the bootstrap's, from a level that did not meet it
            if len(setters) >= 2 and setters[-1][1] >= lowest and setters[-2][1] < lowest:
                dependents.append((p, needed, lowest, setters[-1][0]))

    def rec(p):
        return frames[p[0]].records[p[1]]

    for p, needed, lowest, q in _sample(dependents, per_kind, rng):
        what = f"{rec(p).data['name']} {rec(p).data['featureLevel']}"
        m = _copy(frames)
        del m[q[0]].records[q[1]]
        yield Mutant("missing-record", f"FEATURE_LEVEL_RECORD at {q[2]} left out: the {needed} upgrade "
                     f"{what} at {p[2]} needs", m, p[2] - 1, rtype=_FEATURE)
        # moved to the end of the last batch of records before the upgrade's (after the bootstrap's)
        target = next((fi for fi in range(q[0] - 1, -1, -1) if not frames[fi].control), None)
        if target is not None and target > history[needed][0][0][0] and not any(
                rec(r).type == _FEATURE and rec(r).data.get("name") == needed for r in pos if r[0] == target):
            m = _copy(frames)
            m[target].records.append(m[p[0]].records.pop(p[1]))
            at = max(off for fi, _ri, off in pos if fi == target) + 1
            yield Mutant("reordered-record", f"FEATURE_LEVEL_RECORD at {p[2]} ({what}) moved before the "
                         f"{needed} upgrade at {q[2]} it needs", m, at, rtype=_FEATURE)
        m = _copy(frames)
        m[p[0]].records.insert(p[1] + 1, Rec(_FEATURE, 0, {"name": needed, "featureLevel": lowest - 1}))
        yield Mutant("wrong-value", f"FEATURE_LEVEL_RECORD after {p[2]}: {needed} lowered to {lowest - 1}, "
                     f"below what {what} needs", m, p[2] + 1, rtype=_FEATURE)
    # a level finalized after a metadata.version upgrade that stays below what the level needs
    needing = sorted({(name, level, lowest) for name, levels in _dependencies_on(_MV).items()
                      for level, lowest in levels})
    upgrades = [q for q, _v in history.get(_MV, [])[1:]]
    for q in _sample(upgrades, per_kind, rng):
        for name, level, lowest in needing:
            if rec(q).data["featureLevel"] < lowest:
                m = _copy(frames)
                m[q[0]].records.insert(q[1] + 1, Rec(_FEATURE, 0, {"name": name, "featureLevel": level}))
                yield Mutant("extra-record", f"FEATURE_LEVEL_RECORD after {q[2]}: {name} {level} at "
                             f"{_MV} {rec(q).data['featureLevel']}, below the {lowest} it needs", m, q[2] + 1,
                             rtype=_FEATURE)
                break


def _dependencies_on(needed: str) -> dict[str, list[tuple[int, int]]]:
    """feature -> (its lowest level that depends on `needed`, the lowest level of `needed`)."""
    out: dict[str, list[tuple[int, int]]] = {}
    for name, levels in FEATURE_DEPENDENCIES.items():
        for level in sorted(levels):
            lowest = feature_needs(name, level).get(needed)
            if lowest is not None:
                out.setdefault(name, []).append((level, lowest))
                break
    return out


def _controlled_shutdown_mutants(frames, pos, per_kind: int, rng: random.Random) -> Iterator[Mutant]:
    """A broker entering controlled shutdown keeps a leadership: the controller writes the
    registration change, then moves every leadership of the broker in the same operation
    (the broker removed from the ISR and not acceptable as leader); here one of those moves
    is left out."""
    moves = []
    for fi, ri, off in pos:
        r = frames[fi].records[ri]
        if (r.type != "BROKER_REGISTRATION_CHANGE_RECORD" or r.data is None
                or r.data.get("inControlledShutdown") != 1):
            continue
        broker = r.data["brokerId"]
        for rj in range(ri + 1, len(frames[fi].records)):
            c = frames[fi].records[rj]
            if c.type != "PARTITION_CHANGE_RECORD" or c.data.get("leader", -2) in (-2, broker):
                continue
            if _leader_before(frames, pos, off + rj - ri, c.data["topicId"], c.data["partitionId"]) == broker:
                moves.append(((fi, ri, off), (fi, rj, off + rj - ri), broker))
    for shutdown, move, broker in _sample(moves, per_kind, rng):
        m = _copy(frames)
        del m[move[0]].records[move[1]]
        yield Mutant("missing-record", f"PartitionChangeRecord at {move[2]} left out: the leader move of "
                     f"broker {broker}'s controlled shutdown at {shutdown[2]}", m, shutdown[2],
                     rtype="PARTITION_CHANGE_RECORD")


_IMBALANCED = "leader_imbalanced"
_OVERDUE = "election_overdue"
_UNCLEAN = "unclean_election_overdue"
_UNCLEAN_CONFIG = "unclean.leader.election.enable"
# judged where an operation ends: any interval of them is a promise broken (no bound to wait)
AT_OPERATION_END = (_OVERDUE, _UNCLEAN)
_BROKER_RECORDS = ("REGISTER_BROKER_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD", "FENCE_BROKER_RECORD",
                   "UNFENCE_BROKER_RECORD", "UNREGISTER_BROKER_RECORD")
_UNSET = {"leader": -2, "leaderRecoveryState": -1}  # a change record's "no change" values


def _missing_election_mutants(log_dir: Path, frames, pos, per_kind: int,
                              rng: random.Random) -> Iterator[Mutant]:
    """An election the controller promises, left out. Each dropped record is a change that only
    sets the leader:

    - to the partition's first replica, from another leader (the controller's preferred
      election, periodic or asked for), where the log then goes on for two check intervals
      (the log's settings: SETTINGS_FILE) with no record about the partition or that
      replica's broker. The controller elected it, so it could lead; left as it was, it still
      could past the bound, which no controller that rebalances leaders allows
      (leader_imbalanced);
    - of a leaderless partition, to an ISR member (an ELR member when the ISR is empty): a
      clean election in the operation that made that replica electable (an unfence). Left
      out, the operation ends with the partition leaderless while a clean candidate could
      lead, which no controller allows (election_overdue, judged at the operation's end);
    - of a leaderless partition of a topic that allows unclean elections, to a replica out of
      the ISR (and out of the ELR when the ISR is empty), RECOVERING where the record sets the
      recovery state: the controller's unclean election in the unfence of that replica's broker
      (its unfence elects over every leaderless partition, uncleanly where the topic allows it).
      Left out, the unfence ends with the partition leaderless while a replica could lead
      uncleanly (unclean_election_overdue, judged at the operation's end: the mutant's offset is
      the batch's first, the unfence). The records after it (the leader's ISR expansion carrying
      RECOVERED) then apply to a leaderless partition: the log is impossible from the unfence's
      end on, and flagged there."""
    settings = log_settings(log_dir)
    bound = condition_bounds_seconds(CoreSettings.of(settings)).get(_IMBALANCED)
    last_ms = max((f.timestamp_ms for f in frames if f.records), default=0)
    replicas: dict[tuple, list[int]] = {}
    leaders: dict[tuple, int] = {}
    isr: dict[tuple, list[int]] = {}
    elr: dict[tuple, list[int]] = {}
    preferred, leaderless, unclean = [], [], []
    names: dict[str, str] = {}  # topic id -> name
    allows: dict[str, bool] = {}  # topic name ("" the cluster default) -> unclean elections allowed
    for fi, ri, off in pos:
        r = frames[fi].records[ri]
        if r.type == "TOPIC_RECORD" and r.data is not None:
            names[r.data["topicId"]] = r.data["name"]
        elif r.type == "CONFIG_RECORD" and r.data is not None and r.data.get("name") == _UNCLEAN_CONFIG:
            # a topic's (resource type 2) or the cluster default's (type 4, broker "")
            kind, name = r.data.get("resourceType"), r.data.get("resourceName")
            if kind == 2 or (kind, name) == (4, ""):
                if r.data.get("value") is None:
                    allows.pop(name, None)
                else:
                    allows[name] = r.data["value"].strip().lower() == "true"
        if r.data is None or r.type not in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD"):
            continue
        key = (r.data["topicId"], r.data["partitionId"])
        if r.type == "PARTITION_CHANGE_RECORD" and key in replicas:
            changed = {k for k, v in r.data.items() if k not in ("topicId", "partitionId")
                       and v is not None and _UNSET.get(k) != v}
            first = replicas[key][0] if replicas[key] else None
            new = r.data["leader"]
            if changed == {"leader"} and new == first != leaders[key] >= 0:
                preferred.append(((fi, ri, off), key, first))
            elif changed == {"leader"} and leaders[key] == -1 and new >= 0 and (
                    new in isr[key] or (not isr[key] and new in elr[key])):
                leaderless.append(((fi, ri, off), key, new))
            elif (leaders[key] == -1 and new >= 0 and new not in isr[key]
                  and not (not isr[key] and new in elr[key])
                  and r.data.get("leaderRecoveryState", -1) in (-1, 1)
                  and allows.get(names.get(key[0], ""), allows.get("", settings.get(
                      "unclean_leader_election_default", False)))
                  and any(_unfences(c, new) for c in frames[fi].records)):
                unclean.append(((fi, ri, off), key, new))
        if r.data.get("replicas") is not None:
            replicas[key] = list(r.data["replicas"])
        if r.data.get("leader", -2) != -2:
            leaders[key] = r.data["leader"]
        if r.data.get("isr") is not None:
            isr[key] = list(r.data["isr"])
        if r.data.get("eligibleLeaderReplicas") is not None or r.type == "PARTITION_RECORD":
            elr[key] = list(r.data.get("eligibleLeaderReplicas") or [])
    candidates = []
    for p, key, broker in preferred if bound is not None else ():
        at_ms = frames[p[0]].timestamp_ms
        after = _first_after(frames, pos, p[2], lambda r, key=key, broker=broker: (
            (r.data.get("topicId"), r.data.get("partitionId")) == key
            or (r.type == "REMOVE_TOPIC_RECORD" and r.data.get("topicId") == key[0])
            or (r.type in _BROKER_RECORDS and r.data.get("brokerId", r.data.get("id")) == broker)))
        until_ms = frames[after[0]].timestamp_ms if after else last_ms
        if until_ms - at_ms > 2 * bound * 1000:
            candidates.append((p, key, broker))
    for p, key, broker in _sample(candidates, per_kind, rng):
        m = _copy(frames)
        del m[p[0]].records[p[1]]
        yield Mutant("missing-liveness", f"PartitionChangeRecord at {p[2]} left out: the election of "
                     f"preferred replica {broker}", m, p[2], rtype="PARTITION_CHANGE_RECORD",
                     liveness=(_IMBALANCED, key[0], key[1]))
    for p, key, broker in _sample(leaderless, per_kind, rng):
        m = _copy(frames)
        del m[p[0]].records[p[1]]
        yield Mutant("missing-liveness", f"PartitionChangeRecord at {p[2]} left out: the election of "
                     f"in-sync replica {broker} of a leaderless partition", m, p[2],
                     rtype="PARTITION_CHANGE_RECORD", liveness=(_OVERDUE, key[0], key[1]))
    for p, key, broker in _sample(unclean, per_kind, rng):
        m = _copy(frames)
        del m[p[0]].records[p[1]]
        yield Mutant("missing-liveness", f"PartitionChangeRecord at {p[2]} left out: the unclean election "
                     f"of replica {broker} of a leaderless partition at its broker's unfence", m,
                     p[2] - p[1], rtype="PARTITION_CHANGE_RECORD", liveness=(_UNCLEAN, key[0], key[1]))


def _missing_sweep_mutants(log_dir: Path, frames, pos, per_kind: int,
                           rng: random.Random) -> Iterator[Mutant]:
    """The removal of an expired delegation token left out: a RemoveDelegationTokenRecord of a
    token whose expiration (or max) timestamp is before the removal's time (the controller's
    sweep, or an expire request that removes at once), where the log then runs two bounds (the
    log's settings: SETTINGS_FILE) with no record about the token. Left out, the token stays in
    the image expired past the bound, which no controller that sweeps allows: its sweep runs
    every check interval, and it never renews an expired token (delegation_token_expired)."""
    bound = condition_bounds_seconds(CoreSettings.of(log_settings(log_dir))).get(DELEGATION_TOKEN_EXPIRED_NAME)
    if bound is None:
        return
    last_ms = max((f.timestamp_ms for f in frames if f.records), default=0)
    deadlines: dict[str, int | None] = {}
    swept = []
    for fi, ri, off in pos:
        r = frames[fi].records[ri]
        if r.data is None or r.type not in ("DELEGATION_TOKEN_RECORD", "REMOVE_DELEGATION_TOKEN_RECORD"):
            continue
        token_id = r.data.get("tokenId")
        if r.type == "DELEGATION_TOKEN_RECORD":
            deadlines[token_id] = token_deadline(r.data)
            continue
        deadline = deadlines.pop(token_id, None)
        if deadline is not None and deadline < frames[fi].timestamp_ms:
            swept.append(((fi, ri, off), token_id))
    candidates = []
    for p, token_id in swept:
        after = _first_after(frames, pos, p[2], lambda r, t=token_id: r.type in (
            "DELEGATION_TOKEN_RECORD", "REMOVE_DELEGATION_TOKEN_RECORD") and r.data.get("tokenId") == t)
        until_ms = frames[after[0]].timestamp_ms if after else last_ms
        if until_ms - frames[p[0]].timestamp_ms > 2 * bound * 1000:
            candidates.append((p, token_id))
    for p, token_id in _sample(candidates, per_kind, rng):
        m = _copy(frames)
        del m[p[0]].records[p[1]]
        yield Mutant("missing-liveness", f"RemoveDelegationTokenRecord at {p[2]} left out: the sweep of "
                     f"expired token '{token_id}'", m, p[2], rtype="REMOVE_DELEGATION_TOKEN_RECORD",
                     liveness=(DELEGATION_TOKEN_EXPIRED_NAME, *token_key(token_id)))


def _unfences(r: Rec, broker: int) -> bool:
    """Whether `r` unfences `broker` (either record type a controller writes for it)."""
    return r.data is not None and (
        (r.type == "UNFENCE_BROKER_RECORD" and r.data.get("id") == broker)
        or (r.type == "BROKER_REGISTRATION_CHANGE_RECORD" and r.data.get("brokerId") == broker
            and r.data.get("fenced") == -1))


def _leader_before(frames, pos, offset: int, topic_id: str, partition: int) -> int | None:
    leader = None
    for fi, ri, o in pos:
        if o >= offset:
            break
        r = frames[fi].records[ri]
        if r.data is None or r.data.get("topicId") != topic_id or r.data.get("partitionId") != partition:
            continue
        if r.type == "PARTITION_RECORD" or (r.type == "PARTITION_CHANGE_RECORD"
                                            and r.data.get("leader", -2) != -2):
            leader = r.data.get("leader")
    return leader


def _replaced(frames: list[Frame], p, new: Rec) -> list[Frame]:
    m = _copy(frames)
    m[p[0]].records[p[1]] = new
    return m


def _partition_before(frames, pos, offset: int, topic_id: str, partition: int) -> dict | None:
    state = None
    for fi, ri, o in pos:
        if o >= offset:
            break
        r = frames[fi].records[ri]
        if r.data is None or r.data.get("topicId") != topic_id or r.data.get("partitionId") != partition:
            continue
        if r.type == "PARTITION_RECORD":
            state = dict(r.data)
        elif r.type == "PARTITION_CHANGE_RECORD" and state is not None and r.data.get("replicas") is not None:
            state["replicas"] = r.data["replicas"]
    return state


# typed configs the log may hold, each with a value its type rules out
_TYPED_CONFIGS = {"min.insync.replicas": "two", "segment.bytes": "100MB", "retention.ms": "7d",
                  "cleanup.policy": "compact,sideways", "compression.type": "zip",
                  "unclean.leader.election.enable": "yes", "max.message.bytes": "1e6"}


def _previous_epoch(frames, pos, offset: int, broker_id: int) -> int:
    epoch = -1
    for fi, ri, o in pos:
        r = frames[fi].records[ri]
        if o < offset and r.type == "REGISTER_BROKER_RECORD" and r.data.get("brokerId") == broker_id:
            epoch = r.data["brokerEpoch"]
    return epoch


def _first_registration(frames, pos, broker_id: int) -> int | None:
    for fi, ri, o in pos:
        r = frames[fi].records[ri]
        if r.type == "REGISTER_BROKER_RECORD" and r.data.get("brokerId") == broker_id:
            return o
    return None


# ---------------------------------------------------------------- scoring


def catalog_without(disabled: tuple[str, ...] = ()):
    """The shipped catalog with some rules disabled (to score the auditor without them)."""
    catalog = load_catalog()
    unknown = set(disabled) - {s.rule_id for s in catalog.rules}
    if unknown:
        raise KeyError(f"no rule {sorted(unknown)} in the catalog")
    return Catalog([replace(s, enabled=False) if s.rule_id in disabled else s for s in catalog.rules],
                   catalog.directory)


def log_settings(log_dir: Path) -> dict:
    """The auditor's settings from the controller's static configs kept beside a log
    (SETTINGS_FILE, as `--server-properties` reads it: here its
    leader.imbalance.check.interval.seconds); {} without one (the defaults: Kafka's)."""
    src = metadata_dir(log_dir)
    path = (src.parent if src.name == METADATA_DIR else src) / SETTINGS_FILE
    return settings_from_properties(path) if path.exists() else {}


@dataclass
class Audited:
    """What the audit of a log gives: its findings, every condition interval (closed ones
    with their end, open ones as of the log's newest record) and each liveness bound."""

    violations: list
    intervals: list[ConditionChange]
    last_ms: int
    bounds: dict[str, int]
    controller_changes_ms: list[tuple[int, int]]

    def overdue(self) -> list[ConditionChange]:
        """The intervals open longer than their bound, in the log's time (as `check` counts
        them: past_bound), and every interval of a condition judged where an operation ends."""
        return [c for c in self.intervals if c.condition in AT_OPERATION_END
                or past_bound(c.condition, c.start_ms, self.last_ms if c.end_ms is None else c.end_ms,
                              self.bounds, self.controller_changes_ms)]


def audit(log_dir: Path, catalog=None) -> Audited:
    """The audit `kraft-audit check --assume-committed` runs on a log dir, with the settings
    kept beside it: the core's findings and each snapshot's comparison with the log, and the
    condition intervals. Committed as a whole: these are the final logs of quiesced clusters
    (or edits of them), whose tail a quorum's log alone cannot prove (core/raft.py)."""
    auditor = Auditor(catalog if catalog is not None else load_catalog(),
                      {**log_settings(log_dir), "assume_committed": True}, partition_rows=False)
    cluster_id = read_meta_properties(log_dir).get("cluster.id", "")
    out = auditor.process(read_log_dir(log_dir, cluster_id))
    violations = list(out.violations)
    for comparison in verify_snapshots(log_dir, cluster_id):
        violations.extend(auditor.judge_snapshot(comparison).violations)
    intervals = {c.interval_id: c for c in out.conditions}  # a closing row replaces its opening
    intervals.update((c.interval_id, c) for c in auditor.open_conditions())
    return Audited(violations, list(intervals.values()), auditor.last_timestamp_ms,
                   condition_bounds_seconds(auditor.settings), auditor.controller_changes_ms)


def audit_log(log_dir: Path, catalog=None) -> list:
    """Every finding `kraft-audit check` gives on a log dir: the core's, and each snapshot's
    comparison with the log."""
    return audit(log_dir, catalog).violations


def batch_of(log_dir: Path, offset: int) -> tuple[int, int]:
    """The atomic batch (first, last offset) holding `offset` in a log dir."""
    for _base, segment in list_segments(log_dir):
        for item in iter_batches(segment.read_bytes()):
            if isinstance(item, Batch) and item.base_offset <= offset <= item.base_offset + item.last_offset_delta:
                return item.base_offset, item.base_offset + item.last_offset_delta
    return offset, offset


def flagged(mutant: Mutant, log_dir: Path, audited: Audited) -> bool:
    """A finding in the mutated batch; for a liveness mutant, its condition open on its
    partition at the mutated batch's end and for longer than the controller's bound (a
    condition judged where an operation ends: open at all)."""
    first, last = batch_of(log_dir, mutant.offset)
    if mutant.liveness is not None:
        condition, topic_id, partition = mutant.liveness
        return any(c.condition == condition and _key(c) == (topic_id, partition)
                   and c.start_offset <= last and (c.end_offset is None or c.end_offset > last)
                   for c in audited.overdue())
    return any(first <= v.offset <= last for v in audited.violations)


def _key(c: ConditionChange) -> tuple[str, int]:
    """The partition an interval is about, or its token's key (token_key)."""
    return token_key(c.resource) if c.resource is not None else (c.topic_id, c.partition)


@dataclass
class Score:
    mutants: int = 0
    caught: int = 0
    missed: list[str] = field(default_factory=list)

    @property
    def percent(self) -> float:
        return 100.0 * self.caught / self.mutants if self.mutants else 100.0


def score(log_dirs: list[Path], work: Path, per_kind: int = 4, disabled: tuple[str, ...] = ()
          ) -> tuple[dict[str, Score], dict[str, int], dict[str, dict[str, Score]]]:
    """The score per class over every mutant of `log_dirs` (with the `disabled` rules off), the
    findings on each unmutated log, and the score per record type and class."""
    catalog = catalog_without(disabled)
    scores = {c: Score() for c in CLASSES}
    by_type: dict[str, dict[str, Score]] = {}
    clean = {}
    for log_dir in log_dirs:
        name = _log_name(log_dir)
        unmutated = audit(log_dir, catalog)
        clean[name] = len(unmutated.violations) + len(unmutated.overdue())
        for n, mutant in enumerate(generate(log_dir, per_kind)):
            target = work / f"{name.replace('/', '-')}-{n}"
            write_log(log_dir, mutant.frames, target, mutant.snapshots)
            hit = flagged(mutant, target, audit(target, catalog))
            for s in (scores[mutant.cls], by_type.setdefault(mutant.rtype, {}).setdefault(mutant.cls, Score())):
                s.mutants += 1
                if hit:
                    s.caught += 1
                else:
                    s.missed.append(f"{name}: {mutant.what}")
            shutil.rmtree(target)
    return scores, clean, dict(sorted(by_type.items()))


def table(scores: dict[str, Score]) -> str:
    lines = ["| class | mutants | flagged | score |", "|---|---|---|---|"]
    for cls, s in scores.items():
        lines.append(f"| {cls} | {s.mutants} | {s.caught} | {s.percent:.0f}% |")
    return "\n".join(lines)


def type_table(by_type: dict[str, dict[str, Score]]) -> str:
    """The score per record type (rows) and class (columns): flagged/mutants, blank where the
    type has no mutant of that class."""
    lines = ["| record type | " + " | ".join(CLASSES) + " | all |", "|---|" + "---|" * (len(CLASSES) + 1)]
    for rtype, per in by_type.items():
        cells = [f"{per[c].caught}/{per[c].mutants}" if c in per else "" for c in CLASSES]
        n, k = sum(s.mutants for s in per.values()), sum(s.caught for s in per.values())
        lines.append(f"| {rtype} | " + " | ".join(cells) + f" | {100 * k / n:.0f}% |")
    return "\n".join(lines)


def _log_name(log_dir: Path) -> str:
    """kraft-real/<name> or kraft-story/<version>: the fixture's folder and its own name."""
    return f"{log_dir.parent.name}/{log_dir.name}"


def fixture_logs() -> list[Path]:
    """The real logs kept in tests/fixtures: kraft-real (from public repositories),
    kraft-story (the every-record-type story on two 4.x lines and a 3.x line) and
    kraft-liveness (periodic preferred elections and the controller's own unclean election on
    a 4.x and a 3.x line, each with the settings of its cluster beside it: SETTINGS_FILE)."""
    root = Path(__file__).resolve().parents[2] / "tests" / "fixtures"
    return [p for folder in ("kraft-real", "kraft-story", "kraft-liveness")
            for p in sorted((root / folder).iterdir()) if p.is_dir()]


def main(argv: list[str]) -> int:
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(prog="python -m kraft_audit.testing.mutate")
    parser.add_argument("logs", nargs="*",
                        help="log dirs (default: tests/fixtures/kraft-real/*, kraft-story/* and "
                        "kraft-liveness/*)")
    parser.add_argument("--without", action="append", default=[], metavar="RULE",
                        help="score with this rule disabled (repeatable)")
    args = parser.parse_args(argv)
    dirs = [Path(a) for a in args.logs] or fixture_logs()
    with tempfile.TemporaryDirectory() as work:
        scores, clean, by_type = score(dirs, Path(work), disabled=tuple(args.without))
    for name, n in clean.items():
        print(f"unmutated {name}: {n} findings and intervals open past their bound")
    print(table(scores))
    print(type_table(by_type))
    for cls, s in scores.items():
        for what in s.missed:
            print(f"missed [{cls}] {what}")
    return 0 if all(n == 0 for n in clean.values()) and all(s.percent >= 95 for s in scores.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
