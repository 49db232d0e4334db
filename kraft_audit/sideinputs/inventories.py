"""Log-dir inventories: the output of `kafka-log-dirs --describe`
(org.apache.kafka.tools.LogDirsCommand), one run per file.

The tool prints two status lines and then one JSON document on one line:

    Querying brokers for log directories information
    Received log directory information from brokers 1,2,3
    {"brokers":[{"broker":1,"logDirs":[{"partitions":[{"partition":"t-0","size":0,
      "offsetLag":0,"isFuture":false}],"error":null,"logDir":"/var/lib/kafka"}]}],"version":1}

Each broker entry becomes one event (kind "log_dirs", type BROKER_LOG_DIRS,
data {brokerId, logDirs}); what cannot be used becomes a `Quarantined` row.

Replicas that Kafka itself finds stray when a broker starts (KIP-550: not
assigned to it any more, or of a deleted topic) are renamed
`<topic>-<partition>.<id>-stray`, left on disk and kept out of
DescribeLogDirs, so kafka-log-dirs never shows them. `scan_log_dir` reads a
broker's log dir itself (`meta.properties` gives the broker id) into the same
shape, strays included (`isStray`), each replica with the topic id its
`partition.metadata` holds (`topicId`).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Iterator

from kraft_audit.core.codec.logdir import METADATA_DIR, read_meta_properties
from kraft_audit.core.events import BROKER_LOG_DIRS, KIND_LOG_DIRS, NO_OFFSET, MetadataEvent, Quarantined
from kraft_audit.sideinputs.registrations import UNKNOWN_CLUSTER

_RAW_LIMIT = 4096


def parse_inventory(text: str, cluster_id: str | None, source: str, timestamp_ms: int
                    ) -> Iterator[MetadataEvent | Quarantined]:
    """One inventory file: an event per broker. Positions are line numbers (1-based)
    for the document and, per broker, its index in the document."""
    cid = cluster_id or UNKNOWN_CLUSTER
    lines = text.splitlines()
    first = next((n for n, line in enumerate(lines) if line.lstrip().startswith("{")), None)
    if first is None:
        yield Quarantined(cid, source, 1, "log-dir inventory holds no JSON object",
                          text.encode()[:_RAW_LIMIT])
        return
    body = "\n".join(lines[first:])
    try:
        doc = json.loads(body)
        brokers = doc["brokers"]
        if not isinstance(brokers, list):
            raise TypeError("`brokers` is not a list")
    except (ValueError, KeyError, TypeError) as exc:
        yield Quarantined(cid, source, first + 1,
                          f"log-dir inventory is not kafka-log-dirs JSON: {exc}",
                          body.encode()[:_RAW_LIMIT])
        return
    version = doc.get("version")
    for i, entry in enumerate(brokers):
        problem = broker_entry_problem(entry)
        if problem:
            yield Quarantined(cid, source, i, f"log-dir inventory entry {i} {problem}",
                              json.dumps(entry).encode()[:_RAW_LIMIT])
            continue
        yield MetadataEvent(
            cluster_id=cid, source=source, position=i, offset=NO_OFFSET,
            batch_base_offset=NO_OFFSET, batch_last_offset=NO_OFFSET, timestamp_ms=timestamp_ms,
            kind=KIND_LOG_DIRS, type=BROKER_LOG_DIRS,
            version=version if isinstance(version, int) else 0,
            data={"brokerId": entry["broker"], "logDirs": entry.get("logDirs") or []})


def broker_entry_problem(entry: Any) -> str | None:
    """What makes one `brokers[i]` entry unusable, or None."""
    if not isinstance(entry, dict) or not _is_int(entry.get("broker")):
        return "has no broker id"
    log_dirs = entry.get("logDirs") or []
    if not isinstance(log_dirs, list):
        return "has a logDirs that is not a list"
    for d in log_dirs:
        if not isinstance(d, dict) or not isinstance(d.get("partitions") or [], list):
            return "has a log dir without a partitions list"
        for p in d.get("partitions") or []:
            if not isinstance(p, dict) or not isinstance(p.get("partition"), str):
                return "has a replica without a partition name"
            if p.get("size") is not None and not _is_int(p["size"]):
                return f"has a non-integer size for {p['partition']}"
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_kafka_log_dir(path: str | os.PathLike) -> bool:
    """A broker's (or controller's) log dir: formatted, so it holds meta.properties."""
    return (Path(path) / "meta.properties").is_file()


def scan_log_dir(path: str | os.PathLike, cluster_id: str | None, now_ms: int | None = None
                 ) -> Iterator[MetadataEvent | Quarantined]:
    """A broker's log dir on disk as an inventory (one event): every replica
    directory with its size, Kafka's `-stray` and `-future` ones marked; `-delete`
    ones (being deleted by Kafka) left out."""
    root = Path(path)
    props = read_meta_properties(root)
    named = props.get("cluster.id")
    cid = cluster_id or named or UNKNOWN_CLUSTER
    broker = props.get("node.id") or props.get("broker.id")
    if not (broker or "").lstrip("-").isdigit():
        yield Quarantined(cid, root.name, 0, f"{root.name}/meta.properties names no node.id")
        return
    if cluster_id and named and named != cluster_id:
        yield Quarantined(cid, root.name, 0, f"log dir {root.name} belongs to cluster {named}, "
                                             f"this input is configured for {cluster_id}")
        return
    replicas = []
    for entry in sorted(os.scandir(root), key=lambda e: e.name):
        if not entry.is_dir() or entry.name == METADATA_DIR:
            continue
        replica = _replica_dir(entry.name)
        if replica is None:
            continue
        replica["size"] = _size(entry.path)
        topic_id = _topic_id(entry.path)
        if topic_id:
            replica["topicId"] = topic_id
        replicas.append(replica)
    yield MetadataEvent(
        cluster_id=cid, source=root.name, position=0, offset=NO_OFFSET,
        batch_base_offset=NO_OFFSET, batch_last_offset=NO_OFFSET,
        timestamp_ms=int(time.time() * 1000) if now_ms is None else now_ms,
        kind=KIND_LOG_DIRS, type=BROKER_LOG_DIRS, version=0,
        data={"brokerId": int(broker), "logDirs": [
            {"logDir": str(root), "error": None, "partitions": replicas}]})


def _replica_dir(name: str) -> dict | None:
    """`orders-0`, `orders-0.<id>-future`, `orders-0.<id>-stray` (UnifiedLog's names)."""
    stray = future = False
    if name.endswith(("-stray", "-future", "-delete")):
        base, dot, _ = name.rpartition(".")
        if not dot:
            return None
        if name.endswith("-delete"):
            return None
        stray, future = name.endswith("-stray"), name.endswith("-future")
        name = base
    topic, dash, index = name.rpartition("-")
    if not dash or not topic or not index.isdigit():
        return None
    return {"partition": name, "offsetLag": 0, "isFuture": future, "isStray": stray}


def _topic_id(replica_dir: str) -> str | None:
    """The topic id in a replica's `partition.metadata` (`version: 0` / `topic_id: <id>`):
    after a topic is deleted and created again under the same name, only the id tells the
    old replica from the new one."""
    try:
        text = (Path(replica_dir) / "partition.metadata").read_text(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "topic_id" and value.strip():
            return value.strip()
    return None


def _size(path: str) -> int:
    total = 0
    for entry in os.scandir(path):
        try:
            if entry.is_file():
                total += entry.stat().st_size
        except FileNotFoundError:  # a segment deleted while scanning
            continue
    return total
