"""Mutation testing over real metadata logs: mutants of a catalog of controller mistakes.

From a real `__cluster_metadata-0` log dir (tests/fixtures/kraft-real), each mutant is the
same log with one controller mistake in it, written back as Kafka lays a log out: the
records are changed at the record level and every batch is re-framed (offsets, CRC-32C), so
the codec reads each mutant as a well-formed log. Every class below states why no correct
controller could write its mutants; a generator only emits a mutant when that holds in the
log at hand (the record it breaks has what makes it wrong: a later dependent, a partition
that exists, ...).

The score of a class is the share of its mutants the auditor flags (the core,
single-process, as `kraft-audit check` runs it: `audit_log`) with a finding at the mutated
place: an offset of the atomic batch holding the first record that makes the log impossible
(or, for a snapshot, the snapshot's end offset - 1).

    python -m kraft_audit.testing.mutate [LOG_DIR ...]   # the score per class
"""

from __future__ import annotations

import random
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
from kraft_audit.core.codec.records import encode_value
from kraft_audit.core.events import KIND_RECORD, MetadataEvent
from kraft_audit.core.image import verify_snapshots
from kraft_audit.core.rules.catalog import Catalog, load_catalog
from kraft_audit.core.rules.docs import MUTATION_CLASSES

CONTROL_BIT = 0x20
INT32_MAX = 2**31 - 1


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
    for name in (META_PROPERTIES, BOOTSTRAP_CHECKPOINT):
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
        if snapshots and snap.name in snapshots:
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
    """Mutants of every class from one real log dir (a few per kind of mistake)."""
    rng = random.Random(seed)
    frames = read_frames(metadata_dir(log_dir))
    pos = _positions(frames)

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


def audit_log(log_dir: Path, catalog=None) -> list:
    """Every finding `kraft-audit check` gives on a log dir: the core's, and each snapshot's
    comparison with the log."""
    auditor = Auditor(catalog if catalog is not None else load_catalog())
    cluster_id = read_meta_properties(log_dir).get("cluster.id", "")
    out = auditor.process(read_log_dir(log_dir, cluster_id))
    violations = list(out.violations)
    for comparison in verify_snapshots(log_dir, cluster_id):
        violations.extend(auditor.judge_snapshot(comparison).violations)
    return violations


def batch_of(log_dir: Path, offset: int) -> tuple[int, int]:
    """The atomic batch (first, last offset) holding `offset` in a log dir."""
    for _base, segment in list_segments(log_dir):
        for item in iter_batches(segment.read_bytes()):
            if isinstance(item, Batch) and item.base_offset <= offset <= item.base_offset + item.last_offset_delta:
                return item.base_offset, item.base_offset + item.last_offset_delta
    return offset, offset


def flagged(mutant: Mutant, log_dir: Path, violations: list) -> bool:
    first, last = batch_of(log_dir, mutant.offset)
    return any(first <= v.offset <= last for v in violations)


@dataclass
class Score:
    mutants: int = 0
    caught: int = 0
    missed: list[str] = field(default_factory=list)

    @property
    def percent(self) -> float:
        return 100.0 * self.caught / self.mutants if self.mutants else 100.0


def score(log_dirs: list[Path], work: Path, per_kind: int = 4,
          disabled: tuple[str, ...] = ()) -> tuple[dict[str, Score], dict[str, int]]:
    """The score per class over every mutant of `log_dirs` (with the `disabled` rules off), and
    the findings on each unmutated log."""
    catalog = catalog_without(disabled)
    scores = {c: Score() for c in CLASSES}
    clean = {}
    for log_dir in log_dirs:
        clean[log_dir.name] = len(audit_log(log_dir, catalog))
        for n, mutant in enumerate(generate(log_dir, per_kind)):
            target = work / f"{log_dir.name}-{n}"
            write_log(log_dir, mutant.frames, target, mutant.snapshots)
            found = audit_log(target, catalog)
            s = scores[mutant.cls]
            s.mutants += 1
            if flagged(mutant, target, found):
                s.caught += 1
            else:
                s.missed.append(f"{log_dir.name}: {mutant.what}")
            shutil.rmtree(target)
    return scores, clean


def table(scores: dict[str, Score]) -> str:
    lines = ["| class | mutants | flagged | score |", "|---|---|---|---|"]
    for cls, s in scores.items():
        lines.append(f"| {cls} | {s.mutants} | {s.caught} | {s.percent:.0f}% |")
    return "\n".join(lines)


def fixture_logs() -> list[Path]:
    """The real logs kept in tests/fixtures/kraft-real."""
    root = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "kraft-real"
    return sorted(p for p in root.iterdir() if p.is_dir())


def main(argv: list[str]) -> int:
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(prog="python -m kraft_audit.testing.mutate")
    parser.add_argument("logs", nargs="*", help="log dirs (default: tests/fixtures/kraft-real/*)")
    parser.add_argument("--without", action="append", default=[], metavar="RULE",
                        help="score with this rule disabled (repeatable)")
    args = parser.parse_args(argv)
    dirs = [Path(a) for a in args.logs] or fixture_logs()
    with tempfile.TemporaryDirectory() as work:
        scores, clean = score(dirs, Path(work), disabled=tuple(args.without))
    for name, n in clean.items():
        print(f"unmutated {name}: {n} findings")
    print(table(scores))
    for cls, s in scores.items():
        for what in s.missed:
            print(f"missed [{cls}] {what}")
    return 0 if all(n == 0 for n in clean.values()) and all(s.percent >= 95 for s in scores.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
