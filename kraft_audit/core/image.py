"""The whole metadata image, every record type, as a broker's MetadataLoader builds it;
and the comparison of a snapshot's image with the log's image at the snapshot's end.

A broker that loads `<endOffset>-<epoch>.checkpoint` and a broker that replays the log
up to offset endOffset - 1 must hold the same image: that is what makes a snapshot a
snapshot. `Image` keeps one value per resource (a topic, a partition, a broker, a config
key, a feature, an ACL, a quota, a SCRAM credential, a delegation token, a controller,
the producer-id block, the migration state); `Image.diff` names every resource where two
images differ, with both values. `verify_snapshots` replays a log dir and compares each
snapshot whose end the log still holds, from offset 0 or from an earlier snapshot.

The auditor's `ClusterState` keeps only what its rules read; this is separate so the
comparison covers every record type and costs nothing on the auditor's hot path.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from kraft_audit.core.codec.logdir import (list_segments, list_snapshots, metadata_dir,
                                           read_file_events, read_meta_properties)
from kraft_audit.core.events import KIND_RECORD, MetadataEvent
from kraft_audit.core.replay.partition import FIELDS as PARTITION_FIELDS
from kraft_audit.core.replay.partition import Partition
from kraft_audit.errors import RecordDecodeError

# Resource values a snapshot writes although the log never wrote them: the image's
# initial values (ZkMigrationStateRecord NONE is written into every snapshot).
_INITIAL = {("zk-migration",): {"zkMigrationState": 0}}
# kraft.version belongs to the Raft layer (its KRaftVersion control record): a broker's
# image skips a FeatureLevelRecord of that name, so a snapshot never re-states one that a
# controller wrote to the log (a real controller did, on a `--release-version` upgrade).
_RAFT_FEATURE = "kraft.version"
# Broker fields the controller keeps in its registration and re-writes whole in a snapshot.
_BROKER_FLAGS = ("fenced", "inControlledShutdown")


class Difference(NamedTuple):
    """One resource where the snapshot and the log disagree (None: absent on that side)."""

    resource: tuple
    log_value: Any
    snapshot_value: Any

    def describe(self) -> str:
        return f"{_name(self.resource)}: log {_show(self.log_value)}, snapshot {_show(self.snapshot_value)}"


def _name(resource: tuple) -> str:
    kind, *rest = resource
    return kind + (" " + "/".join(str(r) for r in rest) if rest else "")


def _show(value: Any) -> str:
    return "absent" if value is None else repr(value)


class Image:
    """resource key -> value, applied record by record (see `apply`)."""

    def __init__(self) -> None:
        self.entries: dict[tuple, Any] = {}
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.topic_partitions: dict[str, set[int]] = {}

    def apply(self, event: MetadataEvent) -> None:
        """Apply one record as the image does; records that cannot apply (unknown partition,
        mistyped fields) are left out: the auditor quarantines and reports them."""
        if event.kind != KIND_RECORD:
            return
        handler = _APPLY.get(event.type)
        if handler is not None:
            try:
                handler(self, event.data)
            except (KeyError, TypeError, ValueError, AttributeError, IndexError):
                pass

    # -- record types

    def _topic(self, d: dict) -> None:
        self.entries[("topic", d["topicId"])] = d["name"]

    def _remove_topic(self, d: dict) -> None:
        topic_id = d["topicId"]
        name = self.entries.pop(("topic", topic_id), None)
        if name is not None:  # the image drops a deleted topic's configs with it
            for key in [k for k in self.entries if k[0] == "config" and k[1] == 2 and k[2] == name]:
                del self.entries[key]
        for p in self.topic_partitions.pop(topic_id, ()):
            self.partitions.pop((topic_id, p), None)

    def _partition(self, d: dict) -> None:
        part = Partition.from_record(d)
        self.partitions[(part.topic_id, part.partition)] = part
        self.topic_partitions.setdefault(part.topic_id, set()).add(part.partition)

    def _partition_change(self, d: dict) -> None:
        key = (d["topicId"], d["partitionId"])
        self.partitions[key] = self.partitions[key].merged(d)

    def _clear_elr(self, d: dict) -> None:
        name = d.get("topicName") or ""
        topics = [key[1] for key, value in self.entries.items()
                  if key[0] == "topic" and (not name or value == name)]
        for topic_id in topics:
            for p in self.topic_partitions.get(topic_id, ()):
                self.partitions[(topic_id, p)] = self.partitions[(topic_id, p)].with_elr_cleared()

    def _config(self, d: dict) -> None:
        key = ("config", d["resourceType"], d.get("resourceName") or "", d["name"])
        if d.get("value") is None:
            self.entries.pop(key, None)
        else:
            self.entries[key] = d["value"]

    def _feature(self, d: dict) -> None:
        if d.get("name") == _RAFT_FEATURE:
            return
        if d.get("featureLevel", 0) == 0:
            self.entries.pop(("feature", d["name"]), None)
        else:
            self.entries[("feature", d["name"])] = d["featureLevel"]

    def _register_broker(self, d: dict) -> None:
        self.entries[("broker", d["brokerId"])] = dict(d)

    def _unregister_broker(self, d: dict) -> None:
        self.entries.pop(("broker", d["brokerId"]), None)

    def _broker_flags(self, broker_id: int, **changes) -> None:
        broker = self.entries.get(("broker", broker_id))
        if broker is not None:
            self.entries[("broker", broker_id)] = {**broker, **changes}

    def _fence(self, d: dict) -> None:
        self._broker_flags(d["id"], fenced=True)

    def _unfence(self, d: dict) -> None:
        self._broker_flags(d["id"], fenced=False)

    def _broker_change(self, d: dict) -> None:
        changes: dict[str, Any] = {}
        if d.get("fenced", 0) == 1:
            changes["fenced"] = True
        elif d.get("fenced", 0) == -1:
            changes["fenced"] = False
        if d.get("inControlledShutdown", 0) == 1:
            changes["inControlledShutdown"] = True
        if d.get("logDirs"):
            changes["logDirs"] = list(d["logDirs"])
        self._broker_flags(d["brokerId"], **changes)

    def _controller(self, d: dict) -> None:
        self.entries[("controller", d["controllerId"])] = dict(d)

    def _unregister_controller(self, d: dict) -> None:
        self.entries.pop(("controller", d["controllerId"]), None)

    def _producer_ids(self, d: dict) -> None:
        # the image keeps the next block's start only (a snapshot writes broker -1, epoch -1)
        self.entries[("producer-ids",)] = d["nextProducerId"]

    def _acl(self, d: dict) -> None:
        self.entries[("acl", d["id"])] = dict(d)

    def _remove_acl(self, d: dict) -> None:
        self.entries.pop(("acl", d["id"]), None)

    def _quota(self, d: dict) -> None:
        entity = tuple(sorted((e["entityType"], e.get("entityName")) for e in d["entity"]))
        key = ("quota", entity, d["key"])
        if d.get("remove"):
            self.entries.pop(key, None)
        else:
            self.entries[key] = d["value"]

    def _scram(self, d: dict) -> None:
        self.entries[("scram", d["name"], d["mechanism"])] = dict(d)

    def _remove_scram(self, d: dict) -> None:
        self.entries.pop(("scram", d["name"], d["mechanism"]), None)

    def _token(self, d: dict) -> None:
        self.entries[("delegation-token", d["tokenId"])] = dict(d)

    def _remove_token(self, d: dict) -> None:
        self.entries.pop(("delegation-token", d["tokenId"]), None)

    def _zk_migration(self, d: dict) -> None:
        self.entries[("zk-migration",)] = {"zkMigrationState": d["zkMigrationState"]}

    # -- comparison

    def diff(self, snapshot: Image) -> list[Difference]:
        """Every resource where this image (the log's) and `snapshot`'s differ."""
        out: list[Difference] = []
        for key in sorted(self.entries.keys() | snapshot.entries.keys(), key=repr):
            mine = self.entries.get(key, _INITIAL.get(key))
            theirs = snapshot.entries.get(key, _INITIAL.get(key))
            if key[0] in ("broker", "controller") and mine is not None and theirs is not None:
                mine, theirs = _common_fields(_ordered(mine), _ordered(theirs))
            if mine != theirs:
                out.append(Difference(key, mine, theirs))
        # a snapshot written while ELR is off leaves the ELR fields out (the image writer drops
        # them): they are compared only when the log's image has the ELR feature on
        elr = (self.entries.get(("feature", "eligible.leader.replicas.version")) or 0) >= 1
        for key in sorted(self.partitions.keys() | snapshot.partitions.keys()):
            mine, theirs = self.partitions.get(key), snapshot.partitions.get(key)
            if mine is None or theirs is None:
                out.append(Difference(("partition", *key), mine and mine.as_dict(),
                                      theirs and theirs.as_dict()))
                continue
            fields = [n for n in PARTITION_FIELDS if getattr(mine, n) != getattr(theirs, n)
                      and (elr or n not in ("elr", "last_known_elr"))]
            if fields == ["directories"] and not (mine.directories and theirs.directories):
                continue  # one side written before directories were assigned
            if fields:  # one difference per partition: the fields that differ, both sides
                out.append(Difference(("partition", *key),
                                      {n: _plain(getattr(mine, n)) for n in fields},
                                      {n: _plain(getattr(theirs, n)) for n in fields}))
        return out


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _ordered(registration: dict) -> dict:
    """A registration's endpoints and supported features are maps in Kafka's image: their
    order in a record means nothing; a null log-dir list holds none."""
    out = dict(registration)
    for name in ("logDirs", "cordonedLogDirs"):  # nullable lists: null holds none
        if name in out and out[name] is None:
            out[name] = []
    for name in ("endPoints", "features"):
        if isinstance(out.get(name), list):
            out[name] = sorted(out[name], key=lambda e: repr(sorted(e.items())) if isinstance(e, dict) else repr(e))
    return out


def _common_fields(a: dict, b: dict) -> tuple[dict, dict]:
    """A registration written at two record versions: compare the fields both versions have
    (a field a version lacks is not a difference in the image)."""
    common = a.keys() & b.keys()
    return {k: a[k] for k in common}, {k: b[k] for k in common}


_APPLY = {
    "TOPIC_RECORD": Image._topic,
    "REMOVE_TOPIC_RECORD": Image._remove_topic,
    "PARTITION_RECORD": Image._partition,
    "PARTITION_CHANGE_RECORD": Image._partition_change,
    "CLEAR_ELR_RECORD": Image._clear_elr,
    "CONFIG_RECORD": Image._config,
    "FEATURE_LEVEL_RECORD": Image._feature,
    "REGISTER_BROKER_RECORD": Image._register_broker,
    "UNREGISTER_BROKER_RECORD": Image._unregister_broker,
    "FENCE_BROKER_RECORD": Image._fence,
    "UNFENCE_BROKER_RECORD": Image._unfence,
    "BROKER_REGISTRATION_CHANGE_RECORD": Image._broker_change,
    "REGISTER_CONTROLLER_RECORD": Image._controller,
    "UNREGISTER_CONTROLLER_RECORD": Image._unregister_controller,
    "PRODUCER_IDS_RECORD": Image._producer_ids,
    "ACCESS_CONTROL_ENTRY_RECORD": Image._acl,
    "REMOVE_ACCESS_CONTROL_ENTRY_RECORD": Image._remove_acl,
    "CLIENT_QUOTA_RECORD": Image._quota,
    "USER_SCRAM_CREDENTIAL_RECORD": Image._scram,
    "REMOVE_USER_SCRAM_CREDENTIAL_RECORD": Image._remove_scram,
    "DELEGATION_TOKEN_RECORD": Image._token,
    "REMOVE_DELEGATION_TOKEN_RECORD": Image._remove_token,
    "ZK_MIGRATION_STATE_RECORD": Image._zk_migration,
}


def image_of(events: Iterable[MetadataEvent]) -> Image:
    image = Image()
    for event in events:
        if isinstance(event, MetadataEvent):
            image.apply(event)
    return image


class SnapshotComparison(NamedTuple):
    """A snapshot compared with the log: where its image belongs (end offset - 1, the time
    of its last record), from where the log was replayed, and what differs."""

    file: str
    end_offset: int
    timestamp_ms: int
    replayed_from: str  # "offset 0" or the earlier snapshot the replay started from
    differences: list[Difference]
    # how the file breaks the snapshot's frame (a SnapshotHeader first, a SnapshotFooter last)
    framing: tuple[str, ...] = ()


# `replayed_from` of the snapshot a log dir whose start is gone boots from: judged alone
BOOT_SNAPSHOT = "nothing (the log starts at this snapshot)"


def verify_snapshots(path: str | os.PathLike, cluster_id: str | None = None,
                     after_offset: int = -1) -> Iterator[SnapshotComparison]:
    """Compare every snapshot of a log dir whose records the log still holds with the image
    replayed to its end (`after_offset`: only snapshots ending after it). The replay starts
    at offset 0 when the oldest segment starts there, else at the newest earlier snapshot
    (a snapshot with neither before it cannot be compared: only its frame is judged, as the
    comparison `replayed_from` BOOT_SNAPSHOT, when it is broken)."""
    directory = metadata_dir(path)
    if cluster_id is None:
        cluster_id = read_meta_properties(directory).get("cluster.id", "")
    segments = list_segments(directory)
    snapshots = list_snapshots(directory)
    if not segments or not snapshots:
        return
    first = segments[0][0]
    image: Image | None = None
    replayed_from = "offset 0"
    next_offset = 0
    if first > 0:  # the start is gone: boot from the newest snapshot at or after it
        usable = [s for s in snapshots if s[0] >= first]
        if not usable:
            return
        end, _epoch, boot = usable[0]
        ends: list = []
        image = image_of(_framed(read_file_events(boot, cluster_id), ends))
        replayed_from, next_offset = boot.name, end
        # the snapshot an audit of this dir boots from: no log to compare it with, but a
        # broken frame means it (and every image built on it) is partial
        if _framing(*ends) and end - 1 > after_offset:
            # a headless snapshot: the time of its first batch
            written = next((e.timestamp_ms for e in read_file_events(boot, cluster_id)
                            if isinstance(e, MetadataEvent)), 0)
            yield SnapshotComparison(boot.name, end, _snapshot_time(boot, cluster_id, written),
                                     BOOT_SNAPSHOT, [], _framing(*ends))
    else:
        image = Image()
    pending = [s for s in snapshots if s[0] > next_offset and s[0] - 1 > after_offset]
    if not pending:
        return
    events = _log_events(segments, cluster_id, next_offset)
    reached = next_offset - 1
    for end, _epoch, snap in pending:
        last_ms = 0
        for event in events:
            image.apply(event)
            reached, last_ms = event.offset, event.timestamp_ms
            if reached >= end - 1:
                break
        if reached < end - 1:
            return  # the log ends before this snapshot does: nothing to compare it with
        ends: list = []
        theirs = image_of(_framed(read_file_events(snap, cluster_id), ends))
        yield SnapshotComparison(snap.name, end, _snapshot_time(snap, cluster_id, last_ms),
                                 replayed_from, image.diff(theirs), _framing(*ends))


def _framed(events, ends: list):
    """The events, passed through; `ends` gets the types of the first and the last."""
    first = last = None
    for event in events:
        if isinstance(event, MetadataEvent):
            if first is None:
                first = event.type
            last = event.type
        yield event
    ends.extend((first, last))


def _framing(first: str | None, last: str | None) -> tuple[str, ...]:
    """Raft's snapshot writer opens every snapshot with a SnapshotHeader and closes it with a
    SnapshotFooter (the reader refuses a snapshot without the header)."""
    problems = []
    if first != "SNAPSHOT_HEADER":
        problems.append(f"starts with {first or 'nothing'}, not a SnapshotHeader")
    if last != "SNAPSHOT_FOOTER":
        problems.append(f"ends with {last or 'nothing'}, not a SnapshotFooter")
    return tuple(problems)


# A comparison as JSON-able plain data and back (the shipper sends it through the topic):
# tuples and bytes are tagged so the values, and the finding's text, come back the same.
_TUPLE, _BYTES = "__tuple__", "__bytes__"


def _to_plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return {_TUPLE: [_to_plain(v) for v in value]}
    if isinstance(value, list):
        return [_to_plain(v) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return {k: _to_plain(v) for k, v in value.items()}
        return {_TUPLE: [], "__items__": [[_to_plain(k), _to_plain(v)] for k, v in value.items()]}
    if isinstance(value, (bytes, bytearray)):
        return {_BYTES: bytes(value).hex()}
    return value


def _from_plain(value: Any) -> Any:
    if isinstance(value, list):
        return [_from_plain(v) for v in value]
    if isinstance(value, dict):
        if "__items__" in value:
            return {_from_plain(k): _from_plain(v) for k, v in value["__items__"]}
        if _TUPLE in value:
            return tuple(_from_plain(v) for v in value[_TUPLE])
        if _BYTES in value:
            return bytes.fromhex(value[_BYTES])
        return {k: _from_plain(v) for k, v in value.items()}
    return value


def comparison_to_plain(comparison: SnapshotComparison) -> dict:
    return {"file": comparison.file, "endOffset": comparison.end_offset,
            "timestampMs": comparison.timestamp_ms, "replayedFrom": comparison.replayed_from,
            "differences": [[_to_plain(d.resource), _to_plain(d.log_value), _to_plain(d.snapshot_value)]
                            for d in comparison.differences], "framing": list(comparison.framing)}


def comparison_from_plain(data: dict) -> SnapshotComparison:
    """The comparison `comparison_to_plain` wrote (RecordDecodeError when it is not one)."""
    try:
        differences = [Difference(tuple(_from_plain(r)), _from_plain(a), _from_plain(b))
                       for r, a, b in data["differences"]]
        return SnapshotComparison(str(data["file"]), int(data["endOffset"]), int(data["timestampMs"]),
                                  str(data["replayedFrom"]), differences,
                                  tuple(str(p) for p in data.get("framing") or ()))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise RecordDecodeError(f"not a snapshot comparison: {type(exc).__name__}: {exc}") from None


def _log_events(segments, cluster_id: str, start: int) -> Iterator[MetadataEvent]:
    for _base, segment in segments:
        for item in read_file_events(segment, cluster_id):
            if isinstance(item, MetadataEvent) and item.offset >= start:
                yield item


def _snapshot_time(snap, cluster_id: str, default: int) -> int:
    for event in read_file_events(snap, cluster_id):
        if isinstance(event, MetadataEvent) and event.type == "SNAPSHOT_HEADER":
            return event.data.get("lastContainedLogTimestamp") or event.timestamp_ms or default
        break
    return default
